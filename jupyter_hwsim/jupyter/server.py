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
and the work runs in a bounded process pool off the event loop with a timeout (504),
so the server keeps serving files and kernels. Nothing a user sends is evaluated.

Warming starts in the background as soon as the extension loads: first one thread of the server process
imports what a simulation needs, then the worker processes start and do the same. Until the first of them
is ready, requests run in that thread (off the event loop, under the same time budget), so the first request
does not wait seconds for process start-up. A 504 names the budget and what the request was doing when it
ran out.
"""

from __future__ import annotations

import asyncio
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


def grace_s(budget_s: float) -> float:
    """How long after its 504 a job stops itself. Not at the 504 itself: the answer is the 504, not the job's own
    budget error racing it. Short, so the worker is free again within a couple of seconds of the budget."""
    return min(GRACE_S, 0.5 * budget_s)


def compute_by(deadline: float, grace_s: float, method: str, scenario: dict, seed: int, suggest):
    """compute() for a request whose time budget ends at `deadline` (time.time(), the same clock in every process):
    the simulation stops itself `grace_s` after it, so no input holds a worker (or the server's thread) for long
    after its 504 went out. A job that starts after the deadline has been answered already and does nothing."""
    left = deadline - time.time()
    if left <= 0:
        return 504, "{}"
    return compute(method, scenario, seed, left + grace_s, suggest)


def warm() -> int:
    """Import what compute() needs and fill its caches with one small estimate, so that the first request finds a
    ready process. Every worker runs it before it takes any request; the server runs it once in its own thread.
    It never raises (a worker whose initializer raises breaks the whole pool): a failure here shows up, worded,
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


class Workers:
    """Where simulations run: the pool of worker processes once one of them is warm, one thread of the server
    process until then. start() warms that thread first (it answers the first requests) and then the pool, whose
    processes are spawned (no server state is forked) and each warm before they take a request. On a small machine,
    warming both at once slows both and the server's own start-up (benchmarks/bench_server_cold.py)."""

    def __init__(self, limits: HwsimServer, log=None):
        self.limits, self.log = limits, log
        self.size = max(1, min(limits.max_workers, os.cpu_count() or 1))
        self.pool: ProcessPoolExecutor | None = None
        self.local = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hwsim")
        self.local_warm: Future | None = None
        self.ready = False  # a worker process has finished warm(): requests go to the pool
        self.failed = False  # the pool could not start: requests stay in the server's thread
        self.closed = False
        self.lock = threading.Lock()
        self.started_at = time.perf_counter()
        self.warm_s: float | None = None  # how long the first worker took to be ready, from start()

    def start(self) -> None:
        """Returns at once; the warming goes on in the background."""
        self.started_at = time.perf_counter()
        self.local_warm = self.local.submit(warm)
        self.local_warm.add_done_callback(lambda _: self.start_pool())

    def start_pool(self) -> None:
        with self.lock:
            if self.closed or self.pool is not None:
                return
            try:
                ctx = multiprocessing.get_context("spawn")
                self.pool = ProcessPoolExecutor(max_workers=self.size, mp_context=ctx, initializer=warm)
                for _ in range(self.size):  # a task per worker spawns them all now; each warms before taking one
                    self.pool.submit(os.getpid).add_done_callback(self._warmed)
            except Exception as e:  # no processes (a sandbox, a resource limit): serve in-process
                self.failed = True
                self._note("jupyter_hwsim: no worker processes (%s); simulations run in the server process", e)

    def _warmed(self, job: Future) -> None:  # called in the pool's manager thread
        if job.cancelled() or self.ready or self.failed or self.closed:
            return
        if job.exception() is not None:
            self.failed = True
            self._note(
                "jupyter_hwsim: the worker processes failed to start (%s); simulations run in the server process",
                job.exception(),
            )
            return
        self.warm_s = time.perf_counter() - self.started_at
        self.ready = True
        if self.log is not None:
            self.log.info("jupyter_hwsim: worker processes (%d) ready after %.1f s", self.size, self.warm_s)

    def _note(self, message: str, *args) -> None:
        if self.log is not None:
            self.log.warning(message, *args)

    def submit(self, deadline: float, method: str, scenario: dict, seed: int, suggest) -> Future:
        # estimates (closed form, milliseconds: the preview while a slider moves) run in the server's thread, so
        # they never queue behind simulations in the pool. Not those of a model the user gave (a table or a file):
        # its size is theirs, an estimate of 57,000 operators and its charts take 14 s, and the thread cannot be
        # stopped; a worker can.
        w = scenario.get("workload")
        own_model = isinstance(w, dict) or (isinstance(w, str) and w.strip().lower().startswith(IMPORTED))
        pooled = (method != "estimate" or own_model) and self.ready and self.pool is not None
        executor = self.pool if pooled else self.local
        grace = grace_s(self.limits.timeout_s)
        try:
            job = executor.submit(compute_by, deadline, grace, method, scenario, seed, suggest)
        except BrokenProcessPool:  # a worker process ended on its own: new ones start, and this one runs here
            self.replace(executor, "a worker process ended")  # type: ignore[arg-type]
            executor = self.local
            job = executor.submit(compute_by, deadline, grace, method, scenario, seed, suggest)
        job.hwsim_pool = executor if executor is self.pool else None  # type: ignore[attr-defined]
        return job

    def reap(self, job: Future) -> None:
        """Called grace_s + REAP_S after the 504 of a job that was running. A job still running then ignores its
        own time budget: the worker processes are stopped and new ones started. The jobs beside it fail (running)
        or are cancelled (waiting), and their requests run once more within their budget (ComputeHandler). A job
        in the server's thread cannot be stopped; it relies on its budget alone."""
        if job.done() or getattr(job, "hwsim_pool", None) is None:
            return
        self.replace(job.hwsim_pool, "a simulation outlived its time budget")  # type: ignore[attr-defined]

    def replace(self, pool: ProcessPoolExecutor | None, why: str) -> None:
        """Stop the worker processes of `pool` and start new ones, unless that was done already (or the server
        is stopping). Also for a pool broken by a worker that ended on its own (killed, out of memory): nothing
        else would replace it, and every later simulation would fail."""
        with self.lock:
            if self.closed or pool is None or pool is not self.pool:
                return
            self.pool, self.ready = None, False
        stop(list((getattr(pool, "_processes", None) or {}).values()))  # no public handle before 3.14
        pool.shutdown(wait=False, cancel_futures=True)
        self._note("jupyter_hwsim: %s; the worker processes were restarted", why)
        self.start_pool()

    def shutdown(self) -> None:
        """Stop the thread and the worker processes, whatever they are doing (warming up included)."""
        with self.lock:
            self.closed, self.ready = True, False
            pool, self.pool = self.pool, None
        self.local.shutdown(wait=False, cancel_futures=True)
        if pool is not None:
            stop(list((getattr(pool, "_processes", None) or {}).values()))  # no public handle before 3.14
            pool.shutdown(wait=True, cancel_futures=True)


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
            catalog.generation()  # a user catalogue folder named since the last request is read (or refused) first
            s = Scenario.from_dict(scenario)  # cheap: refuse a bad scenario before queueing any work
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
                except (BrokenProcessPool, asyncio.CancelledError) as e:
                    # the worker processes were restarted under it (another request outlived its budget: a job
                    # running beside it fails, one still waiting is cancelled), or one of them ended: once more, on
                    # new ones or in the server's thread, within what is left of its budget
                    task = asyncio.current_task()
                    stopping = workers.closed or bool(task and task.cancelling())
                    if isinstance(e, asyncio.CancelledError) and (stopping or not job.cancelled()):
                        raise  # this request itself is cancelled: the server is stopping
                    workers.replace(getattr(job, "hwsim_pool", None), "a worker process ended")
                    if attempt or stopping:
                        return self.fail(
                            503, "the worker processes were restarted (a simulation outlived its budget); try again"
                        )
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
        asyncio.get_running_loop().call_later(grace_s(budget) + REAP_S, workers.reap, job)
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
