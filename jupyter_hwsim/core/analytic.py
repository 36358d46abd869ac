"""The analytic twin: steady state from the bottleneck law, in well under a millisecond.

Throughput X (batches/s) is the smallest stage capacity; each resource's
utilization is X times its demand per batch (the utilization law).
"""

from __future__ import annotations

from .costs import contention, core_share, host_threads


def steady_state(m, d) -> dict:
    s, st = m.s, d.step
    if host_threads(m) and s.loader_workers:
        return _shared_cores(m, d)
    pageable = 0.0 if s.pin_memory else d.copy_s
    issue_wait = max(0.0, st.issue_s - st.kernel_s)
    cpu_demand = d.preprocess_s + st.issue_s
    if s.loader_workers == 0:
        loop = d.read_s + d.preprocess_s + d.copy_s + st.step_s
        x = 1.0 / loop
        wait = {"input_io": x * d.read_s, "input_preprocess": x * d.preprocess_s, "host_copy": x * d.copy_s}
        sat = {"loop": 1.0, "io": x * d.storage_s, "cpu": x * cpu_demand / s.cpu_cores, "host_link": 0.0}
    else:
        inf = float("inf")
        # the workers' own capacity binds as io when they mostly wait on reads (storage latency), else as cpu
        workers = s.loader_workers / (d.read_s + d.preprocess_s) if d.read_s + d.preprocess_s > 0 else inf
        reading = d.read_s > d.preprocess_s
        caps = {
            "io": min(1.0 / d.storage_s if d.storage_s > 0 else inf, workers if reading else inf),
            "cpu": min(s.cpu_cores / cpu_demand if cpu_demand > 0 else inf, inf if reading else workers),
            "host_link": 1.0 / d.copy_s if (s.pin_memory and d.copy_s > 0) else float("inf"),
            "loop": 1.0 / (st.step_s + pageable),
        }
        x = min(caps.values())
        sat = {k: x / v if v != float("inf") else 0.0 for k, v in caps.items()}
        starved = max(0.0, 1.0 - x * (st.step_s + pageable))
        cause = min(("io", "cpu", "host_link"), key=lambda k: caps[k])
        wait = {"input_io": 0.0, "input_preprocess": 0.0, "host_copy": x * pageable}
        if starved > 1e-12:
            wait[{"io": "input_io", "cpu": "input_preprocess", "host_link": "host_copy"}[cause]] += starved
    gpu_time = {
        "compute": x * st.compute_s,
        "memory": x * st.memory_s,
        "launch": x * (st.launch_dev_s + issue_wait),
        **wait,
    }
    gpu_time["idle"] = max(0.0, 1.0 - sum(gpu_time.values()))
    util = {
        "storage": x * d.storage_s,
        "cpu": min(1.0, x * cpu_demand / s.cpu_cores),
        "host_link": x * d.copy_s,
        "gpu_busy": x * (st.compute_s + st.memory_s),
    }
    out = {"batches_per_s": x, "gpu_time": gpu_time, "utilization": util, "saturation": sat, "step_ms": [1e3 / x]}
    if s.loader_workers:  # stages that overlap: each one's capacity (batches/s), the smallest is x
        out["capacity"] = caps
    return out


def _shared_cores(m, d) -> dict:
    """A step on the host's own cores beside the loader workers: the fluid limit of the engine's
    processor sharing. Per batch the loop receives it (one thread, R) and steps (a gang of c threads,
    S alone, stretched by costs.core_share); n workers spend W core-seconds on it meanwhile. If they are
    still busy when the step ends, the loop waits for them (loader-bound); else only k < n run on
    average, found where they produce one batch per loop cycle."""
    s, st = m.s, d.step
    c, cores, n = host_threads(m), s.cpu_cores, s.loader_workers
    R, S, W = d.receive_s, st.kernel_s, d.preprocess_s + d.handoff_s
    step_eff, thread_eff = contention(m)

    def share(threads):
        return core_share(cores, threads, thread_eff)

    def cycle(k):  # (loop seconds, core-seconds the k workers get meanwhile)
        t_r, t_s = R / share(k + 1), S / core_share(cores, k + c, step_eff)
        return t_r + t_s, k * (share(k + 1) * t_r + share(k + c) * t_s)

    loop_s, got = cycle(n)
    if got < W:  # loader-bound: the loop waits while the workers finish alone
        k, loop_s = float(n), loop_s + (W - got) / (n * share(n))
    else:
        lo, hi = 0.0, float(n)
        for _ in range(60):
            k = (lo + hi) / 2
            lo, hi = (k, hi) if cycle(k)[1] < W else (lo, k)
        k, loop_s = hi, cycle(hi)[0]
    x = min(1.0 / loop_s, n / (W + d.read_s) if W + d.read_s > 0 else float("inf"))
    waiting = max(0.0, 1.0 - x * S)
    cause = "input_io" if d.read_s > W else "input_preprocess"
    gpu_time = {
        "compute": x * st.compute_s,
        "memory": x * st.memory_s,
        "launch": x * st.launch_dev_s,
        "input_io": 0.0,
        "input_preprocess": 0.0,
        "host_copy": 0.0,
    }
    gpu_time[cause] = waiting
    gpu_time["idle"] = max(0.0, 1.0 - sum(gpu_time.values()))
    core_s = W + R + c * core_share(cores, k + c) * S / core_share(cores, k + c, step_eff)
    util = {
        "storage": x * d.storage_s,
        "cpu": min(1.0, x * core_s / cores),
        "host_link": x * d.copy_s,
        "gpu_busy": x * (st.compute_s + st.memory_s),
    }
    sat = {"loop": x * S, "io": x * d.storage_s, "cpu": k / n, "host_link": 0.0}
    return {"batches_per_s": x, "gpu_time": gpu_time, "utilization": util, "saturation": sat, "step_ms": [1e3 / x]}
