"""Naming the bottleneck, explaining it, and ranking what would help by re-running the model."""
from __future__ import annotations

from . import catalog
from .errors import HwsimError

STORAGE_LADDER = ["hdd", "network-fs", "sata-ssd", "nvme-gen3", "nvme-gen4", "nvme-gen5", "ramdisk"]
LINK_LADDER = ["pcie3", "pcie4", "pcie5", "nvlink-c2c"]
GPU_LADDER = ["t4", "l4", "a10", "v100-sxm2-32gb", "a100-sxm-80gb", "h100-sxm", "h200", "b200"]
_PART_TO_BOTTLENECK = {"input_io": "io", "input_preprocess": "cpu", "host_copy": "host_link",
                       "compute": "compute", "memory": "memory_bw", "launch": "overhead"}


def name_bottleneck(saturation: dict, gpu_time: dict) -> str:
    """The most saturated stage; inside the training loop, its largest share of wall time.

    saturation: busy fraction of io, cpu (cores or workers), host_link (async copies)
    and loop (the step loop not waiting for input). In a pipeline the limiting stage
    is the one that is never idle.
    """
    stage = max(("loop", "io", "cpu", "host_link"), key=lambda k: saturation.get(k, 0.0))
    if stage != "loop":
        return stage
    part = max(_PART_TO_BOTTLENECK, key=lambda k: gpu_time.get(k, 0.0))
    return _PART_TO_BOTTLENECK[part]


def explain(b: str, m, d, util: dict, mem: dict) -> str:
    """One or two plain sentences for a student."""
    s, step = m.s, d.step
    step_ms = step.step_s * 1e3
    if b == "memory_capacity":
        parts = {k: v for k, v in mem.items() if k.endswith("_gb") and k not in ("total_gb", "capacity_gb")}
        top = sorted(parts, key=parts.get, reverse=True)[:2]
        what = " and ".join(f"{k[:-3].replace('_', ' ')} {parts[k]:.1f} GB" for k in top)
        return (f"Out of memory: this needs {mem['total_gb']:.1f} GB ({what}) but the "
                f"{m.device.get('name', 'device')} has {mem['capacity_gb']:.0f} GB. "
                "Use a smaller batch, a lower precision or a device with more memory.")
    if b == "io":
        return (f"The GPU waits on storage: reading a batch of {m.batch} samples keeps the "
                f"{m.storage.get('name', 'storage')} busy {d.storage_s * 1e3:.1f} ms against a "
                f"{step_ms:.1f} ms GPU step. A faster GPU would only idle more; faster storage or "
                "caching the dataset in host RAM helps.")
    if b == "cpu":
        busy = min(s.loader_workers, s.cpu_cores) if s.loader_workers else 1
        return (f"The data loader cannot keep up: preprocessing a batch costs {d.preprocess_s * 1e3:.0f} ms "
                f"of CPU and only {busy} worker(s) run at once, against a {step_ms:.1f} ms GPU step. "
                + ("More loader workers (up to the core count) help." if s.loader_workers < s.cpu_cores
                   else "More CPU cores or cheaper preprocessing (GPU decoding) help."))
    if b == "host_link":
        return (f"Copying each batch to the device ({m.batch * m.device_bytes / 1e6:.0f} MB over "
                f"{m.link.get('name', 'the host link')}) takes {d.copy_s * 1e3:.1f} ms, longer than the "
                f"{step_ms:.1f} ms step." + ("" if s.pin_memory else " Pinned memory would make it asynchronous and faster."))
    if b == "overhead":
        return (f"The GPU waits on kernel launches: {step.kernels} kernels per step cost "
                f"{step.issue_s * 1e3:.2f} ms of CPU to issue, but run in {(step.compute_s + step.memory_s) * 1e3:.2f} ms. "
                "Bigger batches, compilation or CUDA graphs amortize the launches.")
    if b == "memory_bw":
        return (f"The GPU is memory-bound: its kernels wait on memory bandwidth (HBM {util['hbm_bw']:.0%} "
                f"busy) while the math units reach only {util['gpu_mfu']:.0%} of peak {m.precision} FLOP/s. "
                "Fusing operators or a lower precision cut the bytes moved.")
    return (f"The GPU is compute-bound: it reaches {util['gpu_mfu']:.0%} of peak {m.precision} FLOP/s. "
            "Only a lower precision (faster tensor cores), less work per sample or a faster chip help.")


