"""The catalogue: required ids, a source for every number, references that exist and resolve to URLs."""

import subprocess
import sys

from jupyter_hwsim import catalog
from jupyter_hwsim.core import reference

GPUS = [
    "t4",
    "v100-sxm2-16gb",
    "v100-sxm2-32gb",
    "a10",
    "a100-sxm-40gb",
    "a100-sxm-80gb",
    "l4",
    "l40s",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "rtx-4090",
    "rtx-3090",
    "mi250x",
    "mi300x",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "xeon-8480",
    "m2-ultra",
    "m3-max",
    "rtx-3090-ti",
]
SOURCED = {
    "gpus": [
        "memory_gb",
        "memory_bandwidth_gbs",
        "peak_tflops",
        "parallel_units",
        "compute_efficiency",
        "memory_efficiency",
        "launch_overhead_us",
        "tile",
        "workspace_gb",
    ],
    "storage": ["bandwidth_gbs", "latency_ms", "concurrency"],
    "links": ["bandwidth_gbs", "pageable_factor"],
    "workloads": ["input_bytes_per_sample", "preprocess_ms_per_sample", "dataset_gb"],
    "engines": ["issue_us", "fuses", "graphs", "trains"],
}


def test_required_ids():
    assert set(GPUS) <= set(catalog.names("gpus"))
    assert {"hdd", "sata-ssd", "nvme-gen3", "nvme-gen4", "nvme-gen5", "network-fs", "ramdisk"} <= set(
        catalog.names("storage")
    )
    assert {"pcie3", "pcie4", "pcie5", "nvlink-c2c"} <= set(catalog.names("links"))
    assert {
        "resnet18",
        "resnet50",
        "vit-b16",
        "bert-base",
        "bert-large",
        "gpt2",
        "llama-2-7b",
        "llama-2-13b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3-70b",
        "mistral-7b",
        "mlp-small",
    } <= set(catalog.names("workloads"))


def test_every_number_has_a_source():
    for section, keys in SOURCED.items():
        for eid, entry in getattr(catalog, section)().items():
            for k in keys:
                assert k in entry, (section, eid, k)
                assert entry.get("sources", {}).get(k), f"{section}.{eid}.{k} has no source"


def test_references_exist():
    """Every `ref:` id a catalogue source cites names a row of the shipped reference table, with a URL."""
    cited = 0
    for section in SOURCED:
        for eid, entry in getattr(catalog, section)().items():
            for src in entry.get("sources", {}).values():
                for ref, hits in reference.resolve(src):
                    cited += 1
                    assert hits, f"{eid}: unknown reference {ref}"
                    assert all(reference.row_urls(r) for r in hits), f"{eid}: {ref} has no URL"
    assert cited > 100


def test_catalog_sources_show_urls():
    p = subprocess.run(
        [sys.executable, "-m", "jupyter_hwsim", "catalog", "gpus", "--sources"], capture_output=True, text=True
    )
    assert p.returncode == 0, p.stderr
    t4 = p.stdout.split("\nv100-sxm2-16gb")[0]
    assert "memory_bandwidth_gbs = 320" in t4 and "source: ref:A-NVIDIA_T4-mem_bw" in t4
    assert "url: https://" in t4


def test_catalog_table_has_specs_and_aliases():
    p = subprocess.run([sys.executable, "-m", "jupyter_hwsim", "catalog", "gpus"], capture_output=True, text=True)
    head, *lines = p.stdout.splitlines()
    assert head.split()[:2] == ["id", "name"] and "aliases" in head
    a100 = next(line for line in lines if line.startswith("a100-sxm-80gb "))
    assert "2,039" in a100 and "a100-sxm4-80gb" in a100


def test_core_imports_no_jupyter():
    code = (
        "import sys, jupyter_hwsim as h; h.simulate(h.Scenario(steps=20), suggest=False); "
        "bad=[m for m in sys.modules if m.split('.')[0] in ('IPython','ipywidgets','jupyter_server','tornado',"
        "'altair','jupyterlab','ipykernel','pandas')]; print(bad); sys.exit(1 if bad else 0)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
