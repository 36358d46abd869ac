"""simulate(), estimate() and sweep(): the public entry points over one shared cost model."""
from __future__ import annotations

import time

import numpy as np

from .core import analytic

from .core import costs

from . import diagnosis

from .core import simulator

from .kinds import llm

from .core import precision

from .kinds import serving
from .core.errors import HwsimError
from .core.result import GPU_TIME_KEYS, Result
from .core.scenario import FIELDS, Scenario

UNITS = {"training": "samples/s", "inference": "samples/s", "serving": "requests/s", "llm": "tokens/s"}
# steps (requests for serving) of the short re-runs that measure each suggestion
SUGGEST_STEPS = {"training": 60, "serving": 400, "llm": 60}


def _scenario(s) -> Scenario:
    if isinstance(s, Scenario):
        return s
    if isinstance(getattr(s, "scenario", None), Scenario):   # a Calibration
        return s.scenario
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


def _core_state(m, d, method, seed, budget_s):
    """Training and offline inference: the DataLoader pipeline (engine) or its bottleneck law (analytic)."""
    st = d.step
    sim, timeline = {}, []
    if method == "estimate":
        state = analytic.steady_state(m, d)
    else:
        out = simulator.run(m, d, seed, budget_s)
        state = simulator.measure(m, d, out)
        timeline = out["timeline"]
        sim = {"events": out["events"], "simulated_s": float(out["ends"][-1]), "warmup_s": float(state["warmup_s"])}
    x = state["batches_per_s"]
    state.update(throughput=x * m.batch, latency_ms=_percentiles(state["step_ms"]), flops_per_s=x * st.flops,
                 bytes_per_s=x * st.hbm_bytes, extra={})
    return state, sim, timeline


def _serving_state(m, bc, method, seed, budget_s):
    if method == "estimate":
        state, sim, timeline = serving.steady_state(m, bc), {}, []
    else:
        out = serving.run(m, bc, seed, budget_s)
        state = serving.measure(m, bc, out)
        timeline = out["timeline"]
        sim = {"events": out["events"], "simulated_s": float(out["end"]), "warmup_s": float(state["warmup_s"])}
    state["extra"] = {k: state[k] for k in ("goodput", "latency_breakdown_ms", "batch_sizes")}
    return state, sim, timeline


def _llm_state(m, dc, method, seed, budget_s):
    timeline = []
    if method == "estimate":
        state, sim = llm.steady_state(m, dc), {}
    else:
        out = llm.run(m, dc, seed, budget_s)
        state = llm.measure(m, dc, out)
        timeline = out["timeline"]
        sim = {"events": out["events"], "simulated_s": float(out["end"]), "warmup_s": float(state["warmup_s"])}
    state["throughput"] = state["tokens_per_s"]
    state["extra"] = {"ttft_ms": state["ttft_ms"], "tokens_per_s_per_stream": state["per_stream"],
                      "goodput": state["requests_per_s"] * state["slo_fraction"]}
    return state, sim, timeline


def _prepare(s: Scenario):
    """The resolved machine, its per-kind costs, its memory footprint and the state function."""
    m = costs.resolve(s)
    if s.kind == "serving":
        return m, serving.BatchCosts(m), costs.memory(m), _serving_state
    if s.kind == "llm":
        return m, llm.decode_cost(m), llm.memory(m), _llm_state
    return m, costs.demands(m), costs.memory(m), _core_state


