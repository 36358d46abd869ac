"""Generated bad input at every surface (issue 28, Hypothesis): the Python API, the command line (its main function,
in this process), the %hwsim magic and the REST API of a real jupyter_server. Whatever is sent either is refused
with one line naming the field (HwsimError, exit code 2, one `hwsim:` line, HTTP 400 with a JSON error), or gives a
result whose numbers are finite and non-negative; never a traceback, never an HTTP 500, and the caller's objects
are unchanged. The tests here describe the classes of bad input; tests/test_bad_input.py pins known cases."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import pickle
import re
import shlex
import tomllib
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output
from test_bad_input import GPU  # a valid custom device, the one the hand-written cases use

from jupyter_hwsim import HwsimError, Result, Scenario, estimate, simulate
from jupyter_hwsim.cli import main as cli_main
from jupyter_hwsim.core.scenario import FIELDS, KIND_FIELDS, KINDS
from jupyter_hwsim.jupyter.magic import hwsim

pytest_plugins = ("pytest_jupyter.jupyter_server",)

SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# ---- what is generated ------------------------------------------------------------------------------------------

HUGE = 10**400
# values as a command line or a magic's line writes them: every class of bad number, text and name
_TEXTS = [
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "1" + "0" * 400, "-" + "9" * 5000,
    "9" * 5000, "0", "-0", "-1", "-0.0", "2.5", "0.0001", "٣", "²", "１００", "৩২", "߁", "1_000", " 8 ", "", " ",
    "true", "false", "yes", "None", "null", "[]", "{}", "{'a': 1}", "a100", "A100", "h100", "nvme-gen4", "resnet50",
    "llama-2-7b", "pcie4", "tensorrt", "vllm", "xeon-8480", "x" * 20_000, "8,16", "=", "==", "0x10", "1e3", "4.0",
    "65537", "1048577", "1e30", "hf:", "onnx:", "hf:missing/config.json", "onnx:/nonexistent.onnx", "hf:" + "x" * 5000,
    "\x00", "a\nb", "'", '"', "$HOME", "`id`", "5e-324", "2.2250738585e-313", "1e-300",
]  # fmt: skip
TEXT_VALUES = st.one_of(
    st.sampled_from(_TEXTS),
    st.integers(-(10**30), 10**30).map(str),
    st.floats().map(repr),
    st.text(max_size=24),
)
FIELD_NAMES = list(FIELDS)
_ODD_KEYS = ["batchsize", "gpus", "warp", "", " ", "BATCH_SIZE", "batch_size ", "kind.x", "gpu.memory_gb", "x" * 300,
             "__class__", "-1", "٣"]  # fmt: skip
KEYS = st.one_of(
    st.sampled_from(FIELD_NAMES), st.sampled_from(FIELD_NAMES), st.sampled_from(_ODD_KEYS), st.text(max_size=10)
)
# values as JSON and Python callers send them: huge, not finite, of the wrong type, nested
_ODD_TEXTS = ["٣", "²", "１００", "nan", "inf", "1e400", "8", "a100", "x" * 12_000, "hf:" + "x" * 5000, "onnx:a\x00b.onnx",
              "hf:/", "hf:/dev/null", "onnx:/dev/zero", "hf:~", "onnx:."]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([HUGE, -HUGE, 2**63, 2**64, -(2**63) - 1, 5e-324, 2.2250738585e-313, 1e-300]),
    st.integers(4400, 4500).map(lambda n: 10**n),  # too long to print (sys.get_int_max_str_digits)
    st.floats(),
    st.text(max_size=16),
    st.sampled_from(_ODD_TEXTS),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


def _nested(depth: int, leaf=1, as_list: bool = False):
    out = leaf
    for _ in range(depth):
        out = [out] if as_list else {"a": out}
    return out


DEEP = st.builds(_nested, st.integers(1, 60), SCALARS, st.booleans())

# valid custom catalogue entries: a generated one changes, drops or adds one key (a deep check must catch it)
PIPE = {"input_bytes_per_sample": 4096, "preprocess_ms_per_sample": 0.01, "default_batch_size": 64}
ENGINE = {"fusion": "eager", "fuses": [], "issue_us": 5.0, "call_us": 1.0, "autocast_us": 0.0, "backward_us": 1.0,
          "step_us": 10.0, "trains": True}  # fmt: skip
ENTRIES = {
    "gpu": GPU,
    "storage": {"bandwidth_gbs": 3.0, "latency_ms": 0.1, "concurrency": 16},
    "host_link": {"bandwidth_gbs": 25.0, "pageable_factor": 0.5},
    "cpu": {"physical_cores": 8, "threads": 16, "core_speed": 1.0},
    "workload": {**PIPE, "arch": "mlp", "widths": [1024, 4096, 10]},
    "engine": ENGINE,
}
TRANSFORMER = {**PIPE, "arch": "transformer", "layers": 2, "hidden": 64, "heads": 4, "ffn": 256, "vocab": 1000}
VIT = {**PIPE, "arch": "vit", "patch": 16, "image_px": 224, "layers": 2, "hidden": 64, "heads": 4, "ffn": 256,
       "num_classes": 10}  # fmt: skip
RESNET = {**PIPE, "arch": "resnet", "block": "basic", "blocks": [1, 1], "num_classes": 10}
OPS = {**PIPE, "arch": "ops", "ops": [{"name": "a", "cls": "matmul", "flops": 1e6, "act_in": 10, "act_out": 10}]}


@st.composite
def custom_entries(draw):
    """(field, entry): a valid custom entry with one key changed to a generated value, dropped or added."""
    field = draw(st.sampled_from(sorted(ENTRIES)))
    entry = json.loads(json.dumps(ENTRIES[field]))
    if field == "workload":
        entry = json.loads(json.dumps(draw(st.sampled_from([entry, TRANSFORMER, VIT, RESNET, OPS]))))
    how = draw(st.sampled_from(["change", "change", "drop", "add", "nest"]))
    key = draw(st.sampled_from(sorted(entry)))
    if how == "change":
        entry[key] = draw(st.one_of(SCALARS, JSON_VALUES, DEEP))
    elif how == "drop":
        del entry[key]
    elif how == "add":
        entry[draw(st.text(max_size=8))] = draw(JSON_VALUES)
    else:  # a value inside a nested table or list
        inner = entry.get("peak_tflops") or entry.get("widths") or entry.get("ops") or entry.get("blocks")
        if isinstance(inner, dict):
            inner[draw(st.sampled_from(["bf16", "fp32", "fp8", "x"]))] = draw(SCALARS)
        elif isinstance(inner, list) and inner and isinstance(inner[0], dict):
            inner[0][draw(st.sampled_from(sorted(inner[0]) + ["rows", "conv"]))] = draw(SCALARS)
        elif isinstance(inner, list):
            inner[draw(st.integers(0, len(inner) - 1))] = draw(SCALARS)
    return field, entry


NOTHING = st.nothing()


@st.composite
def scenario_dicts(draw, extra=NOTHING):
    """A scenario as a dict: some generated fields (of this kind, of another kind, unknown), maybe a kind, maybe a
    mutated custom entry."""
    d = {}
    if draw(st.booleans()):
        d["kind"] = draw(st.sampled_from(KINDS))
    for key in draw(st.lists(KEYS, max_size=3)):
        d[key] = draw(st.one_of(SCALARS, JSON_VALUES, DEEP, extra))
    if draw(st.integers(0, 3)) == 0:  # a field of another kind, set to a plausible value
        kind = draw(st.sampled_from(KINDS))
        d[draw(st.sampled_from(KIND_FIELDS[kind]))] = draw(st.sampled_from([1, 2, 8, 0.5, 64, True, "static"]))
    if draw(st.integers(0, 2)) == 0:
        field, entry = draw(custom_entries())
        d[field] = entry
    return d


# names a refusal may give besides the fields sent: the surface's own words (tests/test_bad_input.py has them all)
SURFACE = {"argument", "scenario file", "scenario", "sweep", "cell", "line", "--seed", "--seeds", "--workers",
           "--trace", "--csv", "seed", "seeds", "workers", "body", "suggest", "compare", "section", "path", "import",
           "JUPYTER_HWSIM_CATALOG"}  # fmt: skip


def _names_a_field(field: str, sent) -> bool:
    """The refusal names a field that was sent (or one of its keys: gpu.peak_tflops.bf16, workload.ops[0]), a field
    of the scenario (a rule across fields names the other one) or the surface's own input."""
    head = re.split(r"[.\[]", field, maxsplit=1)[0]
    return field in SURFACE or head in FIELDS or field.strip() in {str(k).strip() for k in sent} or head in sent


