"""Diagnosis shared by every kind: naming the bottleneck, the words and ladders the explanations use, and ranking
the changes that would help by re-running the model. Each kind explains itself and proposes its own changes."""

from __future__ import annotations

from ..core import catalog
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
        f"{m.device.get('name', 'device')} has {mem['capacity_gb']:.0f} GB. "
    )


def next_gpu(m):
    gid = m.device.get("id")
    if gid in GPU_LADDER[:-1]:
        return GPU_LADDER[GPU_LADDER.index(gid) + 1]
    return "h100-sxm" if gid != "h100-sxm" else "b200"


def bigger_gpus(mem: dict, n: int = 2) -> list[tuple[str, dict, str]]:
    """Changes to the n smallest catalogue devices that hold the whole footprint."""
    fits = sorted(
        (g for g in catalog.gpus().values() if g["memory_gb"] >= mem["total_gb"]), key=lambda g: g["memory_gb"]
    )
    return [(f"gpu={g['id']}", {"gpu": g["id"]}, f"{g['memory_gb']:g} GB") for g in fits[:n]]


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


def _value(r, metric: str) -> float:
    if metric == "throughput":
        return r.throughput
    return 1.0 / r.latency_ms["p99"] if r.latency_ms["p99"] > 0 else 0.0


def suggestions(m, base, bottleneck: str, candidates, run, metric: str = "throughput") -> list[dict]:
    """Each candidate (label, fields, why) re-run through `run(scenario)`; ranked by its measured speed-up of
    `metric` (see merit()) over `base`, the scenario's own run of the same length."""
    out = []
    base_v = _value(base, metric)
    for label, change, why in candidates:
        try:
            r = run(m.s.replace(**change))
        except HwsimError:
            continue
        if bottleneck == "memory_capacity":
            if not r.memory["oom"]:
                out.append(
                    {
                        "change": label,
                        "fields": change,
                        "speedup": None,
                        "fits": True,
                        "total_gb": round(r.memory["total_gb"], 2),
                        "why": why,
                    }
                )
            continue
        sp = _value(r, metric) / base_v if base_v > 0 else None
        item = {"change": label, "fields": change, "speedup": round(sp, 3) if sp is not None else None, "why": why}
        if metric != "throughput":
            item["metric"] = metric
        if r.memory["oom"]:
            item.update(speedup=None, why="out of memory")
        out.append(item)
    if bottleneck == "memory_capacity":
        return out[:6]
    return sorted(out, key=lambda x: -(x["speedup"] or 0.0))
