"""Altair charts of a Result, rendered offline.

Each chart's design is an Altair spec over named data sets, built once (Altair's
to_dict costs ~10 ms); a chart is that template plus this result's rows, so a panel
redraws in microseconds of Python. Display bundles carry the spec under
JupyterLab's own Vega-Lite 5 MIME type (rendered by JupyterLab 4 and Notebook 7
with the vega they ship: no CDN) and, when static, an SVG from vl-convert that
nbconvert's HTML export and other viewers show.

Every chart reads on JupyterLab's light and dark themes: a transparent background,
mid-grey axes, titles and legends (about 4:1 on white and on JupyterLab's dark
grey), and it asks vega-embed for SVG (usermeta.embedOptions) so a page's CSS can
give its text the theme's own colour (the what-if panel does: its charts follow a
theme change without a redraw). A pinned baseline is drawn muted under the
current values (data set names starting "base"; empty when nothing is pinned).
"""

from __future__ import annotations

import functools
import math

import altair as alt

from ..core import costs
from ..core.result import track_key

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
SCHEMA_V5 = "https://vega.github.io/schema/vega-lite/v5.json"
VL_VERSION = "5.21"  # the Vega-Lite that JupyterLab 4 renders; the SVG is made with the same
WIDTH = 260
POW2 = [2**k for k in range(13)]  # batch sizes a curve tries: 1 .. 4096

MID = "#808080"  # text and axes: 3.9:1 on white, 4.1:1 on JupyterLab's dark #212121, 4.8:1 on #111
MUTED = "#a0a0a0"  # the pinned baseline
GRID = "rgba(128,128,128,0.25)"
RUNS = ["current", "baseline"]
CONFIG = {
    "background": "transparent",
    "font": "sans-serif",
    "view": {"stroke": None},
    "axis": {
        "labelColor": MID,
        "titleColor": MID,
        "domainColor": MID,
        "tickColor": MID,
        "gridColor": GRID,
        "labelFontSize": 11,
        "titleFontSize": 11,
        "titleFontWeight": "normal",
    },
    "legend": {"labelColor": MID, "titleColor": MID, "labelFontSize": 11, "labelLimit": 140},
    "title": {"color": MID, "subtitleColor": MID, "anchor": "start", "fontSize": 13, "offset": 6},
    "text": {"color": MID},
}
# vega-embed reads this from the spec itself: SVG output lets the page's CSS colour the text
EMBED = {"embedOptions": {"renderer": "svg"}}

GPU_TIME_COLORS = {
    "compute": "#4c78a8",
    "memory": "#72b7b2",
    "launch": "#f58518",
    "input_io": "#e45756",
    "input_preprocess": "#ff9da6",
    "host_copy": "#b279a2",
    "idle": "#bab0ac",
}
UTIL_LABELS = {
    "storage": "storage",
    "cpu": "CPU",
    "host_link": "host link",
    "gpu_busy": "GPU busy",
    "gpu_mfu": "GPU MFU",
    "hbm_bw": "HBM bandwidth",
}
MEMORY_PARTS = ("weights_gb", "gradients_gb", "optimizer_gb", "activations_gb", "kv_cache_gb", "workspace_gb")
MAX_TRACKS = 10  # timeline rows that fit: more loader workers are drawn in groups


class Chart:
    """A chart template with its data: to_dict() is a complete Vega-Lite spec."""

    def __init__(self, name: str, template: dict, datasets: dict):
        self.name, self.template, self.datasets = name, template, datasets

    def to_dict(self) -> dict:
        return {**self.template, "datasets": self.datasets}

    def bundle(self, static: bool = False) -> dict:
        """A display bundle: interactive Vega-Lite, plus an SVG when static (exports, handouts)."""
        spec = self.to_dict()
        out = {VEGALITE_MIME: spec, "text/plain": f"<{self.name} chart>"}
        if static:
            out["image/svg+xml"] = svg(spec)
        return out

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.bundle(static=True)


def _opaque(spec: dict, background: str | None) -> dict:
    if background is None:
        return spec
    return {**spec, "config": {**spec.get("config", {}), "background": background}}


def svg(spec: dict, background: str | None = None) -> str:
    """The chart as SVG (vl-convert, offline); background: a colour for a file opened outside Jupyter."""
    import vl_convert

    return vl_convert.vegalite_to_svg(_opaque(spec, background), vl_version=VL_VERSION)


