"""llama.cpp's quantized prompt path: on an NVIDIA device with an int8 tensor rate the weight matmuls of a Q8_0 or
Q4 model run as int8 kernels (MMQ) at that rate times the engine's efficiency; attention, other engines, 16-bit
models and other makers keep the 16-bit rate."""

import pytest

from jupyter_hwsim import Scenario, estimate
from jupyter_hwsim.core import catalog, costs, workloads
from jupyter_hwsim.core.errors import HwsimError
from jupyter_hwsim.core.workloads import Op


def machine(**kw):
    fields = {"kind": "llm", "workload": "llama-2-7b", "engine": "llama-cpp", "precision": "int4", **kw}
    return costs.resolve(Scenario(**fields))


def test_weight_matmuls_run_at_the_int8_rate_times_the_engine_efficiency():
    m = machine(gpu="rtx-3090")
    dev, e = catalog.get("gpus", "rtx-3090"), catalog.get("engines", "llama-cpp")
    r = costs.rates(m)
    expected = dev["peak_tflops"]["int8"] * e["quantized_matmul_efficiency"] * dev["compute_efficiency"] * 1e12
    assert r.weight_matmul == pytest.approx(expected)
    assert r.matmul == pytest.approx(dev["peak_tflops"]["fp16"] * dev["compute_efficiency"] * 1e12)
    weights = Op("w", "matmul", 2.0 * 512 * 4096 * 4096, 512 * 4096, 512 * 4096, 4096 * 4096, 512 * 4096, 1, 512)
    scores = Op("s", "matmul", 2.0 * 512 * 512 * 4096, 2 * 512 * 4096, 32 * 512 * 512, 0, 512, 512, 32)
    wb, ab = costs.weight_bytes(m.s), 2.0
    _, _, t_w, _ = costs.roofline(weights, 1, r, wb, ab, False, occupancy=False)
    _, _, t_s, _ = costs.roofline(scores, 1, r, wb, ab, False, occupancy=False)
    assert t_w == pytest.approx(weights.flops / r.weight_matmul)
    assert t_s == pytest.approx(scores.flops / r.matmul)  # attention multiplies 16-bit activations


@pytest.mark.parametrize(
    "change",
    [
        {"precision": "fp16"},  # cuBLAS runs 16-bit weights
        {"engine": "vllm"},  # an engine without integer kernels dequantizes
        {"gpu": "m2-ultra"},  # Metal: not the CUDA kernels
        {"gpu": "v100-sxm2-32gb"},  # no int8 tensor rate
    ],
)
def test_elsewhere_the_weights_are_multiplied_at_the_16_bit_rate(change):
    assert costs.rates(machine(**{"gpu": "rtx-3090", **change})).weight_matmul == 0


def test_the_prompt_path_follows_the_int8_rate_not_the_fp16_one():
    """An RTX 3090 (GeForce: fp32-accumulate fp16 at half rate, int8 at full rate) and an RTX A6000 (the same chip,
    fp16 at full rate) process a Q4 prompt at about their int8 rates' ratio, not their fp16 rates' ratio."""

    def prefill(gpu, precision):
        s = Scenario(kind="llm", workload="llama-2-7b", engine="llama-cpp", precision=precision, gpu=gpu,
                     prompt_tokens=512, output_tokens=16, batch_size=1)  # fmt: skip
        return estimate(s, suggest=False).prefill_tokens_per_s

    def rate(gpu, p):
        d = catalog.get("gpus", gpu)
        return d["peak_tflops"][p] * d["compute_efficiency"]

    q = prefill("rtx-3090", "int4") / prefill("rtx-a6000", "int4")
    f = prefill("rtx-3090", "fp16") / prefill("rtx-a6000", "fp16")
    assert q > 1 > f
    # the rest of a prompt's time (attention, norms, the weights' bytes) is alike in both: the two ratios differ by
    # about the ratio of the rates
    ratio = (rate("rtx-3090", "int8") / rate("rtx-a6000", "int8")) / (
        rate("rtx-3090", "fp16") / rate("rtx-a6000", "fp16")
    )
    assert q / f == pytest.approx(ratio, rel=0.15)


