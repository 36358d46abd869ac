"""jupyter-hwsim: see why an ML pipeline is slow, and what would make it faster.

The core (scenario, catalogue, costs, engine, analytic twin, diagnosis) imports
only the standard library, SimPy and NumPy; the Jupyter layers load lazily.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import sys

from .api import best_batch, compare, estimate, simulate, sweep
from .core import catalog
from .core.errors import HwsimError
from .core.importers.hf import from_hf_config, parameter_counts
from .core.result import Result
from .core.scenario import Scenario

__all__ = [
    "Scenario",
    "Result",
    "HwsimError",
    "simulate",
    "estimate",
    "sweep",
    "best_batch",
    "compare",
    "catalog",
    "from_hf_config",
    "from_onnx",
    "from_torch",
    "parameter_counts",
    "whatif",
    "calibrate",
]


def load_ipython_extension(ipython) -> None:
    """`%load_ext jupyter_hwsim`: registers %hwsim; the notebook layers load on first use."""
    from .jupyter.magic import load_ipython_extension as load

    load(ipython)


def _jupyter_server_extension_points():
    """jupyter_server finds the REST API here (jupyter_hwsim.server, loaded only by the server)."""
    return [{"module": "jupyter_hwsim.jupyter.server"}]


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "jupyter-hwsim"}]


# Modules that moved into the layer packages in 0.2: their old paths import the new module (for one release).
MOVED = {
    "errors": "core.errors",
    "catalog": "core.catalog",
    "scenario": "core.scenario",
    "workloads": "core.workloads",
    "precision": "core.precision",
    "costs": "core.costs",
    "analytic": "core.analytic",
    "result": "core.result",
    "engine": "core.simulator",
    "serving": "kinds.serving",
    "llm": "kinds.llm",
    "magic": "jupyter.magic",
    "panel": "jupyter.panel",
    "charts": "jupyter.charts",
    "server": "jupyter.server",
    "report": "jupyter.report",
    "exercises": "teaching.exercises",
    "demo_pipeline": "calibration.demo",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import jupyter_hwsim.scenario` and the like give the module at its new place (the same object)."""

    def find_spec(self, fullname, path=None, target=None):
        pkg, _, leaf = fullname.rpartition(".")
        if pkg == __name__ and leaf in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")

    def exec_module(self, module):
        pass


sys.meta_path.append(_MovedModules())


def __getattr__(name):
    if name == "whatif":  # the panel needs ipywidgets: imported only when asked for
        from .jupyter.panel import whatif

        return whatif
    if name == "from_onnx":  # needs the onnx package (the onnx extra): imported only when asked for
        from .core.importers.onnx import from_onnx

        return from_onnx
    if name == "from_torch":  # needs PyTorch (the torch extra): imported only when asked for
        from .core.importers.torch_trace import from_torch

        return from_torch
    if name == "calibrate":  # needs PyTorch (the torch extra): imported only when asked for
        from .calibration.pipeline import calibrate

        return calibrate
    raise AttributeError(f"module 'jupyter_hwsim' has no attribute {name!r}")


try:  # the version lives in one place, labextension/package.json, and reaches here through the installed metadata
    __version__ = importlib.metadata.version("jupyter-hwsim")
except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
