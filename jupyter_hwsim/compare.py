"""compare(): a baseline and a change side by side, each number with its ratio and whether that is better."""

from __future__ import annotations

from dataclasses import dataclass

from .core.errors import HwsimError
from .runner import as_scenario, estimate, simulate

# (key, label, value of a Result or None where it does not apply, True: higher is better / False: lower / None)
METRICS = (
    ("throughput", "Throughput", lambda r: r.throughput, True),
    ("latency_p50_ms", "Latency p50 (ms)", lambda r: r.latency_ms["p50"], False),
    ("latency_p99_ms", "Latency p99 (ms)", lambda r: r.latency_ms["p99"], False),
    ("ttft_p50_ms", "Time to first token p50 (ms)", lambda r: r.ttft_ms and r.ttft_ms["p50"], False),
    ("goodput", "Goodput (requests/s within the SLO)", lambda r: r.goodput, True),
    ("gpu_busy", "GPU busy", lambda r: r.utilization["gpu_busy"], None),
    ("gpu_mfu", "Share of peak FLOP/s (MFU)", lambda r: r.utilization["gpu_mfu"], None),
    ("hbm_bw", "HBM bandwidth used", lambda r: r.utilization["hbm_bw"], None),
    ("cpu", "CPU loaders busy", lambda r: r.utilization["cpu"], None),
    ("memory_gb", "GPU memory (GB)", lambda r: r.memory["total_gb"], False),
    ("power_w", "Board power (W)", lambda r: r.power_w, False),
    ("energy_j_per_unit", "Energy per unit (J)", lambda r: r.energy_j_per_unit, False),
    ("cost_usd_per_million", "Cost per million units (USD)", lambda r: r.cost_usd_per_million, False),
)


@dataclass
class Comparison:
    """Two results of the same method and seed; `rows` holds each metric with its ratio b / a."""

    a: object
    b: object
    changed: dict  # field -> (a's value, b's value) for every field that differs
    rows: list

    def to_dict(self) -> dict:
        return {"changed": {k: list(v) for k, v in self.changed.items()}, "rows": self.rows,
                "bottleneck": [self.a.bottleneck, self.b.bottleneck]}  # fmt: skip

    def __str__(self) -> str:
        unit = self.a.throughput_unit
        lines = [
            "changed     " + ("  ".join(f"{k}: {va} -> {vb}" for k, (va, vb) in self.changed.items()) or "nothing"),
            f"bottleneck  {self.a.bottleneck} -> {self.b.bottleneck}",
            f"{'':<38}{'baseline':>12}{'change':>12}  ratio",
        ]
        for row in self.rows:
            label = row["label"].replace("Throughput", f"Throughput ({unit})")
            lines.append(f"{label:<38}{_fmt(row['a']):>12}{_fmt(row['b']):>12}  {_ratio(row)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Comparison {self.rows[0]['ratio']:.2f}x throughput>" if self.rows[0]["ratio"] else "<Comparison>"


def _fmt(v) -> str:
    return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"


def _ratio(row) -> str:
    """'1.52x ▲' better, '0.80x ▼' worse, '1.00x' unchanged or neither (the arrow points the way it moved)."""
    r = row["ratio"]
    if r is None:
        return "-"
    if abs(r - 1.0) < 0.005:
        return "1.00x"
    arrow = "▲" if r > 1 else "▼"
    return f"{r:.2f}x {arrow}" + ({True: " better", False: " worse"}.get(row["better"], ""))


def rows(a, b) -> list[dict]:
    """Each metric that applies to both results: its values, ratio b / a and whether b is better."""
    out = []
    for key, label, get, higher in METRICS:
        va, vb = get(a), get(b)
        if va is None or vb is None:
            continue
        ratio = vb / va if va else None
        better = None if higher is None or ratio is None or abs(ratio - 1) < 0.005 else (ratio > 1) == higher
        out.append({"metric": key, "label": label, "a": float(va), "b": float(vb), "ratio": ratio, "better": better})
    return out


def compare(a, b=None, method: str = "simulate", seed: int = 0, **changes) -> Comparison:
    """The baseline `a` beside `b` (a scenario, or `a` with `changes`): compare(s, gpu="h100")."""
    if method not in ("simulate", "estimate"):
        raise HwsimError("method", method, "simulate or estimate")
    sa = as_scenario(a)
    sb = as_scenario(b) if b is not None else sa
    if changes:
        sb = sb.replace(**changes)
    if sa.kind != sb.kind:
        raise HwsimError("kind", sb.kind, f"the baseline's kind ({sa.kind}): two kinds count different units")
    run = (lambda s: simulate(s, seed=seed)) if method == "simulate" else estimate
    ra, rb = run(sa), run(sb)
    da, db = sa.to_dict(), sb.to_dict()
    changed = {
        k: (da.get(k), db.get(k))
        for k in dict.fromkeys([*da, *db])
        if da.get(k) != db.get(k) and k != "fusion"  # fusion: an alias of the engine
    }
    return Comparison(ra, rb, changed, rows(ra, rb))
