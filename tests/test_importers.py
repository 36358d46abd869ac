"""Your model, your machine: workloads imported from a Hugging Face config.json or an ONNX graph are built into
the same operators as the catalogue's, with parameter counts as published."""

import json
import sys

import pytest

from jupyter_hwsim import HwsimError, Scenario, estimate, simulate
from jupyter_hwsim.core import catalog, workloads
from jupyter_hwsim.core.importers import from_hf_config, parameter_counts

# the published config.json values of each model (Hugging Face hub), trimmed to the keys that matter
LLAMA_2_7B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
}
MISTRAL_7B = {
    **LLAMA_2_7B,
    "model_type": "mistral",
    "intermediate_size": 14336,
    "num_key_value_heads": 8,
    "max_position_embeddings": 32768,
    "sliding_window": 4096,
}
MIXTRAL_8X7B = {**MISTRAL_7B, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2}
MIXTRAL_8X7B["sliding_window"] = None
BERT_BASE = {
    "model_type": "bert",
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "vocab_size": 30522,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}
VIT_B16 = {
    "model_type": "vit",
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "image_size": 224,
    "patch_size": 16,
    "num_channels": 3,
    "id2label": {str(i): f"class{i}" for i in range(1000)},
}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_inner": None, "vocab_size": 50257}
GPT2.update(n_positions=1024, n_ctx=1024)
GEMMA_7B = {
    "model_type": "gemma",
    "hidden_size": 3072,
    "intermediate_size": 24576,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "head_dim": 256,
    "vocab_size": 256000,
    "max_position_embeddings": 8192,
}
PHI_2 = {"model_type": "phi", "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 32}
PHI_2.update(num_attention_heads=32, num_key_value_heads=None, vocab_size=51200, max_position_embeddings=2048)
PHI_3_MINI = {"model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32}
PHI_3_MINI.update(num_attention_heads=32, num_key_value_heads=32, vocab_size=32064, max_position_embeddings=4096)
PHI_3_MINI.update(sliding_window=2047, tie_word_embeddings=False)
QWEN2_7B = {"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28}
QWEN2_7B.update(num_attention_heads=28, num_key_value_heads=4, vocab_size=152064, max_position_embeddings=131072)
QWEN2_7B.update(sliding_window=131072, use_sliding_window=False, max_window_layers=28, tie_word_embeddings=False)
NEOX_20B = {"model_type": "gpt_neox", "hidden_size": 6144, "intermediate_size": 24576, "num_hidden_layers": 44}
NEOX_20B.update(num_attention_heads=64, vocab_size=50432, max_position_embeddings=2048, tie_word_embeddings=False)

# published parameter counts: model cards and papers (weights and embeddings; biases and norms are < 0.2%)
PUBLISHED = [
    ("llama-2-7b", LLAMA_2_7B, 6.74e9),  # Touvron et al. 2023 / Llama-2-7b-hf: 6,738,415,616
    ("mistral-7b", MISTRAL_7B, 7.24e9),  # Mistral-7B-v0.1: 7,241,732,096
    ("bert-base", BERT_BASE, 109.48e6),  # bert-base-uncased BertModel: 109,482,240 ("110M", Devlin et al. 2019)
    ("vit-b16", VIT_B16, 86.57e6),  # vit-base-patch16-224: 86,567,656 ("86M", Dosovitskiy et al. 2021)
    ("gpt2", GPT2, 124.44e6),  # gpt2: 124,439,808 ("124M"), embeddings tied to the lm_head
    ("gemma-7b", GEMMA_7B, 8.54e9),  # Gemma report, table 2: 8,538,074,112
    ("phi-2", PHI_2, 2.78e9),  # microsoft/phi-2: 2,779,683,840
    ("phi-3-mini", PHI_3_MINI, 3.82e9),  # Phi-3-mini-4k-instruct: 3,821,079,552
    ("qwen2-7b", QWEN2_7B, 7.62e9),  # Qwen2-7B: 7,615,616,512
    ("gpt-neox-20b", NEOX_20B, 20.55e9),  # Black et al. 2022: 20,554,567,680
]


def _params(w) -> float:
    return parameter_counts(w)["total"]


def _throughput(workload, **fields) -> float:
    return simulate(Scenario(workload=workload, steps=30, **fields), seed=3, suggest=False).throughput


@pytest.mark.parametrize("label,config,published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_count_is_the_published_one(label, config, published):
    p = _params(from_hf_config(config, name=label))
    assert abs(p - published) / published < 0.01, (label, p)


def test_llama_2_7b_is_the_built_in_one(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_2_7B))
    w, built_in = from_hf_config(path), catalog.get("workloads", "llama-2-7b")
    assert abs(_params(w) - _params(built_in)) / _params(built_in) < 0.01
    assert workloads.operators(w) == workloads.operators(built_in)  # the same builder, the same operators
    assert [tuple(ops) for ops in workloads.decode_operators(w)] == list(workloads.decode_operators(built_in))
    for kind in ("inference", "llm"):
        a = _throughput(f"hf:{path}", kind=kind, gpu="h100-sxm")
        b = _throughput("llama-2-7b", kind=kind, gpu="h100-sxm")
        assert a > 0 and abs(a - b) / b < 0.01, (kind, a, b)


def test_mistral_grouped_query_attention_and_sliding_window(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative path is relative to the current directory
    (tmp_path / "mistral.json").write_text(json.dumps(MISTRAL_7B))
    s = Scenario(workload="hf:mistral.json", kind="inference", seq_len=4096)
    assert s.workload == "hf:mistral.json"  # the scenario keeps the string
    w, built_in = workloads.resolve(s.workload), catalog.get("workloads", "mistral-7b")
    assert (w["kv_heads"], w["sliding_window"], w["seq_len"]) == (8, 4096, 32768)
    assert abs(_params(w) - _params(built_in)) / _params(built_in) < 0.01
    assert workloads.kv_values_per_token(w) == 2 * 32 * 8 * 128
    a = _throughput("hf:mistral.json", kind="inference", seq_len=4096)
    assert abs(a - _throughput("mistral-7b", kind="inference", seq_len=4096)) / a < 0.01
    a = _throughput("hf:mistral.json", kind="llm")
    assert abs(a - _throughput("mistral-7b", kind="llm")) / a < 0.01
    # past the window each query attends to 4096 keys, not to all 8192
    scores = {op.name: op for op in workloads.operators(w, 8192)}["layer0.attn.scores"]
    full = {op.name: op for op in workloads.operators(built_in, 8192)}["layer0.attn.scores"]
    assert scores.flops == 2.0 * 8192 * 4096 * 4096 and full.flops == 2 * scores.flops


def test_mixtral_active_and_total_parameters():
    w = from_hf_config(MIXTRAL_8X7B)
    counts = parameter_counts(w)
    assert abs(counts["total"] - 46.7e9) / 46.7e9 < 0.01, counts  # Mixtral of Experts (Jiang et al. 2024): 46.7B
    assert abs(counts["active"] - 12.9e9) / 12.9e9 < 0.01, counts  # 12.9B used per token
    assert (w["params_total"], w["params_active"]) == (counts["total"], counts["active"])
    ops = {op.name: op for op in workloads.operators(w, 1)}
    dense = {op.name: op for op in workloads.operators(from_hf_config(MISTRAL_7B), 1)}
    assert ops["layer0.ffn.up"].flops == 2 * dense["layer0.ffn.up"].flops  # two experts per token
    assert ops["layer0.ffn.up"].params == 8 * dense["layer0.ffn.up"].params  # eight experts held
    r = simulate(Scenario(workload=w, kind="llm", gpu="h200", steps=20, concurrency=4), seed=1, suggest=False)
    assert r.throughput > 0 and r.memory["weights_gb"] == pytest.approx(counts["total"] * 2 / 1e9)


def test_multi_query_attention_and_head_dim():
    mqa = from_hf_config({**LLAMA_2_7B, "num_key_value_heads": 1})
    assert workloads.kv_values_per_token(mqa) == 2 * 32 * 1 * 128
    qkv = {op.name: op for op in workloads.operators(mqa, 16)}["layer0.qkv"]
    assert qkv.cols == 4096 + 2 * 128
    gemma = from_hf_config(GEMMA_7B)
    ops = {op.name: op for op in workloads.operators(gemma, 16)}
    assert ops["layer0.qkv"].cols == 16 * 256 * 3 and ops["layer0.attn.out"].params == 16 * 256 * 3072
    assert workloads.kv_values_per_token(gemma) == 2 * 28 * 16 * 256


def test_encoders_and_vision():
    bert, vit = from_hf_config(BERT_BASE), from_hf_config(VIT_B16)
    assert (bert["arch"], bert["causal"], bert["tie_embeddings"]) == ("transformer", False, True)
    assert workloads.operators(vit) == workloads.operators(catalog.get("workloads", "vit-b16"))
    assert _throughput(vit, kind="inference") == _throughput("vit-b16", kind="inference")
    roberta = from_hf_config(
        {**BERT_BASE, "model_type": "roberta", "vocab_size": 50265, "max_position_embeddings": 514}
    )
    assert roberta["seq_len"] == 512


@pytest.mark.parametrize(
    "architectures, extra, outputs",
    [
        (["BertForQuestionAnswering"], {}, 2),
        (["BertForTokenClassification"], {"id2label": {str(i): f"T{i}" for i in range(9)}}, 9),
        (["BertForTokenClassification"], {}, 2),  # transformers' default of two labels
        (["BertForSequenceClassification"], {}, 0),  # one pooled position: no head per position
        (["BertModel"], {}, 0),
        (["BertForMaskedLM"], {}, None),
        (None, {}, None),
    ],
)
def test_an_encoders_task_head_comes_from_its_architectures(architectures, extra, outputs):
    cfg = {**BERT_BASE, **extra, **({"architectures": architectures} if architectures else {})}
    w = from_hf_config(cfg)
    assert w.get("head_outputs") == outputs
    names = {op.name for op in workloads.operators(w)}
    assert ("lm_head" in names) == (outputs is None) and ("head" in names) == bool(outputs)


def test_gpt2_ties_its_embeddings():
    tied, untied = from_hf_config(GPT2), from_hf_config({**GPT2, "tie_word_embeddings": False})
    assert _params(untied) - _params(tied) == 50257 * 768
    assert tied["ffn"] == 4 * 768 and tied["seq_len"] == 1024


def test_an_edited_config_is_read_again(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(GPT2))
    assert workloads.resolve(f"hf:{path}")["layers"] == 12
    path.write_text(json.dumps({**GPT2, "n_layer": 6, "n_embd": 768, "n_inner": 3072}) + " ")
    assert workloads.resolve(f"hf:{path}")["layers"] == 6


def test_a_model_directory_and_case_preserving_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "My-Model").mkdir()
    (tmp_path / "My-Model" / "config.json").write_text(json.dumps(GPT2))
    s = Scenario(workload="hf:My-Model", kind="inference")
    assert s.workload == "hf:My-Model" and json.dumps(s.to_dict())
    assert s.replace(batch_size=4).workload == "hf:My-Model"


WHISPER_SMALL = {  # openai/whisper-small config.json
    "model_type": "whisper",
    "d_model": 768,
    "encoder_layers": 12,
    "decoder_layers": 12,
    "encoder_attention_heads": 12,
    "decoder_attention_heads": 12,
    "encoder_ffn_dim": 3072,
    "decoder_ffn_dim": 3072,
    "vocab_size": 51865,
    "num_mel_bins": 80,
    "max_source_positions": 1500,
    "max_target_positions": 448,
    "tie_word_embeddings": True,
}


def test_whisper_is_the_built_in_encoder_decoder(tmp_path):
    w = from_hf_config(WHISPER_SMALL)
    assert workloads.operators(w) == workloads.operators("whisper-small")  # the same builder, the same operators
    assert abs(_params(w) - 244e6) / 244e6 < 0.02  # Radford et al. 2022 table 1: 244M
    assert w["input_bytes_per_sample"] == 960000  # 30 s of 16 kHz 16-bit audio
    (tmp_path / "config.json").write_text(json.dumps(WHISPER_SMALL))
    assert _throughput(f"hf:{tmp_path / 'config.json'}", kind="inference", gpu="l4") > 0
    with pytest.raises(HwsimError) as err:
        from_hf_config({**WHISPER_SMALL, "decoder_ffn_dim": 4096})
    assert err.value.field == "workload.decoder_ffn_dim" and "encoder_ffn_dim=3072" in str(err.value)
    with pytest.raises(HwsimError) as err:
        from_hf_config({**WHISPER_SMALL, "num_mel_bins": None})
    assert err.value.field == "workload.num_mel_bins"


BAD = [
    ("hf:missing.json", None, "workload", "no such file"),
    ("hf:bad.json", "{not json", "workload", "JSON"),
    ("hf:list.json", "[1, 2]", "workload", "JSON object"),
    ("hf:xlnet.json", {"model_type": "xlnet", "d_model": 512}, "workload.model_type", "one of bart, bert"),
    ("hf:none.json", {"hidden_size": 512}, "workload.model_type", "one of bart, bert"),
    ("hf:neg.json", {**LLAMA_2_7B, "hidden_size": -4096}, "workload.hidden_size", "integer >= 1"),
    ("hf:frac.json", {**LLAMA_2_7B, "num_hidden_layers": 2.5}, "workload.num_hidden_layers", "integer"),
    ("hf:nolayers.json", {"model_type": "llama", "hidden_size": 64}, "workload.num_hidden_layers", "positive"),
    ("hf:kv.json", {**LLAMA_2_7B, "num_key_value_heads": 5}, "workload.num_key_value_heads", "divisor"),
    (
        "hf:heads.json",
        {**LLAMA_2_7B, "num_attention_heads": 30, "num_key_value_heads": 30},
        "workload.num_attention_heads",
        "divisor",
    ),
    ("hf:moe.json", {**MIXTRAL_8X7B, "num_experts_per_tok": None}, "workload.num_experts_per_tok", "positive"),
    (
        "hf:qwen.json",
        {**QWEN2_7B, "use_sliding_window": True, "max_window_layers": 14},
        "workload.max_window_layers",
        "0 or >=",
    ),
    ("hf:", None, "workload", "path"),
]


@pytest.mark.parametrize("spec,content,field,accepted", BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_refused_clearly(tmp_path, monkeypatch, spec, content, field, accepted):
    monkeypatch.chdir(tmp_path)
    if content is not None:
        (tmp_path / spec[3:]).write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(HwsimError) as err:
        Scenario(workload=spec)
    assert err.value.field == field
    assert accepted in str(err.value)
    assert "\n" not in str(err.value)


def test_an_operator_list_is_a_workload():
    w = {
        "arch": "ops",
        "ops": [
            {"name": "fc", "cls": "matmul", "flops": 2.0 * 256 * 256, "act_in": 256, "act_out": 256, "params": 65536},
            {"name": "relu", "cls": "elementwise", "flops": 256, "act_in": 256, "act_out": 256},
        ],
        "input_bytes_per_sample": 1024,
        "preprocess_ms_per_sample": 0.0,
        "default_batch_size": 64,
    }
    assert _throughput(w, kind="inference", gpu="l4") > 0
    with pytest.raises(HwsimError) as err:
        Scenario(workload={**w, "ops": [{**w["ops"][0], "cls": "conv"}]})
    assert err.value.field == "workload.ops[0].cls"
    for share in (0, 1.5):  # the share of a causal attention's work a fused kernel computes
        with pytest.raises(HwsimError) as err:
            Scenario(workload={**w, "ops": [{**w["ops"][0], "causal_share": share}]})
        assert err.value.field == "workload.ops[0].causal_share" and "<= 1" in str(err.value)


# ---- ONNX -----------------------------------------------------------------------------------------------


def _onnx_models(tmp_path):
    onnx = pytest.importorskip("onnx", reason="the onnx package is not installed (pip install onnx)")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    def weight(name, *shape):
        return numpy_helper.from_array(np.zeros(shape, np.float32), name)

    def save(nodes, inp, out, inits, name):
        g = helper.make_graph(nodes, name, [inp], [out], inits)
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / f"{name}.onnx")

    save(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
            helper.make_node("Add", ["h1", "b1"], ["h2"], name="fc1.bias"),
            helper.make_node("Relu", ["h2"], ["h3"], name="relu1"),
            helper.make_node("Gemm", ["h3", "w2", "b2"], ["logits"], name="fc2"),
            helper.make_node("Softmax", ["logits"], ["y"], name="softmax"),
        ],
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 784]),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10]),
        [weight("w1", 784, 512), weight("b1", 512), weight("w2", 512, 10), weight("b2", 10)],
        "mlp",
    )
    save(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", ["c", "g", "be", "m", "v"], ["bn"], name="bn"),
            helper.make_node("Relu", ["bn"], ["r"], name="relu"),
            helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("GlobalAveragePool", ["p"], ["gap"], name="gap"),
            helper.make_node("Flatten", ["gap"], ["f"], name="flatten"),
            helper.make_node("Hardmax", ["f"], ["y"], name="odd_one"),
        ],
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3, 32, 32]),
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16]),
        [weight("w", 16, 3, 3, 3), *(weight(n, 16) for n in ("b", "g", "be", "m", "v"))],
        "cnn",
    )


