"""The device catalogue: every key of every device has a source, names are unambiguous, units are sane."""

import csv
import re
from pathlib import Path

import pytest

from jupyter_hwsim import catalog
from jupyter_hwsim.core import reference, workloads

UNSOURCED = {"name", "aliases", "id", "sources"}  # text, not figures


def test_every_key_of_every_device_has_a_source():
    """Not only the keys the model needs (test_catalog.py): power, price, host link and fallbacks too."""
    for eid, entry in catalog.gpus().items():
        sources = entry.get("sources", {})
        for key in entry:
            if key not in UNSOURCED:
                assert sources.get(key), f"gpus.{eid}.{key} has no source"


def test_device_references_resolve():
    for eid, entry in catalog.gpus().items():
        for text in entry.get("sources", {}).values():
            for ref, hits in reference.resolve(text):
                assert hits, f"{eid}: unknown reference {ref}"


def test_device_entries_pass_the_custom_entry_check():
    """A built-in entry is held to the schema a user's own entry is checked against."""
    for entry in catalog.gpus().values():
        workloads.check_custom("gpus", dict(entry))


def test_aliases_name_one_device():
    seen: dict[str, str] = {}
    for eid, entry in catalog.gpus().items():
        for name in {catalog._norm(n) for n in [eid, *entry.get("aliases", [])]}:
            assert seen.setdefault(name, eid) == eid, f"{name} names both {seen[name]} and {eid}"


def test_power_and_links_are_consistent():
    links = catalog.links()
    for eid, entry in catalog.gpus().items():
        if "tdp_w" in entry:
            assert 0 < entry["idle_w"] < entry["tdp_w"], eid
        assert isinstance(entry.get("host_link", "pcie4"), dict) or entry.get("host_link", "pcie4") in links, eid
        for p in entry.get("fallbacks", {}).values():
            assert p in entry["peak_tflops"] or p in catalog.precisions(), (eid, p)


def test_fp16_accumulation_doubles_a_geforce_cards_matmul_rate_only():
    """peak_tflops is the FP32-accumulate rate frameworks use; an engine that accumulates in fp16 (ExLlama's
    cublasHgemm) reaches peak_tflops_acc16 where a card has one (GeForce: twice), and the same rate elsewhere."""
    from jupyter_hwsim import Scenario
    from jupyter_hwsim.core import costs

    def matmul(gpu, engine):
        return costs.rates(costs.resolve(Scenario(kind="llm", workload="llama-2-7b", gpu=gpu, precision="fp16",
                                                  engine=engine))).matmul  # fmt: skip

    assert matmul("rtx-4090", "exllama") == pytest.approx(2 * matmul("rtx-4090", "vllm"), rel=1e-3)
    assert matmul("rtx-3090", "exllama") == pytest.approx(2 * matmul("rtx-3090", "vllm"))
    assert matmul("a100", "exllama") == matmul("a100", "vllm")  # a data-centre card: full rate either way
    for key, entry in catalog.gpus().items():
        for p, acc16 in entry.get("peak_tflops_acc16", {}).items():
            assert acc16 >= entry["peak_tflops"][p], key


def test_jetson_agx_orin_rates_are_its_gpus():
    """NVIDIA's 275 TOPS for the Jetson AGX Orin 64GB add its two DLAs' 105 (sparse) to the GPU's 170: the entry
    holds the GPU's dense rates, 16 SMs of 128 cores and 4 tensor cores at 1.3 GHz, on its 204.8 GB/s memory."""
    orin = catalog.get("gpus", "jetson-orin")
    assert orin is catalog.get("gpus", "jetson-agx-orin-64gb")
    assert (orin["memory_gb"], orin["memory_bandwidth_gbs"], orin["host_link"]) == (64, 204.8, "unified-memory")
    rates, sms, ghz = orin["peak_tflops"], orin["parallel_units"], 1.3
    assert rates["fp32"] == pytest.approx(sms * 128 * 2 * ghz / 1e3, rel=0.01)
    assert rates["int8"] == pytest.approx(170 / 2) and rates["int8"] < 275 / 2
    assert rates["fp16"] == rates["bf16"] == pytest.approx(sms * 4 * 512 * ghz / 1e3, rel=0.01)


def test_each_measured_compute_efficiency_is_its_reference_row_over_the_peak():
    """A device's compute_efficiency "derived: ref:C-.. measured / peak" is that row's measured matmul rate over
    the device's own peak at the precision measured: change the row, the peak or the figure and this fails."""
    table = Path(catalog.__file__).resolve().parents[1] / "data" / "reference" / "hardware_specs.csv"
    measured = {r["case_id"]: float(r["value"]) for r in csv.DictReader(table.open()) if r["case_id"].startswith("C-")}
    checked = 0
    for key, d in catalog.gpus().items():
        src = (d.get("sources") or {}).get("compute_efficiency", "")
        m = re.match(r"derived: ref:(C-\d+) ([\d.]+) / ([\d.]+) TFLOPS", src)
        if not m:
            continue
        rate, peak = measured[m[1]], float(m[3])
        assert float(m[2]) == pytest.approx(rate, abs=0.01), key
        precision = "bf16" if "bf16" in src or m[1] in ("C-01", "C-02", "C-03", "C-04") else "fp16"
        precision = precision if precision in d["peak_tflops"] else d["fallbacks"][precision]  # Apple: bf16 as fp16
        assert peak == pytest.approx(d["peak_tflops"][precision], rel=0.01), key
        assert d["compute_efficiency"] == pytest.approx(rate / peak, abs=0.001), key
        checked += 1
    assert checked >= 10


