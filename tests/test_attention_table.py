"""A serving engine's prefill attention on a chip with a measured table (core/attention.py) runs at the rate NVIDIA
AIConfigurator measured for that engine's attention layer on that board, at the prompt's length and its batch x
heads; everywhere else it stays at the matmul rate."""

import csv
import math
from pathlib import Path

import pytest

from jupyter_hwsim import Scenario
from jupyter_hwsim.core import attention, catalog, costs, workloads
from jupyter_hwsim.core.errors import HwsimError

TABLE = Path(costs.__file__).resolve().parents[1] / "data" / "reference" / attention.TABLE
LLAMA3 = "llama-3.1-8b"  # 32 query heads, 8 key-value heads of 128: the tables' own shape


def _measured() -> list[dict]:
    with TABLE.open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _entry(section: str, name: str) -> dict:
    return {k: v for k, v in catalog.get(section, name).items() if k not in ("id", "aliases", "sources")}


def _prefill(gpu: str, engine, prompt: int, batch: int = 1, workload: str = LLAMA3):
    s = Scenario(kind="llm", workload=workload, gpu=gpu, precision="bf16", engine=engine, prompt_tokens=prompt)
    return costs.step_cost(costs.resolve(s), batch=batch, seq=prompt)


def _attention_s(step, layer: int = 0) -> float:
    return sum(
        o.time_s for o in step.ops if o.name.startswith(f"layer{layer}.attn.") and o.name != f"layer{layer}.attn.out"
    )


def test_the_table_holds_one_shape_and_every_engine_on_every_board():
    rows = _measured()
    assert {(r["heads"], r["kv_heads"], r["head_dim"], r["dtype"]) for r in rows} == {("32", "8", "128", "bfloat16")}
    frameworks, boards = attention.tables()
    assert {(r["framework"], r["board"]) for r in rows} == {(f, b) for f in frameworks for b in boards}
    assert len(rows) == len({(r["framework"], r["board"], r["batch"], r["isl"]) for r in rows})  # one row a point


@pytest.mark.parametrize(
    "gpu, engine", [("h100-sxm", "vllm"), ("h200", "sglang"), ("a100-sxm-80gb", "tensorrt-llm"), ("l40s", "vllm")]
)
def test_a_prompt_of_the_tables_shape_takes_the_measured_time_per_layer(gpu, engine):
    """At the table's own points the whole attention (its two products, softmax and mask) costs the measured
    latency: the model's FLOPs and the table's agree, and nothing inside the kernel is charged twice."""
    framework = catalog.get("engines", engine)["attention_table"]
    board = catalog.get("gpus", gpu)["kernel_board"]
    points = [r for r in _measured() if r["framework"] == framework and r["board"] == board]
    chosen = [p for p in points if p["isl"] in ("512", "2048", "8192") and p["batch"] in ("1", "4")]
    assert len(chosen) == 6
    for r in chosen:
        step = _prefill(gpu, engine, int(r["isl"]), int(r["batch"]))
        assert _attention_s(step) == pytest.approx(float(r["latency_us"]) * 1e-6, rel=1e-9)


def test_between_measured_points_the_rate_lies_between_theirs():
    for b in (1.0, 3.0, 24.0):
        for lo, hi in ((512, 1024), (2048, 3072), (6144, 8192)):
            ends = sorted(attention.rate_flops("vllm", "h100_sxm", b, s) for s in (lo, hi))
            mid = attention.rate_flops("vllm", "h100_sxm", b, (lo + hi) // 2)
            assert ends[0] <= mid <= ends[1]


def test_past_the_table_the_rate_levels_off_and_below_it_never_rises():
    assert attention.rate_flops("trtllm", "h100_sxm", 1, 65536) == attention.rate_flops("trtllm", "h100_sxm", 1, 16384)
    assert attention.rate_flops("vllm", "a100_sxm", 4096, 512) == attention.rate_flops("vllm", "a100_sxm", 256, 512)
    for s in (16, 512, 16384):  # fewer (sequence, head) pairs than one sequence of 32 heads: no faster than it
        assert attention.rate_flops("sglang", "h100_sxm", 0.25, s) <= attention.rate_flops("sglang", "h100_sxm", 1, s)
    # a prompt shorter than the shortest measured one: the kernel's time does not fall below that one's by much
    short = attention.flops(1, 4) / attention.rate_flops("vllm", "h100_sxm", 1, 4)
    shortest = attention.flops(1, 16) / attention.rate_flops("vllm", "h100_sxm", 1, 16)
    assert 0.5 * shortest < short <= shortest


def test_heads_count_as_sequences_do():
    """A model of 64 heads fills the chip as two sequences of 32 heads do: the same rate per FLOP."""
    assert attention.rate_flops("vllm", "h100_sxm", 2 * 64 / 32, 1024) == attention.rate_flops(
        "vllm", "h100_sxm", 4, 1024
    )


def test_on_hopper_a_short_prompt_s_attention_is_slower_than_the_matmul_rate_a_long_one_s_is_not():
    """The measured FlashAttention-3 layer reaches 0.3 of the chip's matmul rate at 512 tokens and all of it at 16k;
    the engine without a table (torch.compile's SDPA) keeps the matmul rate."""
    for prompt, lo, hi in ((512, 1.5, 4.0), (16384, 0.8, 1.2)):
        ratio = _attention_s(_prefill("h100-sxm", "vllm", prompt)) / _attention_s(
            _prefill("h100-sxm", "torch-compile", prompt)
        )
        assert lo < ratio < hi


def test_only_a_measured_board_and_an_engine_with_a_table_take_it():
    rtx = _prefill("rtx-4090", "vllm", 2048)  # no kernel_board: the roofline's attention
    entry = _entry("engines", "vllm")
    unmeasured = {k: v for k, v in entry.items() if k != "attention_table"}
    plain, measured = _prefill("h100-sxm", unmeasured, 2048), _prefill("h100-sxm", entry, 2048)
    assert _attention_s(plain) != pytest.approx(_attention_s(measured), rel=0.05)
    assert plain.flops == pytest.approx(measured.flops, rel=1e-12)  # the same work, priced otherwise
    assert _attention_s(rtx) > 0


def test_a_sliding_window_shorter_than_the_prompt_stays_with_the_roofline():
    """A 1024-token window: a 2048-token prompt's queries see fewer keys than the tables' causal prompts did, so
    the measured rate does not apply there; the same model without the window takes it."""
    m = costs.resolve(Scenario(kind="llm", workload=LLAMA3, gpu="h100-sxm", precision="bf16", engine="vllm"))
    windowed = {**m.workload, "sliding_window": 1024}
    assert costs.measured_attention_s(m, workloads.operators(windowed, 2048), 1) == {}
    assert len(costs.measured_attention_s(m, workloads.operators(m.workload, 2048), 1)) == 32 * 4  # per layer: 4 ops


def test_a_custom_entry_names_a_table_and_a_board_the_file_holds():
    with pytest.raises(HwsimError) as e:
        catalog.add("engines", {**_entry("engines", "vllm"), "name": "mine", "attention_table": "nope"}, id="mine")
    assert "attention_table" in str(e.value) and "nope" in str(e.value) and "vllm" in str(e.value)
    with pytest.raises(HwsimError) as e:
        catalog.add("gpus", {**_entry("gpus", "h100-sxm"), "name": "mine", "kernel_board": "h100"}, id="mine-gpu")
    assert "kernel_board" in str(e.value) and "h100_sxm" in str(e.value)
    assert math.isfinite(attention.rate_flops("vllm", "h100_sxm", 1, 1000))
