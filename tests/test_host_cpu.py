"""The host CPU and the JPEG decoder: catalogue entries that set the loader's cores, core speed and cost per sample."""

import subprocess
import sys

import pytest

from jupyter_hwsim import Scenario, catalog, estimate
from jupyter_hwsim.core import costs
from jupyter_hwsim.core.errors import HwsimError
from jupyter_hwsim.core.scenario import host_defaults

# a loader that binds: few workers, every sample in the page cache (no reads), a GPU that keeps up
CPU_BOUND = dict(workload="resnet50", gpu="h100-sxm", loader_workers=2, cpu_cores=32, host_cache_gb=1000, jitter_cv=0.0)


def test_no_cpu_keeps_the_defaults():
    s = Scenario()
    assert (s.cpu, s.decoder, s.cpu_cores, s.cpu_speed) == (None, None, 16, 1.0)
    assert estimate(s, suggest=False).throughput == estimate(Scenario(cpu=None, decoder=None), suggest=False).throughput


def test_named_cpu_sets_cores_and_speed():
    e = catalog.get("cpus", "epyc-9654")
    s = Scenario(cpu="EPYC 9654")
    assert s.cpu == "epyc-9654"
    assert s.cpu_speed == e["core_speed"] == 1.68
    # 96 cores and 96 SMT siblings worth smt_gain of a core each
    assert s.cpu_cores == round(e["physical_cores"] + e["smt_gain"] * (e["threads"] - e["physical_cores"])) == 114
    assert Scenario(cpu="xeon-e5-2698-v4").cpu_speed == 1.0  # the reference core
    # efficiency cores count as the share of a performance core they are
    i9 = catalog.get("cpus", "core-i9-13900k")
    assert Scenario(cpu="i9-13900k").cpu_cores == round(8 + 16 * i9["efficiency_core_speed"] + 8 * i9["smt_gain"])


def test_explicit_cores_and_speed_win():
    s = Scenario(cpu="epyc-9654", cpu_cores=8, cpu_speed=2.0)
    assert (s.cpu_cores, s.cpu_speed) == (8, 2.0)
    # a new cpu moves what the old one implied and keeps what was given
    t = s.replace(cpu="xeon-8168")
    assert (t.cpu_cores, t.cpu_speed) == (8, 2.0)
    u = Scenario(cpu="epyc-9654").replace(cpu="xeon-8168")
    assert (u.cpu_cores, u.cpu_speed) == host_defaults("xeon-8168") == (29, 1.1)
    assert (Scenario(cpu="epyc-9654").replace(cpu=None).cpu_cores, Scenario().replace(cpu="epyc-9654").cpu_cores) == (
        16,
        114,
    )


def test_custom_cpu_dict():
    s = Scenario(cpu={"physical_cores": 4, "threads": 8, "core_speed": 1.5})
    assert (s.cpu_cores, s.cpu_speed) == (5, 1.5)  # 4 + 4 x 0.19
    with pytest.raises(HwsimError, match=r"^cpu\.core_speed=None is not accepted"):
        Scenario(cpu={"physical_cores": 4, "threads": 8})
    with pytest.raises(HwsimError, match=r"^cpu\.threads=2 "):
        Scenario(cpu={"physical_cores": 4, "threads": 2, "core_speed": 1.0})


def _closed_form(s: Scenario) -> float:
    """A CPU-bound pipeline's samples/s: workers x core_speed / ms per sample (no reads, no per-batch work)."""
    return s.loader_workers * s.cpu_speed * 1e3 / costs.resolve(s).preprocess_ms


@pytest.mark.parametrize("cpu", [None, "epyc-9654", "xeon-e5-2698-v4"])
def test_faster_decoder_raises_a_cpu_bound_pipeline_by_the_ratio_of_costs(cpu):
    slow, fast = (Scenario(**CPU_BOUND, cpu=cpu, decoder=d) for d in ("torchvision", "opencv"))
    rs, rf = estimate(slow, suggest=False), estimate(fast, suggest=False)
    assert rs.bottleneck == rf.bottleneck == "cpu"
    assert rs.throughput == pytest.approx(_closed_form(slow), rel=1e-6)
    assert rf.throughput == pytest.approx(_closed_form(fast), rel=1e-6)
    ms = {d: catalog.get("decoders", d) for d in ("torchvision", "opencv")}
    cost = {d: 0.1875 * 1e3 / e["decode_mpix_per_s"] + e["augment_ms_per_sample"] for d, e in ms.items()}
    assert rf.throughput / rs.throughput == pytest.approx(cost["torchvision"] / cost["opencv"], rel=1e-6)


