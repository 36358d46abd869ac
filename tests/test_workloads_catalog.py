"""The grown workload catalogue (issue 26): deeper ResNets, ViT-S and ViT-L, EfficientNet-B0/B4, ConvNeXt-T and
Qwen2.5-7B, each against its published parameter count and multiply-adds, and each run end to end."""

import math
from pathlib import Path

import pytest

from jupyter_hwsim import HwsimError, Scenario, catalog, estimate, simulate
from jupyter_hwsim.core import workloads
from jupyter_hwsim.core.importers import load

MODELS = Path(__file__).resolve().parents[1] / "jupyter_hwsim" / "data" / "models"

# id -> (parameters, GMACs per 224 px image (B4: per 380 px image), source). torchvision's model tables give
# num_params and "GFLOPS", which are multiply-adds (ResNet-50: 4.09, the 4.1 G multiply-adds of He et al. 2016).
PUBLISHED = {
    "resnet101": (44_549_160, 7.801, "torchvision ResNet101_Weights.IMAGENET1K_V1 (num_params, _ops)"),
    "resnet152": (60_192_808, 11.514, "torchvision ResNet152_Weights.IMAGENET1K_V1 (num_params, _ops)"),
    "vit-s16": (22_000_000, 4.6, "DeiT-S = ViT-S/16: 22M (Touvron et al. 2021 table 1), 4.6G (Liu et al. 2021, Swin, table 1)"),
    "vit-l16": (304_326_632, 61.555, "torchvision ViT_L_16_Weights.IMAGENET1K_V1 (num_params, _ops)"),
    "efficientnet-b0": (5_288_548, 0.386, "torchvision EfficientNet_B0_Weights.IMAGENET1K_V1; Tan & Le 2019: 5.3M, 0.39B"),
    "efficientnet-b4": (19_341_616, 4.394, "torchvision EfficientNet_B4_Weights.IMAGENET1K_V1 at 380 px; Tan & Le: 19M, 4.2B"),
    "convnext-t": (28_589_128, 4.456, "torchvision ConvNeXt_Tiny_Weights.IMAGENET1K_V1; Liu et al. 2022: 28M, 4.5G"),
}  # fmt: skip


def _params(w) -> float:
    return sum(op.params for op in workloads.operators(w))


def _gmacs(w) -> float:
    """Multiply-adds of the matrix operators (convolutions and matrix products): FLOPs / 2, the convention
    the published counts use."""
    return sum(op.flops for op in workloads.operators(w) if op.cls == "matmul") / 2e9


def test_flop_convention_is_two_per_multiply_add():
    # ResNet-50: 4.1 G multiply-adds (He et al. 2016 table 1; torchvision 4.09)
    assert _gmacs("resnet50") == pytest.approx(4.09, rel=0.01)


@pytest.mark.parametrize("wid", sorted(PUBLISHED))
def test_parameters_and_flops_match_the_published_figures(wid):
    params, gmacs, _ = PUBLISHED[wid]
    # weight matrices and convolution kernels only (the project's convention): biases, norm scales and shifts
    # are left out, 1.0% of EfficientNet-B0, at most 0.8% of the others
    assert _params(wid) == pytest.approx(params, rel=0.01)
    assert _gmacs(wid) == pytest.approx(gmacs, rel=0.05)


def test_every_new_entry_is_sourced_and_aliased():
    for wid in PUBLISHED:
        w = catalog.get("workloads", wid)
        assert w["sources"], wid
        assert set(w["aliases"]) and all(catalog.get("workloads", a) is w for a in w["aliases"])
    assert catalog.get("workloads", "effnet-b4")["width_mult"] == 1.4
    assert catalog.get("workloads", "convnext")["depths"] == (3, 3, 9, 3)


@pytest.mark.parametrize("wid", sorted(PUBLISHED))
@pytest.mark.parametrize("kind", ["training", "inference"])
def test_runs_end_to_end(wid, kind):
    r = estimate(Scenario(kind=kind, workload=wid, gpu="a100-sxm-80gb", precision="bf16"), suggest=False)
    assert r.throughput > 0 and math.isfinite(r.throughput)
    assert not r.memory["oom"], (wid, kind)


