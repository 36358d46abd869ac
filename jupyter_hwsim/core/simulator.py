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


MIN_WARMUP_STEPS = 10  # steps left out of the measurement at least (the pipeline fills its queues first)
WARMUP_SHARE = 10  # and at least one step in this many of the run
LOOKAHEAD_BATCHES = 2  # batches the loader may fetch beyond its prefetch slots and the last step


class _Pipeline:
    """One seeded run of the DataLoader pipeline: its resources, its processes and what they record.

    The processes are methods so that each stage reads as one short step; their events, and the order in
    which they are scheduled, are those of one generator per process (`yield from` adds no event)."""

    def __init__(self, m, d, seed: int, budget_s: float):
        s = self.s = m.s
        self.d, self.st, self.budget_s = d, d.step, budget_s
        in_flight = max(1, s.loader_workers * s.prefetch_factor)  # batches the workers may hold at once
        # warm-up: at least the batches the prefetch slots hold plus two (assumption: the queues have filled)
        self.warmup = max(MIN_WARMUP_STEPS, s.loader_workers * s.prefetch_factor + 2, s.steps // WARMUP_SHARE)
        self.total = self.warmup + s.steps
        # the loader keeps running ahead of the last step, as a real one does
        self.produced = self.total + in_flight + LOOKAHEAD_BATCHES
        rng = np.random.default_rng(seed)
        self.jit = {k: jitter(rng, s.jitter_cv, self.produced) for k in ("storage", "pre", "copy", "gpu")}
        self._resources(m, budget_s)
        self.issue_waits: list = []  # (start, end) a step waited for a free core to issue its kernels
        self.stamps: dict[int, dict] = {}  # batch -> {stage: (start, end)}
        self.timeline: list = []
        self.ends: list = []
        self.waits: list = []  # (start, end, batch) the loop waited for input
        self.next_batch = 0
        self.wall0 = time.perf_counter()
        env = self.env
        self.ready = simpy.Store(env)  # loaded batches, in the order they are done
        self.device_q = simpy.Store(env, capacity=1)  # a pinned batch copied ahead to the device
        self.slots = simpy.Container(env, capacity=in_flight, init=in_flight)  # prefetch slots

    def _resources(self, m, budget_s: float) -> None:
        """The environment, the FIFO storage and link, and the host's cores: a FIFO pool of cores, or cores
        shared with the step's own threads when the device is the host CPU."""
        s = self.s
        self.env = env = Environment(budget_s, s.steps)
        self.storage = simpy.Resource(env, capacity=1)
        self.link = simpy.Resource(env, capacity=1)
        self.busy = {k: Busy() for k in ("storage", "cpu", "link", "gpu", "worker_read", "worker_pre")}
        self.threads = host_threads(m)
        self.shared = _SharedCores(env, s.cpu_cores, self.busy["cpu"]) if self.threads else None
        self.step_eff, self.thread_eff = contention(m)
        self.cores = None if self.shared else simpy.Resource(env, capacity=s.cpu_cores)

    def run(self) -> dict:
        """Start the workers, the copier (pinned memory) and the loop; run until the loop's last step."""
        s, env = self.s, self.env
        for i in range(s.loader_workers):
            env.process(self.worker(i))
        if s.loader_workers and s.pin_memory:
            env.process(self.copier())
        done = env.process(self.loop())
        env.run(until=done)
        return {
            "env": env,
            "busy": self.busy,
            "stamps": self.stamps,
            "timeline": self.timeline,
            "ends": self.ends,
            "waits": self.waits,
            "issue_waits": self.issue_waits,
            "warmup": self.warmup,
            "events": env.scheduled,
            "wall_ms": (time.perf_counter() - self.wall0) * 1e3,
        }

    # -- holding resources

    def hold(self, resource, key, duration):
        """Queue for the resource, hold it for duration, record the busy span; returns its start."""
        env = self.env
        with resource.request() as req:
            yield req
            t1 = env.now
            yield env.timeout(duration)
            self.busy[key].add(t1, env.now)
        return t1

    def on_cores(self, duration, n=1, efficiency=None):
        """Run on the host's cores (one thread, or a gang of n); returns the start of the run."""
        if self.shared:
            t1 = self.env.now
            yield self.shared.work(duration, n, self.thread_eff if efficiency is None else efficiency)
            return t1
        return (yield from self.hold(self.cores, "cpu", duration))

    # -- the stages of one batch

    def read(self, b, track):
        """Read batch b from storage: the device's share in its FIFO queue, then the latency in flight."""
        d, env = self.d, self.env
        if d.storage_s <= 0:
            return
        t0 = env.now
        t1 = yield from self.hold(self.storage, "storage", d.storage_s * self.jit["storage"][b])
        self.timeline.append(("storage", "read", t1, env.now, b))
        rest = (d.read_s - d.storage_s) * self.jit["storage"][b]  # latency in flight, beyond the device's share
        if rest > 0:
            yield env.timeout(rest)
        self.stamps.setdefault(b, {})["io"] = (t0, env.now)
        self.timeline.append((track, "read", t0, env.now, b))

    def preprocess(self, b, track):
        """Decode and augment batch b on a core (a worker also hands its batch over: 0 in the main process)."""
        cost = self.d.preprocess_s + self.d.handoff_s
        if cost <= 0:
            return
        t0 = self.env.now
        t1 = yield from self.on_cores(cost * self.jit["pre"][b])
        self.stamps.setdefault(b, {})["pre"] = (t0, self.env.now)
        self.timeline.append((track, "preprocess", t1, self.env.now, b))

    def copy(self, b):
        """Copy batch b over the host link (FIFO)."""
        if self.d.copy_s <= 0:
            return
        t0 = self.env.now
        t1 = yield from self.hold(self.link, "link", self.d.copy_s * self.jit["copy"][b])
        self.stamps.setdefault(b, {})["copy"] = (t0, self.env.now)
        self.timeline.append(("host_copy", "copy", t1, self.env.now, b))

    # -- the processes

    def worker(self, i):
        """A loader worker: take a prefetch slot and the next batch number, read it, preprocess it, hand it over."""
        track, env = f"worker {i}", self.env
        while self.next_batch < self.produced:
            yield self.slots.get(1)
            if self.next_batch >= self.produced:
                return
            b = self.next_batch
            self.next_batch += 1
            t0 = env.now
            yield from self.read(b, track)
            t1 = env.now
            yield from self.preprocess(b, track)
            self.busy["worker_read"].add(t0, t1)
            self.busy["worker_pre"].add(t1, env.now)
            yield self.ready.put(b)

    def copier(self):
        """Pinned memory: copy each ready batch ahead to the device, one at a time."""
        while True:
            b = yield self.ready.get()
            self.slots.put(1)
            yield from self.copy(b)
            yield self.device_q.put(b)

    def loop(self):
        """The training loop: get a batch (load it itself without workers), then run one step on it."""
        env = self.env
        for k in range(self.total):
            t0 = env.now
            if self.s.loader_workers == 0:
                b = k
                yield from self.load_in_loop(b)
            else:
                b = yield from self.receive()
            self.waits.append((t0, env.now, b))
            yield from self.step(b)
            if time.perf_counter() - self.wall0 > self.budget_s:
                raise HwsimError(
                    "steps", self.s.steps, f"a run that fits the {self.budget_s:g} s simulation budget", "lower steps"
                )

    def load_in_loop(self, b):
        """loader_workers=0: the loop reads, preprocesses and copies batch b itself."""
        yield from self.read(b, "main")
        yield from self.preprocess(b, "main")
        yield from self.copy(b)

    def receive(self):
        """Take the next batch from the workers (from the copier when pinned); returns its number."""
        s, d = self.s, self.d
        b = yield (self.device_q if s.pin_memory else self.ready).get()
        if d.receive_s > 0:  # the main process unpickles the batch a worker handed over
            yield from self.on_cores(d.receive_s * self.jit["pre"][b])
        if not s.pin_memory:  # synchronous copy on the loop
            self.slots.put(1)
            yield from self.copy(b)
        return b

    def step(self, b):
        """One step on batch b: the kernels on the device while a core issues them, or, with the host as the
        device, the step's threads on the cores it shares with the workers."""
        env, st = self.env, self.st
        t1 = env.now
        kernel = st.kernel_s * self.jit["gpu"][b]
        if self.shared:  # the step runs on the cores; what the workers' share stretches it by is CPU time
            yield from self.on_cores(kernel, self.threads, self.step_eff)
            if env.now > t1 + kernel:
                self.issue_waits.append((t1 + kernel, env.now))
        else:
            yield env.all_of([env.timeout(kernel), env.process(self.issue(b))])
        self.busy["gpu"].add(t1, t1 + kernel, (st.compute_s + st.memory_s) / st.kernel_s if st.kernel_s else 0)
        self.timeline.append(("gpu", "step", t1, env.now, b))
        self.ends.append(env.now)

    def issue(self, b):
        """The main process issues the step's kernels on a core, waiting for one when every core is busy."""
        t0 = self.env.now
        t1 = yield from self.hold(self.cores, "cpu", self.st.issue_s * self.jit["gpu"][b])
        if t1 > t0:  # every core was busy (loader workers beyond the cores): the loop could not issue
            self.issue_waits.append((t0, t1))


def run(m, d, seed: int, budget_s: float = 20.0) -> dict:
    """Simulate the pipeline of machine m with demands d (seeded); the records measure() turns into figures."""
    return _Pipeline(m, d, seed, budget_s).run()


def _overlap(a, b, span):
    return max(0.0, min(b, span[1]) - max(a, span[0])) if span else 0.0


def measure(m, d, out: dict) -> dict:
    """Throughput, step-time percentiles, utilizations and GPU time over the measured window (after the warmup)."""
    s, st = m.s, d.step
    ends, w = out["ends"], out["warmup"]
    lo, hi = ends[w - 1], ends[-1]
    window = hi - lo
    busy = out["busy"]
    util = {
        "storage": busy["storage"].within(lo, hi) / window,
        "cpu": busy["cpu"].within(lo, hi) / (window * s.cpu_cores),
        "host_link": busy["link"].within(lo, hi) / window,
        "gpu_busy": busy["gpu"].within(lo, hi) / window,
    }
    io_sat, cpu_sat = _loader_saturation(m, busy, util, lo, hi)
    waits, issue_wait = _input_waits(out, lo, hi, s.loader_workers, io_sat >= cpu_sat)
    gpu_time = _gpu_time(st, out, lo, hi, waits, issue_wait)
    step_ms = np.diff(np.asarray(ends[w - 1 :])) * 1e3
    return {
        "batches_per_s": s.steps / window,
        "gpu_time": gpu_time,
        "utilization": util,
        "saturation": _saturation(s, util, gpu_time, io_sat, cpu_sat),
        "step_ms": step_ms,
        "window_s": window,
        "warmup_s": lo,
    }


def _loader_saturation(m, busy: dict, util: dict, lo: float, hi: float) -> tuple[float, float]:
    """(storage, CPU) saturation of the loader: a device's utilization, or the share of their time the workers
    spend reading (the disk's latency and queue included) or preprocessing, whichever is higher."""
    window, nw = hi - lo, m.s.loader_workers
    read_share = busy["worker_read"].within(lo, hi) / (window * nw) if nw else 0.0
    pre_share = busy["worker_pre"].within(lo, hi) / (window * nw) if nw else 0.0
    io_sat, cpu_sat = max(util["storage"], read_share), max(util["cpu"], pre_share)
    if host_threads(m):  # the step's own threads keep the cores busy too: the loader saturates when its workers do
        cpu_sat = pre_share
    return io_sat, cpu_sat


def _input_waits(out: dict, lo: float, hi: float, nw: int, io_first: bool) -> tuple[dict, float]:
    """Seconds the loop waited in the window, by cause (storage, preprocessing, the copy), and the seconds steps
    waited for a free core to issue their kernels (counted as preprocessing: a wait on the CPU, not on launches).
    io_first: storage, not preprocessing, is what keeps the workers busy."""
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
            waits["input_io" if io_first else "input_preprocess"] += (b - a) - cp
    issue_wait = sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in out["issue_waits"])
    waits["input_preprocess"] += issue_wait
    return waits, issue_wait


def _gpu_time(st, out: dict, lo: float, hi: float, waits: dict, issue_wait: float) -> dict:
    """The window's time split into compute, memory, the input waits, launch gaps and idle (shares summing to 1).
    Jitter scales kernels: the busy share is measured and split as the cost model splits the step."""
    window = hi - lo
    gpu_share = out["busy"]["gpu"].within(lo, hi) / window
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
    return gpu_time


def _saturation(s, util: dict, gpu_time: dict, io_sat: float, cpu_sat: float) -> dict:
    """How saturated each stage is: the loop (the step's share of the time), storage, CPU and host link."""
    if s.loader_workers == 0:
        return {"loop": 1.0, "io": util["storage"], "cpu": util["cpu"], "host_link": 0.0}
    starved = sum(gpu_time[k] for k in ("input_io", "input_preprocess")) + (
        gpu_time["host_copy"] if s.pin_memory else 0.0
    )
    return {
        "loop": 1.0 - starved,
        "io": io_sat,
        "cpu": cpu_sat,
        "host_link": util["host_link"] if s.pin_memory else 0.0,
    }
