"""Workloads imported from a model file: workload="hf:path/config.json" or "onnx:path/model.onnx".

A relative path is relative to the current directory. The file is read when the workload is resolved and the
result is kept while the file is unchanged (same size and modification time).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import HwsimError
from .hf import from_hf_config, parameter_counts
from .onnx import from_onnx

PREFIXES = ("hf:", "onnx:")
_CACHE: dict = {}

__all__ = ["PREFIXES", "from_hf_config", "from_onnx", "is_imported", "load", "parameter_counts"]


def is_imported(workload) -> bool:
    """True for a workload string naming a model file ("hf:..." or "onnx:...")."""
    return isinstance(workload, str) and workload.strip().lower().startswith(PREFIXES)


def load(spec: str) -> dict:
    """The workload dict of "hf:<config.json>" or "onnx:<model.onnx>"; its id is the string itself."""
    spec = spec.strip()
    prefix, _, path = spec.partition(":")
    path = path.strip()
    if not path:
        raise HwsimError("workload", spec, f"{prefix}:<path of a local file>")
    p = Path(path).expanduser()
    try:
        os.stat(p)
    except (OSError, ValueError) as e:  # a missing file is named by the importer; a path it cannot look up here
        if not isinstance(e, OSError) or e.errno not in (errno.ENOENT, errno.ENOTDIR):
            why = getattr(e, "strerror", None) or str(e)
            raise HwsimError(
                "workload", spec, f"{prefix}:<path of a local file>", f"not a usable path: {why}"
            ) from None
    if prefix.lower() == "hf" and p.is_dir():
        p = p / "config.json"  # a model directory
    try:
        st = p.stat()
        key = (prefix.lower(), str(p.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None  # the importer names the missing file
    if key in _CACHE:
        return _CACHE[key]
    w = from_hf_config(p, source=spec) if prefix.lower() == "hf" else from_onnx(p, source=spec)
    w["id"] = spec
    if key is not None:
        w["file_stamp"] = [key[2], key[3]]  # modification time (ns) and size of the file read
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = w
    return w
