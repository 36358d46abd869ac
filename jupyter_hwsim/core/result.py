"""Result: what a simulation or estimate found, with the keys of the design's metrics table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

GPU_TIME_KEYS = ("compute", "memory", "launch", "input_io", "input_preprocess", "host_copy", "idle")
UTIL_KEYS = ("storage", "cpu", "host_link", "gpu_busy", "gpu_mfu", "hbm_bw")


@dataclass
class Result:
    scenario: dict
    method: str  # "simulate" | "estimate"
    throughput: float
    throughput_unit: str
    latency_ms: dict
    utilization: dict
    gpu_time: dict
    bottleneck: str
    explanation: str
    memory: dict
    sim: dict
    suggestions: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    details: dict = field(default_factory=dict)  # per-step costs, demands, roofline ops
    timeline: list = field(default_factory=list, repr=False)  # (track, name, start_s, end_s, batch)
    # serving and llm
    goodput: float | None = None  # requests/s within latency_slo_ms
    latency_breakdown_ms: dict | None = None  # serving: mean ms per request in each part of its latency
    batch_sizes: dict | None = None  # serving: batch size -> fraction of batches formed
    ttft_ms: dict | None = None  # llm: time to first token
    tokens_per_s_per_stream: float | None = None
    max_concurrency: int | None = None  # llm: most sequences whose KV cache fits
    prefill_tokens_per_s: float | None = None  # llm: one request's prompt tokens over its prefill time
    arrivals: str | None = None  # llm: the arrival semantics the numbers mean (closed-loop, poisson, offline)
    # cost and energy (core/energy.py): None where the catalogue lacks the device's power or price
    power_w: float | None = None  # board power of every GPU of the run
    energy_j_per_unit: float | None = None  # per sample, request or token (throughput_unit)
    cost_usd_per_million: float | None = None  # per million units at the GPU's hourly price
    co2e_g_per_million: float | None = None  # per million units at grid_gco2_per_kwh
    # how far to trust it (core/bands.py): the published error of the throughput's class; None: no such rows
    accuracy: dict | None = None

    KIND_KEYS = (
        "goodput",
        "latency_breakdown_ms",
        "batch_sizes",
        "ttft_ms",
        "tokens_per_s_per_stream",
        "max_concurrency",
        "prefill_tokens_per_s",
        "arrivals",
        "power_w",
        "energy_j_per_unit",
        "cost_usd_per_million",
        "co2e_g_per_million",
        "accuracy",
    )

    def to_dict(self, timeline: bool = False) -> dict[str, Any]:
        """JSON-serializable dict: the metrics of DESIGN section 3 plus "scenario"."""
        d = {
            k: getattr(self, k)
            for k in (
                "throughput",
                "throughput_unit",
                "latency_ms",
                "utilization",
                "gpu_time",
                "bottleneck",
                "explanation",
                "suggestions",
                "memory",
                "sim",
                "method",
                "warnings",
                "details",
            )
        }
        d["scenario"] = self.scenario
        for k in self.KIND_KEYS:
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if timeline:
            d["timeline"] = [list(t) for t in self.timeline]
        return d

    def to_chrome_trace(self, path=None) -> dict:
        """The simulated timeline as Chrome trace events (opens in Perfetto UI and chrome://tracing): one
        track per stage and worker, one complete event per span, with its batch (or request) id. Written to
        path when given; the trace dict is returned either way."""
        tracks = sorted({t[0] for t in self.timeline}, key=track_key)
        tid = {name: i + 1 for i, name in enumerate(tracks)}
        s = self.scenario
        title = f"jupyter-hwsim: {s.get('workload')} on {s.get('gpu')} ({s.get('kind')}, seed {self.sim.get('seed')})"
        events = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": title}}]
        events += [{"name": "thread_name", "ph": "M", "pid": 1, "tid": tid[n], "args": {"name": n}} for n in tracks]
        events += [
            {"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid[n], "args": {"sort_index": tid[n]}}
            for n in tracks
        ]
        for track, what, a, b, batch in self.timeline:
            events.append(
                {
                    "name": what,
                    "cat": track.split(" ")[0],
                    "ph": "X",
                    "pid": 1,
                    "tid": tid[track],
                    "ts": a * 1e6,
                    "dur": (b - a) * 1e6,
                    "args": {"batch": int(batch)},
                }
            )
        trace = {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {
                "bottleneck": self.bottleneck,
                "throughput": self.throughput,
                "throughput_unit": self.throughput_unit,
                "warmup_s": self.sim.get("warmup_s"),
            },
        }
        if path is not None:
            with open(path, "w") as f:
                json.dump(trace, f)
        return trace

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(**kw), indent=2, sort_keys=True)

    def summary(self) -> str:
        """A few plain lines for a terminal or a handout."""
        u, lat = self.utilization, self.latency_ms
        per = {"requests/s": "request", "tokens/s": "token"}.get(self.throughput_unit, "step")
        lines = [
            f"throughput  {self.throughput:,.1f} {self.throughput_unit}   {per} p50 {lat['p50']:.2f} ms  "
            f"p99 {lat['p99']:.2f} ms",
            f"bottleneck  {self.bottleneck}: {self.explanation}",
            "utilization " + "  ".join(f"{k} {u[k]:.0%}" for k in UTIL_KEYS),
            "gpu time    " + "  ".join(f"{k} {v:.0%}" for k, v in self.gpu_time.items() if v >= 0.005),
            f"memory      {self.memory['total_gb']:.1f} of {self.memory['capacity_gb']:.0f} GB"
            + ("  OUT OF MEMORY" if self.memory["oom"] else ""),
        ]
        if self.ttft_ms is not None:
            lines.append(
                f"llm         first token p50 {self.ttft_ms['p50']:.1f} ms   "
                f"{self.tokens_per_s_per_stream or 0:.1f} tokens/s per stream   "
                f"fits {self.max_concurrency} sequences"
            )
        if self.latency_breakdown_ms is not None:
            lines.append(
                "latency     "
                + "  ".join(f"{k.replace('_', ' ')} {v:.2f} ms" for k, v in self.latency_breakdown_ms.items())
            )
            sizes = sorted(self.batch_sizes or {})
            lines.append(f"batches     sizes {sizes[0]}..{sizes[-1]}" if sizes else "batches     none")
        if self.goodput is not None:
            per = " per output token" if self.ttft_ms is not None else ""
            lines.append(
                f"goodput     {self.goodput:,.1f} requests/s within {self.scenario.get('latency_slo_ms'):g} ms" + per
            )
        if self.power_w is not None or self.cost_usd_per_million is not None:
            one = self.throughput_unit.split("/")[0].rstrip("s")
            parts = []
            if self.power_w is not None:
                parts.append(f"{self.power_w:,.0f} W")
            if self.energy_j_per_unit is not None:
                parts.append(f"{self.energy_j_per_unit:.3g} J per {one}")
            if self.cost_usd_per_million is not None:
                parts.append(f"${self.cost_usd_per_million:,.3g} per million {one}s")
            if self.co2e_g_per_million is not None:
                parts.append(f"{self.co2e_g_per_million:,.3g} g CO2e per million")
            lines.append("cost        " + "   ".join(parts))
        a = self.accuracy
        if a:
            what = a["class"].replace("|", ", ")
            lines.append(
                f"accuracy    likely {a['low']:,.4g}-{a['high']:,.4g} {self.throughput_unit}: the range around the "
                f"prediction that held 8 in 10 of {a['n']} published measurements of its class ({what}; median "
                f"error {a['median_abs_error']:.0%})"
                if a["status"] == "validated"
                else f"accuracy    not validated: {a['n']} published measurements of its class ({what})"
            )
        for w in self.warnings:
            lines.append(f"warning     {w}")
        shown = [x for x in self.suggestions if x.get("shown", True)]
        if shown:
            lines.append("what would help (re-simulated):")
        for sug in shown:
            sp = sug.get("speedup")
            lines.append(
                f"  {sug['change']:<32} "
                + (f"{sp:.2f}x" if sp is not None else "fits")
                + (f"  {sug['why']}" if sug.get("why") else "")
                + (f" (risk: {sug['risk']})" if sug.get("risk") else "")
            )
        if len(shown) < len(self.suggestions):
            n = len(self.suggestions) - len(shown)
            lines.append(f"  ... and {n} change{'s' * (n > 1)} gaining under 1.05x (all in .suggestions)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"<Result {self.method}: {self.throughput:,.1f} {self.throughput_unit}, bottleneck {self.bottleneck}>"


def track_key(track: str):
    order = {"storage": 0, "worker": 1, "main": 1, "preprocess": 1, "host_copy": 2, "gpu": 3}
    parts = track.split(" ")
    return order.get(parts[0], 4), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0, track


class Sweep(list):
    """The Results of a sweep, in the order of the cross product of `axes`."""

    def __init__(self, results, axes: dict):
        super().__init__(results)
        self.axes = axes

    def __repr__(self) -> str:
        return f"<Sweep of {len(self)} points over {', '.join(self.axes) or 'nothing'}>"
