"""calibrate(): measure a real PyTorch input pipeline and step on this machine, and return the
scenario that reproduces it, so simulate() can answer what-ifs about the user's own pipeline.

What it measures, each on its own so that no figure hides another:
- loading a batch in the main process (what num_workers=0 does), with the I/O wait split off;
- loading a batch in one real worker process (decode, augment, collate and the shared-memory
  hand-off), and taking a ready batch from it in the main process;
- the step on a batch held in memory, at half, one and (on the CPU) two batches (fixed + per-sample
  cost), the threads it keeps busy and its run-to-run variation, and the CPU its idle threads
  burn spinning after it (reported: the fluid model of the cores cannot show what that costs);
- the step's operators (one step recorded at the dispatcher: FLOPs, tensor values moved,
  operator count, parameters), so the same step can be costed on any catalogue device;
- this machine's memory bandwidth (a NumPy copy), and finally the pipeline as the user runs it.

The local CPU becomes a measured device whose rates reproduce the step times; its step threads
share the cores with the loader workers (see engine._SharedCores). PyTorch is imported only here
(`pip install jupyter-hwsim[torch]`).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from dataclasses import dataclass

import numpy as np

from ..core.errors import HwsimError
from ..core.scenario import Scenario

# aten operators that compute with tensor cores / GEMM kernels (forward and backward)
_MATMUL_OPS = (
    "convolution",
    "convolution_backward",
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "matmul",
    "linear",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
)


@dataclass(frozen=True)
class Calibration:
    """A calibrated scenario and what was measured to build it; replace() gives what-if scenarios."""

    scenario: Scenario
    measured: dict
    predicted: dict

    def replace(self, **changes) -> Scenario:
        return self.scenario.replace(**changes)

    def report(self) -> str:
        m, p = self.measured, self.predicted
        rows = [
            ("batch size / loader workers / cores", f"{m['batch_size']} / {m['num_workers']} / {m['cpu_cores']}"),
            (
                "load a batch in the main process",
                f"{m['load_ms']:.2f} ms ({m['io_ms_per_sample']:.3f} ms/sample I/O wait"
                + (
                    f"; {m['preprocess_ms_per_batch']:.2f} ms of it per batch whatever its size, from "
                    f"{m['load_half_ms']:.2f} ms at batch {m['half_batch']})"
                    if m["load_half_ms"] is not None
                    else ")"
                ),
            ),
            (
                "load a batch on one thread / in a worker",
                f"{m['load1_ms']:.2f} ms / {m['worker_ms']:.2f} ms, then {m['receive_ms']:.2f} ms to take it",
            ),
            (
                f"step at batch {m['batch_size']} / {m['half_batch']}"
                + (f" / {2 * m['batch_size']}" if m["double_step_ms"] else ""),
                f"{m['step_ms']:.2f} ms / {m['half_step_ms']:.2f} ms"
                + (f" / {m['double_step_ms']:.2f} ms" if m["double_step_ms"] else "")
                + f" (cv {m['step_cv']:.2f}), "
                + (
                    f"{m['step_threads']} thread(s) using {m['step_cores']:.2f} cores"
                    if m["device"] == "cpu"
                    else f"on {m['device']}, synchronized"
                ),
            ),
            (
                "the step's threads after it",
                f"{m['spin_ms']:.1f} ms of CPU in a {SPIN_WAIT_S * 1e3:.0f} ms wait: "
                + (
                    "they spin for the next operator (OpenMP), on cores the loader workers need"
                    if m["spin_ms"] >= 1
                    else "they sleep"
                ),
            ),
            (
                "copy to the device",
                "none: the step runs on the CPU"
                if m["device"] == "cpu"
                else f"{m['copy_bytes_per_batch'] / 1e6:.2f} MB per batch: {m['copy_pageable_ms']:.3f} ms pageable"
                + (
                    f", {m['copy_pinned_ms']:.3f} ms pinned"
                    if m["copy_pinned_ms"] is not None
                    else ", no pinned memory here"
                )
                + (" (the loader pins)" if m["pin_memory"] else ""),
            ),
            (
                "step operators",
                f"{m['kernels']} per step, {m['gflops_per_step']:.3f} GFLOP, {m['params']:,} parameters, {m['kind']}",
            ),
            (
                "memory bandwidth",
                f"{m['memory_bandwidth_gbs']:.1f} GB/s ("
                + ("a NumPy copy)" if m["device"] == "cpu" else f"a copy on {m['device']})"),
            ),
            (
                "fitted device",
                f"{m['device_gflops']:.1f} GFLOP/s, {m['per_op_us']:.1f} us per operator"
                + (
                    f"; beside the workers the step runs at {m['contention']['step']:.2f} of its fair share of the cores "
                    f"and a worker loses {m['contention']['worker_ms_per_batch']:.2f} ms per batch"
                    if m["contention"]
                    else ""
                ),
            ),
            ("step beside the workers", f"measured {m['loop_step_ms']:.2f} ms, simulated {p['loop_step_ms']:.2f} ms"),
            (
                "pipeline throughput",
                f"measured {m['throughput']:.1f}, simulated {p['throughput']:.1f} samples/s "
                f"({p['throughput'] / m['throughput'] - 1:+.1%})"
                + (
                    f"; its rounds ranged {m['throughput_range'][0]:+.0%} to {m['throughput_range'][1]:+.0%}, "
                    "noise that every prediction from it carries"
                    if m["rounds"] > 1
                    else ""
                ),
            ),
            ("main loop waiting for input", f"measured {m['wait_share']:.0%}, simulated {p['wait_share']:.0%}"),
            ("bottleneck (simulated)", p["bottleneck"]),
        ]
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)

    def __repr__(self) -> str:
        return "Calibration of this machine's pipeline\n" + self.report()


def _check(loader, step, steps, warmup, rounds):
    if not hasattr(loader, "__iter__"):
        raise HwsimError("loader", type(loader).__name__, "a torch DataLoader or an iterable of batches")
    for name, lo in (("batch_size", 1), ("num_workers", 0)):
        v = getattr(loader, name, None)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise HwsimError(
                f"loader.{name}",
                v,
                f"an integer >= {lo} (a DataLoader sets it; an iterable of batches needs the attribute)",
            )
    if not callable(step):
        raise HwsimError("step", type(step).__name__, "a function that runs one step on a batch")
    for name, v, lo in (("steps", steps, 3), ("warmup", warmup, 0), ("rounds", rounds, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise HwsimError(name, v, f"an integer >= {lo}")


def _torch():
    try:
        import torch
    except ImportError as e:  # the extra is not installed
        raise HwsimError("calibrate", "torch", "PyTorch installed (pip install 'jupyter-hwsim[torch]')") from e
    return torch


class _Repeat:
    """A sampler that goes round the loader's own sampler without end, so that a measurement
    never meets the end of an epoch (and the worker start-up of the next)."""

    def __init__(self, sampler):
        self.sampler = sampler

    def __iter__(self):
        while True:
            yield from self.sampler

    def __len__(self):
        return 2**31


def _clone(loader, workers: int, batch_size: int | None = None):
    """The same dataset, sample order and collate in a DataLoader of this many workers (and batch size)."""
    torch = _torch()
    kw = dict(
        batch_size=batch_size or loader.batch_size,
        num_workers=workers,
        collate_fn=loader.collate_fn,
        sampler=_Repeat(loader.sampler),
        drop_last=getattr(loader, "drop_last", False),
        pin_memory=getattr(loader, "pin_memory", False),
        worker_init_fn=getattr(loader, "worker_init_fn", None),
        multiprocessing_context=getattr(loader, "multiprocessing_context", None),
    )
    if workers:
        kw["prefetch_factor"] = getattr(loader, "prefetch_factor", None) or 2
    return torch.utils.data.DataLoader(loader.dataset, **kw)


def _batches(loader):
    """Batches without end: a finite loader is iterated again (another epoch)."""
    while True:
        empty = True
        for b in loader:
            empty = False
            yield b
        if empty:
            raise HwsimError("loader", "empty", "a loader that yields at least one batch")


def _time_load(loader, n: int) -> tuple[float, float]:
    """Median wall and CPU seconds per batch over n batches (after the first)."""
    it = _batches(loader)
    next(it)
    walls, cpus = [], []
    for _ in range(n):
        t, c = time.perf_counter(), time.process_time()
        next(it)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def _worker_load(loader, n: int, batch_size: int | None = None) -> tuple[float, float]:
    """(seconds per batch of one real worker process, seconds the main process takes a ready batch)."""
    it = iter(_clone(loader, 1, batch_size))
    next(it)
    gaps = []
    for _ in range(n):  # the main process only waits: the worker sets the pace
        t = time.perf_counter()
        next(it)
        gaps.append(time.perf_counter() - t)
    per_batch = statistics.median(gaps)
    receives = []
    for _ in range(3):  # let the prefetched batches get ready, then time taking them
        time.sleep(2.5 * per_batch + 0.01)
        for _ in range(2):
            t = time.perf_counter()
            next(it)
            receives.append(time.perf_counter() - t)
    del it
    return per_batch, statistics.median(receives)


def _slice(batch, n: int):
    """The first n samples of a batch (tensors sliced along their first dimension)."""
    torch = _torch()
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: t[:n] if isinstance(t, torch.Tensor) and t.dim() else t, batch)


def _double(batch):
    """The batch twice over (tensors joined along their first dimension): the step at twice the batch."""
    torch = _torch()
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: torch.cat([t, t]) if isinstance(t, torch.Tensor) and t.dim() else t, batch)


def _line(points: list) -> tuple[float, float]:
    """Least-squares (intercept, slope) through (batch, seconds) points."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - slope * mx, slope


