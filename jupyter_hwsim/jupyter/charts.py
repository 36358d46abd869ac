"""Altair charts of a Result, rendered offline.

Each chart's design is an Altair spec over named data sets, built once (Altair's
to_dict costs ~10 ms); a chart is that template plus this result's rows, so a panel
redraws in microseconds of Python. Display bundles carry the spec under
JupyterLab's own Vega-Lite 5 MIME type (rendered by JupyterLab 4 and Notebook 7
with the vega they ship: no CDN) and, when static, an SVG from vl-convert that
nbconvert's HTML export and other viewers show.
"""

from __future__ import annotations

import functools

import altair as alt

from ..core.result import track_key

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
SCHEMA_V5 = "https://vega.github.io/schema/vega-lite/v5.json"
VL_VERSION = "5.21"  # the Vega-Lite that JupyterLab 4 renders; the SVG is made with the same
WIDTH = 260
POW2 = [2**k for k in range(13)]  # batch sizes a curve tries: 1 .. 4096

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


def svg(spec: dict) -> str:
    import vl_convert

    return vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION)


def _spec(chart) -> dict:
    spec = chart.to_dict(validate=True)
    spec["$schema"] = SCHEMA_V5
    spec.pop("datasets", None)
    return spec


def _data(name: str):
    return alt.NamedData(name=name)


@functools.cache
def _utilization_template() -> dict:
    base = alt.Chart(_data("rows")).encode(
        y=alt.Y("label:N", sort=None, title=None),
        x=alt.X("value:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="busy fraction"),
    )
    bars = base.mark_bar().encode(
        color=alt.Color(
            "group:N",
            scale=alt.Scale(domain=["pipeline", "GPU busy", "GPU useful"], range=["#9ecae9", "#f58518", "#4c78a8"]),
            legend=None,
        ),
        tooltip=[alt.Tooltip("label:N", title="resource"), alt.Tooltip("value:Q", format=".1%")],
    )
    text = base.mark_text(align="left", dx=3).encode(text=alt.Text("value:Q", format=".0%"))
    return _spec((bars + text).properties(width=WIDTH, title="Utilization per resource"))


def utilization(r) -> Chart:
    groups = {"gpu_busy": "GPU busy", "gpu_mfu": "GPU useful", "hbm_bw": "GPU useful"}
    rows = [
        {"key": k, "label": UTIL_LABELS[k], "value": float(r.utilization[k]), "group": groups.get(k, "pipeline")}
        for k in UTIL_LABELS
    ]
    return Chart("utilization", _utilization_template(), {"rows": rows})


@functools.cache
def _gpu_time_template() -> dict:
    chart = (
        alt.Chart(_data("rows"))
        .mark_bar()
        .encode(
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
                legend=alt.Legend(orient="bottom", columns=4, title=None),
            ),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("cause:N"), alt.Tooltip("fraction:Q", format=".1%")],
        )
    )
    return _spec(chart.properties(width=WIDTH, height=40, title="Where the GPU's time goes"))


def gpu_time(r) -> Chart:
    rows = [
        {"cause": k, "fraction": float(r.gpu_time.get(k, 0.0)), "order": i}
        for i, k in enumerate(GPU_TIME_COLORS)
        if r.gpu_time.get(k, 0.0) > 0
    ]
    return Chart("gpu_time", _gpu_time_template(), {"rows": rows})


@functools.cache
def _memory_template() -> dict:
    bars = (
        alt.Chart(_data("parts"))
        .mark_bar()
        .encode(
            x=alt.X("gb:Q", stack="zero", title="GB"),
            color=alt.Color("part:N", legend=alt.Legend(orient="bottom", columns=3, title=None)),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("part:N"), alt.Tooltip("gb:Q", format=".2f")],
        )
    )
    cap = (
        alt.Chart(_data("capacity"))
        .mark_rule(color="#d62728", strokeWidth=2)
        .encode(x="gb:Q", tooltip=[alt.Tooltip("label:N", title="capacity"), alt.Tooltip("gb:Q", format=".0f")])
    )
    return _spec((bars + cap).properties(width=WIDTH, height=40, title="Device memory against capacity"))