def test_serving_and_simulation_run():
    s = Scenario(kind="serving", workload="efficientnet-b0", gpu="t4", precision="fp16", arrival_rate_rps=200,
                 max_batch_size=16, max_queue_delay_ms=2, steps=200)  # fmt: skip
    assert simulate(s, seed=0, suggest=False).latency_ms["p99"] > 0
    t = Scenario(kind="training", workload="convnext-t", gpu="a100-sxm-80gb", precision="bf16", steps=20)
    assert simulate(t, seed=0, suggest=False).throughput > 0


def test_deeper_and_wider_cost_more():
    """Same builder, more blocks or more width: more of everything, in the published order."""
    order = (
        ["resnet50", "resnet101", "resnet152"],
        ["vit-s16", "vit-b16", "vit-l16"],
        ["efficientnet-b0", "efficientnet-b4"],
    )
    for family in order:
        assert [_gmacs(w) for w in family] == sorted(_gmacs(w) for w in family)
        assert [_params(w) for w in family] == sorted(_params(w) for w in family)


def test_image_workloads_copy_their_image_size():
    b4 = catalog.get("workloads", "efficientnet-b4")
    assert workloads.device_bytes_per_sample(b4, 1) == 3 * 380 * 380 * 4
    assert workloads.device_bytes_per_sample(catalog.get("workloads", "convnext-t"), 1) == 3 * 224 * 224 * 4


# ---- grouped convolution ---------------------------------------------------------------------------------


def test_grouped_conv():
    dense, hw = workloads._conv("c", 64, 64, 3, 1, 56)
    assert workloads._conv("c", 64, 64, 3, 1, 56, groups=1) == (dense, hw)
    grouped, _ = workloads._conv("c", 64, 64, 3, 1, 56, groups=4)
    depthwise, _ = workloads._conv("c", 64, 64, 3, 1, 56, groups=64)
    assert grouped.flops == dense.flops / 4 and grouped.params == dense.params / 4
    assert depthwise.params == 64 * 9 and depthwise.flops == 2 * 56 * 56 * 64 * 9
    # the output and the activations do not change with the grouping
    assert (depthwise.act_in, depthwise.act_out, depthwise.rows, depthwise.cols) == (
        dense.act_in,
        dense.act_out,
        dense.rows,
        dense.cols,
    )


def test_efficientnet_widths_round_as_the_reference_does():
    # tensorflow/tpu round_filters (torchvision _make_divisible): B4's stem 32 x 1.4 -> 48, head 1280 x 1.4 -> 1792
    assert [workloads._round_channels(c, 1.4) for c in (32, 16, 24, 40, 80, 112, 192, 320, 1280)] == [
        48, 24, 32, 56, 112, 160, 272, 448, 1792,
    ]  # fmt: skip
    b4 = workloads.operators("efficientnet-b4")
    assert sum(op.name.endswith(".dwconv") for op in b4) == 32  # 1, 2, 2, 3, 3, 4, 1 blocks x 1.8, rounded up
    assert b4[-1].params == 1792 * 1000


def test_custom_entries_are_checked():
    base = dict(catalog.get("workloads", "efficientnet-b0"))
    with pytest.raises(HwsimError, match="stages"):
        estimate(Scenario(workload={**base, "stages": [[6, 3, 2, 24]]}), suggest=False)
    with pytest.raises(HwsimError, match="width_mult"):
        estimate(Scenario(workload={**base, "width_mult": 0}), suggest=False)
    cx = dict(catalog.get("workloads", "convnext-t"))
    with pytest.raises(HwsimError, match="dims"):
        estimate(Scenario(workload={**cx, "dims": [96, 192]}), suggest=False)
    small = {**cx, "depths": [1, 1, 1, 1], "dims": [8, 16, 32, 64]}
    assert estimate(Scenario(workload=small), suggest=False).throughput > 0


# ---- the builders against the same network written as PyTorch modules --------------------------------------


