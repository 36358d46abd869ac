"""Answer checkers for the workshop notebooks (example_notebooks/01_... to 08_...).

Every checker re-computes its answer with the simulator, prints one or two friendly lines and
returns True or False: "Correct! ..." when the answer is right, otherwise what is off, never the
answer itself. An answer still left as None prints a "fill in your answer" line and returns False,
so a notebook runs top to bottom unattended.

The exercise scenarios are module constants, so a test (or a curious instructor) can recompute
every answer the same way. Pure core: nothing here imports a Jupyter module.
"""

from __future__ import annotations

import math
import random
import re

from ..api import best_batch, simulate
from ..core import catalog, costs
from ..core.errors import HwsimError
from ..core.precision import WARN_ABOVE, matmul_error
from ..core.scenario import FIELDS, Scenario
from ..scenario_text import parse_pairs

__all__ = [
    "LESSON1_PIPELINE",
    "LESSON2_DECODE",
    "LESSON3_INFERENCE",
    "LESSON3_SERVING",
    "LESSON3_SLO_MS",
    "LESSON4_CPU",
    "LESSON4_A100",
    "LESSON5_DECODE",
    "LESSON6_T4",
    "FLOAT_FORMATS",
    "LESSON7_BASE",
    "CHANGEABLE",
    "ACCEPT_SHARE",
    "change_speedup",
    "check_biggest_change",
    "check_mfu",
    "check_best_batch",
    "check_serving_batch",
    "serving_answer",
    "serving_table",
    "check_a100_vs_cpu",
    "check_model_gb",
    "check_decode_tokens_per_s",
    "check_precision_choice",
    "check_fusion_speedup",
    "mystery",
    "check_mystery_fix",
    "CAPSTONE",
    "BOTTLENECKS",
    "capstone",
    "check_capstone",
]

# ---------------------------------------------------------------- the exercise scenarios
# 01: a ResNet-18 pipeline fed from a SATA SSD by 12 loader workers on 32 cores
LESSON1_PIPELINE = Scenario(
    kind="training", workload="resnet18", gpu="a100", storage="sata-ssd", loader_workers=12, cpu_cores=32, steps=60
)
# 02: one Llama 2 7B stream on an H100, short prompt, long answer
LESSON2_DECODE = Scenario(
    kind="llm",
    workload="llama-2-7b",
    gpu="h100",
    precision="fp16",
    concurrency=1,
    prompt_tokens=32,
    output_tokens=512,
    steps=20,
)
# 03: offline BERT-base inference on a T4, and a ResNet-50 server on a T4 with a long batcher delay
LESSON3_SLO_MS = 100.0
LESSON3_INFERENCE = Scenario(
    kind="inference", workload="bert-base", gpu="t4", precision="fp16", loader_workers=16, cpu_cores=32, steps=60
)
LESSON3_SERVING = Scenario(
    kind="serving",
    workload="resnet50",
    gpu="t4",
    precision="fp16",
    arrival_rate_rps=300,
    max_queue_delay_ms=100,
    steps=1000,
)
# 04: BERT-base inference, batch 8, bf16, on a Xeon (as the device) and on an A100
LESSON4_CPU = Scenario(
    kind="inference",
    workload="bert-base",
    gpu="xeon-8480",
    precision="bf16",
    batch_size=8,
    loader_workers=8,
    cpu_cores=16,
    steps=60,
)
LESSON4_A100 = LESSON4_CPU.replace(gpu="a100-sxm-80gb")
# 05: one Llama 2 13B stream in int8 on an A10
LESSON5_DECODE = Scenario(
    kind="llm", workload="llama-2-13b", gpu="a10", precision="int8", engine="vllm", concurrency=1, steps=20
)
# 06: BERT-base inference on a T4; the team wants a floating-point format
LESSON6_T4 = Scenario(
    kind="inference", workload="bert-base", gpu="t4", batch_size=32, loader_workers=8, cpu_cores=16, steps=60
)
FLOAT_FORMATS = ("fp32", "tf32", "fp16", "bf16", "fp8")
# 07: BERT-base inference on an H100, eager against TensorRT-like
LESSON7_BASE = Scenario(
    kind="inference", workload="bert-base", gpu="h100", precision="fp16", loader_workers=16, cpu_cores=32, steps=60
)