def test_a_faster_cpu_raises_it_by_the_core_speed():
    ref, fast = (Scenario(**CPU_BOUND, cpu=c, decoder="pillow") for c in ("xeon-e5-2698-v4", "epyc-9654"))
    ratio = estimate(fast, suggest=False).throughput / estimate(ref, suggest=False).throughput
    assert ratio == pytest.approx(1.68, rel=1e-6)


def test_explicit_preprocess_cost_wins_over_the_decoder():
    s = Scenario(**CPU_BOUND, decoder="pillow", preprocess_ms_per_sample=5.0)
    assert costs.resolve(s).preprocess_ms == 5.0


def test_dali_gpu_takes_the_decode_off_the_cpu():
    base = dict(workload="resnet50", gpu="v100-sxm2-16gb", batch_size=128)
    cpu, gpu, none = (costs.resolve(Scenario(**base, decoder=d)) for d in ("dali-cpu", "dali-gpu", None))
    e = catalog.get("decoders", "dali-gpu")
    decode_ms = 0.1875 * 1e3 / e["decode_mpix_per_s"]
    assert gpu.preprocess_ms == pytest.approx(decode_ms * e["host_decode_share"])  # only the host's Huffman share
    assert gpu.preprocess_ms < cpu.preprocess_ms / 2
    # the decode lands on the device: batch x megapixels / GPU rate more compute in each step
    extra = costs.demands(gpu).step.compute_s - costs.demands(none).step.compute_s
    assert extra == pytest.approx(128 * 0.1875 / e["gpu_decode_mpix_per_s"])
    assert costs.demands(cpu).step.compute_s == costs.demands(none).step.compute_s
    # a GPU with hardware JPEG decoders decodes at their rate
    a100 = costs.resolve(Scenario(workload="resnet50", gpu="a100-sxm-80gb", batch_size=128, decoder="dali-gpu"))
    assert costs.gpu_decode_s(a100) == pytest.approx(128 * 0.1875 / e["hw_decode_mpix_per_s"])


def test_bad_names_are_refused_with_a_suggestion():
    with pytest.raises(HwsimError) as err:
        Scenario(cpu="epyc-964")
    assert err.value.field == "cpu" and "did you mean 'epyc-9654'" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(HwsimError) as err:
        Scenario(decoder="pilow")
    assert err.value.field == "decoder" and "did you mean 'pillow'" in str(err.value)
    with pytest.raises(HwsimError) as err:
        Scenario(workload="bert-base", decoder="pillow")
    assert err.value.field == "decoder" and "image_mpix" in str(err.value)
    with pytest.raises(HwsimError, match="cpu_gores"):
        Scenario.from_dict({"cpu_gores": 4})


@pytest.mark.parametrize(("section", "entry"), [("cpus", "epyc-9654"), ("decoders", "dali-gpu")])
def test_cli_lists_the_sections(section, entry):
    p = subprocess.run(
        [sys.executable, "-m", "jupyter_hwsim", "catalog", section], capture_output=True, text=True, check=True
    )
    assert any(line.startswith(entry + " ") for line in p.stdout.splitlines())


def test_every_cpu_and_decoder_number_has_a_source():
    for section in ("cpus", "decoders", "augmentations"):
        for eid, entry in getattr(catalog, section)().items():
            for key in entry:
                if key in ("name", "aliases", "sources", "id"):
                    continue
                assert entry.get("sources", {}).get(key), f"{section}.{eid}.{key} has no source"