def _torch_reference(name: str):
    """EfficientNet and ConvNeXt written out as torchvision builds them (torchvision itself is not needed):
    (module, input side)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (the torch extra)")
    nn = torch.nn

    class SqueezeExcite(nn.Module):
        def __init__(self, c, sq):
            super().__init__()
            self.fc1, self.fc2, self.act = nn.Conv2d(c, sq, 1), nn.Conv2d(sq, c, 1), nn.SiLU()

        def forward(self, x):
            return x * torch.sigmoid(self.fc2(self.act(self.fc1(x.mean((2, 3), keepdim=True)))))

    class MBConv(nn.Module):
        def __init__(self, cin, cout, expand, k, stride):
            super().__init__()
            mid, layers = cin * expand, []
            if expand != 1:
                layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU()]
            layers += [nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False), nn.BatchNorm2d(mid), nn.SiLU()]
            layers += [SqueezeExcite(mid, max(1, cin // 4)), nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
            self.block, self.residual = nn.Sequential(*layers), stride == 1 and cin == cout

        def forward(self, x):
            return self.block(x) + x if self.residual else self.block(x)

    def efficientnet(w):
        c = workloads._round_channels(w["stem"], w["width_mult"])
        layers = [nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU()]
        for expand, k, stride, channels, n in w["stages"]:
            cout = workloads._round_channels(channels, w["width_mult"])
            for b in range(math.ceil(n * w["depth_mult"])):
                layers.append(MBConv(c, cout, expand, k, stride if b == 0 else 1))
                c = cout
        head = workloads._round_channels(w["head"], w["width_mult"])
        layers += [nn.Conv2d(c, head, 1, bias=False), nn.BatchNorm2d(head), nn.SiLU(), nn.AdaptiveAvgPool2d(1)]
        return nn.Sequential(*layers, nn.Flatten(), nn.Linear(head, w["num_classes"]))

    class LayerNorm2d(nn.LayerNorm):
        def forward(self, x):
            return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.dw, self.ln = nn.Conv2d(d, d, 7, padding=3, groups=d), nn.LayerNorm(d)
            self.fc1, self.act, self.fc2 = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)
            self.gamma = nn.Parameter(torch.ones(d, 1, 1))

        def forward(self, x):
            y = self.fc2(self.act(self.fc1(self.ln(self.dw(x).permute(0, 2, 3, 1)))))
            return x + self.gamma * y.permute(0, 3, 1, 2)

    def convnext(w):
        dims = w["dims"]
        layers = [nn.Conv2d(3, dims[0], w["patch"], w["patch"]), LayerNorm2d(dims[0])]
        for i, (n, d) in enumerate(zip(w["depths"], dims)):
            if i:
                layers += [LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], d, 2, 2)]
            layers += [Block(d) for _ in range(n)]
        layers += [nn.AdaptiveAvgPool2d(1), LayerNorm2d(dims[-1]), nn.Flatten()]
        return nn.Sequential(*layers, nn.Linear(dims[-1], w["num_classes"]))

    w = catalog.get("workloads", name)
    with torch.device("meta"):
        model = (efficientnet(w) if w["arch"] == "efficientnet" else convnext(w)).eval()
    return torch, model, w["image_px"]


@pytest.mark.parametrize("wid", ["efficientnet-b0", "efficientnet-b4", "convnext-t"])
def test_builders_match_the_pytorch_network(wid):
    """The same network as nn modules: torchvision's parameter count exactly, and FlopCounterMode's FLOPs equal
    the builder's matrix FLOPs; the builder's weights are the module's weight tensors less its layer scales."""
    torch, model, px = _torch_reference(wid)
    from torch.utils.flop_counter import FlopCounterMode

    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[wid][0]
    with torch.device("meta"), FlopCounterMode(display=False) as counter:
        model(torch.empty(1, 3, px, px))
    assert sum(op.flops for op in workloads.operators(wid) if op.cls == "matmul") == counter.get_total_flops()
    weights = sum(p.numel() for n, p in model.named_parameters() if p.dim() > 1 and not n.endswith("gamma"))
    assert _params(wid) == weights


# ---- language models as config.json files -----------------------------------------------------------------


def test_qwen25_7b_config():
    w = load(f"hf:{MODELS / 'qwen2.5-7b.json'}")
    assert (w["layers"], w["hidden"], w["heads"], w["kv_heads"], w["ffn"]) == (28, 3584, 28, 4, 18944)
    assert "sliding_window" not in w  # use_sliding_window is false
    assert w["params_total"] == pytest.approx(7.61e9, rel=0.01)  # the Qwen2.5-7B model card: 7.61B
    r = estimate(Scenario(kind="llm", workload=w["id"], gpu="a100-sxm-80gb", precision="bf16"), suggest=False)
    assert r.tokens_per_s_per_stream > 0


def test_llama3_70b_is_the_llama33_config():
    """Llama-3-70B has the Llama-3.3-70B shapes (data/models/README.md): no second file."""
    w = load(f"hf:{MODELS / 'llama-3.3-70b.json'}")
    assert (w["layers"], w["hidden"], w["heads"], w["kv_heads"], w["ffn"], w["vocab"]) == (
        80,
        8192,
        64,
        8,
        28672,
        128256,
    )
    assert not list(MODELS.glob("llama-3-70b*.json"))


