"""The passes a naive attention and a training step make beyond the matmuls: the scores' scale and mask, dropout
(training only) and batch normalization in training, each present or fused away as the engine and the step say."""

import pytest

from jupyter_hwsim import Scenario
from jupyter_hwsim.core import costs, workloads
from jupyter_hwsim.core.errors import HwsimError
from jupyter_hwsim.core.importers import from_hf_config


def _ops(**fields):
    """name -> bytes of each forward operator of the scenario's step (fused ones move none)."""
    return {o.name: o.bytes for o in costs.step_cost(costs.resolve(Scenario(gpu="a100-sxm-80gb", **fields))).ops}


def test_dropout_costs_a_pass_in_training_and_nothing_at_inference():
    train = _ops(kind="training", workload="bert-large", precision="fp16", batch_size=8)
    infer = _ops(kind="inference", workload="bert-large", precision="fp16", batch_size=8)
    for name in ("layer0.attn.dropout", "layer0.attn.out_dropout", "layer0.ffn.dropout"):
        assert train[name] > 0
        assert name not in infer
    assert infer["layer0.attn.mask"] == pytest.approx(train["layer0.attn.mask"])  # the mask is no dropout


def test_a_workload_without_dropout_has_no_dropout_pass():
    ops = workloads.operators("llama-2-7b", 128)
    assert not any(op.training for op in ops)


@pytest.mark.parametrize(
    "engine, fused",
    [("pytorch-eager", False), ("tensorflow", False), ("torch-compile", True), ("tensorrt", True), ("xla", True)],
)
def test_the_scale_and_mask_pass_goes_where_the_engine_fuses_softmax_or_elementwise(engine, fused):
    ops = _ops(kind="inference", workload="bert-large", precision="fp16", batch_size=8, engine=engine)
    assert (ops["layer0.attn.mask"] == 0) == fused


def test_llama_cpp_softmax_takes_the_mask():
    m = costs.resolve(Scenario(kind="llm", gpu="rtx-4090", workload="llama-2-7b", engine="llama.cpp"))
    assert "mask" in costs.fused_classes(m)
    assert "softmax" not in costs.fused_classes(m)


def test_unmasked_attentions_have_no_mask_pass():
    assert not any(op.cls == "mask" for op in workloads.operators("vit-b16"))
    whisper = workloads.operators("whisper-small", 64)
    assert not any(op.cls == "mask" and op.name.startswith("encoder.") for op in whisper)
    assert any(op.cls == "mask" and op.name.startswith("decoder.") for op in whisper)


def test_batchnorm_folds_at_inference_only():
    infer = _ops(kind="inference", workload="resnet50", precision="fp16", batch_size=64, engine="xla")
    train = _ops(kind="training", workload="resnet50", precision="fp16", batch_size=64, engine="xla")
    assert infer["bn1"] == 0
    assert train["bn1"] > 0


def test_a_config_s_dropout_is_read_and_a_bad_one_refused():
    cfg = {
        "model_type": "bert",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 32,
        "attention_probs_dropout_prob": 0.1,
        "hidden_dropout_prob": 0.0,
    }
    w = from_hf_config(cfg)
    assert w["attention_dropout"] == 0.1
    assert "hidden_dropout" not in w  # zero: no pass
    with pytest.raises(HwsimError, match="attention_probs_dropout_prob"):
        from_hf_config({**cfg, "attention_probs_dropout_prob": 1.5})
