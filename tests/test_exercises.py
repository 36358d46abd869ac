"""The workshop checkers accept the right answer, refuse a wrong one without revealing the answer, and treat an
answer left as None as "fill in", not as an error."""

import re
import subprocess
import sys

import pytest

from jupyter_hwsim import HwsimError, best_batch, catalog, simulate
from jupyter_hwsim.core.precision import WARN_ABOVE, matmul_error
from jupyter_hwsim.teaching import exercises as ex


def run(capsys, fn, *args, **kw):
    ok = fn(*args, **kw)
    out = capsys.readouterr().out
    assert isinstance(ok, bool)
    assert 1 <= len(out.strip().splitlines()) <= 2, out  # one or two friendly lines
    return ok, out


def accepts(capsys, fn, *args, **kw):
    ok, out = run(capsys, fn, *args, **kw)
    assert ok and out.startswith("Correct!"), out
    return out


def refuses(capsys, fn, *args, **kw):
    ok, out = run(capsys, fn, *args, **kw)
    assert not ok and "Correct" not in out and "Traceback" not in out, out
    return out


def fill_in(capsys, fn, *args, **kw):
    ok, out = run(capsys, fn, *args, **kw)
    assert not ok and "fill in your answer" in out.lower(), out
    return out


def params(workload: str) -> float:
    """Parameters of a Llama-style model from its catalogue config (as the notebooks count them)."""
    w = catalog.get("workloads", workload)
    h, head_dim = w["hidden"], w["hidden"] // w["heads"]
    attention = 2 * h * h + 2 * h * w["kv_heads"] * head_dim
    ffn = (3 if w.get("gated_ffn") else 2) * h * w["ffn"]
    return w["layers"] * (attention + ffn) + 2 * w["vocab"] * h