def test_depthwise_convolutions_run_on_the_vector_units():
    """A depthwise convolution (one input channel per group) has no tensor-core form: the built-in builders and
    both importers flag it, the dense convolutions beside it are not flagged, and flagging it slows the model."""
    import dataclasses

    import torch

    from jupyter_hwsim import from_torch

    ops = workloads.operators("convnext-t")
    dw = [op for op in ops if op.vector]
    assert len(dw) == 18 and all(op.conv and "dw" in op.name for op in dw)  # its 3+3+9+3 blocks' 7x7 convolutions
    assert not any(op.vector for op in workloads.operators("resnet50"))
    net = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1, groups=32), torch.nn.Conv2d(32, 64, 1),
                              torch.nn.Conv2d(64, 64, 3, padding=1, groups=4))  # fmt: skip
    traced = [op for op in from_torch(net, torch.zeros(1, 32, 16, 16))["ops"] if op["cls"] == "matmul"]
    assert [op["vector"] for op in traced] == [True, False, False]  # 16 channels per group still fill tensor cores
    base = {k: v for k, v in catalog.get("workloads", "convnext-t").items() if k not in ("id", "aliases", "sources")}
    flagged = {**base, "arch": "ops", "ops": [dataclasses.asdict(op) for op in ops]}
    unflagged = {**flagged, "ops": [{**dataclasses.asdict(op), "vector": False} for op in ops]}
    run = {"kind": "inference", "gpu": "a100", "precision": "bf16", "engine": "tensorrt", "batch_size": 64}
    slow = estimate(Scenario(workload=flagged, **run), suggest=False).details["step_ms"]
    fast = estimate(Scenario(workload=unflagged, **run), suggest=False).details["step_ms"]
    assert slow > 1.1 * fast  # 2% of the FLOPs, at a tenth of the rate


# ---- encoder-decoders: an encoder stack, a decoder stack with cross-attention --------------------------------

# published parameter counts; the operator list counts weight matrices and embedding tables (no biases or norms)
ENCODER_DECODERS = {
    "whisper-small": 244e6,  # Radford et al. 2022 table 1 (and the openai/whisper README): 244M
    "transformer-big": 213e6,  # Vaswani et al. 2017 table 3, "big" (English-German, 37000 shared BPE tokens)
}


@pytest.mark.parametrize("wid", sorted(ENCODER_DECODERS))
def test_encoder_decoder_parameters_match_the_published_counts(wid):
    assert _params(wid) == pytest.approx(ENCODER_DECODERS[wid], rel=0.02)


def test_encoder_decoder_operators():
    w = catalog.get("workloads", "whisper-small")
    ops = {op.name: op for op in workloads.operators(w)}
    h, t, s = 768, 1500, 448
    assert sum(n.endswith(".attn.scores") for n in ops) == 24  # 12 encoder and 12 decoder self-attentions
    assert sum(n.endswith(".cross.scores") for n in ops) == 12  # one cross-attention in each decoder layer
    enc, cross = ops["encoder.layer0.attn.scores"], ops["decoder.layer11.cross.scores"]
    assert (enc.rows, enc.cols, enc.groups) == (t, t, 12)  # the encoder attends over the 1500 audio positions
    assert (cross.rows, cross.cols, cross.flops) == (s, t, 2.0 * s * t * h)  # target queries, source keys
    assert ops["decoder.layer0.cross.kv"].flops == 2.0 * t * h * 2 * h  # keys and values of the encoder's output
    stem = ops["encoder.conv2"]  # stride 2: 3000 frames -> 1500 positions
    assert stem.conv and stem.flops == 2.0 * t * h * 3 * h and ops["encoder.conv1"].rows == 2 * t
    assert ops["embedding"].params == 448 * h and ops["lm_head"].params == 51865 * h  # tied: one token table
    # a text encoder takes the target's length and the shared table (Vaswani et al. 2017)
    big = {op.name: op for op in workloads.operators("transformer-big", 50)}
    assert big["encoder.layer5.attn.scores"].rows == 50 and big["decoder.layer0.cross.scores"].cols == 50
    assert big["encoder.embedding"].params == 0 and big["embedding"].params == 0
    assert big["lm_head"].params == 37000 * 1024
    # the audio and the target ids go to the device: fp32 log-mel frames and int64 ids
    assert workloads.device_bytes_per_sample(w, s) == 80 * 3000 * 4 + s * 8


