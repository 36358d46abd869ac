"""The what-if panel (ipywidgets): drag a control, see the estimate at once and the simulation when it settles.

Never freezes. Every change is applied through Scenario.replace (a bad value is refused in words beside its
control and nothing changes) and only marks the panel dirty: changes are coalesced (the latest wins). A preview
(the closed-form estimate, under a millisecond) redraws the read-outs at most every PREVIEW_MIN_S while a
control moves; the charts are not redrawn for intermediate values. Once the value has stopped moving for
`debounce_s`, the simulation runs in a worker thread (at most one computation in flight for all panels, so the
kernel keeps answering), first without suggestions (the settled numbers and charts), then with them (each
re-simulated). A result that arrives for a scenario no longer shown is dropped and the latest is simulated
instead. Charts are redrawn only when their spec changed, the timeline is aggregated to what fits in its
width, and every redraw replaces the previous output instead of adding one.

`timings` records each redraw: {"what": "estimate"|"simulate", "ms": compute + draw, "since_change_ms": ...}.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
import json
import time

import ipywidgets as W

from ..api import estimate, simulate
from ..core import catalog, costs
from ..core.errors import HwsimError
from ..core.scenario import BATCHING, FIELDS, KIND_TRAITS, KINDS, PRECISIONS, Scenario, panel_fields
from . import charts
from .report import PANEL_CSS, bottleneck_html, download_link, numbers_html, scenario_toml

POW2 = charts.POW2  # 1 .. 4096
TOKENS = [2**k for k in range(4, 16)]  # 16 .. 32768
OUT_TOKENS = [2**k for k in range(0, 13)]  # 1 .. 4096
SIM_BUDGET_S = 3.0
PREVIEW_MIN_S = 0.05  # at most 20 previews a second while a control moves
SUGGESTION_ROWS = 8  # rows made once and reused: no widget is created per redraw


def _grid(lo_exp: int, hi_exp: int, mantissas=(1, 1.5, 2, 3, 5, 7)) -> list[float]:
    """Round values over decades (1, 1.5, 2, 3, 5, 7 x 10^k): every one exactly what the control shows."""
    return [float(f"{m}e{e}") for e in range(lo_exp, hi_exp + 1) for m in mantissas]


RATES = _grid(0, 5)  # requests/s: 1 .. 700,000
BUDGETS_MS = _grid(0, 4)  # 1 .. 70,000 ms
DELAYS_MS = [0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0]
CHART_LAYOUT = {  # fixed sizes: nothing moves while a control is dragged
    "utilization": "250px",
    "curve": "250px",
    "gpu_time": "190px",
    "memory": "190px",
    "roofline": "310px",
    "timeline": "310px",
}
# a 1x1 transparent PNG: JupyterLab's Vega renderer otherwise renders every chart a second time to a PNG and
# stores it in the output (the panel's charts are live; `%hwsim run` carries real SVGs for exports)
_NO_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    """One worker thread for every panel of the kernel: at most one computation in flight."""
    global _EXECUTOR
    if _EXECUTOR is None:
        _EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hwsim-panel")
    return _EXECUTOR


def _language_models() -> list[str]:
    return [k for k, w in catalog.workloads().items() if w.get("arch") == "transformer" and "vocab" in w]


def _storage_speeds() -> list[float]:
    """Read speeds the storage slider stops at: round values and every catalogue device's own speed."""
    own = [float(d["bandwidth_gbs"]) for d in catalog.storage().values() if "bandwidth_gbs" in d]
    return sorted(set(_grid(-2, 3) + own))


def _labelled(values) -> list[tuple[str, float]]:
    return [(f"{v:,g}", v) for v in values]


def _loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _post(loop, fn, *args) -> None:
    """Run fn(*args) on the kernel's event loop (from the worker thread); nothing when that loop has closed."""
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # the loop closed (the kernel is shutting down): nobody is looking any more
        pass


def _plain_change(fields: dict) -> str:
    """A suggestion's change in the panel's own words: "Loader workers 16 + Engine torch-compile"."""
    parts = [f"{FIELDS[k].label} {v}" for k, v in fields.items() if v is not None and k in FIELDS]
    return " + ".join(parts)