def test_every_cited_reference_resolves_to_a_url():
    from jupyter_hwsim.core import reference

    for section in ("cpus", "decoders", "augmentations"):
        for eid, entry in getattr(catalog, section)().items():
            for src in entry.get("sources", {}).values():
                for ref, hits in reference.resolve(src):
                    assert hits, f"{section}.{eid}: unknown reference {ref}"
                    assert all(reference.row_urls(r) for r in hits), f"{eid}: {ref} has no URL"


def test_a_decoder_entry_is_a_decoder_and_its_transform_chain():
    """-decode entries decode only, plain entries add the training chain, -eval the costlier evaluation chain
    (Resize 256 of the whole image); the decode cost is the same in all three."""
    cost = {d: costs.resolve(Scenario(**CPU_BOUND, decoder=d)).preprocess_ms for d in catalog.decoders()}
    assert cost["pillow-decode"] < cost["pillow"] < cost["pillow-eval"]
    assert cost["opencv-decode"] < cost["opencv"] and cost["dali-cpu"] < cost["dali-cpu-eval"]
    assert cost["pillow-decode"] == pytest.approx(0.1875 * 1e3 / catalog.get("decoders", "pillow")["decode_mpix_per_s"])
    # OpenCV (libjpeg-turbo) decodes faster than Pillow; Pillow-SIMD only resizes faster
    assert cost["opencv-decode"] < cost["pillow-decode"] and cost["pillow-simd"] < cost["pillow"]


def test_the_loader_rows_of_the_validation_map_their_host_and_chain():
    """pytorch-cls measures the evaluation loader; its rows labelled dali_gpu decode on the CPU (the repo builds
    its validation pipeline with dali_cpu=True); its allotted CPUs are hardware threads of the host."""
    from jupyter_hwsim.validation import cases

    rows = {r["case_id"]: r for r in cases.published_rows() if r["category"] == "dataloading"}
    torch_row, gpu_label = cases.case(rows["V-pytorch-cls-dataload-test-04"]), rows["V-pytorch-cls-dataload-test-16"]
    assert torch_row["fields"]["decoder"] == "pillow-eval"
    assert torch_row["fields"]["cpu_speed"] == pytest.approx((1 + 0.19) / 2)
    assert "dali_gpu" in gpu_label["engine"] and cases.case(gpu_label)["fields"]["decoder"] == "dali-cpu-eval"
    gcp = cases.case(rows["V-imread-benchmark-gcp-01"])  # EPYC 9B14, Pillow, 0 workers
    assert gcp["fields"]["decoder"] == "pillow-decode" and gcp["fields"]["loader_workers"] == 0


# ---- augmentation: a named transform chain beside the decoder, priced for the decoder's library ----------------


def _cost(**fields) -> float:
    return costs.resolve(Scenario(**CPU_BOUND, **fields)).preprocess_ms


@pytest.mark.parametrize("decoder", sorted(catalog.decoders()))
def test_no_augmentation_keeps_the_decoders_own_chain(decoder):
    d = catalog.get("decoders", decoder)
    decode = 0.1875 * 1e3 / d["decode_mpix_per_s"] * d["host_decode_share"]
    assert Scenario(decoder=decoder).augmentation is None
    assert _cost(decoder=decoder) == pytest.approx(decode + d["augment_ms_per_sample"], rel=1e-12)


@pytest.mark.parametrize(
    ("decoder", "augmentation", "same_as"),
    [
        ("pillow", "resize-center-crop", "pillow-eval"),
        ("pillow-eval", "resize-crop-flip", "pillow"),
        ("pillow", "none", "pillow-decode"),
        ("opencv-decode", "resize-crop-flip", "opencv"),
        ("torchvision-decode", "resize-crop-flip", "torchvision"),
        ("dali-cpu", "resize-center-crop", "dali-cpu-eval"),
    ],
)
def test_a_named_chain_prices_what_the_bundled_entry_does(decoder, augmentation, same_as):
    """The catalogue's bundled decoder + chain entries and a decoder with the chain named beside it agree."""
    assert _cost(decoder=decoder, augmentation=augmentation) == pytest.approx(_cost(decoder=same_as), abs=0.006)


