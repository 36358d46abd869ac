"""The passes a naive attention and a training step make beyond the matmuls: the scores' scale and mask, dropout
(training only) and batch normalization in training, each present or fused away as the engine and the step say."""

import dataclasses

import pytest

from jupyter_hwsim import Scenario
from jupyter_hwsim.core import catalog, costs, workloads
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


NAIVE_EAGER = {
    **{k: v for k, v in catalog.get("engines", "pytorch-eager").items() if k not in ("id", "aliases", "sources")},
    "attention": "naive",
}


def _step(engine):
    s = Scenario(kind="inference", workload="bert-large", precision="fp16", batch_size=8, seq_len=384, engine=engine)
    return costs.step_cost(costs.resolve(s))


def test_a_workload_without_dropout_has_no_dropout_pass():
    ops = workloads.operators("llama-2-7b", 128)
    assert not any(op.training for op in ops)


@pytest.mark.parametrize(
    "engine, fused",
    [("pytorch-eager", True), ("tensorflow", False), ("torch-compile", True), ("tensorrt", True), ("xla", True),
     (NAIVE_EAGER, False)],
)  # fmt: skip
def test_the_scale_and_mask_pass_goes_where_the_engine_fuses_softmax_or_elementwise(engine, fused):
    ops = _ops(kind="inference", workload="bert-large", precision="fp16", batch_size=8, engine=engine)
    assert (ops["layer0.attn.mask"] == 0) == fused


def test_a_fused_attention_keeps_its_scores_on_chip():
    """PyTorch 2's scaled_dot_product_attention (engines.toml attention = fused): no softmax or mask pass, no score
    matrix written or read, and the two matmuls one kernel; the same model written out naively pays all three."""
    fused = _step(engine="pytorch-eager")
    naive = _step(engine=NAIVE_EAGER)
    scores = 16 * 384 * 384 * 8 * 2  # heads x seq x seq x batch, 2-byte values
    layers = 24
    # the naive attention moves the scores through HBM: written, read and written by softmax (+mask), read
    assert naive.hbm_bytes - fused.hbm_bytes > layers * 4 * scores
    assert naive.kernels - fused.kernels >= layers * 3  # softmax, mask and the second matmul's own kernel
    assert fused.flops == pytest.approx(naive.flops, rel=0.01)  # the same math


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "mlc-llm"])
def test_serving_engines_prefill_with_a_fused_attention(engine):
    """FlashAttention (vLLM), FlashInfer (SGLang), TensorRT-LLM's context FMHA and MLC's generated attention keep a
    prompt's scores on chip: a 2048-token prefill moves no seq x seq matrix, where the same engine with a naive
    attention (its softmax fused) writes it from one matmul and reads it into the next."""
    entry = {k: v for k, v in catalog.get("engines", engine).items() if k not in ("id", "aliases", "sources")}

    def prefill(engine):
        s = Scenario(kind="llm", gpu="h100-sxm", workload="llama-2-7b", precision="fp16", engine=engine)
        return costs.step_cost(costs.resolve(s.replace(prompt_tokens=2048)), batch=1, seq=2048)

    scores = 32 * 32 * 2048 * 2048 * 2  # layers x heads x seq x seq, 2-byte values
    fused, naive = prefill(engine), prefill({**entry, "attention": "naive"})
    assert naive.hbm_bytes - fused.hbm_bytes == pytest.approx(2 * scores, rel=0.01)
    # the fused causal kernel computes the 16 x 17 / 2 blocks of 128 x 128 at or below the diagonal: 17/32 of them
    causal = sum(op.flops for op in workloads.operators("llama-2-7b", 2048) if op.causal_share < 1)
    assert naive.flops - fused.flops == pytest.approx(causal * (1 - 17 / 32), rel=1e-9)


@pytest.mark.parametrize(
    "s, t, share",
    [(2048, 2048, 17 / 32), (128, 128, 1.0), (100, 100, 1.0), (28650, 28650, 225 / 448), (8192, 4096, 1.0)],
)
def test_a_fused_causal_attention_computes_the_blocks_at_or_below_the_diagonal(s, t, share):
    """FlashAttention skips the (query, key) blocks above the diagonal and computes the diagonal's whole: n(n + 1)/2
    of n x n blocks of 128; a sliding window (t < s) counts only the keys it sees already."""
    assert workloads.causal_share(s, t) == pytest.approx(share, rel=1e-12)


def test_only_a_causal_models_attention_carries_the_share():
    assert {op.causal_share for op in workloads.operators("vit-b16")} == {1.0}
    assert {op.causal_share for op in workloads.operators("bert-base", 512)} == {1.0}
    llama = [op for op in workloads.operators("llama-2-7b", 512) if op.causal_share < 1]
    assert {op.name.split(".", 1)[1] for op in llama} == {"attn.scores", "attn.mask", "attn.softmax", "attn.context"}


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


