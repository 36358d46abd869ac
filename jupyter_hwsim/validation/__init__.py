"""Predicted beside published measurements: every row of the validation table the model can express.

`table()` maps each published row to a scenario (`cases.case`), runs it, and compares the figure the row
reports. `table(fit=f)` leaves one source family out at a time: `f(train_rows)` returns `adjust(case) -> case`
fitted on the other families' rows, and the left-out family is predicted with it. Without `fit` nothing is
fitted to these rows, so the leave-one-source-out error is the plain error.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ..api import estimate, simulate
from ..core.bands import workload_family
from ..core.errors import HwsimError
from ..core.scenario import Scenario
from . import cases as cases_module
from . import fits
from .cases import ENGINE_CATALOGUE, case, family, published_rows
from .fits import fit_engines

CATEGORIES = ("training", "inference", "latency_b1", "llm_decode", "llm_prefill", "llm_ttft", "serving", "dataloading")
BANDS_PATH = Path(__file__).resolve().parents[1] / "data" / "bands.json"
MIN_BAND_ROWS = 5

# measured units -> the unit the comparison is made in (factor)
_UNITS = {"ns": ("ms", 1e-6), "s": ("ms", 1e3), "min": ("min", 1.0)}
_MEASURE_UNITS = {"latency_mean", "latency_p90", "ttft_b1", "ttft_p50", "itl_median"}
_RATES = {"ms/token": ("tok/s", 1e3)}  # a time per token reported for a rate: its inverse


def _measured(row: dict) -> tuple[float, str]:
    value, unit = float(row["value"]), row["unit"].strip()
    if unit in _UNITS and _measure_of(row) in _MEASURE_UNITS:
        to, k = _UNITS[unit]
        return value * k, to
    if unit == "s/batch":
        return value, "s"
    if unit in _RATES:
        to, k = _RATES[unit]
        return k / value, to
    return value, unit


def _measure_of(row: dict) -> str | None:
    return case(row).get("measure")


# ------------------------------------------------------------------------------------------------ running
_CACHE: dict = {}


def _key(fields: dict, method: str) -> str:
    return method + json.dumps(fields, sort_keys=True, default=str)


def _run(fields: dict, method: str):
    key = _key(fields, method)
    if key not in _CACHE:
        s = Scenario(**fields)
        _CACHE[key] = estimate(s, suggest=False) if method == "estimate" else simulate(s, seed=0, suggest=False)
    return _CACHE[key]


def _resolve(fields: dict) -> dict:
    """Fields ready for Scenario: concurrency="fit" becomes the most sequences whose KV cache fits, at most the
    requests of the run (the runtime batch trtllm-bench picks from free memory)."""
    f = {k: v for k, v in fields.items() if k not in ("requests", "kv_memory_fraction")}
    if f.get("concurrency") == "fit":
        conc = 1
        for _ in range(2):  # the prefill activations held beside the KV cache grow with the batch: probe twice
            probe = _run({**f, "concurrency": conc}, "estimate")
            fit = int(fields.get("kv_memory_fraction", 1.0) * (probe.max_concurrency or 1))
            conc = max(1, min(fit, fields.get("requests", 10**6)))
        f["concurrency"] = conc
    return f


def predict(c: dict) -> tuple[float, str]:
    """(predicted figure, bottleneck) of a mapped case."""
    f = _resolve(c["fields"])
    m = c["measure"]
    r = _run(f, "simulate" if m in cases_module.SIMULATED else "estimate")
    d = r.details
    if m == "throughput":
        return r.throughput, r.bottleneck
    if m in ("latency_mean", "latency_p90"):
        return r.latency_ms["mean" if m == "latency_mean" else "p95"], r.bottleneck
    if m == "step_ms":
        return 1e3 * f["batch_size"] / r.throughput, r.bottleneck
    if m == "per_stream":
        return r.tokens_per_s_per_stream, r.bottleneck
    if m == "generate_tps":
        return 1e3 * f["output_tokens"] / d["e2e_ms"]["mean"], r.bottleneck
    if m in ("ttft_b1", "ttft_p50"):
        return r.ttft_ms["p50"], "prefill" if m == "ttft_b1" else r.bottleneck
    if m == "prefill_tps":
        return r.prefill_tokens_per_s, "prefill"
    if m == "pg_tps":
        n = f["output_tokens"]
        return 1e3 * (f["prompt_tokens"] + n) / (d["prefill_ms"] + n * d["decode_step_ms"]), r.bottleneck
    if m == "itl_median":
        return r.latency_ms["p50"], r.bottleneck
    if m == "time_per_batch":
        return f["batch_size"] / r.throughput, r.bottleneck
    raise ValueError(m)


def roofline(c: dict) -> float | None:
    """Single-stream decode bound of a per_stream case: achievable bandwidth / bytes read per token (tok/s)."""
    if c["measure"] != "per_stream":
        return None
    d = _run(_resolve(c["fields"]), "estimate").details
    return d["effective_bandwidth_gbs"] * 1e9 / d["bytes_per_token_single_stream"]


# ------------------------------------------------------------------------------------------------ the table
def _meta(row: dict, c: dict) -> dict:
    return {
        "case": row["case_id"],
        "source_id": row["source_id"],
        "family": family(row["source_id"]),
        "category": row["category"],
        "metric": row["metric"],
        "engine": c.get("engine") or row["engine"],
        "engine_published": row["engine"],
        "model": row["model"],
        "hardware": row["hardware"],
        "precision": row["precision"],
        "batch": row["batch"],
        "input": row["input"],
        "software_version": row.get("software_version", ""),
        "source_url": row.get("source_url", ""),
    }


def mapped(rows=None) -> list[tuple[dict, dict]]:
    """(published row, case) for each row; a dict of {case_id: fields} (the old CASES form) selects ids."""
    allrows = published_rows()
    if rows is None:
        rows = allrows
    elif isinstance(rows, dict):
        ids = set(rows)
        rows = [r for r in allrows if r["case_id"] in ids]
    out = []
    for r in rows:
        c = case(r)
        if "fields" in c:
            try:
                Scenario(**_resolve(c["fields"]))
            except HwsimError as e:
                msg = str(e).replace(f"hf:{cases_module.MODELS_DIR}/", "").replace(f"{cases_module.MODELS_DIR}/", "")
                c = {"reason": f"scenario refused: {msg}", "engine": c["engine"]}
        out.append((r, c))
    return out


def table(rows=None, fit=None) -> list[dict]:
    """Predicted beside measured for every expressible row (rows: published rows, default all of them).

    Each entry: the row's metadata, measured, predicted, error = predicted / measured - 1, bottleneck, notes,
    and loso_predicted / loso_error: with `fit`, predicted for each source family by the adjustment `fit`
    returned for the other families' rows; without it, equal to the plain figures."""
    out = []
    for row, c in mapped(rows):
        if "fields" not in c:
            continue
        measured, unit = _measured(row)
        predicted, bottleneck = predict(c)
        out.append(
            {
                **_meta(row, c),
                "measure": c["measure"],
                "workload_family": workload_family(c["fields"]),
                "fields": c["fields"],
                "notes": c["notes"],
                "unit": unit,
                "measured": measured,
                "predicted": predicted,
                "error": predicted / measured - 1.0,
                "bottleneck": bottleneck,
                "roofline": roofline(c),
                "loso_predicted": predicted,
                "loso_error": predicted / measured - 1.0,
            }
        )
    if fit is not None:
        for fam in sorted({r["family"] for r in out}):
            train = [r for r in out if r["family"] != fam]
            adjust = fit(train)
            for r in out:
                if r["family"] == fam:
                    c = adjust({"fields": dict(r["fields"]), "measure": r["measure"], "engine": r["engine"]})
                    r["loso_predicted"], _ = predict(c)
                    r["loso_error"] = r["loso_predicted"] / r["measured"] - 1.0
    return out