def png(spec: dict, background: str | None = "white", scale: float = 2.0) -> bytes:
    """The chart as PNG (vl-convert, offline), on white by default."""
    import vl_convert

    return vl_convert.vegalite_to_png(_opaque(spec, background), vl_version=VL_VERSION, scale=scale)


def _spec(chart) -> dict:
    spec = chart.configure(**{k: v for k, v in CONFIG.items() if k != "background"}).to_dict(validate=True)
    spec["config"]["background"] = CONFIG["background"]
    spec["$schema"] = SCHEMA_V5
    spec["usermeta"] = EMBED
    spec.pop("datasets", None)
    return spec


def _data(name: str):
    return alt.NamedData(name=name)


def _title(text: str, subtitle: str | None = None) -> alt.TitleParams:
    return alt.TitleParams(text, subtitle=subtitle) if subtitle else alt.TitleParams(text)


@functools.cache
def _utilization_template() -> dict:
    y = alt.Y("label:N", sort=None, title=None, scale=alt.Scale(domain=list(UTIL_LABELS.values())))
    # room past 100% for the value labels ("100%" must not be clipped at a sidebar's width)
    x = alt.X("value:Q", scale=alt.Scale(domain=[0, 1.22]), axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1]))
    base = alt.Chart(_data("rows")).encode(y=y, x=x.title("busy fraction"))
    bars = base.mark_bar().encode(
        color=alt.Color(
            "group:N",
            scale=alt.Scale(domain=["pipeline", "GPU busy", "GPU useful"], range=["#6baed6", "#f58518", "#4c78a8"]),
            legend=None,
        ),
        tooltip=[alt.Tooltip("label:N", title="resource"), alt.Tooltip("value:Q", format=".1%")],
    )
    text = (
        base.mark_text(align="left", dx=3)
        .encode(text=alt.Text("value:Q", format=".0%"))
        .properties(name="hwsim_values")
    )
    pinned = (
        alt.Chart(_data("base"))
        .mark_tick(color=MUTED, thickness=3, opacity=0.9)
        .encode(y=y, x=x, tooltip=[alt.Tooltip("label:N", title="baseline"), alt.Tooltip("value:Q", format=".1%")])
    )
    return _spec((bars + pinned + text).properties(width=WIDTH, height=150, title=_title("Utilization per resource")))


def utilization(r, base=None) -> Chart:
    groups = {"gpu_busy": "GPU busy", "gpu_mfu": "GPU useful", "hbm_bw": "GPU useful"}
    rows = [
        {"key": k, "label": UTIL_LABELS[k], "value": float(r.utilization[k]), "group": groups.get(k, "pipeline")}
        for k in UTIL_LABELS
    ]
    pinned = (
        [{"key": k, "label": UTIL_LABELS[k], "value": float(base.utilization[k])} for k in UTIL_LABELS] if base else []
    )
    return Chart("utilization", _utilization_template(), {"rows": rows, "base": pinned})


@functools.cache
def _gpu_time_template(compare: bool = False) -> dict:
    """One stacked bar; with a baseline (compare), a row for each run, the baseline's faded."""
    enc = dict(
        x=alt.X(
            "fraction:Q",
            stack="zero",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
            title="share of GPU wall time",
        ),
        color=alt.Color(
            "cause:N",
            scale=alt.Scale(domain=list(GPU_TIME_COLORS), range=list(GPU_TIME_COLORS.values())),
            legend=alt.Legend(orient="bottom", columns=3, title=None),
        ),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("run:N"), alt.Tooltip("cause:N"), alt.Tooltip("fraction:Q", format=".1%")],
    )
    if compare:
        enc.update(_baseline_rows())
    chart = alt.Chart(_data("rows")).mark_bar().encode(**enc)
    return _spec(chart.properties(width=WIDTH, height=44, title=_title("Where the GPU's time goes")))


def _baseline_rows() -> dict:
    """A bar chart's encoding with a baseline: one row per run, the baseline's muted."""
    return {
        "y": alt.Y("run:N", sort=RUNS, title=None, scale=alt.Scale(domain=RUNS)),
        "opacity": alt.condition(alt.datum.run == "baseline", alt.value(0.35), alt.value(1.0)),
    }