def _shown(name: str) -> str:
    """A field as a refusal's message shows it (quoted when it is not plain text)."""
    return HwsimError(name, 0, "x").message.rsplit("=0 is not accepted", 1)[0]


def _line_names_a_field(text: str, sent) -> bool:
    """A refusal's line (after its prefix) starts with a field that was sent, a field of the scenario or one of
    its keys, or the surface's own input."""
    starts = [_shown(str(k).strip()) + "=" for k in sent] + [s + "=" for s in SURFACE]
    starts += [f + c for f in FIELDS for c in "=.["]
    return text.startswith(tuple(starts))


def _keys_of(words) -> set:
    """The keys of key=value words, and of the scenario files among them."""
    keys = {w.split("=", 1)[0] for w in words if "=" in w}
    for w in words:
        with contextlib.suppress(Exception):  # whatever the file holds, or if it is no file
            if not os.path.isfile(w):  # (a FIFO would wait for a writer)
                continue
            with open(w, encoding="utf-8") as f:
                text = f.read()
            data = json.loads(text) if w.endswith(".json") else tomllib.loads(text)
            keys |= set(data.get("scenario", data))
    return keys


def _finite_result(d: dict) -> list[str]:
    """What is wrong with a result's numbers: not finite, or negative where a count or a rate cannot be."""
    try:
        json.dumps(d, allow_nan=False)
    except ValueError as e:
        return [f"not finite: {e}"]
    wrong = []
    numbers = [("throughput", d["throughput"])]
    numbers += [(f"latency_ms.{k}", v) for k, v in d["latency_ms"].items()]
    numbers += [(f"utilization.{k}", v) for k, v in d["utilization"].items()]
    numbers += [(f"gpu_time.{k}", v) for k, v in d["gpu_time"].items()]
    numbers += [(f"memory.{k}", v) for k, v in d["memory"].items() if not isinstance(v, bool)]
    for name, v in numbers:
        if not isinstance(v, (int, float)) or v < 0:
            wrong.append(f"{name}={v!r}")
    return wrong