# fields a "single change" may touch: the machine and its settings, not the problem itself
CHANGEABLE = (
    "gpu",
    "precision",
    "batch_size",
    "loader_workers",
    "prefetch_factor",
    "cpu_cores",
    "cpu_speed",
    "storage",
    "storage_bandwidth_gbs",
    "storage_latency_ms",
    "storage_concurrency",
    "host_link",
    "host_link_gbs",
    "pin_memory",
    "fusion",
    "engine",
    "host_cache_gb",
)
# a single change is accepted when its speed-up reaches this share of the best one the simulator finds
ACCEPT_SHARE = 0.9
# a catalogue change brings the entry's own numbers, as the simulator's suggestions do
_RESETS = {
    "storage": ("storage_bandwidth_gbs", "storage_latency_ms", "storage_concurrency"),
    "gpu": ("host_link", "host_link_gbs"),
    "host_link": ("host_link_gbs",),
}


# ---------------------------------------------------------------- small helpers
def _say(*lines: str) -> None:
    for line in lines:
        print(line)


def _fill_in(what: str) -> bool:
    _say(f"Fill in your answer first: replace None with {what}, then run this cell again.")
    return False


def _correct(msg: str) -> bool:
    _say("Correct! " + msg)
    return True


def _off(*lines: str) -> bool:
    _say(*lines)
    return False


def _number(x):
    """x as a positive finite float, or None when it is not a number."""
    if isinstance(x, bool):
        return None
    if isinstance(x, str):
        try:
            x = float(x.replace(",", "").replace("x", "").strip())
        except ValueError:
            return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _close(x: float, truth: float, rel: float) -> bool:
    return truth > 0 and abs(x - truth) <= rel * truth


def _not_a_number(x) -> bool:
    return _off(f"{x!r} is not a number: give a plain number (for example 0.05 or 12.5).")


# ---------------------------------------------------------------- 01 and 08: the single biggest change
def _parse_change(change) -> dict:
    if isinstance(change, str):
        text = re.sub(r"\s*=\s*", "=", change.strip())
        change = parse_pairs([w for w in re.split(r"[\s;]+", text) if w])
    if not isinstance(change, dict):
        raise HwsimError("change", change, "a dict such as {'cpu_cores': 64} or a string such as 'host_link=pcie5'")
    return dict(change)


_BASE_CACHE: dict = {}


def _base(s: Scenario, seed: int):
    """The scenario's own run with its ranked suggestions (cached: a checker may be run many times)."""
    key = (repr(sorted(s.to_dict().items())), seed)
    if key not in _BASE_CACHE:
        _BASE_CACHE[key] = simulate(s, seed=seed)
    return _BASE_CACHE[key]


def change_speedup(s: Scenario, change, seed: int = 0) -> tuple[float, object]:
    """(speed-up of throughput, the changed Result): the change re-simulated like a suggestion (same seed,
    same steps; a new catalogue entry brings its own numbers)."""
    fields = _parse_change(change)
    for k in list(fields):
        for dep in _RESETS.get(k, ()):
            fields.setdefault(dep, None)
    base = _base(s, seed)
    r = simulate(s.replace(**fields), seed=seed, suggest=False)
    return (r.throughput / base.throughput if base.throughput > 0 else 0.0), r