def _time_steps(step, batches: list, steps: int) -> tuple[list, float, list]:
    """Median wall seconds of step(b) for each batch, taken in turns; the CPU cores the first used;
    the first's step times."""
    walls, cpu = [[] for _ in batches], 0.0
    for _ in range(steps):
        for i, b in enumerate(batches):
            t, c = time.perf_counter(), time.process_time()
            step(b)
            walls[i].append(time.perf_counter() - t)
            if i == 0:
                cpu += time.process_time() - c
    return [statistics.median(w) for w in walls], cpu / sum(walls[0]), walls[0]


SPIN_WAIT_S = 0.03  # the loop's wait after a step in which the spin is measured


def _spin_s(step, batch, sleep_s: float = SPIN_WAIT_S, n: int = 5) -> float:
    """CPU seconds the process burns while the loop sleeps right after a step (median of n): the
    step's idle OpenMP threads spin-wait for the next operator before they sleep (OMP_WAIT_POLICY)."""
    burnt = []
    for _ in range(n):
        step(batch)
        c = time.process_time()
        time.sleep(sleep_s)
        burnt.append(time.process_time() - c)
    return statistics.median(burnt)


def record_step(step, batch) -> dict:
    """One step recorded at PyTorch's dispatcher: per-class FLOPs, values read and written,
    operator counts, the parameters touched, the bytes copied from host to device and the device
    the step computes on ("cpu", "cuda", ...); views and aliases cost nothing."""
    torch = _torch()
    from torch.multiprocessing.reductions import StorageWeakRef  # storage identity on any device (meta too)
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    totals = {c: {"flops": 0.0, "values_in": 0.0, "values_out": 0.0, "kernels": 0} for c in ("matmul", "other")}
    params, seen, devices = {}, {"backward": False, "h2d_bytes": 0.0}, {}

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func._overloadpacket.__name__
            if func.namespace != "aten":
                return out
            ins = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            for t in outs:
                devices[t.device.type] = devices.get(t.device.type, 0) + 1
            host = [t for t in ins if t.device.type == "cpu"]
            if name in ("_to_copy", "copy_") and host and outs and outs[0].device.type != "cpu":
                # a copy from the host to the device: the host link's work, not a kernel of the step
                seen["h2d_bytes"] += sum(t.numel() * t.element_size() for t in host)
                return out
            for t in ins:
                if isinstance(t, torch.nn.Parameter):
                    params[StorageWeakRef(t.untyped_storage())] = t.numel()
            if _is_alias(func, ins, outs):
                return out  # a view or alias: no kernel, no bytes
            seen["backward"] |= "backward" in name
            acc = totals["matmul" if name in _MATMUL_OPS else "other"]
            acc["flops"] += _op_flops(func, args, kwargs, out)
            acc["values_in"] += sum(t.numel() for t in ins if not isinstance(t, torch.nn.Parameter))
            acc["values_out"] += sum(t.numel() for t in outs)
            acc["kernels"] += 1
            return out

    with Recorder():
        step(batch)
    if not totals["matmul"]["kernels"] + totals["other"]["kernels"]:
        raise HwsimError(
            "step", getattr(step, "__name__", "step"), "a step that runs PyTorch operators (the recording found none)"
        )
    accelerators = {k: n for k, n in devices.items() if k != "cpu"}
    return {
        "ops": totals,
        "params": float(sum(params.values())),
        "training": seen["backward"],
        "device": max(accelerators, key=accelerators.get) if accelerators else "cpu",
        "h2d_bytes": seen["h2d_bytes"],
    }


