"""Bad input at every surface (issue 28): the Python API raises one HwsimError naming the field; the CLI exits 2
with one line on stderr; the %hwsim magic prints one line and no traceback; the REST API answers 400 with a JSON
error naming the field, never 500. Fields that do not apply to a kind, a queue delay beyond the latency budget
and an overloaded language model are warned about in Result.warnings. Scenarios own frozen copies of what they
were given, and a simulation stops itself at its time budget from inside the event loop."""

import asyncio
import json
import math
import subprocess
import sys
import time

import pytest
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from jupyter_hwsim import HwsimError, Scenario, estimate, simulate, sweep
from jupyter_hwsim.core import simulator

pytest_plugins = ("pytest_jupyter.jupyter_server",)

NAN, INF = float("nan"), float("inf")
GPU = {
    "name": "test GPU",
    "memory_gb": 80,
    "memory_bandwidth_gbs": 2000,
    "peak_tflops": {"bf16": 300, "fp32": 20},
    "parallel_units": 100,
    "compute_efficiency": 0.8,
    "memory_efficiency": 0.9,
    "launch_overhead_us": 1.0,
    "tile": 128,
    "workspace_gb": 0.5,
}
STORAGE = {"bandwidth_gbs": 3.0, "latency_ms": 0.1, "concurrency": 16}
MLP = {
    "arch": "mlp",
    "widths": [1024, 4096, 10],
    "input_bytes_per_sample": 4096,
    "preprocess_ms_per_sample": 0.01,
    "default_batch_size": 64,
}
TINY = {k: v for k, v in MLP.items() if k != "widths"} | {
    "arch": "transformer",
    "layers": 2,
    "hidden": 64,
    "heads": 4,
    "ffn": 256,
    "vocab": 1000,
}


def _deep(levels: int):
    out = cur = {}
    for _ in range(levels):
        cur["a"] = {}
        cur = cur["a"]
    return out


# (fields, the field the error names); every one JSON-encodable, so REST and the CLI's files can send them too
BAD = [
    # numbers: huge, not finite, not ASCII digits, out of range
    ({"batch_size": 10**400}, "batch_size"),
    ({"batch_size": -(10**400)}, "batch_size"),
    ({"steps": 10**400}, "steps"),
    ({"jitter_cv": 10**400}, "jitter_cv"),
    ({"storage_bandwidth_gbs": 10**400}, "storage_bandwidth_gbs"),
    ({"jitter_cv": NAN}, "jitter_cv"),
    ({"arrival_rate_rps": INF, "kind": "serving"}, "arrival_rate_rps"),
    ({"max_queue_delay_ms": -INF, "kind": "serving"}, "max_queue_delay_ms"),
    ({"host_link_gbs": NAN}, "host_link_gbs"),
    ({"cpu_speed": INF}, "cpu_speed"),
    ({"batch_size": "٣"}, "batch_size"),
    ({"batch_size": "²"}, "batch_size"),
    ({"steps": "１００"}, "steps"),
    ({"seq_len": 2.5}, "seq_len"),
    ({"output_tokens": 0, "kind": "llm"}, "output_tokens"),
    # custom catalogue entries: checked deeply, not for keys only
    ({"gpu": {k: v for k, v in GPU.items() if k != "compute_efficiency"}}, "gpu.compute_efficiency"),
    ({"gpu": {**GPU, "memory_bandwidth_gbs": 0}}, "gpu.memory_bandwidth_gbs"),
    ({"gpu": {**GPU, "peak_tflops": {"bf16": NAN}}}, "gpu.peak_tflops.bf16"),
    ({"gpu": {**GPU, "peak_tflops": {}}}, "gpu.peak_tflops"),
    ({"gpu": {**GPU, "parallel_units": 0}}, "gpu.parallel_units"),
    ({"gpu": {**GPU, "compute_efficiency": 2}}, "gpu.compute_efficiency"),
    ({"gpu": {**GPU, "memory_gb": "lots"}}, "gpu.memory_gb"),
    ({"gpu": {**GPU, "tile": 10**400}}, "gpu.tile"),
    ({"storage": {**STORAGE, "bandwidth_gbs": 0}}, "storage.bandwidth_gbs"),
    ({"storage": {**STORAGE, "concurrency": 0}}, "storage.concurrency"),
    ({"storage": {**STORAGE, "latency_ms": INF}}, "storage.latency_ms"),
    ({"host_link": {"bandwidth_gbs": 0}}, "host_link.bandwidth_gbs"),
    ({"host_link": {"bandwidth_gbs": 10, "pageable_factor": 0}}, "host_link.pageable_factor"),
    ({"workload": {**MLP, "default_batch_size": -4}}, "workload.default_batch_size"),
    ({"workload": {**MLP, "default_batch_size": 0}}, "workload.default_batch_size"),
    ({"workload": {**MLP, "widths": [1024, -5]}}, "workload.widths[1]"),
    ({"workload": {**MLP, "widths": []}}, "workload.widths"),
    ({"workload": {**MLP, "input_bytes_per_sample": NAN}}, "workload.input_bytes_per_sample"),
    ({"workload": {**TINY, "layers": 100_000}}, "workload.layers"),
    ({"workload": {**TINY, "heads": 0}}, "workload.heads"),
    ({"workload": {**TINY, "kv_heads": 8}}, "workload.kv_heads"),
    ({"workload": {**MLP, "arch": 5}}, "workload.arch"),
    ({"workload": {**MLP, "arch": "ops", "ops": "x"}}, "workload.ops"),
    (
        {
            "workload": {
                **MLP,
                "arch": "ops",
                "ops": [{"name": "a", "cls": "matmul", "flops": NAN, "act_in": 1, "act_out": 1}],
            }
        },
        "workload.ops[0].flops",
    ),
    ({"workload": {**MLP, "extra": _deep(50)}}, "workload.extra.a.a.a.a.a.a.a.a"),
]
BAD_IDS = [f"{i}-{next(iter(f))}" for i, (f, _) in enumerate(BAD)]