def test_each_measured_memory_efficiency_is_its_reference_row_over_the_nameplate():
    """A device's memory_efficiency "derived: ref:C-.. measured / nameplate GB/s" is that row's measured bandwidth
    over the device's own nameplate bandwidth: change the row, the nameplate or the figure and this fails."""
    table = Path(catalog.__file__).resolve().parents[1] / "data" / "reference" / "hardware_specs.csv"
    measured = {r["case_id"]: float(r["value"]) for r in csv.DictReader(table.open()) if r["case_id"].startswith("C-")}
    checked = 0
    for key, d in catalog.gpus().items():
        m = re.match(
            r"derived: ref:(C-\d+) ([\d.]+) / ([\d.]+) GB/s", (d.get("sources") or {}).get("memory_efficiency", "")
        )
        if not m:
            continue
        assert float(m[2]) == pytest.approx(measured[m[1]]), key
        assert float(m[3]) == pytest.approx(d["memory_bandwidth_gbs"]), key
        assert d["memory_efficiency"] == pytest.approx(measured[m[1]] / d["memory_bandwidth_gbs"], abs=0.001), key
        checked += 1
    assert checked >= 4


def test_fp8_matmuls_reach_a_smaller_share_of_their_peak_than_bf16_ones():
    """On an H100 the best fp8 matmul of a sweep reaches 0.709 of 1979 TFLOPS where the best bf16 one reaches 0.803 of
    989 (ref:C-27, ref:C-02): fp8 model shapes run at 0.883 of bf16's share, 1.77x bf16, not 2x; bf16 and devices
    without a figure are unchanged."""
    from jupyter_hwsim import Scenario
    from jupyter_hwsim.core import costs

    def matmul(gpu, precision):
        return costs.rates(
            costs.resolve(Scenario(kind="llm", gpu=gpu, precision=precision, engine="tensorrt-llm"))
        ).matmul

    h100 = catalog.get("gpus", "h100-sxm")
    assert matmul("h100-sxm", "bf16") == pytest.approx(989e12 * h100["gemm_efficiency"])
    assert matmul("h100-sxm", "fp8") / matmul("h100-sxm", "bf16") == pytest.approx(2 * 0.709 / 0.803, rel=1e-3)
    peaks = catalog.get("gpus", "l40s")["peak_tflops"]  # from TensorRT-LLM's measured GEMMs (ref:C-35, ref:C-34)
    share = 0.551 / 0.636
    assert matmul("l40s", "fp8") / matmul("l40s", "bf16") == pytest.approx(
        peaks["fp8"] / peaks["bf16"] * share, rel=1e-3
    )
    peaks = catalog.get("gpus", "l4")["peak_tflops"]  # no fp8 figure there: the peaks' ratio
    assert matmul("l4", "fp8") / matmul("l4", "bf16") == pytest.approx(peaks["fp8"] / peaks["bf16"], rel=1e-3)


AIC_TABLE = Path(catalog.__file__).resolve().parents[1] / "data" / "reference" / "aic_gemm_table.csv"


def _aic_shares(gpu: str, peaks: dict) -> tuple[float, float]:
    """(bf16, fp8 GEMM alone) share of the dense peaks over a GPU's rows of TensorRT-LLM's measured GEMMs."""
    with AIC_TABLE.open() as f:
        rows = [r for r in csv.DictReader(f) if r["gpu"] == gpu]
    assert rows
    flops = sum(2.0 * int(r["m"]) * int(r["n"]) * int(r["k"]) for r in rows)
    bf16_s = sum(float(r["bf16_us"]) for r in rows) * 1e-6
    fp8_s = sum(float(r[k]) * s for r in rows for k, s in
                (("fp8_us", 1), ("fp8_compute_scale_us", -1), ("fp8_scale_matrix_us", -1))) * 1e-6  # fmt: skip
    return flops / bf16_s / (peaks["bf16"] * 1e12), flops / fp8_s / (peaks["fp8"] * 1e12)


def test_the_l40s_fp8_share_comes_from_tensorrt_llms_measured_gemms():
    """The L40S's efficiency_vs_bf16 is its fp8 GEMMs' share of peak over its bf16 ones' in AIConfigurator's table of
    TensorRT-LLM's measured GEMMs (ref:C-34, ref:C-35); the same table's H100 and H200 rows agree with those chips'
    figures from another matmul sweep within 5%."""
    l40s = catalog.get("gpus", "l40s")
    bf16, fp8 = _aic_shares("l40s", l40s["peak_tflops"])
    assert (round(bf16, 3), round(fp8, 3)) == (0.636, 0.551)
    assert l40s["efficiency_vs_bf16"]["fp8"] == pytest.approx(fp8 / bf16, abs=5e-4)
    for gpu, entry in (("h100_sxm", "h100-sxm"), ("h200_sxm", "h200")):
        d = catalog.get("gpus", entry)
        bf16, fp8 = _aic_shares(gpu, d["peak_tflops"])
        assert fp8 / bf16 == pytest.approx(d["efficiency_vs_bf16"]["fp8"], rel=0.05)
