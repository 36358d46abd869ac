"""Diagnosis shared by every kind: naming the bottleneck, the words and ladders the explanations use, and ranking
the changes that would help by re-running the model. Each kind explains itself and proposes its own changes."""

from __future__ import annotations

import itertools

from ..core import catalog, costs, precision, workloads
from ..core.errors import HwsimError

STORAGE_LADDER = ["hdd", "network-fs", "sata-ssd", "nvme-gen3", "nvme-gen4", "nvme-gen5", "ramdisk"]
LINK_LADDER = ["pcie3", "pcie4", "pcie5", "nvlink-c2c"]
# merit(): an open loop is kept up with when the GPU idles at least this share of the time (it had slack) ...
KEPT_UP_IDLE_SHARE = 0.05
# ... or serves at least this share of the offered rate (assumption: the 3% allows for a seeded run's noise
# about the offered rate)
KEPT_UP_SERVED_SHARE = 0.97
GPU_LADDER = ["t4", "l4", "a10", "v100-sxm2-32gb", "a100-sxm-80gb", "h100-sxm", "h200", "b200"]
_PART_TO_BOTTLENECK = {
    "input_io": "io",
    "input_preprocess": "cpu",
    "host_copy": "host_link",
    "compute": "compute",
    "memory": "memory_bw",
    "launch": "overhead",
}


def name_bottleneck(saturation: dict, gpu_time: dict) -> str:
    """The most saturated stage; inside the training loop, its largest share of wall time.

    saturation: busy fraction of io, cpu (cores or workers), host_link (async copies)
    and loop (the step loop not waiting for input); serving and llm add arrivals
    (the GPU's idle share: nothing saturates, the load is light). In a pipeline the
    limiting stage is the one that is never idle.
    """
    stage = max(("loop", "io", "cpu", "host_link", "arrivals"), key=lambda k: saturation.get(k, 0.0))
    if stage != "loop":
        return stage
    part = max(_PART_TO_BOTTLENECK, key=lambda k: gpu_time.get(k, 0.0))
    return _PART_TO_BOTTLENECK[part]


def oom_sentence(m, mem) -> str:
    parts = {k: v for k, v in mem.items() if k.endswith("_gb") and k not in ("total_gb", "capacity_gb")}
    top = sorted(parts, key=parts.get, reverse=True)[:2]
    what = " and ".join(f"{k[:-3].replace('_', ' ')} {parts[k]:.1f} GB" for k in top)
    return (
        f"Out of memory: this needs {mem['total_gb']:.1f} GB ({what}) but the "
        f"{m.device.get('name', 'device')} has {costs.capacity_text(mem['capacity_gb'])}. "
    )


def next_gpu(m):
    gid = m.device.get("id")
    if gid in GPU_LADDER[:-1]:
        return GPU_LADDER[GPU_LADDER.index(gid) + 1]
    return "h100-sxm" if gid != "h100-sxm" else "b200"


def bigger_gpus(mem: dict, n: int = 2) -> list[tuple[str, dict, str]]:
    """Changes to the n smallest catalogue devices that hold the whole footprint."""
    fits = sorted(
        (g for g in catalog.gpus().values() if costs.capacity_gb(g) >= mem["total_gb"]), key=lambda g: g["memory_gb"]
    )
    return [(f"gpu={g['id']}", {"gpu": g["id"]}, costs.capacity_text(costs.capacity_gb(g))) for g in fits[:n]]


def engine_changes(s, engines) -> list[tuple[str, dict, str]]:
    """Changes to each (engine, why) but the scenario's own; one that cannot run the scenario is refused when
    it is tried, and so never suggested."""
    return [(f"engine={e}", {"engine": e}, why) for e, why in engines if e != s.engine]


def lower_precisions(s, options):
    here = catalog.get("precisions", s.precision)["bytes"]
    return [p for p in options if catalog.get("precisions", p)["bytes"] < here]


def merit(r, offered: float | None = None) -> tuple[float, str]:
    """What a change should improve: throughput, unless an open loop offering `offered` (throughput units; the
    kind's Kind.offered) is kept up with, where it is the p99 latency (its inverse, so bigger is better)."""
    # kept up: nothing saturates, or the GPU had slack, or everything offered was served
    met = (
        r.bottleneck == "arrivals"
        or r.gpu_time.get("idle", 0.0) >= KEPT_UP_IDLE_SHARE
        or (offered and r.throughput >= KEPT_UP_SERVED_SHARE * offered)
    )
    if offered and met and r.latency_ms["p99"] > 0:
        return 1.0 / r.latency_ms["p99"], "p99 latency"
    return r.throughput, "throughput"


