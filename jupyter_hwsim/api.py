"""The public entry points in one place: simulate, estimate, sweep, best_batch and compare (DESIGN section 4)."""

from __future__ import annotations

from .compare import Comparison, compare
from .runner import BATCH_FIELD, UNITS, as_scenario, best_batch, estimate, simulate
from .sweeps import sweep

__all__ = [
    "BATCH_FIELD",
    "UNITS",
    "Comparison",
    "as_scenario",
    "best_batch",
    "compare",
    "estimate",
    "simulate",
    "sweep",
]
