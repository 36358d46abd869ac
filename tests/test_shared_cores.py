"""A device on the host's own cores: its step's threads share the cores with the loader workers.

Closed forms: the fair share of the cores, processor sharing of one core and of two, and the
analytic twin against the engine over a grid of pipelines."""

import pytest

from jupyter_hwsim import Scenario, estimate, simulate
from jupyter_hwsim.core.costs import core_share

HOST = {
    "name": "test CPU",
    "memory_gb": 16,
    "memory_bandwidth_gbs": 1e6,
    "peak_tflops": {"fp32": 1.0},
    "parallel_units": 2,
    "tile": 16,
    "compute_efficiency": 1.0,
    "memory_efficiency": 1.0,
    "launch_overhead_us": 0.0,
    "workspace_gb": 0.0,
    "host_link": "host-memory",
    "host_threads": 2,
}
STORAGE = {"name": "page cache", "bandwidth_gbs": 1e4, "latency_ms": 0.0, "concurrency": 1}


def workload(step_ms_per_sample, pre_ms_per_sample, handoff_ms=0.0, receive_ms=0.0):
    """A recorded step of that many ms per sample on a 1 TFLOP/s device (all matmul, no bytes)."""
    return {
        "arch": "measured",
        "params": 0.0,
        "device_bytes_per_sample": 4.0,
        "matmul": {"flops": step_ms_per_sample * 1e9, "values_in": 0.0, "values_out": 1e6, "kernels": 1},
        "other": {"flops": 0.0, "values_in": 0.0, "values_out": 0.0, "kernels": 0},
        "input_bytes_per_sample": 1.0,
        "preprocess_ms_per_sample": pre_ms_per_sample,
        "handoff_ms_per_sample": handoff_ms / 16,
        "receive_ms_per_batch": receive_ms,
        "default_batch_size": 16,
    }


def scenario(step_ms, pre_ms, workers, cores=2, threads=2, efficiency=None, **kw):
    gpu = {**HOST, "host_threads": threads, **({"contention_efficiency": efficiency} if efficiency else {})}
    return Scenario(
        workload=workload(step_ms, pre_ms, **kw),
        gpu=gpu,
        storage=STORAGE,
        precision="fp32",
        batch_size=16,
        loader_workers=workers,
        cpu_cores=cores,
        jitter_cv=0.0,
        steps=300,
        host_link={"name": "none", "bandwidth_gbs": 1e4},
    )


def test_fair_share():
    assert core_share(2, 2) == 1.0  # nothing else runs
    assert core_share(2, 3) == pytest.approx(2 / 3)  # a 2-thread step beside one worker, and the worker
    assert core_share(2, 4) == pytest.approx(1 / 2)  # beside two
    assert core_share(4, 6) == pytest.approx(2 / 3)
    assert 2 / 3 < core_share(2, 2.5) < 1  # fractional T lies between its neighbours
    assert core_share(2, 3, 0.6) == pytest.approx(0.4)  # a measured efficiency scales the share
    assert core_share(2, 2, 0.6) == 1.0  # only while the cores are oversubscribed
    assert core_share(2, 3, 2.0) == 1.0  # and never beyond a core per thread


def test_no_workers_is_serial():
    """num_workers=0: the loop loads, then steps; nothing overlaps."""
    r = simulate(scenario(1.0, 2.0, 0), suggest=False)
    assert r.throughput == pytest.approx(1e3 / 3.0, rel=1e-3)


def test_one_core_shared_by_a_worker_and_a_one_thread_step():
    """Processor sharing on one core: everything that must run per batch, run at one core's speed."""
    r = simulate(scenario(1.0, 2.0, 1, cores=1, threads=1), suggest=False)
    assert r.throughput == pytest.approx(1e3 / 3.0, rel=0.01)
    assert r.utilization["cpu"] == pytest.approx(1.0, abs=0.01)


def test_a_worker_beside_a_two_thread_step_on_two_cores():
    """The worker-bound closed form: while the step runs (at 2/3 of its speed alone) the worker gets
    2/3 of a core; the rest of its batch it does alone."""
    step, pre = 0.5, 2.0  # ms per sample
    s_ms, w_ms = 16 * step, 16 * pre
    t_step = s_ms / (2 / 3)
    left = w_ms - (2 / 3) * t_step
    assert left > 0
    expect = 16 / ((t_step + left) / 1e3)
    r = simulate(scenario(step, pre, 1), suggest=False)
    assert r.throughput == pytest.approx(expect, rel=0.01)
    assert r.bottleneck == "cpu"