def _is_alias(func, ins: list, outs: list) -> bool:
    """An operator that mutates nothing and whose every output shares an input's storage: a view or alias."""
    from torch.multiprocessing.reductions import StorageWeakRef

    storages = {StorageWeakRef(t.untyped_storage()) for t in ins}
    return bool(
        not func._schema.is_mutable and outs and all(StorageWeakRef(t.untyped_storage()) in storages for t in outs)
    )


def _op_flops(func, args, kwargs, out) -> float:
    """The operator's FLOPs by the registry's formula, as torch.utils.flop_counter.FlopCounterMode calls it; 0 where
    it has none, or one that needs more than shapes (the operator's bytes are counted all the same)."""
    from torch.utils.flop_counter import flop_registry

    if func._overloadpacket not in flop_registry:
        return 0.0
    try:
        return float(flop_registry[func._overloadpacket](*args, **kwargs, out_val=out))
    except Exception:
        return 0.0


def _synchronizer(device: str):
    """A function that waits for the device's queued work (torch.cuda.synchronize, ...); the CPU and
    PyTorch's meta device run synchronously."""
    sync = getattr(getattr(_torch(), device, None), "synchronize", None) if device not in ("cpu", "meta") else None
    return sync if callable(sync) else (lambda: None)


def _best_s(work, sync=lambda: None, n: int = 5) -> float:
    """The shortest of n timed runs of work() (seconds, the device synchronized before and after)."""
    best = float("inf")
    for _ in range(n):
        sync()
        t = time.perf_counter()
        work()
        sync()
        best = min(best, time.perf_counter() - t)
    return max(best, 1e-9)