def native_precisions(m) -> list[tuple[str, dict, str]]:
    """The 16-bit formats the device runs natively, when the scenario's floating-point format falls back to a
    slower rate (a T4 has no bf16 units: bf16 runs at its fp32 rate)."""
    s = m.s
    if s.precision not in ("tf32", "fp16", "bf16", "fp8") or s.precision in m.device["peak_tflops"]:
        return []
    return [
        (f"precision={p}", {"precision": p}, f"native {p} math: the {m.device.get('name', 'GPU')} has no {s.precision}")
        for p in ("fp16", "bf16")
        if p in m.device["peak_tflops"] and p != s.precision
    ]


def layout_changes(m) -> list[tuple[str, dict, str]]:
    """channels_last where the scenario's convolutions pay NCHW transposes around NVIDIA tensor cores."""
    if not costs.nchw_transposes(m) or not any(op.tensor_core_conv for op in workloads.operators(m.workload, m.seq)):
        return []
    return [("channels_last=true", {"channels_last": True}, "NHWC activations: no transposes around each convolution")]


SHOW_ABOVE = 1.05  # a suggestion gaining less than this is listed only under "show all"
VERIFY_ABOVE = 1.02  # a single change the analytic twin finds gaining less than this is not re-simulated
_NOT_A_KNOB = {"storage_bandwidth_gbs", "storage_latency_ms", "storage_concurrency", "host_link_gbs"}


def _value(r, metric: str) -> float:
    if metric == "throughput":
        return r.throughput
    return 1.0 / r.latency_ms["p99"] if r.latency_ms["p99"] > 0 else 0.0


def _knobs(change: dict) -> set:
    """The fields a change sets (a catalogue change also clears the numbers it brings, which are not knobs)."""
    return {k for k, v in change.items() if not (v is None and k in _NOT_A_KNOB)}


def _risk(m, r) -> str:
    """What a change costs besides its speed: numeric error of a lower precision, memory headroom, the SLO."""
    s, out = r.scenario, []
    if s["precision"] != m.s.precision:
        now = precision.matmul_error(m.s.precision, m.s.weight_group_size)
        new = precision.matmul_error(s["precision"], s.get("weight_group_size") or 0)
        if new > 1.5 * now:
            out.append(f"matmul error {new:.2%} (now {now:.2%})")
    share = r.memory["total_gb"] / r.memory["capacity_gb"] if r.memory.get("capacity_gb") else 0.0
    if share > 0.9:
        out.append(f"uses {share:.0%} of GPU memory")
    slo = s.get("latency_slo_ms")
    if "latency_slo_ms" in m.s.traits.panel_fields and slo and r.latency_ms["p99"] > slo:  # a kind judged on it
        out.append(f"p99 {r.latency_ms['p99']:,.0f} ms, over the {slo:g} ms SLO")
    return "; ".join(out)