def _one_line(text: str) -> bool:
    return len(text.strip().splitlines()) == 1 and "Traceback" not in text


# ---- Python API -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fields,field", BAD, ids=BAD_IDS)
def test_api_refuses_with_one_error_naming_the_field(fields, field):
    with pytest.raises(HwsimError) as err:
        Scenario.from_dict(fields)
    assert err.value.field == field
    assert _one_line(str(err.value)) and len(str(err.value)) < 400
    with pytest.raises(HwsimError):
        Scenario(batch_size=8).replace(**fields)  # nothing half-applied: replace refuses the same way


@pytest.mark.parametrize(
    "data", ["batch_size=8", [("batch_size", 8)], None, 5], ids=["text", "pairs", "none", "number"]
)
def test_api_refuses_a_scenario_that_is_not_a_table(data):
    with pytest.raises(HwsimError) as err:
        Scenario.from_dict(data)
    assert err.value.field == "scenario"


def test_api_refuses_a_key_that_is_not_text():
    with pytest.raises(HwsimError) as err:
        Scenario(gpu={**GPU, 7: 1})
    assert err.value.field.startswith("gpu[")
    with pytest.raises(HwsimError):
        Scenario.from_dict({"batch_size": 8, 7: 1})


def test_an_integer_too_long_to_print_is_named_by_its_size():
    with pytest.raises(HwsimError) as err:
        Scenario(batch_size=10**5000)
    assert "bits" in str(err.value) and len(str(err.value)) < 200
    assert json.dumps(err.value.to_dict())


@pytest.mark.parametrize("workers", [-1, 0, True, 2.5, "4", 10**400])
def test_sweep_refuses_bad_workers_before_any_work(workers):
    with pytest.raises(HwsimError) as err:
        sweep({"workload": "mlp-small", "steps": 20}, batch_size=[1, 2], workers=workers)
    assert err.value.field == "workers"


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"seeds": 0}, "seeds"),
        ({"seeds": 10**400}, "seeds"),
        ({"seed": -1}, "seed"),
        ({"seed": NAN}, "seed"),
        ({"batch_size": list(range(1, 1001)), "steps": list(range(10, 1010))}, "sweep"),
    ],
)
def test_sweep_refuses_bad_seeds_and_sizes(kwargs, field):
    with pytest.raises(HwsimError) as err:
        sweep({"workload": "mlp-small", "steps": 20}, **{"batch_size": [1, 2], **kwargs})
    assert err.value.field == field


