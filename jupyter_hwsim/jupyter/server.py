"""The jupyter_server extension: the REST API behind the sidebar what-if panel.

  GET  /hwsim/api/catalog    devices, storage, links, workloads, precisions, every field with unit/default/range
  GET  /hwsim/api/schema     the scenario as a JSON Schema (draft 2020-12): what a form or a client may send
  POST /hwsim/api/estimate   a scenario object -> Result.to_dict() + "charts" (the panel's Vega-Lite specs);
                             ?suggest=1 adds the ranked suggestions (off for the preview while dragging)
  POST /hwsim/api/simulate   the same from the discrete-event simulation (?seed=N, ?suggest=0 to skip them)
  POST /hwsim/api/trace      the simulated timeline as a Chrome/Perfetto trace (?seed=N)

Recent answers are kept (ResultCache, keyed by the normalised scenario): the same scenario asked again is answered
at once.

Every handler is authenticated (Jupyter's token/cookie auth and XSRF). Bodies are
bounded (413), scenarios validated (400 with the field, value and what is accepted),
and the work runs in worker processes (one job each at a time; Workers) off the event loop with a timeout
(504), so the server keeps serving files and kernels. Nothing a user sends is evaluated.

Warming starts in the background as soon as the extension loads: first one thread of the server process
imports what a simulation needs, then the worker processes start and do the same. Until the first of them
is ready, requests run in that thread (off the event loop, under the same time budget), so the first request
does not wait seconds for process start-up. A 504 names the budget and what the request was doing when it
ran out.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from traitlets import Float, Int
from traitlets.config import Configurable

from ..core import catalog
from ..core.errors import HwsimError
from ..core.scenario import (
    BATCHING,
    COMMON_FIELDS,
    FIELDS,
    FUSIONS,
    IMPORTED,
    KIND_FIELDS,
    KINDS,
    PRECISIONS,
    Scenario,
    json_schema,
    panel_fields,
)


class HwsimServer(Configurable):
    """Limits of the REST API (set e.g. c.HwsimServer.timeout_s = 5 in jupyter_server_config.py)."""

    max_body_bytes = Int(64 * 1024, config=True, help="largest request body accepted (bytes); above it, 413")
    timeout_s = Float(10.0, config=True, help="longest a simulation may take (s); past it, 504")
    max_workers = Int(2, config=True, help="worker processes that run simulations at once")
    max_pending = Int(32, config=True, help="requests waiting or running at once; beyond them, 503")


def _catalog_payload() -> dict:
    fields = {}
    resolved = Scenario()  # a field left out resolves to this (engine: PyTorch eager, through its fusion alias)
    for name, f in FIELDS.items():
        fields[name] = {
            "type": f.type.__name__,
            "label": f.label,
            "unit": f.unit,
            "help": f.help,
            "default": resolved.engine if name == "engine" else f.default,
            "lo": f.lo,
            "hi": f.hi,
            "lo_open": f.lo_open,
            "choices": list(f.choices) if f.choices else None,
            "accepted": f.accepted(),
        }

    def entries(section, keys):
        return {
            k: {key: e.get(key) for key in ("name", *keys) if key in e} | {"id": k}
            for k, e in getattr(catalog, section)().items()
        }

    workloads = entries("workloads", ("arch", "default_batch_size", "seq_len", "layers", "hidden"))
    for k, w in catalog.workloads().items():
        workloads[k]["language_model"] = w.get("arch") == "transformer" and "vocab" in w
    return {
        "kinds": list(KINDS),
        "precisions": list(PRECISIONS),
        "fusions": list(FUSIONS),
        "engines": entries("engines", ("fusion", "trains", "kinds", "platforms")),
        "batching": list(BATCHING),
        "gpus": entries("gpus", ("memory_gb", "memory_bandwidth_gbs", "peak_tflops", "host_link")),
        "storage": entries("storage", ("bandwidth_gbs", "latency_ms")),
        "links": entries("links", ("bandwidth_gbs",)),
        "workloads": workloads,
        "fields": fields,
        "common_fields": list(COMMON_FIELDS),
        "kind_fields": {k: list(v) for k, v in KIND_FIELDS.items()},
    }


def compute(method: str, scenario: dict, seed: int, budget_s: float, suggest) -> tuple[int, str]:
    """Run in a worker process (or the server's thread): (HTTP status, JSON text) of the result plus the panel's chart specs. The text is
    made here, so the server's event loop only copies bytes."""
    from ..api import estimate, simulate
    from . import charts

    if method == "trace":
        return trace(scenario, seed, budget_s)
    try:
        s = Scenario.from_dict(scenario)
        r = (
            simulate(s, seed=seed, budget_s=budget_s, suggest=suggest)
            if method == "simulate"
            else estimate(s, suggest=suggest, budget_s=budget_s)
        )
        return 200, json.dumps({**r.to_dict(), "charts": charts.panel_specs(s, r)}, allow_nan=False)
    except HwsimError as e:
        return 400, json.dumps({"error": e.to_dict()})


def trace(scenario: dict, seed: int, budget_s: float) -> tuple[int, str]:
    """The simulated timeline of a scenario as a Chrome/Perfetto trace (Result.to_chrome_trace()), as JSON text."""
    from ..api import simulate

    try:
        r = simulate(Scenario.from_dict(scenario), seed=seed, budget_s=budget_s, suggest=False)
        return 200, json.dumps(r.to_chrome_trace(), allow_nan=False)
    except HwsimError as e:
        return 400, json.dumps({"error": e.to_dict()})


class ResultCache:
    """The JSON text of recent answers, keyed by the normalised scenario (every field, defaults filled in), the
    method, the seed and what was suggested: the same scenario sent again (a slider dragged back, ten students on the
    default scenario, a reload) is answered without computing. Results are deterministic per seed, so a cached answer
    is the answer. Least recently used entries go first; thread-safe (the warm-up thread fills it too)."""

    def __init__(self, size: int = 1024, max_bytes: int = 48 * 2**20):
        self.size, self.max_bytes, self.bytes = size, max_bytes, 0
        self.entries: dict[str, str] = {}  # insertion order = use order
        self.lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def key(method: str, s: Scenario, seed: int, suggest) -> str:
        """Also keyed on the catalogue's generation: a scenario names its entries, whose figures an added entry (or
        a user catalogue folder read since) may have changed."""
        if isinstance(suggest, (set, frozenset)):
            suggest = sorted(suggest)
        elif isinstance(suggest, tuple):
            suggest = list(suggest)
        seed = seed if method != "estimate" else 0  # an estimate does not depend on the seed
        return json.dumps([method, seed, suggest, s.to_dict(), catalog.generation()], sort_keys=True, default=str)

    def get(self, key: str) -> str | None:
        with self.lock:
            text = self.entries.pop(key, None)
            if text is None:
                self.misses += 1
                return None
            self.entries[key] = text
            self.hits += 1
            return text

    def put(self, key: str, text: str) -> None:
        with self.lock:
            old = self.entries.pop(key, None)
            self.bytes -= len(old) if old is not None else 0
            self.entries[key] = text
            self.bytes += len(text)
            while len(self.entries) > self.size or (self.bytes > self.max_bytes and len(self.entries) > 1):
                self.bytes -= len(self.entries.pop(next(iter(self.entries))))


def _validate(scenario: dict) -> Scenario:
    """The request's scenario, or a HwsimError: cheap, before queueing any work (but for an hf: or onnx: file)."""
    catalog.generation()  # a user catalogue folder named since the last request is read (or refused) first
    return Scenario.from_dict(scenario)


def prefill(cache: ResultCache) -> None:
    """The estimate of the default scenario, computed once the server's thread is warm: a sidebar opened on a fresh
    server shows its first numbers without waiting for any computation."""
    try:
        key = ResultCache.key("estimate", Scenario(), 0, False)  # before computing: the catalogue it was made from
        status, text = compute("estimate", {}, 0, 5.0, False)
        if status == 200:
            cache.put(key, text)
    except Exception:
        pass


GRACE_S = 1.0  # a job past its budget stops itself this long after its 504 (half the budget if that is shorter)
REAP_S = 0.5  # and if it has not (a stretch of work without a budget check), its worker is terminated this long after
LONG_S = 3.0  # a job that has run this long while others wait for a worker is set aside (Workers.watch)
WATCH_S = 0.1  # how often the worker processes are looked at


def grace_s(budget_s: float) -> float:
    """How long after its 504 a job stops itself. Not at the 504 itself: the answer is the 504, not the job's own
    budget error racing it. Short, so the worker is free again within a couple of seconds of the budget."""
    return min(GRACE_S, 0.5 * budget_s)


def compute_by(deadline: float, grace_s: float, method: str, scenario: dict, seed: int, suggest):
    """compute() for a request whose time budget ends at `deadline` (time.time(), the same clock in every process):
    the simulation stops itself `grace_s` after it, so no input holds a worker (or the server's thread) for long
    after its 504 went out; so do the estimates of its charts (runner.deadline). A job that starts after the
    deadline has been answered already and does nothing."""
    from ..runner import deadline as stop_at

    left = deadline - time.time()
    if left <= 0:
        return 504, "{}"
    with stop_at(deadline + grace_s):
        return compute(method, scenario, seed, left + grace_s, suggest)


def warm() -> int:
    """Import what compute() needs and fill its caches with one small estimate, so that the first request finds a
    ready process. Every worker runs it before it takes any request; the server runs it once in its own thread.
    It never raises (a worker whose initializer raises breaks its executor): a failure here shows up, worded,
    on the request that meets it."""
    try:
        compute("estimate", {}, 0, 5.0, False)
    except Exception:
        pass
    return os.getpid()


KILL_AFTER_S = 2.0  # a worker that has not ended this long after SIGTERM is killed


def stop(processes) -> None:
    """End worker processes: SIGTERM now, and SIGKILL for any still alive KILL_AFTER_S later (one that ignores
    SIGTERM, as a child inherits an ignored signal, or is busy in a system call), from a thread, so that nothing
    waits here."""
    for p in processes:
        p.terminate()

    def kill_stragglers():
        deadline = time.monotonic() + KILL_AFTER_S
        for p in processes:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()

    threading.Thread(target=kill_stragglers, name="hwsim-stop-workers", daemon=True).start()


def _imported(scenario: dict) -> bool:
    """The workload is a file the user names (hf:, onnx:): reading it takes the time its size does."""
    w = scenario.get("workload")
    return isinstance(w, str) and w.strip().lower().startswith(IMPORTED)


class Slot:
    """One worker process: a ProcessPoolExecutor of one, spawned (no server state is forked), warm (warm()) before
    it takes a job, then one job at a time. Stopping it stops its own job and no other."""

    def __init__(self, number: int):
        self.number = number  # 1 .. Workers.size, for the log
        ctx = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=warm)
        self.started_at = time.perf_counter()
        self.warming = self.pool.submit(os.getpid)  # spawns the process now; it warms before it runs this
        self.proc = next(iter((getattr(self.pool, "_processes", None) or {}).values()), None)  # no public handle
        self.pid: int | None = None  # once warm
        self.ready = False  # warm, and takes jobs
        self.retired = False  # stopped, or being stopped
        self.job: Future | None = None  # the job it runs
        self.since = 0.0  # when that job started (time.monotonic())

    def process(self):
        return self.proc

    def alive(self) -> bool:
        return self.proc is None or self.proc.is_alive()  # unknown (no such handle): taken as alive

    def kill(self) -> None:
        stop([self.proc] if self.proc is not None else [])
        self.pool.shutdown(wait=False, cancel_futures=True)