def test_measured_efficiencies_in_the_closed_form():
    """The worker-bound closed form again, with the step at 0.6 and the worker at 0.8 of their shares."""
    step, pre = 0.5, 2.0
    t_step = 16 * step / (0.6 * 2 / 3)
    left = 16 * pre - 0.8 * (2 / 3) * t_step
    assert left > 0
    r = simulate(scenario(step, pre, 1, efficiency={"step": 0.6, "threads": 0.8}), suggest=False)
    assert r.throughput == pytest.approx(16 / ((t_step + left) / 1e3), rel=0.01)


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("step_ms,pre_ms", [(0.2, 2.0), (1.0, 1.0), (2.0, 0.3)])
@pytest.mark.parametrize("efficiency", [None, {"step": 0.6, "threads": 0.8}])
def test_analytic_twin_follows_the_engine(workers, step_ms, pre_ms, efficiency):
    s = scenario(step_ms, pre_ms, workers, efficiency=efficiency, handoff_ms=1.0, receive_ms=0.5)
    r, e = simulate(s, suggest=False), estimate(s, suggest=False)
    assert e.throughput == pytest.approx(r.throughput, rel=0.08)  # the fluid limit: within 6.2% here
    assert {r.bottleneck, e.bottleneck} <= {"cpu", "compute"}


def test_handoff_and_receive_only_with_workers():
    base = scenario(1.0, 1.0, 0, handoff_ms=50.0, receive_ms=50.0)
    assert simulate(base, suggest=False).throughput == pytest.approx(1e3 / 2.0, rel=1e-3)
    slow = simulate(base.replace(loader_workers=1), suggest=False).throughput
    assert slow < simulate(scenario(1.0, 1.0, 1), suggest=False).throughput


def test_a_workers_cost_per_batch_is_paid_once_per_batch():
    """A worker on a core of its own (4 cores: nothing oversubscribed) takes batch x per-sample cost plus
    its fixed cost per batch (queues, a shared-memory segment): halving the batch does not halve it."""
    base = scenario(0.01, 1.0, 1, cores=4)
    s = base.replace(workload={**base.workload, "handoff_ms_per_batch": 8.0})
    for batch in (8, 32):
        r, e = (
            simulate(s.replace(batch_size=batch), suggest=False),
            estimate(s.replace(batch_size=batch), suggest=False),
        )
        assert r.throughput == pytest.approx(batch / ((batch * 1.0 + 8.0) / 1e3), rel=0.01)
        assert e.throughput == pytest.approx(r.throughput, rel=0.01)
    assert simulate(s.replace(loader_workers=0), suggest=False).throughput == pytest.approx(
        simulate(base.replace(loader_workers=0), suggest=False).throughput, rel=1e-3
    )  # no worker, no hand-off
    # the CPU a worker loses per batch beside the step (calibrate fits it from a run at half the batch)
    # is a cost per batch of the same kind, paid only where there are workers
    lost = scenario(0.01, 1.0, 1, cores=4, efficiency={"worker_ms_per_batch": 8.0})
    for workers in (0, 1):
        assert simulate(lost.replace(loader_workers=workers), suggest=False).throughput == pytest.approx(
            simulate(s.replace(loader_workers=workers), suggest=False).throughput, rel=1e-3
        )


def test_gpu_pipelines_do_not_share_cores():
    """A catalogue GPU keeps its own FIFO cores model: the shared-cores path is only for host devices."""
    s = Scenario(loader_workers=2, cpu_cores=2, jitter_cv=0.0)
    assert simulate(s, suggest=False).throughput == pytest.approx(estimate(s, suggest=False).throughput, rel=0.02)


def test_explanation_names_the_cpu_not_a_gpu():
    r = simulate(scenario(2.0, 0.3, 1), suggest=False)
    assert r.bottleneck == "compute" and "GPU" not in r.explanation and "CPU" in r.explanation