def _judge_change(s: Scenario, change, seed: int = 0) -> bool:
    if change is None:
        return _fill_in("one change, e.g. {'cpu_cores': 64} or 'host_link=pcie5' (a format, not a hint)")
    try:
        fields = _parse_change(change)
    except HwsimError as e:
        return _off(f"hwsim cannot read that change: {e}")
    if len(fields) != 1:
        return _off(
            f"Give a single change (one field=value); this one changes {len(fields)} fields: "
            f"{', '.join(fields) or 'none'}."
        )
    ((key, value),) = fields.items()
    if key not in FIELDS:
        return _off(f"{key!r} is not a scenario field (see `python -m jupyter_hwsim help`).")
    if key not in CHANGEABLE:
        return _off(
            f"{key} changes the problem itself, not the machine or its settings: try a field such as "
            "loader_workers, cpu_cores, storage, host_cache_gb, gpu, precision, engine or batch_size."
        )
    label = f"{key}={value}"
    if key in ("engine", "fusion") and s.traits.trains and not _trains(value):
        return _off(
            f"{label} cannot train: it builds inference engines only (no backward pass, no optimizer step).",
            "For training, fusion comes from torch.compile (engine=torch-compile); but first ask what the GPU waits for.",
        )
    try:
        changed = s.replace(**fields)
    except HwsimError as e:
        return _off(f"hwsim cannot use that value: {e}")
    if changed == s:
        return _off(f"{label} is what the pipeline already has: change something.")
    base = _base(s, seed)
    speeds = [x["speedup"] for x in base.suggestions if x.get("speedup") and "parts" not in x]  # singles
    best = max(speeds, default=1.0)
    try:
        sp, r = change_speedup(s, fields, seed)
    except HwsimError as e:
        return _off(f"hwsim cannot simulate that change: {e}")
    if r.memory["oom"]:
        return _off(
            f"{label} does not fit: it needs {r.memory['total_gb']:.1f} GB of the "
            f"{costs.capacity_text(r.memory['capacity_gb'])} on the device."
        )
    err = r.details.get("precision_error", 0.0)
    if err > WARN_ABOVE and err > base.details.get("precision_error", 0.0):
        return _off(
            f"{label} gives {sp:.2f}x, but its measured matmul error is {err:.1%}: that trades away "
            "accuracy. Find a change that keeps the numbers right."
        )
    if sp >= ACCEPT_SHARE * best:
        return _correct(f"{label} gives {sp:.2f}x: it attacks what the pipeline was waiting for ({base.bottleneck}).")
    if sp > 1.05:
        return _off(
            f"{label} helps ({sp:.2f}x), but one change can do clearly more.",
            "Look again at what the GPU waits for, and what limits the pipeline after your change.",
        )
    return _off(
        f"{label} gives {sp:.2f}x: it does not touch the bottleneck.",
        "Read the explanation and the GPU time chart again: what is the GPU waiting for?",
    )


def _trains(engine) -> bool:
    """Whether the catalogue says this engine (or fusion mode) can train; unknown names are left to the scenario."""
    try:
        return bool(catalog.get("engines", str(engine)).get("trains", True))
    except HwsimError:
        return True


def check_biggest_change(change) -> bool:
    """Lesson 1: the single change with the biggest speed-up for LESSON1_PIPELINE. Accepted when its
    re-simulated speed-up is at least ACCEPT_SHARE of the best ranked suggestion's."""
    return _judge_change(LESSON1_PIPELINE, change)


# ---------------------------------------------------------------- 02: MFU by hand
def check_mfu(my_mfu) -> bool:
    """Lesson 2: MFU of LESSON2_DECODE as a fraction; within 15% of utilization['gpu_mfu']."""
    if my_mfu is None:
        return _fill_in("your MFU as a fraction (0.05 means 5%)")
    x = _number(my_mfu)
    if x is None:
        return _not_a_number(my_mfu)
    r = simulate(LESSON2_DECODE, suggest=False)
    truth = r.utilization["gpu_mfu"]
    if _close(x, truth, 0.15):
        return _correct(
            f"MFU {x:.2%}: the GPU was busy {r.utilization['gpu_busy']:.0%} of the time, yet did "
            f"useful math at only {truth:.2%} of its peak (simulator)."
        )
    if _close(x, 100 * truth, 0.15):
        return _off("That looks like a percentage: give MFU as a fraction of peak (0.05 means 5%).")
    if x >= 1:
        return _off(
            "MFU is a fraction of peak, between 0 and 1: check the units (TFLOPS means 1e12 FLOP/s, "
            "parameters are counted one by one, not in billions)."
        )
    hint = "too high" if x > truth else "too low"
    return _off(
        f"Not quite: {x:.3g} is {hint} (more than 15% off).",
        "MFU = tokens/s x 2 x parameters / peak FLOP/s at fp16 of this chip (use its catalogue entry).",
    )


