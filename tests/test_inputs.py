"""Bad input: one clear error naming the field, the value and what is accepted; nothing half-applied."""

import json
import pathlib
import subprocess
import sys

import pytest

from jupyter_hwsim import HwsimError, Scenario, simulate

BAD = [
    ({"batch_size": 0}, "batch_size", "integer >= 1"),
    ({"batch_size": -4}, "batch_size", "integer >= 1"),
    ({"gpu": "a1000"}, "gpu", "did you mean"),
    ({"storage_bandwidth_gbs": 0}, "storage_bandwidth_gbs", "> 0"),
    ({"host_link_gbs": float("nan")}, "host_link_gbs", "number"),
    ({"batch_size": 10**9}, "batch_size", "<= 65536"),
    ({"batch_size": "big"}, "batch_size", "integer"),
    ({"batch_size": 2.5}, "batch_size", "integer"),
    ({"pin_memory": "maybe"}, "pin_memory", "true or false"),
    ({"precision": "fp64"}, "precision", "one of fp32"),
    ({"batchsize": 8}, "batchsize", "did you mean 'batch_size'"),
    ({"workload": {"arch": "rnn"}}, "workload.arch", "one of resnet"),
    ({"steps": 10**7}, "steps", "<= 100000"),
]


@pytest.mark.parametrize("fields,field,accepted", BAD)
def test_bad_field_is_refused_clearly(fields, field, accepted):
    with pytest.raises(HwsimError) as err:
        Scenario.from_dict(fields)
    assert err.value.field == field
    assert accepted in str(err.value)
    assert "\n" not in str(err.value)


def test_replace_with_bad_value_leaves_the_original_untouched():
    s = Scenario(batch_size=64)
    with pytest.raises(HwsimError):
        s.replace(batch_size=-1)
    assert s.batch_size == 64


def test_aliases_are_case_insensitive():
    assert Scenario(gpu="A100").gpu == "a100-sxm-80gb"
    assert Scenario(gpu="H100").gpu == "h100-sxm"


def test_custom_workload_dict_works_where_a_name_does():
    w = {
        "arch": "mlp",
        "widths": [1024, 4096, 4096, 10],
        "input_bytes_per_sample": 4096,
        "preprocess_ms_per_sample": 0.01,
        "default_batch_size": 128,
    }
    r = simulate(Scenario(workload=w, gpu="l4"), suggest=False)
    assert r.throughput > 0
    assert json.dumps(r.to_dict())


def test_round_trip():
    s = Scenario(batch_size=32, gpu="t4", fusion="compiled")
    assert Scenario.from_dict(s.to_dict()) == s
    assert Scenario.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "jupyter_hwsim", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["run", "gpu=a1000"],
        ["run", "batch_size=-1"],
        ["run", "batch_size=nan"],
        ["run", "nonsense"],
        ["run", "warp=9"],
        ["sweep", "batch_size=4"],
        ["run", "missing.toml"],
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args):
    p = _cli(*args)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "command", [[sys.executable, "-m", "jupyter_hwsim"], [str(pathlib.Path(sys.executable).parent / "jupyter-hwsim")]]
)
def test_cli_piped_into_a_reader_that_stops_early_is_quiet(command):
    """`jupyter-hwsim run | head -1`: the reader is gone before the output is written; no traceback."""
    p = subprocess.Popen([*command, "run", "steps=20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    assert p.wait(timeout=120) == 0 and p.stderr.read() == b""


def test_cli_run_json_and_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('workload = "mlp-small"\ngpu = "t4"\nsteps = 50\n')
    p = _cli("run", str(f), "batch_size=32", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["scenario"]["workload"] == "mlp-small" and d["scenario"]["batch_size"] == 32
    for key in (
        "throughput",
        "throughput_unit",
        "latency_ms",
        "utilization",
        "gpu_time",
        "bottleneck",
        "explanation",
        "suggestions",
        "memory",
        "sim",
    ):
        assert key in d


def test_cli_sweep_and_catalog():
    p = _cli("sweep", "workload=mlp-small", "batch_size=1,64", "steps=30", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["scenario"]["batch_size"] for r in rows] == [1, 64]
    p = _cli("catalog", "storage")
    assert p.returncode == 0 and "nvme-gen4" in p.stdout


def test_cli_serving_and_llm():
    p = _cli("run", "kind=serving", "arrival_rate_rps=300", "steps=200", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["throughput_unit"] == "requests/s"
    assert {"goodput", "latency_breakdown_ms", "batch_sizes"} <= set(d)
    p = _cli("run", "kind=llm", "workload=mistral-7b", "concurrency=4", "steps=10")
    assert p.returncode == 0, p.stderr
    assert "tokens/s" in p.stdout and "first token" in p.stdout
    p = _cli("sweep", "kind=llm", "engine=vllm", "concurrency=1,8,64", "steps=16", "latency_slo_ms=25", "--best")
    assert p.returncode == 0, p.stderr
    assert "best within 25 ms p99: concurrency=" in p.stdout
    p = _cli("run", "kind=llm", "prompt_tokens=9999")
    assert p.returncode == 2 and "prompt_tokens=9999" in p.stderr and "context" in p.stderr
