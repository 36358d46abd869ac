"""How far to trust a number: the leave-one-source-out error of its class (workload family, engine, measure) over
the published measurements (data/bands.json, written by `python -m jupyter_hwsim.validation`)."""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

from .scenario import KIND_TRAITS

# a result figure -> the published measures that compare with it, the best match first (generate_tps: a
# sequence's tokens/s over a whole generate() call, the per-stream speed with its prefill in)
MEASURES = {"throughput": ("throughput", "per_stream", "generate_tps"), "ttft": ("ttft_b1", "ttft_p50")}


def workload_family(fields: dict) -> str:
    """cnn | transformer-encoder | llm | other: the classes the error bands are kept for."""
    w = fields.get("workload")
    name = w.get("name", "") if isinstance(w, dict) else str(w)
    if KIND_TRAITS[fields["kind"]].generates:
        return "llm"
    if re.search(r"resnet|ssd|retinanet", name, re.I):
        return "cnn"
    if re.search(r"bert|vit", name, re.I):
        return "transformer-encoder"
    return "other"


@functools.cache
def _bands() -> dict:
    return json.loads(resources.files("jupyter_hwsim").joinpath("data", "bands.json").read_text())


def band(fields: dict, figure: str, value: float, single_stream: bool = False) -> dict:
    """The band of one figure of a result ({"figure", "class", "n", "status"}, and when validated the range the
    measured value fell in for 80% of the class's rows: low/high, and the median absolute error). A class with
    fewer than the validation's minimum of rows (or none) is "unvalidated". single_stream: an LLM at concurrency 1, compared with per-stream rows."""
    family, engine = workload_family(fields), fields.get("engine")
    measures = MEASURES[figure][::-1] if single_stream else MEASURES[figure]
    found = [
        b
        for m in measures
        for b in _bands().values()
        if b["workload_family"] == family and b.get("runtime") == engine and b["measure"] == m
    ]
    if not found:
        return {"figure": figure, "class": f"{family}|{engine}|{measures[0]}", "n": 0, "status": "unvalidated"}
    b = max(found, key=lambda b: (b["status"] == "validated", b["n"]))
    out = {"figure": figure, "class": f"{family}|{b['engine']}|{b['measure']}", "n": b["n"], "status": b["status"]}
    if b["status"] == "validated":  # error = predicted / measured - 1, so measured = predicted / (1 + error)
        out.update(low=value / (1 + b["p90"]), high=value / (1 + b["p10"]), median_abs_error=b["median_abs"])
    return out
