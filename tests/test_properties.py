"""Operational laws over random valid scenarios (Hypothesis)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_hwsim import Scenario, simulate
from jupyter_hwsim.core import costs

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
    assert r.utilization["storage"] == _approx(x * d.storage_s, tol)
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
