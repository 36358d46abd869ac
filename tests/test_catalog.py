"""The catalogue: required ids, a source for every number, references that exist."""
import csv
import subprocess
import sys

from jupyter_hwsim import catalog

GPUS = ["t4", "v100-sxm2-16gb", "v100-sxm2-32gb", "a10", "a100-sxm-40gb", "a100-sxm-80gb", "l4", "l40s",
        "h100-sxm", "h100-pcie", "h200", "b200", "rtx-4090", "rtx-3090", "mi250x", "mi300x", "tpu-v4",
        "tpu-v5e", "tpu-v5p", "xeon-8480", "m2-ultra", "m3-max", "rtx-3090-ti"]
SOURCED = {"gpus": ["memory_gb", "memory_bandwidth_gbs", "peak_tflops", "parallel_units", "compute_efficiency",
                    "memory_efficiency", "launch_overhead_us", "tile", "workspace_gb"],
           "storage": ["bandwidth_gbs", "latency_ms", "concurrency"],
           "links": ["bandwidth_gbs", "pageable_factor"],
           "workloads": ["input_bytes_per_sample", "preprocess_ms_per_sample", "dataset_gb"]}


def test_required_ids():
    assert set(GPUS) <= set(catalog.names("gpus"))
    assert {"hdd", "sata-ssd", "nvme-gen3", "nvme-gen4", "nvme-gen5", "network-fs", "ramdisk"} <= set(catalog.names("storage"))
    assert {"pcie3", "pcie4", "pcie5", "nvlink-c2c"} <= set(catalog.names("links"))
    assert {"resnet18", "resnet50", "vit-b16", "bert-base", "bert-large", "gpt2", "llama-2-7b", "llama-2-13b",
            "llama-2-70b", "llama-3-8b", "mistral-7b", "mlp-small"} <= set(catalog.names("workloads"))


def test_every_number_has_a_source():
    for section, keys in SOURCED.items():
        for eid, entry in getattr(catalog, section)().items():
            for k in keys:
                assert k in entry, (section, eid, k)
                assert entry.get("sources", {}).get(k), f"{section}.{eid}.{k} has no source"


def test_references_exist(reference_dir):
    ids = set()
    for name in ("hardware_specs.csv", "measurements.csv"):
        with open(reference_dir / name, newline="") as f:
            ids |= {row["case_id"] for row in csv.DictReader(f)}
    import re
    for section in SOURCED:
        for eid, entry in getattr(catalog, section)().items():
            for src in entry.get("sources", {}).values():
                for ref in re.findall(r"ref:([A-Za-z0-9_+()\-.]+)", src):
                    tries = {ref.rstrip(".,"), ref.rstrip(".,)")}
                    assert any(t in ids or any(i.startswith(t) for i in ids) for t in tries), \
                        f"{eid}: unknown reference {ref}"


def test_core_imports_no_jupyter():
    code = ("import sys, jupyter_hwsim as h; h.simulate(h.Scenario(steps=20), suggest=False); "
            "bad=[m for m in sys.modules if m.split('.')[0] in ('IPython','ipywidgets','jupyter_server','tornado',"
            "'altair','jupyterlab','ipykernel','pandas')]; print(bad); sys.exit(1 if bad else 0)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
