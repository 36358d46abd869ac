"""Parallel sweeps: the cross product of some fields, several seeds per point, on any executor.

Each task is one (point, seed) simulation, a pure function of its inputs, so the
table is the same whichever executor ran it: a local process pool (the default
for sweeps worth it), a concurrent.futures.Executor, or a dask.distributed.Client.
A point's row holds the mean and a 95% confidence interval (Student's t across
seeds) of throughput and latency, the mean utilizations and the most common
bottleneck.
"""

from __future__ import annotations

import itertools
import math
import numbers
import os
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed

from .core.errors import HwsimError
from .core.result import UTIL_KEYS, Sweep
from .core.scenario import Scenario
from .runner import as_scenario, estimate, simulate

MAX_RUNS = 100_000  # simulations of one sweep (points x seeds)
INLINE_BELOW = 16  # fewer simulations than this run in this process: a pool's start-up would cost more
_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    30: 2.042,
}


def t975(dof: int) -> float:
    """Two-sided 95% Student's t quantile (1.96 beyond 30 degrees of freedom)."""
    if dof in _T975:
        return _T975[dof]
    if dof > 30:
        return 1.96
    return _T975[max(k for k in _T975 if k < dof)]


def run_task(method: str, scenario: dict, seed: int):
    """One point at one seed (runs in a worker)."""
    s = Scenario.from_dict(scenario)
    r = simulate(s, seed=seed, suggest=False) if method == "simulate" else estimate(s, suggest=False)
    r.timeline = []  # a sweep keeps numbers, not timelines: less to send back from a worker
    return r


def _mean_ci(values: list[float]) -> tuple[float, float, float]:
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, m, m
    h = t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return m, m - h, m + h


class SweepTable(Sweep):
    """A sweep: the Results (one per point, first seed) as a list, plus `rows` of per-point statistics."""

    def __init__(self, points: list, axes: dict, runs: list[list], seeds: list[int]):
        super().__init__([r[0] for r in runs], axes)
        self.points, self.runs, self.seeds = points, runs, seeds
        self.rows = [self._row(p, rs) for p, rs in zip(points, runs)]

    def _row(self, point: dict, rs: list) -> dict:
        row = dict(point)
        ok = [r for r in rs if not r.memory["oom"]]
        for key, get in (
            ("throughput", lambda r: r.throughput),
            ("p50_ms", lambda r: r.latency_ms["p50"]),
            ("p99_ms", lambda r: r.latency_ms["p99"]),
        ):
            vals = [get(r) for r in ok] or [0.0]
            row[key], row[f"{key}_lo"], row[f"{key}_hi"] = _mean_ci(vals)
        for k in UTIL_KEYS:
            row[k] = statistics.fmean(r.utilization[k] for r in rs)
        row["bottleneck"] = Counter(r.bottleneck for r in rs).most_common(1)[0][0]
        row["oom"] = any(r.memory["oom"] for r in rs)
        row["seeds"] = len(rs)
        row["unit"] = rs[0].throughput_unit
        return row

    def to_pandas(self):
        """The rows as a pandas DataFrame (pandas is optional)."""
        try:
            import pandas as pd
        except ImportError:
            raise HwsimError("to_pandas", None, "pandas installed (pip install pandas)") from None
        return pd.DataFrame(self.rows)

    def best(self, objective: str = "throughput", maximize: bool = True, **limits):
        """The row that maximizes (or minimizes) `objective` among those within every limit (e.g. p99_ms=100
        means p99_ms <= 100; out-of-memory points never qualify); None when none does."""
        for key in [objective, *limits]:
            if key not in self.rows[0]:
                raise HwsimError("best", key, "a column of the table: " + ", ".join(self.rows[0]))
        ok = [r for r in self.rows if not r["oom"] and all(r[k] <= v for k, v in limits.items())]
        if not ok:
            return None
        return (max if maximize else min)(ok, key=lambda r: r[objective])

    def chart(self, x: str | None = None, y: str = "throughput"):
        """Altair chart of y (mean, with its 95% interval) against x, one line per other axis value."""
        import altair as alt

        x = x or next(iter(self.axes))
        others = [k for k in self.axes if k != x]
        data = [dict(r, series=" ".join(f"{k}={r[k]}" for k in others) or y) for r in self.rows if not r["oom"]]
        numeric = all(isinstance(r[x], (int, float)) and not isinstance(r[x], bool) for r in data)
        xs = alt.X(
            f"{x}:{'Q' if numeric else 'N'}",
            title=x,
            scale=alt.Scale(type="log") if numeric and min(r[x] for r in data) > 0 else alt.Scale(),
        )
        base = alt.Chart(alt.Data(values=data)).encode(x=xs, color=alt.Color("series:N", title=None))
        band = (
            base.mark_area(opacity=0.25).encode(y=alt.Y(f"{y}_lo:Q", title=y), y2=f"{y}_hi:Q")
            if f"{y}_lo" in self.rows[0]
            else None
        )
        line = base.mark_line(point=True).encode(
            y=alt.Y(f"{y}:Q", title=y),
            tooltip=[alt.Tooltip(f"{k}:{'Q' if numeric and k == x else 'N'}") for k in (x, *others)]
            + [alt.Tooltip(f"{y}:Q", format=",.2f")],
        )
        return (band + line) if band is not None else line