def _snapshot(value) -> bytes:
    """The caller's object as bytes (NaN compares equal to itself here): unchanged if these are unchanged."""
    return pickle.dumps(value)


# ---- Python API -------------------------------------------------------------------------------------------------

PY_ONLY = st.sampled_from(
    [Fraction(1, 3), Fraction(8), np.int64(8), np.float64("nan"), np.float32(2.5), np.int64(-1), 1 + 2j, b"8",
     bytearray(b"8"), {1, 2}, (8,), frozenset(), Exception("x"), range(3), 8.0]
)  # fmt: skip


def check_api(d: dict, method: str) -> str:
    before = _snapshot(d)
    try:
        if method == "simulate":
            r = simulate({**d, "steps": 20}, suggest=False)
        else:
            r = estimate(d, suggest=False)
    except HwsimError as e:
        assert len(str(e).splitlines()) == 1 and len(str(e)) < 4000, str(e)  # a miss lists the catalogue
        assert _names_a_field(e.field, d), (e.field, str(e))
        assert json.dumps(e.to_dict())
        outcome = "refused"
    else:
        assert isinstance(r, Result)
        assert not _finite_result(r.to_dict()), _finite_result(r.to_dict())
        Scenario.from_dict(r.scenario)  # the result's scenario is itself a valid input
        outcome = "answered"
    assert _snapshot(d) == before  # nothing the caller gave was changed
    return outcome


@SETTINGS
@given(scenario_dicts(extra=PY_ONLY), st.sampled_from(["estimate", "estimate", "estimate", "simulate"]))
def test_api_refuses_or_answers_with_finite_numbers(d, method):
    check_api(d, method)


ARGUMENTS = st.one_of(SCALARS, PY_ONLY, st.lists(st.sampled_from([*FIELD_NAMES[:6], "x", 5]), max_size=3))