def not_expressible(rows=None) -> list[dict]:
    """Rows the model cannot express, each with its reason."""
    return [{**_meta(r, c), "reason": c["reason"]} for r, c in mapped(rows) if "fields" not in c]


# ------------------------------------------------------------------------------------------------ summaries
def _pct(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between order statistics."""
    v = sorted(values)
    if not v:
        return float("nan")
    i = (len(v) - 1) * q / 100.0
    lo, hi = math.floor(i), math.ceil(i)
    return v[lo] + (v[hi] - v[lo]) * (i - lo)


def median_abs_error(rows: list[dict], key: str = "loso_error") -> float:
    return _pct([abs(r[key]) for r in rows], 50)


def p90_abs_error(rows: list[dict], key: str = "loso_error") -> float:
    return _pct([abs(r[key]) for r in rows], 90)


def summary(rows: list[dict], by: str | None = None, key: str = "loso_error") -> dict:
    """{"n", "median", "p90"} overall, or per value of column `by`."""
    if by is None:
        return {"n": len(rows), "median": median_abs_error(rows, key), "p90": p90_abs_error(rows, key)}
    groups: dict = {}
    for r in rows:
        groups.setdefault(r[by], []).append(r)
    return {g: summary(rs, key=key) for g, rs in sorted(groups.items())}


def counts(rows: list[dict] | None = None) -> dict:
    """Rows, expressible rows, sources and families of the table."""
    allrows = published_rows()
    rows = table() if rows is None else rows
    return {
        "rows": len(allrows),
        "expressible": len(rows),
        "sources": len({r["source_id"] for r in allrows}),
        "families": len({family(r["source_id"]) for r in allrows}),
        "sources_expressible": len({r["source_id"] for r in rows}),
    }


def band_key(r: dict) -> str:
    return f"{r['workload_family']}|{r['engine']}|{r['measure']}"


def bands(rows: list[dict]) -> dict:
    """Leave-one-source-out residual spread per class (workload family | engine | measure): n, the 10th, 50th
    and 90th percentiles of the signed error and the median absolute error; under MIN_BAND_ROWS rows a class
    is "unvalidated"."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(band_key(r), []).append(r["loso_error"])
    out = {}
    for k, errs in sorted(groups.items()):
        wf, engine, measure = k.split("|")
        entry = {"workload_family": wf, "engine": engine, "measure": measure, "n": len(errs)}
        entry["runtime"] = ENGINE_CATALOGUE.get(engine)  # the engine catalogue's id: how a Result finds its band
        if len(errs) < MIN_BAND_ROWS:
            entry["status"] = "unvalidated"
        else:
            entry.update(
                status="validated",
                p10=round(_pct(errs, 10), 4),
                p50=round(_pct(errs, 50), 4),
                p90=round(_pct(errs, 90), 4),
                median_abs=round(_pct([abs(e) for e in errs], 50), 4),
            )
        out[k] = entry
    return out


# ------------------------------------------------------------------------------------------------ old names
def _cases_of(categories) -> dict:
    return {r["case_id"]: c["fields"] for r, c in mapped() if "fields" in c and r["category"] in categories}


class _LazyCases(dict):
    """{case_id: scenario fields}, filled on first use (mapping reads the model configs)."""

    def __init__(self, categories):
        super().__init__()
        self._categories, self._filled = categories, False

    def _fill(self):
        if not self._filled:
            self._filled = True
            self.update(_cases_of(self._categories))

    def __getattribute__(self, name):
        if name in ("keys", "items", "values", "__iter__", "__len__", "__getitem__", "__contains__", "get"):
            object.__getattribute__(self, "_fill")()
        return object.__getattribute__(self, name)

    def __len__(self):
        self._fill()
        return dict.__len__(self)

    def __iter__(self):
        self._fill()
        return dict.__iter__(self)

    def __contains__(self, k):
        self._fill()
        return dict.__contains__(self, k)

    def __getitem__(self, k):
        self._fill()
        return dict.__getitem__(self, k)


CASES = _LazyCases(("training", "inference", "latency_b1", "dataloading"))  # the non-LLM cases
LLM_CASES = _LazyCases(("llm_decode", "llm_prefill", "llm_ttft", "serving"))


# ------------------------------------------------------------------------------------------------ report
def _fmt(v: float) -> str:
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.4f}"