def memory(r) -> Chart:
    mem = r.memory
    parts = [
        {"part": k[:-3].replace("_", " "), "gb": float(mem.get(k, 0.0)), "order": i}
        for i, k in enumerate(MEMORY_PARTS)
        if mem.get(k, 0.0) > 0
    ]
    cap = [{"gb": float(mem["capacity_gb"]), "label": f"{mem['capacity_gb']:g} GB"}]
    return Chart("memory", _memory_template(), {"parts": parts, "capacity": cap})


@functools.cache
def _curve_template(x_title: str, log_x: bool, unit: str, latency_title: str) -> dict:
    xs = alt.X("x:Q", title=x_title, scale=alt.Scale(type="log", base=2) if log_x else alt.Scale())
    thr = (
        alt.Chart(_data("curve"))
        .mark_line(point=True, color="#4c78a8")
        .encode(
            x=xs,
            y=alt.Y("throughput:Q", title=unit, axis=alt.Axis(titleColor="#4c78a8")),
            tooltip=[
                alt.Tooltip("x:Q", title=x_title),
                alt.Tooltip("throughput:Q", format=",.1f"),
                alt.Tooltip("p99_ms:Q", format=",.2f"),
            ],
        )
    )
    lat = (
        alt.Chart(_data("curve"))
        .mark_line(point=True, color="#f58518", strokeDash=[4, 2])
        .encode(
            x=xs,
            y=alt.Y("p99_ms:Q", title=latency_title, scale=alt.Scale(type="log"), axis=alt.Axis(titleColor="#f58518")),
        )
    )
    slo = alt.Chart(_data("slo")).mark_rule(color="#d62728").encode(y="p99_ms:Q")
    slo_text = (
        alt.Chart(_data("slo"))
        .mark_text(align="left", dy=-6, color="#d62728")
        .encode(y="p99_ms:Q", x=alt.value(2), text="label:N")
    )
    now = (
        alt.Chart(_data("current"))
        .mark_point(size=160, filled=True, color="#000000")
        .encode(
            x=xs,
            y="throughput:Q",
            tooltip=[alt.Tooltip("x:Q", title=x_title), alt.Tooltip("throughput:Q", format=",.1f")],
        )
    )
    chart = alt.layer(thr + now, lat + slo + slo_text).resolve_scale(y="independent")
    return _spec(chart.properties(width=WIDTH, title=f"Throughput and p99 latency against {x_title}"))


def curve(
    points: list[dict],
    x_title: str,
    unit: str,
    current: dict | None = None,
    slo_ms: float | None = None,
    latency_title: str = "p99 latency (ms)",
) -> Chart:
    """points: [{"x", "throughput", "p99_ms"}]; the current point and the latency budget are drawn when given."""
    xs = [p["x"] for p in points if p["x"] is not None]
    log_x = len(xs) > 2 and min(xs) > 0 and max(xs) / min(xs) >= 16
    rows = [dict(p, p99_ms=max(p["p99_ms"], 1e-3)) for p in points if p.get("p99_ms") is not None]
    data = {
        "curve": rows,
        "current": [current] if current else [],
        "slo": [{"p99_ms": float(slo_ms), "label": f"budget {slo_ms:g} ms"}] if slo_ms else [],
    }
    return Chart("curve", _curve_template(x_title, log_x, unit, latency_title), data)


@functools.cache
def _roofline_template() -> dict:
    x = alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (FLOP / byte)")
    y = alt.Y("flops_s:Q", scale=alt.Scale(type="log"), title="achieved FLOP/s", axis=alt.Axis(format="~s"))
    roof = alt.Chart(_data("roof")).mark_line(color="#7f7f7f").encode(x=x, y=y, detail="roof:N")
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
    return _spec((roof + ops).properties(width=WIDTH, title="Roofline: each operator against the two roofs"))


