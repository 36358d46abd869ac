"""Parameters fitted from the validation rows, always leave-one-source-out.

Where no microbenchmark gives a figure, the engine catalogue takes it from published end-to-end measurements:
an engine's decode kernels' share of the bandwidth per weight format (engines.toml decode_bw_efficiency), and the
share of the int8 tensor rate its quantized matmul kernels reach in prompt processing (quantized_matmul_efficiency,
llama.cpp's MMQ). A fit
uses only rows of other source families than the ones predicted (validation.table(fit=...)), and only from at
least MIN_FAMILIES families, so no figure rests on one publisher.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from ..core import catalog, costs
from ..core.scenario import Scenario
from ..kinds import llm

MIN_FAMILIES = 2  # a group's figure needs single-stream decode rows from at least this many source families
DECODE_MEASURES = ("per_stream",)  # one stream decoding: bandwidth-bound, the cleanest view of the kernels
PREFILL_MEASURES = ("prefill_tps",)  # prompt processing: compute-bound, the cleanest view of the matmul kernels
HOST_MEASURES = ("latency_mean", "latency_p90")  # one batch-1 step whose time is the host's: its issue and calls


def _engine(fields: dict) -> dict | None:
    """The case's engine entry; a catalogue engine that a row's harness changed (cases._changed_engine) keeps its
    name, and by it its catalogue id, so that it fits with its engine's rows."""
    e = fields.get("engine")
    if isinstance(e, dict):
        e = dict(e)
        e.setdefault("id", next((k for k, v in catalog.engines().items() if v.get("name") == e.get("name")), None))
        return e
    return dict(catalog.get("engines", e)) if isinstance(e, str) else None


def _refit(used, rows: list[dict]) -> float | None:
    """The median over rows of the catalogue's figure each row was predicted with (`used`: a number, or a function
    of the row) times its measured / predicted, or None where fewer than MIN_FAMILIES source families have rows."""
    if len({r["family"] for r in rows}) < MIN_FAMILIES:
        return None
    figure = used if callable(used) else lambda r: used
    return statistics.median(figure(r) * r["measured"] / r["predicted"] for r in rows)


def _fitted(figures: dict) -> dict:
    return {k: v for k, v in figures.items() if v is not None}


def platform(fields: dict) -> str:
    """The maker of a case's device: the platform an engine's kernels are written for (Metal on Apple, CUDA on
    NVIDIA, ROCm or Vulkan on AMD)."""
    gpu = fields["gpu"]
    return catalog.maker(catalog.get("gpus", gpu) if isinstance(gpu, str) else gpu)


def _decode_used(r: dict) -> float:
    """The decode bandwidth efficiency the catalogue predicted a row with."""
    return llm.decode_bw_share(_engine(r["fields"]), r["fields"].get("precision"), platform(r["fields"]))


def _decode_rows(train: list[dict]) -> dict:
    """(engine id, precision) -> its single-stream decode rows, and (engine id, precision, platform) -> those on one
    platform where the engine's rows span several. Only rows the model finds bandwidth-bound speak of the kernels'
    bandwidth (a host-bound eager step does not)."""
    groups: dict = defaultdict(list)
    for r in train:
        if (
            r["measure"] in DECODE_MEASURES
            and r["bottleneck"] == "memory_bw"
            and r["measured"] > 0
            and r["predicted"] > 0
        ):
            e = _engine(r["fields"])
            if e is not None:
                key = (e["id"], r["fields"].get("precision"))
                groups[key].append(r)
                groups[(*key, platform(r["fields"]))].append(r)
    platforms = defaultdict(set)  # a platform's own figure only where the engine's rows span several platforms
    for engine, precision, *on in groups:
        platforms[engine, precision].update(on)
    return {k: v for k, v in groups.items() if len(k) == 2 or len(platforms[k[:2]]) > 1}


def decode_efficiency(train: list[dict]) -> dict:
    """_decode_rows' groups -> the decode bandwidth efficiency their rows imply, where MIN_FAMILIES families have
    rows: the median over the group of the figure a row was predicted with times its measured / predicted."""
    return _fitted({key: _refit(_decode_used, rows) for key, rows in _decode_rows(train).items()})


def fitted_in_catalogue(engine_id: str | None, key: str) -> bool:
    """The catalogue's figure for `key` is one these rows fit (its source says "fitted"), not a microbenchmark's:
    only such a figure is refitted, or left at the roofline's 1.0 where a fold's rows cannot fit it."""
    if engine_id not in catalog.engines():
        return False
    return str(catalog.get("engines", engine_id).get("sources", {}).get(key, "")).startswith("fitted")


def runs_quantized_matmul(fields: dict) -> bool:
    """The case's weight matmuls run as the engine's integer kernels (costs.quantized_matmul_tflops)."""
    e = _engine(fields)
    if e is None or not e.get("quantized_matmul") or fields.get("kind") != "llm":
        return False
    return costs.quantized_matmul_tflops(costs.resolve(Scenario(**fields))) > 0


