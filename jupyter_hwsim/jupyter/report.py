"""A Result as HTML: the read-outs the panel shows and the static report `%hwsim run` prints (a handout that
survives nbconvert: plain HTML plus charts with an SVG beside their interactive spec)."""

from __future__ import annotations

import base64
import html
import json

BADGE = {
    "io": "#e45756",
    "cpu": "#ff9da6",
    "host_link": "#b279a2",
    "memory_bw": "#72b7b2",
    "compute": "#4c78a8",
    "overhead": "#f58518",
    "arrivals": "#54a24b",
    "memory_capacity": "#d62728",
}

# The panel's look, in JupyterLab's own CSS variables (light and dark themes, and a theme change without a
# redraw): the charts are SVG (charts.EMBED), so their text takes the theme's font colours from here.
PANEL_CSS = """<style>
.hwsim-whatif .vega-embed svg .role-axis-label text, .hwsim-whatif .vega-embed svg .role-axis-title text,
.hwsim-whatif .vega-embed svg .role-legend-label text, .hwsim-whatif .vega-embed svg .role-legend-title text,
.hwsim-whatif .vega-embed svg .role-title-text text, .hwsim-whatif .vega-embed svg .hwsim_values_marks text
  { fill: var(--jp-ui-font-color1, #333); }
.hwsim-whatif .vega-embed svg .role-title-subtitle text { fill: var(--jp-ui-font-color2, #666); }
.hwsim-whatif .vega-embed svg .role-axis-domain line, .hwsim-whatif .vega-embed svg .role-axis-tick line
  { stroke: var(--jp-ui-font-color2, #666); }
.hwsim-whatif .hwsim-numbers td { padding: 1px 8px 1px 0; vertical-align: top; line-height: 1.35; }
.hwsim-whatif .hwsim-gap, .hwsim-whatif .hwsim-bottleneck { line-height: 1.35; }
.hwsim-whatif .hwsim-numbers td:first-child { color: var(--jp-ui-font-color2, #666); white-space: nowrap; }
.hwsim-whatif .hwsim-status, .hwsim-whatif .hwsim-why { color: var(--jp-ui-font-color2, #666); }
.hwsim-whatif .hwsim-error { color: var(--jp-error-color1, #d32f2f); font-size: 12px; }
.hwsim-whatif .hwsim-row-error { margin-left: 184px; max-width: 200px; }
.hwsim-whatif .hwsim-delta { font-size: 12px; margin-left: 4px; white-space: nowrap; }
.hwsim-whatif .hwsim-better { color: var(--jp-success-color1, #388e3c); }
.hwsim-whatif .hwsim-worse { color: var(--jp-error-color1, #d32f2f); }
.hwsim-whatif .hwsim-same { color: var(--jp-ui-font-color2, #666); }
.hwsim-whatif .hwsim-faint { opacity: 0.65; }
.hwsim-whatif .hwsim-sugg { line-height: 1.3; }
.hwsim-whatif .hwsim-downloads a, .hwsim-whatif .hwsim-chart-files a
  { color: var(--jp-content-link-color, #1976d2); text-decoration: underline; }
</style>"""

METRIC_HELP_TEXT = {
    "throughput": "work done per second, over the measured window",
    "latency": "time per step (training, inference), per request (serving) or per output token (llm): "
    "the median (p50) and the 99th percentile",
    "gpu": "busy: share of time any kernel runs (what nvidia-smi shows); MFU: achieved FLOP/s over the chip's "
    "peak at this precision; HBM: achieved memory bandwidth over its peak",
    "memory": "device memory the run needs (weights, gradients, optimizer state, activations, KV cache) "
    "against the GPU's capacity",
    "ttft": "time to first token: queueing plus prefill of the prompt",
    "goodput": "requests served within the latency target, per second",
    "cost": "board power (idle plus the busy share of the limit), energy and cost per million units at the "
    "GPU's dated on-demand price per hour (price_per_hour_usd sets your own), CO2e at grid_gco2_per_kwh",
    "accuracy": "the range around the prediction that held 8 in 10 published measurements of this class "
    "(workload family, engine, measure), leave-one-source-out (docs/validation.md)",
}


METRIC_HELP = {k: html.escape(v, quote=True) for k, v in METRIC_HELP_TEXT.items()}