def _copy_s(device: str, nbytes: float, pinned: bool, sync) -> float | None:
    """Seconds of one host-to-device copy of nbytes (the best of five), from pinned or pageable host
    memory; None where this machine cannot pin memory (no accelerator driver)."""
    torch = _torch()
    src = torch.empty(max(1, int(nbytes)), dtype=torch.uint8)
    if pinned:
        try:
            src = src.pin_memory()
        except RuntimeError:
            return None
    return _best_s(lambda: src.to(device, non_blocking=pinned), sync)


def _device_bandwidth_gbs(device: str, sync, mb: int = 64) -> float:
    """The device's copy bandwidth: the best of five on-device clones, read + write bytes."""
    torch = _torch()
    a = torch.empty(mb * 2**20, dtype=torch.uint8, device=device)
    return 2 * a.numel() / _best_s(a.clone, sync) / 1e9


def _device_entry(device: str, sync, threads: int, cores: int) -> dict:
    """This machine's device as measured: memory, copy bandwidth, parallel units, its host link's place
    and, for the CPU, the threads its step keeps busy; the FLOP rate and per-operator cost are fitted later."""
    torch = _torch()
    memory_gb, units = _memory_gb(), cores
    if device == "cpu":
        name, bandwidth_gbs, extra = (
            "this machine's CPU (measured)",
            memory_bandwidth_gbs(),
            {"host_threads": max(1, min(threads, cores))},
        )
    else:
        name, bandwidth_gbs, extra, units = (
            f"this machine's {device} device (measured)",
            _device_bandwidth_gbs(device, sync),
            {},
            1,
        )
        mod = getattr(torch, device, None)
        if device != "meta" and hasattr(mod, "get_device_properties"):
            props = mod.get_device_properties(torch.device(device))
            memory_gb = getattr(props, "total_memory", memory_gb * 2**30) / 2**30  # the catalogue sizes memory in GiB
            units = getattr(props, "multi_processor_count", units)
    return {
        "name": name,
        "memory_gb": memory_gb,
        "memory_bandwidth_gbs": bandwidth_gbs,
        "peak_tflops": {"fp32": 1.0},
        "parallel_units": units,
        "tile": 16,
        "compute_efficiency": 1.0,
        "memory_efficiency": 1.0,
        "launch_overhead_us": 0.0,
        "workspace_gb": 0.0,
        **extra,
    }


