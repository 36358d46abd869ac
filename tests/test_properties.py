"""Operational laws over random valid scenarios (Hypothesis)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_hwsim import HwsimError, Scenario, simulate
from jupyter_hwsim.core import costs
from jupyter_hwsim.core.scenario import host_defaults

scenarios = st.builds(
    Scenario,
    kind=st.sampled_from(["training", "inference"]),
    workload=st.sampled_from(["resnet18", "resnet50", "mlp-small", "bert-base", "vit-b16", "gpt2"]),
    gpu=st.sampled_from(["t4", "a100", "h100", "l4", "rtx-4090", "tpu-v5e", "xeon-8480"]),
    precision=st.sampled_from(["fp32", "bf16", "fp16", "int8"]),
    batch_size=st.sampled_from([1, 4, 16, 64, 256]),
    loader_workers=st.integers(0, 12),
    cpu_cores=st.integers(1, 32),
    storage=st.sampled_from(["hdd", "sata-ssd", "nvme-gen4", "network-fs", "ramdisk"]),
    pin_memory=st.booleans(),
    engine=st.sampled_from(["pytorch-eager", "torch-compile", "cuda-graphs"]),  # engines that train and run anywhere
    jitter_cv=st.sampled_from([0.0, 0.1, 0.5]),
    steps=st.integers(150, 300),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios, st.integers(0, 2**16))
def test_operational_laws(s, seed):
    r = simulate(s, seed=seed, suggest=False)
    # (utilizations are clamped to [0, 1] and gpu_time shares sum to 1 by construction: nothing to test there)
    if r.memory["oom"]:
        assert r.bottleneck == "memory_capacity" and r.throughput == 0
        return
    m = costs.resolve(s)
    d = costs.demands(m)
    x = r.throughput / m.batch  # batches/s
    # utilization law U = X * S, with S the mean (jittered) service time: lognormal mean 1
    tol = 0.05 if s.jitter_cv == 0 else 0.25  # short windows see loader bursts at their edges
    # the loader may read ahead into its queue during the window: up to workers x prefetch_factor batches more
    ahead = s.loader_workers * s.prefetch_factor / max(r.sim["simulated_s"] - r.sim["warmup_s"], 1e-9)
    assert (
        x * d.storage_s * (1 - tol) - 0.01 <= r.utilization["storage"] <= (x + ahead) * d.storage_s * (1 + tol) + 0.01
    )
    assert r.utilization["host_link"] == _approx(x * d.copy_s, tol)
    assert r.utilization["gpu_busy"] == _approx(x * (d.step.compute_s + d.step.memory_s), tol)
    # throughput never above a stage's capacity
    slack = 1.0 + tol
    if d.storage_s:
        assert x <= slack / d.storage_s
    assert x <= slack / d.step.step_s
    assert x * (d.preprocess_s + d.step.issue_s) <= s.cpu_cores * slack
    # determinism per seed
    assert simulate(s, seed=seed, suggest=False).to_dict() | {"sim": None} == r.to_dict() | {"sim": None}


def _approx(v, tol):
    import pytest

    return pytest.approx(v, rel=tol, abs=0.01)


serving_scenarios = st.builds(
    Scenario,
    kind=st.just("serving"),
    workload=st.sampled_from(["resnet50", "mlp-small", "bert-base"]),
    gpu=st.sampled_from(["t4", "a100", "l4", "h100"]),
    precision=st.sampled_from(["fp16", "int8", "bf16"]),
    arrival_rate_rps=st.sampled_from([None, 50.0, 500.0, 5000.0]),
    concurrency=st.sampled_from([None, 4, 64]),
    think_time_ms=st.sampled_from([0.0, 5.0]),
    max_batch_size=st.sampled_from([1, 4, 32]),
    max_queue_delay_ms=st.sampled_from([0.0, 1.0, 10.0]),
    loader_workers=st.integers(1, 8),
    replicas=st.integers(1, 3),
    jitter_cv=st.sampled_from([0.0, 0.3]),
    steps=st.integers(200, 600),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(serving_scenarios, st.integers(0, 2**16))
def test_serving_laws(s, seed):
    r = simulate(s, seed=seed, suggest=False)
    # (utilizations are clamped to [0, 1] and gpu_time shares sum to 1 by construction: nothing to test there)
    if r.memory["oom"]:
        return
    # Little's law over the measured window; requests straddling its edges count partly, so the tolerance
    # grows with the number in the system against the number measured
    n_in = r.details["in_system"]
    assert n_in == _approx(r.throughput * r.latency_ms["mean"] / 1e3, 0.03 + 2 * n_in / s.steps)
    assert sum(r.latency_breakdown_ms.values()) == _approx(r.latency_ms["mean"], 1e-6)
    assert 0.0 <= r.goodput <= r.throughput * (1 + 1e-9)
    assert max(r.batch_sizes) <= (s.max_batch_size or 8)
    assert r.latency_ms["p50"] <= r.latency_ms["p95"] <= r.latency_ms["p99"]
    assert simulate(s, seed=seed, suggest=False).to_dict() | {"sim": None} == r.to_dict() | {"sim": None}


llm_scenarios = st.builds(
    Scenario,
    kind=st.just("llm"),
    workload=st.sampled_from(["gpt2", "llama-2-7b", "llama-3-8b", "mistral-7b"]),
    gpu=st.sampled_from(["a100", "h100", "rtx-4090", "m2-ultra"]),
    precision=st.sampled_from(["fp16", "int8", "int4"]),
    concurrency=st.sampled_from([1, 4, 32]),
    prompt_tokens=st.sampled_from([16, 256]),
    output_tokens=st.sampled_from([8, 64]),
    output_tokens_cv=st.sampled_from([0.0, 0.7]),
    batching=st.sampled_from(["static", "continuous"]),
    arrival_rate_rps=st.sampled_from([None, 2.0, 50.0]),
    engine=st.sampled_from(["pytorch-eager", "vllm"]),
    jitter_cv=st.sampled_from([0.0, 0.2]),
    steps=st.integers(10, 60),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(llm_scenarios, st.integers(0, 2**16))
def test_llm_laws(s, seed):
    r = simulate(s, seed=seed, suggest=False)
    # (utilizations are clamped to [0, 1] and gpu_time shares sum to 1 by construction: nothing to test there)
    if r.memory["oom"]:
        assert s.concurrency > r.max_concurrency
        return
    assert r.throughput > 0 and r.ttft_ms["p50"] > 0 and r.latency_ms["p50"] > 0
    assert r.latency_ms["p50"] <= r.latency_ms["p99"]
    # one stream never decodes faster than bandwidth / weight bytes allows (jitter aside: it averages to 1)
    bw = r.details["effective_bandwidth_gbs"] * 1e9
    if s.jitter_cv == 0:
        assert r.tokens_per_s_per_stream <= 1.0001 * bw / r.details["bytes_per_token_single_stream"]
    assert simulate(s, seed=seed, suggest=False).to_dict() | {"sim": None} == r.to_dict() | {"sim": None}


def _rebuilt(s: Scenario, changes: dict) -> Scenario:
    """What replace() means, the slow way: every field of s with the changes, built and checked from nothing
    (an engine or fusion change frees the other; a cpu change frees the cores and speed the old cpu implied)."""
    base = s.to_dict()
    if "fusion" in changes and "engine" not in changes:
        base.pop("engine")
    elif "engine" in changes and "fusion" not in changes:
        base.pop("fusion")
    if "cpu" in changes:
        for name, implied in zip(("cpu_cores", "cpu_speed"), host_defaults(s.cpu)):
            if name not in changes and base[name] == implied:
                base.pop(name)
    return Scenario.from_dict({**base, **changes})


_changes = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["training", "inference", "serving", "llm"]),
        "workload": st.sampled_from(["resnet50", "bert-base", "llama-2-7b", "mlp-small"]),
        "gpu": st.sampled_from(["t4", "a100", "h100", "mi300x", "tpu-v5e", "xeon-8480"]),
        "precision": st.sampled_from(["fp32", "bf16", "fp16", "int8", "int4"]),
        "batch_size": st.one_of(st.none(), st.sampled_from([1, 8, 64, -3])),
        "cpu": st.sampled_from([None, "epyc-9654", "core-i9-13900k"]),
        "cpu_cores": st.sampled_from([2, 64]),
        "engine": st.sampled_from(["pytorch-eager", "torch-compile", "tensorrt", "vllm", "llama.cpp"]),
        "fusion": st.sampled_from(["eager", "compiled", "tensorrt"]),
        "decoder": st.sampled_from([None, "pillow", "dali-gpu"]),
        "arrival_rate_rps": st.sampled_from([None, 50.0]),
        "mode": st.sampled_from([None, "offline"]),
        "prompt_tokens": st.sampled_from([128, 4000]),
        "channels_last": st.booleans(),
    },
)


@settings(max_examples=150, deadline=None)
@given(scenarios, _changes)
def test_replace_is_a_rebuild_with_the_changes(s, changes):
    """replace() checks only the changed fields (it is on the suggestion search's hot path) but must mean the same
    as building the changed scenario from nothing: the same scenario, or the same refusal."""
    try:
        want = _rebuilt(s, changes)
    except HwsimError as e:
        with pytest.raises(HwsimError) as got:
            s.replace(**changes)
        assert str(got.value) == str(e)
        return
    assert s.replace(**changes) == want