def _details(m, d, mem, state) -> dict:
    s = m.s
    if s.kind == "llm":
        b = m.batch
        per_token = d.bytes_per_step(1, s.prompt_tokens + s.output_tokens / 2.0)
        pre = llm.prefill(m, 1)
        ops = d.op_costs(b)
        step = {k: float(v[0]) for k, v in d.steps(b, [b * (s.prompt_tokens + s.output_tokens / 2.0)]).items()}
        return {"concurrency": b, "prompt_tokens": s.prompt_tokens, "output_tokens": s.output_tokens,
                "precision_run": m.precision, "kv_precision": llm.kv_precision(s),
                "bytes_per_token_single_stream": per_token,
                "effective_bandwidth_gbs": d.r.bw / 1e9,
                "decode_step_ms": step["step"] * 1e3, "prefill_ms": pre.step_s * 1e3,
                "kernels_per_step": d.linear(b)[4] + d.ctx_kernels,
                "kv_gb_per_sequence": mem["kv_gb_per_sequence"],
                "e2e_ms": state.get("e2e_ms") if state else None,
                "ops": ops}
    st = d.step if s.kind != "serving" else d.step(m.batch)
    out = {"batch_size": m.batch, "seq_len": m.seq, "precision_run": m.precision,
           "step_ms": st.step_s * 1e3, "kernels_per_step": st.kernels, "issue_ms": st.issue_s * 1e3,
           "flops_per_step": st.flops, "hbm_bytes_per_step": st.hbm_bytes,
           "ops": [{"name": o.name, "class": o.cls, "flops": o.flops, "bytes": o.bytes, "time_ms": o.time_s * 1e3,
                    "bound": o.bound, "occupancy": o.occupancy} for o in st.ops]}
    if s.kind == "serving":
        out.update(max_batch_size=m.batch, offered_rps=serving.offered_rate(s),
                   demand_ms={"preprocess": d.pre_s * 1e3, "copy": d.copy(m.batch) * 1e3},
                   capacity_rps=(state or {}).get("capacity_rps"), in_system=(state or {}).get("in_system"))
    else:
        out["demand_ms"] = {"storage": d.storage_s * 1e3, "read": d.read_s * 1e3,
                            "preprocess": d.preprocess_s * 1e3, "copy": d.copy_s * 1e3}
    return out


def _run(scenario, method: str, seed: int, suggest: bool, budget_s: float) -> Result:
    t0 = time.perf_counter()
    s = _scenario(scenario)
    m, d, mem, state_fn = _prepare(s)
    state, sim, timeline = None, {}, []
    if not mem["oom"]:
        state, sim, timeline = state_fn(m, d, method, seed, budget_s)
    r = _result(m, d, mem, method, state, timeline)
    r.sim = {"events": 0, "simulated_s": 0.0, "warmup_s": 0.0, **sim,
             "seed": int(seed) if method == "simulate" else None}
    if suggest:
        short = SUGGEST_STEPS.get(s.kind, SUGGEST_STEPS["training"])

        def rerun(c):
            return _run(c.replace(steps=min(c.steps, short)) if method == "simulate" else c,
                        method, seed, False, budget_s)
        base = rerun(s) if (method == "simulate" and not mem["oom"] and s.steps > short) else r
        # what to improve is judged on the full run; speed-ups compare like with like (short runs, same seed)
        r.suggestions = diagnosis.suggestions(m, base, r.bottleneck, mem, rerun, diagnosis.merit(r)[1])
    r.sim["wall_ms"] = (time.perf_counter() - t0) * 1e3
    return r


def _result(m, d, mem, method: str, state: dict | None, timeline=()) -> Result:
    zero = dict.fromkeys(("p50", "p95", "p99", "mean"), 0.0)
    if mem["oom"]:
        bottleneck = "memory_capacity"
        x, util = 0.0, {"storage": 0.0, "cpu": 0.0, "host_link": 0.0, "gpu_busy": 0.0}
        gpu_time = dict.fromkeys(GPU_TIME_KEYS, 0.0) | {"idle": 1.0}
        latency, flops_s, bytes_s, extra = zero, 0.0, 0.0, {}
    else:
        x, latency = state["throughput"], state["latency_ms"]
        util = dict(state["utilization"])
        gpu_time = {k: float(state["gpu_time"].get(k, 0.0)) for k in GPU_TIME_KEYS}
        flops_s, bytes_s, extra = state["flops_per_s"], state["bytes_per_s"], state["extra"]
        bottleneck = diagnosis.name_bottleneck(state["saturation"], gpu_time)
        if m.s.kind in ("training", "inference") and bottleneck in ("compute", "memory_bw") and \
                d.step.issue_s >= d.step.kernel_s > 0:   # a step as long as its issue: faster kernels change nothing
            bottleneck = "overhead"
    replicas = m.s.replicas if m.s.kind == "serving" else 1
    util["gpu_mfu"] = flops_s / (m.device["peak_tflops"][m.precision] * 1e12)
    util["hbm_bw"] = bytes_s / (m.device["memory_bandwidth_gbs"] * 1e9)
    util = {k: float(min(1.0, max(0.0, v))) for k, v in util.items()}
    warnings = list(m.warnings)
    err = precision.matmul_error(m.s.precision, m.s.weight_group_size)
    if err > precision.WARN_ABOVE:
        warnings.append(f"{m.s.precision} matmul relative error {err:.1%} (measured on a 256x256 product): "
                        "check accuracy before deploying")
    details = _details(m, d, mem, state)
    rt = costs.rates(m)
    details.update(precision_error=err, roof={"peak_flops_s": rt.matmul, "vector_flops_s": rt.vector,
                                              "bandwidth_bytes_s": rt.bw})
    if replicas > 1:
        details["replicas"] = replicas
    r = Result(
        scenario=m.s.to_dict(), method=method, throughput=float(x), throughput_unit=UNITS[m.s.kind],
        latency_ms=latency, utilization=util, gpu_time=gpu_time, bottleneck=bottleneck,
        explanation=diagnosis.explain(bottleneck, m, d, util, mem, state), memory=mem, sim={}, warnings=warnings,
        details=details, timeline=list(timeline), **extra)
    if m.s.kind == "llm":
        r.max_concurrency = mem["max_concurrency"]
    return r


