"""Parameters fitted from the validation rows, always leave-one-source-out.

Where no microbenchmark gives a figure, the engine catalogue takes it from published end-to-end measurements:
an engine's decode kernels' share of the bandwidth per weight format (engines.toml decode_bw_efficiency). A fit
uses only rows of other source families than the ones predicted (validation.table(fit=...)), and only from at
least MIN_FAMILIES families, so no figure rests on one publisher.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from ..core import catalog

MIN_FAMILIES = 2  # a group's figure needs single-stream decode rows from at least this many source families
DECODE_MEASURES = ("per_stream",)  # one stream decoding: bandwidth-bound, the cleanest view of the kernels


def _engine(fields: dict) -> dict | None:
    e = fields.get("engine")
    return dict(e) if isinstance(e, dict) else (dict(catalog.get("engines", e)) if isinstance(e, str) else None)


def decode_efficiency(train: list[dict]) -> dict:
    """(engine id, precision) -> the decode bandwidth efficiency the training rows imply: the catalogue's
    figure times the median of measured / predicted over the group, where MIN_FAMILIES families have rows."""
    groups: dict = defaultdict(list)
    for r in train:
        if r["measure"] in DECODE_MEASURES and r["measured"] > 0 and r["predicted"] > 0:
            e = _engine(r["fields"])
            if e is not None:
                groups[e["id"], r["fields"].get("precision")].append(r)
    out = {}
    for (engine, precision), rows in groups.items():
        if len({r["family"] for r in rows}) < MIN_FAMILIES:
            continue
        now = float(catalog.get("engines", engine).get("decode_bw_efficiency", {}).get(precision, 1.0))
        out[engine, precision] = now * statistics.median(r["measured"] / r["predicted"] for r in rows)
    return out


def describe(train: list[dict]) -> list[str]:
    """One line per fitted group: the figure, its rows and source families (for the report and the catalogue)."""
    fitted, lines = decode_efficiency(train), []
    for (engine, precision), value in sorted(fitted.items()):
        rows = [r for r in train if r["measure"] in DECODE_MEASURES and _engine(r["fields"])["id"] == engine
                and r["fields"].get("precision") == precision]  # fmt: skip
        fams = sorted({r["family"] for r in rows})
        lines.append(
            f"{engine} {precision}: {value:.3f} from {len(rows)} rows of {len(fams)} families ({', '.join(fams)})"
        )
    return lines


def fit_decode_efficiency(train: list[dict]):
    """A validation fit: the adjustment that gives each llm case its engine's fitted decode efficiency."""
    fitted = decode_efficiency(train)

    def adjust(case: dict) -> dict:
        """The case with its engine's decode efficiency as fitted here, or the roofline (1.0) where these rows
        cannot fit it: the catalogue's own figure came from every family, the predicted one included."""
        fields = case["fields"]
        e = _engine(fields)
        if fields.get("kind") != "llm" or e is None:
            return case
        precision = fields.get("precision")
        e["decode_bw_efficiency"] = {
            **e.get("decode_bw_efficiency", {}),
            precision: fitted.get((e["id"], precision), 1.0),
        }
        return {**case, "fields": {**fields, "engine": e}}

    return adjust
