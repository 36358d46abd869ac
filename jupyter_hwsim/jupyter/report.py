"""A Result as HTML: the read-outs the panel shows and the static report `%hwsim run` prints (a handout that
survives nbconvert: plain HTML plus charts with an SVG beside their interactive spec)."""

from __future__ import annotations

import html

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


def numbers_html(r) -> str:
    """The read-outs: throughput, latency, GPU busy beside MFU (and the gap), memory against capacity."""
    u, lat, mem = r.utilization, r.latency_ms, r.memory
    per = {"requests/s": "per request", "tokens/s": "per output token"}.get(r.throughput_unit, "per step")
    busy, mfu = u["gpu_busy"], u["gpu_mfu"]
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
            f"<tr><td>first token</td><td>p50 {r.ttft_ms['p50']:,.1f} ms</td></tr>"
            f"<tr><td>per stream</td><td>{r.tokens_per_s_per_stream or 0:,.1f} tokens/s "
            f"(fits {r.max_concurrency} sequences)</td></tr>"
        )
    if r.goodput is not None:
        extra += (
            f"<tr><td>goodput</td><td>{r.goodput:,.1f} requests/s within {r.scenario['latency_slo_ms']:g} ms</td></tr>"
        )
    return (
        "<table class='hwsim-numbers'>"
        f"<tr><td>throughput</td><td class='hwsim-throughput'><b>{r.throughput:,.1f}</b> {r.throughput_unit}</td></tr>"
        f"<tr><td>latency {per}</td><td class='hwsim-latency'>p50 {lat['p50']:,.2f} ms &nbsp; "
        f"p99 {lat['p99']:,.2f} ms</td></tr>"
        f"<tr><td>GPU</td><td class='hwsim-busy-mfu'>busy <b>{busy:.0%}</b> &nbsp;|&nbsp; MFU <b>{mfu:.1%}</b>"
        f" &nbsp;|&nbsp; HBM {u['hbm_bw']:.0%}</td></tr>"
        f"<tr><td>memory</td><td class='hwsim-memory'>{mem['total_gb']:,.1f} of {mem['capacity_gb']:,.0f} GB"
        f"{' <b>OUT OF MEMORY</b>' if mem['oom'] else ''}<div style='height:6px;background:#ddd;width:220px'>"
        f"<div style='height:6px;width:{bar * 220:.0f}px;background:{mem_color}'></div></div></td></tr>"
        f"{extra}</table>{gap}"
    )


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