class Workers:
    """Where simulations run: worker processes, one per slot, once one of them is warm; one thread of the server
    process until then. start() warms that thread first (it answers the first requests) and then the worker
    processes, each warm before it takes a request. On a small machine, warming both at once slows both and the
    server's own start-up (benchmarks/bench_server_cold.py).

    Jobs wait in one queue, in order, and each goes to the first free warm slot: a slot runs one job at a time, so
    a job never waits behind a stuck one while another worker is free, and stopping a worker stops its own job
    only. A worker that ends on its own (killed, out of memory), or is stopped with a job past its budget, is
    replaced in its slot; the others go on serving, untouched. A job that has run LONG_S while others wait is set
    aside (watch)."""

    def __init__(self, limits: HwsimServer, log=None):
        self.limits, self.log = limits, log
        self.size = max(1, min(limits.max_workers, os.cpu_count() or 1))
        self.slots: list[Slot] = []
        self.aside: list[Slot] = []  # set aside: a long job finishing at the lowest CPU priority, out of the slots
        self.queue: collections.deque = collections.deque()  # [job, fn, args] waiting for a free slot
        self.long_s = LONG_S
        self.local = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hwsim")
        self.local_warm: Future | None = None
        self.failed = False  # no worker process could start: requests stay in the server's thread
        self.closed = False
        self.lock = threading.RLock()  # a done callback may run at once, in the thread that holds it
        self.started_at = time.perf_counter()
        self.warm_s: float | None = None  # how long the first worker took to be ready, from start()

    @property
    def ready(self) -> bool:
        """A worker process is warm: simulations go to the worker processes, not the server's thread."""
        return any(slot.ready for slot in self.slots)

    def start(self) -> None:
        """Returns at once; the warming goes on in the background."""
        self.started_at = time.perf_counter()
        self.local_warm = self.local.submit(warm)
        self.local_warm.add_done_callback(lambda _: self.start_slots())

    def start_slots(self) -> None:
        with self.lock:
            if self.closed or self.slots:
                return
            try:
                for number in range(1, self.size + 1):
                    self.slots.append(self._slot(number))
            except Exception as e:  # no processes (a sandbox, a resource limit): serve in-process
                self.failed = True
                for slot in self.slots:
                    slot.kill()
                self.slots = []
                self._note("jupyter_hwsim: no worker processes (%s); simulations run in the server process", e)
                return
        threading.Thread(target=self.watch, name="hwsim-watch-workers", daemon=True).start()

    def _slot(self, number: int) -> Slot:
        slot = Slot(number)
        slot.warming.add_done_callback(functools.partial(self._warmed, slot))
        return slot

    def _warmed(self, slot: Slot, job: Future) -> None:  # in the slot's manager thread
        if job.cancelled() or self.closed or slot.retired:
            return
        if job.exception() is not None:
            with self.lock:
                slot.retired = True
                if slot in self.slots:
                    self.slots.remove(slot)
                self.failed = not self.slots
            slot.kill()
            self._note(
                "jupyter_hwsim: worker process %d failed to start (%s)%s",
                slot.number,
                job.exception(),
                "; simulations run in the server process" if self.failed else "",
            )
            return
        with self.lock:
            slot.pid, slot.ready = job.result(), True
            if self.warm_s is None:
                self.warm_s = time.perf_counter() - self.started_at
        if self.log is not None:
            self.log.info(
                "jupyter_hwsim: worker process %d of %d ready after %.1f s",
                slot.number,
                self.size,
                time.perf_counter() - slot.started_at,
            )
        self._dispatch()

    def _note(self, message: str, *args) -> None:
        if self.log is not None:
            self.log.warning(message, *args)

    def submit(self, deadline: float, method: str, scenario: dict, seed: int, suggest) -> Future:
        # estimates (closed form, milliseconds: the preview while a slider moves) run in the server's thread, so
        # they never queue behind simulations. Not those of a model the user gave (a table or a file): its size is
        # theirs, an estimate of 57,000 operators and its charts take 14 s, and the thread cannot be stopped; a
        # worker can.
        own_model = isinstance(scenario.get("workload"), dict) or _imported(scenario)
        args = (deadline, grace_s(self.limits.timeout_s), method, scenario, seed, suggest)
        if (method == "estimate" and not own_model) or not self.ready:
            job = self.local.submit(compute_by, *args)
            job.hwsim_slot = None  # type: ignore[attr-defined]
            return job
        return self.run(compute_by, *args)

    def run(self, fn, *args) -> Future:
        """fn(*args) in the first worker process free, in the order asked."""
        job: Future = Future()
        job.hwsim_slot = None  # type: ignore[attr-defined]
        with self.lock:
            self.queue.append([job, fn, args])
        self._dispatch()
        return job

    def _dispatch(self) -> None:
        """Give each free warm slot the next job that waits (one that was cancelled, its 504 answered, is dropped)."""
        broken = []
        with self.lock:
            while self.queue and not self.closed:
                slot = next((s for s in self.slots if s.ready and s.job is None), None)
                if slot is None:
                    break
                item = self.queue.popleft()
                job, fn, args = item
                if not (job.running() or job.set_running_or_notify_cancel()):
                    continue
                try:
                    inner = slot.pool.submit(fn, *args)
                except Exception:  # its process ended since (BrokenProcessPool): the job goes to another
                    self.queue.appendleft(item)
                    slot.ready = False
                    broken.append(slot)
                    continue
                slot.job, slot.since = job, time.monotonic()
                job.hwsim_slot = slot  # type: ignore[attr-defined]
                inner.add_done_callback(functools.partial(self._done, slot, job))
        for slot in broken:
            self.replace(slot, "a worker process ended")

    def _done(self, slot: Slot, job: Future, inner: Future) -> None:  # in the slot's manager thread
        with self.lock:
            if slot.job is job:
                slot.job = None
            aside = slot in self.aside
        error = BrokenProcessPool("its worker process was stopped") if inner.cancelled() else inner.exception()
        if aside:  # its process ends with its job
            self.replace(slot, None)
        elif isinstance(error, BrokenProcessPool):  # it ended under the job (killed, out of memory)
            self.replace(slot, "a worker process ended")
        if error is not None:
            job.set_exception(error)
        else:
            job.set_result(inner.result())
        self._dispatch()

    def watch(self) -> None:
        """Every WATCH_S, in a thread: a worker process that ended while idle (killed from outside, out of memory)
        is replaced (one that ends under a job is replaced when the job fails: _done); and a job that has run for
        long_s while others wait for a worker is set aside: its process goes on at the lowest CPU priority (it
        gets only idle CPU), out of the slots, until its job ends (then the process ends) or its 504 (then it is
        stopped), and a new process is started in its slot. Its budget still holds: a simulation the user meant
        to run long finishes if the machine has time for it."""
        while not self.closed:
            time.sleep(WATCH_S)
            with self.lock:
                slots, room = list(self.slots), len(self.aside) < self.size
                waiting = any(not job.cancelled() for job, _fn, _args in self.queue)
            try:
                for slot in slots:
                    if slot.ready and slot.job is None and not slot.alive():
                        self.replace(slot, "a worker process ended")
                    elif waiting and room and slot.job is not None and time.monotonic() - slot.since > self.long_s:
                        room = self.set_aside(slot) and len(self.aside) < self.size
            except RuntimeError:  # the interpreter is exiting (no new processes): its workers end with it
                return

    def set_aside(self, slot: Slot) -> bool:
        new = self._slot(slot.number)
        with self.lock:
            if self.closed or slot.retired or slot not in self.slots or slot.job is None:
                new.retired = True
                new.kill()
                return False
            self.slots[self.slots.index(slot)] = new
            self.aside.append(slot)
            slot.ready = False
        p = slot.process()
        try:
            os.setpriority(os.PRIO_PROCESS, p.pid, 19)  # type: ignore[union-attr]
        except (AttributeError, OSError):  # no such call (Windows), or it has ended
            pass
        self._note(
            "jupyter_hwsim: a job has run for %.0f s while others wait; its worker process goes on at the lowest "
            "priority, and worker process %d was started in its place",
            time.monotonic() - slot.since,
            slot.number,
        )
        return True

    def is_aside(self, job: Future) -> bool:
        return getattr(job, "hwsim_slot", None) in self.aside

    def reap(self, job: Future) -> None:
        """Called grace_s + REAP_S after the 504 of a job that was running (at once for one set aside). A job still
        running then ignores its own time budget: its worker process is stopped, and a new one started in its
        slot. The other slots, and the jobs they run, are not touched. A job in the server's thread cannot be
        stopped; it relies on its budget alone."""
        slot = getattr(job, "hwsim_slot", None)
        if job.done() or slot is None or slot.job is not job:
            return
        self.replace(slot, "a simulation outlived its time budget")

    def replace(self, slot: Slot, why: str | None) -> None:
        """Stop a worker process, with its job if it has one, and start a new one in its slot (one set aside only
        stops), unless that was done already or the server is stopping. Also for one that ended on its own: nothing
        else would replace it."""
        with self.lock:
            if self.closed or slot.retired:
                return
            slot.retired, slot.ready = True, False
            aside = slot in self.aside
            if aside:
                self.aside.remove(slot)
        slot.kill()
        if aside:
            return
        new = self._slot(slot.number)
        with self.lock:
            if self.closed or slot not in self.slots:
                new.retired = True
                new.kill()
                return
            self.slots[self.slots.index(slot)] = new
        if why is not None:
            self._note("jupyter_hwsim: %s; worker process %d was restarted (the others go on)", why, slot.number)

    def shutdown(self) -> None:
        """Stop the thread and the worker processes, whatever they are doing (warming up included)."""
        with self.lock:
            self.closed = True
            slots, self.slots, self.aside = self.slots + self.aside, [], []
            queued, self.queue = list(self.queue), collections.deque()
        for job, _fn, _args in queued:
            job.cancel()
        self.local.shutdown(wait=False, cancel_futures=True)
        for slot in slots:
            slot.retired = True
            slot.kill()
        for slot in slots:
            slot.pool.shutdown(wait=True)