def _prefill_rows(train: list[dict]) -> dict:
    groups: dict = defaultdict(list)
    for r in train:
        if r["measure"] in PREFILL_MEASURES and r["measured"] > 0 and r["predicted"] > 0:
            engine_id = (_engine(r["fields"]) or {}).get("id")
            if runs_quantized_matmul(r["fields"]) and fitted_in_catalogue(engine_id, "quantized_matmul_efficiency"):
                groups[engine_id].append(r)
    return groups


def quantized_matmul_efficiency(train: list[dict]) -> dict:
    """engine id -> the quantized matmul efficiency the training rows' prompt processing implies: the catalogue's
    figure times the median of measured / predicted, where MIN_FAMILIES families have rows."""
    return _fitted(
        {
            engine: _refit(float(catalog.get("engines", engine)["quantized_matmul_efficiency"]), rows)
            for engine, rows in _prefill_rows(train).items()
        }
    )


def _host_rows(train: list[dict]) -> dict:
    """engine id -> the batch-1 latency rows the catalogue's figures predict to be host-bound. An engine that
    carries another's scale (engines.toml host_overhead_scale_from) fits nothing: its rows only test it."""
    groups: dict = defaultdict(list)
    for r in train:
        if r["measure"] in HOST_MEASURES and r["bottleneck"] == "overhead" and r["measured"] > 0:
            e = _engine(r["fields"])
            if e is not None and e.get("id") and not e.get("host_overhead_scale_from"):
                groups[e["id"]].append(r)
    return groups


def _borrowers() -> dict:
    """engine id -> the engine whose fitted host overhead scale it carries."""
    return {k: v["host_overhead_scale_from"] for k, v in catalog.engines().items() if v.get("host_overhead_scale_from")}


def host_overhead_scale(train: list[dict]) -> dict:
    """engine id -> the host overhead scale the training rows' host-bound batch-1 latencies imply: the
    catalogue's figure times the median of measured / predicted, where MIN_FAMILIES families have rows; an
    engine that carries another's scale gets that engine's fit."""
    fitted = _fitted(
        {
            engine: _refit(costs.host_overhead_scale(catalog.get("engines", engine)), rows)
            for engine, rows in _host_rows(train).items()
        }
    )
    return {**fitted, **{k: fitted[v] for k, v in _borrowers().items() if v in fitted}}


def _line(what: str, value: float, rows: list[dict]) -> str:
    fams = sorted({r["family"] for r in rows})
    return f"{what}: {value:.3f} from {len(rows)} rows of {len(fams)} families ({', '.join(fams)})"


def describe(train: list[dict]) -> list[str]:
    """One line per fitted group: the figure, its rows and source families (for the report and the catalogue)."""
    lines = []
    decode = _decode_rows(train)
    for key, value in sorted(decode_efficiency(train).items()):
        engine, precision, *on = key
        name = f"{engine} {precision}" + (f" on {on[0]}" if on else "")
        lines.append("decode bandwidth efficiency, " + _line(name, value, decode[key]))
    prefill = _prefill_rows(train)
    for engine, value in sorted(quantized_matmul_efficiency(train).items()):
        lines.append("quantized matmul efficiency, " + _line(engine, value, prefill[engine]))
    host, borrowed = _host_rows(train), _borrowers()
    for engine, value in sorted(host_overhead_scale(train).items()):
        lines.append("host overhead scale, " + _line(engine, value, host[borrowed.get(engine, engine)]))
    return lines


def fit_engines(train: list[dict]):
    """A validation fit: the adjustment that gives each case its engine's fitted host overhead scale, and each llm
    case its engine's fitted decode and quantized matmul efficiencies."""
    decode, qmm, host = decode_efficiency(train), quantized_matmul_efficiency(train), host_overhead_scale(train)

    def adjust(case: dict) -> dict:
        """The case with its engine's efficiencies as fitted here, or the roofline (1.0) where these rows cannot
        fit them: the catalogue's own figures came from every family, the predicted one included."""
        fields = case["fields"]
        e = _engine(fields)
        if e is None:
            return case
        e.pop("host_overhead_scale_from", None)  # this fold's figure, the lender's fit without the predicted family
        e["host_overhead_scale"] = host.get(e.get("id"), 1.0)
        if fields.get("kind") != "llm":
            return {**case, "fields": {**fields, "engine": e}}
        precision, on = fields.get("precision"), platform(fields)
        e["decode_bw_efficiency"] = {
            **e.get("decode_bw_efficiency", {}),
            precision: decode.get((e["id"], precision), 1.0),
        }
        mine = decode.get((e["id"], precision, on))
        e.pop("decode_bw_efficiency_on", None)
        if mine is not None:
            e["decode_bw_efficiency_on"] = {on: {precision: mine}}
        if e.get("quantized_matmul") and fitted_in_catalogue(e.get("id"), "quantized_matmul_efficiency"):
            e["quantized_matmul_efficiency"] = qmm.get(e["id"], 1.0)
        return {**case, "fields": {**fields, "engine": e}}

    return adjust
