"""The protocol every scenario kind implements, and what kinds share.

A kind turns a resolved machine into its demands and memory footprint, runs them through the discrete-event
simulator or its analytic twin, reports its own details, explains a bottleneck in its own words and proposes
the changes worth re-simulating. The runner knows kinds only through this protocol and the registry
(`kinds.get`); the core knows them only through `core.scenario.KindTraits`.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..diagnosis import name_bottleneck

# (label, fields to change, why): a change a suggestion re-simulates
Candidate = tuple[str, dict, str]


class Kind(Protocol):
    name: str

    def prepare(self, m) -> tuple[Any, dict]:
        """(demands, memory footprint) of the resolved machine m."""

    def state(self, m, d, method: str, seed: int, budget_s: float) -> tuple[dict, dict, list]:
        """(steady state, sim figures, timeline) by `method`: "simulate" (seeded DES) or "estimate" (twin)."""

    def bottleneck(self, m, d, state: dict, gpu_time: dict) -> str:
        """The bottleneck's name (DESIGN section 3)."""

    def details(self, m, d, mem: dict, state: dict | None) -> dict:
        """The kind's own figures for Result.details."""

    def explain(self, b: str, m, d, util: dict, mem: dict, state: dict | None) -> str:
        """Plain sentences a student understands."""

    def candidates(self, m, b: str, mem: dict) -> list[Candidate]:
        """Changes worth re-simulating for bottleneck b."""

    def offered(self, s) -> float | None:
        """The load an open loop offers, in throughput units; None where the kind runs as fast as it can."""

    def finish(self, r, mem: dict) -> None:
        """Last touches to the Result (kind-specific fields)."""


class KindBase:
    """Defaults that most kinds share."""

    name = ""

    def bottleneck(self, m, d, state: dict, gpu_time: dict) -> str:
        return name_bottleneck(state["saturation"], gpu_time)

    def offered(self, s) -> float | None:
        return None

    def finish(self, r, mem: dict) -> None:
        pass


def percentiles(values_ms) -> dict:
    """p50, p95, p99 and mean of a list of times (ms)."""
    if len(values_ms) == 1:
        v = float(values_ms[0])
        return {"p50": v, "p95": v, "p99": v, "mean": v}
    a = np.asarray(values_ms, dtype=float)
    return {
        "p50": float(np.percentile(a, 50)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
    }


def step_details(m, st) -> dict:
    """The figures of one GPU step (a StepCost) at the machine's batch, operator by operator."""
    return {
        "batch_size": m.batch,
        "seq_len": m.seq,
        "precision_run": m.precision,
        "step_ms": st.step_s * 1e3,
        "kernels_per_step": st.kernels,
        "issue_ms": st.issue_s * 1e3,
        "flops_per_step": st.flops,
        "hbm_bytes_per_step": st.hbm_bytes,
        "ops": [
            {
                "name": o.name,
                "class": o.cls,
                "flops": o.flops,
                "bytes": o.bytes,
                "time_ms": o.time_s * 1e3,
                "bound": o.bound,
                "occupancy": o.occupancy,
            }
            for o in st.ops
        ],
    }