# ---------------------------------------------------------------- 03: batching within a latency budget
def _check_batch(s: Scenario, batch, throughput) -> bool:
    field = s.traits.batch_field
    if batch is None or throughput is None:
        return _fill_in(f"the largest {field} within the budget and its throughput")
    b, x = _number(batch), _number(throughput)
    if b is None:
        return _not_a_number(batch)
    if x is None:
        return _not_a_number(throughput)
    res = best_batch(s, latency_slo_ms=LESSON3_SLO_MS)
    slo, unit = res["latency_slo_ms"], res["throughput_unit"]
    rows = {row[field]: row for row in res["table"]}
    if b != res["batch"]:
        row = rows.get(int(b)) if b == int(b) else None
        if row is None:
            return _off(f"best_batch tries powers of two from 1 upwards: give {field} as one of those.")
        if row["oom"]:
            return _off(f"At {field}={int(b)} the model does not fit in memory: try smaller.")
        if not row["meets"]:
            return _off(
                f"At {field}={int(b)} the p99 latency is {row['p99_ms']:.0f} ms: over the {slo:g} ms "
                "budget. Try smaller."
            )
        return _off(f"{field}={int(b)} meets the budget (p99 {row['p99_ms']:.0f} ms), but a larger one does too.")
    if not _close(x, res["throughput"], 0.05):
        return _off(
            f"The {field} is right! The throughput is {x / res['throughput'] - 1:+.0%} off: read it "
            f"({unit}) at that {field}."
        )
    return _correct(
        f"{field}={int(b)} keeps p99 at {res['p99_ms']:.0f} ms, inside {slo:g} ms, and serves "
        f"{res['throughput']:,.0f} {unit}."
    )


def check_best_batch(batch, throughput) -> bool:
    """Lesson 3: the largest batch_size of LESSON3_INFERENCE within LESSON3_SLO_MS (best_batch), exact, and
    its throughput within 5%."""
    return _check_batch(LESSON3_INFERENCE, batch, throughput)


SERVING_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)  # the max_batch_size values exercise B's sweep tries
KEEP_UP = 0.95  # a server keeps up when it serves at least this share of the arrivals


def serving_table() -> dict:
    """{max_batch_size: Result} of LESSON3_SERVING over SERVING_BATCHES (cached)."""
    key = ("serving", repr(sorted(LESSON3_SERVING.to_dict().items())))
    if key not in _BASE_CACHE:
        _BASE_CACHE[key] = {
            b: simulate(LESSON3_SERVING.replace(max_batch_size=b), suggest=False) for b in SERVING_BATCHES
        }
    return _BASE_CACHE[key]


def serving_answer() -> tuple[int, set]:
    """(the max_batch_size with the lowest p99 among those that keep up within the budget, every accepted one:
    a p99 within 10% of that lowest)."""
    rate = LESSON3_SERVING.arrival_rate_rps
    ok = {
        b: r.latency_ms["p99"]
        for b, r in serving_table().items()
        if r.throughput >= KEEP_UP * rate and r.latency_ms["p99"] <= LESSON3_SLO_MS
    }
    best = min(ok, key=ok.get)
    return best, {b for b, p99 in ok.items() if p99 <= 1.1 * ok[best]}