def test_autocast_runs_softmax_and_norms_in_fp32_with_a_cast_each_side():
    """Under autocast (16-bit math in PyTorch eager), softmax and layer norm run in fp32 (engines.toml autocast_fp32):
    each reads and writes 4-byte values and a cast kernel converts each side: five times its 16-bit bytes."""
    no_casts = {**NAIVE_EAGER, "autocast_fp32": []}
    with_casts = _ops(kind="training", workload="bert-large", precision="fp16", batch_size=8, engine=NAIVE_EAGER)
    without = _ops(kind="training", workload="bert-large", precision="fp16", batch_size=8, engine=no_casts)
    for name in ("layer0.attn.softmax", "layer0.ln1"):
        assert with_casts[name] == pytest.approx(5 * without[name])
    assert with_casts["layer0.ffn.up"] == without["layer0.ffn.up"]
    # fp32 math has nothing to cast, and a language model is cast to 16 bits whole (no autocast)
    fp32 = _ops(kind="training", workload="bert-large", precision="fp32", batch_size=8, engine=NAIVE_EAGER)
    fp32_plain = _ops(kind="training", workload="bert-large", precision="fp32", batch_size=8, engine=no_casts)
    assert fp32["layer0.ln1"] == fp32_plain["layer0.ln1"]
    llm = costs.resolve(Scenario(kind="llm", workload="llama-2-7b", engine=NAIVE_EAGER, precision="fp16"))
    assert not costs.autocast_fp32_classes(llm)


def test_a_compiled_graph_cannot_fuse_into_library_calls():
    """Inductor runs matmuls as cuBLAS calls it cannot fuse into (engines.toml epilogue_fusion = false): a GELU
    between two linears keeps its pass; a residual add beside a layer norm fuses into it. An engine that fuses
    epilogues (TensorRT) fuses both."""
    compiled = _ops(kind="inference", workload="vit-b16", precision="fp16", batch_size=64, engine="torch-compile")
    trt = _ops(kind="inference", workload="vit-b16", precision="fp16", batch_size=64, engine="tensorrt")
    assert compiled["layer0.ffn.act"] > 0 and compiled["layer0.add1"] == 0
    assert trt["layer0.ffn.act"] == 0 and trt["layer0.add1"] == 0
    # a run of pointwise operators between two library calls runs as one kernel, priced as its largest operator
    m = costs.resolve(Scenario(kind="inference", workload="convnext-t", engine="torch-compile", precision="fp16"))
    present = list(workloads.operators(m.workload, m.seq))
    names = [present[i].name for i in costs.stranded_between_matmuls(m, present, costs.fused_classes(m))]
    assert "stage1.0.act" in names and "stage1.0.add" in names and "stage1.0.layer_scale" not in names


def test_an_embedding_lookup_reads_its_tokens_rows_and_its_backward_writes_the_table(monkeypatch):
    """A forward pass gathers one row of the token table per token; it does not read the table (BERT-large for
    SQuAD, whose embedding holds the table: 31.8 M values, of which 8 x 128 tokens read 1.0 M). Training's
    backward writes the whole table's dense gradient: had it touched only the rows, the step would move
    (table - rows) x its backward factor x 2 bytes less."""
    w = {**catalog.get("workloads", "bert-large"), "head_outputs": 2}
    emb = next(op for op in workloads.operators(w, 128) if op.gather)
    rows = 8 * 128 * 1024
    assert emb.params > 30e6 and emb.act_out == 128 * 1024
    assert workloads.weight_share(emb, 8) == pytest.approx(rows / emb.params)
    infer = _ops(kind="inference", workload=w, precision="fp16", batch_size=8, seq_len=128)
    # its output written and its rows read, 2 bytes each (the token ids are counted as 2-byte values too)
    assert infer["embedding"] == pytest.approx(2 * (8 * 128 + 2 * rows), rel=1e-6)
    s = Scenario(kind="training", workload=w, precision="fp16", batch_size=8, seq_len=128, gpu="a100")

    def step_bytes():
        costs._STEP_CACHE.clear()
        return costs.step_cost(costs.resolve(s)).hbm_bytes

    dense = step_bytes()
    share = workloads.weight_share
    monkeypatch.setattr(workloads, "weight_share", lambda op, b=1.0: share(dataclasses.replace(op, gather=True), b)
                        if op.name == "embedding" else share(op, b))  # fmt: skip
    rows_only = step_bytes()
    costs._STEP_CACHE.clear()
    assert dense - rows_only == pytest.approx(costs.BACKWARD_FLOPS_FACTOR * (emb.params - rows) * 2, rel=1e-6)