class _Base(APIHandler):
    @property
    def limits(self) -> HwsimServer:
        return self.settings["hwsim_limits"]

    def fail(self, status: int, message: str, **error) -> None:
        self.set_status(status)
        self.finish(json.dumps({"error": {"message": message, **error}}))


class CatalogHandler(_Base):
    @tornado.web.authenticated
    def get(self):
        self.finish(json.dumps(self.settings["hwsim_catalog"]))


class SchemaHandler(_Base):
    @tornado.web.authenticated
    def get(self):
        """The scenario's JSON Schema (core.scenario.json_schema): fields, types, ranges, labels and units."""
        self.finish(self.settings["hwsim_schema"])


class ComputeHandler(_Base):
    method = "estimate"

    @tornado.web.authenticated
    async def post(self):
        limits = self.limits
        body = self.request.body or b""
        if len(body) > limits.max_body_bytes:
            return self.fail(
                413,
                f"the request body is {len(body)} bytes; at most {limits.max_body_bytes} are accepted",
                field="body",
            )
        try:
            scenario = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            return self.fail(400, f"the body is not JSON ({e})", field="body", accepted="a JSON object")
        except RecursionError:
            return self.fail(400, "the body is nested too deeply", field="body", accepted="a JSON object of fields")
        if not isinstance(scenario, dict):
            return self.fail(
                400,
                "the body must be a JSON object of scenario fields",
                field="body",
                accepted="a JSON object of scenario fields",
            )
        # the preview while dragging skips suggestions unless asked; the settled simulation includes them
        suggest = self.get_query_argument("suggest", "1" if self.method == "simulate" else "0") not in ("0", "false")
        seed_text = self.get_query_argument("seed", "0")
        if not (seed_text.isascii() and seed_text.isdigit()) or len(seed_text) > 18:
            return self.fail(
                400,
                f"seed={seed_text!r} is not accepted: a non-negative integer",
                field="seed",
                value=seed_text,
                accepted="a non-negative integer",
            )
        try:
            if _imported(scenario):  # the file is read and parsed: in a thread, not on the event loop
                s = await asyncio.get_running_loop().run_in_executor(None, _validate, scenario)
            else:
                s = _validate(scenario)
        except HwsimError as e:
            self.set_status(400)
            return self.finish(json.dumps({"error": e.to_dict()}))
        gate = self.settings["hwsim_gate"]
        if gate.locked():
            return self.fail(503, f"{limits.max_pending} simulations are already waiting; try again shortly")
        async with gate:
            deadline = time.time() + limits.timeout_s
            # a panel suggests only the changes it has controls for
            suggest = panel_fields(s.kind) if suggest else False
            cache, key = self.settings.get("hwsim_cache"), None
            if cache is not None and self.method != "trace":
                key = ResultCache.key(self.method, s, int(seed_text), suggest)
                cached = cache.get(key)
                if cached is not None:
                    self.set_header("X-Hwsim-Cache", "hit")
                    return self.finish(cached)
            workers = self.settings["hwsim_workers"]
            for attempt in range(2):
                job = workers.submit(deadline, self.method, scenario, int(seed_text), suggest)
                try:
                    status, text = await asyncio.wait_for(
                        asyncio.wrap_future(job), timeout=max(0.0, deadline - time.time())
                    )
                    break
                except TimeoutError:
                    return self.fail(504, **self.late(job, s))
                except BrokenProcessPool:
                    # its worker process ended under it (killed from outside, out of memory; a new one is
                    # started in its slot): once more, in another, within what is left of its budget
                    if attempt or workers.closed:
                        return self.fail(503, "the worker process ended under this simulation; try again")
        if status == 200 and key is not None:
            cache.put(key, text)
        self.set_status(status)
        self.finish(text)

    def late(self, job: Future, s: Scenario) -> dict:
        """The 504 error: the time budget ran out, and what the job was doing then. Steps are suggested only for a
        simulation that was running (an estimate's time does not depend on them; a waiting job did not start)."""
        budget = self.limits.timeout_s
        head = f"the {self.method} did not finish within its time budget of {budget:g} s (HwsimServer.timeout_s)"
        error = {"budget_s": budget}
        if job.cancel():  # still queued: it never started, and now it never will
            return {"message": f"{head}: it was still waiting for a free worker; try again shortly", **error}
        workers = self.settings["hwsim_workers"]
        # one set aside gets no grace: its process ends with its job anyway
        later = 0.0 if workers.is_aside(job) else grace_s(budget) + REAP_S
        asyncio.get_running_loop().call_later(later, workers.reap, job)
        if self.method in ("simulate", "trace"):
            return {
                "message": f"{head}: the simulation of steps={s.steps} was still running; fewer steps finish sooner",
                "field": "steps",
                "value": repr(s.steps),
                **error,
            }
        return {"message": f"{head}: the estimate was still running", **error}