def _exllama(prompt: int, engine="exllama"):
    s = Scenario(kind="llm", workload="llama-2-7b", gpu="rtx-4090", precision="int4", weight_group_size=128,
                 engine=engine, prompt_tokens=max(prompt, 1))  # fmt: skip
    m = costs.resolve(s)
    return m, costs.step_cost(m, batch=1, seq=prompt)


def test_exllama_rebuilds_16_bit_weights_for_a_prompt_and_multiplies_them_with_a_16_bit_gemm():
    """At reconstruct_rows rows or more each weight matmul first writes its fp16 weights (reading the 4-bit ones) in
    a kernel of its own and the GEMM reads those: 2 + 2 + 0.52 bytes a weight where the fused kernel read 0.52; a
    decode step (one row) and a prompt of fewer rows keep the fused kernel."""
    entry = {k: v for k, v in catalog.get("engines", "exllama").items() if k not in ("id", "aliases", "sources")}
    fused = {k: v for k, v in entry.items() if k != "reconstruct_rows"}
    rows = entry["reconstruct_rows"]
    m, rebuilt = _exllama(rows)
    _, kept = _exllama(rows, engine=fused)
    weights = sum(op.params for op in workloads.operators(m.workload, rows) if op.cls == "matmul" and not op.gather)
    wb = costs.weight_bytes(m.s)
    assert rebuilt.hbm_bytes - kept.hbm_bytes == pytest.approx(weights * (2.0 + 2.0), rel=1e-9)
    assert wb == pytest.approx(0.5 + 2.0 / 128)
    assert rebuilt.kernels - kept.kernels == sum(
        1 for op in workloads.operators(m.workload, rows) if op.cls == "matmul" and op.params and not op.gather
    )
    below, below_fused = _exllama(rows - 1)[1], _exllama(rows - 1, engine=fused)[1]
    assert below.hbm_bytes == pytest.approx(below_fused.hbm_bytes, rel=1e-12)
    assert rebuilt.memory_s + rebuilt.compute_s > kept.memory_s + kept.compute_s


def test_a_custom_engine_s_reconstruct_rows_is_a_positive_integer():
    with pytest.raises(HwsimError) as e:
        catalog.add("engines", {**catalog.get("engines", "exllama"), "name": "x", "reconstruct_rows": 0}, id="x-recons")
    assert "reconstruct_rows" in str(e.value) and "0" in str(e.value)


def test_torch_compile_int4_prompts_run_at_tinygemm_s_rate_and_int8_ones_do_not():
    """tinygemm (_weight_int4pack_mm) multiplies an int4 prompt at about a tenth of the bf16 tensor rate (the
    catalogue's quantized_matmul_efficiency, from torchao's A6000 sweep): a 2048-token prompt's weight matmuls
    take several times bf16's; int8 weight-only and bf16 keep the 16-bit rate."""
    e, dev = catalog.get("engines", "cuda-graphs"), catalog.get("gpus", "a100-sxm-80gb")

    def prefill(precision):
        s = Scenario(kind="llm", workload="llama-2-7b", gpu="a100-sxm-80gb", precision=precision,
                     engine="cuda-graphs", prompt_tokens=2048)  # fmt: skip
        m = costs.resolve(s)
        return m, costs.step_cost(m, batch=1, seq=2048)

    (m4, int4), (m8, int8), (_, bf16) = prefill("int4"), prefill("int8"), prefill("bf16")
    expected = dev["peak_tflops"]["bf16"] * e["quantized_matmul_efficiency"] * dev["compute_efficiency"] * 1e12
    assert costs.rates(m4).weight_matmul == pytest.approx(expected)
    assert costs.rates(m8).weight_matmul == 0.0
    assert int4.compute_s > 4 * bf16.compute_s
    assert int8.compute_s == pytest.approx(bf16.compute_s, rel=0.05)


def test_only_fitted_quantized_matmul_figures_are_refitted_in_validation():
    from jupyter_hwsim.validation import fits

    assert fits.fitted_in_catalogue("llama-cpp", "quantized_matmul_efficiency")
    assert not fits.fitted_in_catalogue("cuda-graphs", "quantized_matmul_efficiency")
    assert not fits.fitted_in_catalogue("no-such-engine", "quantized_matmul_efficiency")