@pytest.mark.parametrize("wid", sorted(ENCODER_DECODERS))
def test_encoder_decoders_train_infer_and_generate(wid):
    for kind in ("training", "inference"):
        s = Scenario(kind=kind, workload=wid, gpu="a100-sxm-80gb", precision="bf16", steps=20)
        e, r = estimate(s, suggest=False), simulate(s, seed=0, suggest=False)
        assert e.throughput > 0 and r.throughput > 0 and not e.memory["oom"], (wid, kind)
    # generation (kind=llm): the default 512-token prompt is longer than either model's positions
    with pytest.raises(HwsimError) as err:
        Scenario(kind="llm", workload=wid, gpu="a100-sxm-80gb")
    assert err.value.field == "prompt_tokens"
    s = Scenario(kind="llm", workload=wid, gpu="a100-sxm-80gb", prompt_tokens=4, output_tokens=24, steps=20)
    assert estimate(s, suggest=False).throughput > 0 and simulate(s, seed=0, suggest=False).throughput > 0


def test_a_custom_encoder_decoder_is_checked():
    base = dict(catalog.get("workloads", "transformer-big"))
    for key in ("id", "aliases", "sources"):
        base.pop(key, None)
    workloads.check_custom("workloads", base)
    for change, field in [
        ({"decoder_layers": None}, "workload.decoder_layers"),
        ({"encoder_layers": 0}, "workload.encoder_layers"),
        ({"experts": 8, "experts_per_token": 2}, "workload.experts"),
        ({"kv_heads": 4}, "workload.kv_heads"),
        ({"source_len": -1}, "workload.source_len"),
    ]:
        entry = {k: v for k, v in {**base, **change}.items() if v is not None}
        with pytest.raises(HwsimError) as err:
            workloads.check_custom("workloads", entry)
        assert err.value.field == field, (change, err.value.field)


@pytest.mark.parametrize(
    "wid, published",
    [("bert-base", 109_482_240), ("bert-large", 335_141_888)],  # bert-*-uncased BertModel (Hugging Face)
)
def test_bert_holds_one_token_table_and_its_positions(wid, published):
    """The masked-LM head is the word embedding matrix (tied), and the learned position and token-type rows are
    weights: the catalogue's count is the published one less the biases, norms and pooler (< 1%; the vocabulary
    counted twice was 20% over for bert-base)."""
    assert _params(wid) == pytest.approx(published, rel=0.01)


def test_a_task_head_replaces_the_vocabulary_head():
    bert = catalog.get("workloads", "bert-large")
    h, s, vocab = bert["hidden"], 384, bert["vocab"]
    lm, qa, bare = ({**bert, "head_outputs": n} if n is not None else bert for n in (None, 2, 0))
    ops = {
        name: {op.name: op for op in workloads.operators(w, s)} for name, w in (("lm", lm), ("qa", qa), ("bare", bare))
    }
    assert ops["lm"]["lm_head"].flops == 2.0 * s * h * vocab and ops["lm"]["embedding"].params == 514 * h  # tied
    assert ops["qa"]["head"].flops == 2.0 * s * h * 2 and "lm_head" not in ops["qa"]
    assert ops["qa"]["embedding"].params == (vocab + 514) * h  # the token table is the embedding's alone now
    assert "head" not in ops["bare"] and "lm_head" not in ops["bare"]
    # the same encoder, so the same weights to within the head's; SQuAD's head makes a step cheaper
    assert _params(qa) - _params(lm) == h * 2 and _params(bare) == _params(lm)

    def rate(w):
        return estimate(Scenario(kind="inference", workload=w, gpu="a100", seq_len=s, batch_size=32), suggest=False)

    assert rate(qa).throughput > rate(lm).throughput * 1.03


def test_a_task_head_is_refused_where_it_means_nothing():
    bert = catalog.get("workloads", "bert-base")
    with pytest.raises(HwsimError, match="head_outputs"):  # generation samples the vocabulary
        Scenario(kind="llm", workload={**bert, "head_outputs": 2}, gpu="a100")
    with pytest.raises(HwsimError, match="head_outputs"):
        Scenario(kind="inference", workload={**catalog.get("workloads", "vit-b16"), "head_outputs": 2}, gpu="a100")
    with pytest.raises(HwsimError, match="head_outputs"):
        Scenario(kind="inference", workload={**bert, "head_outputs": -1}, gpu="a100")
