"""jupyter-hwsim: see why an ML pipeline is slow, and what would make it faster.

The core (scenario, catalogue, costs, engine, analytic twin, diagnosis) imports
only the standard library, SimPy and NumPy; the Jupyter layers load lazily.
"""
from __future__ import annotations

from . import catalog
from .errors import HwsimError
from .result import Result
from .scenario import Scenario
from .api import best_batch, estimate, simulate, sweep

__all__ = ["Scenario", "Result", "HwsimError", "simulate", "estimate", "sweep", "best_batch", "catalog"]
__version__ = "0.1.0"