@pytest.mark.parametrize("axis", [[1, 10**400], [1, NAN], [], 8])
def test_sweep_refuses_a_bad_axis(axis):
    with pytest.raises(HwsimError) as err:
        sweep({"workload": "mlp-small", "steps": 20}, batch_size=axis, workers=1)
    assert err.value.field == "batch_size"


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "llm", "output_tokens": 1, "jitter_cv": 0, "output_tokens_cv": 0, "steps": 32},
        {"kind": "llm", "output_tokens": 1, "jitter_cv": 0, "output_tokens_cv": 0, "batching": "static", "steps": 32},
        {"kind": "llm", "output_tokens": 1, "arrival_rate_rps": 5, "steps": 32},
        {"kind": "llm", "jitter_cv": 0, "output_tokens_cv": 0, "concurrency": 1, "steps": 10},
        {"kind": "serving", "jitter_cv": 0, "steps": 40},
    ],
)
def test_edge_values_that_are_valid_give_finite_results(fields):
    for r in (simulate(fields, suggest=True), estimate(fields)):
        assert math.isfinite(r.throughput) and r.throughput > 0
        json.dumps(r.to_dict(), allow_nan=False)


def test_a_scenario_owns_a_frozen_copy_of_what_it_was_given():
    w = json.loads(json.dumps(MLP))
    gpu = json.loads(json.dumps(GPU))
    s = Scenario.from_dict({"workload": w, "gpu": gpu, "steps": 20})
    w["widths"].append(7)
    w["default_batch_size"] = -1
    gpu["peak_tflops"]["bf16"] = 0
    assert list(s.workload["widths"]) == [1024, 4096, 10] and s.workload["default_batch_size"] == 64
    assert s.gpu["peak_tflops"]["bf16"] == 300
    with pytest.raises(TypeError):
        s.workload["default_batch_size"] = 1
    with pytest.raises(TypeError):
        s.gpu["peak_tflops"]["bf16"] = 1
    out = s.to_dict()  # a plain, mutable copy on the way out, equal to the scenario's
    out["workload"]["widths"].append(9)
    assert list(s.workload["widths"]) == [1024, 4096, 10]
    assert Scenario.from_dict(s.to_dict()) == s
    assert json.loads(json.dumps(s.to_dict()))["workload"]["widths"] == [1024, 4096, 10]


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"kind": "training", "arrival_rate_rps": 5}, "arrival_rate_rps"),
        ({"kind": "training", "prompt_tokens": 100}, "prompt_tokens"),
        ({"kind": "inference", "max_batch_size": 16}, "max_batch_size"),
        ({"kind": "inference", "replicas": 2}, "replicas"),
        ({"kind": "serving", "batching": "static"}, "batching"),
        ({"kind": "serving", "output_tokens": 64}, "output_tokens"),
        ({"kind": "llm", "batch_size": 64}, "batch_size"),
        ({"kind": "llm", "loader_workers": 2}, "loader_workers"),
        ({"kind": "llm", "max_queue_delay_ms": 5}, "max_queue_delay_ms"),
    ],
)
def test_a_field_of_another_kind_is_warned_about(fields, field):
    r = estimate({**fields, "steps": 20}, suggest=False)
    assert any(w.startswith(f"{field}=") and "does not apply" in w for w in r.warnings), r.warnings


def test_fields_of_the_kind_and_defaults_are_not_warned_about():
    for fields in (
        {"kind": "training", "batch_size": 64, "latency_slo_ms": 50},
        {"kind": "serving", "concurrency": 8, "think_time_ms": 5, "batch_size": 4, "arrival_rate_rps": None},
        {"kind": "llm", "arrival_rate_rps": 2, "cpu_cores": 8, "kv_precision": "fp8"},
        {"kind": "training", "arrival_rate_rps": None, "max_queue_delay_ms": 1.0},
    ):
        assert not [w for w in estimate(fields, suggest=False).warnings if "does not apply" in w], fields
    s = Scenario(kind="serving", arrival_rate_rps=50).replace(kind="training")  # a round trip still works
    assert s.replace(kind="serving").arrival_rate_rps == 50


def test_a_queue_delay_beyond_the_budget_is_warned_about():
    r = simulate({"kind": "serving", "max_queue_delay_ms": 1e5, "steps": 40}, suggest=False)
    assert any(w.startswith("max_queue_delay_ms=100000 is above the latency budget") for w in r.warnings)
    assert not [w for w in estimate({"kind": "serving"}).warnings if "max_queue_delay_ms" in w]