def _gpu_rows(r, run: str) -> list[dict]:
    return [
        {"run": run, "cause": k, "fraction": float(r.gpu_time.get(k, 0.0)), "order": i}
        for i, k in enumerate(GPU_TIME_COLORS)
        if r.gpu_time.get(k, 0.0) > 0
    ]


def gpu_time(r, base=None) -> Chart:
    rows = _gpu_rows(r, "current") + (_gpu_rows(base, "baseline") if base else [])
    return Chart("gpu_time", _gpu_time_template(base is not None), {"rows": rows})


@functools.cache
def _memory_template(compare: bool = False) -> dict:
    """One stacked bar against the capacity; with a baseline (compare), a row for each run."""
    enc = dict(
        x=alt.X("gb:Q", stack="zero", title="GB"),
        color=alt.Color("part:N", legend=alt.Legend(orient="bottom", columns=3, title=None)),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("run:N"), alt.Tooltip("part:N"), alt.Tooltip("gb:Q", format=".2f")],
    )
    if compare:
        enc.update(_baseline_rows())
    bars = alt.Chart(_data("parts")).mark_bar().encode(**enc)
    cap = (
        alt.Chart(_data("capacity"))
        .mark_rule(color="#d62728", strokeWidth=2)
        .encode(x="gb:Q", tooltip=[alt.Tooltip("label:N", title="capacity"), alt.Tooltip("gb:Q", format=".0f")])
    )
    return _spec(
        (bars + cap).properties(width=WIDTH, height=44, title=_title("Device memory", "red line: the GPU's capacity"))
    )


def _memory_parts(r, run: str) -> list[dict]:
    mem = r.memory
    return [
        {"run": run, "part": k[:-3].replace("_", " "), "gb": float(mem.get(k, 0.0)), "order": i}
        for i, k in enumerate(MEMORY_PARTS)
        if mem.get(k, 0.0) > 0
    ]


def memory(r, base=None) -> Chart:
    mem = r.memory
    parts = _memory_parts(r, "current") + (_memory_parts(base, "baseline") if base else [])
    cap = [{"gb": float(mem["capacity_gb"]), "label": costs.capacity_text(mem["capacity_gb"])}]
    return Chart("memory", _memory_template(base is not None), {"parts": parts, "capacity": cap})


@functools.cache
def _curve_template(x_title: str, log_x: bool, unit: str, latency_title: str) -> dict:
    xs = alt.X("x:Q", title=x_title, scale=alt.Scale(type="log", base=2) if log_x else alt.Scale())
    y_thr = alt.Y("throughput:Q", title=f"{unit} (solid)")
    thr = (
        alt.Chart(_data("curve"))
        .mark_line(point=True, color="#4c78a8")
        .encode(
            x=xs,
            y=y_thr,
            tooltip=[
                alt.Tooltip("x:Q", title=x_title),
                alt.Tooltip("throughput:Q", format=",.1f"),
                alt.Tooltip("p99_ms:Q", format=",.2f"),
            ],
        )
    )
    base_thr = (
        alt.Chart(_data("base_curve"))
        .mark_line(color=MUTED, strokeWidth=1.5, opacity=0.8)
        .encode(x=xs, y=y_thr, tooltip=[alt.Tooltip("x:Q", title="baseline " + x_title), "throughput:Q"])
    )
    lat = (
        alt.Chart(_data("curve"))
        .mark_line(point=True, color="#f58518", strokeDash=[4, 2])
        .encode(x=xs, y=alt.Y("p99_ms:Q", title=f"{latency_title} (dashed)", scale=alt.Scale(type="log")))
    )
    slo = alt.Chart(_data("slo")).mark_rule(color="#d62728").encode(y="p99_ms:Q")
    slo_text = (
        alt.Chart(_data("slo"))
        .mark_text(align="left", dy=-6, color="#d62728")
        .encode(y="p99_ms:Q", x=alt.value(2), text="label:N")
    )
    now = (
        alt.Chart(_data("current"))
        .mark_point(size=160, filled=True, color="#e45756", stroke="white", strokeWidth=1)
        .encode(
            x=xs,
            y="throughput:Q",
            tooltip=[alt.Tooltip("x:Q", title=x_title), alt.Tooltip("throughput:Q", format=",.1f")],
        )
    )
    base_now = (
        alt.Chart(_data("base_current"))
        .mark_point(size=140, filled=False, color=MUTED, strokeWidth=2)
        .encode(x=xs, y="throughput:Q", tooltip=[alt.Tooltip("throughput:Q", title="baseline", format=",.1f")])
    )
    chart = alt.layer(base_thr + thr + base_now + now, lat + slo + slo_text).resolve_scale(y="independent")
    return _spec(
        chart.properties(
            width=WIDTH, height=150, title=_title(f"Throughput and p99 against {x_title}", "red dot: the current value")
        )
    )


