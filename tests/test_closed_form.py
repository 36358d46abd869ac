"""Deterministic pipelines run at their bottleneck rate: DES vs. the analytic twin within 1%."""

import pytest

from jupyter_hwsim import Scenario, estimate, simulate

CASES = {
    "io": dict(storage="hdd", loader_workers=8),
    "cpu": dict(loader_workers=4),
    "host_link": dict(
        workload="mlp-small", batch_size=4096, gpu="h100", host_link_gbs=0.05, preprocess_ms_per_sample=0.0001
    ),
    "compute": dict(workload="bert-large", gpu="t4", precision="fp32", batch_size=32),
    "memory_bw": dict(workload="resnet50", gpu="t4", precision="fp16", batch_size=64, loader_workers=16),
    "overhead": dict(workload="mlp-small", gpu="h100", batch_size=1, loader_workers=2),
}


@pytest.mark.parametrize("expected", list(CASES))
def test_des_matches_bottleneck_law(expected):
    s = Scenario(jitter_cv=0.0, **CASES[expected])
    e, r = estimate(s, suggest=False), simulate(s, suggest=False)
    assert e.bottleneck == expected
    assert r.bottleneck == expected
    assert r.throughput == pytest.approx(e.throughput, rel=0.01)
    for k in ("storage", "cpu", "host_link", "gpu_busy", "gpu_mfu", "hbm_bw"):
        assert r.utilization[k] == pytest.approx(e.utilization[k], abs=0.01), k


def test_pageable_copy_is_serial_with_the_step():
    s = Scenario(jitter_cv=0.0, **CASES["host_link"])
    pinned, pageable = simulate(s, suggest=False), simulate(s.replace(pin_memory=False), suggest=False)
    e = estimate(s.replace(pin_memory=False), suggest=False)
    assert pageable.throughput < pinned.throughput
    assert pageable.throughput == pytest.approx(e.throughput, rel=0.01)
    assert pageable.gpu_time["host_copy"] > 0.5


def test_zero_workers_serializes_loading_with_the_step():
    s = Scenario(jitter_cv=0.0, loader_workers=0, workload="resnet18", batch_size=64)
    r, e = simulate(s, suggest=False), estimate(s, suggest=False)
    assert r.throughput == pytest.approx(e.throughput, rel=0.01)
    d = r.details["demand_ms"]
    serial_ms = d["read"] + d["preprocess"] + d["copy"] + r.details["step_ms"]
    assert r.latency_ms["mean"] == pytest.approx(serial_ms, rel=0.01)
    assert r.bottleneck == "cpu"
