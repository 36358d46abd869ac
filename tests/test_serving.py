"""Online serving against queueing theory: Pollaczek-Khinchine, Little's law, flow balance."""

import json

import numpy as np
import pytest

from jupyter_hwsim import HwsimError, Scenario, best_batch, estimate, simulate
from jupyter_hwsim.core import costs
from jupyter_hwsim.kinds import serving

# batch size 1, no preprocessing, no batching delay: one FIFO server, M/G/1. A serving engine (TensorRT) keeps the
# host's issue time off the service time, as a Triton deployment does; the queueing is what these tests check.
TRT = dict(engine="tensorrt")
MG1 = Scenario(
    kind="serving",
    workload="resnet50",
    gpu="a100",
    max_batch_size=1,
    preprocess_ms_per_sample=0,
    max_queue_delay_ms=0,
    **TRT,
)


def service_parts(s):
    bc = serving.BatchCosts(costs.resolve(s))
    return bc.copy(1), bc.step(1).step_s


def pollaczek_khinchine(s, rho):
    """Mean wait in M/G/1; service = copy x J1 + step x J2 with independent lognormal J of mean 1."""
    c, g = service_parts(s)
    mean = c + g
    lam = rho / mean
    es2 = mean**2 + s.jitter_cv**2 * (c * c + g * g)
    return lam, lam * es2 / (2 * (1 - rho))


# the mean wait's standard error grows as 1 / (1 - rho)^2: heavier load needs longer runs
RUNS = {0.3: (4, 20000), 0.6: (4, 20000), 0.9: (8, 100000)}


@pytest.mark.parametrize("cv", [0.0, 0.5], ids=["M/D/1", "M/G/1 lognormal"])
@pytest.mark.parametrize("rho", [0.3, 0.6, pytest.param(0.9, marks=pytest.mark.slow)])
def test_mean_wait_matches_pollaczek_khinchine(cv, rho):
    seeds, n = RUNS[rho]
    s = MG1.replace(jitter_cv=cv, steps=n)
    lam, wq = pollaczek_khinchine(s, rho)
    s = s.replace(arrival_rate_rps=lam)
    waits = [simulate(s, seed=k, suggest=False).latency_breakdown_ms["queueing"] / 1e3 for k in range(seeds)]
    print(
        f"\nrho {rho} cv {cv}: DES {np.mean(waits) * 1e3:.4f} ms, P-K {wq * 1e3:.4f} ms, "
        f"error {np.mean(waits) / wq - 1:+.2%}"
    )
    assert np.mean(waits) == pytest.approx(wq, rel=0.05)
    # the estimate is the formula itself
    assert estimate(s, suggest=False).latency_breakdown_ms["queueing"] / 1e3 == pytest.approx(wq, rel=1e-6)


@pytest.mark.parametrize(
    "fields",
    [
        dict(MG1.to_dict(), arrival_rate_rps=400, steps=20000),
        dict(kind="serving", arrival_rate_rps=2000, max_batch_size=16, max_queue_delay_ms=2, steps=20000, **TRT),
        dict(kind="serving", concurrency=32, think_time_ms=5, steps=20000, **TRT),
        dict(
            kind="serving",
            workload="bert-base",
            gpu="t4",
            precision="fp16",
            arrival_rate_rps=300,
            max_batch_size=8,
            replicas=2,
            steps=20000,
        ),
    ],
    ids=["M/G/1", "dynamic batching", "closed loop", "two replicas"],
)
def test_littles_law_and_flow_balance(fields):
    s = Scenario(**fields)
    r = simulate(s, suggest=False)
    in_system = r.details["in_system"]
    assert in_system == pytest.approx(r.throughput * r.latency_ms["mean"] / 1e3, rel=0.02)
    assert sum(r.latency_breakdown_ms.values()) == pytest.approx(r.latency_ms["mean"], rel=1e-6)
    assert max(r.batch_sizes) <= r.details["max_batch_size"]
    assert sum(r.batch_sizes.values()) == pytest.approx(1.0)
    if s.arrival_rate_rps:  # below saturation everything offered is served
        assert r.throughput == pytest.approx(s.arrival_rate_rps, rel=0.03)
    else:  # interactive response-time law: X = N / (R + Z)
        assert r.throughput == pytest.approx(s.concurrency / ((r.latency_ms["mean"] + s.think_time_ms) / 1e3), rel=0.03)
    json.dumps(r.to_dict(), allow_nan=False)


