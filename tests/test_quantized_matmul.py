"""llama.cpp's quantized prompt path: on an NVIDIA device with an int8 tensor rate the weight matmuls of a Q8_0 or
Q4 model run as int8 kernels (MMQ) at that rate times the engine's efficiency; attention, other engines, 16-bit
models and other makers keep the 16-bit rate."""

import pytest

from jupyter_hwsim import Scenario, estimate
from jupyter_hwsim.core import catalog, costs
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