class _Progress:
    """A bar for sweeps longer than a second: an ipywidgets bar in a notebook, a text bar on a terminal."""

    def __init__(self, total: int, show: bool | None):
        self.total, self.done, self.t0, self.show = total, 0, time.perf_counter(), show
        self.widget = None

    def step(self):
        self.done += 1
        if self.show is False or time.perf_counter() - self.t0 < 1.0:
            return
        if self.widget is None and _in_kernel():
            import ipywidgets as W
            from IPython.display import display

            self.widget = W.IntProgress(min=0, max=self.total, description="sweep")
            display(self.widget)
        if self.widget is not None:
            self.widget.value = self.done
        elif self.show or sys.stderr.isatty():
            n = int(30 * self.done / self.total)
            sys.stderr.write(f"\rsweep [{'#' * n}{'.' * (30 - n)}] {self.done}/{self.total}")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def _in_kernel() -> bool:
    ipy = sys.modules.get("IPython")
    shell = ipy.get_ipython() if ipy else None
    return bool(shell) and type(shell).__name__ == "ZMQInteractiveShell"


def _executor_of(executor):
    """(an Executor or None for inline, whether we own it)."""
    if executor is None:
        return None, False
    if hasattr(executor, "get_executor") and not isinstance(executor, Executor):  # dask.distributed.Client
        return executor.get_executor(pure=False), False
    if isinstance(executor, Executor):
        return executor, False
    raise HwsimError(
        "executor",
        type(executor).__name__,
        "None (a local process pool), a concurrent.futures.Executor or a dask.distributed.Client",
    )


def run_sweep(
    s,
    axes: dict,
    seed: int = 0,
    seeds: int = 1,
    method: str = "simulate",
    executor=None,
    workers: int | None = None,
    progress: bool | None = None,
) -> SweepTable:
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= 1000:
        raise HwsimError("seeds", seeds, "an integer >= 1 and <= 1000 (seeds per point)")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**63:
        raise HwsimError("seed", seed, "a non-negative integer")
    if method not in ("simulate", "estimate"):
        raise HwsimError("method", method, "simulate or estimate")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 1024):
        raise HwsimError("workers", workers, "None (every core) or an integer >= 1 and <= 1024 (local processes)")
    for k, v in axes.items():
        if not isinstance(v, (list, tuple)) or not v:
            raise HwsimError(k, v, "a non-empty list of values to sweep")
    if math.prod(len(v) for v in axes.values()) * seeds > MAX_RUNS:
        raise HwsimError("sweep", {k: len(v) for k, v in axes.items()}, f"at most {MAX_RUNS:,} runs (points x seeds)")
    keys = list(axes)
    combos = list(itertools.product(*(axes[k] for k in keys)))
    points = [dict(zip(keys, c)) for c in combos]
    scenarios = [s.replace(**p).to_dict() for p in points]  # validates every point before any work
    seed_list = [seed + i for i in range(seeds)] if method == "simulate" else [seed]
    tasks = [(i, k) for i in range(len(points)) for k in seed_list]
    runs = [[None] * len(seed_list) for _ in points]
    bar = _Progress(len(tasks), progress)
    ex, owned = _executor_of(executor)
    if ex is None and method == "simulate" and len(tasks) >= INLINE_BELOW and workers != 1:
        import multiprocessing

        ex = ProcessPoolExecutor(
            max_workers=workers or os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")
        )
        owned = True
    try:
        if ex is None:
            for i, k in tasks:
                runs[i][seed_list.index(k)] = run_task(method, scenarios[i], k)
                bar.step()
        else:
            futures = {ex.submit(run_task, method, scenarios[i], k): (i, k) for i, k in tasks}
            for f in as_completed(futures):
                i, k = futures[f]
                runs[i][seed_list.index(k)] = f.result()
                bar.step()
    except BaseException:
        if ex is not None and owned:
            ex.shutdown(wait=False, cancel_futures=True)
            owned = False
        raise
    finally:
        if ex is not None and owned:
            ex.shutdown(wait=True)
    return SweepTable(points, axes, runs, seed_list)


def sweep(
    scenario,
    seed: int = 0,
    method: str = "simulate",
    seeds: int = 1,
    executor=None,
    workers: int | None = None,
    progress: bool | None = None,
    **axes,
):
    """The cross product of the axes (field=[values]), `seeds` runs per point (seed, seed+1, ...), on `executor`
    (default: a local process pool when the sweep is worth it; any concurrent.futures.Executor; a
    dask.distributed.Client). Returns a SweepTable: the Results as a list, `rows` with means and 95%
    intervals, .to_pandas(), .chart(), .best()."""
    return run_sweep(
        as_scenario(scenario),
        axes,
        seed=seed,
        seeds=seeds,
        method=method,
        executor=executor,
        workers=workers,
        progress=progress,
    )