def memory_bandwidth_gbs(mb: int = 64) -> float:
    """This machine's copy bandwidth: the best of five NumPy copies, read + write bytes."""
    a = np.ones(mb * 2**20 // 8)
    b = np.empty_like(a)
    return 2 * a.nbytes / _best_s(lambda: np.copyto(b, a)) / 1e9


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _batch_bytes(batch) -> float:
    torch = _torch()
    from torch.utils._pytree import tree_flatten

    return float(sum(t.numel() * t.element_size() for t in tree_flatten(batch)[0] if isinstance(t, torch.Tensor)))


def _fit_device(base: Scenario, batch: int, half: int, step_s: float, half_s: float) -> dict:
    """The local device's FLOP rate and per-operator cost that make the model's step take the measured
    times at both batch sizes (the rate from the difference, the per-operator cost from the rest)."""
    from ..core import costs

    def kernel_s(scenario, b, rate):
        dev = {**scenario.gpu, "peak_tflops": {"fp32": rate / 1e12}, "launch_overhead_us": 0.0}
        m = costs.resolve(scenario.replace(gpu=dev, batch_size=b))
        c = costs.step_cost(m)
        return c.kernel_s, c.kernels

    slope = step_s - half_s
    if slope > 0 and kernel_s(base, batch, 1e16)[0] - kernel_s(base, half, 1e16)[0] < slope:

        def too_slow(rate):  # the model's growth from half a batch to a batch, against the measured one
            return kernel_s(base, batch, rate)[0] - kernel_s(base, half, rate)[0] > slope
    else:  # no measurable slope (noise, or a step that does not grow with the batch): all of it per sample

        def too_slow(rate):
            return kernel_s(base, batch, rate)[0] > step_s

    lo, hi = 1e6, 1e16  # FLOP/s; the model's step shortens as the rate rises: bisect in log space
    for _ in range(80):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if too_slow(mid) else (lo, mid)
    rate = hi
    t, kernels = kernel_s(base, batch, rate)
    per_op_s = max(0.0, step_s - t) / max(1, kernels)
    return {**base.gpu, "peak_tflops": {"fp32": rate / 1e12}, "launch_overhead_us": per_op_s * 1e6}


def _run_pipeline(it, batch_size: int, step, steps: int, warmup: int) -> dict:
    """A running pipeline (an iterator of batches) as the loop sees it: samples/s, the share of time the
    loop waited for input, and the mean step time (the step slows where loader workers share its cores)."""
    wait = stepping = 0.0
    for k in range(warmup + steps):
        if k == warmup:
            t0, wait, stepping = time.perf_counter(), 0.0, 0.0
        t = time.perf_counter()
        batch = next(it)
        t1 = time.perf_counter()
        step(batch)
        wait, stepping = wait + t1 - t, stepping + time.perf_counter() - t1
    total = time.perf_counter() - t0
    return {
        "throughput": steps * batch_size / total,
        "wait_share": wait / total,
        "loop_step_ms": stepping / steps * 1e3,
        "loop_wait_ms": wait / steps * 1e3,
    }


def _loop_step_ms(r) -> float:
    """Mean wall time of a simulated step as the loop sees it: the device track, and the copy when it
    is synchronous (pageable memory: the user's step copies its batch before computing)."""
    tracks = ("gpu",) if r.scenario.get("pin_memory") else ("gpu", "host_copy")
    spans = sum(b - a for track, _, a, b, _ in r.timeline if track in tracks)
    return 1e3 * spans / sum(1 for t in r.timeline if t[0] == "gpu")


def _fit_contention(scenario: Scenario, loop_step_ms: float, throughput: float, half=None) -> dict:
    """The device with the figures (costs.contention) at which the simulated pipeline steps as long and
    runs as fast as the measured one: the step's gang runs this much slower than its fair share while the
    cores are oversubscribed, and a worker loses this much CPU per batch beside the step (the step's idle
    threads spin after it on the cores the workers need: a cost per step, not per sample). The workers keep
    their fair share: a factor on it, fitted as well, traded against the cost per batch from round to round
    and predicted no better (docs/calibration.md, "One figure fewer").
    The cost per batch is fitted to the run at the batch and, given (half batch, samples/s), at half of it
    together (the sum of the log errors), one bisection each, in turns."""
    from .. import api

    eff = {"step": 1.0, "worker_ms_per_batch": 0.0}
    runs = [({}, throughput)] + ([({"batch_size": half[0]}, half[1])] if half else [])

    def sim(e, **changes):
        return api.simulate(
            scenario.replace(gpu={**scenario.gpu, "contention_efficiency": e}, **changes), suggest=False
        )

    def too_slow(e):  # the simulation runs slower than the measured pipeline, over its runs together
        return sum(math.log(sim(e, **changes).throughput / measured) for changes, measured in runs) < 0

    small = half or (scenario.batch_size, throughput)  # (batch, samples/s) of the run at the smaller batch
    # (figure, start of the bisection toward which a too-slow simulation moves it, the other end, mean, too_slow)
    fits = [
        ("step", 0.1, 3.0, statistics.geometric_mean, lambda e: _loop_step_ms(sim(e)) > loop_step_ms),
        ("worker_ms_per_batch", 2e3 * small[0] / small[1], 0.0, statistics.fmean, too_slow),
    ]  # up to 2 batches
    for _ in range(3):
        for key, lo, hi, mean, slower in fits:
            for _ in range(12):
                mid = mean((lo, hi))
                lo, hi = (mid, hi) if slower({**eff, key: mid}) else (lo, mid)
            eff[key] = round(mean((lo, hi)), 3)
    return {**scenario.gpu, "contention_efficiency": eff}


def calibrate(loader, step, steps: int = 20, warmup: int = 3, rounds: int = 3) -> Calibration:
    """Measure `loader` (a torch DataLoader, or an iterable with batch_size and num_workers) and
    `step(batch)` on this machine; returns a Calibration whose .scenario reproduces them and whose
    .replace(loader_workers=4, gpu="a100", ...) asks what-ifs. Each of `rounds` rounds times `steps`
    steps (after `warmup`) at three batch sizes and in up to three running pipelines, and loads a few
    dozen batches: about half a minute for jupyter_hwsim.demo_pipeline on 2 cores (fewer rounds or
    steps, less; noisier figures).

    A step that copies its batch to an accelerator (CUDA, ...) is timed with the device synchronized;
    the copy is timed on its own and becomes the host link, the rest of the step the device."""
    _check(loader, step, steps, warmup, rounds)
    session = _Session(loader, step, steps, warmup, rounds)  # records the step: its operators and device
    med, run, cv = session.measure()  # the medians over the rounds
    loading = session.loader_costs(med)
    dev, copy = session.device_entry()
    base = session.base_scenario(med, loading, dev, copy["pin"], cv)
    dev = session.fit(base, med, run, copy)
    return session.result(base.replace(gpu=dev), base, dev, med, run, loading, copy, cv)


class _Session:
    """One calibration of a loader and a step. Each method is a step of calibrate(), in the order it takes
    them: the measurements (which run the user's code, so their order is the measurement's), then the
    figures derived from them, the scenario, the fitted device and the report."""

    def __init__(self, loader, step, steps: int, warmup: int, rounds: int):
        torch = _torch()
        self.loader, self.step, self.steps, self.warmup, self.rounds = loader, step, steps, warmup, rounds
        bs = self.bs = loader.batch_size
        self.nw = loader.num_workers
        self.is_dataloader = isinstance(loader, torch.utils.data.DataLoader)
        self.n_load = max(3, min(steps, 10))  # batches each load figure is the median of
        self.inproc = _clone(loader, 0) if self.is_dataloader else loader
        self.batch = next(iter(self.inproc))
        self.half = half = max(1, bs // 2)
        self.batches = [self.batch, _slice(self.batch, half)] if half < bs else [self.batch]
        # the step's operators and its device first: a step on an accelerator is timed synchronized
        self.rec = record_step(step, self.batch)
        self.device, self.h2d = self.rec["device"], self.rec["h2d_bytes"]
        self.sync = _synchronizer(self.device)
        self.on_host = self.device == "cpu"
        if self.on_host:  # and at twice the batch: a step's time can grow faster than the batch (caches)
            self.batches.append(_double(self.batch))
        self.threads, self.cores = torch.get_num_threads(), _cores()
        # the step's operators per sample (their kernels per step)
        self.per = {c: {k: (v / bs if k != "kernels" else v) for k, v in o.items()} for c, o in self.rec["ops"].items()}

    def synced(self, b):
        """The user's step on batch b, then a wait for the device's queued work."""
        self.step(b)
        self.sync()

    def measure(self) -> tuple[dict, dict, float]:
        """Warm the step up, then take every figure once per round and keep its median over the rounds: the
        speed of a shared machine drifts over seconds, and rounds spread every figure over the same spells.
        Returns the medians, the user's pipeline as run (with the spread of its rounds) and the step's cv."""
        for _ in range(self.warmup):
            for b in self.batches:
                self.synced(b)
        running = self._start_pipelines()
        figures, step_times = [], []
        for _ in range(self.rounds):
            f, walls = self._measure_round(running)
            figures.append(f)
            step_times += walls
        for it in running.values():
            it.close()  # shuts the workers down
        med = {k: statistics.median(f[k] for f in figures) if figures[0][k] is not None else None for k in figures[0]}
        cv = statistics.pstdev(step_times) / statistics.mean(step_times)
        run = {k: med[k] for k in ("throughput", "wait_share", "loop_step_ms")}
        # how far the rounds of the user's pipeline spread about their median: the noise on every figure
        tp = [f["throughput"] for f in figures]
        run["throughput_range"] = (min(tp) / run["throughput"] - 1, max(tp) / run["throughput"] - 1)
        return med, run, cv

    def _start_pipelines(self) -> dict:
        """The pipelines the rounds time, started once. They keep running between rounds, as in a training epoch
        (their workers wait with a full prefetch queue), so that a round times them in their steady state, not a
        new worker's first batches."""
        loader, bs, half, nw, dl = self.loader, self.bs, self.half, self.nw, self.is_dataloader
        running = {"inproc": _batches(self.inproc), "user": _batches(_clone(loader, nw) if dl else loader)}
        if dl and half < bs:  # loading in the main process at half the batch: its cost per batch
            running["inproc_half"] = _batches(_clone(loader, 0, half))
        shared_nw = nw or (1 if self.on_host and dl and self.cores > 1 else 0)
        if shared_nw and not nw:
            # no workers beside the step in the user's run: run one, to see how they share the cores
            running["shared"] = _batches(_clone(loader, 1))
        if self.on_host and dl and shared_nw and half < bs:
            # and the shared run at half the batch: what sharing costs per step, not per sample
            running["half"] = _batches(_clone(loader, shared_nw, half))
        return running

    def _measure_round(self, running: dict) -> tuple[dict, list]:
        """One round of every figure (seconds); and the step times at the batch size."""
        bs, half = self.bs, self.half
        f = {}
        # loading in the main process as num_workers=0 does it: between steps
        f["load_s"] = _run_pipeline(running["inproc"], bs, self.synced, self.n_load, 1)["loop_wait_ms"] / 1e3
        f["load_half_s"] = (
            _run_pipeline(running["inproc_half"], half, self.synced, self.n_load, 1)["loop_wait_ms"] / 1e3
            if "inproc_half" in running
            else None
        )
        # the step on a batch in memory, at the batch size, at half of it and (on the CPU) at twice it
        (f["step_s"], *rest), f["step_cores"], walls = _time_steps(self.synced, self.batches, self.steps)
        f["half_s"] = rest[0] if half < bs else f["step_s"]
        if self.on_host:
            f["double_s"] = rest[-1]
        f["spin_s"] = _spin_s(self.synced, self.batch)
        f.update(self._load_figures())
        f.update(self._pipeline_figures(running))
        return f, walls

    def _load_figures(self) -> dict:
        """Loading on one thread, as a worker does it (its I/O wait is what it does not spend on a core), then in
        one real worker process, and taking a ready batch from it."""
        torch = _torch()
        torch.set_num_threads(1)
        try:
            load1_s, cpu1_s = _time_load(self.inproc, self.n_load)
        finally:
            torch.set_num_threads(self.threads)
        worker_s, receive_s = _worker_load(self.loader, self.n_load) if self.is_dataloader else (load1_s, 0.0)
        # and at half the batch: what a worker spends per batch whatever its size (queues, shared memory)
        worker_half_s = (
            _worker_load(self.loader, self.n_load, self.half)[0] if self.is_dataloader and self.half < self.bs else None
        )
        return {
            "load1_s": load1_s,
            "cpu1_s": cpu1_s,
            "worker_s": worker_s,
            "receive_s": receive_s,
            "worker_half_s": worker_half_s,
        }

    def _pipeline_figures(self, running: dict) -> dict:
        """The pipeline as the user runs it, and the runs that share the cores with workers (see _start_pipelines)."""
        f = _run_pipeline(running["user"], self.bs, self.synced, self.steps, self.warmup)
        if "shared" in running:
            shared = _run_pipeline(running["shared"], self.bs, self.synced, self.steps, self.warmup)
            f["shared_step_ms"], f["shared_throughput"] = shared["loop_step_ms"], shared["throughput"]
        if "half" in running:
            f["half_throughput"] = _run_pipeline(running["half"], self.half, self.synced, self.steps, self.warmup)[
                "throughput"
            ]
        return f

    def loader_costs(self, med: dict) -> dict:
        """The loader's costs (seconds) from the medians: the I/O wait of a batch, preprocessing it (per batch
        whatever its size, the rest per sample) and a worker's hand-off beyond it (of it, per batch)."""
        bs, half = self.bs, self.half
        handoff_s = max(0.0, med["worker_s"] - med["load1_s"])
        io_s = max(0.0, med["load1_s"] - med["cpu1_s"])
        # loading's cost per batch whatever its size (the sampler, fetching, collating): where the line through
        # its two batch sizes meets zero; the per-sample rest is decoding and augmenting
        prep_s = max(0.0, med["load_s"] - io_s)
        prep_batch_s = (
            0.0
            if med["load_half_s"] is None
            else min(prep_s, max(0.0, _line([(half, med["load_half_s"] - io_s * half / bs), (bs, prep_s)])[0]))
        )
        # and the worker's, beyond it (queues, shared memory)
        per_batch_s = (
            0.0
            if med["worker_half_s"] is None
            else min(
                handoff_s, max(0.0, _line([(half, med["worker_half_s"]), (bs, med["worker_s"])])[0] - prep_batch_s)
            )
        )
        return {"io_s": io_s, "prep_s": prep_s, "prep_batch_s": prep_batch_s, "handoff_s": handoff_s,
                "per_batch_s": per_batch_s}  # fmt: skip

    def device_entry(self) -> tuple[dict, dict]:
        """This machine's device and its host link, measured, and the copy's figures: {pin, pageable_s, pinned_s,
        copy_s, half_copy_s}. On the CPU the step reads the batch where it lies; on an accelerator the copy is
        the host link's, the rest of the step the device's."""
        device, sync, pin = self.device, self.sync, bool(getattr(self.loader, "pin_memory", False))
        dev = _device_entry(device, sync, self.threads, self.cores)
        if self.on_host:
            link = {
                "name": "none: the step reads the batch where it lies",
                "bandwidth_gbs": 1e4,
                "pageable_factor": 1.0,
            }
            copy = {"pin": pin, "pageable_s": None, "pinned_s": None, "copy_s": 0.0, "half_copy_s": 0.0}
        else:
            pageable_s = _copy_s(device, self.h2d, False, sync)
            pinned_s = _copy_s(device, self.h2d, True, sync)
            pin = pin and pinned_s is not None
            fastest = pinned_s or pageable_s
            link = {
                "name": f"this machine's host-to-{device} link (measured)",
                "bandwidth_gbs": max(self.h2d, 1) / fastest / 1e9,
                "pageable_factor": fastest / pageable_s,
            }
            copy_s = pinned_s if pin else pageable_s
            copy = {"pin": pin, "pageable_s": pageable_s, "pinned_s": pinned_s, "copy_s": copy_s,
                    "half_copy_s": copy_s * self.half / self.bs}  # fmt: skip
        dev["host_link"] = link
        return dev, copy

    def base_scenario(self, med: dict, loading: dict, dev: dict, pin: bool, cv: float) -> Scenario:
        """The scenario of the measured pipeline, its device's FLOP rate and per-operator cost not yet fitted: the
        recorded step as a workload, the loader's costs, the I/O wait as the storage's latency."""
        bs, per, rec = self.bs, self.per, self.rec
        workload = {
            "name": "calibrated pipeline",
            "arch": "measured",
            "params": rec["params"],
            "matmul": per["matmul"],
            "other": per["other"],
            "device_bytes_per_sample": (_batch_bytes(self.batch) if self.on_host else self.h2d) / bs,
            "input_bytes_per_sample": 1.0,
            "preprocess_ms_per_sample": (loading["prep_s"] - loading["prep_batch_s"]) / bs * 1e3,
            "preprocess_ms_per_batch": loading["prep_batch_s"] * 1e3,
            "handoff_ms_per_sample": (loading["handoff_s"] - loading["per_batch_s"]) / bs * 1e3,
            "handoff_ms_per_batch": loading["per_batch_s"] * 1e3,
            "receive_ms_per_batch": med["receive_s"] * 1e3,
            "default_batch_size": bs,
        }
        storage = {
            "name": "this machine's dataset storage (measured)",
            "bandwidth_gbs": 1e4,
            "latency_ms": loading["io_s"] / bs * 1e3,
            "concurrency": 1,
        }
        return Scenario(
            kind="training" if rec["training"] else "inference",
            workload=workload,
            gpu=dev,
            precision="fp32",
            batch_size=bs,
            loader_workers=self.nw,
            prefetch_factor=getattr(self.loader, "prefetch_factor", None) or 2,
            cpu_cores=self.cores,
            storage=storage,
            pin_memory=pin,
            jitter_cv=round(min(1.0, cv), 3),
        )

    def fit(self, base: Scenario, med: dict, run: dict, copy: dict) -> dict:
        """The device fitted to the step times (_fit_device) and, where a run shared the cores with workers, to how
        well they share them (_fit_contention)."""
        bs, half, nw = self.bs, self.half, self.nw
        if self.on_host:  # the least-squares line through half, one and two batches, read at half and one
            a, b = _line([(half, med["half_s"]), (bs, med["step_s"]), (2 * bs, med["double_s"])])
            fit_s, fit_half_s = a + b * bs, a + b * half
        else:
            fit_s, fit_half_s = med["step_s"] - copy["copy_s"], med["half_s"] - copy["half_copy_s"]
        dev = _fit_device(base, bs, half, max(1e-9, fit_s), max(1e-9, fit_half_s))
        if self.on_host and (nw or "shared_step_ms" in med):  # a run shared the cores with workers: how well
            shared = (
                (nw, run["loop_step_ms"], run["throughput"])
                if nw
                else (1, med["shared_step_ms"], med["shared_throughput"])
            )
            dev = _fit_contention(
                base.replace(gpu=dev, loader_workers=shared[0]),
                *shared[1:],
                (half, med["half_throughput"]) if "half_throughput" in med else None,
            )
        return dev

    def result(self, scenario, base, dev, med, run, loading, copy, cv) -> Calibration:
        """The model of the pipeline beside the fastest run of it: the scenario simulated, and what was measured."""
        from .. import api

        r = api.simulate(scenario, suggest=False)
        waited = 1.0 - _loop_step_ms(r) / 1e3 * r.throughput / self.bs
        predicted = {
            "throughput": r.throughput,
            "wait_share": waited,
            "bottleneck": r.bottleneck,
            "loop_step_ms": _loop_step_ms(r),
        }
        return Calibration(scenario, self._measured(base, dev, med, run, loading, copy, cv), predicted)

    def _measured(self, base, dev, med, run, loading, copy, cv) -> dict:
        """Every figure measured or fitted, in the units Calibration.report() shows (ms, GB/s, GFLOP/s)."""
        bs, per = self.bs, self.per
        return {
            "batch_size": bs,
            "half_batch": self.half,
            "num_workers": self.nw,
            "cpu_cores": self.cores,
            "device": self.device,
            "load_ms": med["load_s"] * 1e3,
            "load_half_ms": med["load_half_s"] and med["load_half_s"] * 1e3,
            "preprocess_ms_per_batch": loading["prep_batch_s"] * 1e3,
            "load1_ms": med["load1_s"] * 1e3,
            "io_ms_per_sample": loading["io_s"] / bs * 1e3,
            "worker_ms": med["worker_s"] * 1e3,
            "worker_half_ms": med["worker_half_s"] and med["worker_half_s"] * 1e3,
            "handoff_ms_per_batch": loading["per_batch_s"] * 1e3,
            "half_throughput": med.get("half_throughput"),
            "receive_ms": med["receive_s"] * 1e3,
            "spin_ms": med["spin_s"] * 1e3,
            "step_ms": med["step_s"] * 1e3,
            "half_step_ms": med["half_s"] * 1e3,
            "double_step_ms": med["double_s"] * 1e3 if self.on_host else None,
            "step_cv": cv,
            "step_threads": dev.get("host_threads", 0),
            "step_cores": med["step_cores"],
            "kernels": int(per["matmul"]["kernels"] + per["other"]["kernels"]),
            "gflops_per_step": (per["matmul"]["flops"] + per["other"]["flops"]) * bs / 1e9,
            "params": int(self.rec["params"]),
            "kind": base.kind,
            "memory_bandwidth_gbs": dev["memory_bandwidth_gbs"],
            "copy_bytes_per_batch": self.h2d,
            "copy_pageable_ms": copy["pageable_s"] and copy["pageable_s"] * 1e3,
            "copy_pinned_ms": copy["pinned_s"] and copy["pinned_s"] * 1e3,
            "pin_memory": copy["pin"],
            "device_gflops": dev["peak_tflops"]["fp32"] * 1e3,
            "per_op_us": dev["launch_overhead_us"],
            "contention": dev.get("contention_efficiency"),
            "rounds": self.rounds,
            **run,
        }


def _memory_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30  # GiB, as the catalogue sizes memory
    except (ValueError, OSError, AttributeError):
        return 16.0


__all__ = ["Calibration", "calibrate", "record_step", "memory_bandwidth_gbs"]