def test_onnx_embedding_lookup_and_a_tied_head(tmp_path):
    onnx = pytest.importorskip("onnx", reason="the onnx package is not installed (pip install onnx)")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    vocab, h = 1000, 64
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["x"], name="lookup"),
        helper.make_node("Gather", ["pos", "ids"], ["p"], name="positions"),
        helper.make_node("Add", ["x", "p"], ["xp"], name="add"),
        helper.make_node("Transpose", ["emb"], ["emb_t"], name="tie"),
        helper.make_node("MatMul", ["xp", "emb_t"], ["y"], name="head"),
    ]
    g = helper.make_graph(
        nodes,
        "tied",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, vocab])],
        [numpy_helper.from_array(np.zeros((n, h), np.float32), name) for name, n in (("emb", vocab), ("pos", 32))],
    )
    g = onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    onnx.save(g, tmp_path / "tied.onnx")
    w = workloads.resolve(f"onnx:{tmp_path / 'tied.onnx'}")
    ops = {op.name: op for op in workloads.operators(w)}
    # the head reads the shared table whole and holds it; the position lookup reads 16 of its 32 rows
    assert ops["lookup"].gather and ops["lookup"].params == 0
    assert (ops["head"].params, ops["head"].gather) == (vocab * h, False)
    assert ops["positions"].gather and workloads.weight_share(ops["positions"]) == pytest.approx(16 / 32)
    assert w["params_total"] == (vocab + 32) * h