def test_an_overloaded_language_model_is_warned_about_by_both_methods():
    s = {"kind": "llm", "arrival_rate_rps": 1000, "steps": 32}
    for r in (simulate(s, suggest=False), estimate(s, suggest=False)):
        assert any(w.startswith("overloaded: arrival_rate_rps=1000") for w in r.warnings), r.warnings
    assert not [w for w in estimate({"kind": "llm", "arrival_rate_rps": 1}).warnings if "overloaded" in w]


@pytest.mark.parametrize("kind", ["training", "serving", "llm"])
def test_the_event_loop_stops_itself_at_its_budget(kind, monkeypatch):
    with pytest.raises(HwsimError) as err:
        simulate({"kind": kind, "steps": 200}, suggest=False, budget_s=1e-4)
    assert err.value.field == "steps" and "budget" in str(err.value)
    monkeypatch.setattr(simulator, "MAX_EVENTS", 1000)  # the event budget
    monkeypatch.setattr(simulator, "CHECK_EVERY", 64)
    with pytest.raises(HwsimError) as err:
        simulate({"kind": kind, "steps": 2000}, suggest=False)
    assert err.value.field == "steps" and "events" in str(err.value)


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"gpu": {**GPU, "peak_tflops": []}}, "gpu.peak_tflops"),
        ({"gpu": {**GPU, "peak_tflops": "300"}}, "gpu.peak_tflops"),
        ({"gpu": {**GPU, "name": ["a"]}}, "gpu.name"),
        ({"workload": {**MLP, "name": 5}}, "workload.name"),
        ({"gpu": {**GPU, "memory_gb": None}}, "gpu.memory_gb"),
        ({"workload": {**MLP, "widths": [1024, None]}}, "workload.widths[1]"),
        (
            {
                "engine": {
                    "fusion": "eager",
                    "fuses": True,
                    "issue_us": 5.0,
                    "call_us": 1.0,
                    "autocast_us": 0.0,
                    "backward_us": 1.0,
                    "step_us": 10.0,
                    "trains": True,
                }
            },
            "engine.fuses",
        ),
        (
            {
                "workload": {
                    **MLP,
                    "arch": "measured",
                    "matmul": {"flops": 1, "values_in": 1, "values_out": 1, "kernels": 1},
                    "other": {"flops": 1, "values_in": 1, "values_out": 1, "kernels": 1},
                    "params": [1],
                    "device_bytes_per_sample": "x",
                }
            },
            "workload.params",
        ),
    ],
    ids=[
        "tflops-list",
        "tflops-text",
        "gpu-name-list",
        "workload-name-number",
        "null",
        "null-in-list",
        "fuses-bool",
        "measured-params-list",
    ],
)
def test_a_wrong_type_inside_a_custom_entry_is_refused(fields, field):
    """Found by tests/test_generated_bad_input.py: each gave a TypeError or AttributeError (an HTTP 500)."""
    with pytest.raises(HwsimError) as err:
        estimate(fields, suggest=False)
    assert err.value.field == field


ENGINE = {"fusion": "eager", "fuses": [], "issue_us": 5.0, "call_us": 1.0, "autocast_us": 0.0, "backward_us": 1.0,
          "step_us": 10.0, "trains": True}  # fmt: skip


@pytest.mark.parametrize(
    "per_platform,field",
    [
        ({"Apple": 0.7}, "engine.decode_bw_efficiency_on.Apple"),
        ({"Apple": {"int4": 3.0}}, "engine.decode_bw_efficiency_on.Apple.int4"),
        ({}, "engine.decode_bw_efficiency_on"),
    ],
)
def test_a_per_platform_decode_figure_must_be_a_table_of_shares(per_platform, field):
    """An engine's decode efficiency per platform is {platform: {precision: share}}: anything else is refused by
    name, before an LLM's decode step would look a platform up in it."""
    engine = {**ENGINE, "decode_bw_efficiency_on": per_platform}
    with pytest.raises(HwsimError) as err:
        estimate({"kind": "llm", "gpu": "m2-ultra", "engine": engine, "precision": "int4"}, suggest=False)
    assert err.value.field == field and ("table" in str(err.value) or "number" in str(err.value))
    run = {"kind": "llm", "gpu": "m2-ultra", "precision": "int4", "concurrency": 1}
    slow = estimate({**run, "engine": {**ENGINE, "decode_bw_efficiency_on": {"Apple": {"int4": 0.5}}}}, suggest=False)
    other = estimate({**run, "engine": {**ENGINE, "decode_bw_efficiency_on": {"AMD": {"int4": 0.5}}}}, suggest=False)
    assert slow.tokens_per_s_per_stream < 0.7 * other.tokens_per_s_per_stream  # only this device's platform's applies


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"storage_bandwidth_gbs": 5e-324}, "storage_bandwidth_gbs"),
        ({"kind": "serving", "cpu_speed": 5e-324}, "cpu_speed"),
        ({"gpu": {**GPU, "compute_efficiency": 2.2250738585e-313}}, "gpu.compute_efficiency"),
        ({"host_link": {"bandwidth_gbs": 5e-324}}, "host_link.bandwidth_gbs"),
    ],
)
def test_a_number_too_small_to_divide_by_is_refused(fields, field):
    """Found by tests/test_generated_bad_input.py: a subnormal float is > 0 but 1/x overflows (ZeroDivisionError,
    or infinity in the result)."""
    with pytest.raises(HwsimError) as err:
        estimate(fields, suggest=False)
    assert err.value.field == field


