"""Every result says how far to trust its throughput: the published error of its class (data/bands.json)."""

import json
from importlib import resources

import pytest

from jupyter_hwsim import Scenario, estimate, simulate
from jupyter_hwsim.core import bands

BANDS = json.loads(resources.files("jupyter_hwsim").joinpath("data", "bands.json").read_text())


def test_a_validated_class_turns_its_error_percentiles_into_a_range_of_the_truth():
    r = simulate(Scenario(workload="resnet50", gpu="a100"), suggest=False)
    a = r.accuracy
    entry = BANDS[a["class"]]
    assert entry["workload_family"] == "cnn" and entry["runtime"] == r.scenario["engine"] == "pytorch-eager"
    # error = predicted / measured - 1: 80% of measured values lay within predicted / (1 + p90 .. p10)
    assert a["low"] == pytest.approx(r.throughput / (1 + entry["p90"]))
    assert a["high"] == pytest.approx(r.throughput / (1 + entry["p10"]))
    assert a["status"] == "validated" and a["n"] == entry["n"] and "likely" in r.summary()


def test_an_llm_at_concurrency_one_is_judged_on_single_stream_rows():
    one = estimate(Scenario(kind="llm", engine="llama-cpp", concurrency=1, precision="int4"), suggest=False)
    assert one.accuracy["class"].endswith("|per_stream")
    many = estimate(Scenario(kind="llm", engine="tensorrt-llm", concurrency=64), suggest=False)
    assert many.accuracy["class"] == "llm|tensorrt-llm|throughput"


def test_a_class_without_published_rows_says_it_is_not_validated():
    r = estimate(Scenario(kind="llm", engine="sglang"), suggest=False)
    assert r.accuracy["status"] == "unvalidated" and r.accuracy["n"] == 0 and "low" not in r.accuracy
    assert "not validated" in r.summary()


def test_eager_generation_takes_the_band_of_published_generate_calls():
    """A single eager stream's tokens/s compares with published generate() runs (their tokens over the whole call)."""
    r = estimate(Scenario(kind="llm", engine="pytorch-eager"), suggest=False)
    b = BANDS["llm|pytorch-eager|generate_tps"]
    assert r.accuracy["class"] == "llm|pytorch-eager|generate_tps" and r.accuracy["n"] == b["n"] >= 5
    assert r.accuracy["low"] == pytest.approx(r.throughput / (1 + b["p90"]))
    assert r.accuracy["high"] == pytest.approx(r.throughput / (1 + b["p10"]))


def test_every_band_names_the_runtime_a_scenario_uses():
    from jupyter_hwsim.validation.cases import ENGINE_CATALOGUE

    for key, b in BANDS.items():
        assert b["runtime"] == ENGINE_CATALOGUE.get(b["engine"]), key
    assert bands.workload_family({"kind": "inference", "workload": "bert-large"}) == "transformer-encoder"


def test_a_kept_up_open_loop_has_no_throughput_band():
    """Serving what it is offered, its throughput is the offered rate: a band of capacity would mislead."""
    light = estimate(Scenario(kind="serving", arrival_rate_rps=50), suggest=False)
    assert light.accuracy is None and "likely" not in light.summary()
    flooded = estimate(Scenario(kind="serving", arrival_rate_rps=1e5), suggest=False)
    assert flooded.accuracy is not None