def check_serving_batch(max_batch_size, throughput) -> bool:
    """Lesson 3: the max_batch_size of LESSON3_SERVING with the lowest p99 latency among those that keep up with
    the arrivals inside LESSON3_SLO_MS (any within 10% of that p99 is accepted), and its throughput within 5%."""
    if max_batch_size is None or throughput is None:
        return _fill_in("the max_batch_size with the lowest p99 and the requests/s it serves")
    b, x = _number(max_batch_size), _number(throughput)
    if b is None:
        return _not_a_number(max_batch_size)
    if x is None:
        return _not_a_number(throughput)
    table, rate = serving_table(), LESSON3_SERVING.arrival_rate_rps
    if b not in table:
        return _off("Give one of the values the sweep tries: " + ", ".join(map(str, SERVING_BATCHES)) + ".")
    b = int(b)
    r = table[b]
    p99, served = r.latency_ms["p99"], r.throughput
    best, accepted = serving_answer()
    if served < KEEP_UP * rate:
        return _off(
            f"At max_batch_size={b} the server serves {served:,.0f} of {rate:g} requests/s: the queue grows "
            "without end. Let it batch more."
        )
    if p99 > LESSON3_SLO_MS:
        return _off(
            f"At max_batch_size={b} the p99 is {p99:.0f} ms, over the {LESSON3_SLO_MS:g} ms budget. Look at what "
            "the requests wait for (the `waiting for companions` column of the serving sweep)."
        )
    if b not in accepted:
        return _off(
            f"max_batch_size={b} keeps up with a p99 of {p99:.0f} ms, but another cap gives a clearly lower p99.",
            "A large cap makes a request wait for companions that arrive slowly; a small one may not keep up. "
            "Which cap is just large enough?",
        )
    if not _close(x, served, 0.05):
        return _off(
            f"The max_batch_size is right! The throughput is {x / served - 1:+.0%} off: read it (requests/s) at "
            "that max_batch_size."
        )
    return _correct(
        f"max_batch_size={b} keeps up ({served:,.0f} requests/s of {rate:g} arriving) with the lowest p99, "
        f"{p99:.0f} ms. A server that keeps up serves what arrives: its throughput is the arrival rate, and the "
        "cap only decides how long requests wait."
    )


# ---------------------------------------------------------------- 04: choosing the chip
def check_a100_vs_cpu(times_faster) -> bool:
    """Lesson 4: throughput of LESSON4_A100 over LESSON4_CPU, within 15%."""
    if times_faster is None:
        return _fill_in("how many times faster the A100 is (a number such as 2.5)")
    x = _number(times_faster)
    if x is None:
        return _not_a_number(times_faster)
    a, c = simulate(LESSON4_A100, suggest=False), simulate(LESSON4_CPU, suggest=False)
    truth = a.throughput / c.throughput
    if _close(x, truth, 0.15):
        return _correct(f"about {x:.1f}x: the A100 serves {a.throughput:,.0f} samples/s, the Xeon {c.throughput:,.0f}.")
    if x > 0 and _close(1 / x, truth, 0.15):
        return _off("Upside down: divide the A100's throughput by the CPU's.")
    return _off(f"Not quite: {x:.3g}x is more than 15% off. Simulate both scenarios and divide the throughputs.")


# ---------------------------------------------------------------- 05: bandwidth and decoding
def check_model_gb(gb) -> bool:
    """Lesson 5: the weights of LESSON5_DECODE in GB (parameters x bytes per weight), within 10% of
    memory['weights_gb']."""
    if gb is None:
        return _fill_in("the model size in GB")
    x = _number(gb)
    if x is None:
        return _not_a_number(gb)
    r = simulate(LESSON5_DECODE, suggest=False)
    truth = r.memory["weights_gb"]
    if _close(x, truth, 0.10):
        return _correct(
            f"{x:.1f} GB of weights: every decode step reads all of them "
            f"({r.details['bytes_per_token_single_stream'] / 1e9:.1f} GB per token with the KV cache)."
        )
    if _close(x, truth * 1e9, 0.10):
        return _off("That looks like bytes: give gigabytes (1 GB = 1e9 bytes).")
    b = catalog.get("precisions", LESSON5_DECODE.precision)["bytes"]
    if any(_close(x, truth * other / b, 0.10) for other in (4, 2, 0.5) if other != b):
        return _off(
            f"Right idea, wrong width: the weights are stored in {LESSON5_DECODE.precision}. "
            "How many bytes is one such weight?"
        )
    return _off(f"Not quite: {x:.3g} GB is more than 10% off. Size = parameters x bytes per weight / 1e9.")


