"""A Hugging Face config.json -> a workload in the catalogue vocabulary (read from a local file, never fetched).

The workload is built by core/workloads like the built-in entries: the same operator list for the same
architecture. Weight matrices and embedding tables are counted; biases and norm scales are not (<0.2%), nor
fixed sinusoidal position tables (Whisper's encoder, Marian), which are not weights.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import HwsimError


@dataclass(frozen=True)
class _Family:
    kind: str  # decoder | encoder | vision | speech | seq2seq (a text encoder-decoder)
    gated: bool = False  # SwiGLU/GeGLU: gate and up projections
    rotary: bool = False  # rotary position embeddings on q and k
    tie: bool = False  # tie_word_embeddings when the config does not say (the config class's default)
    learned_positions: bool = False  # a learned position embedding table
    windowed: bool = False  # honours sliding_window
    moe: bool = False  # num_local_experts / num_experts_per_tok


FAMILIES = {
    "llama": _Family("decoder", gated=True, rotary=True),
    "mistral": _Family("decoder", gated=True, rotary=True, windowed=True),
    "mixtral": _Family("decoder", gated=True, rotary=True, windowed=True, moe=True),
    "qwen2": _Family("decoder", gated=True, rotary=True, windowed=True),
    "gemma": _Family("decoder", gated=True, rotary=True, tie=True),
    "phi": _Family("decoder", rotary=True),
    "phi3": _Family("decoder", gated=True, rotary=True, windowed=True),
    "gpt2": _Family("decoder", tie=True, learned_positions=True),
    "gpt_neox": _Family("decoder", rotary=True),
    "bert": _Family("encoder", tie=True, learned_positions=True),
    "roberta": _Family("encoder", tie=True, learned_positions=True),
    "vit": _Family("vision"),
    "whisper": _Family("speech"),  # an encoder-decoder: _whisper reads its own keys
    # text encoder-decoders: _seq2seq reads their keys
    "t5": _Family("seq2seq", tie=True),  # relative position bias; T5 v1.1 and Flan-T5 untie and gate
    "bart": _Family("seq2seq", tie=True, learned_positions=True),
    "mbart": _Family("seq2seq", tie=True, learned_positions=True),
    "marian": _Family("seq2seq", tie=True),  # sinusoidal positions
}
_ACCEPTED = "one of " + ", ".join(sorted(FAMILIES))

# config keys by role, first present wins (gpt2 spells them n_embd, n_layer, ...)
_KEYS = {
    "hidden": ("hidden_size", "n_embd"),
    "layers": ("num_hidden_layers", "n_layer"),
    "heads": ("num_attention_heads", "n_head"),
    "ffn": ("intermediate_size", "n_inner"),
    "vocab": ("vocab_size",),
    "seq_len": ("max_position_embeddings", "n_positions", "n_ctx"),
}


def read_json(path, source=None) -> dict:
    """A local JSON object; a missing file or bad JSON is one HwsimError line naming `workload`."""
    spec = source or str(path)
    p = Path(path).expanduser()
    if p.is_dir() and (p / "config.json").is_file():
        p = p / "config.json"
    if not p.is_file():
        raise HwsimError("workload", spec, "hf:<path of a local config.json>", f"no such file: {p.absolute()}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise HwsimError(
            "workload", spec, "a JSON file (a Hugging Face config.json)", f"{e.msg} at line {e.lineno}"
        ) from None
    except RecursionError:
        raise HwsimError("workload", spec, "a JSON file of a few levels (a Hugging Face config.json)") from None
    except (OSError, ValueError) as e:  # not UTF-8; an integer of more digits than Python reads
        raise HwsimError(
            "workload", spec, "a readable JSON file (a Hugging Face config.json)", type(e).__name__
        ) from None
    if not isinstance(data, dict):
        raise HwsimError("workload", spec, "a JSON object of config keys (a Hugging Face config.json)")
    return data


def _int(cfg: dict, key: str, lo: int = 1):
    value = cfg[key]
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())  # not NaN nor infinity
    if isinstance(value, bool) or not whole or value < lo:
        raise HwsimError(f"workload.{key}", value, f"an integer >= {lo}")
    return int(value)


def _field(cfg: dict, role: str, default=None):
    """(config key, positive int) of a role; a missing required key is refused by name."""
    for key in _KEYS[role]:
        if cfg.get(key) is not None:
            return key, _int(cfg, key)
    if default is not None:
        return None, default
    raise HwsimError(f"workload.{_KEYS[role][0]}", None, "a positive integer in the config")


# the config keys of each family's dropout probabilities (BERT/RoBERTa/ViT, GPT-2/Phi, Llama/Qwen2/GPT-NeoX)
DROPOUT_KEYS = {
    "attention_dropout": ("attention_probs_dropout_prob", "attn_pdrop", "attention_dropout"),
    "hidden_dropout": ("hidden_dropout_prob", "resid_pdrop", "hidden_dropout"),
}


def from_hf_config(path_or_dict, name=None, source=None) -> dict:
    """A workload dict (catalogue vocabulary) from a Hugging Face config.json path or its dict.

    Covers decoder LLMs (llama, mistral, qwen2, gemma, phi, phi3, gpt2, gpt_neox), mixtral-style mixtures of
    experts, encoders (bert, roberta), vit and the encoder-decoders whisper, t5 (v1.0, v1.1, Flan-T5), bart,
    mbart and marian; grouped- and multi-query attention (num_key_value_heads), head_dim (T5's d_kv),
    sliding_window and tie_word_embeddings. Anything else is refused with a HwsimError.
    """
    if isinstance(path_or_dict, dict):
        cfg, spec = path_or_dict, source or "config dict"
    elif isinstance(path_or_dict, (str, os.PathLike)):
        path = str(path_or_dict)
        if path.lower().startswith("hf:"):
            path = path[3:].strip()
        cfg, spec = read_json(path, source), source or str(path_or_dict)
    else:
        raise HwsimError("workload", path_or_dict, "a path of a Hugging Face config.json or its dict")
    mt = cfg.get("model_type")
    fam = FAMILIES.get(mt) if isinstance(mt, str) else None
    if fam is None:
        raise HwsimError("workload.model_type", mt, _ACCEPTED, f"in {spec}")
    if fam.kind == "speech":
        return _whisper(cfg, name, spec)
    if fam.kind == "seq2seq":
        return _seq2seq(cfg, str(mt), fam, name, spec)
    warnings: list[str] = []
    (hk, h), (_, layers), (ak, heads) = _field(cfg, "hidden"), _field(cfg, "layers"), _field(cfg, "heads")
    kv = _int(cfg, "num_key_value_heads") if cfg.get("num_key_value_heads") is not None else heads
    if heads % kv:
        raise HwsimError("workload.num_key_value_heads", kv, f"a divisor of {ak}={heads}")
    head_dim = _int(cfg, "head_dim") if cfg.get("head_dim") is not None else None
    if head_dim is None and h % heads:
        raise HwsimError(f"workload.{ak}", heads, f"a divisor of {hk}={h} (or a head_dim in the config)")
    _, ffn = _field(cfg, "ffn", default=4 * h if mt == "gpt2" else None)
    w: dict = {"name": name or cfg.get("_name_or_path") or f"{mt} (Hugging Face config)", "hf_model_type": mt}
    w["layers"], w["hidden"], w["heads"], w["kv_heads"], w["ffn"] = layers, h, heads, kv, ffn
    if head_dim is not None and head_dim != h // heads:
        w["head_dim"] = head_dim
    sources = {"layers": f"{spec}: model_type {mt}"}
    _dropouts(cfg, DROPOUT_KEYS, w, sources, spec)
    if fam.kind == "vision":
        return _vision(cfg, w, sources, spec)
    _, vocab = _field(cfg, "vocab")
    _, seq = _field(cfg, "seq_len")
    if mt == "roberta":
        seq -= 2  # position ids start after the padding index
    w.update(arch="transformer", vocab=vocab, seq_len=seq, causal=fam.kind == "decoder", rotary=fam.rotary)
    if fam.gated:
        w["gated_ffn"] = True
    sources["seq_len"] = f"{spec}: the context (max_position_embeddings)"
    if bool(cfg.get("tie_word_embeddings", fam.tie)):
        w["tie_embeddings"] = True
    if fam.learned_positions:
        types = _int(cfg, "type_vocab_size", 0) if cfg.get("type_vocab_size") is not None else 0
        w["positions"] = seq + (2 if mt == "roberta" else 0) + types
    if fam.kind == "encoder":
        _task_head(cfg, w, sources, spec)
    window = _window(cfg, layers) if fam.windowed else None
    if window:
        w["sliding_window"] = window
    if fam.moe or cfg.get("num_local_experts") is not None:
        if not fam.moe:
            raise HwsimError("workload.num_local_experts", cfg["num_local_experts"], f"absent for model_type {mt}")
        for key in ("num_local_experts", "num_experts_per_tok"):
            if cfg.get(key) is None:
                raise HwsimError(f"workload.{key}", None, "a positive integer (a mixture of experts)")
        w["experts"], w["experts_per_token"] = _int(cfg, "num_local_experts"), _int(cfg, "num_experts_per_tok")
        if w["experts_per_token"] > w["experts"]:
            raise HwsimError("workload.num_experts_per_tok", w["experts_per_token"], "<= num_local_experts")
    if cfg.get("quantization_config"):
        warnings.append("the config's quantization_config is ignored: the scenario's precision sets the weights")
    total = parameter_counts(w)["total"]
    w.update(
        default_batch_size=1 if total > 1e9 else 16 if fam.kind == "decoder" else 64,
        input_bytes_per_sample=seq * 8,
        preprocess_ms_per_sample=0.01,
        dataset_gb=100,
    )
    sources.update(
        default_batch_size="assumption: 1 sequence above 1B parameters, else 16 (decoders) or 64 (encoders)",
        input_bytes_per_sample=f"derived: {seq} token ids x 8 bytes (int64)",
        preprocess_ms_per_sample="assumption: pre-tokenized shards, collate only",
        dataset_gb="assumption: a 100 GB corpus",
    )
    return _finish(w, sources, warnings, spec)


def _task_head(cfg: dict, w: dict, sources: dict, spec: str) -> None:
    """An encoder's head from the config's architectures: a question-answering model scores a span start and end
    per position, a token classifier its labels, a bare model or a sequence classifier (one pooled position) none
    per position; a masked-LM or pre-training model (or no architectures) keeps the vocabulary head."""
    archs = cfg.get("architectures")
    arch = next((a for a in archs if isinstance(a, str)), "") if isinstance(archs, list) else ""
    labels = cfg.get("id2label")
    if isinstance(labels, dict) and labels:
        n = len(labels)
    else:  # transformers' default: two labels
        n = _int(cfg, "num_labels") if cfg.get("num_labels") is not None else 2
    task = arch[arch.find("For") :] if "For" in arch else arch[-len("Model") :]  # BertForQuestionAnswering, BertModel
    heads = {"ForQuestionAnswering": 2, "ForTokenClassification": n, "ForSequenceClassification": 0, "Model": 0}
    outputs = heads.get(task)
    if outputs is not None:
        w["head_outputs"] = outputs
        sources["head_outputs"] = f"{spec}: architectures {arch}"


def _dropouts(cfg: dict, keys: dict, w: dict, sources: dict, spec: str) -> None:
    """The dropout probabilities of the config (keys: field -> its config keys, first present wins) into w: passes
    of their own in a training step."""
    for field, names in keys.items():
        key = next((k for k in names if cfg.get(k) is not None), None)
        if key is not None:
            p = cfg[key]
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
                raise HwsimError(f"workload.{key}", p, "a probability >= 0 and < 1", f"in {spec}")
            if p > 0:
                w[field] = float(p)
                sources[field] = f"{spec}: {key}"


def _window(cfg: dict, layers: int) -> int | None:
    """The sliding window when every layer uses one; refused when layers differ (not modelled)."""
    window = cfg.get("sliding_window")
    if window is None or cfg.get("use_sliding_window") is False:
        return None
    window = _int(cfg, "sliding_window")
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        sliding = sum(t == "sliding_attention" for t in types)
        if 0 < sliding < len(types):
            raise HwsimError("workload.layer_types", f"{sliding} of {len(types)} sliding", "all or no sliding layers")
        return window if sliding else None
    if cfg.get("use_sliding_window") and cfg.get("max_window_layers") is not None:
        first = _int(cfg, "max_window_layers", 0)  # layers from this index on use the window
        if 0 < first < layers:
            raise HwsimError("workload.max_window_layers", first, f"0 or >= num_hidden_layers={layers}")
        return window if first == 0 else None
    return window


def _vision(cfg: dict, w: dict, sources: dict, spec: str) -> dict:
    if cfg.get("num_channels", 3) != 3:
        raise HwsimError("workload.num_channels", cfg["num_channels"], "3 (RGB images)")
    for key in ("image_size", "patch_size"):
        if cfg.get(key) is None:
            raise HwsimError(f"workload.{key}", None, "a positive integer in the config")
    px, patch = _int(cfg, "image_size"), _int(cfg, "patch_size")
    if px % patch:
        raise HwsimError("workload.patch_size", patch, f"a divisor of image_size={px}")
    labels = cfg.get("id2label")
    if isinstance(labels, dict) and labels:
        classes = len(labels)
    elif cfg.get("num_labels") is not None:
        classes = _int(cfg, "num_labels")
    else:
        classes = 1000
        sources["num_classes"] = "assumption: a 1000-class head (the config has no id2label)"
    w.update(arch="vit", patch=patch, image_px=px, num_classes=classes)
    w.update(default_batch_size=256, input_bytes_per_sample=108000, preprocess_ms_per_sample=2.75, dataset_gb=138)
    sources.update(
        input_bytes_per_sample="derived: ILSVRC2012 train set 138 GB / 1,281,167 images",
        preprocess_ms_per_sample="derived: ref:B4-08 1.32 ms per 300x300 JPEG x (500x375)/(300x300)",
        default_batch_size="assumption: as the built-in vit-b16",
        dataset_gb="assumption: ImageNet (ILSVRC2012) as the built-in vit-b16",
    )
    return _finish(w, sources, [], spec)


_WHISPER = ("d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads",
            "encoder_ffn_dim", "decoder_ffn_dim", "vocab_size", "num_mel_bins", "max_source_positions",
            "max_target_positions")  # fmt: skip


def _one_width(v: dict) -> None:
    """The encoder-decoder builder's one width for both stacks: a decoder of other heads or feed-forward width is
    refused."""
    for enc, dec in (("encoder_attention_heads", "decoder_attention_heads"), ("encoder_ffn_dim", "decoder_ffn_dim")):
        if v[enc] != v[dec]:
            raise HwsimError(f"workload.{dec}", v[dec], f"{enc}={v[enc]} (one width for both stacks)")


def _whisper(cfg: dict, name, spec: str) -> dict:
    """Whisper (model_type whisper): an encoder over log-mel frames (a stem of two 1-D convolutions, the second of
    stride 2, to max_source_positions positions) and a decoder with cross-attention, learned positions
    (max_target_positions) and tied token embeddings: the catalogue's arch "encoder-decoder"."""
    for key in _WHISPER:
        if cfg.get(key) is None:
            raise HwsimError(f"workload.{key}", None, "a positive integer in the config")
    v = {key: _int(cfg, key) for key in _WHISPER}
    _one_width(v)
    h, heads, t = v["d_model"], v["encoder_attention_heads"], v["max_source_positions"]
    if h % heads:
        raise HwsimError("workload.encoder_attention_heads", heads, f"a divisor of d_model={h}")
    w: dict = {"name": name or cfg.get("_name_or_path") or "whisper (Hugging Face config)", "hf_model_type": "whisper"}
    w.update(arch="encoder-decoder", encoder_layers=v["encoder_layers"], decoder_layers=v["decoder_layers"])
    w.update(hidden=h, heads=heads, kv_heads=heads, ffn=v["encoder_ffn_dim"], vocab=v["vocab_size"])
    w.update(mel_bins=v["num_mel_bins"], source_len=t, positions=v["max_target_positions"])
    w["seq_len"] = v["max_target_positions"]
    if bool(cfg.get("tie_word_embeddings", True)):
        w["tie_embeddings"] = True
    pcm = 2 * t * 160 * 2  # 2 frames a position, 10 ms (160 samples at 16 kHz) a frame, 16-bit samples
    w.update(default_batch_size=16, input_bytes_per_sample=pcm, preprocess_ms_per_sample=39.55, dataset_gb=110.6)
    sources = {
        "encoder_layers": f"{spec}: model_type whisper",
        "seq_len": f"{spec}: the decoder's context (max_target_positions), an upper bound of a transcript",
        "default_batch_size": "assumption: 16 segments a GPU, as the catalogue's whisper-small",
        "input_bytes_per_sample": f"derived: {2 * t} frames of 10 ms of 16 kHz 16-bit PCM",
        "preprocess_ms_per_sample": "the catalogue's whisper-small: log-mel features of a 30 s segment on CPU, "
        "39.55 ms (https://github.com/SYSTRAN/faster-whisper/pull/1106)",
        "dataset_gb": "assumption: LibriSpeech's 960 hours as 16 kHz 16-bit PCM, as the catalogue's whisper-small",
    }
    return _finish(w, sources, [], spec)


# T5's feed_forward_proj: an activation, or "gated-" and one (T5Config reads "{ACT_FN}" or "gated-{ACT_FN}"; an
# activation is one FLOP count here, so any of transformers' usual names is accepted)
_T5_ACTIVATIONS = ("gelu", "gelu_fast", "gelu_new", "gelu_pytorch_tanh", "quick_gelu", "relu", "silu", "swish")
_T5_HEAD_DIM = 64  # T5Config's default d_kv
T5_SEQ_LEN = 512  # T5's pre-training input length (Raffel et al. 2020 section 3.1.2), where n_positions is absent
# the dropout keys of each family: T5 drops out attention weights and sub-layer outputs at one dropout_rate
_SEQ2SEQ_DROPOUT = {
    "t5": {"attention_dropout": ("dropout_rate",), "hidden_dropout": ("dropout_rate",)},
    "bart": {"attention_dropout": ("attention_dropout",), "hidden_dropout": ("dropout",)},
}


def _need(cfg: dict, key: str) -> int:
    if cfg.get(key) is None:
        raise HwsimError(f"workload.{key}", None, "a positive integer in the config")
    return _int(cfg, key)


def _seq2seq(cfg: dict, mt: str, fam: _Family, name, spec: str) -> dict:
    """A text encoder-decoder, the catalogue's arch "encoder-decoder": an encoder over the source tokens and a
    decoder with cross-attention, one token table shared by both (and by the head where tie_word_embeddings).

    t5: one width for both stacks (d_model, num_heads, d_ff, num_layers, num_decoder_layers), heads of d_kv
    (which may differ from d_model / num_heads), a ReLU or gated (feed_forward_proj "gated-gelu": T5 v1.1,
    Flan-T5) feed-forward network, a relative position bias table of relative_attention_num_buckets x num_heads
    in each stack's first layer, no learned absolute positions. bart, mbart: the encoder's and the decoder's
    learned positions, max_position_embeddings + 2 rows each (BART's offset of 2). marian: sinusoidal positions
    (no parameters), an encoder table of its own when share_encoder_decoder_embeddings is false."""
    h = _need(cfg, "d_model")
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and all(isinstance(a, str) and a.endswith("EncoderModel") for a in archs):
        raise HwsimError(
            "workload.architectures", archs, f"a {mt} encoder-decoder (an encoder alone is not modelled)", f"in {spec}"
        )
    w: dict = {"name": name or cfg.get("_name_or_path") or f"{mt} (Hugging Face config)", "hf_model_type": mt}
    sources = {"encoder_layers": f"{spec}: model_type {mt}"}
    if mt == "t5":
        enc, heads, ffn = _need(cfg, "num_layers"), _need(cfg, "num_heads"), _need(cfg, "d_ff")
        dec = _int(cfg, "num_decoder_layers") if cfg.get("num_decoder_layers") is not None else enc
        head_dim = _t5_head_dim(cfg, h, heads)
        gated = _t5_gated(cfg)
        key = "relative_attention_num_buckets"
        buckets = _need(cfg, key) if cfg.get(key) is not None else 32  # T5Config's default
        seq = T5_SEQ_LEN if cfg.get("n_positions") is None else _need(cfg, "n_positions")
        sources["seq_len"] = f"{spec}: n_positions, the source's and the target's tokens (relative positions: no limit)"
        if cfg.get("n_positions") is None:
            sources["seq_len"] = "assumption: 512 source and target tokens, T5's pre-training length"
    else:
        v = {key: _need(cfg, key) for key in _BART}
        _one_width(v)
        enc, dec = v["encoder_layers"], v["decoder_layers"]
        heads, ffn = v["encoder_attention_heads"], v["encoder_ffn_dim"]
        if h % heads:
            raise HwsimError("workload.encoder_attention_heads", heads, f"a divisor of d_model={h}")
        head_dim, gated, buckets, seq = h // heads, False, 0, v["max_position_embeddings"]
        sources["seq_len"] = f"{spec}: max_position_embeddings, the source's and the target's tokens"
    w.update(arch="encoder-decoder", encoder_layers=enc, decoder_layers=dec, hidden=h, heads=heads, kv_heads=heads)
    w.update(ffn=ffn, vocab=_need(cfg, "vocab_size"), seq_len=seq)
    if head_dim != h // heads:
        w["head_dim"] = head_dim
    if gated:
        w["gated_ffn"] = True
    if buckets:
        w["position_buckets"] = buckets
    if fam.learned_positions:  # BartLearnedPositionalEmbedding: max_position_embeddings + 2 rows
        w["positions"] = w["source_positions"] = seq + 2
    if mt == "marian":
        _marian_vocab(cfg, w)
    if bool(cfg.get("tie_word_embeddings", fam.tie)):
        w["tie_embeddings"] = True
    _dropouts(cfg, _SEQ2SEQ_DROPOUT["t5" if mt == "t5" else "bart"], w, sources, spec)
    total = parameter_counts(w)["total"]
    w.update(default_batch_size=1 if total > 1e9 else 16, input_bytes_per_sample=2 * seq * 8)
    w.update(preprocess_ms_per_sample=0.01, dataset_gb=100)
    sources.update(
        default_batch_size="assumption: 1 sequence pair above 1B parameters, else 16",
        input_bytes_per_sample=f"derived: {seq} source + {seq} target token ids x 8 bytes (int64)",
        preprocess_ms_per_sample="assumption: pre-tokenized shards, collate only",
        dataset_gb="assumption: a 100 GB corpus",
    )
    return _finish(w, sources, [], spec)


_BART = ("encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads", "encoder_ffn_dim",
         "decoder_ffn_dim", "max_position_embeddings")  # fmt: skip


def _t5_head_dim(cfg: dict, h: int, heads: int) -> int:
    """d_kv, or, where the config gives none, T5Config's default 64 when it is d_model / num_heads (else the config
    says two things)."""
    if cfg.get("d_kv") is not None:
        return _int(cfg, "d_kv")
    if h % heads:
        raise HwsimError("workload.num_heads", heads, f"a divisor of d_model={h} (or a d_kv in the config)")
    if h // heads != _T5_HEAD_DIM:
        raise HwsimError(
            "workload.d_kv",
            None,
            f"a positive integer in the config (T5Config's default {_T5_HEAD_DIM} is not "
            f"d_model/num_heads={h // heads})",
        )
    return _T5_HEAD_DIM


def _t5_gated(cfg: dict) -> bool:
    """True for a gated feed-forward network (feed_forward_proj "gated-{activation}")."""
    proj = cfg.get("feed_forward_proj", "relu")
    parts = proj.split("-") if isinstance(proj, str) else []
    gated = len(parts) == 2 and parts[0] == "gated"
    if not parts or parts[-1] not in _T5_ACTIVATIONS or not (len(parts) == 1 or gated):
        raise HwsimError(
            "workload.feed_forward_proj",
            proj,
            "an activation or gated-<activation>, the activation one of "
            + ", ".join(_T5_ACTIVATIONS)
            + " (e.g. relu, gated-gelu)",
        )
    said = cfg.get("is_gated_act")
    if said is not None and said is not gated:
        raise HwsimError("workload.is_gated_act", said, f"{gated} (feed_forward_proj={proj!r})")
    return gated


def _marian_vocab(cfg: dict, w: dict) -> None:
    """Marian's tables: one shared by both stacks (share_encoder_decoder_embeddings, the default: vocab_size rows),
    or the encoder's vocab_size rows and the decoder's decoder_vocab_size."""
    shared = cfg.get("share_encoder_decoder_embeddings", True)
    if not isinstance(shared, bool):
        raise HwsimError("workload.share_encoder_decoder_embeddings", shared, "true or false")
    dec = _int(cfg, "decoder_vocab_size") if cfg.get("decoder_vocab_size") is not None else w["vocab"]
    if shared and dec != w["vocab"]:
        raise HwsimError(
            "workload.decoder_vocab_size", dec, f"vocab_size={w['vocab']} (share_encoder_decoder_embeddings is true)"
        )
    if not shared:
        w["source_vocab"], w["vocab"] = w["vocab"], dec


def _finish(w: dict, sources: dict, warnings: list, spec: str) -> dict:
    counts = parameter_counts(w)
    w["params_total"], w["params_active"] = counts["total"], counts["active"]
    sources["params_total"] = "derived: weight matrices and embedding tables of the operator list (no biases)"
    w["sources"], w["warnings"] = sources, warnings
    return w


def parameter_counts(workload) -> dict:
    """{"total": parameters held, "active": parameters one token uses} (they differ for a mixture of experts)."""
    from ..workloads import operators, resolve

    w = resolve(workload)
    ops = operators(w, 1)
    total = float(sum(op.params for op in ops))
    idle = 0.0
    if w.get("experts"):
        share = 1.0 - w["experts_per_token"] / w["experts"]
        idle = sum(op.params * share for op in ops if op.name.endswith((".ffn.up", ".ffn.down", ".ffn.gate")))
    return {"total": total, "active": total - idle}
