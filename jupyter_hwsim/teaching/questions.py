"""The workshop's questions, as data: one prediction ("N.predict") and a short quiz ("N.q1"...) per lesson.

Where an answer depends on the model, `facts` simulates the case and `answer` picks the choice from the
numbers (see `bucket`), so a change in the model moves the answer and the explanation with it.
Checked by quiz.check; every question is tested on its right and its wrong answers.
"""

from __future__ import annotations

import math

from ..api import simulate
from ..core import catalog
from ..core.scenario import Scenario
from .exercises import LESSON7_BERT
from .quiz import Question


def bucket(name: str, edges: dict[str, tuple[float, float]]):
    """An answer function: the choice whose [low, high) range holds facts[name]."""

    def answer(facts: dict) -> str:
        x = facts[name]
        return next(k for k, (lo, hi) in edges.items() if lo <= x < hi)

    answer.edges = edges  # tests read the ranges
    return answer


INF = math.inf


def _run(s: Scenario):
    return simulate(s, suggest=False)


# ---------------------------------------------------------------- lesson 1: three bottlenecks
_L1_DISK = Scenario(
    workload="resnet50",
    gpu="a100",
    precision="bf16",
    batch_size=256,
    loader_workers=16,
    cpu_cores=32,
    storage="hdd",
    steps=60,
)
_L1_FED = Scenario(
    workload="resnet50", gpu="a100", precision="bf16", batch_size=256, loader_workers=16, cpu_cores=32, steps=60
)


def _l1_predict() -> dict:
    a, h = _run(_L1_DISK), _run(_L1_DISK.replace(gpu="h100", host_link=None, host_link_gbs=None))
    a100, h100 = catalog.get("gpus", "a100"), catalog.get("gpus", "h100")
    return {
        "speedup": h.throughput / a.throughput,
        "bottleneck": a.bottleneck,
        "busy": a.utilization["gpu_busy"],
        "math": h100["peak_tflops"]["bf16"] / a100["peak_tflops"]["bf16"],
    }


def _l1_fp32() -> dict:
    bf, fp = _run(_L1_FED), _run(_L1_FED.replace(precision="fp32"))
    return {"ratio": bf.throughput / fp.throughput, "bf16": bf.throughput, "fp32": fp.throughput}


def _l1_workers() -> dict:
    s = Scenario(workload="resnet50", gpu="a100", cpu_cores=8, steps=60)
    w8, w32 = _run(s.replace(loader_workers=8)), _run(s.replace(loader_workers=32))
    return {"gain": w32.throughput / w8.throughput}


# ---------------------------------------------------------------- lesson 2: utilization
# one stream served by a serving engine (CUDA graphs, fused kernels), whose decode keeps up with the memory
_L2_STREAM = Scenario(
    kind="llm", workload="llama-2-7b", gpu="a100", precision="fp16", engine="vllm", concurrency=1, steps=20
)


def _l2_predict() -> dict:
    r = _run(_L2_STREAM)
    return {"busy": r.utilization["gpu_busy"], "mfu": r.utilization["gpu_mfu"]}


def _l2_mfu_by_hand() -> dict:
    params_b, tokens_s, peak_tflops = 7.0, 1000.0, 1000.0
    return {
        "params_b": params_b,
        "tokens_s": tokens_s,
        "peak": peak_tflops,
        "mfu": tokens_s * 2 * params_b * 1e9 / (peak_tflops * 1e12),
    }


def _l2_concurrency() -> dict:
    one, many = _run(_L2_STREAM), _run(_L2_STREAM.replace(concurrency=32, steps=400))
    return {
        "mfu_gain": many.utilization["gpu_mfu"] / one.utilization["gpu_mfu"],
        "busy_1": one.utilization["gpu_busy"],
        "busy_32": many.utilization["gpu_busy"],
    }


def _l2_ridge() -> dict:
    g = catalog.get("gpus", "a100")
    return {"ridge": g["peak_tflops"]["fp16"] * 1e12 / (g["memory_bandwidth_gbs"] * 1e9)}


# ---------------------------------------------------------------- lesson 3: batching
_L3_OFFLINE = Scenario(
    kind="inference", workload="resnet50", gpu="a100", precision="fp16", loader_workers=32, cpu_cores=64, steps=60
)


def _l3_predict() -> dict:
    one, big = _run(_L3_OFFLINE.replace(batch_size=1)), _run(_L3_OFFLINE.replace(batch_size=256))
    return {
        "gain": big.throughput / one.throughput,
        "lat_gain": big.latency_ms["p50"] / one.latency_ms["p50"],
    }


def _l3_double() -> dict:
    a, b = _run(_L3_OFFLINE.replace(batch_size=256)), _run(_L3_OFFLINE.replace(batch_size=512))
    return {"tput": b.throughput / a.throughput, "lat": b.latency_ms["p50"] / a.latency_ms["p50"]}


# ---------------------------------------------------------------- lesson 4: chips
def _l4_predict() -> dict:
    s = Scenario(kind="llm", workload="llama-2-7b", engine="vllm", concurrency=1, steps=20)
    x, t = _run(s.replace(gpu="xeon-8480", precision="bf16")), _run(s.replace(gpu="t4", precision="fp16"))
    return {"ratio": t.throughput / x.throughput, "xeon": x.throughput, "t4": t.throughput}


