"""Devices, hosts and the rest added at run time (catalog.add) or from a user catalogue folder."""

import os
import subprocess
import sys

import pytest

from jupyter_hwsim import HwsimError, Scenario, catalog, estimate


@pytest.fixture
def clean_catalog():
    yield
    for section in catalog._ADDED.values():
        section.clear()
    catalog._aliases.cache_clear()


def _a100_at(bw_gbs: float) -> dict:
    g = {k: v for k, v in catalog.get("gpus", "a100").items() if k not in ("id", "aliases", "sources")}
    return {**g, "name": f"A100 at {bw_gbs:g} GB/s", "memory_bandwidth_gbs": bw_gbs}


def test_an_added_device_is_used_like_a_built_in_one(clean_catalog):
    catalog.add("gpus", _a100_at(1000.0), id="slow-a100")
    s = Scenario(kind="llm", gpu="SLOW_A100", engine="vllm")  # ids are case- and underscore-insensitive
    assert s.gpu == "slow-a100"
    # a serving engine's decode reads every weight: half the bandwidth, about half the tokens/s (a batch's matmuls
    # pay some compute)
    base = Scenario(kind="llm", gpu="a100", engine="vllm")
    ratio = estimate(s, suggest=False).throughput / estimate(base, suggest=False).throughput
    assert 0.45 < ratio < 0.65
    assert "slow-a100" in catalog.names("gpus") and catalog.get("gpus", "slow-a100")["origin"] == "catalog.add()"


def test_a_toml_table_adds_a_host_cpu(clean_catalog):
    catalog.add("cpus", "physical_cores = 8\nthreads = 16\ncore_speed = 1.2\nname = 'My laptop'", id="my-laptop")
    s = Scenario(cpu="my-laptop")
    assert s.cpu_speed == 1.2 and s.cpu_cores > 8  # SMT gives part of a core per extra thread


@pytest.mark.parametrize(
    "section, entry, id, field",
    [
        ("gpus", {"memory_gb": 80}, "half-a-gpu", "gpu.memory_bandwidth_gbs"),
        ("gpus", "tdp_w = 'a lot'", "x", "gpu"),
        ("cpus", {"physical_cores": 8, "threads": 4, "core_speed": 1.0}, "odd", "cpu.threads"),
        ("decoders", {}, "x", "section"),
        ("gpus", {}, "h100", "gpu.id"),  # a built-in name
        ("gpus", {}, "no spaces please", "gpu.id"),
        ("links", {"bandwidth_gbs": 25.0, "pageable_factor": 0.5}, "x" * 10_001, "host_link.id"),  # too long a name
    ],
)
def test_a_bad_entry_is_one_clear_line_and_adds_nothing(clean_catalog, section, entry, id, field):
    before = catalog.names("gpus")
    with pytest.raises(HwsimError) as e:
        catalog.add(section, entry, id=id)
    assert str(e.value).startswith(field) and "\n" not in str(e.value)
    assert catalog.names("gpus") == before


def test_a_user_catalogue_folder_is_read_and_listed(tmp_path):
    g = _a100_at(1200.0)
    lines = ["[my-gpu]"]
    for k, v in g.items():
        if isinstance(v, dict):
            continue
        lines.append(f"{k} = {v!r}".replace("'", '"').replace("True", "true").replace("False", "false"))
    lines.append("[my-gpu.peak_tflops]")
    lines += [f"{k} = {v}" for k, v in g["peak_tflops"].items()]
    (tmp_path / "devices.toml").write_text("\n".join(lines) + "\n")
    env = {**os.environ, catalog.USER_FOLDER_ENV: str(tmp_path)}
    run = [sys.executable, "-m", "jupyter_hwsim"]
    out = subprocess.run([*run, "catalog", "gpus"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "my-gpu" in out.stdout and str(tmp_path) in out.stdout
    out = subprocess.run([*run, "estimate", "gpu=my-gpu", "kind=llm"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    (tmp_path / "devices.toml").write_text("[broken]\nmemory_gb = -1\n")
    out = subprocess.run([*run, "estimate"], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_the_packaged_model_configs_are_catalogue_workloads():
    """data/models' config files are offered by name like the TOML workloads, and are the same model as the
    file imported directly (the validation table's "hf:" path)."""
    from jupyter_hwsim.core.importers import load
    from jupyter_hwsim.core.workloads import operators

    w = catalog.get("workloads", "mixtral-8x7b")
    assert w["name"] == "Mixtral-8x7B-v0.1" and "data/models/mixtral-8x7b.json" in w["sources"]["config"]
    direct = load("hf:jupyter_hwsim/data/models/mixtral-8x7b.json")
    assert operators("mixtral-8x7b", 128) == operators(direct, 128)
    a = estimate(Scenario(kind="llm", workload="mixtral-8x7b", gpu="h200"), suggest=False)
    b = estimate(Scenario(kind="llm", workload="hf:jupyter_hwsim/data/models/mixtral-8x7b.json", gpu="h200"),
                 suggest=False)  # fmt: skip
    assert a.throughput == b.throughput > 0
    assert "resnet50" in catalog.names("workloads")  # the TOML ones are still there
    assert "gpt-j-6b" not in catalog.names("workloads")  # a model type the importer does not read stays a file


def test_model_files_in_the_user_folder_are_workloads(tmp_path):
    import json

    (tmp_path / "models").mkdir()
    cfg = json.loads(open("jupyter_hwsim/data/models/llama-3.2-3b.json").read())
    (tmp_path / "models" / "My_Llama.json").write_text(json.dumps({**cfg, "num_hidden_layers": 14}))
    env = {**os.environ, catalog.USER_FOLDER_ENV: str(tmp_path)}
    run = [sys.executable, "-m", "jupyter_hwsim"]
    out = subprocess.run([*run, "catalog", "workloads"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "my-llama" in out.stdout, out.stderr
    out = subprocess.run([*run, "estimate", "workload=my-llama", "kind=llm", "--json"], capture_output=True,
                         text=True, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    mine = json.loads(out.stdout)["throughput"]
    full = estimate(Scenario(kind="llm", workload="llama-3.2-3b"), suggest=False).throughput
    assert mine > full  # 14 of its 28 layers: fewer weights to read per token
