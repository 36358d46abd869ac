"""The notebook surface: %hwsim in a real IPython shell, the what-if panel without a browser, the charts,
and a handout that survives nbconvert."""

import asyncio
import json
import subprocess
import sys

import pytest
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_hwsim import Result, Scenario
from jupyter_hwsim.core.scenario import FIELDS
from jupyter_hwsim.jupyter.charts import VEGALITE_MIME

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def ip():
    shell = start_ipython()
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


def test_a_bad_value_is_refused_in_words_and_changes_nothing():
    p = _panel(kind="llm", steps=10)
    before = p.scenario
    p.controls["prompt_tokens"].value = 8192  # longer than llama-2-7b's 4096 context
    assert "prompt_tokens=8192" in p.error.value and "context" in p.error.value
    assert p.scenario == before and p.controls["prompt_tokens"].value == before.prompt_tokens


def test_busy_beside_mfu_and_the_gap_explained():
    p = _panel(kind="llm", concurrency=1, steps=10)
    assert "busy" in p.numbers.value and "MFU" in p.numbers.value
    assert "hwsim-gap" in p.numbers.value  # batch-1 decode: busy, but little math


def test_clicking_a_suggestion_applies_it():
    p = _panel(loader_workers=2, steps=60)
    buttons = [b for b in p.suggestion_box.children if hasattr(b, "on_click")]
    assert buttons
    top = p.result.suggestions[0]
    buttons[0].click()
    for k, v in top["fields"].items():
        assert getattr(p.scenario, k) == Scenario(**{k: v}).to_dict()[k] if v is not None else True


def test_panel_offers_the_trace_of_its_simulation():
    import base64

    p = _panel(steps=60)
    link = p.trace_link.value
    assert "download=" in link and "Perfetto" in link
    data = json.loads(base64.b64decode(link.split("base64,")[1].split("'")[0]))
    assert len([e for e in data["traceEvents"] if e["ph"] == "X"]) == len(p.result.timeline)


def test_panel_charts_carry_their_data():
    p = _panel(steps=60)
    for name, out in p.outputs.items():
        (o,) = out.outputs
        spec = o["data"][VEGALITE_MIME]
        assert spec["datasets"], name
    curve = p.outputs["curve"].outputs[0]["data"][VEGALITE_MIME]["datasets"]
    assert len(curve["curve"]) >= 5 and curve["current"][0]["x"] == p.result.details["batch_size"]


def test_dragging_previews_with_the_estimate_and_simulates_once_it_settles():
    from jupyter_hwsim.jupyter.panel import WhatIf

    async def drag():
        p = WhatIf(steps=60, debounce_s=0.2)
        n_sim = sum(t["what"] == "simulate" for t in p.timings)
        for w in (2, 3, 4, 5, 6):  # a slider moving
            p.controls["loader_workers"].value = w
            assert p.result.method == "estimate" and p.scenario.loader_workers == w
        await asyncio.sleep(0.6)
        assert p.result.method == "simulate" and p.result.scenario["loader_workers"] == 6
        assert sum(t["what"] == "simulate" for t in p.timings) == n_sim + 1  # one simulation, not five
        return p

    p = asyncio.run(drag())
    assert all(t["ms"] > 0 for t in p.timings)


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
    assert util["layer"][0]["encoding"]["x"]["field"] == "value"
    gpu = drawn["gpu_time"].to_dict()
    assert sum(row["fraction"] for row in gpu["datasets"]["rows"]) == pytest.approx(1.0)
    roof = drawn["roofline"].to_dict()
    assert roof["layer"][1]["encoding"]["x"]["scale"]["type"] == "log" and len(roof["datasets"]["ops"]) > 20
    tl = drawn["timeline"].to_dict()
    tracks = {row["track"] for row in tl["datasets"]["spans"]}
    assert "gpu" in tracks and any(t.startswith("worker") for t in tracks)
    mem = drawn["memory"].to_dict()
    assert mem["datasets"]["capacity"][0]["gb"] == 80
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