def _summary_table(title: str, groups: dict, label: str) -> list[str]:
    lines = [f"### {title}", "", f"| {label} | n | median abs error | p90 abs error |", "| --- | ---: | ---: | ---: |"]
    for g, s in groups.items():
        lines.append(f"| {g} | {s['n']} | {s['median']:.1%} | {s['p90']:.1%} |")
    return lines + [""]


def markdown(rows: list[dict], missing: list[dict] | None = None, fitted: bool = False) -> str:
    """The report docs/validation.md."""
    c = counts(rows)
    s = summary(rows)
    lines = [
        "# Validation against published measurements",
        "",
        "Generated by `python -m jupyter_hwsim.validation` from `jupyter_hwsim/data/reference/published.csv` "
        "(sources: `jupyter_hwsim/data/reference/SOURCES.md`) and the older validation rows of "
        "`measurements.csv`. Each row is mapped to a scenario by the lookup tables of "
        "`jupyter_hwsim/validation/cases.py` and predicted with `estimate()` (`simulate()` for inter-token "
        "latency). Error = predicted / measured - 1.",
        "",
        (
            "Leave-one-source-out: each source family was predicted by parameters fitted on the other families "
            "(the fitted parameters are listed at the end); every other parameter comes from datasheets and "
            "microbenchmarks, never from these rows."
            if fitted
            else "Leave-one-source-out: no model parameter is fitted to these rows, so the leave-one-source-out "
            "error equals the plain error."
        ),
        "",
        f"**Overall: median absolute error {s['median']:.1%}, 90th percentile {s['p90']:.1%}** over "
        f"{c['expressible']} expressible rows of {c['rows']} ({c['sources_expressible']} of {c['sources']} "
        f"sources, {c['families']} source families). Fidelity target: median at most 15%, p90 at most 35%.",
        "",
        "## Summary",
        "",
    ]
    by_cat = summary(rows, "category")
    lines += _summary_table("Per category", {k: by_cat[k] for k in CATEGORIES if k in by_cat}, "category")
    lines += _summary_table("Per engine", summary(rows, "engine"), "engine")
    lines += _summary_table("Per source family", summary(rows, "family"), "family")
    lines += [
        "Error bands (`jupyter_hwsim/data/bands.json`): per workload family, engine and measure, the spread of "
        f"the leave-one-source-out error; classes with fewer than {MIN_BAND_ROWS} rows are unvalidated.",
        "",
    ]
    for cat in CATEGORIES:
        rs = [r for r in rows if r["category"] == cat]
        if not rs:
            continue
        lines += [
            f"## {cat} ({len(rs)} rows)",
            "",
            "| case | model | hardware | engine | precision | batch | input | measured | predicted | error "
            "| bottleneck | source |",
            "| --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for r in rs:
            src = f"[{r['source_id']}]({r['source_url']})" if r["source_url"] else r["source_id"]
            lines.append(
                f"| {r['case']} | {r['model']} | {r['hardware']} | {r['engine']} | {r['precision']} | {r['batch']} "
                f"| {r['input']} | {_fmt(r['measured'])} {r['unit']} | {_fmt(r['loso_predicted'])} "
                f"| {r['loso_error']:+.0%} | {r['bottleneck']} | {src} |"
            )
        lines.append("")
    if missing:
        reasons: dict = {}
        for m in missing:
            reasons.setdefault(m["reason"], []).append(m)
        lines += [
            f"## Rows not expressible ({len(missing)})",
            "",
            "| reason | rows | cases |",
            "| --- | ---: | --- |",
        ]
        for reason, ms in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            ids = ", ".join(m["case"] for m in ms[:6]) + (", ..." if len(ms) > 6 else "")
            lines.append(f"| {reason} | {len(ms)} | {ids} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the validation report (default docs/validation.md) and bands.json; print the headline figures."""
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "docs/validation.md")
    bands_out = Path(args[1]) if len(args) > 1 else BANDS_PATH
    rows = table(fit=fit_engines)
    missing = not_expressible()
    fitted = [
        "## Parameters fitted from these rows",
        "",
        "Each is fitted leave-one-source-out for the figures above (the rows of the family being predicted never "
        "enter its fit; a group fits only from at least two families, else the roofline's 1.0 stands). On all "
        "rows, as the catalogue (data/engines.toml) carries them:",
        "",
        *(f"- {line}" for line in fits.describe(rows)),
        "",
    ]
    out.write_text(markdown(rows, missing, fitted=True) + "\n" + "\n".join(fitted))
    bands_out.write_text(json.dumps(bands(rows), indent=1, sort_keys=True) + "\n")
    c, s = counts(rows), summary(rows)
    print(
        f"validation: {c['expressible']} of {c['rows']} rows expressible, {c['sources']} sources; leave-one-source-"
        f"out median abs error {s['median']:.1%}, p90 {s['p90']:.1%}"
    )
    by_cat = summary(rows, "category")
    for cat in CATEGORIES:
        if cat in by_cat:
            g = by_cat[cat]
            print(f"  {cat:<12} n={g['n']:<4} median {g['median']:.1%}  p90 {g['p90']:.1%}")
    print(f"wrote {out} and {bands_out}")
    return 0
