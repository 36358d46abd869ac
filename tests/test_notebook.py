"""The notebook surface: %hwsim in a real IPython shell, the what-if panel without a browser, the charts,
and a handout that survives nbconvert."""

import asyncio
import json
import subprocess
import sys

import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_hwsim import Result, Scenario
from jupyter_hwsim.core.scenario import FIELDS
from jupyter_hwsim.jupyter.charts import VEGALITE_MIME

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def ip():
    shell = start_ipython() or get_ipython()  # the shell is global: another module may have started it
    shell.run_line_magic("load_ext", "jupyter_hwsim")
    return shell


def _run(ip, line, cell=None):
    with capture_output() as cap:
        value = ip.run_cell_magic("hwsim", line, cell) if cell is not None else ip.run_line_magic("hwsim", line)
    return value, cap


def _bundles(cap, mime):
    return [o.data for o in cap.outputs if mime in o.data]


def test_loading_the_extension_is_lazy_and_cheap():
    code = (
        "import sys, time; t = time.perf_counter(); from IPython.testing.globalipapp import start_ipython; "
        "ip = start_ipython(); import jupyter_hwsim; ip.run_line_magic('load_ext', 'jupyter_hwsim'); "
        "heavy = [m for m in ('altair', 'ipywidgets', 'vl_convert', 'jupyterlab') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_run_shows_a_static_report_and_returns_the_result(ip):
    r, cap = _run(ip, "run workload=resnet50 gpu=a100 loader_workers=4 steps=60")
    assert isinstance(r, Result) and r.bottleneck == "cpu"
    html = "".join(o.data.get("text/html", "") for o in cap.outputs)
    assert "hwsim-report" in html and "What would help" in html and "busy" in html and "MFU" in html
    charts = _bundles(cap, VEGALITE_MIME)
    assert len(charts) >= 5
    assert all(c["image/svg+xml"].lstrip().startswith("<svg") for c in charts)  # the static fallback
    assert all(c[VEGALITE_MIME]["$schema"].endswith("/v5.json") for c in charts)
    e, _ = _run(ip, "estimate workload=resnet50 gpu=a100 loader_workers=4")
    assert e.method == "estimate"
    ip.run_cell("r = %hwsim run kind=serving arrival_rate_rps=200 steps=100")
    assert ip.user_ns["r"].throughput_unit == "requests/s"


def test_sweep_draws_throughput_and_latency_with_the_budget(ip):
    res, cap = _run(ip, "sweep batch_size=1,8,64 workload=mlp-small gpu=h100 steps=30 latency_slo_ms=5")
    assert [r.scenario["batch_size"] for r in res] == [1, 8, 64]
    (chart,) = _bundles(cap, VEGALITE_MIME)
    data = chart[VEGALITE_MIME]["datasets"]
    assert [p["x"] for p in data["curve"]] == [1, 8, 64]
    assert data["slo"][0]["p99_ms"] == 5
    assert "hwsim-sweep" in "".join(o.data.get("text/html", "") for o in cap.outputs)
    _, cap = _run(ip, "sweep batch_size=1,8 workload=mlp-small steps=30")
    (chart,) = _bundles(cap, VEGALITE_MIME)
    assert chart[VEGALITE_MIME]["datasets"]["slo"] == []  # no budget given, no line


def test_cell_magic_takes_a_toml_scenario(ip):
    body = 'workload = "bert-base"\ngpu = "t4"\nprecision = "fp16"\nbatch_size = 8\n'
    r, _ = _run(ip, "run steps=40 batch_size=16", body)
    assert (r.scenario["workload"], r.scenario["gpu"], r.scenario["batch_size"]) == ("bert-base", "t4", 16)
    _, cap = _run(ip, "", body)  # no command: the panel
    assert _bundles(cap, WIDGET_MIME)


def test_panel_form_shows_a_widget(ip):
    value, cap = _run(ip, "kind=llm concurrency=4 steps=10")
    assert value is None and _bundles(cap, WIDGET_MIME)


def test_help_explains_every_key(ip):
    _, cap = _run(ip, "help")
    doc = ip.find_line_magic("hwsim").__doc__  # what %hwsim? shows
    for text in (cap.stdout, doc):
        for name, f in FIELDS.items():
            assert name in text
            if f.unit:
                assert f"({f.unit})" in text


@pytest.mark.parametrize(
    "line, cell, needle",
    [
        ("run gpu=a1000", None, "did you mean 'a100'"),
        ("run batchsize=4", None, "did you mean 'batch_size'"),
        ("run batch_size=-3", None, "batch_size=-3"),
        ("sweep batch_size=4", None, "sweep="),
        ("run kind=llm prompt_tokens=99999", None, "prompt_tokens=99999"),
        ("run --seed x", None, "--seed"),
        ("run", 'workload = "bert', "a TOML scenario"),
        ('run workload="unterminated', None, "line="),
    ],
)
def test_bad_input_prints_one_line_and_no_traceback(ip, line, cell, needle):
    value, cap = _run(ip, line, cell)
    assert value is None
    lines = cap.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hwsim: ") and needle in lines[0]
    assert "Traceback" not in cap.stdout + cap.stderr and not cap.outputs


# -- the panel, driven without a browser ---------------------------------------------------------------------


def _panel(**fields):
    from jupyter_hwsim.jupyter.panel import WhatIf

    return WhatIf(debounce_s=0, **fields)


def test_more_workers_on_a_cpu_bound_panel_raise_throughput():
    p = _panel(loader_workers=2, steps=60)
    assert p.result.bottleneck == "cpu" and "cpu</span>" in p.bottleneck.value
    before = p.result.throughput
    p.controls["loader_workers"].value = 8
    assert p.scenario.loader_workers == 8 and p.result.method == "simulate"
    assert p.result.throughput > 2 * before
    assert f"{p.result.throughput:,.1f}" in p.numbers.value
    p.controls["storage"].value = "hdd"  # now the disk starves it
    assert p.result.bottleneck == "io" and "io</span>" in p.bottleneck.value
    assert p.controls["storage_bandwidth_gbs"].value == pytest.approx(0.2, rel=0.5)  # the HDD's own bandwidth
    assert p.controls["host_link"].value == "" and p.controls["host_link"].label == "the GPU's"
    p.controls["host_link"].value = "pcie3"
    assert p.scenario.host_link == "pcie3"
    p.controls["host_link"].value = ""
    assert p.scenario.host_link is None


def test_kind_switch_shows_only_the_controls_that_apply():
    p = _panel(steps=30)
    visible = lambda: {n for n, row in p.rows.items() if row.layout.display != "none"}  # noqa: E731
    assert {"batch_size", "storage"} <= visible() and "concurrency" not in visible()
    p.controls["kind"].value = "llm"
    assert p.scenario.workload == "llama-2-7b"  # a language model for the llm kind
    assert {"concurrency", "prompt_tokens", "batching"} <= visible() and "storage" not in visible()
    assert p.result.throughput_unit == "tokens/s" and "first token" in p.numbers.value
    p.controls["kind"].value = "serving"
    assert {"arrival_rate_rps", "max_batch_size", "max_queue_delay_ms", "latency_slo_ms"} <= visible()


def test_a_bad_value_is_refused_in_words_beside_its_control_and_changes_nothing():
    p = _panel(kind="llm", steps=10)
    before = p.scenario
    p.controls["prompt_tokens"].value = 8192  # longer than llama-2-7b's 4096 context
    err = p.row_error
    assert "prompt_tokens=8192" in err.value and "context" in err.value
    assert p.scenario == before and p.controls["prompt_tokens"].value == before.prompt_tokens
    column = list(p.left.children)
    assert column[column.index(p.controls["prompt_tokens"]) + 1] is err  # right under its control
    p.controls["prompt_tokens"].value = 1024
    assert err not in p.left.children and p.scenario.prompt_tokens == 1024


def test_busy_beside_mfu_and_the_gap_explained():
    p = _panel(kind="llm", concurrency=1, steps=10)
    assert "busy" in p.numbers.value and "MFU" in p.numbers.value
    assert "hwsim-gap" in p.numbers.value  # batch-1 decode: busy, but little math


def test_the_default_panel_shows_exactly_the_default_scenario():
    """No control rounds a default (the storage slider once showed 7.08 for 7.0 GB/s and sent it back)."""
    from jupyter_hwsim import simulate

    p = _panel()
    assert p.scenario == Scenario()
    r = simulate(Scenario())
    assert p.result.method == "simulate"
    assert (p.result.throughput, p.result.latency_ms, p.result.utilization) == (
        r.throughput,
        r.latency_ms,
        r.utilization,
    )
    assert p.controls["storage_bandwidth_gbs"].value == 7.0
    for kind in ("training", "serving", "llm"):
        q = _panel(kind=kind, steps=20)
        for name, w in q.controls.items():
            if q.rows[name].layout.display == "none" or not hasattr(w, "options"):
                continue
            values = [o[1] if isinstance(o, tuple) else o for o in w.options]
            assert w.value in values, (kind, name, w.value)
            w.value = w.value  # the value sent back by the browser is the value shown: nothing changes
        assert q.scenario == Scenario(kind=kind, steps=20)


def test_controls_have_plain_labels_and_their_definition_on_hover():
    p = _panel(steps=20)
    w = p.controls["storage_bandwidth_gbs"]
    assert w.description == "Storage read speed (GB/s)" and w.tooltip == FIELDS["storage_bandwidth_gbs"].help
    assert p.controls["loader_workers"].description == "Loader workers"
    assert all(w.description and w.tooltip for w in p.controls.values())
    assert "title=" in p.numbers.value  # each read-out's definition


def test_a_custom_value_is_shown_exactly():
    p = _panel(storage_bandwidth_gbs=4.2, batch_size=48, steps=20)
    assert p.controls["storage_bandwidth_gbs"].value == 4.2 and p.controls["batch_size"].value == 48
    assert p.scenario.storage_bandwidth_gbs == 4.2 and p.scenario.batch_size == 48


def _suggestion_buttons(p):
    return [(row, button) for row, button, _ in p._suggestion_rows if row.layout.display != "none"]


def test_suggestions_list_the_shown_ones_and_show_all_lists_the_rest():
    p = _panel(steps=60)
    sugs = p.result.suggestions
    assert sugs and all(set(s) >= {"change", "fields", "speedup", "why"} for s in sugs)
    shown = [s for s in sugs if s.get("shown", True)]
    listed = len(_suggestion_buttons(p))
    assert listed == min(len(shown), len(p._suggestion_rows))
    hidden = len(sugs) - len(shown)
    if hidden:
        assert f"{hidden} more" in p.show_all.description
        p.show_all.value = True
        assert len(_suggestion_buttons(p)) == min(len(sugs), len(p._suggestion_rows))
    # a suggestion missing "shown" is listed
    p._suggestions = [{"change": "loader_workers=12", "fields": {"loader_workers": 12}, "speedup": 1.2, "why": "x"}]
    p.show_all.value = False
    p._draw_suggestions()
    assert len(_suggestion_buttons(p)) == 1


def test_clicking_a_suggestion_applies_it():
    p = _panel(loader_workers=2, steps=60)
    rows = _suggestion_buttons(p)
    assert rows
    top = p._listed()[0]
    rows[0][1].click()
    for k, v in top["fields"].items():
        if v is not None:
            assert getattr(p.scenario, k) == v
    assert p.result.method == "simulate"


def test_only_fields_with_a_control_are_suggested_or_applied():
    p = _panel(steps=60)
    shown = {n for n, row in p.rows.items() if row.layout.display != "none"}
    for sug in p._listed():
        assert {k for k, v in sug["fields"].items() if v is not None} <= shown, sug
    p._suggestions = [{"change": "host_cache_gb=138", "fields": {"host_cache_gb": 138.0}, "speedup": 2.0, "why": ""}]
    p._draw_suggestions()
    assert not _suggestion_buttons(p)
    with pytest.raises(Exception, match="host_cache_gb"):
        p.apply(p._suggestions[0])


def test_a_pinned_baseline_is_compared_in_every_number_and_chart():
    p = _panel(loader_workers=4, steps=60)
    assert "hwsim-delta" not in p.numbers.value
    p.pin()
    assert p.baseline is not None and "Unpin" in p.pin_button.description
    p.set(loader_workers=16)
    assert p.numbers.value.count("hwsim-delta") >= 4 and "&#9650;" in p.numbers.value  # faster: up
    spec = lambda name: p.outputs[name].outputs[0]["data"][VEGALITE_MIME]  # noqa: E731
    assert spec("utilization")["datasets"]["base"]
    assert {r["run"] for r in spec("gpu_time")["datasets"]["rows"]} == {"current", "baseline"}
    assert {r["run"] for r in spec("memory")["datasets"]["parts"]} == {"current", "baseline"}
    assert spec("curve")["datasets"]["base_curve"] and spec("curve")["datasets"]["base_current"]
    p.unpin()
    assert "hwsim-delta" not in p.numbers.value and not spec("utilization")["datasets"]["base"]


def _downloads(html_text):
    import base64
    import re

    return {
        name: base64.b64decode(data)
        for name, data in re.findall(r"download='([^']+)' href='data:[^;]+;base64,([^']+)'", html_text)
    }


def test_panel_downloads_scenario_result_and_trace():
    import tomllib

    p = _panel(loader_workers=6, batch_size=128, steps=60)
    files = _downloads(p.downloads.value)
    toml = files["hwsim-training-scenario.toml"].decode()
    assert Scenario.from_dict(tomllib.loads(toml)) == p.scenario
    result = json.loads(files["hwsim-training-result.json"])
    assert result["throughput"] == p.result.throughput
    trace = json.loads(files["hwsim-training-trace.json"])
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == len(p.result.timeline)
    assert "Perfetto" in p.trace_link.value


def test_panel_exports_its_charts_as_svg_and_png():
    p = _panel(steps=30)
    p.export_charts()
    files = _downloads(p.chart_files.value)
    for name in p.outputs:
        assert files[f"hwsim-{name}.svg"].lstrip().startswith(b"<svg"), name
        assert files[f"hwsim-{name}.png"].startswith(b"\x89PNG"), name


def test_panel_offers_the_trace_of_its_simulation():
    p = _panel(steps=60)
    link = p.trace_link.value
    assert "download=" in link and "Perfetto" in link
    data = json.loads(_downloads(link)["hwsim-training-trace.json"])
    assert len([e for e in data["traceEvents"] if e["ph"] == "X"]) == len(p.result.timeline)


def test_panel_charts_carry_their_data():
    p = _panel(steps=60)
    for name, out in p.outputs.items():
        (o,) = out.outputs
        spec = o["data"][VEGALITE_MIME]
        assert spec["datasets"], name
        assert spec["config"]["background"] == "transparent" and spec["usermeta"]["embedOptions"]["renderer"] == "svg"
        assert o["data"]["image/png"]  # a placeholder: the renderer makes no PNG per redraw
    curve = p.outputs["curve"].outputs[0]["data"][VEGALITE_MIME]["datasets"]
    assert len(curve["curve"]) >= 5 and curve["current"][0]["x"] == p.result.details["batch_size"]


def test_an_unchanged_chart_is_not_redrawn():
    p = _panel(steps=60)
    before = {n: o.outputs for n, o in p.outputs.items()}
    p.settle()  # the same scenario, simulated again: the same specs
    assert all(p.outputs[n].outputs is before[n] for n in p.outputs)


def test_dragging_previews_with_the_estimate_and_simulates_once_it_settles():
    from jupyter_hwsim.jupyter.panel import WhatIf

    async def drag():
        p = WhatIf(steps=60, debounce_s=0.2)
        await asyncio.sleep(1.0)  # the first simulation
        assert p.result.method == "simulate"
        n_sim = sum(t["what"] == "simulate" for t in p.timings)
        for w in (2, 3, 4, 5, 6):  # a slider moving
            p.controls["loader_workers"].value = w
            assert p.scenario.loader_workers == w
            await asyncio.sleep(0.06)
            assert p.result.method == "estimate" and p.result.scenario["loader_workers"] == w
        await asyncio.sleep(1.0)
        assert p.result.method == "simulate" and p.result.scenario["loader_workers"] == 6
        assert sum(t["what"] == "simulate" for t in p.timings) == n_sim + 1  # one simulation, not five
        return p

    p = asyncio.run(drag())
    assert all(t["ms"] > 0 for t in p.timings)


def test_fifty_fast_changes_are_coalesced_and_the_latest_wins():
    from jupyter_hwsim import simulate
    from jupyter_hwsim.jupyter.panel import WhatIf

    async def storm():
        p = WhatIf(steps=60, debounce_s=0.15)
        await asyncio.sleep(1.0)
        p.timings.clear()
        values = [1 + (i * 7) % 40 for i in range(50)]
        for v in values:  # 50 changes with no pause: the kernel sees them back to back
            p.controls["loader_workers"].value = v
        for _ in range(100):
            await asyncio.sleep(0.1)
            if p.result.method == "simulate" and p.result.scenario["loader_workers"] == values[-1] and p._settled:
                if p._settled.scenario["loader_workers"] == values[-1] and not p._in_flight:
                    break
        return p, values

    p, values = asyncio.run(storm())
    assert sum(t["what"] == "estimate" for t in p.timings) <= 3  # coalesced: not one preview per value
    assert sum(t["what"] == "simulate" for t in p.timings) == 1
    expected = simulate(Scenario(loader_workers=values[-1], steps=60), suggest=False)
    assert p.result.throughput == expected.throughput
    assert f"{expected.throughput:,.1f}" in p.numbers.value


def test_a_simulation_in_flight_is_not_doubled_and_a_stale_one_is_dropped():
    from jupyter_hwsim.jupyter.panel import WhatIf

    async def race():
        p = WhatIf(steps=400, debounce_s=0.01)
        await asyncio.sleep(0.05)
        p.controls["loader_workers"].value = 3  # while the first simulation may still run
        await asyncio.sleep(0.05)
        p.controls["loader_workers"].value = 5
        for _ in range(200):
            await asyncio.sleep(0.05)
            if not p._in_flight and p._settled and p._settled.scenario["loader_workers"] == 5:
                break
        return p

    p = asyncio.run(race())
    assert p.result.scenario["loader_workers"] == 5 and p.result.method == "simulate"
    assert sum(t["what"] == "simulate" for t in p.timings) <= 3  # the first, perhaps 3 (if it started), and 5


def test_the_timeline_is_aggregated_to_what_fits():
    from jupyter_hwsim import charts, simulate

    r = simulate(Scenario(loader_workers=32, steps=60), suggest=False)
    spans = charts.timeline(r).datasets["spans"]
    assert len({s["track"] for s in spans}) <= charts.MAX_TRACKS
    assert len(spans) <= charts.WIDTH * charts.MAX_TRACKS
    assert sum(s["spans"] for s in spans) >= len(spans)


def test_whatif_from_python_exposes_scenario_and_result():
    import jupyter_hwsim

    p = jupyter_hwsim.whatif({"workload": "bert-base", "gpu": "t4", "steps": 30}, precision="fp16")
    assert p.scenario.gpu == "t4" and p.scenario.precision == "fp16" and p.result.scenario["gpu"] == "t4"
    p.set(batch_size=64)
    assert p.result.scenario["batch_size"] == 64 and p.controls["batch_size"].value == 64


# -- charts ---------------------------------------------------------------------------------------------------


def test_charts_encode_what_they_say_and_compile_with_vega_lite_5():
    from jupyter_hwsim import charts, simulate

    r = simulate(Scenario(loader_workers=4, steps=60), suggest=False)
    drawn = charts.all_charts(r)
    util = drawn["utilization"].to_dict()
    keys = {row["key"] for row in util["datasets"]["rows"]}
    assert keys == {"storage", "cpu", "host_link", "gpu_busy", "gpu_mfu", "hbm_bw"}
    assert util["layer"][0]["encoding"]["x"]["field"] == "value" and util["config"]["background"] == "transparent"
    gpu = drawn["gpu_time"].to_dict()
    assert sum(row["fraction"] for row in gpu["datasets"]["rows"]) == pytest.approx(1.0)
    roof = drawn["roofline"].to_dict()
    assert roof["layer"][1]["encoding"]["x"]["scale"]["type"] == "log" and len(roof["datasets"]["ops"]) > 20
    tl = drawn["timeline"].to_dict()
    tracks = {row["track"] for row in tl["datasets"]["spans"]}
    assert "gpu" in tracks and any(t.startswith("worker") for t in tracks)
    mem = drawn["memory"].to_dict()
    assert mem["datasets"]["capacity"][0]["gb"] == pytest.approx(80 * 2**30 / 1e9)  # 80 GiB
    for name, c in drawn.items():
        assert charts.svg(c.to_dict()).lstrip().startswith("<svg"), name
        json.dumps(c.to_dict(), allow_nan=False)


@pytest.mark.slow
def test_a_run_survives_nbconvert_as_a_handout(tmp_path):
    import nbclient
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_hwsim"),
        nbformat.v4.new_code_cell("%hwsim run workload=resnet50 gpu=a100 loader_workers=4 steps=60"),
        nbformat.v4.new_code_cell("%hwsim sweep batch_size=1,16,256 steps=30 latency_slo_ms=100"),
    ]
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=180).execute()
    nbformat.validate(nb)
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert html.count("data:image/svg+xml") >= 6  # every chart as an image in the export
    assert "hwsim-report" in html and "What would help" in html
    assert "vega-embed" not in html and "cdn.jsdelivr" not in html
