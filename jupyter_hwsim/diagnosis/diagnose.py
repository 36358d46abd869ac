"""Naming the bottleneck, explaining it, and ranking what would help by re-running the model."""
from __future__ import annotations

from ..core import analytic

from ..core import catalog
from ..core.costs import host_threads
from ..core.errors import HwsimError

STORAGE_LADDER = ["hdd", "network-fs", "sata-ssd", "nvme-gen3", "nvme-gen4", "nvme-gen5", "ramdisk"]
LINK_LADDER = ["pcie3", "pcie4", "pcie5", "nvlink-c2c"]
GPU_LADDER = ["t4", "l4", "a10", "v100-sxm2-32gb", "a100-sxm-80gb", "h100-sxm", "h200", "b200"]
_PART_TO_BOTTLENECK = {"input_io": "io", "input_preprocess": "cpu", "host_copy": "host_link",
                       "compute": "compute", "memory": "memory_bw", "launch": "overhead"}


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


def explain(b: str, m, d, util: dict, mem: dict, state: dict | None = None) -> str:
    """One or two plain sentences for a student."""
    if m.s.kind == "llm":
        return _explain_llm(b, m, d, util, mem, state)
    if m.s.kind == "serving":
        return _explain_serving(b, m, d, util, mem, state)
    text = _explain_pipeline(b, m, d, util, mem) + _close_behind(b, m, d, state)
    if m.device.get("host_threads"):   # the device is the host's own CPU (calibrate)
        text = text.replace("The GPU", "The CPU running the step").replace("GPU step", "step")
    return text


CLOSE_BEHIND = 0.15   # a stage with less spare capacity than this caps what relieving the bottleneck gains
_STAGES = {"loop": ("the GPU step", "GPU"), "io": ("storage", "storage"), "cpu": ("the data loader", "data loader"),
           "host_link": ("the host-to-device copy", "host link")}


def _close_behind(b: str, m, d, state: dict | None) -> str:
    """A sentence when another overlapping stage is within CLOSE_BEHIND of the bottleneck's capacity: by the
    bottleneck law, relieving the bottleneck alone gains at most that stage's spare capacity. The capacities
    are the analytic twin's: the estimate's own state, else computed once here."""
    if b == "memory_capacity" or not m.s.loader_workers or host_threads(m):   # no overlapping stages' capacities
        return ""
    caps = (state or {}).get("capacity") or analytic.steady_state(m, d)["capacity"]
    here = b if b in ("io", "cpu", "host_link") else "loop"
    if caps[here] == float("inf"):
        return ""
    nxt = min((k for k in caps if k != here), key=caps.get)
    spare = max(0.0, caps[nxt] / caps[here] - 1.0)
    if spare >= CLOSE_BEHIND:
        return ""
    if spare < 0.01:
        return (f" {_STAGES[nxt][0].capitalize()} is as saturated: relieving the {_STAGES[here][1]} alone "
                "gains next to nothing.")
    return (f" Close behind is {_STAGES[nxt][0]}, with about {spare:.0%} to spare: about all that relieving "
            f"the {_STAGES[here][1]} alone can gain.")


def _oom(m, mem) -> str:
    parts = {k: v for k, v in mem.items() if k.endswith("_gb") and k not in ("total_gb", "capacity_gb")}
    top = sorted(parts, key=parts.get, reverse=True)[:2]
    what = " and ".join(f"{k[:-3].replace('_', ' ')} {parts[k]:.1f} GB" for k in top)
    return (f"Out of memory: this needs {mem['total_gb']:.1f} GB ({what}) but the "
            f"{m.device.get('name', 'device')} has {mem['capacity_gb']:.0f} GB. ")