class WhatIf(W.VBox):
    """What-if panel over one Scenario; `.scenario` is the one shown, `.result` the last result drawn for it."""

    def __init__(self, scenario=None, seed: int = 0, debounce_s: float = 0.35, **fields):
        if isinstance(scenario, Scenario):
            self._scenario = scenario.replace(**fields) if fields else scenario
        else:
            self._scenario = Scenario.from_dict({**dict(scenario or {}), **fields})
        self.seed, self.debounce_s = seed, debounce_s
        self.result = None
        self.baseline = None  # (Scenario, Result) pinned, or None
        self.timings: list[dict] = []
        self._gen = 0  # counts accepted changes: a result for an older one is dropped
        self._changed_at = time.perf_counter()
        self._last_preview = 0.0
        self._preview_handle = self._settle_handle = None
        self._in_flight = False  # a simulation running in the worker thread
        self._again = False  # the latest scenario still needs its simulation
        self._drawn: dict[str, str] = {}  # chart name -> the spec text on screen
        self._syncing = False
        self._suggestions: list[dict] = []
        self._settled = None  # the last settled Result (with its suggestions)
        self._gen_of_result = -1  # the change the result shown belongs to

        self.controls = self._make_controls()
        # one error read-out, placed right under the control whose value was refused (every widget is a model the
        # browser has to make before the panel shows: the panel keeps their number low)
        self.row_error = W.HTML()
        self._error_row = None  # the control it is under
        self.rows = self.controls  # a control is its own row (its description is its label)
        self.error = W.HTML(layout=W.Layout(min_height="1.4em"))  # errors of the computation itself
        self.status = W.HTML(layout=W.Layout(height="1.6em", overflow="hidden"))
        self.numbers = W.HTML(layout=W.Layout(min_height="170px"))
        self.bottleneck = W.HTML(layout=W.Layout(height="5.6em", overflow="auto"))
        self.pin_button = W.Button(
            description="Pin baseline",
            icon="thumb-tack",
            tooltip="Keep this result as the baseline: every number and chart is then compared against it",
            layout=W.Layout(width="150px"),
        )
        self.pin_button.on_click(lambda _b: self.unpin() if self.baseline else self.pin())
        self.suggestion_head = W.HTML()
        self.show_all = W.ToggleButton(
            value=False,
            description="Show all",
            tooltip="Also the changes that help less than 1.05x, slow it down or do not fit in memory",
            layout=W.Layout(width="auto"),
        )
        self.show_all.observe(lambda _c: self._draw_suggestions(), names="value")
        self._suggestion_rows = [self._suggestion_row(i) for i in range(SUGGESTION_ROWS)]
        self.suggestion_box = W.VBox(
            [W.HBox([self.suggestion_head, self.show_all]), *(row for row, _, _ in self._suggestion_rows)],
            layout=W.Layout(height="200px", overflow="auto"),
        )
        self.downloads = W.HTML(layout=W.Layout(min_height="2.8em"))
        self.trace_link = self.downloads  # the trace's link is among the downloads
        self.chart_files = W.HTML()
        self.chart_button = W.Button(
            description="Chart images",
            icon="download",
            tooltip="Make SVG and PNG files of the charts shown (offline, with vl-convert) to download",
            layout=W.Layout(width="150px"),
        )
        self.chart_button.on_click(lambda _b: self.export_charts())
        self.outputs = {
            k: W.Output(layout=W.Layout(height=h, width="440px", overflow="hidden")) for k, h in CHART_LAYOUT.items()
        }
        self.css = W.HTML(PANEL_CSS, layout=W.Layout(display="none"))
        # at a glance (fits 1280x720 beside JupyterLab's file browser): the controls, and beside them the
        # numbers, the bottleneck and the utilization chart; then what would help, the exports and the other charts
        self.left = left = W.VBox(list(self.controls.values()), layout=W.Layout(width="390px", flex="0 0 auto"))
        right = W.VBox(
            [self.status, self.numbers, self.error, self.bottleneck, self.outputs["utilization"]],
            layout=W.Layout(flex="1 1 440px", min_width="300px", max_width="600px"),
        )
        actions = W.VBox(
            [
                self.suggestion_box,
                W.HBox([self.pin_button, self.chart_button]),
                self.downloads,
                self.chart_files,
            ],
            layout=W.Layout(max_width="900px"),
        )
        grid = W.GridBox(
            [o for k, o in self.outputs.items() if k != "utilization"],
            layout=W.Layout(grid_template_columns="repeat(auto-fill, 440px)", grid_gap="6px 12px"),
        )
        top = W.HBox([left, right], layout=W.Layout(flex_flow="row wrap", grid_gap="12px"))
        super().__init__([self.css, top, actions, grid])
        self.add_class("hwsim-whatif")
        for name, w in self.controls.items():
            w.observe(lambda change, name=name: self._on_control(name, change["new"]), names="value")
        self._sync_controls()
        self._preview()  # numbers at once
        loop = _loop()
        if self.debounce_s > 0 and loop is not None:
            self._settle_handle = loop.call_soon(self._start_settle)  # after the cell has shown the panel
        else:
            self.settle()

    # -- public -------------------------------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario:
        return self._scenario

    def set(self, **fields) -> None:
        """Change fields from Python, as the controls would (validated; a bad value changes nothing)."""
        self._scenario = self._scenario.replace(**fields)
        self._sync_controls()
        self._changed()

    def apply(self, suggestion: dict) -> None:
        """Apply one of the result's suggestions (its `fields`; only fields this panel has controls for)."""
        fields = self._applicable(suggestion)
        if fields is None:
            raise HwsimError("suggestion", suggestion.get("change"), "a change of fields this panel has controls for")
        self.set(**fields)

    def settle(self) -> None:
        """Simulate the current scenario now (in this thread) and redraw everything with the simulated result."""
        for handle in (self._settle_handle, self._preview_handle):
            if handle is not None:
                handle.cancel()
        self._settle_handle = self._preview_handle = None
        gen, s = self._gen, self._scenario
        t0 = time.perf_counter()
        try:
            r = simulate(s, seed=self.seed, suggest=self._suggest_fields(s), budget_s=SIM_BUDGET_S)
        except HwsimError as e:
            self._show_error(e)
            return
        self._settled_result(gen, s, r, t0, suggestions=False)
        self._settled_result(gen, s, r, t0, suggestions=True)

    def pin(self) -> None:
        """Pin the current scenario's simulated result as the baseline."""
        if self.result is None or self.result.method != "simulate" or self._gen_of_result != self._gen:
            self.settle()
        self.baseline = (self._scenario, self.result)
        self.pin_button.description, self.pin_button.button_style = "Unpin baseline", "info"
        self._redraw_all()

    def unpin(self) -> None:
        self.baseline = None
        self.pin_button.description, self.pin_button.button_style = "Pin baseline", ""
        self._redraw_all()

    def export_charts(self) -> None:
        """Download links for every chart shown as SVG and PNG (made offline with vl-convert; in the worker
        thread when the kernel's event loop runs, so the panel keeps answering)."""
        drawn = self._charts(self.result)
        loop = _loop()
        if loop is None:
            self.chart_files.value = self._chart_links(drawn)
            return
        self.chart_files.value = "<div class='hwsim-chart-files'>Making the chart images&hellip;</div>"
        future = _executor().submit(self._chart_links, drawn)

        def done(f):
            try:
                self.chart_files.value = f.result()
            except Exception as e:  # vl-convert missing or failing: say so where the links would be
                self.chart_files.value = f"<div class='hwsim-error'>{html.escape(repr(e))}</div>"

        future.add_done_callback(lambda f: _post(loop, done, f))

    @staticmethod
    def _chart_links(drawn: dict) -> str:
        links = []
        for name, chart in drawn.items():
            spec = chart.to_dict()
            svg_text = charts.svg(spec, background="white")
            links.append(
                f"{html.escape(name.replace('_', ' '))}: "
                + download_link(f"hwsim-{name}.svg", "image/svg+xml", svg_text.encode(), "SVG")
                + " "
                + download_link(f"hwsim-{name}.png", "image/png", charts.png(spec), "PNG")
            )
        return "<div class='hwsim-chart-files'>Charts: " + " &middot; ".join(links) + "</div>"

    # -- controls -----------------------------------------------------------------------------------------
    def _make_controls(self) -> dict:
        cat = {"gpu": catalog.names("gpus"), "storage": catalog.names("storage")}
        c = {
            "kind": W.ToggleButtons(options=list(KINDS)),
            "workload": W.Dropdown(options=self._workloads(self._scenario.kind, self._scenario.workload)),
            "gpu": W.Dropdown(options=cat["gpu"]),
            "precision": W.Dropdown(options=list(PRECISIONS)),
            "engine": W.Dropdown(options=[(e["name"], k) for k, e in catalog.engines().items()]),
            "batch_size": W.SelectionSlider(options=POW2),
            "loader_workers": W.IntSlider(min=0, max=64),
            "cpu_cores": W.IntSlider(min=1, max=128),
            "storage": W.Dropdown(options=cat["storage"]),
            "storage_bandwidth_gbs": W.SelectionSlider(options=_labelled(_storage_speeds())),
            "host_link": W.Dropdown(options=[("the GPU's", "")] + [(k, k) for k in catalog.names("links")]),
            "pin_memory": W.Checkbox(indent=True),
            "arrival_rate_rps": W.SelectionSlider(options=_labelled(RATES)),
            "max_batch_size": W.SelectionSlider(options=POW2[:11]),
            "max_queue_delay_ms": W.SelectionSlider(options=_labelled(DELAYS_MS)),
            "latency_slo_ms": W.SelectionSlider(options=_labelled(BUDGETS_MS)),
            "replicas": W.IntSlider(min=1, max=8),
            "prompt_tokens": W.SelectionSlider(options=TOKENS),
            "output_tokens": W.SelectionSlider(options=OUT_TOKENS),
            "concurrency": W.SelectionSlider(options=POW2[:11]),
            "batching": W.ToggleButtons(options=list(BATCHING)),
            "mode": W.Dropdown(options=[("closed loop (clients)", "")] + [(m, m) for m in FIELDS["mode"].choices]),
        }
        for name, w in c.items():
            f = FIELDS[name]
            w.description = f.label
            w.tooltip = f.help  # ipywidgets 8: the label's and the control's hover text
            w.style.description_width = "180px"
            w.layout.width = "385px"
            if isinstance(w, (W.SelectionSlider, W.IntSlider)):
                w.continuous_update = True
            if isinstance(w, W.ToggleButtons):
                w.style.button_width = "auto"
        return c

    def _workloads(self, kind: str, current) -> list:
        names = _language_models() if KIND_TRAITS[kind].generates else catalog.names("workloads")
        if isinstance(current, str) and current not in names:
            names = [current, *names]
        return names

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
            "host_link": "",  # the option that means "the GPU's own link"
            "mode": "",
        }
        return defaults.get(name)

    def _shown(self, kind: str) -> set:
        return set(panel_fields(kind)) & set(self.controls)

    def _suggest_fields(self, s) -> list[str]:
        """The changes a suggestion may make: fields with a control in this panel for this kind."""
        return [n for n in panel_fields(s.kind) if n in self.controls and n not in ("kind", "workload")]

    def _sync_controls(self):
        """Controls show the scenario exactly (a value missing from a slider's stops is added, never rounded);
        the ones that do not apply to its kind are hidden."""
        self._syncing = True
        try:
            s = self._scenario
            m = costs.resolve(s)
            shown = self._shown(s.kind)
            self.controls["workload"].options = self._workloads(s.kind, s.workload)
            for name, w in self.controls.items():
                self.rows[name].layout.display = None if name in shown else "none"
                v = self._resolved(name, m)
                if v is None or (isinstance(w, W.Dropdown) and isinstance(v, dict)):
                    continue
                if isinstance(w, W.SelectionSlider):
                    values = [o[1] if isinstance(o, tuple) else o for o in w.options]
                    if v not in values:
                        labelled = isinstance(w.options[0], tuple)
                        new = sorted({*values, v})
                        w.options = _labelled(new) if labelled else new
                try:
                    w.value = v
                except Exception:  # a custom value the control cannot show (a dict device): leave it
                    pass
        finally:
            self._syncing = False

    def _on_control(self, name, value):
        if self._syncing:
            return
        changes = {name: None if (name in ("host_link", "mode") and value == "") else value}
        s = self._scenario
        if name == "kind" and value == "llm" and s.workload not in _language_models():
            changes["workload"] = "llama-2-7b"
        if name == "storage":
            changes["storage_bandwidth_gbs"] = None  # the new device's own bandwidth
        try:
            self._scenario = s.replace(**changes)
        except HwsimError as e:
            self._row_error(name, str(e))
            self._sync_controls()  # the control snaps back to the value in force
            return
        self._row_error(name, None)
        if name in ("kind", "storage", "workload"):
            self._sync_controls()
        self._changed()

    def _row_error(self, name, text):
        """Show a refused value's reason right under its control (text None: clear it if it is this control's)."""
        if text is None:
            if self._error_row == name:
                self._error_row, self.row_error.value = None, ""
                self.left.children = list(self.controls.values())
            return
        self.row_error.value = f"<div class='hwsim-error hwsim-row-error' role='alert'>{html.escape(text)}</div>"
        if self._error_row != name:
            children = list(self.controls.values())
            children.insert(children.index(self.controls[name]) + 1, self.row_error)
            self._error_row = name
            self.left.children = children

    def _show_error(self, e):
        self.error.value = f"<div class='hwsim-error' role='alert'>{html.escape(str(e))}</div>"

    # -- scheduling ---------------------------------------------------------------------------------------
    def _changed(self):
        """A new scenario is in force: preview it soon (coalesced) and simulate it once it has settled."""
        self._gen += 1
        self._changed_at = time.perf_counter()
        loop = _loop()
        if self.debounce_s <= 0 or loop is None:  # no event loop (plain Python, tests): everything now
            self._preview()
            self.settle()
            return
        if self._preview_handle is None:
            wait = max(0.0, self._last_preview + PREVIEW_MIN_S - time.perf_counter())
            self._preview_handle = loop.call_later(wait, self._preview)
        if self._settle_handle is not None:
            self._settle_handle.cancel()
        self._settle_handle = loop.call_later(self.debounce_s, self._start_settle)

    def _preview(self):
        self._preview_handle = None
        self._last_preview = t0 = time.perf_counter()
        try:
            r = estimate(self._scenario, suggest=False)
        except HwsimError as e:
            self._show_error(e)
            return
        self.error.value = ""
        self.result, self._gen_of_result = r, self._gen
        self._draw_numbers(r, simulated=False)
        self._timing("estimate", t0)

    def _start_settle(self):
        self._settle_handle = None
        if self._in_flight:
            self._again = True  # simulated when the one running ends
            return
        self._run_in_thread(self._gen, self._scenario, suggestions=False)

    def _run_in_thread(self, gen, s, suggestions: bool):
        loop = _loop()
        self._in_flight, self._again = True, False
        t0 = time.perf_counter()
        suggest = self._suggest_fields(s) if suggestions else False
        future = _executor().submit(simulate, s, seed=self.seed, suggest=suggest, budget_s=SIM_BUDGET_S)
        future.add_done_callback(lambda f: _post(loop, self._thread_done, f, gen, s, t0, suggestions))

    def _thread_done(self, future, gen, s, t0, suggestions):
        self._in_flight = False
        current = gen == self._gen
        try:
            r = future.result()
        except HwsimError as e:
            if current:
                self._show_error(e)
            r = None
        except Exception as e:  # a bug must not leave the panel waiting for ever
            if current:
                self._show_error(f"the simulation failed: {e!r}")
            r = None
        if r is not None and current:
            self._settled_result(gen, s, r, t0, suggestions)
            if not suggestions:
                self._run_in_thread(gen, s, suggestions=True)  # the settled numbers first, then suggestions
                return
        if not current or self._again:
            if self._settle_handle is None:  # no newer settle waiting for its timer: simulate the latest now
                self._start_settle()

    # -- drawing ------------------------------------------------------------------------------------------
    def _timing(self, what, t0):
        now = time.perf_counter()
        self.timings.append({"what": what, "ms": (now - t0) * 1e3, "since_change_ms": (now - self._changed_at) * 1e3})

    def _settled_result(self, gen, s, r, t0, suggestions: bool):
        self.error.value = ""
        self.result, self._gen_of_result = r, gen
        if suggestions:
            self._settled = r
            self._suggestions = list(r.suggestions)
            self._draw_suggestions()
            return
        self._draw_numbers(r, simulated=True)
        self._draw_charts(r)
        self._draw_downloads(s, r)
        self._timing("simulate", t0)

    def _redraw_all(self):
        r = self.result
        if r is None:
            return
        self._draw_numbers(r, simulated=r.method == "simulate")
        if r.method == "simulate":
            self._draw_charts(r)

    def _draw_numbers(self, r, simulated: bool):
        base = self.baseline[1] if self.baseline else None
        self.numbers.value = numbers_html(r, base)
        if simulated:
            method = (
                f"simulated: seed {self.seed}, {r.sim.get('events', 0):,} events in {r.sim.get('wall_ms', 0):.0f} ms"
            )
        else:
            method = "estimate (closed form): the simulation follows when the value settles"
        state = "settled" if simulated else "preview"
        self.status.value = (
            f"<div class='hwsim-status' data-state='{state}' data-gen='{self._gen}'>{html.escape(method)}</div>"
        )
        self.bottleneck.value = bottleneck_html(r)
        if not simulated:
            self.suggestion_head.value = "<b>What would help</b> <i>(updating when the value settles)</i>"

    def _charts(self, r) -> dict:
        base_s, base = self.baseline if self.baseline else (None, None)
        curve = charts.batch_curve(self._scenario, r, base_s, base)
        return charts.all_charts(r, curve, base=base)

    def _draw_charts(self, r):
        for name, chart in self._charts(r).items():
            out = self.outputs.get(name)
            if out is None:
                continue
            spec = chart.to_dict()
            text = json.dumps(spec, sort_keys=True)
            if self._drawn.get(name) == text:
                continue  # unchanged: no redraw
            self._drawn[name] = text
            bundle = {charts.VEGALITE_MIME: spec, "image/png": _NO_PNG, "text/plain": f"<{name} chart>"}
            out.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)

    def _applicable(self, sug: dict) -> dict | None:
        """The fields a suggestion changes, if this panel has a control for every field it sets (a field it
        resets to the catalogue's value, like a new storage device's latency, needs none); else None."""
        fields = sug.get("fields") or {}
        shown = self._shown(self._scenario.kind)
        if not fields or any(v is not None and k not in shown for k, v in fields.items()):
            return None
        return dict(fields)

    def _suggestion_row(self, i):
        button = W.Button(layout=W.Layout(width="72px", flex="0 0 auto"))
        button.add_class("hwsim-suggestion")
        button.on_click(lambda _b, i=i: self._click_suggestion(i))
        text = W.HTML(layout=W.Layout(flex="1 1 auto"))
        row = W.HBox([button, text], layout=W.Layout(display="none", align_items="center"))
        return row, button, text

    def _click_suggestion(self, i):
        items = self._listed()
        if i < len(items):
            self.apply(items[i])

    def _listed(self) -> list[dict]:
        usable = [s for s in self._suggestions if self._applicable(s) is not None]
        if self.show_all.value:
            return usable
        return [s for s in usable if s.get("shown", True)]

    def _draw_suggestions(self):
        usable = [s for s in self._suggestions if self._applicable(s) is not None]
        items = self._listed()
        hidden = len(usable) - len([s for s in usable if s.get("shown", True)])
        self.show_all.description = f"Show all ({hidden} more)" if not self.show_all.value else "Show fewer"
        self.show_all.layout.display = None if hidden else "none"
        if items:
            self.suggestion_head.value = "<b>What would help</b> (each re-simulated; click to apply)"
        elif usable:
            self.suggestion_head.value = "<b>What would help</b>: no change helps by 1.05x or more"
        else:
            self.suggestion_head.value = "<b>What would help</b>: nothing to suggest"
        for i, (row, button, text) in enumerate(self._suggestion_rows):
            if i >= len(items):
                row.layout.display = "none"
                continue
            sug = items[i]
            sp = sug.get("speedup")
            button.description = f"{sp:.2f}x" if sp is not None else "fits"
            button.tooltip = f"Apply: {sug.get('change', '')}"
            faint = "" if sug.get("shown", True) else " hwsim-faint"
            text.value = (
                f"<div class='hwsim-sugg{faint}' title='{html.escape(sug.get('why', ''))}'>"
                f"{html.escape(_plain_change(sug['fields']) or sug.get('change', ''))}"
                f"<span class='hwsim-why'> &mdash; {html.escape(sug.get('why', ''))}</span></div>"
            )
            row.layout.display = None

    def _draw_downloads(self, s, r):
        kind = s.kind
        links = [
            download_link(
                f"hwsim-{kind}-scenario.toml", "application/toml", scenario_toml(s).encode(), "scenario (TOML)"
            ),
            download_link(f"hwsim-{kind}-result.json", "application/json", r.to_json().encode(), "result (JSON)"),
        ]
        if r.timeline:
            trace = json.dumps(r.to_chrome_trace()).encode()
            links.append(
                download_link(f"hwsim-{kind}-trace.json", "application/json", trace, "trace (Perfetto)", "hwsim-trace")
            )
        self.downloads.value = (
            "<div class='hwsim-downloads'>Download: "
            + " &middot; ".join(links)
            + " <span class='hwsim-why'>(open the trace in ui.perfetto.dev or chrome://tracing)</span></div>"
        )


def trace_link_html(r) -> str:
    """A download link for the simulated timeline as a Chrome/Perfetto trace (a data: URI: no server needed)."""
    if not r.timeline:
        return ""
    data = json.dumps(r.to_chrome_trace()).encode()
    return download_link(f"hwsim-{r.scenario['kind']}-trace.json", "application/json", data, "trace", "hwsim-trace")


def whatif(scenario=None, seed: int = 0, **fields) -> WhatIf:
    """The what-if panel on a scenario (a Scenario, a dict, or fields as keywords)."""
    return WhatIf(scenario, seed=seed, **fields)