def roofline(r) -> Chart:
    roof = r.details.get("roof", {})
    peak, bw = roof.get("peak_flops_s", 0.0), roof.get("bandwidth_bytes_s", 0.0)
    ops = [
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
    lines = []
    if peak and bw:
        lo = min([o["intensity"] for o in ops] + [0.1]) / 2
        hi = max([o["intensity"] for o in ops] + [10 * peak / bw]) * 2
        ridge = peak / bw
        for ai in (lo, ridge, hi):
            lines.append({"roof": "roof", "intensity": ai, "flops_s": min(peak, bw * ai)})
    return Chart("roofline", _roofline_template(), {"roof": lines, "ops": ops})


@functools.cache
def _timeline_template() -> dict:
    chart = (
        alt.Chart(_data("spans"))
        .mark_bar(height=14)
        .encode(
            x=alt.X("start_ms:Q", title="time (ms)"),
            x2="end_ms:Q",
            y=alt.Y("track:N", sort=alt.SortField("order"), title=None),
            color=alt.Color("what:N", legend=alt.Legend(orient="bottom", title=None)),
            tooltip=[
                alt.Tooltip("track:N"),
                alt.Tooltip("what:N"),
                alt.Tooltip("batch:Q"),
                alt.Tooltip("start_ms:Q", format=".3f"),
                alt.Tooltip("dur_ms:Q", format=".3f"),
            ],
        )
    )
    return _spec(chart.properties(width=WIDTH, title="Timeline of the last steps: where the GPU waits"))


def timeline(r, steps: int = 4, max_spans: int = 400) -> Chart:
    """The last few GPU steps (or batches) and everything that overlapped them."""
    spans = r.timeline
    gpu = [t for t in spans if t[0].startswith("gpu")]
    rows = []
    if gpu:
        lo, hi = gpu[-min(steps, len(gpu))][2], gpu[-1][3]
        pad = 0.15 * (hi - lo)
        lo -= pad
        chosen = [t for t in spans if t[3] > lo and t[2] < hi][-max_spans:]
        rank = {name: i for i, name in enumerate(sorted({t[0] for t in chosen}, key=track_key))}
        for track, what, a, b, batch in chosen:
            rows.append(
                {
                    "track": track,
                    "what": what,
                    "start_ms": (max(a, lo) - lo) * 1e3,
                    "end_ms": (min(b, hi) - lo) * 1e3,
                    "dur_ms": (b - a) * 1e3,
                    "batch": int(batch),
                    "order": rank[track],
                }
            )
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


def all_charts(r, curve_chart: Chart | None = None) -> dict[str, Chart]:
    out = {
        "utilization": utilization(r),
        "gpu_time": gpu_time(r),
        "memory": memory(r),
        "roofline": roofline(r),
        "timeline": timeline(r),
    }
    if curve_chart is not None:
        out["curve"] = curve_chart
    return out


def batch_curve(s, r) -> Chart:
    """Throughput and p99 latency against the kind's batch field (batch_size, max_batch_size, concurrency), from
    the estimate at powers of two up to the first out-of-memory size, with the current point and the budget."""
    from ..api import estimate

    field = s.traits.batch_field
    sizes = [b for b in POW2 if b <= s.traits.largest_batch]
    points = []
    for b in sizes:
        e = estimate(s.replace(**{field: b}), suggest=False)
        if e.memory["oom"]:
            break
        points.append({"x": b, "throughput": e.throughput, "p99_ms": e.latency_ms["p99"]})
    current = (
        None
        if r.memory["oom"]
        else {"x": r.details.get(field), "throughput": r.throughput, "p99_ms": r.latency_ms["p99"]}
    )
    per = {"serving": "request p99 (ms)", "llm": "time per token p99 (ms)"}.get(s.kind, "step p99 (ms)")
    return curve(points, field, r.throughput_unit, current, s.latency_slo_ms, per)


def panel_specs(s, r) -> dict[str, dict]:
    """The Vega-Lite specs of every chart the what-if panels show (the notebook's and the sidebar's)."""
    return {name: c.to_dict() for name, c in all_charts(r, batch_curve(s, r)).items()}