def suggestions(
    m, base, bottleneck: str, candidates, run, metric: str = "throughput", allowed=None, screen=None
) -> list[dict]:
    """Each candidate (label, fields, why) re-run through `run(scenario)`; ranked by its measured speed-up of
    `metric` (see merit()) over `base`, the scenario's own run of the same length. Then combinations of two and
    three (see _combinations), screened by the cheap `screen(scenario)` (the analytic estimate; default: run)
    and verified by `run`. `allowed`: the field names the caller can change (None: every field). An item is
    `shown` when it gains at least SHOW_ABOVE and fits in memory; the rest are for "show all"."""
    base_v = _value(base, metric)
    if allowed is not None:
        allowed = set(allowed)
        candidates = [c for c in candidates if _knobs(c[1]) <= allowed]

    screen = screen or run
    twins: dict = {}  # the screen's result (or refusal) of each change, computed once

    def twin(change: dict):
        key = repr(sorted(change.items()))
        if key not in twins:
            try:
                twins[key] = screen(m.s.replace(**change))
            except HwsimError as e:
                twins[key] = e
        if isinstance(twins[key], HwsimError):
            raise twins[key]
        return twins[key]

    def rerun(change: dict):
        return twin(change) if screen is run else run(m.s.replace(**change))

    def attempt(label, change, why, runner=rerun, base_v=base_v):
        try:
            r = runner(change)
        except HwsimError:
            return None
        if bottleneck == "memory_capacity":
            if r.memory["oom"]:
                return None
            item = {"change": label, "fields": change, "speedup": None, "fits": True, "shown": True}
            return item | {"total_gb": round(r.memory["total_gb"], 2), "why": why}
        sp = _value(r, metric) / base_v if base_v > 0 else None
        item = {"change": label, "fields": change, "speedup": round(sp, 3) if sp is not None else None, "why": why}
        if metric != "throughput":
            item["metric"] = metric
        if r.memory["oom"]:
            item.update(speedup=None, why="out of memory")
        item["shown"] = bool(item["speedup"] and item["speedup"] >= SHOW_ABOVE)
        risk = "" if r.memory["oom"] else _risk(m, r)
        if risk:
            item["risk"] = risk
        return item

    if bottleneck == "memory_capacity":
        return [x for x in (attempt(*c) for c in candidates) if x is not None][:6]
    screen_base = _value(base if screen is run else screen(m.s), metric)

    def screened(fields: dict) -> float:
        try:
            return _value(twin(fields), metric) / screen_base if screen_base > 0 else 0.0
        except HwsimError:
            return 0.0

    def single(label, change, why):
        """Re-run where the twin sees a gain; a change it finds gaining under VERIFY_ABOVE is reported from the
        twin (marked estimated), which keeps a panel's settle time to the few changes that matter."""
        if screen is run or screened(change) >= VERIFY_ABOVE:
            return attempt(label, change, why)
        item = attempt(label, change, why, twin, screen_base)
        return item and item | {"estimated": True}

    out = [x for x in (single(*c) for c in candidates) if x is not None]
    out += _combinations(out, attempt, screened)
    for x in out:
        if x["fields"].get("gpu") and not x["shown"] and x["speedup"] and bottleneck not in ("compute", "memory_bw"):
            x["why"] = "the GPU already waits on the rest of the pipeline: a faster one would only idle more"
    return sorted(out, key=lambda x: -(x["speedup"] or 0.0))


POOL = 8  # singles (the best one per field) that combinations draw on
VERIFY = 3  # combinations of each size verified by `run`, the best screened first


def _floor(parts, best: dict) -> float:
    """What a triple must beat: the best of its parts and of its pairs verified so far."""
    known = [best[frozenset(pair)] for pair in itertools.combinations((p["change"] for p in parts), 2)
             if frozenset(pair) in best]  # fmt: skip
    return max([p["speedup"] for p in parts] + known)


def _combinations(singles: list[dict], attempt, screened) -> list[dict]:
    """A small beam search: every pair of the POOL singles that set different fields, screened; the VERIFY best
    verified; then the two best verified pairs with a third single, likewise. A combination is kept when it
    beats the best of its parts by SHOW_ABOVE: two stages saturated together, where relieving either alone
    gains nothing, are freed only together."""
    pool, seen_knobs = [], set()
    for x in sorted(singles, key=lambda x: -(x["speedup"] or 0.0)):
        knobs = frozenset(_knobs(x["fields"]))
        if x["speedup"] and x["speedup"] >= 0.97 and knobs not in seen_knobs and len(pool) < POOL:
            seen_knobs.add(knobs)
            pool.append(x)

    def disjoint(parts):
        keys = [_knobs(p["fields"]) for p in parts]
        return all(not (a & b) for i, a in enumerate(keys) for b in keys[i + 1 :])

    def fields_of(parts):
        out = {}
        for p in parts:
            out.update(p["fields"])
        return out

    def verify(groups, floor):
        """The VERIFY best screened groups, run; those beating floor(parts) by SHOW_ABOVE."""
        ranked = sorted(groups, key=lambda g: -screened(fields_of(g)))[:VERIFY]
        kept = []
        for parts in ranked:
            item = attempt(" ".join(p["change"] for p in parts), fields_of(parts), "; ".join(p["why"] for p in parts))
            if item and item["speedup"] and item["speedup"] >= SHOW_ABOVE * floor(parts):
                kept.append((item | {"parts": [p["change"] for p in parts]}, parts))
        return sorted(kept, key=lambda k: -k[0]["speedup"])

    best = {}  # the speed-up of each verified pair, the floor of the triples grown from it
    pairs = verify(
        [[a, b] for i, a in enumerate(pool) for b in pool[i + 1 :] if disjoint([a, b])],
        lambda parts: max(p["speedup"] for p in parts),
    )
    for item, parts in pairs:
        best[frozenset(p["change"] for p in parts)] = item["speedup"]
    grown = [[*parts, c] for _, parts in pairs[:2] for c in pool if c not in parts and disjoint([*parts, c])]
    unique = {frozenset(p["change"] for p in g): g for g in grown}  # a triple grows from up to three pairs
    triples = verify(list(unique.values()), lambda parts: _floor(parts, best))
    return [item for item, _ in pairs + triples]