def curve(
    points: list[dict],
    x_title: str,
    unit: str,
    current: dict | None = None,
    slo_ms: float | None = None,
    latency_title: str = "p99 latency (ms)",
    base_points: list[dict] | None = None,
    base_current: dict | None = None,
) -> Chart:
    """points: [{"x", "throughput", "p99_ms"}]; the current point and the latency budget are drawn when given,
    and a pinned baseline's curve and point, muted."""
    xs = [p["x"] for p in points if p["x"] is not None]
    log_x = len(xs) > 2 and min(xs) > 0 and max(xs) / min(xs) >= 16
    rows = [dict(p, p99_ms=max(p["p99_ms"], 1e-3)) for p in points if p.get("p99_ms") is not None]
    data = {
        "curve": rows,
        "current": [current] if current else [],
        "slo": [{"p99_ms": float(slo_ms), "label": f"budget {slo_ms:g} ms"}] if slo_ms else [],
        "base_curve": [p for p in base_points or [] if p.get("p99_ms") is not None],
        "base_current": [base_current] if base_current else [],
    }
    return Chart("curve", _curve_template(x_title, log_x, unit, latency_title), data)


@functools.cache
def _roofline_template() -> dict:
    x = alt.X(
        "intensity:Q",
        scale=alt.Scale(type="log"),
        title="arithmetic intensity (FLOP / byte)",
        axis=alt.Axis(grid=False, tickCount=6),
    )
    y = alt.Y(
        "flops_s:Q",
        scale=alt.Scale(type="log"),
        title="achieved FLOP/s",
        axis=alt.Axis(format="~s", grid=False, tickCount=6),
    )
    roof = alt.Chart(_data("roof")).mark_line(color=MID).encode(x=x, y=y, detail="roof:N")
    pinned = (
        alt.Chart(_data("base_ops"))
        .mark_point(color=MUTED, opacity=0.6, filled=False, size=30)
        .encode(x=x, y=y, tooltip=[alt.Tooltip("name:N", title="baseline")])
    )
    ops = (
        alt.Chart(_data("ops"))
        .mark_circle(opacity=0.75)
        .encode(
            x=x,
            y=y,
            size=alt.Size("time_ms:Q", legend=None, scale=alt.Scale(range=[20, 400])),
            color=alt.Color(
                "bound:N",
                scale=alt.Scale(domain=["compute", "memory"], range=["#4c78a8", "#72b7b2"]),
                legend=alt.Legend(orient="bottom", title="bound by"),
            ),
            tooltip=[
                alt.Tooltip("name:N"),
                alt.Tooltip("class:N"),
                alt.Tooltip("time_ms:Q", format=".3f"),
                alt.Tooltip("intensity:Q", format=".1f"),
                alt.Tooltip("flops_s:Q", format=".3s"),
                alt.Tooltip("occupancy:Q", format=".0%"),
            ],
        )
    )
    return _spec(
        (roof + ops + pinned).properties(
            width=WIDTH, height=170, title=_title("Roofline", "each operator against the compute and memory roofs")
        )
    )


def _ops(r) -> list[dict]:
    return [
        {
            "name": o["name"],
            "class": o["class"],
            "time_ms": o["time_ms"],
            "bound": o["bound"],
            "occupancy": o.get("occupancy", 1.0),
            "intensity": o["flops"] / o["bytes"],
            "flops_s": o["flops"] / (o["time_ms"] / 1e3),
        }
        for o in r.details.get("ops", [])
        if o["flops"] > 0 and o["bytes"] > 0 and o["time_ms"] > 0
    ]