def candidates(m, bottleneck: str, mem: dict) -> list[tuple[str, dict, str]]:
    """Changes worth trying: (label, fields to change, why)."""
    s, out = m.s, []
    if bottleneck == "memory_capacity":
        b = m.batch
        while b > 1:
            b //= 2
            out.append((f"batch_size={b}", {"batch_size": b}, "less activation memory"))
        for p in ("bf16", "fp8", "int8", "int4"):
            if catalog.get("precisions", p)["bytes"] < catalog.get("precisions", s.precision)["bytes"]:
                out.append((f"precision={p}", {"precision": p}, "fewer bytes per weight"))
        if s.fusion == "eager":
            out.append(("fusion=compiled", {"fusion": "compiled"}, "fused operators keep fewer activations"))
        bigger = sorted((g for g in catalog.gpus().values() if g["memory_gb"] >= mem["total_gb"]),
                        key=lambda g: g["memory_gb"])
        for g in bigger[:2]:
            out.append((f"gpu={g['id']}", {"gpu": g["id"]}, f"{g['memory_gb']:g} GB"))
        return out
    w = s.loader_workers
    out.append((f"loader_workers={max(1, 2 * w)}", {"loader_workers": max(1, 2 * w)}, "more parallel loading"))
    out.append((f"cpu_cores={2 * s.cpu_cores}", {"cpu_cores": 2 * s.cpu_cores}, "more host cores"))
    if isinstance(s.storage, str) and s.storage in STORAGE_LADDER[:-1]:
        nxt = STORAGE_LADDER[STORAGE_LADDER.index(s.storage) + 1]
        out.append((f"storage={nxt}", {"storage": nxt, "storage_bandwidth_gbs": None,
                                        "storage_latency_ms": None, "storage_concurrency": None}, "faster reads"))
    if s.host_cache_gb < m.dataset_gb:
        out.append((f"host_cache_gb={m.dataset_gb:g}", {"host_cache_gb": m.dataset_gb}, "dataset served from RAM"))
    if not s.pin_memory:
        out.append(("pin_memory=true", {"pin_memory": True}, "asynchronous copies"))
    link_id = m.link.get("id")
    if link_id in LINK_LADDER[:-2]:
        nxt = LINK_LADDER[LINK_LADDER.index(link_id) + 1]
        out.append((f"host_link={nxt}", {"host_link": nxt, "host_link_gbs": None}, "faster copies"))
    if s.precision in ("fp32", "tf32"):
        p = "bf16" if "bf16" in m.device["peak_tflops"] else "fp16"
        out.append((f"precision={p}", {"precision": p}, "tensor-core math, half the bytes"))
    elif s.kind == "inference" and s.precision in ("fp16", "bf16"):
        out.append(("precision=int8", {"precision": "int8"}, "half the bytes again"))
    if s.fusion == "eager":
        out.append(("fusion=compiled", {"fusion": "compiled"}, "fewer kernels and HBM round trips"))
    if s.kind == "inference" and s.fusion != "tensorrt":
        out.append(("fusion=tensorrt", {"fusion": "tensorrt"}, "fused engine, graph launch"))
    out.append((f"batch_size={2 * m.batch}", {"batch_size": 2 * m.batch}, "more work per kernel"))
    gid = m.device.get("id")
    if gid in GPU_LADDER[:-1]:
        nxt = GPU_LADDER[GPU_LADDER.index(gid) + 1]
    else:
        nxt = "h100-sxm" if gid != "h100-sxm" else "b200"
    out.append((f"gpu={nxt}", {"gpu": nxt, "host_link": None, "host_link_gbs": None}, "a faster chip"))
    return out


def suggestions(m, base, bottleneck: str, mem: dict, run) -> list[dict]:
    """Each candidate re-run through `run(scenario)`; ranked by measured speed-up."""
    out = []
    for label, change, why in candidates(m, bottleneck, mem):
        try:
            r = run(m.s.replace(**change))
        except HwsimError:
            continue
        if bottleneck == "memory_capacity":
            if not r.memory["oom"]:
                out.append({"change": label, "speedup": None, "fits": True,
                            "total_gb": round(r.memory["total_gb"], 2), "why": why})
            continue
        sp = r.throughput / base if base > 0 else None
        item = {"change": label, "speedup": round(sp, 3) if sp is not None else None, "why": why}
        if r.memory["oom"]:
            item.update(speedup=None, why="out of memory")
        out.append(item)
    if bottleneck == "memory_capacity":
        return out[:6]
    return sorted(out, key=lambda x: -(x["speedup"] or 0.0))
