"""Text encoder-decoders from a Hugging Face config.json (T5, Flan-T5, BART, mBART, Marian): parameter counts within
1% of the published ones, contradictory configs refused in one line, and generation (kind=llm): one encoder pass
at the prefill, then decode steps whose attention reads the cached source and generated tokens."""

import json

import pytest

from jupyter_hwsim import HwsimError, Scenario, estimate, simulate
from jupyter_hwsim.core import catalog, workloads
from jupyter_hwsim.core.importers import from_hf_config, parameter_counts

# config.json values of each model (Hugging Face hub), trimmed to the keys the importer reads. T5: t5-small and
# t5-base as T5Config's defaults spell them (d_kv 64, relative_attention_num_buckets 32, feed_forward_proj relu,
# tied embeddings); t5-3b has d_kv 128 with 32 heads of a 1024 width (so 4096 inner dimensions), as the t5-3b
# config.json and keras-nlp's T5 presets (T5-3B: hidden_dim 1024, num_heads 32, intermediate_dim 16384) give it.
T5_SMALL = {
    "model_type": "t5",
    "d_model": 512,
    "d_kv": 64,
    "d_ff": 2048,
    "num_layers": 6,
    "num_heads": 8,
    "vocab_size": 32128,
    "relative_attention_num_buckets": 32,
    "feed_forward_proj": "relu",
    "n_positions": 512,
    "dropout_rate": 0.1,
}
T5_BASE = {**T5_SMALL, "d_model": 768, "d_ff": 3072, "num_layers": 12, "num_heads": 12}
T5_3B = {**T5_SMALL, "d_model": 1024, "d_kv": 128, "d_ff": 16384, "num_layers": 24, "num_heads": 32}
# google/flan-t5-base: the T5 v1.1 layout (gated-GELU feed-forward of d_ff 2048, untied head)
FLAN_T5_BASE = {
    **T5_BASE,
    "d_ff": 2048,
    "num_decoder_layers": 12,
    "feed_forward_proj": "gated-gelu",
    "is_gated_act": True,
    "dense_act_fn": "gelu_new",
    "tie_word_embeddings": False,
}
# facebook/bart-base and bart-large (BartLearnedPositionalEmbedding(1026, d_model) in both stacks)
BART_BASE = {
    "model_type": "bart",
    "d_model": 768,
    "encoder_layers": 6,
    "decoder_layers": 6,
    "encoder_attention_heads": 12,
    "decoder_attention_heads": 12,
    "encoder_ffn_dim": 3072,
    "decoder_ffn_dim": 3072,
    "vocab_size": 50265,
    "max_position_embeddings": 1024,
    "dropout": 0.1,
    "attention_dropout": 0.1,
}
BART_LARGE = {**BART_BASE, "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12}
BART_LARGE.update(encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096)
# Helsinki-NLP/opus-mt-en-de
OPUS_MT_EN_DE = {
    "model_type": "marian",
    "d_model": 512,
    "encoder_layers": 6,
    "decoder_layers": 6,
    "encoder_attention_heads": 8,
    "decoder_attention_heads": 8,
    "encoder_ffn_dim": 2048,
    "decoder_ffn_dim": 2048,
    "vocab_size": 58101,
    "decoder_vocab_size": 58101,
    "max_position_embeddings": 512,
    "share_encoder_decoder_embeddings": True,
    "scale_embedding": True,
    "activation_function": "swish",
    "dropout": 0.1,
    "attention_dropout": 0.0,
}

# Published parameter counts (every parameter of the PyTorch model; the importer counts weight matrices and
# embedding tables, not biases and norm scales, whose share is 0.02% for T5 and 0.1% for BART)
PUBLISHED = [
    # keras-nlp T5 presets (keras_nlp/models/t5/t5_presets.py): "6-layer T5 model with 60 million parameters",
    # params 60,506,624 (Raffel et al. 2020: "60 million"); the same figure as sum(p.numel()) of t5-small
    ("t5-small", T5_SMALL, 60_506_624),
    # keras-nlp T5 presets: "12-layer T5 model with 223 million parameters", params 222,903,552
    ("t5-base", T5_BASE, 222_903_552),
    # keras-nlp T5 presets: "24-layer T5 model with 2.85 billion parameters", params 2,851,598,336 (d_kv != d_model/heads)
    ("t5-3b", T5_3B, 2_851_598_336),
    # keras-hub T5 presets (keras_hub/src/models/t5/t5_presets.py) "t5_1.1_base": params 247,577,856; flan-t5-base
    # has the same configuration (the google/flan-t5-base model card: 248M)
    ("flan-t5-base", FLAN_T5_BASE, 247_577_856),
    # keras-nlp BART presets (keras_nlp/models/bart/bart_presets.py) "bart_base_en": params 139,417,344
    # (Hugging Face's BartModel: 139,420,416)
    ("bart-base", BART_BASE, 139_417_344),
    # keras-nlp BART presets "bart_large_en": params 406,287,360 ("406M")
    ("bart-large", BART_LARGE, 406_287_360),
    # the Hugging Face Marian documentation: "each model is about 298 MB on disk" (fp32: ~74.5M values, of which
    # 0.52M are the two fixed 512 x 512 sinusoidal position tables, stored but not trained: no parameters here)
    ("opus-mt-en-de", OPUS_MT_EN_DE, 74.5e6),
]


def _params(w) -> float:
    return parameter_counts(w)["total"]


def _ops(w, seq=None) -> dict:
    return {op.name: op for op in workloads.operators(w, seq)}


@pytest.mark.parametrize("label,config,published", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_count_is_the_published_one(label, config, published):
    w = from_hf_config(config, name=label)
    assert w["arch"] == "encoder-decoder" and w["hf_model_type"] == config["model_type"]
    p = _params(w)
    assert abs(p - published) / published < 0.01, (label, p)
    assert w["params_total"] == p


def test_t5_head_dim_gated_ffn_relative_bias_and_tied_head():
    h, heads, d = 1024, 32, 128
    w = from_hf_config(T5_3B)
    assert w["head_dim"] == d and w["kv_heads"] == heads  # d_kv, not d_model / num_heads = 32
    ops = _ops(w, 64)
    assert ops["encoder.layer0.qkv"].cols == 3 * heads * d and ops["decoder.layer0.attn.out"].params == heads * d * h
    assert (
        ops["decoder.layer3.cross.kv"].cols == 2 * heads * d and ops["decoder.layer3.cross.q"].params == h * heads * d
    )
    assert workloads.kv_values_per_token(w) == 2 * 24 * heads * d
    # a relative position bias table of 32 buckets x heads in each stack, no learned absolute positions
    for stack, n in (("encoder", 64), ("decoder", 64)):
        bias = ops[f"{stack}.position_bias"]
        assert bias.params == 32 * heads and bias.act_out == heads * n * n
    assert ops["encoder.embedding"].params == 0 and ops["embedding"].params == 0  # tied: the head holds the table
    assert ops["lm_head"].params == 32128 * h
    # T5 v1.1 / Flan-T5: gated-GELU (wi_0 and wi_1), its own head
    flan = from_hf_config(FLAN_T5_BASE)
    fops = _ops(flan, 16)
    assert flan["gated_ffn"] and "head_dim" not in flan and fops["encoder.layer0.ffn.up"].cols == 2 * 2048
    assert fops["embedding"].params == 32128 * 768 and fops["lm_head"].params == 32128 * 768
    assert _params({**flan, "tie_embeddings": True}) == _params(flan) - 32128 * 768
    # T5's one dropout_rate drops out attention weights and sub-layer outputs
    t5 = from_hf_config(T5_SMALL)
    assert (t5["attention_dropout"], t5["hidden_dropout"]) == (0.1, 0.1)
    assert t5["seq_len"] == 512 and from_hf_config({**T5_SMALL, "n_positions": None})["seq_len"] == 512


def test_bart_learned_positions_and_mbart():
    w = from_hf_config(BART_BASE)
    ops = _ops(w, 128)
    assert w["positions"] == w["source_positions"] == 1026  # max_position_embeddings + BART's offset of 2
    assert ops["encoder.embedding"].params == 1026 * 768 and ops["embedding"].params == 1026 * 768  # tied tokens
    assert "encoder.position_bias" not in ops and ops["encoder.layer0.attn.scores"].rows == 128
    assert (w["attention_dropout"], w["hidden_dropout"]) == (0.1, 0.1)
    # mBART reads the same keys (its extra final norms are not weights)
    mbart = from_hf_config({**BART_LARGE, "model_type": "mbart", "vocab_size": 250027})
    bart = from_hf_config({**BART_LARGE, "vocab_size": 250027})
    assert workloads.operators(mbart) == workloads.operators(bart)
    assert _params(w) == _params(from_hf_config({**BART_BASE, "model_type": "mbart"}))


def test_marian_sinusoidal_positions_and_tables():
    w = from_hf_config(OPUS_MT_EN_DE)
    ops = _ops(w, 32)
    assert "positions" not in w and ops["encoder.embedding"].params == 0 and ops["embedding"].params == 0
    assert ops["lm_head"].params == 58101 * 512 and w["seq_len"] == 512
    # separate source and target vocabularies: the encoder holds its own table
    split = from_hf_config({**OPUS_MT_EN_DE, "share_encoder_decoder_embeddings": False, "decoder_vocab_size": 60000})
    sops = _ops(split, 32)
    assert sops["encoder.embedding"].params == 58101 * 512 and sops["lm_head"].params == 60000 * 512
    assert _params(split) == _params(w) + 60000 * 512


def test_the_built_in_encoder_decoders_are_unchanged():
    """The builder's additions (source tables, position bias, target_len) leave Whisper and the Transformer alone."""
    assert _params("transformer-big") == 214_048_768 and _params("whisper-small") == 240_311_040
    for wid in ("transformer-big", "whisper-small"):
        ops = _ops(wid)
        assert not any(n.endswith("position_bias") for n in ops)
        assert ops.get("encoder.embedding") is None or ops["encoder.embedding"].params == 0


def test_an_imported_t5_trains_and_infers(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(T5_SMALL))
    for kind in ("training", "inference"):
        s = Scenario(kind=kind, workload=f"hf:{path}", gpu="a100-sxm-80gb", precision="bf16", steps=20)
        e, r = estimate(s, suggest=False), simulate(s, seed=0, suggest=False)
        assert e.throughput > 0 and r.throughput > 0 and not e.memory["oom"], kind
    # a custom entry of the same keys passes the catalogue's schema
    entry = {k: v for k, v in from_hf_config(T5_3B).items() if k not in ("sources", "warnings")}
    workloads.check_custom("workloads", entry)


BAD = [
    ("bart heads", {**BART_BASE, "encoder_attention_heads": 10, "decoder_attention_heads": 10},
     "workload.encoder_attention_heads", "a divisor of d_model=768"),
    ("bart widths", {**BART_BASE, "decoder_ffn_dim": 4096}, "workload.decoder_ffn_dim", "encoder_ffn_dim=3072"),
    ("bart positions", {**BART_BASE, "max_position_embeddings": None}, "workload.max_position_embeddings",
     "positive integer"),
    ("t5 heads", {**T5_SMALL, "d_kv": None, "num_heads": 7}, "workload.num_heads", "a divisor of d_model=512"),
    ("t5 d_kv", {**T5_SMALL, "d_kv": None, "num_heads": 16}, "workload.d_kv", "default 64 is not d_model/num_heads=32"),
    ("t5 d_kv zero", {**T5_SMALL, "d_kv": 0}, "workload.d_kv", "integer >= 1"),
    ("t5 proj", {**T5_SMALL, "feed_forward_proj": "gated-swiglu"}, "workload.feed_forward_proj", "gated-<activation>"),
    ("t5 proj form", {**T5_SMALL, "feed_forward_proj": "gelu-gated"}, "workload.feed_forward_proj", "relu, gated-gelu"),
    ("t5 proj type", {**T5_SMALL, "feed_forward_proj": 3}, "workload.feed_forward_proj", "gated-<activation>"),
    ("t5 gated", {**FLAN_T5_BASE, "is_gated_act": False}, "workload.is_gated_act", "True (feed_forward_proj='gated-gelu')"),
    ("t5 width", {**T5_SMALL, "d_model": None}, "workload.d_model", "positive integer"),
    ("t5 encoder only", {**T5_SMALL, "architectures": ["T5EncoderModel"]}, "workload.architectures", "encoder alone"),
    ("t5 dropout", {**T5_SMALL, "dropout_rate": 1.5}, "workload.dropout_rate", "probability"),
    ("marian vocab", {**OPUS_MT_EN_DE, "decoder_vocab_size": 60000}, "workload.decoder_vocab_size",
     "share_encoder_decoder_embeddings is true"),
    ("marian share", {**OPUS_MT_EN_DE, "share_encoder_decoder_embeddings": "yes"},
     "workload.share_encoder_decoder_embeddings", "true or false"),
]  # fmt: skip


@pytest.mark.parametrize("label,config,field,accepted", BAD, ids=[b[0] for b in BAD])
def test_a_contradictory_config_is_refused_in_one_line(tmp_path, label, config, field, accepted):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(HwsimError) as err:
        Scenario(workload=f"hf:{path}")
    assert err.value.field == field, str(err.value)
    assert accepted in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(f"{field}=")  # the key and its value, then what is accepted


# ---- generation (kind=llm) ------------------------------------------------------------------------------------


def test_the_prefill_runs_the_encoder_once_and_the_decoder_over_the_start_token():
    w, prompt = from_hf_config(T5_SMALL), 300
    pw, seq = workloads.generation_prefill(w, prompt)
    ops = _ops(pw, seq)
    assert ops["encoder.layer0.attn.scores"].rows == prompt  # the source is the prompt
    assert ops["decoder.layer0.attn.scores"].rows == 1 and ops["decoder.layer0.cross.scores"].cols == prompt
    assert ops["decoder.layer5.cross.kv"].flops == 2.0 * prompt * 512 * 2 * 512  # the cross keys and values, once
    assert _params(pw) == _params(w)
    # Whisper's source is its fixed audio: its prefill runs the decoder over the prompt tokens
    whisper = catalog.get("workloads", "whisper-small")
    assert workloads.generation_prefill(whisper, 4) == (whisper, 4) and workloads.fixed_source(whisper) == 1500
    assert workloads.generation_prefill(catalog.get("workloads", "llama-2-7b"), 9)[1] == 9


def test_a_decode_step_reads_the_decoder_weights_and_the_cached_keys_and_values():
    w = from_hf_config(T5_SMALL)
    per_token, per_ctx = workloads.decode_operators(w)
    names = {op.name for op in per_token}
    assert {"layer5.cross.q", "layer5.cross.out", "layer5.ln_cross"} <= names and "layer0.cross.kv" not in names
    assert not any(n.startswith("encoder") for n in names)  # the encoder ran once, at the prefill
    # per token: every weight but the encoder's, the cross-attention keys' and values' and the position bias tables
    full = _ops(w, 8)
    held_elsewhere = sum(
        op.params for n, op in full.items() if n.startswith("encoder") or n.endswith((".cross.kv", "position_bias"))
    )
    assert sum(op.params for op in per_token) == _params(w) - held_elsewhere
    # per cached token (a source token's cross K and V, or a generated token's self K and V): one read per decoder
    # layer, in two kernels (the self- and the cross-attention)
    assert len(per_ctx) == 3 * 6 and all(op.kernels == 2 for op in per_ctx)
    assert sum(op.flops for op in per_ctx if op.cls == "matmul") == 6 * 2 * (2.0 * 8 * 64)  # q.k and p.v


def test_generation_caches_the_source_and_pays_for_it_per_token():
    base = dict(kind="llm", gpu="a100-sxm-80gb", concurrency=4, output_tokens=64, steps=40)
    w = from_hf_config({**T5_SMALL, "n_positions": 2048})
    short = estimate(Scenario(workload=w, prompt_tokens=128, **base), suggest=False)
    long = estimate(Scenario(workload=w, prompt_tokens=1024, **base), suggest=False)
    kv_bytes = workloads.kv_values_per_token(w) * 2  # fp16 keys and values
    # the KV cache holds each sequence's source (cross) and generated (self) keys and values
    assert short.memory["kv_cache_gb"] == pytest.approx(4 * (128 + 64) * kv_bytes / 1e9)
    # every decode step reads the cached source: bytes per token grow by the cross keys and values of each source token
    grow = long.details["bytes_per_token_single_stream"] - short.details["bytes_per_token_single_stream"]
    assert grow >= (1024 - 128) * kv_bytes
    for r in (short, long, simulate(Scenario(workload=w, prompt_tokens=128, **base), seed=2, suggest=False)):
        assert r.throughput > 0 and not r.memory["oom"]
    attention = next(op for op in short.details["ops"] if op["name"] == "attention")
    assert attention["count"] == 6  # the decoder's layers
    # a model whose decode step is bound by its reads (not by kernel launches) takes longer over a longer source
    big = from_hf_config({**T5_3B, "n_positions": 2048})
    graphs = {**base, "engine": "cuda-graphs"}  # eager PyTorch would be bound by issuing its kernels
    a, b = (estimate(Scenario(workload=big, prompt_tokens=n, **graphs), suggest=False).details for n in (128, 1024))
    assert b["decode_step_ms"] > 1.1 * a["decode_step_ms"] and b["prefill_ms"] > 2 * a["prefill_ms"]
    # Whisper: the 1500 audio positions are cached beside the prompt's and the generated tokens
    s = Scenario(kind="llm", workload="whisper-small", gpu="a100-sxm-80gb", concurrency=2, prompt_tokens=4,
                 output_tokens=100, steps=20)  # fmt: skip
    e = estimate(s, suggest=False)
    kv = workloads.kv_values_per_token(catalog.get("workloads", "whisper-small")) * 2
    assert e.memory["kv_cache_gb"] == pytest.approx(2 * (1500 + 4 + 100) * kv / 1e9) and e.throughput > 0


def test_generation_lengths_are_checked_against_the_positions(tmp_path):
    path = tmp_path / "bart.json"
    path.write_text(json.dumps(BART_BASE))
    ok = Scenario(kind="llm", workload=f"hf:{path}", prompt_tokens=1024, output_tokens=1024)
    assert ok.prompt_tokens == 1024  # the source and the target each have 1024 positions
    for field, fields in (("prompt_tokens", dict(prompt_tokens=1025)), ("output_tokens", dict(output_tokens=1025))):
        with pytest.raises(HwsimError) as err:
            Scenario(kind="llm", workload=f"hf:{path}", **fields)
        assert err.value.field == field and "1024 positions" in str(err.value)