def test_onnx_mlp(tmp_path, monkeypatch):
    _onnx_models(tmp_path)
    monkeypatch.chdir(tmp_path)
    w = workloads.resolve("onnx:mlp.onnx")
    ops = {op.name: op for op in workloads.operators(w)}
    assert [op.cls for op in ops.values()] == ["matmul", "elementwise", "elementwise", "matmul", "softmax"]
    assert ops["fc1"].flops == 2.0 * 784 * 512 and ops["fc1"].params == 784 * 512
    assert ops["fc2"].params == 512 * 10 + 10 and ops["fc1.bias"].params == 512
    assert w["params_total"] == 784 * 512 + 512 + 512 * 10 + 10
    assert w["device_bytes_per_sample"] == 784 * 4 and "batch=1" in w["warnings"][0]
    assert _throughput("onnx:mlp.onnx", kind="inference", gpu="l4") > 0


def test_onnx_conv_and_an_unknown_operator(tmp_path):
    _onnx_models(tmp_path)
    w = workloads.resolve(f"onnx:{tmp_path / 'cnn.onnx'}")
    ops = {op.name: op for op in workloads.operators(w)}
    assert ops["conv"].flops == 2.0 * 16 * 32 * 32 * 3 * 3 * 3  # per sample: the graph's batch of 8 divided out
    assert (ops["conv"].rows, ops["conv"].cols, ops["bn"].cls) == (32 * 32, 16, "batchnorm")
    assert (ops["conv"].window, ops["conv"].vector) == (3, False)
    assert w["default_batch_size"] == 8
    # an operator it cannot classify is kept and named with its share of the FLOPs
    assert ops["odd_one"].flops == 16
    (odd,) = w["unclassified"]
    assert odd["name"] == "odd_one" and odd["op_type"] == "Hardmax"
    assert odd["flops_share"] == pytest.approx(16 / sum(op.flops for op in ops.values()))
    assert any(m.startswith("odd_one (Hardmax)") and "% of FLOPs" in m for m in w["warnings"])
    assert _throughput(w, kind="inference", gpu="l4") > 0
    # and the user sees it in the result, not only in the workload
    r = estimate(Scenario(kind="inference", workload=f"onnx:{tmp_path / 'cnn.onnx'}", gpu="l4"), suggest=False)
    assert any("odd_one (Hardmax)" in m for m in r.warnings)


def test_onnx_missing_package_or_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.onnx").write_bytes(b"not a model")
    pytest.importorskip("onnx")
    with pytest.raises(HwsimError) as err:
        Scenario(workload="onnx:missing.onnx")
    assert err.value.field == "workload" and "no such file" in str(err.value)
    with pytest.raises(HwsimError) as err:
        Scenario(workload="onnx:x.onnx")
    assert err.value.field == "workload" and "\n" not in str(err.value)
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if it were not installed
    with pytest.raises(HwsimError) as err:
        Scenario(workload="onnx:x.onnx")
    assert "pip install onnx" in str(err.value)