def check_decode_tokens_per_s(tokens_per_s) -> bool:
    """Lesson 5: single-stream decode speed of LESSON5_DECODE, within 15% of tokens_per_s_per_stream."""
    if tokens_per_s is None:
        return _fill_in("your estimate of tokens/s for one stream")
    x = _number(tokens_per_s)
    if x is None:
        return _not_a_number(tokens_per_s)
    r = simulate(LESSON5_DECODE, suggest=False)
    truth = r.tokens_per_s_per_stream
    if _close(x, truth, 0.15):
        return _correct(
            f"about {x:.0f} tokens/s; the simulator measures {truth:.1f}: bandwidth / bytes per token "
            "is most of the story of single-stream decoding."
        )
    if x > truth:
        return _off(
            f"{x:.3g} tokens/s is too high (more than 15% off).",
            "Does the chip really reach its nameplate bandwidth? Use the bandwidth it actually achieves.",
        )
    return _off(f"{x:.3g} tokens/s is too low (more than 15% off). tokens/s = bandwidth (GB/s) / model size (GB).")


# ---------------------------------------------------------------- 06: precision
def _float_results() -> dict:
    return {p: simulate(LESSON6_T4.replace(precision=p), suggest=False) for p in FLOAT_FORMATS}


def check_precision_choice(precision) -> bool:
    """Lesson 6: the floating-point format with the highest throughput for LESSON6_T4 among those whose measured
    matmul error carries no warning (<= WARN_ABOVE). Any format within 2% of the best is accepted."""
    if precision is None:
        return _fill_in("a precision name such as 'fp32'")
    p = str(precision).strip().lower()
    if p in ("int8", "int4"):
        return _off(
            "Integer formats need calibration, and the team asked for a floating-point format: one of "
            + ", ".join(FLOAT_FORMATS)
            + "."
        )
    if p not in FLOAT_FORMATS:
        return _off(f"{precision!r} is not one of the floating-point formats: " + ", ".join(FLOAT_FORMATS) + ".")
    res = _float_results()
    ok = {q: r.throughput for q, r in res.items() if matmul_error(q) <= WARN_ABOVE}
    best = max(ok.values())
    err, thr = matmul_error(p), res[p].throughput
    if p not in ok:
        return _off(
            f"{p} is fast ({thr:,.0f} samples/s), but its measured matmul error is {err:.1%}, above the "
            f"{WARN_ABOVE:.0%} warning line: check accuracy first."
        )
    if thr >= 0.98 * best:
        return _correct(f"{p} gives {thr:,.0f} samples/s on the T4 with a matmul error of {err:.2%}.")
    return _off(
        f"{p} gives {thr:,.0f} samples/s with no accuracy warning, but another format is "
        f"{best / thr:.1f}x faster on this chip. Read each result's warnings."
    )


# ---------------------------------------------------------------- 07: fusion
def check_fusion_speedup(speedup, batch: int = 1) -> bool:
    """Lesson 7: throughput of fusion=tensorrt over eager for LESSON7_BASE at `batch`, within 10%."""
    if speedup is None:
        return _fill_in(f"the TensorRT-over-eager speed-up at batch {batch}")
    x = _number(speedup)
    if x is None:
        return _not_a_number(speedup)
    s = LESSON7_BASE.replace(batch_size=batch)
    eager = simulate(s, suggest=False)
    trt = simulate(s.replace(fusion="tensorrt"), suggest=False)
    truth = trt.throughput / eager.throughput
    if _close(x, truth, 0.10):
        return _correct(
            f"{x:.2f}x at batch {batch}: eager is {eager.bottleneck}-bound here, with "
            f"{eager.details['kernels_per_step']} kernels a step against "
            f"{trt.details['kernels_per_step']}."
        )
    if x > 0 and _close(1 / x, truth, 0.10):
        return _off("Upside down: divide the TensorRT throughput by the eager one.")
    return _off(
        f"Not quite: {x:.3g}x at batch {batch} is more than 10% off. Simulate both fusions at that batch "
        "and divide the throughputs."
    )


# ---------------------------------------------------------------- 08: the mystery pipeline
def _mystery_fields(rng: random.Random) -> dict:
    flaw = rng.choice(("io", "loader", "fp32", "tiny"))
    if flaw == "io":
        if rng.random() < 0.5:
            return dict(workload=rng.choice(("resnet50", "resnet18")), gpu=rng.choice(("a100", "h100")), storage="hdd")
        return dict(workload="resnet18", gpu="h100", storage="sata-ssd", loader_workers=32, cpu_cores=64)
    if flaw == "loader":
        return dict(
            workload=rng.choice(("resnet50", "resnet18", "vit-b16")),
            gpu=rng.choice(("a100", "h100")),
            loader_workers=rng.randint(1, 3),
        )
    if flaw == "fp32":
        return dict(
            workload=rng.choice(("vit-b16", "bert-base")),
            gpu=rng.choice(("a100", "h100")),
            precision="fp32",
            loader_workers=16,
            cpu_cores=32,
        )
    return dict(workload="mlp-small", gpu=rng.choice(("a100", "h100")), batch_size=rng.choice((16, 32)))