@pytest.mark.parametrize("decoder", [d for d, e in catalog.decoders().items() if e["device"] == "cpu"])
def test_chains_order_by_their_work(decoder):
    """No transform < the training chain (a crop of a share of the image) < the evaluation chain (a resize of
    the whole image); the decode stays the same."""
    none, train, val = (_cost(decoder=decoder, augmentation=a) for a in ("none", "resize-crop-flip", "eval"))
    d = catalog.get("decoders", decoder)
    assert none == pytest.approx(0.1875 * 1e3 / d["decode_mpix_per_s"])
    assert none < train < val


def test_an_augmentation_moves_a_cpu_bound_pipeline_by_the_ratio_of_costs():
    light, heavy = (Scenario(**CPU_BOUND, decoder="opencv", augmentation=a) for a in ("none", "resize-center-crop"))
    rl, rh = estimate(light, suggest=False), estimate(heavy, suggest=False)
    assert rl.bottleneck == rh.bottleneck == "cpu"
    assert rl.throughput / rh.throughput == pytest.approx(_closed_form(light) / _closed_form(heavy), rel=1e-6)
    assert rl.throughput > rh.throughput * 1.2


def test_a_gpu_decoders_chain_runs_on_the_gpu():
    assert _cost(decoder="dali-gpu", augmentation="resize-center-crop") == _cost(decoder="dali-gpu")


def test_bad_augmentations_are_refused_in_one_line():
    with pytest.raises(HwsimError) as err:
        Scenario(decoder="pillow", augmentation="resize-crop-flp")
    text = str(err.value)
    assert err.value.field == "augmentation" and "resize-crop-flp" in text and "\n" not in text
    assert "did you mean 'resize-crop-flip'" in text and "resize-center-crop" in text and "none" in text
    with pytest.raises(HwsimError) as err:
        Scenario(augmentation="none")  # a chain without a decoder has no library to run it
    assert err.value.field == "augmentation" and "decoder" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(HwsimError) as err:
        Scenario(decoder="pillow", augmentation=3)
    assert err.value.field == "augmentation"
    assert Scenario(decoder="pil", augmentation="EVAL").augmentation == "resize-center-crop"  # aliases, any case


def test_augmentation_round_trips_and_is_in_the_schema():
    from jupyter_hwsim.core.scenario import json_schema

    s = Scenario(decoder="opencv", augmentation="train")
    assert Scenario.from_dict(s.to_dict()) == s and s.to_dict()["augmentation"] == "resize-crop-flip"
    prop = json_schema()["properties"]["augmentation"]
    assert {"type": "object"} not in prop["anyOf"]
    assert set(prop["anyOf"][0]["examples"]) == {"resize-crop-flip", "resize-center-crop", "none"}


# ---- the GCP hosts of imread-benchmark: Zen 5 (EPYC 9B45) and Neoverse-N1 (Ampere Altra) ----------------------


def test_zen5_and_neoverse_n1_hosts_follow_the_catalogue_rule():
    for cid, ipc in (("epyc-9655", 1.5928 * 1.16), ("altra-q64-30", 1.1845)):
        e = catalog.get("cpus", cid)
        assert e["sustained_ghz"] == pytest.approx((e["base_ghz"] + e["boost_ghz"]) / 2)
        assert e["core_speed"] == pytest.approx(e["sustained_ghz"] / 2.9 * ipc, abs=0.005)
    assert Scenario(cpu="altra").cpu_cores == 64  # one thread per core: no SMT siblings


def test_the_gcp_rows_of_the_new_hosts_are_expressed():
    from jupyter_hwsim.validation import cases

    rows = {r["case_id"]: r for r in cases.published_rows() if r["category"] == "dataloading"}
    zen5, n1 = cases.case(rows["V-imread-benchmark-gcp-13"]), cases.case(rows["V-imread-benchmark-gcp-49"])
    assert (zen5["fields"]["cpu"], zen5["fields"]["cpu_cores"]) == ("epyc-9655", round(8 + 0.19 * 8))
    assert (n1["fields"]["cpu"], n1["fields"]["cpu_cores"], n1["fields"]["loader_workers"]) == ("altra-q64-30", 16, 0)
    assert "reason" in cases.case(rows["V-imread-benchmark-gcp-37"])  # Neoverse-V2: no sourced clock or IPC