def _wide_mlp(widths: int) -> dict:
    return {**MLP, "widths": [64] * widths}


def test_a_model_too_big_for_its_suggestions_is_refused_before_any_work():
    """A custom workload of 100,000 layers held estimate() for two minutes (every change the suggestion search tries
    evaluates every operator again): refused at once, saying what is too big and what to change."""
    s = Scenario(workload=_wide_mlp(100_000))
    for run in (estimate, simulate):
        with pytest.raises(HwsimError) as err:
            run(s)
        assert err.value.field == "workload" and _one_line(str(err.value))
        assert "operators" in str(err.value) and "suggest=False" in str(err.value)


def test_the_operator_limit_counts_evaluations(monkeypatch):
    from jupyter_hwsim import runner

    monkeypatch.setattr(runner, "MAX_OPERATOR_RUNS", 20 * (1 + runner.SUGGEST_RUNS))  # 20 operators with suggestions
    small, big = Scenario(workload=_wide_mlp(5), steps=20), Scenario(workload=_wide_mlp(20), steps=20)
    assert estimate(small).suggestions is not None
    with pytest.raises(HwsimError) as err:
        estimate(big)
    assert err.value.field == "workload" and "at most 20 operators" in str(err.value)
    assert math.isfinite(estimate(big, suggest=False).throughput)  # one evaluation: always within the limit
    assert math.isfinite(simulate(big, suggest=False).throughput)


def test_the_suggestion_search_stops_at_its_budget():
    """estimate() had no time budget: its suggestion search now checks the call's budget between two evaluations,
    as simulate()'s does, and stops with an error naming what to change."""
    with pytest.raises(HwsimError) as err:
        estimate({"workload": "resnet50"}, budget_s=1e-9)
    assert err.value.field == "workload" and "budget" in str(err.value) and "suggest=False" in str(err.value)
    with pytest.raises(HwsimError) as err:
        simulate({"workload": "resnet50", "steps": 20}, budget_s=1e-9)
    assert err.value.field == "steps" and "budget" in str(err.value)
    assert estimate({"workload": "resnet50"}, suggest=False, budget_s=1e-9).throughput > 0  # nothing to stop


@pytest.mark.parametrize("budget", [0, -1, NAN, INF, "5", True, 10**400])
def test_a_bad_budget_is_refused(budget):
    for run in (estimate, simulate):
        with pytest.raises(HwsimError) as err:
            run({"steps": 20}, budget_s=budget)
        assert err.value.field == "budget_s"


# ---- CLI: python -m jupyter_hwsim, in parallel --------------------------------------------------------------

