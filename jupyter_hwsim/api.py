"""The public entry points in one place: simulate, estimate, sweep and best_batch (DESIGN section 4)."""

from __future__ import annotations

from .runner import BATCH_FIELD, UNITS, as_scenario, best_batch, estimate, simulate
from .sweeps import sweep

__all__ = ["BATCH_FIELD", "UNITS", "as_scenario", "best_batch", "estimate", "simulate", "sweep"]