def mystery(seed: int = 0) -> Scenario:
    """A training pipeline with one hidden flaw, chosen by `seed`. Profile it; do not print it."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise HwsimError("seed", seed, "a non-negative integer")
    return Scenario(kind="training", steps=60, **_mystery_fields(random.Random(seed)))


def check_mystery_fix(seed, change) -> bool:
    """Lesson 8: the single biggest change for mystery(seed), judged as in lesson 1."""
    if seed is None:
        return _fill_in("the seed of your mystery")
    try:
        s = mystery(seed)
    except HwsimError as e:
        return _off(f"hwsim cannot make that mystery: {e}")
    return _judge_change(s, change)


# 07: BERT-base inference at batch 1 on an A100, eager: each step waits on the host issuing kernels
LESSON7_BERT = Scenario(
    kind="inference",
    workload="bert-base",
    gpu="a100",
    precision="fp16",
    batch_size=1,
    loader_workers=8,
    cpu_cores=32,
    steps=60,
)


# ---------------------------------------------------------------- 10: the capstone, three mystery pipelines
# each slow for a different reason: profile, name the bottleneck, fix it with one change
CAPSTONE = {
    "A": Scenario(
        kind="training",
        workload="vit-b16",
        gpu="h100",
        precision="bf16",
        storage="hdd",
        loader_workers=16,
        cpu_cores=32,
        steps=60,
    ),
    "B": LESSON7_BERT,  # lesson 7's batch-1 BERT: the host's work per kernel binds
    "C": Scenario(
        kind="training",
        workload="bert-base",
        gpu="a100",
        precision="fp32",
        loader_workers=16,
        cpu_cores=32,
        steps=60,
    ),
}
BOTTLENECKS = ("io", "cpu", "host_link", "memory_bw", "compute", "overhead")
_WHERE = {
    "io": "GPU time waiting on `input_io`, storage busy",
    "cpu": "GPU time waiting on `input_preprocess`, the CPU cores busy",
    "host_link": "GPU time in `host_copy`, the host link busy",
    "memory_bw": "a busy GPU with high HBM bandwidth and low MFU",
    "compute": "a busy GPU with high MFU",
    "overhead": "GPU time in `launch`: kernels shorter than the host needs to issue them",
}


def capstone(case: str) -> Scenario:
    """One of the capstone's mystery pipelines ("A", "B" or "C"). Profile it; do not print it."""
    key = str(case).strip().upper()
    if key not in CAPSTONE:
        raise HwsimError("case", case, "one of " + ", ".join(CAPSTONE))
    return CAPSTONE[key]


def check_capstone(case, bottleneck, change) -> bool:
    """Lesson 10: name the bottleneck of capstone(case) (its simulated `bottleneck`) and the single biggest
    change, judged as in lesson 1. The diagnosis is checked first: a fix without the right diagnosis is luck."""
    try:
        s = capstone(case)
    except HwsimError as e:
        return _off(f"hwsim cannot find that case: {e}")
    if bottleneck is None:
        return _fill_in("the bottleneck's name, one of " + ", ".join(BOTTLENECKS))
    b = str(bottleneck).strip().lower()
    if b not in BOTTLENECKS:
        return _off(f"{bottleneck!r} is not a bottleneck name: use one of " + ", ".join(BOTTLENECKS) + ".")
    truth = _base(s, 0).bottleneck
    if b != truth:
        return _off(
            f"Not {b}: that would show as {_WHERE[b]}. Which share of the GPU time is the largest, and which "
            "resource is busiest?"
        )
    print(f"Diagnosis right: {b}.")
    return _judge_change(s, change)