_CLI_FILES = {
    "list.json": "[1, 2]",
    "number.json": "5",
    "text.json": '"batch_size=8"',
    "scalar.toml": "scenario = 5",
    "deep.json": '{"workload": ' + "[" * 3000 + "]" * 3000 + "}",
    "gpu.json": json.dumps(BAD[15][0]),
    "zero_bw.json": json.dumps(BAD[16][0]),
    "negative_batch.json": json.dumps(BAD[28][0]),
    "layers.json": json.dumps(BAD[33][0]),
    "deep_entry.json": json.dumps(BAD[-1][0]),
}
CLI_BAD = [
    ["run", "batch_size=1" + "0" * 400],
    ["run", "jitter_cv=nan"],
    ["run", "jitter_cv=inf"],
    ["run", "kind=serving", "arrival_rate_rps=-inf"],
    ["run", "batch_size=1e400"],
    ["run", "batch_size=٣"],
    ["run", "steps=１００"],
    ["run", "--seed", "²"],
    ["run", "--seed", "-1"],
    ["sweep", "batch_size=1,2", "--workers", "-1"],
    ["sweep", "batch_size=1,2", "--workers", "0"],
    ["sweep", "batch_size=1,nan"],
    *(["run", name] for name in _CLI_FILES),
]


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """Every bad command line at once (each is a new interpreter): {index: (returncode, stdout, stderr)}."""
    d = tmp_path_factory.mktemp("cli")
    for name, text in _CLI_FILES.items():
        (d / name).write_text(text)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "jupyter_hwsim", *args],
            cwd=d,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in CLI_BAD
    ]
    out = {}
    for i, p in enumerate(procs):
        stdout, stderr = p.communicate(timeout=180)
        out[i] = (p.returncode, stdout, stderr)
    return out


@pytest.mark.parametrize("i", range(len(CLI_BAD)), ids=[" ".join(a)[:40] for a in CLI_BAD])
def test_cli_bad_input_exits_2_with_one_line(cli_runs, i):
    code, stdout, stderr = cli_runs[i]
    assert code == 2, stderr
    assert stdout == ""
    assert _one_line(stderr) and stderr.startswith("error: "), stderr


# ---- the %hwsim magic --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip():
    """IPython's test shell, a singleton: whichever module starts it first, the other modules get the same one."""
    first = not hasattr(start_ipython, "already_called")
    shell = start_ipython() or TerminalInteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_hwsim")
    yield shell
    if first:  # tests/test_notebook.py calls start_ipython() itself: let it set up (and get) this same shell
        del start_ipython.already_called


MAGIC_BAD = [
    ("run batch_size=1e400", None, "batch_size"),
    ("run batch_size=" + "9" * 400, None, "batch_size"),
    ("run jitter_cv=nan", None, "jitter_cv"),
    ("estimate kind=serving max_queue_delay_ms=-inf", None, "max_queue_delay_ms"),
    ("run batch_size=٣", None, "batch_size"),
    ("run --seed ²", None, "--seed"),
    ("run --seed", None, "--seed"),
    ("sweep batch_size=1,2 jitter_cv=inf", None, "jitter_cv"),
    ("run", "scenario = 5", "cell"),
    ("run", "a = " + "[" * 3000 + "]" * 3000, "cell"),
    ("run", '[gpu]\nname = "mine"\nmemory_gb = 16\n', "gpu.memory_bandwidth_gbs"),
    (
        "estimate",
        "[gpu]\n"
        + "\n".join(f"{k} = {json.dumps(v)}" for k, v in BAD[16][0]["gpu"].items() if k != "peak_tflops")
        + "\npeak_tflops = { bf16 = 300 }\n",
        "gpu.memory_bandwidth_gbs",
    ),
    (
        "estimate",
        "[workload]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in BAD[28][0]["workload"].items()),
        "workload.default_batch_size",
    ),
    (
        "estimate",
        "[workload]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in BAD[33][0]["workload"].items()),
        "workload.layers",
    ),
    ("run steps=20", "kind = 'training'\nbatch_size = nan\n", "batch_size"),
]


@pytest.mark.parametrize("line,cell,field", MAGIC_BAD, ids=[f"{i}-{m[2]}" for i, m in enumerate(MAGIC_BAD)])
def test_magic_prints_one_line_and_no_traceback(ip, line, cell, field):
    with capture_output() as cap:
        value = ip.run_cell_magic("hwsim", line, cell) if cell is not None else ip.run_line_magic("hwsim", line)
    assert value is None
    assert cap.stdout == "" and not cap.outputs
    assert _one_line(cap.stderr) and cap.stderr.startswith(f"hwsim: {field}"), cap.stderr


def test_magic_runs_a_valid_edge_and_shows_the_kind_warning(ip):
    with capture_output() as cap:
        r = ip.run_line_magic("hwsim", "estimate kind=training arrival_rate_rps=5")
    assert any("does not apply" in w for w in r.warnings)
    assert "does not apply" in "".join(o.data.get("text/plain", "") for o in cap.outputs)


# ---- REST: a real jupyter_server -----------------------------------------------------------------------------


@pytest.fixture
def jp_server_config():
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_hwsim": True}},
        "HwsimServer": {"max_body_bytes": 8192, "timeout_s": 20.0, "max_workers": 1},
    }