def check_arguments(method: str, kwargs: dict) -> str:
    """estimate() and simulate() keyword arguments (seed, suggest, budget_s) of any type: refused naming the argument
    or answered."""
    try:
        run = simulate if method == "simulate" else estimate
        r = run({"workload": "mlp-small", "steps": 20}, **kwargs)
    except HwsimError as e:
        assert e.field in {*kwargs, "workload", "steps"} and len(str(e).splitlines()) == 1, (kwargs, str(e))
        return "refused"
    assert not _finite_result(r.to_dict()), (kwargs, _finite_result(r.to_dict()))
    return "answered"


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["estimate", "simulate"]),
    st.dictionaries(st.sampled_from(["seed", "suggest", "budget_s"]), ARGUMENTS, min_size=1),
)
def test_api_arguments_are_checked_like_fields(method, kwargs):
    if method == "estimate":
        kwargs.pop("seed", None)
    if kwargs:
        check_arguments(method, kwargs)


def check_catalog_add(field: str, entry: dict, name) -> str:
    """catalog.add() of a generated entry: refused naming the section's field (and nothing added), or added."""
    from jupyter_hwsim import catalog

    section = {"gpu": "gpus", "storage": "storage", "host_link": "links", "cpu": "cpus", "workload": "workloads",
               "engine": "engines"}[field]  # fmt: skip
    before, names = _snapshot(entry), catalog.names(section)
    try:
        catalog.add(section, entry, id=name)
    except HwsimError as e:
        assert len(str(e).splitlines()) == 1 and e.field.startswith((field, "section")), (section, str(e))
        assert catalog.names(section) == names  # nothing half-added
        return "refused"
    finally:
        assert _snapshot(entry) == before
        for added in catalog._ADDED.values():
            added.clear()
        catalog._aliases.cache_clear()
    return "answered"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(custom_entries(), st.one_of(st.just("fuzz-entry"), st.none(), st.text(max_size=12), SCALARS))
def test_catalog_add_refuses_or_adds(field_entry, name):
    check_catalog_add(*field_entry, name)


# ---- CLI: python -m jupyter_hwsim, its main() in this process -----------------------------------------------------