def test_batching_grows_with_load_and_saturation_caps_throughput():
    s = Scenario(
        kind="serving", max_batch_size=32, max_queue_delay_ms=2, preprocess_ms_per_sample=0.05, steps=3000, **TRT
    )
    light, heavy = (
        simulate(s.replace(arrival_rate_rps=200), suggest=False),
        simulate(s.replace(arrival_rate_rps=20000), suggest=False),
    )
    mean_b = {k: sum(b * f for b, f in r.batch_sizes.items()) for k, r in (("light", light), ("heavy", heavy))}
    assert mean_b["light"] < 2 and mean_b["heavy"] > 8
    cap = estimate(s.replace(arrival_rate_rps=20000), suggest=False)
    assert heavy.throughput < 20000 * 0.9  # saturated: the offered load is not served
    assert heavy.throughput == pytest.approx(cap.throughput, rel=0.1)
    assert light.bottleneck == "arrivals" and heavy.bottleneck in ("compute", "memory_bw", "overhead")
    assert "idles" in light.explanation


def test_queue_delay_trades_latency_for_batching_at_light_load():
    s = Scenario(kind="serving", arrival_rate_rps=300, max_batch_size=16, preprocess_ms_per_sample=0, steps=2000)
    quick, patient = (
        simulate(s.replace(max_queue_delay_ms=0), suggest=False),
        simulate(s.replace(max_queue_delay_ms=20), suggest=False),
    )
    assert patient.latency_breakdown_ms["batch_formation"] > 5 > quick.latency_breakdown_ms["batch_formation"]
    assert max(patient.batch_sizes) > max(quick.batch_sizes)


def test_preprocessing_bound_server_names_the_cpu():
    s = Scenario(kind="serving", arrival_rate_rps=4000, loader_workers=2, preprocess_ms_per_sample=2, steps=1000, **TRT)
    for fn in (simulate, estimate):
        r = fn(s, suggest=False)
        assert r.bottleneck == "cpu"
        assert r.throughput == pytest.approx(2 / 2e-3, rel=0.05)


def test_replicas_double_capacity():
    s = Scenario(
        kind="serving", arrival_rate_rps=50000, max_batch_size=8, preprocess_ms_per_sample=0, steps=2000, jitter_cv=0.0
    )
    one, two = simulate(s, suggest=False), simulate(s.replace(replicas=2), suggest=False)
    assert two.throughput == pytest.approx(2 * one.throughput, rel=0.05)


def test_goodput_counts_requests_within_the_budget():
    capacity = estimate(Scenario(kind="serving", arrival_rate_rps=1e5, max_batch_size=8), suggest=False).throughput
    s = Scenario(kind="serving", arrival_rate_rps=round(0.6 * capacity), max_batch_size=8, steps=2000)
    r = simulate(s, suggest=False)
    assert r.goodput == pytest.approx(r.throughput)  # at 60% of capacity, all well within 100 ms
    tight = simulate(s.replace(latency_slo_ms=r.latency_ms["p50"]), suggest=False)
    assert tight.goodput == pytest.approx(r.throughput * 0.5, rel=0.1)


def test_suggestions_rank_latency_gains_when_the_load_is_met():
    r = simulate(Scenario(kind="serving", arrival_rate_rps=500, max_batch_size=8, steps=300))
    assert r.suggestions and all(x.get("metric") == "p99 latency" for x in r.suggestions)
    speedups = [x["speedup"] for x in r.suggestions if x["speedup"] is not None]
    assert speedups == sorted(speedups, reverse=True)


def test_best_batch_is_the_largest_within_the_budget():
    s = Scenario(kind="inference", workload="resnet50", gpu="a100", loader_workers=32, cpu_cores=64)
    out = best_batch(s, latency_slo_ms=100, method="estimate")
    table = {row["batch_size"]: row for row in out["table"]}
    assert table[out["batch"]]["p99_ms"] <= 100 < table[2 * out["batch"]]["p99_ms"]
    assert out["throughput"] == pytest.approx(table[out["batch"]]["throughput"])
    capacity = estimate(Scenario(kind="serving", arrival_rate_rps=1e5), suggest=False).throughput
    # half the capacity of an eager ResNet-50 server: a batch holds about 9 ms of Python per operator
    served = best_batch(Scenario(kind="serving", arrival_rate_rps=round(capacity / 2), steps=300), latency_slo_ms=50)
    assert served["field"] == "max_batch_size" and served["batch"] >= 1
    assert served["p99_ms"] <= 50


@pytest.mark.parametrize(
    "fields, field",
    [
        (dict(kind="serving", arrival_rate_rps=0), "arrival_rate_rps"),
        (dict(kind="serving", concurrency=0), "concurrency"),
        (dict(kind="serving", max_batch_size=0), "max_batch_size"),
        (dict(kind="serving", latency_slo_ms=-1), "latency_slo_ms"),
        (dict(kind="serving", replicas=0), "replicas"),
        (dict(kind="serving", max_queue_delay_ms="soon"), "max_queue_delay_ms"),
    ],
)
def test_bad_serving_inputs_name_the_field(fields, field):
    with pytest.raises(HwsimError) as e:
        Scenario(**fields)
    assert e.value.field == field