@pytest.fixture
def jp_serverapp(jp_serverapp, monkeypatch):
    yield jp_serverapp
    jp_serverapp.web_app.settings["hwsim_workers"].shutdown()


@pytest.fixture
def in_thread(monkeypatch):
    """No worker processes: requests run in the server's thread (refusals never reach it); fast to start."""
    from jupyter_hwsim.jupyter.server import Workers, warm

    monkeypatch.setattr(Workers, "start", lambda self: setattr(self, "local_warm", self.local.submit(warm)))


async def _post(jp_fetch, path, body, **params):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return await jp_fetch("hwsim", "api", path, method="POST", body=data, raise_error=False, params=params)


REST_BAD = [
    *BAD[:4],
    *BAD[5:8],
    *BAD[10:12],
    BAD[15],
    BAD[16],
    BAD[17],
    BAD[24],
    BAD[28],
    BAD[33],
    BAD[36],
    BAD[-1],
]


async def test_rest_refuses_every_bad_body_with_400_naming_the_field(in_thread, jp_fetch):
    """One server for the lot (a server per value would take seconds each); each failure is named."""
    wrong = []
    for fields, field in REST_BAD:
        for path in ("estimate", "simulate"):
            resp = await _post(jp_fetch, path, json.dumps(fields))  # NaN and Infinity as JSON extensions
            body = json.loads(resp.body.decode())
            if resp.code != 400 or body["error"].get("field") != field or "\n" in body["error"]["message"]:
                wrong.append((path, field, resp.code, body))
    assert not wrong
    assert len(REST_BAD) >= 15


@pytest.mark.parametrize(
    "body,field",
    [
        ("[" * 4000 + "]" * 4000, "body"),
        ('{"workload": ' + "[" * 2000 + "]" * 2000 + "}", "body"),
        ('{"gpu": ' + '{"a": ' * 1000 + "1" + "}" * 1001, "body"),
        ("[1, 2]", "body"),
        ('"batch_size=8"', "body"),
        (b"\xff\xfe", "body"),
    ],
    ids=["deep-list", "deep-field", "deep-object", "list", "text", "not-utf8"],
)
async def test_rest_refuses_a_body_that_is_not_a_shallow_object(in_thread, jp_fetch, body, field):
    resp = await _post(jp_fetch, "estimate", body)
    assert resp.code == 400
    assert json.loads(resp.body.decode())["error"]["field"] == field


async def test_rest_refuses_a_model_too_big_for_its_suggestions(in_thread, jp_fetch, monkeypatch):
    from jupyter_hwsim import runner

    monkeypatch.setattr(runner, "MAX_OPERATOR_RUNS", 20 * (1 + runner.SUGGEST_RUNS))
    body = {"workload": _wide_mlp(20)}
    for path in ("estimate", "simulate"):
        resp = await _post(jp_fetch, path, {**body, "steps": 20}, suggest="1")
        err = json.loads(resp.body.decode())["error"]
        assert resp.code == 400 and err["field"] == "workload" and "operators" in err["message"]
        resp = await _post(jp_fetch, path, {**body, "steps": 20}, suggest="0")
        assert resp.code == 200


@pytest.mark.parametrize("seed", ["²", "٣", "-1", "1e3", "9" * 400])
async def test_rest_refuses_a_bad_seed(in_thread, jp_fetch, seed):
    resp = await _post(jp_fetch, "simulate", {"steps": 20}, seed=seed, suggest="0")
    assert resp.code == 400
    assert json.loads(resp.body.decode())["error"]["field"] == "seed"


async def test_rest_answers_valid_edges_and_warnings_with_200(in_thread, jp_fetch):
    resp = await _post(
        jp_fetch, "simulate", {"kind": "llm", "output_tokens": 1, "jitter_cv": 0, "steps": 20}, suggest="0"
    )
    assert resp.code == 200
    r = json.loads(resp.body.decode())
    assert math.isfinite(r["throughput"]) and r["throughput"] > 0
    resp = await _post(jp_fetch, "estimate", {"kind": "training", "arrival_rate_rps": 5})
    assert resp.code == 200
    assert any("does not apply" in w for w in json.loads(resp.body.decode())["warnings"])


# ---- a simulation past its budget: stopped from inside its event loop, or its worker process is replaced -----