HF_SMALL = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 512}  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Scenario files of every bad kind (and two good ones), by name; a name that is no file is sent as it is."""
    d = tmp_path_factory.mktemp("files")
    text = {
        "list.json": "[1, 2]",
        "number.json": "5",
        "empty.json": "",
        "empty.toml": "",
        "scalar.toml": "scenario = 5",
        "nested.toml": "[scenario]\n[scenario.scenario]\nx = 1\n",
        "deep.json": '{"workload": ' + "[" * 3000 + "]" * 3000 + "}",
        "deep.toml": "a = " + "[" * 3000 + "]" * 3000,
        "nan.json": '{"jitter_cv": NaN}',
        "inf.json": '{"batch_size": 1e999}',
        "bigint.json": '{"batch_size": ' + "9" * 5000 + "}",
        "unicode.toml": 'batch_size = "٣"\n',
        "gpu.json": json.dumps({"gpu": {k: v for k, v in GPU.items() if k != "tile"}}),
        "negative.json": json.dumps({"workload": {**ENTRIES["workload"], "default_batch_size": -4}}),
        "other_kind.toml": 'kind = "training"\narrival_rate_rps = 5\n',
        "good.toml": 'workload = "mlp-small"\ngpu = "t4"\n',
        "good.json": json.dumps({"kind": "serving", "workload": "mlp-small"}),
        "hf_inf.json": '{"model_type": "llama", "num_hidden_layers": 1e999, "hidden_size": NaN}',
        "hf_small.json": json.dumps(HF_SMALL),
        "bad.onnx": "not a protobuf",
    }
    for name, body in text.items():
        (d / name).write_text(body)
    (d / "binary.toml").write_bytes(b"\xff\xfe\x00batch")
    (d / "binary.json").write_bytes(b"\x80\x81")
    (d / "latin1.toml").write_bytes("batch_size = 8 # caf\xe9\n".encode("latin-1"))
    (d / "dir.toml").mkdir()
    (d / "loop.toml").symlink_to(d / "loop.toml")
    os.mkfifo(d / "fifo.toml")
    names = [*text, "binary.toml", "binary.json", "latin1.toml", "dir.toml", "loop.toml", "fifo.toml"]
    paths = {n: str(d / n) for n in names}
    paths |= {
        "missing.toml": str(d / "missing.toml"),
        "long.toml": "x" * 5000 + ".toml",
        "nul.toml": "a\x00.toml",
        "nodir.json": str(d / "no" / "such" / "dir.json"),
    }
    return paths


FILE_NAMES = ["hf_inf.json", "hf_small.json", "bad.onnx", "list.json", "number.json", "empty.json", "empty.toml", "scalar.toml", "nested.toml", "deep.json",
              "deep.toml", "nan.json", "inf.json", "bigint.json", "unicode.toml", "gpu.json", "negative.json",
              "other_kind.toml", "good.toml", "good.json", "binary.toml", "binary.json", "latin1.toml", "dir.toml",
              "loop.toml", "fifo.toml", "missing.toml", "long.toml", "nul.toml", "nodir.json"]  # fmt: skip


@st.composite
def command_lines(draw):
    """(argv, the keys it sends): a command, key=value pairs with bad values, maybe files and options."""
    cmd = draw(st.sampled_from(["run", "estimate", "estimate", "sweep", "compare", "import", "catalog"]))
    if cmd == "catalog":
        return [cmd, *draw(st.lists(st.one_of(TEXT_VALUES, st.sampled_from(["gpus", "--json", "--sources"])),
                                    max_size=2))], set()  # fmt: skip
    if cmd == "import":
        return [cmd, draw(st.one_of(TEXT_VALUES, st.sampled_from(FILE_NAMES).map(lambda n: "@" + n)))], set()
    pairs, keys = [], set()
    if draw(st.booleans()):
        pairs.append(f"kind={draw(st.sampled_from(KINDS))}")
    for _ in range(draw(st.integers(0, 3))):
        key, value = draw(KEYS), draw(TEXT_VALUES)
        if cmd != "sweep":
            value = value.replace(",", ";")
        pairs.append(f"{key}={value}")
        keys.add(key)
    if draw(st.integers(0, 3)) == 0:  # a field of another kind
        kind = draw(st.sampled_from(KINDS))
        key = draw(st.sampled_from(KIND_FIELDS[kind]))
        pairs.append(f"{key}={draw(st.sampled_from(['1', '2', '8', '0.5', 'true', 'static']))}")
        keys.add(key)
    if draw(st.integers(0, 3)) == 0:
        pairs.insert(draw(st.integers(0, len(pairs))), "@" + draw(st.sampled_from(FILE_NAMES)))
    if draw(st.integers(0, 4)) == 0:  # a model file as the workload
        pairs.append(f"workload={draw(st.sampled_from(['hf:', 'onnx:', 'HF: ']))}@{draw(st.sampled_from(FILE_NAMES))}")
    if draw(st.integers(0, 5)) == 0:
        pairs.append(draw(st.text(max_size=8)))  # a word that is no pair
    options = []
    if draw(st.integers(0, 4)) == 0:
        option = draw(st.sampled_from(["--seed", "--seeds", "--workers", "--trace", "--csv"]))
        options += [option, draw(st.one_of(TEXT_VALUES, st.sampled_from(["/nonexistent/dir/x.json", "/", "."])))]
    if draw(st.booleans()):
        options.append("--json")
    if cmd in ("run", "sweep", "compare"):
        pairs.append("steps=20")  # a valid scenario simulates quickly; a bad steps is tried by estimate
    if cmd == "sweep":
        pairs.insert(0, "batch_size=1,2")
        options += ["--workers", "1"]
        options = [o for i, o in enumerate(options) if o != "--seeds" and (i == 0 or options[i - 1] != "--seeds")]
    return [cmd, *pairs, *options], keys


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def check_cli(argv: list[str], keys: set) -> str:
    code, out, err = _run_cli(argv)
    assert "Traceback" not in out + err
    if code == 0:
        assert out.strip(), (argv, err)
        if "--json" in argv and argv[0] in ("run", "estimate", "sweep"):
            data = _strict_json(out)
            for d in data if isinstance(data, list) else [data]:
                assert not _finite_result(d), (argv, _finite_result(d))
        return "answered"
    assert code == 2, (argv, code, err)
    assert out == "", (argv, out)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err)
    if lines[0].startswith("error: python -m jupyter_hwsim"):  # a usage error: argparse names the option
        return "refused"
    assert " is not accepted: " in lines[0], (argv, lines[0])
    assert _line_names_a_field(lines[0][len("error: ") :], keys | _keys_of(argv)), (argv, lines[0])
    return "refused"


@SETTINGS
@given(command_lines())
def test_cli_refuses_with_one_line_or_answers(files, tmp_path_factory, argv_keys):
    argv, keys = argv_keys
    argv = [re.sub(r"@([\w.]+)$", lambda m: files.get(m[1], m[1]), a) for a in argv]
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.getbasetemp())  # --trace and --csv write here
    try:
        check_cli(argv, keys)
    finally:
        os.chdir(cwd)


# ---- the %hwsim magic ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip():
    """IPython's test shell, a singleton: whichever module starts it first, the other modules get the same one."""
    first = not hasattr(start_ipython, "already_called")
    shell = start_ipython() or TerminalInteractiveShell.instance()
    shell.run_line_magic("load_ext", "jupyter_hwsim")
    yield shell
    if first:  # tests/test_notebook.py calls start_ipython() itself: let it set up (and get) this same shell
        del start_ipython.already_called