def test_exercises_import_no_jupyter_module():
    code = (
        "import sys, jupyter_hwsim.teaching.exercises; "
        "bad = [m for m in ('IPython', 'ipywidgets', 'altair', 'jupyter_server', 'nbformat') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------- 01: the single biggest change
def test_biggest_change_accepts_a_change_near_the_best_suggestion(capsys):
    r = simulate(ex.LESSON1_PIPELINE)
    best = next(x for x in r.suggestions if "parts" not in x)  # the best single change
    accepts(capsys, ex.check_biggest_change, best["change"])
    accepts(capsys, ex.check_biggest_change, {k: v for k, v in best["fields"].items() if v is not None})
    # any change within 90% of the best suggestion's speed-up counts, however it is written
    other = {"loader_workers": 32}
    assert ex.change_speedup(ex.LESSON1_PIPELINE, other)[0] >= ex.ACCEPT_SHARE * best["speedup"]
    accepts(capsys, ex.check_biggest_change, "loader_workers = 32")


def test_biggest_change_refuses_weak_or_irrelevant_changes(capsys):
    r = simulate(ex.LESSON1_PIPELINE)
    single = next(x for x in r.suggestions if "parts" not in x)
    best = single["speedup"]
    for change in ("gpu=h100", "host_cache_gb=138", "cpu_cores=64"):
        assert ex.change_speedup(ex.LESSON1_PIPELINE, change)[0] < 0.9 * best
        out = refuses(capsys, ex.check_biggest_change, change)
        assert single["change"] not in out
    assert "single change" in refuses(capsys, ex.check_biggest_change, "loader_workers=32 cpu_cores=64")
    assert "problem itself" in refuses(capsys, ex.check_biggest_change, {"workload": "mlp-small"})
    assert "already" in refuses(capsys, ex.check_biggest_change, "loader_workers=12")
    assert "accuracy" in refuses(capsys, ex.check_biggest_change, "precision=int4")
    refuses(capsys, ex.check_biggest_change, "gpu=not-a-gpu")
    for engine in ("engine=tensorrt", "fusion=tensorrt", "engine=trt"):  # inference engines cannot train
        assert "cannot train" in refuses(capsys, ex.check_biggest_change, engine)
    refuses(capsys, ex.check_biggest_change, 42)
    fill_in(capsys, ex.check_biggest_change, None)


# ---------------------------------------------------------------- 02: MFU by hand
def test_mfu_by_hand(capsys):
    r = simulate(ex.LESSON2_DECODE, suggest=False)
    peak = catalog.get("gpus", ex.LESSON2_DECODE.gpu)["peak_tflops"][ex.LESSON2_DECODE.precision] * 1e12
    by_hand = r.throughput * 2 * params("llama-2-7b") / peak
    assert by_hand == pytest.approx(r.utilization["gpu_mfu"], rel=0.15)
    accepts(capsys, ex.check_mfu, by_hand)
    accepts(capsys, ex.check_mfu, r.utilization["gpu_mfu"])
    truth = f"{r.utilization['gpu_mfu']:.2%}"
    for wrong in (2 * by_hand, by_hand / 2):
        assert truth not in refuses(capsys, ex.check_mfu, wrong)
    assert "percentage" in refuses(capsys, ex.check_mfu, 100 * by_hand)
    assert "between 0 and 1" in refuses(capsys, ex.check_mfu, 3.0)
    refuses(capsys, ex.check_mfu, "lots")
    fill_in(capsys, ex.check_mfu, None)


# ---------------------------------------------------------------- 03: batching within a budget
def test_best_batch_within_the_budget(capsys):
    scenario, checker = ex.LESSON3_INFERENCE, ex.check_best_batch
    res = best_batch(scenario, latency_slo_ms=ex.LESSON3_SLO_MS)
    b, x = res["batch"], res["throughput"]
    assert b is not None and res["table"][-1]["meets"] is False  # the budget binds inside the table
    accepts(capsys, checker, b, x)
    accepts(capsys, checker, b, 1.04 * x)
    for wrong in (2 * b, b // 2, 3):
        out = refuses(capsys, checker, wrong, x)
        assert not re.search(rf"\b{b}\b", out), out  # the answer is not given away
    assert "right" in refuses(capsys, checker, b, 1.2 * x)
    fill_in(capsys, checker, None, None)
    fill_in(capsys, checker, b, None)


def test_serving_batch_is_the_lowest_latency_that_keeps_up(capsys):
    """Exercise B: every cap that keeps up serves the arrival rate; the right cap is the one with the lowest p99,
    so the largest cap inside the budget (the worst latency that still fits) is refused."""
    table = ex.serving_table()
    rate = ex.LESSON3_SERVING.arrival_rate_rps
    fits = {
        b: r for b, r in table.items() if r.throughput >= ex.KEEP_UP * rate and r.latency_ms["p99"] <= ex.LESSON3_SLO_MS
    }
    assert len(fits) >= 2  # a real choice
    lowest = min(fits, key=lambda b: fits[b].latency_ms["p99"])
    best, accepted = ex.serving_answer()
    assert best == lowest and lowest in accepted
    for b in accepted:
        accepts(capsys, ex.check_serving_batch, b, table[b].throughput)
        accepts(capsys, ex.check_serving_batch, b, 1.04 * table[b].throughput)
    worst = max(fits, key=lambda b: fits[b].latency_ms["p99"])
    assert worst not in accepted
    largest_in_budget = best_batch(ex.LESSON3_SERVING, latency_slo_ms=ex.LESSON3_SLO_MS)["batch"]
    if largest_in_budget not in accepted:
        refuses(capsys, ex.check_serving_batch, largest_in_budget, table[largest_in_budget].throughput)
    out = refuses(capsys, ex.check_serving_batch, worst, fits[worst].throughput)
    assert not re.search(rf"=\s*{best}\b", out), out  # the answer is not given away
    slow = [b for b, r in table.items() if r.throughput < ex.KEEP_UP * rate]
    assert slow and "queue" in refuses(capsys, ex.check_serving_batch, slow[0], table[slow[0]].throughput)
    assert "right" in refuses(capsys, ex.check_serving_batch, best, 0.8 * table[best].throughput)
    refuses(capsys, ex.check_serving_batch, 3, rate)
    fill_in(capsys, ex.check_serving_batch, None, None)


# ---------------------------------------------------------------- 04: choosing the chip
def test_a100_against_the_cpu(capsys):
    ratio = simulate(ex.LESSON4_A100, suggest=False).throughput / simulate(ex.LESSON4_CPU, suggest=False).throughput
    # eager PyTorch at batch 8 keeps the A100 waiting on the host (its per-operator cost as the published eager
    # runs show it, engines.toml host_overhead_scale), yet it stays well ahead of the CPU
    assert ratio > 1.4
    accepts(capsys, ex.check_a100_vs_cpu, ratio)
    accepts(capsys, ex.check_a100_vs_cpu, f"{ratio * 1.1:.1f}x")
    assert "Upside down" in refuses(capsys, ex.check_a100_vs_cpu, 1 / ratio)
    refuses(capsys, ex.check_a100_vs_cpu, ratio * 1.3)
    fill_in(capsys, ex.check_a100_vs_cpu, None)


# ---------------------------------------------------------------- 05: bandwidth and decoding
def test_model_size_and_decode_speed(capsys):
    s = ex.LESSON5_DECODE
    r = simulate(s, suggest=False)
    gb = params(s.workload) * catalog.get("precisions", s.precision)["bytes"] / 1e9
    assert gb == pytest.approx(r.memory["weights_gb"], rel=0.01)
    accepts(capsys, ex.check_model_gb, gb)
    assert "wrong width" in refuses(capsys, ex.check_model_gb, 2 * gb)  # the fp16 size
    assert "bytes" in refuses(capsys, ex.check_model_gb, gb * 1e9)
    refuses(capsys, ex.check_model_gb, 1.5 * gb)
    fill_in(capsys, ex.check_model_gb, None)

    gpu = catalog.get("gpus", s.gpu)
    effective = gpu["memory_bandwidth_gbs"] * gpu["memory_efficiency"]
    assert effective == pytest.approx(r.details["effective_bandwidth_gbs"], rel=1e-6)
    accepts(capsys, ex.check_decode_tokens_per_s, effective / gb)
    accepts(
        capsys,
        ex.check_decode_tokens_per_s,
        r.details["effective_bandwidth_gbs"] * 1e9 / r.details["bytes_per_token_single_stream"],
    )
    out = refuses(capsys, ex.check_decode_tokens_per_s, gpu["memory_bandwidth_gbs"] / gb)  # nameplate bandwidth
    assert "nameplate" in out
    refuses(capsys, ex.check_decode_tokens_per_s, effective / (2 * gb))
    fill_in(capsys, ex.check_decode_tokens_per_s, None)


# ---------------------------------------------------------------- 06: precision
def test_precision_choice(capsys):
    res = {p: simulate(ex.LESSON6_T4.replace(precision=p), suggest=False).throughput for p in ex.FLOAT_FORMATS}
    ok = {p: x for p, x in res.items() if matmul_error(p) <= WARN_ABOVE}
    right = max(ok, key=ok.get)
    accepts(capsys, ex.check_precision_choice, right)
    accepts(capsys, ex.check_precision_choice, right.upper())
    for wrong in ex.FLOAT_FORMATS:
        if res[wrong] < 0.98 * ok[right] or wrong not in ok:
            assert right not in refuses(capsys, ex.check_precision_choice, wrong)
    refuses(capsys, ex.check_precision_choice, "int8")
    refuses(capsys, ex.check_precision_choice, "float16")
    fill_in(capsys, ex.check_precision_choice, None)


# ---------------------------------------------------------------- 07: fusion
@pytest.mark.parametrize("batch", [1, 256])
def test_fusion_speedup(capsys, batch):
    s = ex.LESSON7_BASE.replace(batch_size=batch)
    sp = simulate(s.replace(fusion="tensorrt"), suggest=False).throughput / simulate(s, suggest=False).throughput
    assert sp > 1.0
    accepts(capsys, ex.check_fusion_speedup, sp, batch=batch)
    assert "Upside down" in refuses(capsys, ex.check_fusion_speedup, 1 / sp, batch=batch)
    refuses(capsys, ex.check_fusion_speedup, 1.5 * sp, batch=batch)
    fill_in(capsys, ex.check_fusion_speedup, None, batch=batch)


def test_fusion_matters_more_at_batch_one():
    def speedup(b):
        s = ex.LESSON7_BASE.replace(batch_size=b)
        return simulate(s.replace(fusion="tensorrt"), suggest=False).throughput / simulate(s, suggest=False).throughput

    assert speedup(1) > speedup(256)


# ---------------------------------------------------------------- 08: the mystery pipeline
def test_mystery_is_seeded_and_varied():
    assert ex.mystery(3) == ex.mystery(3)
    flaws = {simulate(ex.mystery(seed), suggest=False).bottleneck for seed in range(12)}
    assert len(flaws) >= 3 and flaws <= {"io", "cpu", "compute", "overhead"}
    with pytest.raises(HwsimError, match="seed"):
        ex.mystery(-1)


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_mystery_fix(capsys, seed):
    s = ex.mystery(seed)
    r = simulate(s)
    best = next(x for x in r.suggestions if "parts" not in x)  # the best single change
    assert best["speedup"] > 1.3
    accepts(capsys, ex.check_mystery_fix, seed, best["change"])
    # a faster GPU on a pipeline that does not wait on it, or a change that does nothing
    useless = next(x for x in r.suggestions if x["speedup"] is not None and x["speedup"] < 1.05)
    out = refuses(capsys, ex.check_mystery_fix, seed, useless["change"])
    assert best["change"] not in out
    fill_in(capsys, ex.check_mystery_fix, seed, None)


def test_the_format_examples_are_not_answers(capsys):
    """The examples in the fill-in line (and the notebooks' answer cells) must not be accepted answers."""
    examples = ("cpu_cores=64", "host_link=pcie5")
    line = fill_in(capsys, ex.check_biggest_change, None)
    assert "cpu_cores': 64" in line and "host_link=pcie5" in line, line
    for change in examples:
        refuses(capsys, ex.check_biggest_change, change)
        for seed in range(12):
            refuses(capsys, ex.check_mystery_fix, seed, change)


# ---------------------------------------------------------------- 10: the capstone
def test_capstone_cases_are_slow_for_different_reasons():
    found = {case: simulate(s, suggest=False).bottleneck for case, s in ex.CAPSTONE.items()}
    assert len(set(found.values())) == len(ex.CAPSTONE), found
    assert set(found.values()) <= set(ex.BOTTLENECKS)
    with pytest.raises(HwsimError, match="case"):
        ex.capstone("Z")


@pytest.mark.parametrize("case", sorted(ex.CAPSTONE))
def test_capstone_checks_the_diagnosis_then_the_fix(capsys, case):
    r = simulate(ex.capstone(case))
    best = next(x for x in r.suggestions if "parts" not in x)
    ok = ex.check_capstone(case, r.bottleneck, best["change"])
    out = capsys.readouterr().out
    assert ok and "Diagnosis right" in out and "Correct!" in out, out
    assert ex.check_capstone(case.lower(), r.bottleneck.upper(), best["change"])
    capsys.readouterr()
    for wrong in ex.BOTTLENECKS:
        if wrong != r.bottleneck:
            assert not ex.check_capstone(case, wrong, best["change"])
            out = capsys.readouterr().out
            assert f"Not {wrong}" in out and best["change"] not in out and "Correct" not in out, out
    useless = next(x for x in r.suggestions if x["speedup"] is not None and x["speedup"] < 1.05)
    assert not ex.check_capstone(case, r.bottleneck, useless["change"])
    assert "Correct" not in capsys.readouterr().out
    assert not ex.check_capstone(case, "slow", best["change"])
    assert "not a bottleneck name" in capsys.readouterr().out
    assert not ex.check_capstone(case, None, None)
    assert "fill in your answer" in capsys.readouterr().out.lower()