def estimate(scenario, suggest: bool = True) -> Result:
    """Closed-form steady state (bottleneck and utilization laws, queueing formulas); same Result type."""
    return _run(scenario, "estimate", 0, suggest, 20.0)


def simulate(scenario, seed: int = 0, suggest: bool = True, budget_s: float = 20.0) -> Result:
    """Discrete-event simulation; the same scenario and seed give the same result."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise HwsimError("seed", seed, "a non-negative integer")
    return _run(scenario, "simulate", int(seed), suggest, budget_s)


def sweep(scenario, seed: int = 0, method: str = "simulate", seeds: int = 1, executor=None, workers: int | None = None,
          progress: bool | None = None, **axes):
    """The cross product of the axes (field=[values]), `seeds` runs per point (seed, seed+1, ...), on `executor`
    (default: a local process pool when the sweep is worth it; any concurrent.futures.Executor; a
    dask.distributed.Client). Returns a SweepTable: the Results as a list, `rows` with means and 95%
    intervals, .to_pandas(), .chart(), .best()."""
    from .sweeps import run_sweep
    return run_sweep(_scenario(scenario), axes, seed=seed, seeds=seeds, method=method, executor=executor,
                     workers=workers, progress=progress)


BATCH_FIELD = {"serving": "max_batch_size", "llm": "concurrency"}


def best_batch(scenario, latency_slo_ms: float | None = None, method: str = "simulate", seed: int = 0,
               sizes=None) -> dict:
    """The largest batch (max_batch_size for serving, concurrency for llm) whose p99 latency meets the
    budget, with its throughput; the table of every size tried (powers of two up to the first OOM)."""
    s = _scenario(scenario)
    slo = s.latency_slo_ms if latency_slo_ms is None else FIELDS["latency_slo_ms"].check(latency_slo_ms)
    if method not in ("simulate", "estimate"):
        raise HwsimError("method", method, "simulate or estimate")
    field = BATCH_FIELD.get(s.kind, "batch_size")
    sizes = sizes or [2 ** k for k in range(13)]
    rows, best = [], None
    for b in sizes:
        c = s.replace(**{field: b})
        r = simulate(c, seed=seed, suggest=False) if method == "simulate" else estimate(c, suggest=False)
        # an open-loop server that cannot keep up looks fine in a short run; it does not meet any budget
        offered = serving.offered_rate(c) if c.kind == "serving" else None
        keeps_up = offered is None or r.throughput >= 0.95 * offered
        meets = not r.memory["oom"] and r.latency_ms["p99"] <= slo and keeps_up
        rows.append({field: b, "throughput": r.throughput, "p99_ms": r.latency_ms["p99"], "oom": r.memory["oom"],
                     "meets": meets, "bottleneck": r.bottleneck})
        if meets:
            best = (b, r)
        if r.memory["oom"]:
            break
    out = {"field": field, "latency_slo_ms": slo, "table": rows, "batch": None, "throughput": 0.0,
           "throughput_unit": UNITS[s.kind], "p99_ms": None, "result": None}
    if best:
        b, r = best
        out.update(batch=b, throughput=r.throughput, p99_ms=r.latency_ms["p99"], result=r)
    return out