_TOML_TEXTS = ["nan", "inf", "-inf", "1e400", "9" * 400, '"٣"', '"x"', "[]", "{}", "true", "-1", "0", "2.5", "[1, [2]]",
               "{ a = { b = 1 } }", '"' + "x" * 20_000 + '"', "1979-05-27", "'a100'"]  # fmt: skip
_CELLS = ["scenario = 5", "[scenario]\nbatch_size = 8", "a = " + "[" * 3000 + "]" * 3000, "[gpu]\nname = 'x'"]
TOML_VALUES = st.one_of(
    st.sampled_from(_TOML_TEXTS),
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


@st.composite
def magic_inputs(draw):
    """(line, cell or None, keys sent): a magic's line of key=value words and maybe a TOML cell body."""
    cmd = draw(st.sampled_from(["run", "estimate", "estimate", "sweep", "compare", "", "help", "--seed"]))
    words, keys = [], set()
    if cmd == "--seed":
        words.append(draw(TEXT_VALUES.map(lambda v: v.replace("\n", " "))))
        cmd = draw(st.sampled_from(["estimate", "run"]))
    for _ in range(draw(st.integers(0, 3))):
        key, value = draw(KEYS), draw(TEXT_VALUES).replace(",", ";")
        words.append(f"{key}={value}")
        keys.add(key)
    if draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(KINDS))
        key = draw(st.sampled_from(KIND_FIELDS[kind]))
        words.append(f"{key}={draw(st.sampled_from(['1', '8', '0.5', 'true', 'static']))}")
        keys.add(key)
    if draw(st.integers(0, 6)) == 0:
        words.append(draw(st.text(max_size=8)))
    if cmd in ("run", "sweep", "compare", ""):
        words.append("steps=20")
    if cmd == "sweep":
        words.insert(0, "batch_size=1,2")
    line = " ".join([*(["--seed", words.pop(0)] if cmd and draw(st.integers(0, 5)) == 0 and words else []), cmd,
                     *words])  # fmt: skip
    cell = None
    if draw(st.integers(0, 2)) == 0:
        rows = []
        for _ in range(draw(st.integers(0, 3))):
            key = draw(st.one_of(st.sampled_from(FIELD_NAMES), st.from_regex(r"[a-z_]{1,8}", fullmatch=True)))
            rows.append(f"{key} = {draw(TOML_VALUES)}")
            keys.add(key)
        cell = draw(st.one_of(st.just("\n".join(rows)), st.text(max_size=40), st.sampled_from(_CELLS)))
    return line, cell, keys


def check_magic(ip, line: str, cell, keys: set) -> str:
    with capture_output() as cap:  # the magic's function itself: IPython refuses an empty cell before calling it
        value = hwsim(line, cell)
    shown = "".join(json.dumps(o.data, default=str) for o in cap.outputs)
    assert "Traceback" not in cap.stdout + cap.stderr + shown, (line, cell, cap.stderr)
    if not cap.stderr:  # an answer
        return "answered"
    assert value is None and cap.stdout == "" and not cap.outputs, (line, cell, cap.stderr)
    lines = cap.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hwsim: "), (line, cell, cap.stderr)
    assert " is not accepted: " in lines[0], (line, cell, lines[0])
    with contextlib.suppress(ValueError):
        keys = keys | _keys_of(shlex.split(line))
    with contextlib.suppress(ValueError, RecursionError):
        keys = keys | set(tomllib.loads(cell or ""))
    assert _line_names_a_field(lines[0][len("hwsim: ") :], keys), (line, cell, lines[0])
    return "refused"


