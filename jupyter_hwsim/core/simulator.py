"""The discrete-event engine: the PyTorch DataLoader pipeline as SimPy processes, one event per batch per stage.

Workers (or the main process when loader_workers=0) read a batch from storage
(a FIFO device whose service time is transfer + latency / concurrency) and
preprocess it on a core; at most loader_workers x prefetch_factor batches are in
flight. Pinned batches are copied ahead over the host link; pageable ones are
copied synchronously by the loop. Each step holds the GPU for its kernels while
the main process spends a core issuing them; the step ends when both are done.

A device that runs on the host's own cores (a CPU measured by calibrate) has no
GPU: its step's threads share the cores with the workers, as the OS scheduler
shares them (processor sharing, see _SharedCores).
"""

from __future__ import annotations

import math
import time

import numpy as np
import simpy

from .costs import contention, core_share, host_threads
from .errors import HwsimError

MAX_EVENTS = 50_000_000  # events of one run, whatever its time budget (about a minute of SimPy)
CHECK_EVERY = 4096  # events between two checks of the budget


class Environment(simpy.Environment):
    """SimPy's environment, counting the events it schedules: the `sim.events` figure of a result. With a budget it
    also enforces it from inside the event loop, every CHECK_EVERY events: past budget_s of wall time or MAX_EVENTS events,
    the run stops with an error naming `steps` (whatever the processes are doing between their own checks)."""

    def __init__(self, budget_s: float | None = None, steps: int | None = None) -> None:
        super().__init__()
        self.scheduled = 0
        self.budget_s, self.steps, self.wall0 = budget_s, steps, time.perf_counter()

    def schedule(self, event, priority=simpy.core.NORMAL, delay=0) -> None:
        self.scheduled += 1
        if self.scheduled % CHECK_EVERY == 0 and self.budget_s is not None:
            self.check_budget()
        super().schedule(event, priority, delay)

    def check_budget(self) -> None:
        if self.budget_s is not None and time.perf_counter() - self.wall0 > self.budget_s:
            raise HwsimError(
                "steps", self.steps, f"a run that fits the {self.budget_s:g} s simulation budget", "lower steps"
            )
        if self.scheduled > MAX_EVENTS:
            raise HwsimError("steps", self.steps, f"a run of at most {MAX_EVENTS:,} simulated events", "lower steps")


class Busy:
    """Busy intervals of one resource, clipped to the measured window later."""

    __slots__ = ("spans",)

    def __init__(self):
        self.spans = []

    def add(self, a, b, weight=1.0):
        self.spans.append((a, b, weight))

    def within(self, lo, hi):
        return sum(max(0.0, min(b, hi) - max(a, lo)) * w for a, b, w in self.spans)


class _SharedCores:
    """Cores shared fairly among the runnable threads, as the OS scheduler time-slices them.

    Every thread runs at share = min(1, cores / threads runnable), a gang of k threads (an OpenMP
    step of PyTorch on the CPU) counting k (costs.core_share: one worker beside a 2-thread step on
    2 cores: 2/3). While the cores are oversubscribed, each job's rate is also scaled by its
    measured efficiency (costs.contention). Work is in seconds it would take with every thread on a
    core of its own.
    """

    def __init__(self, env, cores: int, busy: Busy):
        self.env, self.cores, self.busy = env, cores, busy
        self.jobs: list[list] = []  # [seconds left, threads, event, efficiency while oversubscribed]
        self.last = 0.0
        self.version = 0

    def work(self, seconds: float, threads: int = 1, efficiency: float = 1.0):
        """An event that fires when this much work is done."""
        self._advance()
        event = self.env.event()
        self.jobs.append([seconds, threads, event, efficiency])
        self._schedule()
        return event

    def _rates(self):
        total = sum(j[1] for j in self.jobs)
        return total, [core_share(self.cores, total, j[3]) for j in self.jobs]

    def _advance(self):
        now = self.env.now
        if now > self.last and self.jobs:
            total, rates = self._rates()
            for j, rate in zip(self.jobs, rates):
                j[0] -= (now - self.last) * rate
            self.busy.add(self.last, now, min(self.cores, total))
        self.last = now

    def _schedule(self):
        for j in [j for j in self.jobs if j[0] <= 1e-12]:
            self.jobs.remove(j)
            j[2].succeed()
        if not self.jobs:
            return
        _, rates = self._rates()
        dt = min(j[0] / rate for j, rate in zip(self.jobs, rates))
        self.version += 1
        tick = self.env.timeout(dt)
        tick.callbacks.append(lambda _e, v=self.version: self._tick(v))

    def _tick(self, version):
        if version == self.version:
            self._advance()
            self._schedule()


def jitter(rng, cv, n):
    if cv <= 0:
        return np.ones(n)
    sigma2 = math.log1p(cv * cv)
    return rng.lognormal(-sigma2 / 2.0, math.sqrt(sigma2), n)