def _l4_resnet() -> dict:
    s = Scenario(kind="inference", workload="resnet50", batch_size=32, loader_workers=32, cpu_cores=64, steps=60)
    a, x = _run(s.replace(gpu="a100", precision="bf16")), _run(s.replace(gpu="xeon-8480", precision="bf16"))
    return {"ratio": a.throughput / x.throughput}


def _l4_serving() -> dict:
    s = Scenario(kind="serving", workload="bert-large", arrival_rate_rps=150, max_batch_size=8, steps=300)
    t, a = _run(s.replace(gpu="t4", precision="fp16")), _run(s.replace(gpu="a100", precision="bf16"))
    keep = 0.95 * s.arrival_rate_rps
    return {
        "t4_served": t.throughput,
        "a100_served": a.throughput,
        "t4_p50": t.latency_ms["p50"],
        "a100_p50": a.latency_ms["p50"],
        "both_keep_up": t.throughput >= keep and a.throughput >= keep,
        "rate": s.arrival_rate_rps,
    }


def _l4_serving_answer(f: dict) -> str:
    if not f["both_keep_up"]:
        return "a"
    return "b" if f["a100_p50"] < 0.8 * f["t4_p50"] else "c"


# ---------------------------------------------------------------- lesson 5: bandwidth
def _l5_predict() -> dict:
    r = _run(_L2_STREAM)
    return {"tps": r.tokens_per_s_per_stream, "gb": r.memory["weights_gb"], "bw": r.details["effective_bandwidth_gbs"]}


def _l5_int8() -> dict:
    s = Scenario(kind="llm", workload="llama-2-7b", gpu="l4", concurrency=1, steps=20)
    fp, i8 = _run(s.replace(precision="fp16")), _run(s.replace(precision="int8"))
    return {
        "ratio": i8.tokens_per_s_per_stream / fp.tokens_per_s_per_stream,
        "bytes_ratio": fp.memory["weights_gb"] / i8.memory["weights_gb"],
    }