async def _until(ready, what: str, limit_s: float = 120.0) -> None:
    for _ in range(int(limit_s / 0.05)):
        if ready():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} not ready after {limit_s:g} s")


@pytest.mark.slow
async def test_after_a_504_the_worker_is_free_again(jp_serverapp, jp_fetch):
    workers = jp_serverapp.web_app.settings["hwsim_workers"]
    jp_serverapp.web_app.settings["hwsim_limits"].timeout_s = 1.0
    await _until(lambda: workers.ready, "the worker process")
    resp = await _post(jp_fetch, "simulate", {"steps": 100_000, "loader_workers": 64}, suggest="1")
    assert resp.code == 504
    t = time.perf_counter()
    resp = await _post(jp_fetch, "estimate", {"steps": 20})  # one worker: it waits for the one that ran out
    assert resp.code in (200, 504) and time.perf_counter() - t < 5.0
    await asyncio.sleep(1.0)
    resp = await _post(jp_fetch, "estimate", {"steps": 20})
    assert resp.code == 200


@pytest.mark.slow
def test_a_worker_that_outlives_its_budget_is_replaced():
    from concurrent.futures.process import BrokenProcessPool

    from jupyter_hwsim.jupyter.server import HwsimServer, Workers

    w = Workers(HwsimServer(timeout_s=1.0, max_workers=1))
    try:
        w.start_slots()
        for _ in range(2400):
            if w.ready:
                break
            time.sleep(0.05)
        assert w.ready
        w.long_s = math.inf  # not set aside: stopped at its budget
        stuck = w.run(time.sleep, 60)  # a stand-in for a job that ignores its time budget
        time.sleep(0.5)
        slot = stuck.hwsim_slot
        w.reap(stuck)
        with pytest.raises(BrokenProcessPool):
            stuck.result(timeout=30)
        gone = slot.process()
        for _ in range(200):  # polled, not joined: the executor's own thread may reap it first (then join returns
            if not gone.is_alive():  # at once while is_alive still says True until that thread records the exit)
                break
            time.sleep(0.05)
        assert not gone.is_alive()
        for _ in range(2400):
            if w.ready:
                break
            time.sleep(0.05)
        assert w.ready and slot not in w.slots
        assert w.submit(time.time() + 30, "estimate", {}, 0, False).result(timeout=60)[0] == 200
    finally:
        w.shutdown()


@pytest.mark.parametrize("key", ["host_overhead_scale_from", "prefill_host_from"])
@pytest.mark.parametrize("lender", ["nope", 3])
def test_a_borrowed_host_figure_must_name_a_catalogue_engine(key, lender):
    """A custom engine may carry a catalogue engine's host scale (host_overhead_scale_from) or run its prefill at
    one's host costs (prefill_host_from); anything else is refused by the field's name, not by the engine's."""
    with pytest.raises(HwsimError) as err:
        estimate({"engine": {**ENGINE, key: lender}, "batch_size": 1}, suggest=False)
    assert err.value.field == f"engine.{key}" and "pytorch-eager" in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_a_borrowed_host_scale_costs_what_the_lender_costs():
    """A custom engine carrying PyTorch eager's fitted host scale issues its kernels slower than without it."""
    borrowed = estimate({"engine": {**ENGINE, "host_overhead_scale_from": "pytorch-eager"}, "batch_size": 1})
    assert borrowed.throughput < estimate({"engine": ENGINE, "batch_size": 1}).throughput  # its host costs more


@pytest.mark.parametrize(
    "key,value,accepted",
    [("attention", "flash", "naive or fused"), ("prefill_logits", "first", "all or last"),
     ("accumulate", "fp8", "fp32 or fp16"), ("conv_layout", "NHWC", "nchw or nhwc")],
)  # fmt: skip
def test_an_engine_word_outside_its_few_is_refused_not_ignored(key, value, accepted):
    """attention, prefill_logits, accumulate and conv_layout each take one of two words; any other used to fall back
    to the default without a word. Now the field, the value and the two words are named, and nothing runs."""
    with pytest.raises(HwsimError) as err:
        estimate({"engine": {**ENGINE, key: value}, "batch_size": 1}, suggest=False)
    assert err.value.field == f"engine.{key}" and repr(value) in str(err.value) and accepted in str(err.value)
    assert len(str(err.value).splitlines()) == 1
    good = accepted.split(" or ")[0]
    assert estimate({"engine": {**ENGINE, key: good}, "batch_size": 1}, suggest=False).throughput > 0