def run(m, d, seed: int, budget_s: float = 20.0) -> dict:
    s, st = m.s, d.step
    warmup = max(10, s.loader_workers * s.prefetch_factor + 2, s.steps // 10)
    total = warmup + s.steps
    # the loader keeps running ahead of the last step, as a real one does
    produced = total + max(1, s.loader_workers * s.prefetch_factor) + 2
    rng = np.random.default_rng(seed)
    jit = {k: jitter(rng, s.jitter_cv, produced) for k in ("storage", "pre", "copy", "gpu")}
    env = Environment(budget_s, s.steps)
    storage = simpy.Resource(env, capacity=1)
    link = simpy.Resource(env, capacity=1)
    busy = {k: Busy() for k in ("storage", "cpu", "link", "gpu", "worker_read", "worker_pre")}
    threads = host_threads(m)
    shared = _SharedCores(env, s.cpu_cores, busy["cpu"]) if threads else None
    step_eff, thread_eff = contention(m)
    cores = None if shared else simpy.Resource(env, capacity=s.cpu_cores)
    issue_waits = []  # (start, end) a step waited for a free core to issue its kernels
    stamps: dict[int, dict] = {}  # batch -> {stage: (start, end)}
    timeline = []
    ends = []
    waits = []  # (start, end, batch) the loop waited for input
    state = {"next": 0}
    wall0 = time.perf_counter()

    def hold(resource, key, duration):
        """Queue for the resource, hold it for duration, record the busy span; returns its start."""
        with resource.request() as req:
            yield req
            t1 = env.now
            yield env.timeout(duration)
            busy[key].add(t1, env.now)
        return t1

    def on_cores(duration, n=1, efficiency=None):
        """Run on the host's cores (one thread, or a gang of n); returns the start of the run."""
        if shared:
            t1 = env.now
            yield shared.work(duration, n, thread_eff if efficiency is None else efficiency)
            return t1
        return (yield from hold(cores, "cpu", duration))

    def read(b, track):
        if d.storage_s <= 0:
            return
        t0 = env.now
        t1 = yield from hold(storage, "storage", d.storage_s * jit["storage"][b])
        timeline.append(("storage", "read", t1, env.now, b))
        rest = (d.read_s - d.storage_s) * jit["storage"][b]  # latency in flight, beyond the device's share
        if rest > 0:
            yield env.timeout(rest)
        stamps.setdefault(b, {})["io"] = (t0, env.now)
        timeline.append((track, "read", t0, env.now, b))

    def preprocess(b, track):
        cost = d.preprocess_s + d.handoff_s  # a worker also hands its batch over (0 in the main process)
        if cost <= 0:
            return
        t0 = env.now
        t1 = yield from on_cores(cost * jit["pre"][b])
        stamps.setdefault(b, {})["pre"] = (t0, env.now)
        timeline.append((track, "preprocess", t1, env.now, b))

    def copy(b):
        if d.copy_s <= 0:
            return
        t0 = env.now
        t1 = yield from hold(link, "link", d.copy_s * jit["copy"][b])
        stamps.setdefault(b, {})["copy"] = (t0, env.now)
        timeline.append(("host_copy", "copy", t1, env.now, b))

    ready = simpy.Store(env)
    device_q = simpy.Store(env, capacity=1)
    slots = simpy.Container(
        env, capacity=max(1, s.loader_workers * s.prefetch_factor), init=max(1, s.loader_workers * s.prefetch_factor)
    )

    def worker(i):
        track = f"worker {i}"
        while state["next"] < produced:
            yield slots.get(1)
            if state["next"] >= produced:
                return
            b = state["next"]
            state["next"] += 1
            t0 = env.now
            yield from read(b, track)
            t1 = env.now
            yield from preprocess(b, track)
            busy["worker_read"].add(t0, t1)
            busy["worker_pre"].add(t1, env.now)
            yield ready.put(b)

    def copier():
        while True:
            b = yield ready.get()
            slots.put(1)
            yield from copy(b)
            yield device_q.put(b)

    def issue(b):
        t0 = env.now
        t1 = yield from hold(cores, "cpu", st.issue_s * jit["gpu"][b])
        if t1 > t0:  # every core was busy (loader workers beyond the cores): the loop could not issue
            issue_waits.append((t0, t1))

    def loop():
        for k in range(total):
            if s.loader_workers == 0:
                b = k
                t0 = env.now
                yield from read(b, "main")
                yield from preprocess(b, "main")
                yield from copy(b)
                waits.append((t0, env.now, b))
            else:
                t0 = env.now
                b = yield (device_q if s.pin_memory else ready).get()
                if d.receive_s > 0:  # the main process unpickles the batch a worker handed over
                    yield from on_cores(d.receive_s * jit["pre"][b])
                if not s.pin_memory:  # synchronous copy on the loop
                    slots.put(1)
                    yield from copy(b)
                waits.append((t0, env.now, b))
            t1 = env.now
            kernel = st.kernel_s * jit["gpu"][b]
            if shared:  # the step runs on the cores; what the workers' share stretches it by is CPU time
                yield from on_cores(kernel, threads, step_eff)
                if env.now > t1 + kernel:
                    issue_waits.append((t1 + kernel, env.now))
            else:
                yield env.all_of([env.timeout(kernel), env.process(issue(b))])
            busy["gpu"].add(t1, t1 + kernel, (st.compute_s + st.memory_s) / st.kernel_s if st.kernel_s else 0)
            timeline.append(("gpu", "step", t1, env.now, b))
            ends.append(env.now)
            if time.perf_counter() - wall0 > budget_s:
                raise HwsimError(
                    "steps", s.steps, f"a run that fits the {budget_s:g} s simulation budget", "lower steps"
                )

    for i in range(s.loader_workers):
        env.process(worker(i))
    if s.loader_workers and s.pin_memory:
        env.process(copier())
    done = env.process(loop())
    env.run(until=done)
    events = env.scheduled
    return {
        "env": env,
        "busy": busy,
        "stamps": stamps,
        "timeline": timeline,
        "ends": ends,
        "waits": waits,
        "issue_waits": issue_waits,
        "warmup": warmup,
        "events": events,
        "wall_ms": (time.perf_counter() - wall0) * 1e3,
    }


def _overlap(a, b, span):
    return max(0.0, min(b, span[1]) - max(a, span[0])) if span else 0.0


def measure(m, d, out: dict) -> dict:
    """Throughput, step-time percentiles, utilizations and GPU time over the measured window."""
    s, st = m.s, d.step
    ends, w = out["ends"], out["warmup"]
    lo, hi = ends[w - 1], ends[-1]
    window = hi - lo
    x = s.steps / window
    busy = out["busy"]
    util = {
        "storage": busy["storage"].within(lo, hi) / window,
        "cpu": busy["cpu"].within(lo, hi) / (window * s.cpu_cores),
        "host_link": busy["link"].within(lo, hi) / window,
        "gpu_busy": busy["gpu"].within(lo, hi) / window,
    }
    nw = s.loader_workers
    # workers split their time between reading (the disk's latency and queue included) and preprocessing
    read_share = busy["worker_read"].within(lo, hi) / (window * nw) if nw else 0.0
    pre_share = busy["worker_pre"].within(lo, hi) / (window * nw) if nw else 0.0
    io_sat, cpu_sat = max(util["storage"], read_share), max(util["cpu"], pre_share)
    if host_threads(m):  # the step's own threads keep the cores busy too: the loader saturates when its workers do
        cpu_sat = pre_share
    waits = {"input_io": 0.0, "input_preprocess": 0.0, "host_copy": 0.0}
    for a, b, batch in out["waits"]:
        a, b = max(a, lo), min(b, hi)
        if b <= a:
            continue
        sp = out["stamps"].get(batch, {})
        cp = _overlap(a, b, sp.get("copy"))
        waits["host_copy"] += cp
        if nw == 0:  # the loop itself read and preprocessed this batch: each part is its own cause
            waits["input_io"] += _overlap(a, b, sp.get("io"))
            waits["input_preprocess"] += _overlap(a, b, sp.get("pre"))
        else:  # waiting on the loader: the stage that keeps the workers busy is the cause
            waits["input_io" if io_sat >= cpu_sat else "input_preprocess"] += (b - a) - cp
    # a step that waited for a free core to issue its kernels waited on the CPU, not on launches
    issue_wait = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in out["issue_waits"])
    waits["input_preprocess"] += issue_wait
    # jitter scales kernels: measure the busy share and split it as the cost model does
    gpu_share = busy["gpu"].within(lo, hi) / window
    cm = st.compute_s + st.memory_s
    gpu_time = {
        "compute": gpu_share * st.compute_s / cm if cm else 0.0,
        "memory": gpu_share * st.memory_s / cm if cm else 0.0,
    }
    for k, v in waits.items():
        gpu_time[k] = v / window
    steps_wall = sum(max(0.0, min(b, hi) - max(a, lo)) for (trk, _, a, b, _) in out["timeline"] if trk == "gpu")
    gpu_time["launch"] = max(0.0, (steps_wall - issue_wait) / window - gpu_share)
    total = sum(gpu_time.values())
    gpu_time["idle"] = max(0.0, 1.0 - total)
    if total > 1.0:
        gpu_time = {k: v / total for k, v in gpu_time.items()}
    if nw == 0:
        sat = {"loop": 1.0, "io": util["storage"], "cpu": util["cpu"], "host_link": 0.0}
    else:
        starved = sum(gpu_time[k] for k in ("input_io", "input_preprocess")) + (
            gpu_time["host_copy"] if s.pin_memory else 0.0
        )
        sat = {
            "loop": 1.0 - starved,
            "io": io_sat,
            "cpu": cpu_sat,
            "host_link": util["host_link"] if s.pin_memory else 0.0,
        }
    step_ms = np.diff(np.asarray(ends[w - 1 :])) * 1e3
    return {
        "batches_per_s": x,
        "gpu_time": gpu_time,
        "utilization": util,
        "saturation": sat,
        "step_ms": step_ms,
        "window_s": window,
        "warmup_s": lo,
    }