def _explain_llm(b, m, d, util, mem, state) -> str:
    s = m.s
    if b == "memory_capacity":
        return (_oom(m, mem) + f"Each sequence's KV cache takes {mem['kv_gb_per_sequence']:.2f} GB, so at most "
                f"{mem['max_concurrency']} fit: lower concurrency, a lower KV precision or weight precision, "
                "or a bigger device.")
    weights = mem["weights_gb"]
    if b == "arrivals":
        idle = (state or {}).get("gpu_time", {}).get("idle", 1 - util["gpu_busy"])
        return (f"The GPU idles {idle:.0%} of the time waiting for requests: at "
                f"{s.arrival_rate_rps:g} requests/s there is not enough work to batch. Latency here is the "
                "single-stream speed; more load would raise tokens/s at little cost.")
    if b == "memory_bw":
        return (f"Decoding is memory-bound: every step reads all {weights:.1f} GB of weights plus the KV cache "
                f"to make one token per sequence (HBM {util['hbm_bw']:.0%} busy, math {util['gpu_mfu']:.0%} of "
                f"peak). Tokens/s per stream is about bandwidth / bytes per token; more concurrent sequences "
                "share each weight read, and fewer bytes per weight (int8, int4) speed up every step.")
    if b == "overhead":
        return ("The GPU waits on kernel launches: each decode step runs hundreds of small kernels whose "
                "launch cost exceeds their run time. CUDA graphs or a compiled engine (fusion=compiled or "
                "tensorrt) remove most of it.")
    return (f"Decoding is compute-bound: with {m.batch} sequences per step the math units reach "
            f"{util['gpu_mfu']:.0%} of peak {m.precision}. More concurrency now adds latency per token, not "
            "throughput; a faster chip or lower-precision math helps.")


def _explain_serving(b, m, d, util, mem, state) -> str:
    s = m.s
    if b == "memory_capacity":
        return _oom(m, mem) + "Use a smaller max_batch_size, a lower precision or a device with more memory."
    step_ms = d.step(m.batch).step_s * 1e3
    if b == "arrivals":
        cap = (state or {}).get("capacity_rps")
        cap_txt = f" against a capacity of about {cap:,.0f}" if cap else ""
        rate = f"{s.arrival_rate_rps or 100:g} requests/s" if not s.concurrency or s.arrival_rate_rps else \
            f"{s.concurrency} clients"
        idle = (state or {}).get("gpu_time", {}).get("idle", 1 - util["gpu_busy"])
        return (f"Nothing saturates: the GPU idles {idle:.0%} of the time waiting for requests "
                f"({rate}{cap_txt}). Latency is one batch's service plus the batcher's wait; a faster GPU "
                "would only idle more.")
    if b == "cpu":
        return (f"Preprocessing limits the server: each request costs {d.pre_s * 1e3:.2f} ms of CPU on "
                f"{min(s.loader_workers or 1, s.cpu_cores)} worker(s). More workers or cores, or cheaper "
                "preprocessing, raise capacity.")
    if b == "host_link":
        return (f"Copying batches to the device binds: {d.copy(m.batch) * 1e3:.2f} ms per batch of {m.batch} "
                f"over {m.link.get('name', 'the host link')}.")
    if b == "overhead":
        return (f"The GPU waits on kernel launches: a batch of {m.batch} runs in {step_ms:.2f} ms, most of it "
                "issuing kernels. Larger batches, compilation or a TensorRT-like engine amortize them.")
    bound = "memory-bound" if b == "memory_bw" else "compute-bound"
    return (f"The GPU is saturated and {bound}: a full batch of {m.batch} takes {step_ms:.2f} ms, so requests "
            "queue. A larger max_batch_size (if the latency budget allows), more replicas, lower precision "
            "or a faster GPU raise capacity.")


