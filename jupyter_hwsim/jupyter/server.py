"""The jupyter_server extension: the REST API behind the sidebar what-if panel.

  GET  /hwsim/api/catalog    devices, storage, links, workloads, precisions, every field with unit/default/range
  POST /hwsim/api/estimate   a scenario object -> Result.to_dict() + "charts" (the panel's Vega-Lite specs);
                             ?suggest=1 adds the ranked suggestions (off for the preview while dragging)
  POST /hwsim/api/simulate   the same from the discrete-event simulation (?seed=N, ?suggest=0 to skip them)

Every handler is authenticated (Jupyter's token/cookie auth and XSRF). Bodies are
bounded (413), scenarios validated (400 with the field, value and what is accepted),
and the work runs in a bounded process pool off the event loop with a timeout (504),
so the server keeps serving files and kernels. Nothing a user sends is evaluated.
"""
from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from traitlets import Float, Int
from traitlets.config import Configurable

from ..core import catalog
from ..core.errors import HwsimError
from ..core.scenario import BATCHING, COMMON_FIELDS, FIELDS, FUSIONS, KIND_FIELDS, KINDS, PRECISIONS, Scenario


class HwsimServer(Configurable):
    """Limits of the REST API (set e.g. c.HwsimServer.timeout_s = 5 in jupyter_server_config.py)."""
    max_body_bytes = Int(64 * 1024, config=True, help="largest request body accepted (bytes); above it, 413")
    timeout_s = Float(10.0, config=True, help="longest a simulation may take (s); past it, 504")
    max_workers = Int(2, config=True, help="worker processes that run simulations at once")
    max_pending = Int(32, config=True, help="requests waiting or running at once; beyond them, 503")


def _catalog_payload() -> dict:
    fields = {}
    for name, f in FIELDS.items():
        fields[name] = {"type": f.type.__name__, "unit": f.unit, "help": f.help, "default": f.default, "lo": f.lo,
                        "hi": f.hi, "lo_open": f.lo_open, "choices": list(f.choices) if f.choices else None,
                        "accepted": f.accepted()}

    def entries(section, keys):
        return {k: {key: e.get(key) for key in ("name", *keys) if key in e} | {"id": k}
                for k, e in getattr(catalog, section)().items()}

    workloads = entries("workloads", ("arch", "default_batch_size", "seq_len", "layers", "hidden"))
    for k, w in catalog.workloads().items():
        workloads[k]["language_model"] = w.get("arch") == "transformer" and "vocab" in w
    return {"kinds": list(KINDS), "precisions": list(PRECISIONS), "fusions": list(FUSIONS), "batching": list(BATCHING),
            "gpus": entries("gpus", ("memory_gb", "memory_bandwidth_gbs", "peak_tflops", "host_link")),
            "storage": entries("storage", ("bandwidth_gbs", "latency_ms")),
            "links": entries("links", ("bandwidth_gbs",)), "workloads": workloads,
            "fields": fields, "common_fields": list(COMMON_FIELDS),
            "kind_fields": {k: list(v) for k, v in KIND_FIELDS.items()}}


def compute(method: str, scenario: dict, seed: int, budget_s: float, suggest: bool) -> tuple[int, str]:
    """Run in a worker process: (HTTP status, JSON text) of the result plus the panel's chart specs. The text is
    made here, so the server's event loop only copies bytes."""
    from . import charts
    from ..runner import estimate, simulate
    try:
        s = Scenario.from_dict(scenario)
        r = simulate(s, seed=seed, budget_s=budget_s, suggest=suggest) if method == "simulate" else \
            estimate(s, suggest=suggest)
        return 200, json.dumps({**r.to_dict(), "charts": charts.panel_specs(s, r)}, allow_nan=False)
    except HwsimError as e:
        return 400, json.dumps({"error": e.to_dict()})


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


class ComputeHandler(_Base):
    method = "estimate"

    @tornado.web.authenticated
    async def post(self):
        limits = self.limits
        body = self.request.body or b""
        if len(body) > limits.max_body_bytes:
            return self.fail(413, f"the request body is {len(body)} bytes; at most {limits.max_body_bytes} are "
                                  "accepted", field="body")
        try:
            scenario = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            return self.fail(400, f"the body is not JSON ({e})", field="body", accepted="a JSON object")
        if not isinstance(scenario, dict):
            return self.fail(400, "the body must be a JSON object of scenario fields", field="body",
                             accepted="a JSON object of scenario fields")
        # the preview while dragging skips suggestions unless asked; the settled simulation includes them
        suggest = self.get_query_argument("suggest", "1" if self.method == "simulate" else "0") not in ("0", "false")
        seed_text = self.get_query_argument("seed", "0")
        if not seed_text.isdigit():
            return self.fail(400, f"seed={seed_text!r} is not accepted: a non-negative integer", field="seed",
                             value=seed_text, accepted="a non-negative integer")
        try:
            Scenario.from_dict(scenario)     # cheap: refuse a bad scenario before queueing any work
        except HwsimError as e:
            self.set_status(400)
            return self.finish(json.dumps({"error": e.to_dict()}))
        gate = self.settings["hwsim_gate"]
        if gate.locked():
            return self.fail(503, f"{limits.max_pending} simulations are already waiting; try again shortly")
        async with gate:
            loop = asyncio.get_running_loop()
            job = loop.run_in_executor(self.settings["hwsim_pool"](), compute, self.method, scenario,
                                       int(seed_text), limits.timeout_s * 1.5, suggest)
            try:
                status, text = await asyncio.wait_for(job, timeout=limits.timeout_s)
            except asyncio.TimeoutError:
                return self.fail(504, f"the {self.method} took longer than {limits.timeout_s:g} s; lower steps or "
                                      "simplify the scenario", field="steps")
        self.set_status(status)
        self.finish(text)


class EstimateHandler(ComputeHandler):
    method = "estimate"


class SimulateHandler(ComputeHandler):
    method = "simulate"


def _jupyter_server_extension_points():
    return [{"module": "jupyter_hwsim.jupyter.server"}]


def _load_jupyter_server_extension(serverapp) -> None:
    limits = HwsimServer(config=serverapp.config)
    pool: dict = {}

    def get_pool():   # started on first use; spawned, so no server state is forked
        if "p" not in pool:
            ctx = multiprocessing.get_context("spawn")
            pool["p"] = ProcessPoolExecutor(max_workers=max(1, min(limits.max_workers, os.cpu_count() or 1)),
                                            mp_context=ctx)
        return pool["p"]

    web = serverapp.web_app
    web.settings.update(hwsim_limits=limits, hwsim_pool=get_pool, hwsim_pools=pool,
                        hwsim_catalog=_catalog_payload(), hwsim_gate=asyncio.Semaphore(limits.max_pending))
    base = url_path_join(web.settings["base_url"], "hwsim", "api")
    web.add_handlers(".*$", [(url_path_join(base, "catalog"), CatalogHandler),
                             (url_path_join(base, "estimate"), EstimateHandler),
                             (url_path_join(base, "simulate"), SimulateHandler)])
    serverapp.log.info("jupyter_hwsim: REST API at %s", base)


def _unload_jupyter_server_extension(serverapp) -> None:
    pool = serverapp.web_app.settings.get("hwsim_pools", {}).pop("p", None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