def roofline(r, base=None) -> Chart:
    roof = r.details.get("roof", {})
    peak, bw = roof.get("peak_flops_s", 0.0), roof.get("bandwidth_bytes_s", 0.0)
    ops = _ops(r)
    lines = []
    if peak and bw:
        lo = min([o["intensity"] for o in ops] + [0.1]) / 2
        hi = max([o["intensity"] for o in ops] + [10 * peak / bw]) * 2
        ridge = peak / bw
        for ai in (lo, ridge, hi):
            lines.append({"roof": "roof", "intensity": ai, "flops_s": min(peak, bw * ai)})
    pinned = [{k: o[k] for k in ("name", "intensity", "flops_s")} for o in _ops(base)] if base else []
    return Chart("roofline", _roofline_template(), {"roof": lines, "ops": ops, "base_ops": pinned})


@functools.cache
def _timeline_template() -> dict:
    chart = (
        alt.Chart(_data("spans"))
        .mark_bar()
        .encode(
            x=alt.X("start_ms:Q", title="time (ms)", axis=alt.Axis(tickCount=5)),
            x2="end_ms:Q",
            y=alt.Y("track:N", sort=alt.SortField("order"), title=None),
            color=alt.Color("what:N", legend=alt.Legend(orient="bottom", title=None, columns=4)),
            tooltip=[
                alt.Tooltip("track:N"),
                alt.Tooltip("what:N"),
                alt.Tooltip("batch:Q", title="first batch"),
                alt.Tooltip("spans:Q", title="spans merged"),
                alt.Tooltip("start_ms:Q", format=".3f"),
                alt.Tooltip("dur_ms:Q", format=".3f"),
            ],
        )
    )
    return _spec(
        chart.properties(
            width=WIDTH,
            height=170,
            title=_title("Timeline of the last steps", "where the GPU waits, as Nsight shows it"),
        )
    )


def _row_of(track: str, workers: int) -> str:
    """The timeline row a track is drawn in: loader workers in groups when they would not fit one per row."""
    parts = track.split(" ")
    if parts[0] != "worker" or workers <= MAX_TRACKS - 3 or len(parts) < 2 or not parts[1].isdigit():
        return track
    size = math.ceil(workers / (MAX_TRACKS - 3))
    lo = int(parts[1]) // size * size
    hi = min(lo + size, workers) - 1
    return f"workers {lo}-{hi}" if hi > lo else f"worker {lo}"


def _row_key(row: str):
    if row.startswith("workers "):  # a group of loader workers, "workers 3-5": by its first worker
        return track_key("worker " + row.split(" ")[1].split("-")[0])
    return track_key(row)


def timeline(r, steps: int = 4, width_px: int = WIDTH) -> Chart:
    """The last few GPU steps (or batches) and everything that overlapped them, aggregated to what the chart can
    show: at most MAX_TRACKS rows (loader workers in groups), and spans of one kind closer than a pixel merged."""
    spans = r.timeline
    gpu = [t for t in spans if t[0].startswith("gpu")]
    rows = []
    if gpu:
        lo, hi = gpu[-min(steps, len(gpu))][2], gpu[-1][3]
        pad = 0.15 * (hi - lo)
        lo -= pad
        px = (hi - lo) / max(width_px, 1)
        chosen = [t for t in spans if t[3] > lo and t[2] < hi]
        ids = {int(t[0][7:]) for t in spans if t[0].startswith("worker ") and t[0][7:].isdigit()}
        workers = max(ids) + 1 if ids else 0
        merged: dict[tuple, list] = {}  # (row, what) -> [[start, end, first batch, count], ...]
        for track, what, a, b, batch in sorted(chosen, key=lambda t: t[2]):
            a, b = max(float(a), lo), min(float(b), hi)
            runs = merged.setdefault((_row_of(track, workers), what), [])
            if runs and a - runs[-1][1] < px:
                runs[-1][1] = max(runs[-1][1], b)
                runs[-1][3] += 1
            else:
                runs.append([a, b, int(batch), 1])
        rank = {name: i for i, name in enumerate(sorted({k[0] for k in merged}, key=_row_key))}
        for (row, what), runs in merged.items():
            for a, b, batch, n in runs:
                rows.append(
                    {
                        "track": row,
                        "what": what,
                        "start_ms": (a - lo) * 1e3,
                        "end_ms": (b - lo) * 1e3,
                        "dur_ms": (b - a) * 1e3,
                        "batch": batch,
                        "spans": n,
                        "order": rank[row],
                    }
                )
        rows.sort(key=lambda x: (x["order"], x["start_ms"]))
    return Chart("timeline", _timeline_template(), {"spans": rows})


