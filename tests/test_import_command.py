"""`python -m jupyter_hwsim import PATH` prints what was understood of a model file, so the user can check it."""

import json

import pytest

from jupyter_hwsim.cli import main
from jupyter_hwsim.core.importers.summary import describe, spec_of

LLAMA_2_7B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
}
MIXTRAL = {**LLAMA_2_7B, "model_type": "mixtral", "intermediate_size": 14336, "num_key_value_heads": 8}
MIXTRAL.update(max_position_embeddings=32768, num_local_experts=8, num_experts_per_tok=2)


def _run(capsys, *argv):
    code = main(["import", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_config_is_described(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_2_7B))
    code, out, _ = _run(capsys, str(tmp_path / "config.json"))
    assert code == 0 and "layers               32" in out and "6,738" in out and "flops per token" in out
    code, out, _ = _run(capsys, str(tmp_path), "--seq", "128", "--json")  # the model directory
    d = json.loads(out)
    assert d["layers"] == 32 and d["seq_len"] == 128 and d["warnings"] == []
    assert abs(d["params_total"] - 6.74e9) / 6.74e9 < 0.01
    # a forward pass is ~2 FLOPs per parameter per token (the embedding lookup is none)
    assert abs(d["flops_per_token"] - 2 * 6.61e9) / (2 * 6.61e9) < 0.02


def test_the_head_an_encoder_runs_is_shown(tmp_path, capsys):
    bert = {"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2}  # fmt: skip
    for architectures, shown in (
        (["BertForQuestionAnswering"], "task head, 2 outputs per position"),
        (["BertModel"], "none (the hidden states are the output)"),
        (["BertForMaskedLM"], "vocabulary (30,522 scores per position)"),
    ):
        (tmp_path / "config.json").write_text(json.dumps({**bert, "architectures": architectures}))
        code, out, _ = _run(capsys, str(tmp_path / "config.json"))
        assert code == 0 and f"head                 {shown}" in out, out


def test_a_mixture_of_experts_shows_active_parameters(tmp_path, capsys):
    (tmp_path / "mixtral.json").write_text(json.dumps(MIXTRAL))
    code, out, _ = _run(capsys, f"hf:{tmp_path / 'mixtral.json'}", "--json")
    d = json.loads(out)
    assert code == 0 and d["params_total"] == pytest.approx(46.7e9, rel=0.01)
    assert d["params_active"] == pytest.approx(12.9e9, rel=0.01)


def test_an_onnx_file_is_described(tmp_path, capsys):
    onnx = pytest.importorskip("onnx", reason="the onnx package is not installed (pip install onnx)")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
        helper.make_node("Hardmax", ["h"], ["y"], name="odd_one"),
    ]
    g = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
        [numpy_helper.from_array(np.zeros((64, 32), np.float32), "w")],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "tiny.onnx")
    code, out, _ = _run(capsys, str(tmp_path / "tiny.onnx"))
    assert code == 0 and "flops per sample" in out and "warning: odd_one (Hardmax)" in out
    d = describe(f"onnx:{tmp_path / 'tiny.onnx'}")
    assert d["params_total"] == 64 * 32 and d["flops_per_sample"] == 2 * 64 * 32 + 32


@pytest.mark.parametrize(
    "argv,field",
    [(["missing.json"], "workload"), (["missing.onnx"], "workload"), (["x.json", "--seq", "0"], "--seq")],
)
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, capsys, argv, field):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.json").write_text(json.dumps(LLAMA_2_7B))
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith(f"error: {field}=") and err.count("\n") == 1


def test_spec_of():
    assert spec_of("a/config.json") == "hf:a/config.json" and spec_of("m.ONNX") == "onnx:m.ONNX"
    assert spec_of("onnx:x") == "onnx:x" and spec_of("model-dir") == "hf:model-dir"