def _l5_kv() -> dict:
    w = catalog.get("workloads", "llama-2-7b")
    tokens, nbytes = 1000, 2
    gb = 2 * w["layers"] * w["kv_heads"] * (w["hidden"] // w["heads"]) * tokens * nbytes / 1e9
    return {"layers": w["layers"], "kv_heads": w["kv_heads"], "head_dim": w["hidden"] // w["heads"], "gb": gb}


# ---------------------------------------------------------------- lesson 6: precision
_L6_CNN = Scenario(
    kind="inference", workload="resnet50", gpu="l4", batch_size=64, loader_workers=32, cpu_cores=64, steps=60
)


def _l6_predict() -> dict:
    i8, i4 = _run(_L6_CNN.replace(precision="int8")), _run(_L6_CNN.replace(precision="int4"))
    return {"ratio": i4.throughput / i8.throughput}


def _l6_t4() -> dict:
    r = _run(_L6_CNN.replace(gpu="t4", precision="bf16", host_link=None, host_link_gbs=None))
    return {"run": r.details["precision_run"]}


def _l6_t4_answer(f: dict) -> str:
    return {"bf16": "a", "fp16": "b"}.get(f["run"], "c")


# ---------------------------------------------------------------- lesson 7: fusion
_L7_BERT = LESSON7_BERT


def _l7_predict() -> dict:
    e, t = _run(_L7_BERT), _run(_L7_BERT.replace(fusion="tensorrt"))
    return {"speedup": t.throughput / e.throughput, "bottleneck": e.bottleneck}


def _l7_kernels() -> dict:
    s = Scenario(
        kind="inference",
        workload="resnet50",
        gpu="a100",
        precision="fp16",
        batch_size=1,
        loader_workers=48,
        cpu_cores=64,
        steps=60,
    )
    e, t = _run(s), _run(s.replace(fusion="tensorrt"))
    return {
        "eager": e.details["kernels_per_step"],
        "trt": t.details["kernels_per_step"],
        "ratio": e.details["kernels_per_step"] / t.details["kernels_per_step"],
    }


def _l7_trains() -> dict:
    return {"trains": bool(catalog.engines()["tensorrt"].get("trains", True))}


# ---------------------------------------------------------------- lesson 8: profile first
def _l8_predict() -> dict:
    s = Scenario(workload="resnet50", precision="bf16", loader_workers=16, cpu_cores=32, steps=60)
    c, g = _run(s.replace(gpu="xeon-8480")), _run(s.replace(gpu="a100"))
    return {"ratio": g.throughput / c.throughput}


def _l8_oom() -> dict:
    r = _run(Scenario(kind="inference", workload="llama-2-70b", gpu="rtx-4090", precision="fp16", steps=60))
    return {"gb": r.memory["weights_gb"], "cap": r.memory["capacity_gb"]}


# ---------------------------------------------------------------- lesson 9: arithmetic intensity
def _inference(workload: str, gpu: str) -> Scenario:
    return Scenario(
        kind="inference",
        workload=workload,
        gpu=gpu,
        precision="fp16",
        batch_size=32,
        loader_workers=32,
        cpu_cores=64,
        steps=60,
    )


def memory_bound_matmuls(workload: str, gpu: str) -> int:
    """How many of the workload's matrix products (convolutions included) are memory-bound on that GPU."""
    r = _run(_inference(workload, gpu))
    return sum(1 for o in r.details["ops"] if o["class"] == "matmul" and o["bound"] == "memory")


def _l9_predict() -> dict:
    t4, h100 = memory_bound_matmuls("resnet50", "t4"), memory_bound_matmuls("resnet50", "h100")
    return {"t4": t4, "h100": h100}


def _l9_ridge() -> dict:
    g = catalog.get("gpus", "h100")
    return {
        "peak": g["peak_tflops"]["fp16"],
        "bw": g["memory_bandwidth_gbs"],
        "ridge": g["peak_tflops"]["fp16"] * 1e12 / (g["memory_bandwidth_gbs"] * 1e9),
    }


# ---------------------------------------------------------------- lesson 10: the capstone
def _l10_predict() -> dict:
    from .exercises import CAPSTONE

    gains = {}
    for case, s in CAPSTONE.items():
        base = _run(s)
        faster = _run(s.replace(gpu="h200", host_link=None, host_link_gbs=None))
        gains[case] = faster.throughput / base.throughput
    helped = sorted(c for c, g in gains.items() if g >= 2)
    return {
        "n": len(helped),
        "which": ", ".join(helped) or "none",
        "gains": ", ".join(f"{c}: {g:.2f}x" for c, g in gains.items()),
    }


# ---------------------------------------------------------------- the questions
_SPEEDUP_EDGES = {"a": (0, 1.1), "b": (1.1, 2.0), "c": (2.0, INF)}

QUESTIONS = (
    # ---- lesson 1
    Question(
        "1.predict",
        "A ResNet-50 training pipeline reads its images from a hard disk and trains on an A100. You replace the "
        "A100 with an H100, which has {math:.1f} times its 16-bit peak FLOP/s. The pipeline's throughput becomes:",
        {"a": "about the same (under 1.1x)", "b": "somewhat faster (1.1x to 2x)", "c": "more than 2x faster"},
        answer=bucket("speedup", _SPEEDUP_EDGES),
        explain="the simulator measures {speedup:.2f}x. The A100 was busy only {busy:.0%} of the time: the "
        "pipeline waits for the disk (bottleneck `{bottleneck}`), and a faster GPU only waits faster.",
        hints={
            "a": "look at what the GPU waits for before you decide.",
            "b": "what limits the pipeline: the GPU, or what feeds it?",
            "c": "what limits the pipeline: the GPU, or what feeds it?",
        },
        facts=_l1_predict,
    ),
    Question(
        "1.q1",
        "GPU busy is low, and most of the GPU time is `input_preprocess`. What limits the pipeline?",
        {"a": "the storage", "b": "the CPU's data loading (decode and augment)", "c": "the GPU's memory bandwidth"},
        answer="b",
        explain="the GPU waits while the loader workers decode and augment: more workers (up to the cores) or more "
        "cores help; a faster GPU does not.",
        hints={
            "a": "a storage-bound pipeline shows `input_io`: the workers wait for the disk.",
            "c": "a memory-bound GPU is busy nearly all the time; this one waits.",
        },
    ),
    Question(
        "1.q2",
        "A pipeline has 8 CPU cores and is bound by its loader workers. You raise loader_workers from 8 to 32. "
        "Throughput grows by about:",
        {"a": "nothing (under 1.1x)", "b": "2x", "c": "4x"},
        answer=bucket("gain", {"a": (0, 1.1), "b": (1.1, 3.0), "c": (3.0, INF)}),
        explain="{gain:.2f}x: workers beyond the cores time-share them, so the CPU work per second cannot grow.",
        hints={
            "b": "what does a worker process need to run, and how many of those are there?",
            "c": "what does a worker process need to run, and how many of those are there?",
        },
        facts=_l1_workers,
    ),
    Question(
        "1.q3",
        "On an A100 with a recent PyTorch, you train a ResNet-50 in plain float32 without changing any setting. "
        "Where do its convolutions run?",
        {
            "a": "on the FP32 CUDA cores, no tensor cores",
            "b": "on TF32 tensor cores: cuDNN allows TF32 for convolutions by default",
            "c": "on FP16 tensor cores, through autocast",
        },
        answer="b",
        explain="`torch.backends.cudnn.allow_tf32` is True by default, so convolutions use TF32 tensor cores on "
        "Ampere and later. Matrix products do not unless you raise the float32 matmul precision "
        "(`torch.set_float32_matmul_precision('high')`). The simulator's `precision=fp32` is true FP32 math; "
        "`precision=tf32` is what PyTorch's default does for convolutions.",
        hints={
            "a": "true for matrix products by default, but cuDNN has its own default for convolutions.",
            "c": "autocast runs only when you ask for it (`torch.autocast`).",
        },
    ),
    Question(
        "1.q4",
        "In the side-by-side table, how many times higher is the throughput of case 3 (bf16) than of case 4 "
        "(true fp32 math)? Read the two numbers and divide.",
        answer=lambda f: f["ratio"],
        tolerance=0.15,
        unit="x",
        explain="{bf16:,.0f} / {fp32:,.0f} images/s = {ratio:.1f}x: the tensor cores' 16-bit peak is far above "
        "FP32's, and the bytes halve.",
        hints={"high": "divide case 3 by case 4 (images/s).", "low": "divide case 3 by case 4 (images/s)."},
        facts=_l1_fp32,
    ),
    # ---- lesson 2
    Question(
        "2.predict",
        "One user chats with Llama 2 7B (fp16) served by vLLM on an A100: `nvidia-smi` shows the GPU busy "
        "{busy:.0%} of the time. What share of its peak math does it actually use (MFU)?",
        {"a": "more than 50%", "b": "10% to 50%", "c": "1% to 10%", "d": "under 1%"},
        answer=bucket("mfu", {"a": (0.5, INF), "b": (0.1, 0.5), "c": (0.01, 0.1), "d": (0, 0.01)}),
        explain="busy {busy:.0%}, MFU {mfu:.1%}. Each token reads every weight once and does about 2 FLOPs "
        "with it: the math units wait for memory.",
        hints={
            "a": "busy counts time with a kernel running, not how much of the chip it uses.",
            "b": "how many FLOPs does one token do per byte of weights it reads?",
            "c": "close: compute the FLOPs per byte of one token and compare with the chip's ratio.",
            "d": "close: compute the FLOPs per byte of one token and compare with the chip's ratio.",
        },
        facts=_l2_predict,
    ),
    Question(
        "2.q1",
        "What does `nvidia-smi`'s GPU utilization measure?",
        {
            "a": "the share of the chip's math units in use",
            "b": "the share of time in which at least one kernel runs",
            "c": "the share of memory bandwidth in use",
        },
        answer="b",
        explain="one tiny kernel keeps the GPU 'busy': utilization says when, MFU says how much.",
        hints={
            "a": "that is MFU, which needs the FLOPs of the model.",
            "c": "that is the HBM bandwidth share; nvidia-smi's headline number is about time.",
        },
    ),
    Question(
        "2.q2",
        "A {params_b:g}-billion-parameter model generates {tokens_s:,.0f} tokens/s on a chip with a peak of "
        "{peak:,.0f} TFLOP/s. What is its MFU, as a fraction?",
        answer=lambda f: f["mfu"],
        tolerance=0.1,
        explain="{tokens_s:,.0f} x 2 x {params_b:g}e9 / {peak:,.0f}e12 = {mfu:.3f}.",
        hints={
            "high": "MFU = tokens/s x 2 x parameters / peak FLOP/s; 1 TFLOP/s is 1e12 FLOP/s.",
            "low": "MFU = tokens/s x 2 x parameters / peak FLOP/s; 1 TFLOP/s is 1e12 FLOP/s.",
        },
        facts=_l2_mfu_by_hand,
    ),
    Question(
        "2.q3",
        "Which change raises the MFU of LLM decoding the most?",
        {
            "a": "more concurrent sequences: each weight read serves them all",
            "b": "a GPU with a higher FLOP/s peak",
            "c": "more CPU loader workers",
        },
        answer="a",
        explain="at 32 sequences the simulated MFU is {mfu_gain:.0f}x that of one, while busy goes from "
        "{busy_1:.0%} to {busy_32:.0%}.",
        hints={
            "b": "a higher peak makes the same achieved FLOP/s a smaller share of it.",
            "c": "decoding has no input pipeline to speak of: the GPU is the limit.",
        },
        facts=_l2_concurrency,
    ),
    Question(
        "2.q4",
        "The A100 needs about {ridge:.0f} FLOP per byte read to keep its fp16 math busy. An operator doing "
        "2 FLOP per byte is:",
        {"a": "compute-bound", "b": "memory-bound"},
        answer="b",
        explain="below the ridge point ({ridge:.0f} FLOP/byte) the bytes take longer than the math.",
        hints={"a": "compare 2 with the ridge point: which side of it is the operator on?"},
        facts=_l2_ridge,
    ),
    # ---- lesson 3
    Question(
        "3.predict",
        "ResNet-50 inference in fp16 on an A100, with the input keeping up. From batch 1 to batch 256, "
        "throughput grows by:",
        {"a": "under 2x", "b": "2x to 10x", "c": "10x to 50x", "d": "more than 50x"},
        answer=bucket("gain", {"a": (0, 2), "b": (2, 10), "c": (10, 50), "d": (50, INF)}),
        explain="{gain:.0f}x, while the time per batch grows {lat_gain:.0f}x: at batch 1 the GPU waits on kernel "
        "launches and its kernels are too small to fill it.",
        hints={
            "a": "at batch 1, is the GPU doing much in each kernel?",
            "b": "how long does the GPU take per image at batch 1, where launches dominate?",
            "c": "at batch 1, what does each step wait on: the math, or the launches?",
            "d": "the GPU fills up at some batch: after that, throughput stops growing.",
        },
        facts=_l3_predict,
    ),
    Question(
        "3.q1",
        "The GPU is already full. You double the batch. What happens?",
        {
            "a": "throughput doubles, latency stays",
            "b": "throughput stays about the same, latency about doubles",
            "c": "both stay the same",
        },
        answer=bucket("lat", {"c": (0, 1.3), "b": (1.3, INF)}),
        explain="from batch 256 to 512 the simulator gives {tput:.2f}x the throughput and {lat:.2f}x the time "
        "per batch: every sample waits for its whole batch.",
        hints={
            "a": "a full GPU has no idle units left for the extra samples.",
            "c": "the extra samples need time on the full GPU.",
        },
        facts=_l3_double,
    ),
    Question(
        "3.q2",
        "In a dynamic batcher (as in Triton), what is `max_batch_size`?",
        {
            "a": "a cap: the batcher sends what is waiting, up to that many",
            "b": "a target: the batcher always waits until it has that many",
            "c": "the batch the model was trained with",
        },
        answer="a",
        explain="the batcher sends a batch when it is full or when its oldest request has waited "
        "`max_queue_delay_ms`, whichever comes first.",
        hints={
            "b": "what bounds the wait, then? Look at `max_queue_delay_ms`.",
            "c": "a model serves any batch size; this is a setting of the server.",
        },
    ),
    Question(
        "3.q3",
        "A server receives requests faster than its GPU can serve them at `max_batch_size=1`. Its p99 latency:",
        {
            "a": "settles at a few times the compute time",
            "b": "grows without bound: the longer you run, the worse it gets",
            "c": "stays at the compute time",
        },
        answer="b",
        explain="arrivals above the service rate make the queue grow every second; batching raises the service "
        "rate until it keeps up.",
        hints={
            "a": "that is a server below its capacity; this one is above.",
            "c": "requests that arrive while the GPU is busy have to wait.",
        },
    ),
    # ---- lesson 4
    Question(
        "4.predict",
        "One stream of Llama 2 7B: a Xeon 8480+ server CPU (8 channels of DDR5) against a T4 (a small 2018 GPU "
        "with GDDR6). Which decodes more tokens per second?",
        {"a": "the Xeon, clearly (more than 1.2x)", "b": "about the same (within 20%)", "c": "the T4, clearly"},
        answer=lambda f: "a" if f["ratio"] < 1 / 1.2 else ("c" if f["ratio"] > 1.2 else "b"),
        explain="T4 {t4:.1f} tokens/s, Xeon {xeon:.1f} tokens/s: one stream reads every weight per token, "
        "so memory bandwidth decides, not FLOP/s.",
        hints={
            "a": "what does one token of decoding need most: FLOP/s or bytes/s?",
            "b": "what does one token of decoding need most: FLOP/s or bytes/s?",
            "c": "the T4 has many times the Xeon's FLOP/s, but does one stream use them?",
        },
        facts=_l4_predict,
    ),
    Question(
        "4.q1",
        "ResNet-50 inference at batch 32: how many times the Xeon's throughput does the A100 reach? Use the table.",
        answer=lambda f: f["ratio"],
        tolerance=0.15,
        unit="x",
        explain="{ratio:.1f}x: a convolutional network at batch 32 needs FLOP/s, where the GPU is far ahead.",
        hints={"high": "divide the A100's images/s by the Xeon's.", "low": "divide the A100's images/s by the Xeon's."},
        facts=_l4_resnet,
    ),
    Question(
        "4.q2",
        "Which spec-sheet number predicts single-stream LLM decoding speed best?",
        {"a": "peak FLOP/s", "b": "memory bandwidth", "c": "memory capacity"},
        answer="b",
        explain="tokens/s is about bandwidth / model bytes (lesson 5); capacity decides only whether it fits.",
        hints={"a": "decoding does about 2 FLOPs per weight it reads.", "c": "capacity is a yes/no: does it fit?"},
    ),
    Question(
        "4.q3",
        "Serving BERT-large at {rate:g} requests/s, on a T4 and on an A100. What does the A100 buy?",
        {"a": "more requests served", "b": "lower latency", "c": "nothing measurable"},
        answer=_l4_serving_answer,
        explain="served: T4 {t4_served:,.0f}/s, A100 {a100_served:,.0f}/s; p50: T4 {t4_p50:.1f} ms, "
        "A100 {a100_p50:.1f} ms.",
        hints={
            "a": "a server that keeps up serves what arrives: compare the served/s column.",
            "b": "compare the p50 column.",
            "c": "compare the p50 column.",
        },
        facts=_l4_serving,
    ),
    # ---- lesson 5
    Question(
        "5.predict",
        "One stream of Llama 2 7B in fp16, served by vLLM on an A100: how many tokens per second does it decode?",
        {"a": "about 10", "b": "about 100", "c": "about 1,000", "d": "about 10,000"},
        answer=bucket("tps", {"a": (0, 31.6), "b": (31.6, 316), "c": (316, 3162), "d": (3162, INF)}),
        explain="{tps:.0f} tokens/s: each token reads the {gb:.1f} GB of weights at about {bw:,.0f} GB/s "
        "(the bandwidth the chip achieves), so tokens/s is about bandwidth / bytes.",
        hints={
            "a": "how long does reading the weights once take at the A100's bandwidth?",
            "b": "how long does reading the weights once take at the A100's bandwidth?",
            "c": "how long does reading the weights once take at the A100's bandwidth?",
            "d": "how long does reading the weights once take at the A100's bandwidth?",
        },
        facts=_l5_predict,
    ),
    Question(
        "5.q1",
        "The KV cache of one Llama 2 7B sequence ({layers} layers, {kv_heads} KV heads of dimension {head_dim}) "
        "holding 1,000 tokens in fp16: how many GB?",
        answer=lambda f: f["gb"],
        tolerance=0.1,
        unit="GB",
        explain="2 (keys and values) x {layers} x {kv_heads} x {head_dim} x 1,000 tokens x 2 bytes = {gb:.2f} GB.",
        hints={
            "high": "2 x layers x kv_heads x head_dim x tokens x bytes, in GB (1e9 bytes).",
            "low": "2 x layers x kv_heads x head_dim x tokens x bytes: did you count keys and values?",
        },
        facts=_l5_kv,
    ),
    Question(
        "5.q2",
        "Storing the weights of Llama 2 7B in int8 instead of fp16 halves its bytes ({bytes_ratio:.0f}x fewer). "
        "In PyTorch eager on an L4, single-stream decoding becomes:",
        {"a": "slower or about the same (under 1.3x)", "b": "1.3x to 2.5x faster", "c": "more than 2.5x faster"},
        answer=bucket("ratio", {"a": (0, 1.3), "b": (1.3, 2.5), "c": (2.5, INF)}),
        explain="{ratio:.2f}x: fewer bytes help only as far as the engine's dequantising kernels keep up with "
        "the bandwidth, and the host's per-operator work keeps up with the kernels.",
        hints={
            "a": "run the two precisions in the simulator and compare tokens/s per stream.",
            "b": "run the two precisions in the simulator and compare tokens/s per stream.",
            "c": "run the two precisions in the simulator and compare tokens/s per stream.",
        },
        facts=_l5_int8,
    ),
    Question(
        "5.q3",
        "Continuous batching, compared with static batching:",
        {
            "a": "shrinks the KV cache of each sequence",
            "b": "refills a finished sequence's slot at the next step, so no batch waits for its longest answer",
            "c": "reads the weights once per sequence instead of once per step",
        },
        answer="b",
        explain="the cache per sequence is the same; the slots stay full.",
        hints={
            "a": "the cache holds each sequence's tokens whatever the batching.",
            "c": "that would be slower: batching shares each weight read.",
        },
    ),
    # ---- lesson 6
    Question(
        "6.predict",
        "ResNet-50 inference on an L4. int4 stores weights in half the bytes of int8. Compared with int8, int4 "
        "(weights only, as LLM int4 schemes do) is:",
        {"a": "faster (more than 1.1x)", "b": "about the same (within 10%)", "c": "slower"},
        answer=bucket("ratio", {"c": (0, 1 / 1.1), "b": (1 / 1.1, 1.1), "a": (1.1, INF)}),
        explain="int4 / int8 = {ratio:.2f}x. Weight-only int4 keeps activations and math in 16-bit, and a "
        "ResNet's traffic is mostly activations: it loses int8's faster math and saves few bytes.",
        hints={
            "a": "what does a ResNet move more of: weights or activations? And what math does weight-only int4 use?",
            "b": "weight-only int4 does its math in 16-bit; int8 does it in int8.",
        },
        facts=_l6_predict,
    ),
    Question(
        "6.q1",
        "Which of these GPUs has no INT4 tensor-core math?",
        {"a": "T4 (Turing)", "b": "A100 (Ampere)", "c": "H100 (Hopper)", "d": "RTX 4090 (Ada)"},
        answer="c",
        explain="Turing, Ampere and Ada have INT4 tensor-core math (the A100 datasheet lists it, dense and "
        "sparse); Hopper dropped it in favour of FP8.",
        hints={
            "a": "Turing introduced INT8 and INT4 tensor-core modes.",
            "b": "the A100 datasheet has an INT4 row.",
            "d": "Ada's tensor cores kept INT4; the newest of these four did not.",
        },
    ),
    Question(
        "6.q2",
        "An LLM quantized to int4 with GPTQ or AWQ runs on an A100. What is in 4 bits?",
        {
            "a": "weights and activations; the math is int4",
            "b": "the weights only: they are dequantized to 16-bit, and activations and math stay 16-bit",
            "c": "the activations only",
        },
        answer="b",
        explain="weight-only quantization saves bytes (what decoding is bound by) and needs no int4 math; "
        "it is why int4 helps LLM decoding and not a ResNet.",
        hints={
            "a": "LLM activations have outliers that 4 bits cannot hold.",
            "c": "what does decoding read the most of?",
        },
    ),
    Question(
        "6.q3",
        "Why is int8 harder than fp8 for real LLM activations?",
        {
            "a": "int8 has fewer bits than fp8",
            "b": "a few outlier channels set int8's single scale, leaving the other values few levels; "
            "fp8's exponent keeps relative precision across the range",
            "c": "int8 is not supported by tensor cores",
        },
        answer="b",
        explain="the notebook's experiment with outlier channels shows it; on Gaussian data without outliers "
        "int8 looks better than fp8.",
        hints={
            "a": "both store 8 bits per value.",
            "c": "int8 tensor cores exist since Turing.",
        },
    ),
    Question(
        "6.q4",
        "You ask the simulator for bf16 on a T4, which has no bf16 tensor cores. What does it run?",
        {"a": "bf16, natively", "b": "fp16, silently converted", "c": "the fp32 rate, with a warning"},
        answer=_l6_t4_answer,
        explain="it runs as {run}, and the result's warnings say so: a model moved unchanged from an A100 loses "
        "that speed.",
        hints={
            "a": "does Turing have bf16 tensor cores?",
            "b": "converting the format would change the numbers: the hardware does not do it for you.",
            "c": "read the `runs as` column and the warning.",
        },
        facts=_l6_t4,
    ),
    # ---- lesson 7
    Question(
        "7.predict",
        "BERT-base inference in fp16 on an A100 at batch 1, eager PyTorch against a TensorRT-like engine. "
        "The speed-up is:",
        {"a": "under 1.2x", "b": "1.2x to 2x", "c": "2x to 5x", "d": "more than 5x"},
        answer=bucket("speedup", {"a": (0, 1.2), "b": (1.2, 2), "c": (2, 5), "d": (5, INF)}),
        explain="{speedup:.1f}x: at batch 1 eager is `{bottleneck}`-bound, so fewer, cheaper launches are the "
        "win, not faster math.",
        hints={
            "a": "at batch 1, what does each step wait on?",
            "b": "at batch 1, how long does the host take to issue a kernel, against the kernel itself?",
            "c": "at batch 1, how long does the host take to issue a kernel, against the kernel itself?",
            "d": "the kernels' own time stays: fusion removes launches and round trips, not all the math.",
        },
        facts=_l7_predict,
    ),
    Question(
        "7.q1",
        "At large batch, launches hide behind long kernels. What can fusion still save?",
        {
            "a": "nothing",
            "b": "HBM round trips: a fused elementwise operator never writes its input to memory and reads it back",
            "c": "FLOPs: fused operators do less math",
        },
        answer="b",
        explain="that is why fusion still helps a memory-bound ResNet at large batch: compare the HBM column.",
        hints={
            "a": "compare the HBM MB per step of eager and compiled at batch 256.",
            "c": "the math of each operator is the same; what disappears between them?",
        },
    ),
    Question(
        "7.q2",
        "ResNet-50 at batch 1: how many times more kernels per step does eager launch than TensorRT? Use the "
        "kernels column.",
        answer=lambda f: f["ratio"],
        tolerance=0.1,
        unit="x",
        explain="{eager} against {trt} kernels: {ratio:.1f}x.",
        hints={"high": "divide eager's kernels by TensorRT's.", "low": "divide eager's kernels by TensorRT's."},
        facts=_l7_kernels,
    ),
    Question(
        "7.q3",
        "Can you train a model with TensorRT?",
        {"a": "yes", "b": "no: it builds inference engines only; train in PyTorch (eager or torch.compile)"},
        answer=lambda f: "a" if f["trains"] else "b",
        explain="TensorRT optimizes a trained model for inference; `torch.compile` speeds up training.",
        hints={
            "a": "a TensorRT engine has no backward pass.",
            "b": "check the engine catalogue's `trains` field.",
        },
        facts=_l7_trains,
    ),
    # ---- lesson 8
    Question(
        "8.predict",
        "ResNet-50 training on a Xeon 8480+ server CPU (as the device) against one A100. The A100 is faster by:",
        {"a": "2x to 5x", "b": "5x to 20x", "c": "20x to 100x", "d": "more than 100x"},
        answer=bucket("ratio", {"a": (0, 5), "b": (5, 20), "c": (20, 100), "d": (100, INF)}),
        explain="the simulator says {ratio:.0f}x.",
        hints={k: "compare the two chips' 16-bit FLOP/s in lesson 4's spec sheet." for k in "abcd"},
        facts=_l8_predict,
    ),
    Question(
        "8.q1",
        "GPU busy is low, most of the GPU time is `input_io`, the CPU is nearly idle. First thing to try?",
        {
            "a": "a faster GPU",
            "b": "faster storage, or a dataset served from RAM (`host_cache_gb`)",
            "c": "a bigger batch",
            "d": "fp8",
        },
        answer="b",
        explain="the workers wait for the disk: only the storage side helps.",
        hints={
            "a": "the GPU is waiting; would a faster one wait less?",
            "c": "a bigger batch needs more images from the same disk.",
            "d": "fp8 speeds up math the GPU is not doing.",
        },
    ),
    Question(
        "8.q2",
        "GPU busy near 100%, MFU and HBM bandwidth both low, inference at batch 1. What is going on?",
        {
            "a": "the kernels are too small to fill the chip (or wait on launches): batch more or fuse",
            "b": "the GPU is compute-bound: buy a faster one",
            "c": "the input pipeline is too slow",
        },
        answer="a",
        explain="busy but neither math nor bandwidth used: too little work per kernel.",
        hints={
            "b": "compute-bound means high MFU.",
            "c": "then the GPU would not be busy.",
        },
    ),
    Question(
        "8.q3",
        "Llama 2 70B in fp16 on a {cap:.0f} GB RTX 4090: how many GB do its weights alone take?",
        answer=lambda f: f["gb"],
        tolerance=0.1,
        unit="GB",
        explain="{gb:.0f} GB of weights: parameters x 2 bytes. It needs several GPUs, or 4-bit weights and a "
        "bigger GPU.",
        hints={"high": "parameters x bytes per weight / 1e9.", "low": "parameters x bytes per weight / 1e9."},
        facts=_l8_oom,
    ),
    # ---- lesson 9
    Question(
        "9.predict",
        "ResNet-50 inference in fp16 at batch 32. Its convolutions are matrix products. On which chip are more of "
        "them memory-bound: a T4 or an H100?",
        {"a": "the T4", "b": "the H100", "c": "the same on both"},
        answer=lambda f: "a" if f["t4"] > f["h100"] else ("b" if f["h100"] > f["t4"] else "c"),
        explain="memory-bound convolutions: {t4} on the T4, {h100} on the H100. The H100's math grew more than its "
        "bandwidth, so its ridge point is higher: an operator needs more FLOPs per byte to keep it busy.",
        hints={
            "a": "compare the two chips' FLOP/s per byte of bandwidth (the ridge point).",
            "b": "compare the two chips' FLOP/s per byte of bandwidth (the ridge point).",
            "c": "the operators are the same; are the two chips' ridge points?",
        },
        facts=_l9_predict,
    ),
    Question(
        "9.q1",
        "The H100's catalogue entry gives {peak:g} TFLOP/s at fp16 and {bw:g} GB/s. What is its ridge point, in "
        "FLOP per byte?",
        answer=lambda f: f["ridge"],
        tolerance=0.1,
        unit="FLOP/byte",
        explain="{peak:g}e12 / {bw:g}e9 = {ridge:.0f} FLOP/byte: an operator below that is memory-bound.",
        hints={
            "high": "ridge = peak FLOP/s / bytes/s; 1 TFLOP/s is 1e12, 1 GB/s is 1e9.",
            "low": "ridge = peak FLOP/s / bytes/s; 1 TFLOP/s is 1e12, 1 GB/s is 1e9.",
        },
        facts=_l9_ridge,
    ),
    Question(
        "9.q2",
        "An elementwise add of two fp16 tensors into a third does 1 FLOP per element. Its arithmetic intensity is:",
        {"a": "about 0.17 FLOP/byte (1 FLOP per 6 bytes)", "b": "about 1 FLOP/byte", "c": "about 100 FLOP/byte"},
        answer="a",
        explain="it reads 2 + 2 bytes and writes 2 per FLOP: far left of any GPU's ridge, always memory-bound.",
        hints={
            "b": "count the bytes: two inputs and one output, 2 bytes each.",
            "c": "that would be a large matrix product, which reuses each value many times.",
        },
    ),
    Question(
        "9.q3",
        "A layer norm in BERT is memory-bound on an H100. What makes it faster?",
        {
            "a": "a chip with more FLOP/s",
            "b": "fewer bytes: fuse it with its neighbour so its input never goes through HBM",
            "c": "a larger batch",
        },
        answer="b",
        explain="a memory-bound operator runs at bandwidth / bytes: only fewer bytes or more bandwidth help (lesson 7).",
        hints={
            "a": "it is below the ridge: its math units already wait.",
            "c": "a norm's FLOPs and bytes grow together with the batch: its intensity stays.",
        },
    ),
    # ---- lesson 10
    Question(
        "10.predict",
        "Three pipelines, A, B and C, are slow. In how many of them would a faster GPU (an H200 instead) give at "
        "least 2x?",
        {"a": "none", "b": "one", "c": "two", "d": "all three"},
        answer=lambda f: "abcd"[f["n"]],
        explain="with an H200: {gains}. Only a pipeline bound by the GPU's own math or memory gains from a faster GPU.",
        hints={k: "a faster GPU helps only where the GPU itself is the limit." for k in "abcd"},
        facts=_l10_predict,
    ),
    Question(
        "10.q1",
        "A training pipeline whose GPU waits on `input_io` gets its dataset served from RAM after the first epoch "
        "(`host_cache_gb` at least the dataset's size). What does that change?",
        {
            "a": "the storage reads: later epochs read from memory, so the disk no longer limits",
            "b": "the GPU's speed",
            "c": "nothing: the workers still decode every image",
        },
        answer="a",
        explain="the reads move to RAM; what limits next is usually the CPU's decoding.",
        hints={
            "b": "the GPU was waiting; what was it waiting for?",
            "c": "decoding stays, but was decoding the limit?",
        },
    ),
    Question(
        "10.q2",
        "An inference server at batch 1 is overhead-bound. Which fix keeps each request's latency low?",
        {
            "a": "replay the step as a graph (CUDA graphs) or use an engine such as TensorRT",
            "b": "more loader workers",
            "c": "a GPU with more FLOP/s",
        },
        answer="a",
        explain="the host issues fewer, cheaper launches; a larger batch also helps throughput, at a cost in latency.",
        hints={
            "b": "the GPU waits on kernel launches, not on input.",
            "c": "the kernels are already short; the host's issue time is what the GPU waits for.",
        },
    ),
    Question(
        "10.q3",
        "You move a training job from fp32 to bf16 and it runs many times faster. What must you still check?",
        {
            "a": "that the model still trains to the same accuracy (its loss curve and evaluation)",
            "b": "nothing: bf16 has fp32's range",
            "c": "that the GPU has enough loader workers",
        },
        answer="a",
        explain="mixed precision usually trains to the same accuracy, but measure it: speed is half the question.",
        hints={
            "b": "range is not precision: bf16 keeps 7 mantissa bits.",
            "c": "that is about speed, not about the numbers.",
        },
    ),
)