def delta_html(now, then, higher_is_better: bool | None = True) -> str:
    """A number's change against the pinned baseline: an arrow and the ratio (1.49x), green when better."""
    if then is None or now is None or not then or then != then or now != now:
        return ""
    ratio = now / then
    if abs(ratio - 1) < 0.005:
        return f"<span class='hwsim-delta hwsim-same' title='baseline {then:,.4g}'>= baseline</span>"
    arrow = "&#9650;" if ratio > 1 else "&#9660;"
    tone = "same" if higher_is_better is None else ("better" if (ratio > 1) == higher_is_better else "worse")
    return f"<span class='hwsim-delta hwsim-{tone}' title='baseline {then:,.4g}'>{arrow} {ratio:.2f}x</span>"


def numbers_html(r, base=None) -> str:
    """The read-outs: throughput, latency, GPU busy beside MFU (and the gap), memory against capacity; each with
    its change against a pinned baseline result when one is given."""
    u, lat, mem = r.utilization, r.latency_ms, r.memory
    per = {"requests/s": "per request", "tokens/s": "per output token"}.get(r.throughput_unit, "per step")
    busy, mfu = u["gpu_busy"], u["gpu_mfu"]

    def d(key, now, hib=True):
        if base is None:
            return ""
        return delta_html(now, key(base), hib)

    gap = ""
    if busy - mfu > 0.2:
        gap = (
            f"<div class='hwsim-gap'>The GPU is busy {busy:.0%} of the time but does useful math at {mfu:.0%} of "
            "its peak: busy counts any kernel running, however little of the chip it uses or however long it "
            "waits on memory.</div>"
        )
    bar = min(1.0, mem["total_gb"] / mem["capacity_gb"]) if mem["capacity_gb"] else 0.0
    mem_color = "#d62728" if mem["oom"] else "#4c78a8"
    extra = ""
    if r.ttft_ms is not None:
        extra = (
            f"<tr><td title='{METRIC_HELP['ttft']}'>time to first token</td><td>p50 {r.ttft_ms['p50']:,.1f} ms"
            f"{d(lambda b: (b.ttft_ms or {}).get('p50'), r.ttft_ms['p50'], False)}</td></tr>"
            f"<tr><td>per stream</td><td>{r.tokens_per_s_per_stream or 0:,.1f} tokens/s "
            f"(fits {r.max_concurrency} sequences)"
            f"{d(lambda b: b.tokens_per_s_per_stream, r.tokens_per_s_per_stream)}</td></tr>"
        )
    if r.goodput is not None:
        extra += (
            f"<tr><td title='{METRIC_HELP['goodput']}'>goodput</td><td>{r.goodput:,.1f} requests/s within "
            f"{r.scenario['latency_slo_ms']:g} ms{d(lambda b: b.goodput, r.goodput)}</td></tr>"
        )
    one = r.throughput_unit.split("/")[0].rstrip("s")
    if r.power_w is not None:
        cost = f"{r.power_w:,.0f} W &nbsp;|&nbsp; {r.energy_j_per_unit or 0:.3g} J per {one}"
        if r.cost_usd_per_million is not None:
            cost += (
                f" &nbsp;|&nbsp; ${r.cost_usd_per_million:,.3g} per million"
                f"{d(lambda b: b.cost_usd_per_million, r.cost_usd_per_million, False)}"
            )
        extra += f"<tr><td title='{METRIC_HELP['cost']}'>power and cost</td><td class='hwsim-cost'>{cost}</td></tr>"
    a = r.accuracy
    if a:
        trust = (
            f"likely {a['low']:,.4g}-{a['high']:,.4g} {r.throughput_unit} (median error {a['median_abs_error']:.0%}, "
            f"{a['n']} published rows)"
            if a["status"] == "validated"
            else f"not validated ({a['n']} published rows of its class)"
        )
        extra += f"<tr><td title='{METRIC_HELP['accuracy']}'>how far to trust it</td><td class='hwsim-accuracy'>{trust}</td></tr>"
    pinned = " <span class='hwsim-why'>(arrows: against the pinned baseline)</span>" if base is not None else ""
    return (
        "<table class='hwsim-numbers'>"
        f"<tr><td title='{METRIC_HELP['throughput']}'>throughput</td><td class='hwsim-throughput'>"
        f"<b>{r.throughput:,.1f}</b> {r.throughput_unit}{d(lambda b: b.throughput, r.throughput)}{pinned}</td></tr>"
        f"<tr><td title='{METRIC_HELP['latency']}'>latency {per}</td><td class='hwsim-latency'>"
        f"p50 {lat['p50']:,.2f} ms{d(lambda b: b.latency_ms['p50'], lat['p50'], False)} &nbsp; "
        f"p99 {lat['p99']:,.2f} ms{d(lambda b: b.latency_ms['p99'], lat['p99'], False)}</td></tr>"
        f"<tr><td title='{METRIC_HELP['gpu']}'>GPU</td><td class='hwsim-busy-mfu'>busy <b>{busy:.0%}</b>"
        f"{d(lambda b: b.utilization['gpu_busy'], busy, None)} &nbsp;|&nbsp; MFU <b>{mfu:.1%}</b>"
        f"{d(lambda b: b.utilization['gpu_mfu'], mfu)} &nbsp;|&nbsp; HBM {u['hbm_bw']:.0%}</td></tr>"
        f"<tr><td title='{METRIC_HELP['memory']}'>memory</td><td class='hwsim-memory'>{mem['total_gb']:,.1f} of "
        f"{mem['capacity_gb']:,.0f} GB{d(lambda b: b.memory['total_gb'], mem['total_gb'], False)}"
        f"{' <b>OUT OF MEMORY</b>' if mem['oom'] else ''}"
        f"<div style='height:6px;background:var(--jp-layout-color3,#ddd);width:220px'>"
        f"<div style='height:6px;width:{bar * 220:.0f}px;background:{mem_color}'></div></div></td></tr>"
        f"{extra}</table>{gap}"
    )