@SETTINGS
@given(magic_inputs())
def test_magic_never_prints_a_traceback(ip, inputs):
    line, cell, keys = inputs
    check_magic(ip, line, cell, keys)


# ---- REST: a real jupyter_server --------------------------------------------------------------------------------


@pytest.fixture
def jp_server_config():
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_hwsim": True}},
        "HwsimServer": {"max_body_bytes": 16384, "timeout_s": 30.0, "max_workers": 1},
    }


@pytest.fixture
def jp_serverapp(jp_serverapp):
    yield jp_serverapp
    jp_serverapp.web_app.settings["hwsim_workers"].shutdown()


@pytest.fixture
def in_thread(monkeypatch):
    """No worker processes: requests run in the server's thread (as they do until the workers are warm)."""
    from jupyter_hwsim.jupyter.server import Workers, warm

    monkeypatch.setattr(Workers, "start", lambda self: setattr(self, "local_warm", self.local.submit(warm)))


_RAW = ["", "null", "[]", "5", '"x"', "{", "[" * 5000 + "]" * 5000, '{"a": ' * 3000 + "1" + "}" * 3000,
        '{"batch_size": 1e999}', '{"batch_size": ' + "9" * 5000 + "}", '{"jitter_cv": NaN}', '{"steps": -Infinity}',
        '{"batch_size": 8, "batch_size": "x"}']  # fmt: skip
RAW_BODIES = st.one_of(
    st.sampled_from(_RAW),
    st.binary(max_size=40),
    st.text(max_size=40),
)


@st.composite
def rest_requests(draw):
    """(path, body, query, keys sent)."""
    path = draw(st.sampled_from(["estimate", "estimate", "simulate", "trace", "schema", "catalog"]))
    query = {}
    if draw(st.integers(0, 4)) == 0:
        query[draw(st.sampled_from(["seed", "suggest"]))] = draw(TEXT_VALUES.map(lambda v: v.replace("\x00", "")))
    if path in ("simulate", "trace"):
        query.setdefault("suggest", "0")
    if draw(st.integers(0, 5)) == 0:
        return path, draw(RAW_BODIES), query, set()
    d = draw(scenario_dicts())
    if path in ("simulate", "trace") and isinstance(d.get("steps"), int) and not isinstance(d["steps"], bool):
        d["steps"] = min(d["steps"], 50)  # a valid scenario simulates quickly
    elif path in ("simulate", "trace"):
        d.setdefault("steps", 20)
    try:
        body = json.dumps(d)  # NaN and Infinity as JSON extensions, which the server's parser takes
    except ValueError:  # an integer too long to print: sent as its digits
        body, d = '{"batch_size": 1' + "0" * 4400 + "}", {"batch_size": None}
    return path, body, query, set(d)


async def check_rest(jp_fetch, path: str, body, query: dict, keys: set) -> str:
    if path in ("schema", "catalog"):
        resp = await jp_fetch("hwsim", "api", path, raise_error=False, params=query)
    else:
        resp = await jp_fetch("hwsim", "api", path, method="POST", body=body, raise_error=False, params=query)
    what = (path, body if len(body) < 300 else body[:300], query)
    assert resp.code in (200, 400, 413), (what, resp.code, resp.body[:500])
    data = _strict_json(resp.body.decode())
    if resp.code == 200:
        if path in ("estimate", "simulate"):
            assert not _finite_result(data), (what, _finite_result(data))
        return "answered"
    err = data["error"]
    assert len(err["message"].splitlines()) == 1 and "field" in err, (what, err)
    assert _names_a_field(err["field"], keys) or err["field"] in SURFACE, (what, err)
    return "refused"


@given(rest_requests())
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
def _rest_examples(request):
    _REST_CALL(*request)


_REST_CALL = None


async def test_rest_never_answers_500(in_thread, jp_fetch):
    """Hypothesis draws in a thread of its own; each request goes to the server on its event loop, which stays free
    to answer it."""
    global _REST_CALL
    loop = asyncio.get_running_loop()

    def call(path, body, query, keys):
        asyncio.run_coroutine_threadsafe(check_rest(jp_fetch, path, body, query, keys), loop).result(timeout=120)

    _REST_CALL = call
    try:
        await loop.run_in_executor(None, _rest_examples)
    finally:
        _REST_CALL = None
