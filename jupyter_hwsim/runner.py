"""simulate(), estimate() and best_batch(): one scenario through its kind's costs, the simulator or the analytic
twin, then diagnosis."""

from __future__ import annotations

import contextlib
import math
import numbers
import time
from contextvars import ContextVar

import numpy as np

from . import diagnosis, kinds
from .core import bands, costs, energy, precision, workloads
from .core.errors import HwsimError
from .core.result import GPU_TIME_KEYS, Result
from .core.scenario import FIELDS, KIND_TRAITS, Scenario

# what each kind's throughput counts, and the field that sets its batch (DESIGN section 3)
UNITS = {k: t.unit for k, t in KIND_TRAITS.items()}
BATCH_FIELD = {k: t.batch_field for k, t in KIND_TRAITS.items()}

# The work of one call, known before it starts: an evaluation of the model costs about 20 us per operator (a 2-core
# VM), and a suggestion search evaluates it again for each change it tries (SUGGEST_RUNS at most, about). Operators
# x evaluations above MAX_OPERATOR_RUNS (about 20 s of it) are refused up front; below it, the search still stops
# at the call's time budget (checked between two evaluations). The catalogue's largest model has about 1,000
# operators; a custom or imported one may have up to 200,000.
MAX_OPERATOR_RUNS = 1_000_000
SUGGEST_RUNS = 64
DEFAULT_BUDGET_S = 20.0


# A deadline (time.time()) for every call made in a context: past it, each stops at its next check between the phases
# of a run (the model's step costs, the run and its measurement). The REST server sets it for a request
# (jupyter/server.py compute_by), so the estimates of its charts stop too. None: each call's own budget_s only.
_deadline: ContextVar[float | None] = ContextVar("hwsim_deadline", default=None)


@contextlib.contextmanager
def deadline(at: float):
    """Every call made inside stops at its next check once time.time() is past `at`."""
    token = _deadline.set(at)
    try:
        yield
    finally:
        _deadline.reset(token)


class _OutOfBudget(Exception):
    """The suggestion search ran past its call's time budget. Not a HwsimError, which the search takes as one
    change it cannot make and goes on: this one stops it at once, and _run words it."""


def as_scenario(s) -> Scenario:
    """A Scenario from a Scenario, a Calibration or a dict of fields."""
    if isinstance(s, Scenario):
        return s
    if isinstance(getattr(s, "scenario", None), Scenario):  # a Calibration
        return s.scenario
    if isinstance(s, dict):
        return Scenario.from_dict(s)
    raise HwsimError("scenario", s, "a Scenario or a dict of its fields")


def _run(scenario, method: str, seed: int, suggest, budget_s: float, brief: bool = False) -> Result:
    """brief: the numbers only (no details, explanation or warnings), for the suggestion search's re-runs."""
    t0 = time.perf_counter()
    s = as_scenario(scenario)
    kind = kinds.get(s.kind)
    m = costs.resolve(s)
    n_ops = _check_work(m, method, suggest) if not brief else 0

    def check():  # between phases: the context's deadline, and a simulation's own budget (its event loop counts
        # from its own start, after the step costs)
        at = _deadline.get()
        if (at is not None and time.time() > at) or (method == "simulate" and time.perf_counter() - t0 > budget_s):
            raise _OutOfBudget if brief else _budget_error(m, method, budget_s, n_ops, searching=False)

    check()
    d, mem = kind.prepare(m)
    check()
    state, sim, timeline = None, {}, []
    if not mem["oom"]:
        state, sim, timeline = kind.state(m, d, method, seed, budget_s)
        check()
    r = _result(kind, m, d, mem, method, state, timeline, brief)
    if not brief:
        r.warnings += _overload(kind, m, mem)
    r.sim = {
        "events": 0,
        "simulated_s": 0.0,
        "warmup_s": 0.0,
        **sim,
        "seed": int(seed) if method == "simulate" else None,
    }
    if suggest:
        short = s.traits.suggest_steps

        def in_budget():  # every evaluation of the search starts within the call's budget, or the search stops
            if time.perf_counter() - t0 > budget_s:
                raise _OutOfBudget

        def rerun(c):  # the re-runs share what is left of the budget (at least a tenth of it each)
            in_budget()
            left = max(0.1 * budget_s, budget_s - (time.perf_counter() - t0))
            c = c.replace(steps=min(c.steps, short)) if method == "simulate" else c
            return _run(c, method, seed, False, left, brief=True)

        base = rerun(s) if (method == "simulate" and not mem["oom"] and s.steps > short) else r
        # what to improve is judged on the full run; speed-ups compare like with like (short runs, same seed)
        metric = diagnosis.merit(r, kind.offered(s))[1]

        def screen(c):  # combinations are screened by the analytic twin, then verified by `rerun`
            in_budget()
            return _run(c, "estimate", 0, False, budget_s, brief=True)

        allowed = None if suggest is True else tuple(suggest)
        try:
            r.suggestions = diagnosis.suggestions(
                m,
                base,
                r.bottleneck,
                kind.candidates(m, r.bottleneck, mem),
                rerun,
                metric,
                allowed,
                screen if method == "simulate" else None,  # an estimate is its own screen
            )
        except _OutOfBudget:
            raise _budget_error(m, method, budget_s, n_ops) from None
    r.sim["wall_ms"] = (time.perf_counter() - t0) * 1e3
    return r