def download_link(filename: str, mime: str, data: bytes, text: str, css_class: str = "hwsim-download") -> str:
    """A link that downloads `data` as `filename` (a data: URI: no server, works offline)."""
    b64 = base64.b64encode(data).decode()
    return (
        f"<a class='{css_class}' download='{html.escape(filename)}' href='data:{mime};base64,{b64}'>"
        f"{html.escape(text)}</a>"
    )


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: the same escapes
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items() if x is not None) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def scenario_toml(s) -> str:
    """A scenario as a TOML file `%%hwsim`, `python -m jupyter_hwsim run FILE` and Scenario.from_dict read back:
    the fields that differ from the defaults (unset fields take the catalogue's values)."""
    from ..core.scenario import Scenario

    d, default = s.to_dict(), Scenario(kind=s.kind).to_dict()
    lines = ["# a jupyter-hwsim scenario: python -m jupyter_hwsim run this.toml"]
    for k, v in d.items():
        if v is None or (v == default.get(k) and k not in ("kind", "workload", "gpu")):
            continue
        lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def bottleneck_html(r) -> str:
    color = BADGE.get(r.bottleneck, "#777")
    return (
        f"<div class='hwsim-bottleneck'><span class='hwsim-badge' style='background:{color};color:white;"
        f"padding:2px 8px;border-radius:10px;font-weight:bold'>{html.escape(r.bottleneck)}</span> "
        f"{html.escape(r.explanation)}</div>"
    )


def suggestions_html(r) -> str:
    if not r.suggestions:
        return ""
    rows = []
    for s in r.suggestions:
        sp = s.get("speedup")
        val = f"{sp:.2f}x" if sp is not None else ("fits" if s.get("fits") else "-")
        rows.append(
            f"<tr><td><code>{html.escape(s['change'])}</code></td><td>{val}</td>"
            f"<td>{html.escape(s.get('why', ''))}</td></tr>"
        )
    metric = r.suggestions[0].get("metric", "throughput")
    return (
        f"<div><b>What would help</b> (each change re-simulated; speed-up of {metric})</div>"
        "<table class='hwsim-suggestions'>" + "".join(rows) + "</table>"
    )


def result_html(r) -> str:
    """The whole static summary of one result."""
    s = r.scenario
    title = (
        f"{s['workload'] if isinstance(s['workload'], str) else 'custom model'} on "
        f"{s['gpu'] if isinstance(s['gpu'], str) else 'custom device'}: {s['kind']} ({r.method})"
    )
    warn = "".join(f"<div class='hwsim-warning'>warning: {html.escape(w)}</div>" for w in r.warnings)
    return (
        f"<div class='hwsim-report'><h4>{html.escape(title)}</h4>{numbers_html(r)}{bottleneck_html(r)}"
        f"{warn}{suggestions_html(r)}</div>"
    )


def table_html(results, keys: list[str]) -> str:
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    unit = results[0].throughput_unit if results else ""
    rows = []
    for r in results:
        vals = "".join(f"<td>{html.escape(str(r.scenario[k]))}</td>" for k in keys)
        lat = "out of memory" if r.memory["oom"] else f"{r.latency_ms['p50']:,.2f} / {r.latency_ms['p99']:,.2f}"
        rows.append(f"<tr>{vals}<td>{r.throughput:,.1f}</td><td>{lat}</td><td>{r.bottleneck}</td></tr>")
    return (
        f"<table class='hwsim-sweep'><tr>{head}<th>throughput ({unit})</th><th>p50 / p99 ms</th>"
        f"<th>bottleneck</th></tr>" + "".join(rows) + "</table>"
    )
