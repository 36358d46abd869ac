"""simulate(), estimate() and sweep(): the public entry points over one shared cost model."""
from __future__ import annotations

import itertools
import time

import numpy as np

from . import analytic, costs, diagnosis, engine, precision
from .errors import HwsimError
from .result import GPU_TIME_KEYS, Result
from .scenario import Scenario

UNITS = {"training": "samples/s", "inference": "samples/s"}
SUGGEST_STEPS = 60


def _scenario(s) -> Scenario:
    if isinstance(s, Scenario):
        return s
    if isinstance(s, dict):
        return Scenario.from_dict(s)
    raise HwsimError("scenario", s, "a Scenario or a dict of its fields")


def _percentiles(step_ms) -> dict:
    if len(step_ms) == 1:
        v = float(step_ms[0])
        return {"p50": v, "p95": v, "p99": v, "mean": v}
    a = np.asarray(step_ms, dtype=float)
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)),
            "p99": float(np.percentile(a, 99)), "mean": float(a.mean())}


def _result(m, d, mem, method: str, state: dict | None, sim: dict, run, suggest: bool, timeline=()) -> Result:
    st = d.step
    if mem["oom"]:
        bottleneck = "memory_capacity"
        x, util = 0.0, {"storage": 0.0, "cpu": 0.0, "host_link": 0.0, "gpu_busy": 0.0}
        gpu_time = dict.fromkeys(GPU_TIME_KEYS, 0.0) | {"idle": 1.0}
        latency = dict.fromkeys(("p50", "p95", "p99", "mean"), 0.0)
    else:
        x = state["batches_per_s"]
        util, gpu_time = dict(state["utilization"]), state["gpu_time"]
        gpu_time = {k: float(gpu_time.get(k, 0.0)) for k in GPU_TIME_KEYS}
        latency = _percentiles(state["step_ms"])
    peak = m.device["peak_tflops"][m.precision] * 1e12
    util["gpu_mfu"] = x * st.flops / peak
    util["hbm_bw"] = min(1.0, x * st.hbm_bytes / (m.device["memory_bandwidth_gbs"] * 1e9))
    util = {k: float(min(1.0, max(0.0, v))) for k, v in util.items()}
    if not mem["oom"]:
        bottleneck = diagnosis.name_bottleneck(state["saturation"], gpu_time)
    warnings = list(m.warnings)
    err = precision.matmul_error(m.s.precision)
    if err > precision.WARN_ABOVE:
        warnings.append(f"{m.s.precision} matmul relative error {err:.1%} (measured on a 256x256 product): "
                        "check accuracy before deploying")
    r = Result(
        scenario=m.s.to_dict(), method=method, throughput=float(x * m.batch),
        throughput_unit=UNITS[m.s.kind], latency_ms=latency, utilization=util, gpu_time=gpu_time,
        bottleneck=bottleneck, explanation=diagnosis.explain(bottleneck, m, d, util, mem), memory=mem,
        sim=sim, warnings=warnings,
        details={"precision_error": err, "batch_size": m.batch, "seq_len": m.seq, "precision_run": m.precision,
                 "step_ms": st.step_s * 1e3, "kernels_per_step": st.kernels, "issue_ms": st.issue_s * 1e3,
                 "flops_per_step": st.flops, "hbm_bytes_per_step": st.hbm_bytes,
                 "demand_ms": {"storage": d.storage_s * 1e3, "read": d.read_s * 1e3,
                               "preprocess": d.preprocess_s * 1e3, "copy": d.copy_s * 1e3},
                 "ops": [{"name": o.name, "class": o.cls, "flops": o.flops, "bytes": o.bytes,
                          "time_ms": o.time_s * 1e3, "bound": o.bound, "occupancy": o.occupancy}
                         for o in st.ops]},
        timeline=list(timeline),
    )
    if suggest:
        r.suggestions = diagnosis.suggestions(m, r.throughput, bottleneck, mem, run)
    return r


def estimate(scenario, suggest: bool = True) -> Result:
    """Closed-form steady state (bottleneck and utilization laws); same Result type."""
    t0 = time.perf_counter()
    s = _scenario(scenario)
    m = costs.resolve(s)
    d = costs.demands(m)
    mem = costs.memory(m)
    state = None if mem["oom"] else analytic.steady_state(m, d)
    sim = {"events": 0, "wall_ms": 0.0, "simulated_s": 0.0, "seed": None, "warmup_s": 0.0}
    r = _result(m, d, mem, "estimate", state, sim, lambda c: estimate(c, suggest=False), suggest)
    r.sim["wall_ms"] = (time.perf_counter() - t0) * 1e3
    return r


def simulate(scenario, seed: int = 0, suggest: bool = True, budget_s: float = 20.0) -> Result:
    """Discrete-event simulation; the same scenario and seed give the same result."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise HwsimError("seed", seed, "a non-negative integer")
    t0 = time.perf_counter()
    s = _scenario(scenario)
    m = costs.resolve(s)
    d = costs.demands(m)
    mem = costs.memory(m)
    state, timeline = None, []
    sim = {"events": 0, "simulated_s": 0.0, "seed": int(seed), "warmup_s": 0.0}
    if not mem["oom"]:
        out = engine.run(m, d, int(seed), budget_s)
        state = engine.measure(m, d, out)
        timeline = out["timeline"]
        sim.update(events=out["events"], simulated_s=float(out["ends"][-1]), warmup_s=float(state["warmup_s"]))

    def rerun(c):
        return simulate(c.replace(steps=min(c.steps, SUGGEST_STEPS)), seed, suggest=False, budget_s=budget_s)

    base = None
    if suggest and not mem["oom"] and s.steps > SUGGEST_STEPS:
        base = rerun(s).throughput   # compare like with like: the same short run
    r = _result(m, d, mem, "simulate", state, sim, rerun, False, timeline)
    if suggest:
        r.suggestions = diagnosis.suggestions(m, base or r.throughput, r.bottleneck, mem, rerun)
    r.sim["wall_ms"] = (time.perf_counter() - t0) * 1e3
    return r


def sweep(scenario, seed: int = 0, method: str = "simulate", **axes) -> list[Result]:
    """The cross product of the axes (field=[values]); one Result per point."""
    s = _scenario(scenario)
    for k, v in axes.items():
        if not isinstance(v, (list, tuple)) or not v:
            raise HwsimError(k, v, "a non-empty list of values to sweep")
    keys = list(axes)
    points = [s.replace(**dict(zip(keys, vals))) for vals in itertools.product(*(axes[k] for k in keys))]
    if method == "estimate":
        return [estimate(p, suggest=False) for p in points]
    return [simulate(p, seed=seed, suggest=False) for p in points]
