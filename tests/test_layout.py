"""NCHW convolutions on NVIDIA tensor cores pay two transposes each; channels_last removes them."""

import pytest

from jupyter_hwsim import Scenario, estimate
from jupyter_hwsim.core import catalog, costs, workloads


def _bytes(s):
    return costs.step_cost(costs.resolve(s)).hbm_bytes


def test_the_transposes_move_each_convolution_input_and_output_twice_more():
    s = Scenario(kind="inference", gpu="a100", precision="fp16", batch_size=64)
    m = costs.resolve(s)
    convs = [op for op in workloads.operators(m.workload, m.seq) if op.conv]
    assert len(convs) == 53  # ResNet-50: the stem, 16 bottlenecks of three, four projections
    ab = costs.activation_bytes("fp16", False)
    extra = sum(2.0 * (op.act_in + op.act_out) * 64 * ab for op in convs)
    assert _bytes(s) - _bytes(s.replace(channels_last=True)) == pytest.approx(extra)


def test_channels_last_gains_about_what_nvidia_reports_for_resnet50_training():
    """NVIDIA and MosaicML report about 30% for ResNet-50 on V100 and A100 (a check, not a fit)."""
    for gpu, precision in (("v100", "fp16"), ("a100", "bf16")):
        s = Scenario(gpu=gpu, precision=precision, loader_workers=64, cpu_cores=64)
        gain = estimate(s.replace(channels_last=True), suggest=False).throughput / estimate(s, suggest=False).throughput
        assert 1.15 < gain < 1.45, (gpu, gain)


@pytest.mark.parametrize(
    "s",
    [
        Scenario(kind="inference", gpu="v100", precision="fp32"),  # no tensor cores: NCHW kernels, no transposes
        Scenario(kind="inference", gpu="a100", engine="torch-compile"),  # Inductor lays conv nets out NHWC
        Scenario(kind="inference", gpu="mi300x", precision="fp16"),  # not cuDNN
        Scenario(kind="inference", workload="bert-base", gpu="a100"),  # no convolutions
    ],
)
def test_no_transposes_where_they_do_not_happen(s):
    assert _bytes(s) == _bytes(s.replace(channels_last=True))


def test_the_layout_is_suggested_where_it_helps():
    r = estimate(Scenario(gpu="v100", precision="fp16", loader_workers=64, cpu_cores=64))
    x = next(x for x in r.suggestions if x["change"] == "channels_last=true")
    assert x["shown"] and x["speedup"] > 1.15
    assert not any("channels_last" in x["fields"] for x in estimate(Scenario(kind="llm")).suggestions)


def test_depthwise_convolutions_pay_no_transposes():
    """A depthwise convolution runs on the vector units in either layout: only EfficientNet's tensor-core
    convolutions pay the NCHW transposes."""
    s = Scenario(kind="inference", gpu="a100", workload="efficientnet-b0", precision="fp16", batch_size=64)
    m = costs.resolve(s)
    ops = workloads.operators(m.workload, m.seq)
    assert any(op.conv and op.vector for op in ops)
    ab = costs.activation_bytes("fp16", False)
    extra = sum(2.0 * (op.act_in + op.act_out) * 64 * ab for op in ops if op.conv and not op.vector)
    assert _bytes(s) - _bytes(s.replace(channels_last=True)) == pytest.approx(extra)


def _depthwise_time(engine: str, k: int) -> tuple[float, float]:
    """(time, bandwidth-roof time) of one 7x7 or 3x3 depthwise convolution of ConvNeXt-T's first stage."""
    m = costs.resolve(Scenario(kind="inference", workload="convnext-tiny", gpu="rtx-4090", engine=engine,
                               precision="fp16", batch_size=64))  # fmt: skip
    op, _ = workloads._conv("dw", 96, 96, k, 1, 56, groups=96)
    r = costs.rates(m)
    _, nbytes, _, t_m = costs.roofline(op, 64, r, 2.0, 2.0, False)
    return t_m, nbytes / r.bw


def test_a_large_depthwise_window_runs_far_from_the_bandwidth_roof():
    """PyTorch's kernels specialise 3x3 (and 5x5) depthwise windows; 7x7 runs a generic kernel (engines.toml
    large_depthwise_bw_efficiency), on the same bytes."""
    t7, roof7 = _depthwise_time("pytorch-eager", 7)
    t3, roof3 = _depthwise_time("pytorch-eager", 3)
    e = catalog.get("engines", "pytorch-eager")["large_depthwise_bw_efficiency"]
    assert t7 == pytest.approx(roof7 / e) and t3 == pytest.approx(roof3)
    assert t7 / t3 == pytest.approx(1 / e, rel=0.01)  # the weights are a sliver of the bytes
    t7_trt, roof7_trt = _depthwise_time("tensorrt", 7)  # no measurement for TensorRT's kernels: the roof
    assert t7_trt == pytest.approx(roof7_trt)


def test_imported_convolutions_keep_their_window():
    torch = pytest.importorskip("torch")
    from jupyter_hwsim import from_torch

    block = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 7, padding=3, groups=32), torch.nn.Conv2d(32, 64, 1))
    w = from_torch(block, torch.zeros(2, 32, 28, 28), name="dw-block")
    dw, pw = workloads.operators(w, 1)[:2]
    assert (dw.window, dw.vector) == (7, True) and (pw.window, pw.vector) == (1, False)
