"""Operational laws over random valid scenarios (Hypothesis)."""
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_hwsim import Scenario, simulate
from jupyter_hwsim import costs

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
    fusion=st.sampled_from(["eager", "compiled", "tensorrt"]),
    jitter_cv=st.sampled_from([0.0, 0.1, 0.5]),
    steps=st.integers(150, 300),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios, st.integers(0, 2**16))
def test_operational_laws(s, seed):
    r = simulate(s, seed=seed, suggest=False)
    assert all(0.0 <= v <= 1.0 for v in r.utilization.values())
    assert math.isclose(sum(r.gpu_time.values()), 1.0, abs_tol=1e-6)
    if r.memory["oom"]:
        assert r.bottleneck == "memory_capacity" and r.throughput == 0
        return
    m = costs.resolve(s)
    d = costs.demands(m)
    x = r.throughput / m.batch    # batches/s
    # utilization law U = X * S, with S the mean (jittered) service time: lognormal mean 1
    tol = 0.05 if s.jitter_cv == 0 else 0.25   # short windows see loader bursts at their edges
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