class EstimateHandler(ComputeHandler):
    method = "estimate"


class SimulateHandler(ComputeHandler):
    method = "simulate"


class TraceHandler(ComputeHandler):
    """POST /hwsim/api/trace?seed=N: the simulated timeline as a Chrome/Perfetto trace (the sidebar's download)."""

    method = "trace"


def _jupyter_server_extension_points():
    return [{"module": "jupyter_hwsim.jupyter.server"}]


def _load_jupyter_server_extension(serverapp) -> None:
    limits = HwsimServer(config=serverapp.config)
    workers = Workers(limits, serverapp.log)
    workers.start()  # in the background: the server does not wait for the worker processes
    web = serverapp.web_app
    web.settings.update(
        hwsim_limits=limits,
        hwsim_workers=workers,
        hwsim_catalog=_catalog_payload(),
        hwsim_schema=json.dumps(json_schema()),
        hwsim_gate=asyncio.Semaphore(limits.max_pending),
        hwsim_cache=ResultCache(),
    )
    workers.local.submit(prefill, web.settings["hwsim_cache"])  # after the thread's warm-up, in the same thread
    base = url_path_join(web.settings["base_url"], "hwsim", "api")
    web.add_handlers(
        ".*$",
        [
            (url_path_join(base, "catalog"), CatalogHandler),
            (url_path_join(base, "schema"), SchemaHandler),
            (url_path_join(base, "estimate"), EstimateHandler),
            (url_path_join(base, "simulate"), SimulateHandler),
            (url_path_join(base, "trace"), TraceHandler),
        ],
    )
    serverapp.log.info("jupyter_hwsim: REST API at %s", base)


def _unload_jupyter_server_extension(serverapp) -> None:
    workers = serverapp.web_app.settings.pop("hwsim_workers", None)
    if workers is not None:
        workers.shutdown()
