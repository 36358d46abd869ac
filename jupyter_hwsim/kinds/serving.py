"""Online serving (kind="serving"): requests, CPU preprocessing, a dynamic batcher, copy and one GPU step per
batch, on `replicas` identical instances.

The batcher works as Triton's dynamic batcher: when an instance is free and a
request waits, it dispatches as soon as max_batch_size requests are queued or the
oldest has waited max_queue_delay_ms, whichever comes first.
"""

from __future__ import annotations

import math
import time

import numpy as np
import simpy

from ..core import costs
from ..core.errors import HwsimError
from ..core.simulator import Busy, Environment, jitter
from ..diagnosis import engine_changes, lower_precisions, native_precisions, next_gpu, oom_sentence
from .base import Candidate, KindBase, percentiles, step_details

DEFAULT_RATE_RPS = 100.0
# The closed forms' model choices (assumptions, checked only against the simulation they stand in for):
# light load holds while the instance is busy less than this share of the time; above it the busy regime's
# fixed point b = lam x S(b) is taken (assumption: where the light-load window formula stops matching)
LIGHT_LOAD_MAX_UTILIZATION = 0.9
# saturated, the k-th request waits about k (1/capacity - 1/rate); a measured request's mean k is this share of
# the requests (assumption, reasoning not recorded: a little past the half, as the warm-up requests come first
# and are left out of the measurement)
SATURATED_MEAN_POSITION = 0.55
# a closed loop is held just below capacity while it iterates, so that 1 - utilization stays positive and the
# queueing formulas finite (assumption: numerical, not physical)
CLOSED_LOOP_MAX_LOAD = 0.999
_BREAKDOWN = ("queueing", "batch_formation", "preprocessing", "copy", "compute")


def offered_rate(s) -> float | None:
    """Requests/s offered by an open loop; None for a closed loop of clients."""
    if s.arrival_rate_rps:
        return s.arrival_rate_rps
    return None if s.concurrency else DEFAULT_RATE_RPS


class BatchCosts:
    """Copy and GPU-step seconds of a batch of n requests, computed once per size."""

    def __init__(self, m):
        self.m, self._c, self._p = m, {}, {}
        factor = 1.0 if m.s.pin_memory else float(m.link.get("pageable_factor", 1.0))
        self.copy_per_req = m.device_bytes / (m.link_gbs * 1e9 * factor)
        self.pre_s = m.preprocess_ms / 1e3 / m.s.cpu_speed

    def step(self, n: int):
        c = self._c.get(n)
        if c is None:
            c = self._c[n] = costs.step_cost(self.m, batch=n)
        return c

    def parts(self, n: int) -> tuple:
        """(step_s, compute_s, memory_s, flops, hbm_bytes, issue_s) of a batch of n."""
        p = self._p.get(n)
        if p is None:
            st = self.step(n)
            p = self._p[n] = (st.step_s, st.compute_s, st.memory_s, st.flops, st.hbm_bytes, st.issue_s)
        return p

    def copy(self, n: int) -> float:
        return n * self.copy_per_req


def workers(m) -> int:
    """Preprocessing processes that run at once: the loader workers, at most one per core."""
    return max(1, min(m.s.loader_workers or 1, m.s.cpu_cores))