def batch_points(results, field: str) -> list[dict]:
    return [
        {
            "x": r.scenario[field] if r.scenario[field] is not None else r.details.get("batch_size"),
            "throughput": r.throughput,
            "p99_ms": r.latency_ms["p99"] if not r.memory["oom"] else None,
        }
        for r in results
    ]


def all_charts(r, curve_chart: Chart | None = None, base=None) -> dict[str, Chart]:
    """Every chart of a result; base: a pinned baseline Result drawn muted beneath (the timeline has none)."""
    out = {
        "utilization": utilization(r, base),
        "gpu_time": gpu_time(r, base),
        "memory": memory(r, base),
        "roofline": roofline(r, base),
        "timeline": timeline(r),
    }
    if curve_chart is not None:
        out["curve"] = curve_chart
    return out


def curve_points(s) -> tuple:
    """Throughput and p99 of the estimate at powers of two of the kind's batch field, up to the first size that
    does not fit in memory (cached: a pinned baseline's curve is drawn again on every change; per catalogue
    generation, as a scenario names its entries and an entry added again changes their figures)."""
    from ..core import catalog

    return _curve_points(s, catalog.generation())


@functools.lru_cache(maxsize=64)
def _curve_points(s, generation: int) -> tuple:
    from ..api import estimate

    field = s.traits.batch_field
    points = []
    for b in (b for b in POW2 if b <= s.traits.largest_batch):
        e = estimate(s.replace(**{field: b}), suggest=False)
        if e.memory["oom"]:
            break
        points.append({"x": b, "throughput": e.throughput, "p99_ms": e.latency_ms["p99"]})
    return tuple(points)


def _current_point(s, r) -> dict | None:
    field = s.traits.batch_field
    return (
        None
        if r.memory["oom"]
        else {"x": r.details.get(field), "throughput": r.throughput, "p99_ms": r.latency_ms["p99"]}
    )


def batch_curve(s, r, base_s=None, base=None) -> Chart:
    """Throughput and p99 latency against the kind's batch field (batch_size, max_batch_size, concurrency), from
    the estimate at powers of two up to the first out-of-memory size, with the current point and the budget; a
    pinned baseline (its scenario and result) of the same kind is drawn muted."""
    from ..core.scenario import FIELDS

    field = s.traits.batch_field
    points = [dict(p) for p in curve_points(s)]
    per = {"serving": "request p99 (ms)", "llm": "time per token p99 (ms)"}.get(s.kind, "step p99 (ms)")
    same = base_s is not None and base is not None and base_s.traits.batch_field == field
    return curve(
        points,
        FIELDS[field].label.lower() if field in FIELDS else field,
        r.throughput_unit,
        _current_point(s, r),
        s.latency_slo_ms,
        per,
        base_points=[dict(p) for p in curve_points(base_s)] if same else None,
        base_current=_current_point(base_s, base) if same else None,
    )


def _theme_free(spec: dict) -> dict:
    """A spec for a client that themes charts itself (the JupyterLab sidebar merges JupyterLab's colours under the
    spec's config): no colours in the config and no embed options, so its theme decides."""
    dropped = ("color", "font", "labellimit")
    config = {
        k: ({kk: vv for kk, vv in v.items() if not any(d in kk.lower() for d in dropped)} if isinstance(v, dict) else v)
        for k, v in spec.get("config", {}).items()
        if k != "font"
    }
    out = {k: v for k, v in spec.items() if k != "usermeta"}
    out["config"] = config
    return out


def panel_specs(s, r) -> dict[str, dict]:
    """The Vega-Lite specs of every chart the what-if panels show, for the JupyterLab sidebar (which overlays its
    own baseline and applies the theme's colours): no baseline drawn, no colours in the config."""
    return {name: _theme_free(c.to_dict()) for name, c in all_charts(r, batch_curve(s, r)).items()}