def _workload_name(m) -> str:
    w = m.s.workload
    return w if isinstance(w, str) else str(m.workload.get("name") or f"custom {m.workload.get('arch')}")


def _check_work(m, method: str, suggest) -> int:
    """The model's operators; a call whose operators x evaluations cannot fit its budget is refused before any
    work, with what is too big and what to change. Counted only with suggestions: one evaluation always fits."""
    if not suggest:
        return 0
    n = len(workloads.operators(m.workload, m.seq))  # built once (cached for the catalogue's models)
    if n * (1 + SUGGEST_RUNS) > MAX_OPERATOR_RUNS:
        most = MAX_OPERATOR_RUNS // (1 + SUGGEST_RUNS)
        raise HwsimError(
            "workload",
            _workload_name(m),
            f"a model of at most {most:,} operators for {method} with suggestions (this one has {n:,}, and the "
            f"search evaluates it up to {SUGGEST_RUNS} more times)",
            "suggest=False evaluates it once; or a model of fewer layers or operators",
        )
    return n


def _budget_error(m, method: str, budget_s: float, n_ops: int, searching: bool = True) -> HwsimError:
    """The suggestion search (or the run itself) stopped at the call's time budget: what was too big, and what to
    change."""
    if not searching:
        if method == "simulate":
            return HwsimError(
                "steps", m.s.steps, f"a run that fits the {budget_s:g} s simulation budget", "lower steps"
            )
        return HwsimError("workload", _workload_name(m), "an estimate that fits its time budget", "a smaller model")
    if method == "simulate":
        return HwsimError(
            "steps",
            m.s.steps,
            f"a simulation whose suggestions fit its {budget_s:g} s budget (each re-runs the scenario)",
            "lower steps, suggest=False, or a larger budget_s",
        )
    return HwsimError(
        "workload",
        _workload_name(m),
        f"an estimate whose suggestions fit its {budget_s:g} s budget (a model of {n_ops:,} operators, evaluated "
        "again for each change tried)",
        "suggest=False, a smaller model, or a larger budget_s",
    )


def _budget(budget_s) -> float:
    if isinstance(budget_s, bool) or not isinstance(budget_s, numbers.Real):
        raise HwsimError("budget_s", budget_s, "a number of seconds > 0")
    try:
        value = float(budget_s)
    except (OverflowError, ValueError):
        value = math.nan
    if not (0 < value < math.inf):
        raise HwsimError("budget_s", budget_s, "a number of seconds > 0")
    return value


def _overload(kind, m, mem) -> list[str]:
    """A warning when open-loop arrivals offer clearly more (by 10%, beyond the closed form's error) than the
    closed-form capacity of a language model: the queue grows without bound, so latency grows with the run and a
    simulation measures a transient, not a steady state. (Serving would warn the same way, but that changes the
    golden results of an overloaded case.)"""
    offered = kind.offered(m.s)
    if offered is None or mem["oom"] or not m.s.traits.generates:
        return []
    full = costs.resolve(m.s.replace(arrival_rate_rps=None))  # capacity: every slot busy (offline)
    d_full, mem_full = kind.prepare(full)
    if mem_full["oom"]:
        return []
    capacity = float(kind.state(full, d_full, "estimate", 0, 20.0)[0]["throughput"])
    if offered <= 1.1 * capacity:
        return []
    unit = m.s.traits.unit
    return [
        f"overloaded: arrival_rate_rps={m.s.arrival_rate_rps or offered:g} offers {offered:,.0f} {unit} but the "
        f"server sustains about {capacity:,.0f} {unit} (closed-form estimate): the queue grows without bound, "
        "latencies grow with the run's length and a simulation measures only its start; lower the rate or add "
        "capacity"
    ]


