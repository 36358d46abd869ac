"""Suggestions an expert would give: native precisions, combined changes for co-saturated stages, only the
fields a surface can change, and a shown/hidden split at SHOW_ABOVE."""

import pytest

from jupyter_hwsim import HwsimError, Scenario, estimate, simulate
from jupyter_hwsim.core.scenario import panel_fields
from jupyter_hwsim.diagnosis.diagnose import SHOW_ABOVE


def _singles(r):
    return [x for x in r.suggestions if "parts" not in x]


def test_a_t4_at_bf16_is_told_to_use_fp16():
    r = simulate(Scenario(kind="inference", gpu="t4", precision="bf16"))  # no bf16 units: the fp32 rate
    fp16 = next(x for x in r.suggestions if x["change"] == "precision=fp16")
    assert fp16["shown"] and fp16["speedup"] > 1.5  # tensor-core math against the fp32 rate
    assert "no bf16" in fp16["why"]
    # a device with native bf16 is not told so
    assert not any(x["change"] == "precision=fp16" for x in simulate(Scenario(kind="inference")).suggestions)


def test_co_saturated_stages_are_freed_by_a_combined_change():
    s = Scenario(workload="resnet50", gpu="a100", channels_last=True)  # loader and GPU within a few percent
    r = simulate(s)
    combos = [x for x in r.suggestions if "parts" in x]
    assert combos, r.suggestions
    top = max(combos, key=lambda x: x["speedup"])
    assert top["shown"] and top["speedup"] >= SHOW_ABOVE
    single = {x["change"]: x["speedup"] for x in _singles(r)}
    assert top["speedup"] >= SHOW_ABOVE * max(single[p] for p in top["parts"])  # it beats each part alone
    # the speed-up is a re-simulation of the merged fields, like with like (the short re-run, same seed)
    short = s.traits.suggest_steps
    again = simulate(s.replace(**top["fields"], steps=short), suggest=False).throughput
    base = simulate(s.replace(steps=short), suggest=False).throughput
    assert again / base == pytest.approx(top["speedup"], abs=2e-3)


def test_a_triple_must_beat_its_pair():
    r = simulate(Scenario(workload="resnet50", gpu="a100", channels_last=True))
    by_parts = {frozenset(x["parts"]): x["speedup"] for x in r.suggestions if "parts" in x}
    for parts, sp in by_parts.items():
        for pair, pair_sp in by_parts.items():
            if len(parts) == 3 and len(pair) == 2 and pair < parts:
                assert sp >= SHOW_ABOVE * pair_sp
    assert len(by_parts) == len([x for x in r.suggestions if "parts" in x])  # no combination listed twice


@pytest.mark.parametrize(
    "s",
    [
        Scenario(workload="resnet50", gpu="a100"),
        Scenario(kind="serving"),
        Scenario(kind="llm"),
        Scenario(kind="inference", gpu="t4", precision="bf16", loader_workers=4),
    ],
)
def test_shown_means_a_real_gain_that_fits(s):
    for method in (simulate, estimate):
        r = method(s)
        assert r.suggestions
        for x in r.suggestions:
            assert x["shown"] == bool(x["speedup"] and x["speedup"] >= SHOW_ABOVE), x


def test_a_faster_gpu_on_a_starved_pipeline_says_why_it_would_not_help():
    r = simulate(Scenario(workload="resnet50", gpu="a100", loader_workers=4))  # the loader is the bottleneck
    assert r.bottleneck == "cpu"
    gpu = next(x for x in _singles(r) if x["change"].startswith("gpu="))
    assert not gpu["shown"] and "idle" in gpu["why"]


def test_a_lower_precision_names_its_numeric_cost():
    r = simulate(Scenario(kind="llm"))
    int4 = next(x for x in r.suggestions if x["change"] == "precision=int4")
    assert "matmul error" in int4["risk"]
    assert "risk" not in next(x for x in r.suggestions if x["change"] == "concurrency=32")


def test_only_the_fields_a_surface_can_change_are_suggested():
    s = Scenario(workload="resnet50", gpu="a100", loader_workers=4)
    everything = simulate(s)
    assert any("host_cache_gb" in x["fields"] for x in everything.suggestions)  # the API may set it
    panel = simulate(s, suggest=panel_fields("training"))
    assert panel.suggestions and not any("host_cache_gb" in x["fields"] for x in panel.suggestions)
    allowed = set(panel_fields("training"))
    for x in panel.suggestions:
        assert {k for k, v in x["fields"].items() if v is not None} <= allowed, x
    only = simulate(s, suggest=["gpu"])
    assert only.suggestions and all(set(x["fields"]) == {"gpu"} for x in only.suggestions)


@pytest.mark.parametrize("bad", ["yes", 1, ["nope"], {"gpu": 1}])
def test_a_bad_suggest_argument_is_one_clear_line(bad):
    with pytest.raises(HwsimError) as e:
        simulate(Scenario(), suggest=bad)
    assert "suggest" in str(e.value) and "\n" not in str(e.value)


def test_changes_the_twin_finds_useless_are_not_re_simulated():
    r = simulate(Scenario(workload="resnet50", gpu="a100", loader_workers=4))  # the loader binds
    by = {x["change"]: x for x in r.suggestions}
    assert not by["loader_workers=8"].get("estimated")  # the change that helps is verified by simulation
    skipped = [x for x in r.suggestions if x.get("estimated")]
    assert skipped and all(not x["shown"] for x in skipped)  # what the twin skips is never shown
    # and its figure is the twin's own ratio
    x = skipped[0]
    s = Scenario(workload="resnet50", gpu="a100", loader_workers=4)
    ratio = estimate(s.replace(**x["fields"]), suggest=False).throughput / estimate(s, suggest=False).throughput
    assert x["speedup"] == pytest.approx(ratio, abs=2e-3)


def test_a_bigger_device_is_chosen_by_its_capacity_in_gib():
    """147 GB of 70B fp16 weights and activations fit the H200's 141 GiB (151.4 GB): capacity compares in bytes."""
    r = estimate(Scenario(kind="inference", workload="llama-2-70b", gpu="rtx-4090", precision="fp16"))
    assert 141 < r.memory["total_gb"] < 141 * 2**30 / 1e9
    first = r.suggestions[0]
    assert first["change"] == "gpu=h200" and first["why"] == "141 GiB (151.4 GB)"