def _explain_pipeline(b: str, m, d, util: dict, mem: dict) -> str:
    s, step = m.s, d.step
    step_ms = step.step_s * 1e3
    if b == "memory_capacity":
        return _oom(m, mem) + "Use a smaller batch, a lower precision or a device with more memory."
    if b == "io":
        return (f"The GPU waits on storage: reading a batch of {m.batch} samples keeps the "
                f"{m.storage.get('name', 'storage')} busy {d.storage_s * 1e3:.1f} ms against a "
                f"{step_ms:.1f} ms GPU step. A faster GPU would only idle more; faster storage or "
                "caching the dataset in host RAM helps.")
    if b == "cpu" and not s.loader_workers:
        return (f"The data loader cannot keep up: with loader_workers=0 the main process preprocesses each batch "
                f"({d.preprocess_s * 1e3:.0f} ms of CPU) between steps, so nothing overlaps the {step_ms:.1f} ms "
                "GPU step. Loader workers (up to the core count) help.")
    if b == "cpu":
        return (f"The data loader cannot keep up: preprocessing a batch costs {d.preprocess_s * 1e3:.0f} ms "
                f"of CPU and only {min(s.loader_workers, s.cpu_cores)} worker(s) run at once, against a "
                f"{step_ms:.1f} ms GPU step. "
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
    occupancy = min((o.occupancy for o in step.ops if o.bound == "compute"), default=1.0)
    if util["gpu_mfu"] < 0.3 and occupancy < 0.5:
        return (f"The GPU is compute-bound but mostly empty: its matrix products are too small to fill the chip "
                f"(as little as {occupancy:.0%} of its units busy), so it reaches only {util['gpu_mfu']:.0%} of peak "
                f"{m.precision} FLOP/s. A bigger batch (or longer sequences) fills it; a faster chip would idle more.")
    return (f"The GPU is compute-bound: it reaches {util['gpu_mfu']:.0%} of peak {m.precision} FLOP/s. "
            "Only a lower precision (faster tensor cores), less work per sample or a faster chip help.")


def _next_gpu(m):
    gid = m.device.get("id")
    if gid in GPU_LADDER[:-1]:
        return GPU_LADDER[GPU_LADDER.index(gid) + 1]
    return "h100-sxm" if gid != "h100-sxm" else "b200"


def _lower_precisions(s, options):
    here = catalog.get("precisions", s.precision)["bytes"]
    return [p for p in options if catalog.get("precisions", p)["bytes"] < here]


def _llm_candidates(m, bottleneck: str, mem: dict) -> list[tuple[str, dict, str]]:
    s, out = m.s, []
    if bottleneck == "memory_capacity":
        if mem["max_concurrency"] >= 1:
            k = mem["max_concurrency"]
            out.append((f"concurrency={k}", {"concurrency": k}, "the most sequences whose KV cache fits"))
        if catalog.get("precisions", s.kv_precision or "fp16")["bytes"] > 1:
            out.append(("kv_precision=fp8", {"kv_precision": "fp8"}, "half the KV cache"))
        for p in _lower_precisions(s, ("int8", "int4")):
            out.append((f"precision={p}", {"precision": p}, "fewer bytes per weight"))
        bigger = sorted((g for g in catalog.gpus().values() if g["memory_gb"] >= mem["total_gb"]),
                        key=lambda g: g["memory_gb"])
        for g in bigger[:2]:
            out.append((f"gpu={g['id']}", {"gpu": g["id"]}, f"{g['memory_gb']:g} GB"))
        return out
    if m.batch * 2 <= max(1, mem["max_concurrency"]):
        out.append((f"concurrency={m.batch * 2}", {"concurrency": m.batch * 2}, "more sequences share each weight read"))
    if s.batching == "static":
        out.append(("batching=continuous", {"batching": "continuous"}, "no waiting for the longest sequence"))
    for p in _lower_precisions(s, ("int8", "int4")):
        out.append((f"precision={p}", {"precision": p}, "fewer bytes per weight to read every step"))
    if s.fusion == "eager":
        out.append(("fusion=compiled", {"fusion": "compiled"}, "fewer kernels per step"))
    if s.fusion != "tensorrt":
        out.append(("fusion=tensorrt", {"fusion": "tensorrt"}, "fused attention, graph launch"))
    out.append((f"gpu={_next_gpu(m)}", {"gpu": _next_gpu(m)}, "more bandwidth and FLOP/s"))
    return out


def _serving_candidates(m, bottleneck: str, mem: dict) -> list[tuple[str, dict, str]]:
    s, out = m.s, []
    if bottleneck == "memory_capacity":
        b = m.batch
        while b > 1 and len(out) < 4:
            b //= 2
            out.append((f"max_batch_size={b}", {"max_batch_size": b}, "less activation memory"))
        for p in _lower_precisions(s, ("bf16", "int8")):
            out.append((f"precision={p}", {"precision": p}, "fewer bytes per value"))
        return out
    out.append((f"max_batch_size={2 * m.batch}", {"max_batch_size": 2 * m.batch}, "larger batches amortize weights"))
    if m.batch > 1:
        out.append((f"max_batch_size={m.batch // 2}", {"max_batch_size": m.batch // 2}, "shorter batches"))
    if s.max_queue_delay_ms > 0:
        out.append(("max_queue_delay_ms=0", {"max_queue_delay_ms": 0.0}, "dispatch without waiting for companions"))
    out.append((f"replicas={s.replicas + 1}", {"replicas": s.replicas + 1}, "one more model instance"))
    w = s.loader_workers
    out.append((f"loader_workers={max(1, 2 * w)}", {"loader_workers": max(1, 2 * w)}, "more preprocessing workers"))
    if s.precision in ("fp32", "tf32"):
        p = "bf16" if "bf16" in m.device["peak_tflops"] else "fp16"
        out.append((f"precision={p}", {"precision": p}, "tensor-core math, half the bytes"))
    elif s.precision in ("fp16", "bf16"):
        out.append(("precision=int8", {"precision": "int8"}, "half the bytes again"))
    if s.fusion != "tensorrt":
        out.append(("fusion=tensorrt", {"fusion": "tensorrt"}, "fused engine, graph launch"))
    if not s.pin_memory:
        out.append(("pin_memory=true", {"pin_memory": True}, "asynchronous copies"))
    out.append((f"gpu={_next_gpu(m)}", {"gpu": _next_gpu(m)}, "a faster chip"))
    return out


def candidates(m, bottleneck: str, mem: dict) -> list[tuple[str, dict, str]]:
    """Changes worth trying: (label, fields to change, why)."""
    if m.s.kind == "llm":
        return _llm_candidates(m, bottleneck, mem)
    if m.s.kind == "serving":
        return _serving_candidates(m, bottleneck, mem)
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
    nxt = _next_gpu(m)
    out.append((f"gpu={nxt}", {"gpu": nxt}, "a faster chip"))   # the host link stays what the scenario says
    return out


def merit(r) -> tuple[float, str]:
    """What a change should improve: throughput, unless an open-loop server keeps up with its load (serving,
    llm with arrivals), where it is the p99 latency (its inverse, so bigger is better)."""
    s = r.scenario
    offered = None
    if s["kind"] == "serving":
        offered = s.get("arrival_rate_rps") or (None if s.get("concurrency") else 100.0)
    elif s["kind"] == "llm" and s.get("arrival_rate_rps"):
        offered = s["arrival_rate_rps"] * s["output_tokens"]
    # kept up: nothing saturates, or the GPU had slack, or everything offered was served
    met = r.bottleneck == "arrivals" or r.gpu_time.get("idle", 0.0) >= 0.05 or \
        (offered and r.throughput >= 0.97 * offered)
    if offered and met and r.latency_ms["p99"] > 0:
        return 1.0 / r.latency_ms["p99"], "p99 latency"
    return r.throughput, "throughput"


def _value(r, metric: str) -> float:
    if metric == "throughput":
        return r.throughput
    return 1.0 / r.latency_ms["p99"] if r.latency_ms["p99"] > 0 else 0.0


def suggestions(m, base, bottleneck: str, mem: dict, run, metric: str = "throughput") -> list[dict]:
    """Each candidate re-run through `run(scenario)`; ranked by its measured speed-up of `metric`
    (see merit()) over `base`, the scenario's own run of the same length."""
    out = []
    base_v = _value(base, metric)
    for label, change, why in candidates(m, bottleneck, mem):
        try:
            r = run(m.s.replace(**change))
        except HwsimError:
            continue
        if bottleneck == "memory_capacity":
            if not r.memory["oom"]:
                out.append({"change": label, "fields": change, "speedup": None, "fits": True,
                            "total_gb": round(r.memory["total_gb"], 2), "why": why})
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
