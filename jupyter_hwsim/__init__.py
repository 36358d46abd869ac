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

__all__ = ["Scenario", "Result", "HwsimError", "simulate", "estimate", "sweep", "best_batch", "catalog", "whatif", "calibrate"]


def load_ipython_extension(ipython) -> None:
    """`%load_ext jupyter_hwsim`: registers %hwsim; the notebook layers load on first use."""
    from .magic import load_ipython_extension as load
    load(ipython)


def _jupyter_server_extension_points():
    """jupyter_server finds the REST API here (jupyter_hwsim.server, loaded only by the server)."""
    return [{"module": "jupyter_hwsim.server"}]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyter-hwsim"}]


def __getattr__(name):
    if name == "whatif":     # the panel needs ipywidgets: imported only when asked for
        from .panel import whatif
        return whatif
    if name == "calibrate":  # needs PyTorch (the torch extra): imported only when asked for
        from .calibration import calibrate
        return calibrate
    raise AttributeError(f"module 'jupyter_hwsim' has no attribute {name!r}")
__version__ = "0.1.0"
