"""The what-if panel (ipywidgets): drag a control, see the estimate at once and the simulation when it settles.

Every change is applied through Scenario.replace (so a bad value is refused in
words and nothing changes); the analytic estimate redraws the numbers and charts
immediately; a debounced simulation (on the kernel's event loop) replaces it once
the value has stopped moving. timings records how long each redraw took.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import time

import ipywidgets as W

from ..api import estimate, simulate
from ..core import catalog, costs
from ..core.errors import HwsimError
from ..core.scenario import (
    BATCHING,
    COMMON_FIELDS,
    FIELDS,
    KIND_FIELDS,
    KIND_TRAITS,
    KINDS,
    PRECISIONS,
    Scenario,
)
from . import charts
from .report import bottleneck_html, numbers_html

POW2 = charts.POW2  # 1 .. 4096
TOKENS = [2**k for k in range(4, 16)]  # 16 .. 32768
OUT_TOKENS = [2**k for k in range(0, 13)]  # 1 .. 4096
SIM_BUDGET_S = 3.0


def _language_models() -> list[str]:
    return [k for k, w in catalog.workloads().items() if w.get("arch") == "transformer" and "vocab" in w]


class WhatIf(W.VBox):
    """What-if panel over one Scenario; `.scenario` and `.result` are always the ones shown."""

    def __init__(self, scenario=None, seed: int = 0, debounce_s: float = 0.35, **fields):
        if isinstance(scenario, Scenario):
            self._scenario = scenario.replace(**fields) if fields else scenario
        else:
            self._scenario = Scenario.from_dict({**dict(scenario or {}), **fields})
        self.seed, self.debounce_s = seed, debounce_s
        self.result = None
        self.timings: list[dict] = []  # {"what": "estimate"|"simulate", "ms": ...} per redraw
        self._timer = None
        self._syncing = False
        self.controls = self._make_controls()
        self.error = W.HTML(layout=W.Layout(min_height="1.4em"))
        self.numbers = W.HTML()
        self.status = W.HTML()
        self.bottleneck = W.HTML()
        self.suggestion_box = W.VBox()
        self.trace_link = W.HTML()
        self.outputs = {
            k: W.Output(layout=W.Layout(min_width="340px"))
            for k in ("utilization", "gpu_time", "curve", "roofline", "timeline", "memory")
        }
        self.rows = {name: self._row(name, w) for name, w in self.controls.items()}
        left = W.VBox([self.rows[n] for n in self.controls] + [self.error], layout=W.Layout(width="430px"))
        right = W.VBox(
            [self.status, self.numbers, self.bottleneck, self.suggestion_box, self.trace_link],
            layout=W.Layout(width="520px"),
        )
        grid = W.GridBox(
            list(self.outputs.values()), layout=W.Layout(grid_template_columns="repeat(2, 360px)", grid_gap="8px")
        )
        super().__init__([W.HBox([left, right]), grid])
        self.add_class("hwsim-whatif")
        for name, w in self.controls.items():
            w.observe(lambda change, name=name: self._on_control(name, change["new"]), names="value")
        self._sync_controls()
        self._refresh(simulated=False)
        self.settle()

    # -- public -------------------------------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario:
        return self._scenario

    def set(self, **fields) -> None:
        """Change fields from Python, as the controls would (validated; a bad value changes nothing)."""
        self._scenario = self._scenario.replace(**fields)
        self._sync_controls()
        self._refresh(simulated=False)
        self._schedule()

    def apply(self, suggestion: dict) -> None:
        """Apply one of the result's suggestions (its `fields`)."""
        self.set(**suggestion["fields"])

    def settle(self) -> None:
        """Simulate the current scenario now and redraw with the simulated result."""
        self._timer = None
        self._refresh(simulated=True)

    # -- controls -----------------------------------------------------------------------------------------
    def _make_controls(self) -> dict:
        s = self._scenario
        cat = {"gpu": catalog.names("gpus"), "storage": catalog.names("storage")}
        c = {
            "kind": W.ToggleButtons(options=list(KINDS), value=s.kind),
            "workload": W.Dropdown(options=self._workloads(s.kind, s.workload)),
            "gpu": W.Dropdown(options=cat["gpu"]),
            "precision": W.Dropdown(options=list(PRECISIONS)),
            "engine": W.Dropdown(options=[(e["name"], k) for k, e in catalog.engines().items()]),
            "batch_size": W.SelectionSlider(options=POW2),
            "loader_workers": W.IntSlider(min=0, max=64),
            "cpu_cores": W.IntSlider(min=1, max=128),
            "storage": W.Dropdown(options=cat["storage"]),
            "storage_bandwidth_gbs": W.FloatLogSlider(min=-2, max=2.5, step=0.05, readout_format=".3g"),
            "host_link": W.Dropdown(options=[("the GPU's", "")] + [(k, k) for k in catalog.names("links")]),
            "pin_memory": W.Checkbox(indent=False),
            "arrival_rate_rps": W.FloatLogSlider(min=0, max=5, step=0.05, readout_format=",.0f"),
            "max_batch_size": W.SelectionSlider(options=POW2[:11]),
            "max_queue_delay_ms": W.FloatSlider(min=0, max=50, step=0.5),
            "latency_slo_ms": W.FloatLogSlider(min=0, max=4, step=0.05, readout_format=",.0f"),
            "replicas": W.IntSlider(min=1, max=8),
            "prompt_tokens": W.SelectionSlider(options=TOKENS),
            "output_tokens": W.SelectionSlider(options=OUT_TOKENS),
            "concurrency": W.SelectionSlider(options=POW2[:11]),
            "batching": W.ToggleButtons(options=list(BATCHING)),
        }
        for name, w in c.items():
            w.tooltip = FIELDS[name].help
            if isinstance(w, (W.SelectionSlider, W.IntSlider, W.FloatSlider, W.FloatLogSlider)):
                w.continuous_update = True
                w.layout = W.Layout(width="260px")
        return c

    def _workloads(self, kind: str, current) -> list:
        names = _language_models() if KIND_TRAITS[kind].generates else catalog.names("workloads")
        if isinstance(current, str) and current not in names:
            names = [current, *names]
        return names

    def _row(self, name, widget):
        label = W.HTML(
            f"<span title='{html.escape(FIELDS[name].help)}'>{html.escape(FIELDS[name].label)}</span>",
            layout=W.Layout(width="150px"),
        )
        return W.HBox([label, widget])

    def _resolved(self, name, m):
        """The value a control shows: the scenario's, or what the catalogue gives when it is left unset."""
        v = getattr(self._scenario, name)
        if v is not None:
            return v
        defaults = {
            "batch_size": m.batch,
            "max_batch_size": m.batch,
            "concurrency": m.batch,
            "arrival_rate_rps": 100.0,
            "storage_bandwidth_gbs": m.storage_gbs,
        }
        return defaults.get(name)

    def _sync_controls(self):
        """Controls show the scenario; the ones that do not apply to its kind are hidden."""
        self._syncing = True
        try:
            s = self._scenario
            m = costs.resolve(s)
            shown = set(COMMON_FIELDS) | set(KIND_FIELDS[s.kind])
            self.controls["workload"].options = self._workloads(s.kind, s.workload)
            for name, w in self.controls.items():
                self.rows[name].layout.display = None if name in shown else "none"
                v = self._resolved(name, m)
                if name == "host_link" and v is None:
                    v = ""  # the option that means "the GPU's own link"
                if v is None:
                    continue
                if isinstance(w, W.SelectionSlider):
                    v = min(w.options, key=lambda o: abs(o - v))
                if isinstance(w, W.Dropdown) and isinstance(v, dict):
                    continue
                try:
                    w.value = v
                except Exception:  # a custom value the control cannot show: leave the control as it is
                    pass
        finally:
            self._syncing = False

    def _on_control(self, name, value):
        if self._syncing:
            return
        changes = {name: None if (name == "host_link" and value == "") else value}
        s = self._scenario
        if name == "kind" and value == "llm" and s.workload not in _language_models():
            changes["workload"] = "llama-2-7b"
        if name == "storage":
            changes["storage_bandwidth_gbs"] = None  # the new device's own bandwidth
        try:
            self._scenario = s.replace(**changes)
        except HwsimError as e:
            self.error.value = f"<span style='color:var(--jp-error-color1,#d62728)'>{html.escape(str(e))}</span>"
            self._sync_controls()  # the control snaps back to the value in force
            return
        self.error.value = ""
        if name in ("kind", "storage", "workload"):
            self._sync_controls()
        self._refresh(simulated=False)
        self._schedule()

    def _schedule(self):
        if self.debounce_s <= 0:
            self.settle()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:  # no event loop (plain Python, tests): simulate now
            self.settle()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(self.debounce_s, self.settle)

    # -- drawing ------------------------------------------------------------------------------------------
    def _refresh(self, simulated: bool):
        t0 = time.perf_counter()
        s = self._scenario
        try:
            if simulated:
                r = simulate(s, seed=self.seed, budget_s=SIM_BUDGET_S)
            else:
                r = estimate(s, suggest=False)
        except HwsimError as e:
            self.error.value = f"<span style='color:var(--jp-error-color1,#d62728)'>{html.escape(str(e))}</span>"
            return
        self.result = r
        self._draw(r, simulated)
        self.timings.append({"what": "simulate" if simulated else "estimate", "ms": (time.perf_counter() - t0) * 1e3})

    def _draw(self, r, simulated: bool):
        self.numbers.value = numbers_html(r)
        method = (
            f"simulated: seed {self.seed}, {r.sim.get('events', 0):,} events in {r.sim.get('wall_ms', 0):.0f} ms"
            if simulated
            else "estimate (closed form): the simulation follows when the value settles"
        )
        self.status.value = f"<div class='hwsim-status' style='color:var(--jp-ui-font-color2,#666)'>{method}</div>"
        self.bottleneck.value = bottleneck_html(r)
        self._draw_suggestions(r)
        if simulated:
            self.trace_link.value = trace_link_html(r)
        drawn = charts.all_charts(r, charts.batch_curve(self._scenario, r))
        for name, out in self.outputs.items():
            if name == "timeline" and not simulated:
                continue  # the estimate has no timeline: keep the last simulated one
            out.outputs = ({"output_type": "display_data", "data": drawn[name].bundle(), "metadata": {}},)

    def _draw_suggestions(self, r):
        items = []
        for sug in r.suggestions[:5]:
            sp = sug.get("speedup")
            text = f"{sug['change']}  " + (f"{sp:.2f}x" if sp is not None else "fits")
            b = W.Button(description=text, tooltip=sug.get("why", ""), layout=W.Layout(width="auto"))
            b.add_class("hwsim-suggestion")
            b.on_click(lambda _b, sug=sug: self.apply(sug))
            items.append(b)
        head = W.HTML("<b>What would help</b> (each re-simulated; click to apply)" if items else "")
        self.suggestion_box.children = [head, *items]


def trace_link_html(r) -> str:
    """A download link for the simulated timeline as a Chrome/Perfetto trace (a data: URI: no server needed)."""
    if not r.timeline:
        return ""
    data = base64.b64encode(json.dumps(r.to_chrome_trace()).encode()).decode()
    name = f"hwsim-{r.scenario['kind']}-trace.json"
    return (
        f"<a class='hwsim-trace' download='{name}' href='data:application/json;base64,{data}'>"
        "Download the timeline as a Chrome/Perfetto trace</a> (open it in ui.perfetto.dev or chrome://tracing)"
    )


def whatif(scenario=None, seed: int = 0, **fields) -> WhatIf:
    """The what-if panel on a scenario (a Scenario, a dict, or fields as keywords)."""
    return WhatIf(scenario, seed=seed, **fields)