def _result(kind, m, d, mem, method: str, state: dict | None, timeline=(), brief: bool = False) -> Result:
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
        bottleneck = kind.bottleneck(m, d, state, gpu_time)
    util["gpu_mfu"] = flops_s / (m.device["peak_tflops"][m.precision] * 1e12)
    util["hbm_bw"] = bytes_s / (m.device["memory_bandwidth_gbs"] * 1e9)
    util = {k: float(min(1.0, max(0.0, v))) for k, v in util.items()}
    if brief:
        r = Result(m.s.to_dict(), method, float(x), m.s.traits.unit, latency, util, gpu_time, bottleneck, "", mem, {})
        kind.finish(r, mem)
        return r
    warnings = list(m.warnings) + m.s.field_warnings()
    err = precision.matmul_error(m.s.precision, m.s.weight_group_size)
    if err > precision.WARN_ABOVE:
        warnings.append(
            f"{m.s.precision} matmul relative error {err:.1%} (measured on a 256x256 product): "
            "check accuracy before deploying"
        )
    details = kind.details(m, d, mem, state)
    rt = costs.rates(m)
    details.update(
        precision_error=err, roof={"peak_flops_s": rt.matmul, "vector_flops_s": rt.vector, "bandwidth_bytes_s": rt.bw}
    )
    r = Result(
        scenario=m.s.to_dict(),
        method=method,
        throughput=float(x),
        throughput_unit=m.s.traits.unit,
        latency_ms=latency,
        utilization=util,
        gpu_time=gpu_time,
        bottleneck=bottleneck,
        explanation=kind.explain(bottleneck, m, d, util, mem, state),
        memory=mem,
        sim={},
        warnings=warnings,
        details=details,
        timeline=list(timeline),
        **extra,
    )
    kind.finish(r, mem)
    if not mem["oom"]:
        gpus = m.s.replicas if "replicas" in m.s.traits.panel_fields else 1
        for k, v in energy.figures(
            m.device, util["gpu_busy"], r.throughput, gpus, m.s.price_per_hour_usd, m.s.grid_gco2_per_kwh
        ).items():
            setattr(r, k, v)
        if diagnosis.merit(r, kind.offered(m.s))[1] == "throughput":  # a kept-up open loop serves what it is offered
            r.accuracy = bands.band(
                r.scenario, "throughput", r.throughput, single_stream=m.s.traits.generates and m.batch == 1
            )
    return r


def _suggest(suggest):
    """True (every change), False (none) or the field names the caller can change (a panel's controls)."""
    if isinstance(suggest, bool):
        return suggest
    accepted = "true, false or a list of scenario field names (the changes the caller can make)"
    if isinstance(suggest, str) or not isinstance(suggest, (list, tuple, set, frozenset)):
        raise HwsimError("suggest", suggest, accepted)
    unknown = [f for f in suggest if f not in FIELDS]
    if unknown:
        raise HwsimError("suggest", unknown[0], accepted)
    return tuple(suggest)


def estimate(scenario, suggest=True, budget_s: float = DEFAULT_BUDGET_S) -> Result:
    """Closed-form steady state (bottleneck and utilization laws, queueing formulas); same Result type.
    suggest: True, False, or the field names the caller can change (only those are suggested). budget_s: the
    suggestion search stops past it (an error naming the workload); a model too big for it is refused up front."""
    return _run(scenario, "estimate", 0, _suggest(suggest), _budget(budget_s))


def simulate(scenario, seed: int = 0, suggest=True, budget_s: float = DEFAULT_BUDGET_S) -> Result:
    """Discrete-event simulation; the same scenario and seed give the same result. suggest: as estimate()'s.
    budget_s: the event loop, and the suggestion search, stop past it (an error naming steps)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise HwsimError("seed", seed, "a non-negative integer")  # below 2**63, as sweep() and REST take it
    return _run(scenario, "simulate", int(seed), _suggest(suggest), _budget(budget_s))


def best_batch(
    scenario, latency_slo_ms: float | None = None, method: str = "simulate", seed: int = 0, sizes=None
) -> dict:
    """The largest batch (max_batch_size for serving, concurrency for llm) whose p99 latency meets the
    budget, with its throughput; the table of every size tried (powers of two up to the first OOM)."""
    s = as_scenario(scenario)
    slo = s.latency_slo_ms if latency_slo_ms is None else FIELDS["latency_slo_ms"].check(latency_slo_ms)
    if method not in ("simulate", "estimate"):
        raise HwsimError("method", method, "simulate or estimate")
    field = s.traits.batch_field
    sizes = sizes or [2**k for k in range(13)]
    rows, best = [], None
    for b in sizes:
        c = s.replace(**{field: b})
        r = simulate(c, seed=seed, suggest=False) if method == "simulate" else estimate(c, suggest=False)
        # an open-loop server that cannot keep up looks fine in a short run; it does not meet any budget
        offered = kinds.get(c.kind).offered(c)
        keeps_up = offered is None or r.throughput >= 0.95 * offered
        meets = not r.memory["oom"] and r.latency_ms["p99"] <= slo and keeps_up
        rows.append(
            {
                field: b,
                "throughput": r.throughput,
                "p99_ms": r.latency_ms["p99"],
                "oom": r.memory["oom"],
                "meets": meets,
                "bottleneck": r.bottleneck,
            }
        )
        if meets:
            best = (b, r)
        if r.memory["oom"]:
            break
    out = {
        "field": field,
        "latency_slo_ms": slo,
        "table": rows,
        "batch": None,
        "throughput": 0.0,
        "throughput_unit": s.traits.unit,
        "p99_ms": None,
        "result": None,
    }
    if best:
        b, r = best
        out.update(batch=b, throughput=r.throughput, p99_ms=r.latency_ms["p99"], result=r)
    return out