def run(m, bc: BatchCosts, seed: int, budget_s: float = 20.0) -> dict:
    s = m.s
    n = s.steps + max(10, s.steps // 10)  # a tenth more as warm-up, measured from the start
    rng = np.random.default_rng(seed)
    cv = s.jitter_cv
    jit = {k: jitter(rng, cv, n).tolist() for k in ("pre", "copy", "gpu")}
    rate = offered_rate(s)
    env = Environment(budget_s, s.steps)
    pre = simpy.Resource(env, capacity=workers(m))
    busy = {k: Busy() for k in ("cpu", "link", "gpu")}
    t = {k: [math.nan] * n for k in ("arrive", "pre0", "inq", "form", "disp", "copy1", "done")}
    arrive, pre0, inq, form_t, disp, copy1, done_t = (
        t[k] for k in ("arrive", "pre0", "inq", "form", "disp", "copy1", "done")
    )
    batches = []  # (dispatch time, size)
    queue = []
    timeline = []
    sig = {"ev": env.event()}
    done_ev = {}
    records = []  # (start, end, compute, memory, launch, flops, bytes, issue) per batch
    wall0 = time.perf_counter()
    count = {"made": 0, "served": 0, "done": 0}
    all_done = env.event()
    maxb, delay = m.batch, s.max_queue_delay_ms / 1e3

    def enqueue(i):
        inq[i] = env.now
        queue.append(i)
        ev, sig["ev"] = sig["ev"], env.event()
        ev.succeed()

    def request(i):
        arrive[i] = env.now
        if bc.pre_s > 0:
            with pre.request() as req:
                yield req
                pre0[i] = env.now
                yield env.timeout(bc.pre_s * jit["pre"][i])
                busy["cpu"].add(pre0[i], env.now)
                timeline.append(("preprocess", "preprocess", pre0[i], env.now, i))
        else:
            pre0[i] = env.now
        enqueue(i)

    def open_loop():
        gaps = rng.exponential(1.0 / rate, n)
        for i in range(n):
            yield env.timeout(gaps[i])
            count["made"] += 1
            if bc.pre_s > 0:
                env.process(request(i))
            else:
                arrive[i] = pre0[i] = env.now
                enqueue(i)

    def client():
        while count["made"] < n:
            if s.think_time_ms > 0:
                yield env.timeout(rng.exponential(s.think_time_ms / 1e3))
            if count["made"] >= n:
                return
            i = count["made"]
            count["made"] += 1
            done_ev[i] = env.event()
            yield from request(i)
            yield done_ev[i]

    def instance(g):
        """One model instance with its own GPU and link: forms a batch when free, copies it, runs it.
        A batch holds its instance from dispatch to done, so copies never contend for a link."""
        track = "gpu" if s.replicas == 1 else f"gpu {g}"
        while count["served"] < n:
            while True:  # another free instance may take the queue while this one waits for companions
                while not queue:
                    if count["served"] >= n:
                        return
                    yield sig["ev"]
                form = env.now
                while queue and len(queue) < maxb and env.now < inq[queue[0]] + delay:
                    yield sig["ev"] | env.timeout(inq[queue[0]] + delay - env.now)
                if queue:
                    break
            batch = queue[:maxb]
            del queue[:maxb]
            count["served"] += len(batch)
            k, lead = len(batch), batch[0]
            t0 = env.now
            batches.append((t0, k))
            c = bc.copy(k) * jit["copy"][lead]
            step_s, compute_s, memory_s, flops, nbytes, issue_s = bc.parts(k)
            j = jit["gpu"][lead]
            yield env.timeout(c + step_s * j)
            g0, now = t0 + c, env.now
            for i in batch:
                form_t[i], disp[i], copy1[i], done_t[i] = form, t0, g0, now
                if i in done_ev:
                    done_ev.pop(i).succeed()
            if c > 0:
                busy["link"].add(t0, g0)
                timeline.append(("host_copy" if s.replicas == 1 else f"host_copy {g}", "copy", t0, g0, lead))
            records.append(
                (g0, now, compute_s * j, memory_s * j, (step_s - compute_s - memory_s) * j, flops, nbytes, issue_s)
            )
            busy["gpu"].add(g0, g0 + (compute_s + memory_s) * j)
            timeline.append((track, f"batch of {k}", g0, now, lead))
            count["done"] += k
            if count["done"] >= n:
                all_done.succeed()
            if time.perf_counter() - wall0 > budget_s:
                raise HwsimError(
                    "steps", s.steps, f"a run that fits the {budget_s:g} s simulation budget", "lower steps"
                )

    if rate:
        env.process(open_loop())
    else:
        for _ in range(s.concurrency):
            env.process(client())
    for g in range(s.replicas):
        env.process(instance(g))
    env.run(until=all_done)
    return {
        "t": {k: np.asarray(v) for k, v in t.items()},
        "batches": batches,
        "busy": busy,
        "records": records,
        "timeline": timeline,
        "warm": n - s.steps,
        "events": env.scheduled,
        "end": env.now,
        "wall_ms": (time.perf_counter() - wall0) * 1e3,
    }


def breakdown(t: dict, ids) -> dict:
    """Seconds per request in each part of its latency; the parts sum to its latency."""
    start = np.maximum(t["inq"][ids], t["form"][ids])
    return {
        "queueing": (t["pre0"][ids] - t["arrive"][ids]) + (start - t["inq"][ids]),
        "batch_formation": t["disp"][ids] - start,
        "preprocessing": t["inq"][ids] - t["pre0"][ids],
        "copy": t["copy1"][ids] - t["disp"][ids],
        "compute": t["done"][ids] - t["copy1"][ids],
    }


def measure(m, bc: BatchCosts, out: dict) -> dict:
    """Throughput, latency and its parts, goodput, batch sizes and utilization after the warm-up."""
    s, t = m.s, out["t"]
    order = np.argsort(t["done"], kind="stable")
    lo, hi = float(t["done"][order[out["warm"] - 1]]), float(t["done"][order[-1]])
    span = hi - lo
    ids = order[out["warm"] :]
    lat = t["done"][ids] - t["arrive"][ids]
    x = len(ids) / span
    parts = breakdown(t, ids)
    in_system = np.clip(np.minimum(t["done"], hi) - np.maximum(t["arrive"], lo), 0, None).sum() / span
    sizes = [k for (td, k) in out["batches"] if lo < td <= hi] or [k for (_, k) in out["batches"]]
    hist = {int(k): float(c) / len(sizes) for k, c in zip(*np.unique(sizes, return_counts=True))}
    tot = dict.fromkeys(("compute", "memory", "launch", "flops", "bytes", "issue"), 0.0)
    for a, b, c, mm, la, fl, by, iss in out["records"]:
        f = max(0.0, min(b, hi) - max(a, lo)) / (b - a) if b > a else 0.0
        for k, v in zip(tot, (c, mm, la, fl, by, iss)):
            tot[k] += v * f
    r = s.replicas
    gpu_time = {
        "compute": tot["compute"] / (span * r),
        "memory": tot["memory"] / (span * r),
        "launch": tot["launch"] / (span * r),
        "host_copy": out["busy"]["link"].within(lo, hi) / (span * r),
    }
    gpu_time["idle"] = max(0.0, 1.0 - sum(gpu_time.values()))
    cpu_busy = out["busy"]["cpu"].within(lo, hi)
    util = {
        "storage": 0.0,
        "cpu": min(1.0, (cpu_busy + tot["issue"]) / (span * s.cpu_cores)),
        "host_link": gpu_time["host_copy"],
        "gpu_busy": out["busy"]["gpu"].within(lo, hi) / (span * r),
    }
    sat = {
        "loop": 1.0 - gpu_time["idle"],
        "cpu": cpu_busy / (span * workers(m)),
        "host_link": util["host_link"],
        "arrivals": gpu_time["idle"],
    }
    return {
        "throughput": x,
        "latency_ms": {k: v * 1e3 for k, v in percentiles(lat).items()},
        "latency_breakdown_ms": {k: float(np.mean(v)) * 1e3 for k, v in parts.items()},
        "goodput": x * float(np.mean(lat * 1e3 <= s.latency_slo_ms)),
        "batch_sizes": hist,
        "in_system": float(in_system),
        "gpu_time": gpu_time,
        "utilization": util,
        "saturation": sat,
        "flops_per_s": tot["flops"] / (span * r),
        "bytes_per_s": tot["bytes"] / (span * r),
        "window_s": span,
        "warmup_s": lo,
    }


def _service(bc: BatchCosts, b: float) -> float:
    """Copy + step seconds of a batch; linear between whole batch sizes so fixed points can be solved."""
    lo = max(1, int(math.floor(b)))
    f = b - lo

    def whole(n):
        return bc.copy(n) + bc.step(n).step_s

    return whole(lo) if f <= 0 else (1 - f) * whole(lo) + f * whole(lo + 1)


def _batching(bc: BatchCosts, lam_r: float, maxb: int, delay_s: float, cv2: float, n_req: int):
    """(batch size, waiting for companions, queueing) per request at rate lam_r on one instance.

    Light load: a lone request on an idle instance opens a window of the queue delay
    (or until the batch is full), then M/G/1 for the batches (Pollaczek-Khinchine).
    Heavy load: the instance never idles and a batch is what arrived during the last
    service, b = lam_r x S(b); a request waits for the residual service. Past the
    capacity of full batches the queue grows for the whole run.
    """
    window = min(delay_s, (maxb - 1) / lam_r) if maxb > 1 else 0.0
    b = min(float(maxb), 1.0 + lam_r * window)
    svc = _service(bc, b)
    rho = lam_r * svc / b
    if rho < 1 and (maxb == 1 or rho < LIGHT_LOAD_MAX_UTILIZATION):
        form = window * (1 + (b - 1) / 2) / b
        lo_b = max(1, int(b))  # copy and step jitter independently: E[S^2] = S^2 + cv^2 (copy^2 + step^2)
        es2 = svc**2 + cv2 * (bc.copy(lo_b) ** 2 + bc.step(lo_b).step_s ** 2)
        return b, form, (lam_r / b) * es2 / (2 * (1 - rho))
    cap = maxb / _service(bc, maxb)
    if lam_r < cap:  # busy regime: solve b = lam_r S(b) between the light-load batch and a full one
        lo, hi = b, float(maxb)
        for _ in range(50):
            mid = (lo + hi) / 2
            if lam_r * _service(bc, mid) > mid:
                lo = mid
            else:
                hi = mid
        b = hi
        svc = _service(bc, b)
        return b, 0.0, svc * (1 + cv2) / 2
    # saturated: the k-th request waits about k (1/cap - 1/lam); the measured requests average k ~ n/2
    return float(maxb), 0.0, SATURATED_MEAN_POSITION * n_req * (1 / cap - 1 / lam_r)


def steady_state(m, bc: BatchCosts) -> dict:
    """Closed form: the batch size the load sustains, then queueing for batches (see _batching).

    With max_batch_size=1 this is exactly M/G/1 (Pollaczek-Khinchine); with batching
    it is an approximation that the simulation replaces.
    """
    s = m.s
    r, maxb, cv2 = s.replicas, m.batch, s.jitter_cv**2
    cap_gpu = r * maxb / _service(bc, maxb)
    cap_cpu = workers(m) / bc.pre_s if bc.pre_s > 0 else math.inf
    cap = min(cap_gpu, cap_cpu)
    lam = offered_rate(s)
    closed = lam is None
    if closed:  # closed loop: Little's law over the clients, iterated with the latency
        lam = min(cap, s.concurrency / max(1e-9, _service(bc, 1) + s.think_time_ms / 1e3))
    n_req = s.steps + max(10, s.steps // 10)
    for _ in range(40 if closed else 1):
        if closed:
            lam = min(lam, cap * CLOSED_LOOP_MAX_LOAD)
        lam_r = min(lam, cap_cpu) / r  # the CPU stage passes at most its capacity on to the GPUs
        b, form, wq = _batching(bc, lam_r, maxb, s.max_queue_delay_ms / 1e3, cv2, n_req)
        svc = _service(bc, b)
        pre_w = 0.0
        if bc.pre_s > 0:
            c = workers(m)
            if lam < cap_cpu:  # wait for one of c workers (Sakasegawa's M/G/c approximation)
                rho_p = lam * bc.pre_s / c
                pre_w = rho_p ** math.sqrt(2 * (c + 1)) / (1 - rho_p) * bc.pre_s / c * (1 + cv2) / 2
            else:  # saturated workers: the queue grows for the whole run
                pre_w = SATURATED_MEAN_POSITION * n_req * (1 / cap_cpu - 1 / lam)
        lat = pre_w + bc.pre_s + form + wq + svc
        if closed:
            lam = 0.5 * lam + 0.5 * min(cap, s.concurrency / (lat + s.think_time_ms / 1e3))
    rho = min(1.0, lam / r * svc / b)
    b_int = max(1, round(b))
    x = min(lam, cap)
    st = bc.step(b_int)
    per_batch = x / b / r
    gpu_time = {
        "compute": per_batch * st.compute_s,
        "memory": per_batch * st.memory_s,
        "launch": per_batch * (st.step_s - st.compute_s - st.memory_s),
        "host_copy": per_batch * bc.copy(b_int),
    }
    gpu_time = {k: min(1.0, v) for k, v in gpu_time.items()}
    gpu_time["idle"] = max(0.0, 1.0 - sum(gpu_time.values()))
    p_wait = min(1.0, rho)  # waiting time: no wait with probability 1 - rho, else exponential
    fixed = bc.pre_s + svc + form + pre_w

    def q(p):
        if not math.isfinite(wq):
            return math.inf
        return fixed + (0.0 if p <= 1 - p_wait else wq / p_wait * math.log(p_wait / (1 - p)))

    lat_ms = {"p50": q(0.5) * 1e3, "p95": q(0.95) * 1e3, "p99": q(0.99) * 1e3, "mean": lat * 1e3}
    cpu = x * bc.pre_s
    util = {
        "storage": 0.0,
        "cpu": min(1.0, (cpu + per_batch * r * st.issue_s) / s.cpu_cores),
        "host_link": gpu_time["host_copy"],
        "gpu_busy": gpu_time["compute"] + gpu_time["memory"],
    }
    sat = {
        "loop": 1.0 - gpu_time["idle"],
        "cpu": cpu / workers(m),
        "host_link": util["host_link"],
        "arrivals": gpu_time["idle"],
    }
    slack = s.latency_slo_ms / 1e3 - fixed
    if slack < 0:
        within = 0.0
    elif not math.isfinite(wq) or wq <= 0:
        within = 1.0 if math.isfinite(wq) else 0.0
    else:
        within = 1.0 - p_wait * math.exp(-slack * p_wait / wq)
    good = x * within
    return {
        "throughput": x,
        "latency_ms": lat_ms,
        "latency_breakdown_ms": {
            "queueing": (wq + pre_w) * 1e3,
            "batch_formation": form * 1e3,
            "preprocessing": bc.pre_s * 1e3,
            "copy": bc.copy(b_int) * 1e3,
            "compute": st.step_s * 1e3,
        },
        "goodput": good,
        "batch_sizes": {b_int: 1.0},
        "gpu_time": gpu_time,
        "utilization": util,
        "saturation": sat,
        "flops_per_s": per_batch * st.flops,
        "bytes_per_s": per_batch * st.hbm_bytes,
        "capacity_rps": cap,
        "window_s": 0.0,
        "warmup_s": 0.0,
    }


def _explain(b, m, d, util, mem, state) -> str:
    s = m.s
    if b == "memory_capacity":
        return oom_sentence(m, mem) + "Use a smaller max_batch_size, a lower precision or a device with more memory."
    step_ms = d.step(m.batch).step_s * 1e3
    if b == "arrivals":
        cap = (state or {}).get("capacity_rps")
        cap_txt = f" against a capacity of about {cap:,.0f}" if cap else ""
        rate = (
            f"{s.arrival_rate_rps or 100:g} requests/s"
            if not s.concurrency or s.arrival_rate_rps
            else f"{s.concurrency} clients"
        )
        idle = (state or {}).get("gpu_time", {}).get("idle", 1 - util["gpu_busy"])
        return (
            f"Nothing saturates: the GPU idles {idle:.0%} of the time waiting for requests "
            f"({rate}{cap_txt}). Latency is one batch's service plus the batcher's wait; a faster GPU "
            "would only idle more."
        )
    if b == "cpu":
        return (
            f"Preprocessing limits the server: each request costs {d.pre_s * 1e3:.2f} ms of CPU on "
            f"{min(s.loader_workers or 1, s.cpu_cores)} worker(s). More workers or cores, or cheaper "
            "preprocessing, raise capacity."
        )
    if b == "host_link":
        return (
            f"Copying batches to the device binds: {d.copy(m.batch) * 1e3:.2f} ms per batch of {m.batch} "
            f"over {m.link.get('name', 'the host link')}."
        )
    if b == "overhead":
        return (
            f"The GPU waits on kernel launches: a batch of {m.batch} runs in {step_ms:.2f} ms, most of it "
            "issuing kernels. Larger batches, compilation or a TensorRT-like engine amortize them."
        )
    bound = "memory-bound" if b == "memory_bw" else "compute-bound"
    return (
        f"The GPU is saturated and {bound}: a full batch of {m.batch} takes {step_ms:.2f} ms, so requests "
        "queue. A larger max_batch_size (if the latency budget allows), more replicas, lower precision "
        "or a faster GPU raise capacity."
    )


def _candidates(m, bottleneck: str, mem: dict) -> list[Candidate]:
    s, out = m.s, []
    if bottleneck == "memory_capacity":
        b = m.batch
        while b > 1 and len(out) < 4:
            b //= 2
            out.append((f"max_batch_size={b}", {"max_batch_size": b}, "less activation memory"))
        for p in lower_precisions(s, ("bf16", "int8")):
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
    out += native_precisions(m)
    if s.precision in ("fp32", "tf32"):
        p = "bf16" if "bf16" in m.device["peak_tflops"] else "fp16"
        out.append((f"precision={p}", {"precision": p}, "tensor-core math, half the bytes"))
    elif s.precision in ("fp16", "bf16"):
        out.append(("precision=int8", {"precision": "int8"}, "half the bytes again"))
    out += engine_changes(
        s, [("tensorrt", "fused engine, graph launch"), ("onnxruntime", "fused, no Python per operator")]
    )
    if not s.pin_memory:
        out.append(("pin_memory=true", {"pin_memory": True}, "asynchronous copies"))
    out.append((f"gpu={next_gpu(m)}", {"gpu": next_gpu(m)}, "a faster chip"))
    return out


class ServingKind(KindBase):
    """Online serving: requests through CPU preprocessing and a dynamic batcher onto the GPU."""

    name = "serving"

    def prepare(self, m):
        return BatchCosts(m), costs.memory(m)

    def state(self, m, d, method, seed, budget_s):
        if method == "estimate":
            state, sim, timeline = steady_state(m, d), {}, []
        else:
            out = run(m, d, seed, budget_s)
            state = measure(m, d, out)
            timeline = out["timeline"]
            sim = {"events": out["events"], "simulated_s": float(out["end"]), "warmup_s": float(state["warmup_s"])}
        state["extra"] = {k: state[k] for k in ("goodput", "latency_breakdown_ms", "batch_sizes")}
        return state, sim, timeline

    def details(self, m, d, mem, state):
        out = step_details(m, d.step(m.batch))
        out.update(
            max_batch_size=m.batch,
            offered_rps=offered_rate(m.s),
            demand_ms={"preprocess": d.pre_s * 1e3, "copy": d.copy(m.batch) * 1e3},
            capacity_rps=(state or {}).get("capacity_rps"),
            in_system=(state or {}).get("in_system"),
        )
        if m.s.replicas > 1:
            out["replicas"] = m.s.replicas
        return out

    def explain(self, b, m, d, util, mem, state):
        return _explain(b, m, d, util, mem, state)

    def candidates(self, m, b, mem):
        return _candidates(m, b, mem)

    def offered(self, s):
        return offered_rate(s)


SERVING = ServingKind()
