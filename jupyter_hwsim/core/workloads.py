"""Workloads as operator lists, built from their architecture (layer shapes, not a FLOP count)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import catalog
from .errors import HwsimError

IMAGE_CHANNELS = 3.0  # RGB
IMAGE_ARCHS = ("resnet", "vit", "efficientnet", "convnext")  # the builders whose input is an image
DEFAULT_IMAGE_PX = 224  # the ImageNet crop, where a workload gives no image_px
FP32_BYTES = 4.0  # a preprocessed image or feature vector is fp32, as torchvision's ToTensor gives it
INT64_BYTES = 8.0  # token ids are int64 (torch.long), as tokenizers return them
SOFTMAX_FLOPS_PER_ELEMENT = 5.0  # max, subtract, exp, sum, divide (assumption: one FLOP per pass over the element)
# FLOPs per element of the vector operators (assumption: one FLOP per arithmetic step; transcendental functions
# counted as a few): a normalization (mean, variance, subtract, divide, scale), a GELU or SiLU activation, a
# rotary embedding (two multiplies and an add)
NORM_FLOPS_PER_ELEMENT = 5
ACTIVATION_FLOPS_PER_ELEMENT = 8
ROPE_FLOPS_PER_ELEMENT = 3
MASK_FLOPS_PER_ELEMENT = 2  # scale and mask add of an attention score


@dataclass(frozen=True)
class Op:
    """One operator, per sample: FLOPs, activation elements in and out, weight parameters.

    rows x cols is its output matrix per group (for occupancy); groups > 1 means
    independent matrices per sample (attention heads). kernels: launches per pass
    (a measured step lumps many operators of one class into one Op).
    """

    name: str
    cls: str  # matmul | elementwise | norm | batchnorm | softmax | mask
    flops: float
    act_in: float
    act_out: float
    params: float = 0.0
    rows: float = 1.0
    cols: float = 1.0
    groups: int = 1
    kernels: int = 1
    conv: bool = False  # a convolution: its layout matters to tensor cores (costs.nchw_transposes)
    vector: bool = False  # no tensor-core form (a depthwise convolution): runs at the vector units' rate
    training: bool = False  # runs in a training step only (dropout: an identity at inference)
    window: int = 0  # a convolution's kernel side (k of a k x k window; the longest side); 0 for other operators
    scores_out: float = 0.0  # elements of an attention's score matrix this matmul writes (a fused attention: none)
    scores_in: float = 0.0  # elements of an attention's score matrix this matmul reads (a fused attention: none)
    experts: int = 0  # a mixture-of-experts operator: the experts whose weights it holds (0: a dense operator)
    experts_per_token: int = 0  # ... and how many of them each token is routed to
    logits: bool = False  # a language model's head: a row of vocabulary scores per position (costs.last_row)
    gather: bool = False  # an embedding lookup: a pass reads the rows of its tokens, not the whole table
    causal_share: float = 1.0  # of a causal attention's score-sized work: the share a fused kernel computes

    @property
    def tensor_core_conv(self) -> bool:
        """A convolution the tensor cores run (in NHWC); a depthwise one runs on the vector units in either layout."""
        return self.conv and not self.vector


# Tensor cores take a convolution whose every group reduces over at least 8 input channels (fp16; NVIDIA, "Tensor
# Core DL Performance Guide", GTC 2019 s9926: channels in multiples of 8); a depthwise or narrow grouped one
# (EfficientNet's, ConvNeXt's) runs on the CUDA cores instead.
TENSOR_CORE_MIN_CHANNELS = 8


def grouped_vector(groups: int, channels_per_group: int) -> bool:
    """True when a grouped convolution has no tensor-core form (see TENSOR_CORE_MIN_CHANNELS)."""
    return groups > 1 and channels_per_group < TENSOR_CORE_MIN_CHANNELS


def _conv(name, cin, cout, k, stride, hw_in, groups=1):
    """A k x k convolution and its output side, ceil(hw_in / stride) (padding k // 2, or none when stride = k).
    A grouped one (groups > 1; depthwise when groups = cin) reduces over k x k x cin / groups inputs per
    output; it is one m x cout output, as the importers record a grouped convolution (torch_trace, onnx)."""
    hw = math.ceil(hw_in / stride)
    m = hw * hw
    per_group = cin // groups
    return Op(
        name,
        "matmul",
        2.0 * m * cout * k * k * per_group,
        cin * hw_in * hw_in,
        cout * m,
        cout * per_group * k * k,
        m,
        cout,
        conv=True,
        vector=grouped_vector(groups, per_group),
        window=k,
    ), hw


def _pointwise(name, cls, elems, n_in=1, flops_per=1.0):
    return Op(name, cls, flops_per * elems, n_in * elems, elems, 0.0, elems, 1)


def _resnet(w: dict) -> list[Op]:
    ops: list[Op] = []
    hw = w.get("image_px", DEFAULT_IMAGE_PX)
    op, hw = _conv("conv1", 3, 64, 7, 2, hw)
    ops += [
        op,
        _pointwise("bn1", "batchnorm", 64 * hw * hw, flops_per=NORM_FLOPS_PER_ELEMENT),
        _pointwise("relu1", "elementwise", 64 * hw * hw),
    ]
    hw = math.ceil(hw / 2)
    ops.append(_pointwise("maxpool", "elementwise", 64 * hw * hw))
    cin, bottleneck = 64, w["block"] == "bottleneck"
    for stage, n in enumerate(w["blocks"]):
        width = 64 * 2**stage
        cout = width * 4 if bottleneck else width
        for b in range(n):
            stride = 2 if (b == 0 and stage > 0) else 1
            p = f"layer{stage + 1}.{b}"
            hw_in = hw
            if bottleneck:
                shapes = [(cin, width, 1, 1), (width, width, 3, stride), (width, cout, 1, 1)]
            else:
                shapes = [(cin, width, 3, stride), (width, cout, 3, 1)]
            c = cin
            for i, (ci, co, k, s) in enumerate(shapes):
                op, hw = _conv(f"{p}.conv{i + 1}", ci, co, k, s, hw)
                ops += [op, _pointwise(f"{p}.bn{i + 1}", "batchnorm", co * hw * hw, flops_per=NORM_FLOPS_PER_ELEMENT)]
                if i < len(shapes) - 1:
                    ops.append(_pointwise(f"{p}.relu{i + 1}", "elementwise", co * hw * hw))
                c = co
            if b == 0 and (stride != 1 or cin != cout):
                op, _ = _conv(f"{p}.downsample", cin, cout, 1, stride, hw_in)
                ops += [
                    op,
                    _pointwise(f"{p}.downsample.bn", "batchnorm", cout * hw * hw, flops_per=NORM_FLOPS_PER_ELEMENT),
                ]
            ops += [
                _pointwise(f"{p}.add", "elementwise", c * hw * hw, n_in=2),
                _pointwise(f"{p}.relu", "elementwise", c * hw * hw),
            ]
            cin = cout
    ops.append(_pointwise("avgpool", "elementwise", cin, n_in=hw * hw))
    ops.append(
        Op(
            "fc",
            "matmul",
            2.0 * cin * w["num_classes"],
            cin,
            w["num_classes"],
            cin * w["num_classes"],
            1,
            w["num_classes"],
        )
    )
    return ops


def _round_channels(c: float, width_mult: float, divisor: int = 8) -> int:
    """A width scaled by width_mult, rounded to a multiple of divisor and never 10% below the scaled value (the
    reference EfficientNet's round_filters, which torchvision's _make_divisible repeats)."""
    v = c * width_mult
    out = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * v else out


def _bn_act(p: str, c: float, hw: int, act: bool = True) -> list[Op]:
    """Batch norm (and a SiLU) after a convolution of c channels at hw x hw."""
    n = c * hw * hw
    ops = [_pointwise(f"{p}.bn", "batchnorm", n, flops_per=NORM_FLOPS_PER_ELEMENT)]
    if act:
        ops.append(_pointwise(f"{p}.act", "elementwise", n, flops_per=ACTIVATION_FLOPS_PER_ELEMENT))
    return ops


def _squeeze_excite(p: str, c: int, squeeze: int, hw: int) -> list[Op]:
    """Squeeze-and-excitation on c channels: global average pool, two 1x1 convolutions on the pooled vector
    (c -> squeeze -> c, a SiLU between, a sigmoid after), then each channel scaled by its gate."""
    fc1, _ = _conv(f"{p}.se.fc1", c, squeeze, 1, 1, 1)
    fc2, _ = _conv(f"{p}.se.fc2", squeeze, c, 1, 1, 1)
    n = c * hw * hw
    return [
        _pointwise(f"{p}.se.pool", "elementwise", c, n_in=hw * hw),
        fc1,
        _pointwise(f"{p}.se.act", "elementwise", squeeze, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        fc2,
        _pointwise(f"{p}.se.gate", "elementwise", c, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        Op(f"{p}.se.scale", "elementwise", n, n + c, n, 0.0, n, 1),
    ]


def _efficientnet(w: dict) -> list[Op]:
    """EfficientNet (Tan & Le 2019): a 3x3 stem, stages of MBConv blocks (1x1 expansion, k x k depthwise
    convolution, squeeze-and-excitation, 1x1 projection; a residual where shape allows), a 1x1 head
    convolution, pooling and the classifier. Widths scale by width_mult (rounded to 8), block counts by
    depth_mult (rounded up), as the reference implementation does."""
    wm, dm = w.get("width_mult", 1.0), w.get("depth_mult", 1.0)
    se_ratio = w.get("se_ratio", 0.25)
    hw = w.get("image_px", DEFAULT_IMAGE_PX)
    cin = _round_channels(w["stem"], wm)
    op, hw = _conv("stem.conv", 3, cin, 3, 2, hw)
    ops = [op, *_bn_act("stem", cin, hw)]
    for i, (expand, k, stride, channels, layers) in enumerate(w["stages"]):
        cout = _round_channels(channels, wm)
        for b in range(math.ceil(layers * dm)):
            p, s = f"stage{i + 1}.{b}", stride if b == 0 else 1
            mid, hw_in = cin * expand, hw
            if expand != 1:
                op, _ = _conv(f"{p}.expand", cin, mid, 1, 1, hw)
                ops += [op, *_bn_act(f"{p}.expand", mid, hw)]
            op, hw = _conv(f"{p}.dwconv", mid, mid, k, s, hw, groups=mid)
            ops += [op, *_bn_act(f"{p}.dwconv", mid, hw)]
            if se_ratio:
                ops += _squeeze_excite(p, mid, max(1, int(cin * se_ratio)), hw)
            op, _ = _conv(f"{p}.project", mid, cout, 1, 1, hw)
            ops += [op, *_bn_act(f"{p}.project", cout, hw, act=False)]
            if s == 1 and cin == cout and hw == hw_in:
                ops.append(_pointwise(f"{p}.add", "elementwise", cout * hw * hw, n_in=2))
            cin = cout
    head = _round_channels(w["head"], wm)
    op, _ = _conv("head.conv", cin, head, 1, 1, hw)
    ops += [op, *_bn_act("head", head, hw), _pointwise("avgpool", "elementwise", head, n_in=hw * hw)]
    ops.append(_linear("fc", 1, head, w["num_classes"]))
    return ops


def _convnext(w: dict) -> list[Op]:
    """ConvNeXt (Liu et al. 2022): a patchify stem (conv patch x patch, stride patch; layer norm), stages of
    blocks (7x7 depthwise convolution, layer norm, linear dim -> 4 dim, GELU, linear 4 dim -> dim, layer
    scale, residual), a layer norm and a 2x2 stride-2 convolution between stages, then pooling, a layer
    norm and the classifier."""
    hw, k = w.get("image_px", DEFAULT_IMAGE_PX), w.get("kernel", 7)
    dims, ratio = w["dims"], w.get("mlp_ratio", 4)
    op, hw = _conv("stem.conv", 3, dims[0], w["patch"], w["patch"], hw)
    ops = [op, _pointwise("stem.ln", "norm", dims[0] * hw * hw, flops_per=NORM_FLOPS_PER_ELEMENT)]
    for i, (depth, c) in enumerate(zip(w["depths"], dims)):
        if i > 0:
            p = f"downsample{i}"
            ops.append(_pointwise(f"{p}.ln", "norm", dims[i - 1] * hw * hw, flops_per=NORM_FLOPS_PER_ELEMENT))
            op, hw = _conv(f"{p}.conv", dims[i - 1], c, 2, 2, hw)
            ops.append(op)
        n, t = c * hw * hw, hw * hw
        for b in range(depth):
            p = f"stage{i + 1}.{b}"
            op, _ = _conv(f"{p}.dwconv", c, c, k, 1, hw, groups=c)
            ops += [
                op,
                _pointwise(f"{p}.ln", "norm", n, flops_per=NORM_FLOPS_PER_ELEMENT),
                _linear(f"{p}.pwconv1", t, c, ratio * c),
                _pointwise(f"{p}.act", "elementwise", ratio * n, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
                _linear(f"{p}.pwconv2", t, ratio * c, c),
                _pointwise(f"{p}.layer_scale", "elementwise", n),
                _pointwise(f"{p}.add", "elementwise", n, n_in=2),
            ]
    c = dims[-1]
    ops += [
        _pointwise("avgpool", "elementwise", c, n_in=hw * hw),
        _pointwise("head.ln", "norm", c, flops_per=NORM_FLOPS_PER_ELEMENT),
        _linear("fc", 1, c, w["num_classes"]),
    ]
    return ops


def _linear(name, s, k, n):
    return Op(name, "matmul", 2.0 * s * k * n, s * k, s * n, k * n, s, n)


def _head(s: int, h: int, vocab: int) -> Op:
    """A language model's head over s positions: a row of vocabulary scores per position."""
    return dataclasses.replace(_linear("lm_head", s, h, vocab), logits=True)


def _head_dims(w: dict) -> tuple[int, int]:
    """(head_dim, heads x head_dim): hidden // heads unless the entry names its head_dim."""
    d = w.get("head_dim") or w["hidden"] // w["heads"]
    return d, w["heads"] * d


def _experts(op: Op, w: dict) -> Op:
    """A mixture-of-experts operator: each token runs experts_per_token experts; every expert's weights are held."""
    k, e = w["experts_per_token"], w["experts"]
    return dataclasses.replace(
        op,
        flops=op.flops * k,
        act_in=op.act_in * k,
        act_out=op.act_out * k,
        params=op.params * e,
        rows=op.rows * k,
        experts=e,
        experts_per_token=k,
    )


def weight_share(op: Op, batch: float = 1.0) -> float:
    """The share of an operator's weights one pass over `batch` samples reads: all of a dense operator's; of an
    embedding lookup's, its tokens' rows; of a mixture-of-experts operator's, the experts its tokens are routed to.
    With n tokens each routed to k of E experts, uniformly and independently (an assumption: trained routers are
    balanced by their auxiliary loss, not exactly), E(1 - (1 - k/E)^n) experts are touched on average: k at one
    token, as a batch-1 decode step reads, and nearly all of them over a prompt."""
    if op.gather:  # an embedding lookup reads its tokens' rows (act_out values per sample) of the table
        return min(1.0, op.act_out * batch / op.params) if op.params else 1.0
    if not op.experts:
        return 1.0
    tokens = op.rows / op.experts_per_token * batch
    return 1.0 - (1.0 - op.experts_per_token / op.experts) ** tokens


# FlashAttention's query and key block (128 x 128 in FlashAttention-2's and -3's forward kernels for 128-wide heads)
FLASH_BLOCK = 128


def causal_share(s: int, t: int) -> float:
    """The share of a causal attention's s x t (query, key) pairs a fused kernel computes: with every query seeing
    every earlier key (t = s), it skips the blocks above the diagonal and computes the diagonal's whole, (n + 1) / 2n
    of n x n blocks (FlashAttention-2 paper, section 3.1.1); a sliding window already counts only the keys seen."""
    if t < s:
        return 1.0
    n = math.ceil(s / FLASH_BLOCK)
    return (n + 1) / (2 * n)


def _transformer_layers(w: dict, s: int, masked: bool = True) -> list[Op]:
    """The layers of a transformer over s positions. masked: its attention masks the scores (causal, or a padding
    mask) in a pass of its own before the softmax (attn.mask, with the scaling: a naive attention's; a fused or
    flash attention, or a softmax that takes the mask, does it inside). A ViT's or Whisper encoder's is not. A
    causal model's score-sized operators carry the share a fused kernel computes (causal_share)."""
    h, heads, kv = w["hidden"], w["heads"], w.get("kv_heads", w["heads"])
    (d, q), f = _head_dims(w), w["ffn"]
    t = min(s, w.get("sliding_window") or s)  # keys each query attends to
    share = causal_share(s, t) if w.get("causal") else 1.0
    gated = w.get("gated_ffn", False)
    ops: list[Op] = []
    for i in range(w["layers"]):
        p = f"layer{i}"
        ffn = [
            _linear(f"{p}.ffn.up", s, h, 2 * f if gated else f),
            _pointwise(
                f"{p}.ffn.act", "elementwise", s * f, n_in=2 if gated else 1, flops_per=ACTIVATION_FLOPS_PER_ELEMENT
            ),
            _linear(f"{p}.ffn.down", s, f, h),
        ]
        if w.get("experts"):
            ffn = [_linear(f"{p}.ffn.router", s, h, w["experts"]), *(_experts(op, w) for op in ffn)]
        mask = _pointwise(f"{p}.attn.mask", "mask", heads * s * t, flops_per=MASK_FLOPS_PER_ELEMENT)
        mask = [dataclasses.replace(mask, causal_share=share)] if masked else []
        ops += [
            _pointwise(f"{p}.ln1", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
            _linear(f"{p}.qkv", s, h, q + 2 * kv * d),
            Op(
                f"{p}.attn.scores",
                "matmul",
                2.0 * s * t * q,
                (s + t) * q,
                heads * s * t,
                0,
                s,
                t,
                heads,
                scores_out=heads * s * t,
                causal_share=share,
            ),  # fmt: skip
            *mask,
            Op(
                f"{p}.attn.softmax",
                "softmax",
                SOFTMAX_FLOPS_PER_ELEMENT * heads * s * t,
                heads * s * t,
                heads * s * t,
                0,
                heads * s * t,
                1,
                causal_share=share,
            ),
            *_dropout(f"{p}.attn.dropout", heads * s * t, w.get("attention_dropout", 0.0)),
            Op(
                f"{p}.attn.context",
                "matmul",
                2.0 * s * t * q,
                heads * s * t + t * q,
                s * q,
                0,
                s,
                d,
                heads,
                scores_in=heads * s * t,
                causal_share=share,
            ),  # fmt: skip
            _linear(f"{p}.attn.out", s, q, h),
            *_dropout(f"{p}.attn.out_dropout", s * h, w.get("hidden_dropout", 0.0)),
            _pointwise(f"{p}.add1", "elementwise", s * h, n_in=2),
            _pointwise(f"{p}.ln2", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
            *ffn,
            *_dropout(f"{p}.ffn.dropout", s * h, w.get("hidden_dropout", 0.0)),
            _pointwise(f"{p}.add2", "elementwise", s * h, n_in=2),
        ]
    return ops


def _dropout(name: str, elems: float, p: float) -> list[Op]:
    """A dropout of probability p > 0: one pass over its input in a training step (it draws its mask and scales
    what it keeps), none at inference."""
    return [dataclasses.replace(_pointwise(name, "elementwise", elems), training=True)] if p > 0 else []


def _transformer(w: dict, s: int) -> list[Op]:
    """A transformer over s positions: its embeddings, layers and head. head_outputs, where given, replaces the
    vocabulary head: a task head of that many outputs per position (2 for SQuAD's span start and end, a token
    classifier's labels), or none at 0 (the hidden states are the output); the embedding then holds the token
    table, tied or not."""
    h, vocab, outputs = w["hidden"], w["vocab"], w.get("head_outputs")
    table = 0 if w.get("tie_embeddings") and outputs is None else vocab * h  # tied: the lm_head holds the one copy
    if w.get("positions"):  # learned position (and token-type) embedding rows
        table += w["positions"] * h
    emb = Op("embedding", "elementwise", 0.0, s, s * h, table, s * h, 1, gather=True)
    head = [_head(s, h, vocab)] if outputs is None else [_linear("head", s, h, outputs)] if outputs else []
    return [
        emb,
        *_transformer_layers(w, s),
        _pointwise("ln_f", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
        *head,
    ]


def _renamed(ops: list[Op], old: str, new: str) -> list[Op]:
    return [dataclasses.replace(op, name=new + op.name[len(old) :]) for op in ops]


def _cross_attention(p: str, w: dict, s: int, t: int, source_width: int | None = None) -> list[Op]:
    """A decoder layer's attention to the encoder's output: s target queries over t source keys (keys and values
    projected from the encoder's output, of source_width values a position (default: hidden); every head has its
    own)."""
    h, heads = w["hidden"], w["heads"]
    d, q = _head_dims(w)
    n = heads * s * t
    return [
        _pointwise(f"{p}.ln_cross", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
        _linear(f"{p}.cross.q", s, h, q),
        _linear(f"{p}.cross.kv", t, source_width or h, 2 * q),
        Op(f"{p}.cross.scores", "matmul", 2.0 * s * t * q, (s + t) * q, n, 0, s, t, heads, scores_out=n),
        Op(f"{p}.cross.softmax", "softmax", SOFTMAX_FLOPS_PER_ELEMENT * n, n, n, 0, n, 1),
        Op(f"{p}.cross.context", "matmul", 2.0 * s * t * q, n + t * q, s * q, 0, s, d, heads, scores_in=n),
        _linear(f"{p}.cross.out", s, q, h),
        _pointwise(f"{p}.add_cross", "elementwise", s * h, n_in=2),
    ]


def _position_bias(stack: str, w: dict, n: int) -> list[Op]:
    """A relative position bias over n positions (T5): the bucket of every query-key offset gathered from a table of
    position_buckets x heads, once per stack; none without position_buckets."""
    buckets, heads = w.get("position_buckets"), w["heads"]
    if not buckets:
        return []
    return [Op(f"{stack}.position_bias", "elementwise", 0.0, n * n, heads * n * n, buckets * heads, heads * n * n, 1)]


def source_len(w: dict, s: int) -> int:
    """The encoder's positions of an encoder-decoder: source_len where the input fixes it (Whisper: 1500 audio
    positions, 30 s), else the target's s (a translation pair of equal lengths)."""
    return int(w.get("source_len") or s)


def _encoder_decoder(w: dict, s: int) -> list[Op]:
    """An encoder-decoder transformer (Vaswani et al. 2017; Whisper): an encoder stack over the source, a decoder
    stack over the s target tokens whose every layer adds cross-attention to the encoder's output, a final norm
    and the head. The layers are the decoder-only builder's (_transformer_layers), so the self-attention and the
    feed-forward network are counted alike; one pass is teacher-forced (training, or scoring a given target).

    mel_bins: an audio front end (Whisper): two 1-D convolutions of width 3 over 2 x source_len frames of
    mel_bins features, the second of stride 2, each with a GELU, and fixed sinusoidal positions. Otherwise the
    encoder embeds source tokens with the decoder's table (one vocabulary shared by both sides, as in Vaswani et
    al. 2017), or with a table of its own of source_vocab rows. positions, source_positions: learned position rows
    of the decoder and of the encoder (BART); tie_embeddings: the head is the token table. position_buckets: a
    relative position bias (T5), a table of buckets x heads in each stack's first layer whose gathered
    heads x n x n bias every layer's attention adds to its scores (in its attn.mask pass). target_len: the
    decoder's tokens where they are not s (generation's prefill: s source tokens, one start token)."""
    h, vocab = w["hidden"], w["vocab"]
    t = source_len(w, s)
    s = int(w.get("target_len") or s)
    ops: list[Op] = []
    if w.get("mel_bins"):
        mel, frames = w["mel_bins"], 2 * t
        ops += [
            Op("encoder.conv1", "matmul", 2.0 * frames * h * 3 * mel, mel * frames, h * frames, h * mel * 3,
               frames, h, conv=True),
            _pointwise("encoder.conv1.act", "elementwise", h * frames, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
            Op("encoder.conv2", "matmul", 2.0 * t * h * 3 * h, h * frames, h * t, h * h * 3, t, h, conv=True),
            _pointwise("encoder.conv2.act", "elementwise", h * t, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
            _pointwise("encoder.positions", "elementwise", h * t, n_in=2),
        ]  # fmt: skip
    else:  # the source tokens: a row gather from the shared table, whose parameters the decoder's embedding holds
        rows = w.get("source_vocab", 0) + w.get("source_positions", 0)  # an encoder's own tables, if any
        ops.append(Op("encoder.embedding", "elementwise", 0.0, t, t * h, float(rows * h), t * h, 1, gather=True))
    ops += _position_bias("encoder", w, t)
    encoder = _transformer_layers({**w, "layers": w["encoder_layers"]}, t, masked=not w.get("mel_bins"))
    ops += _renamed(encoder, "layer", "encoder.layer")
    ops.append(_pointwise("encoder.ln_f", "norm", t * h, flops_per=NORM_FLOPS_PER_ELEMENT))
    table = (0 if w.get("tie_embeddings") else vocab * h) + w.get("positions", 0) * h
    ops.append(Op("embedding", "elementwise", 0.0, s, s * h, table, s * h, 1, gather=True))
    ops += _position_bias("decoder", w, s)
    one = _transformer_layers({**w, "layers": 1}, s)
    cut = next(i for i, op in enumerate(one) if op.name == "layer0.add1") + 1  # after the self-attention
    for i in range(w["decoder_layers"]):
        p = f"decoder.layer{i}"
        ops += _renamed(one[:cut], "layer0", p) + _cross_attention(p, w, s, t) + _renamed(one[cut:], "layer0", p)
    return [  # tied, the head holds the one token table (as _transformer counts it); untied, its own matrix
        *ops,
        _pointwise("ln_f", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
        _head(s, h, vocab),
    ]


def fixed_source(w: dict) -> int:
    """Source positions an encoder-decoder's decoder attends to besides the prompt's: Whisper's fixed source (1500
    audio positions, whose keys and values the prefill caches); 0 for a text encoder-decoder (its source is the
    prompt) and a decoder-only model."""
    return int(w.get("source_len") or 0) if w.get("arch") == "encoder-decoder" else 0


def generation_prefill(w: dict, prompt: int) -> tuple[dict, int]:
    """(workload, seq) whose operators are generation's prefill of one sequence of `prompt` tokens: a decoder-only
    model's forward over the prompt; an encoder-decoder's encoder pass over its source with every decoder layer's
    cross-attention keys and values, and its decoder over the prompt (Whisper's: the source is the audio) or over
    the one start token (a text model's: the prompt is the source)."""
    if w.get("arch") != "encoder-decoder" or fixed_source(w):
        return w, prompt
    return {**w, "target_len": 1}, prompt


def decode_layers(w: dict) -> int:
    """The layers a decode step runs: a decoder-only model's, an encoder-decoder's decoder layers."""
    return int(w["decoder_layers"] if w.get("arch") == "encoder-decoder" else w["layers"])


def decode_operators(w: dict) -> tuple[Sequence[Op], Sequence[Op]]:
    """See _decode_operators; cached for catalogue entries."""
    if "id" in w and catalog.workloads().get(w["id"]) is w:
        return _decode_cached(w["id"])
    return _decode_operators(w)


def decode_groups(w: dict) -> tuple[tuple[str, Op, int], ...]:
    """The per-token decode operators as (name without its layer prefix, operator, occurrences): the
    layers repeat, so their costs are computed once."""
    if "id" in w and catalog.workloads().get(w["id"]) is w:
        return _groups_cached(w["id"])
    return _groups(decode_operators(w)[0])


def _groups(ops) -> tuple[tuple[str, Op, int], ...]:
    out: dict = {}
    for op in ops:
        name = op.name.split(".", 1)[1] if op.name.startswith("layer") else op.name
        out[name] = (out[name][0], out[name][1] + 1) if name in out else (op, 1)
    return tuple((name, op, n) for name, (op, n) in out.items())


@functools.lru_cache(maxsize=64)
def _groups_cached(key: str) -> tuple[tuple[str, Op, int], ...]:
    return _groups(decode_operators(catalog.get("workloads", key))[0])


@functools.lru_cache(maxsize=64)
def _decode_cached(key: str) -> tuple[tuple[Op, ...], tuple[Op, ...]]:
    per_token, per_ctx = _decode_operators(catalog.get("workloads", key))
    return tuple(per_token), tuple(per_ctx)


def _decode_operators(w: dict) -> tuple[list[Op], list[Op]]:
    """One decode step of one sequence: (operators per new token, attention operators per cached token).

    The new token's embedding is a row gather, not a read of the table; attention
    reads the K and V of every cached token (act_in counts them as cache values).
    """
    if w.get("arch") == "encoder-decoder":
        return _encoder_decoder_decode(w)
    h, heads, kv = w["hidden"], w["heads"], w.get("kv_heads", w["heads"])
    (d, q), f, gated = _head_dims(w), w["ffn"], w.get("gated_ffn", False)
    kvd, rotary = kv * d, w.get("rotary", False)
    per_token = [Op("embedding", "elementwise", 0.0, h, h, 0.0, h, 1)]
    per_ctx = []
    for i in range(w["layers"]):  # at the granularity of the reference implementation: one op, one kernel
        p = f"layer{i}"
        per_token += [
            _pointwise(f"{p}.ln1", "norm", h, flops_per=NORM_FLOPS_PER_ELEMENT),
            _linear(f"{p}.q", 1, h, q),
            _linear(f"{p}.k", 1, h, kvd),
            _linear(f"{p}.v", 1, h, kvd),
        ]
        if rotary:
            per_token += [
                _pointwise(f"{p}.rope.q", "elementwise", q, flops_per=ROPE_FLOPS_PER_ELEMENT),
                _pointwise(f"{p}.rope.k", "elementwise", kvd, flops_per=ROPE_FLOPS_PER_ELEMENT),
            ]
        per_token += [
            _pointwise(f"{p}.cache.k", "elementwise", kvd),
            _pointwise(f"{p}.cache.v", "elementwise", kvd),
            _linear(f"{p}.attn.out", 1, q, h),
            _pointwise(f"{p}.add1", "elementwise", h, n_in=2),
            _pointwise(f"{p}.ln2", "norm", h, flops_per=NORM_FLOPS_PER_ELEMENT),
        ]
        if gated:
            ffn = [
                _linear(f"{p}.ffn.gate", 1, h, f),
                _linear(f"{p}.ffn.up", 1, h, f),
                _pointwise(f"{p}.ffn.act", "elementwise", f, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
                _pointwise(f"{p}.ffn.mul", "elementwise", f, n_in=2),
            ]
        else:
            ffn = [
                _linear(f"{p}.ffn.up", 1, h, f),
                _pointwise(f"{p}.ffn.act", "elementwise", f, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
            ]
        ffn.append(_linear(f"{p}.ffn.down", 1, f, h))
        if w.get("experts"):
            ffn = [_linear(f"{p}.ffn.router", 1, h, w["experts"]), *(_experts(op, w) for op in ffn)]
        per_token += [*ffn, _pointwise(f"{p}.add2", "elementwise", h, n_in=2)]
        per_ctx += [  # per cached token: q.k over all heads, then the weighted sum of V
            Op(f"{p}.attn.scores", "matmul", 2.0 * q, kvd, heads, 0, 1, 1, heads),
            Op(f"{p}.attn.softmax", "softmax", SOFTMAX_FLOPS_PER_ELEMENT * heads, heads, heads, 0, heads, 1),
            Op(f"{p}.attn.context", "matmul", 2.0 * q, kvd + heads, 0, 0, 1, d, heads),
        ]
    per_token += [_pointwise("ln_f", "norm", h, flops_per=NORM_FLOPS_PER_ELEMENT), _head(1, h, w["vocab"])]
    return per_token, per_ctx


def _encoder_decoder_decode(w: dict) -> tuple[list[Op], list[Op]]:
    """One decode step of an encoder-decoder's decoder: the decoder-only step (self-attention over the generated
    tokens) with each layer's cross-attention added: the new token's query and output projections (the keys and
    values of the source were projected once, at the prefill, and are cached). A cached token costs a layer the
    same whether the self-attention reads it (a generated token) or the cross-attention does (a source token), so
    the per-cached-token operators are the decoder-only ones, each run as two kernels (kernels=2)."""
    h, (_, q) = w["hidden"], _head_dims(w)
    per_token, per_ctx = _decode_operators({**w, "arch": "transformer", "layers": w["decoder_layers"]})
    out: list[Op] = []
    for op in per_token:
        out.append(op)
        if op.name.endswith(".add1"):
            p = op.name[: -len(".add1")]
            out += [
                _pointwise(f"{p}.ln_cross", "norm", h, flops_per=NORM_FLOPS_PER_ELEMENT),
                _linear(f"{p}.cross.q", 1, h, q),
                _linear(f"{p}.cross.out", 1, q, h),
                _pointwise(f"{p}.add_cross", "elementwise", h, n_in=2),
            ]
    return out, [dataclasses.replace(op, kernels=2) for op in per_ctx]


def kv_values_per_token(w: dict) -> float:
    """K and V values cached per token: 2 x layers x kv_heads x head_dim (an encoder-decoder's decoder layers: a
    generated token's self-attention K and V, or a source token's cross-attention K and V)."""
    return 2.0 * decode_layers(w) * w.get("kv_heads", w["heads"]) * _head_dims(w)[0]


def _vit(w: dict) -> list[Op]:
    px, patch, h = w["image_px"], w["patch"], w["hidden"]
    s = (px // patch) ** 2 + 1
    op, _ = _conv("patch_embed", 3, h, patch, patch, px)
    return [
        op,
        *_transformer_layers(w, s, masked=False),
        _pointwise("ln_f", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
        Op(
            "head", "matmul", 2.0 * h * w["num_classes"], h, w["num_classes"], h * w["num_classes"], 1, w["num_classes"]
        ),
    ]


def _unet_resblock(p: str, cin: int, cout: int, hw: int, temb: int) -> list[Op]:
    """A ResNet block of a diffusion UNet (Ho et al. 2020; diffusers ResnetBlock2D): group norm, SiLU, 3x3
    convolution, the time embedding projected to the channels and added, group norm, SiLU, 3x3 convolution, a 1x1
    shortcut convolution where the width changes, and the residual add."""
    n_in, n = cin * hw * hw, cout * hw * hw
    conv1, _ = _conv(f"{p}.conv1", cin, cout, 3, 1, hw)
    conv2, _ = _conv(f"{p}.conv2", cout, cout, 3, 1, hw)
    ops = [
        _pointwise(f"{p}.norm1", "norm", n_in, flops_per=NORM_FLOPS_PER_ELEMENT),
        _pointwise(f"{p}.act1", "elementwise", n_in, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        conv1,
        _pointwise(f"{p}.time_act", "elementwise", temb, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        _linear(f"{p}.time_emb_proj", 1, temb, cout),
        _pointwise(f"{p}.add_time", "elementwise", n),
        _pointwise(f"{p}.norm2", "norm", n, flops_per=NORM_FLOPS_PER_ELEMENT),
        _pointwise(f"{p}.act2", "elementwise", n, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        conv2,
    ]
    if cin != cout:
        shortcut, _ = _conv(f"{p}.shortcut", cin, cout, 1, 1, hw)
        ops.append(shortcut)
    return [*ops, _pointwise(f"{p}.add", "elementwise", n, n_in=2)]


def _unet_transformer(p: str, w: dict, c: int, hw: int) -> list[Op]:
    """A spatial transformer of a latent-diffusion UNet (Rombach et al. 2022; diffusers Transformer2DModel with one
    BasicTransformerBlock): group norm, a 1x1 convolution in, self-attention over the hw x hw positions,
    cross-attention to the context_tokens text tokens of width context_dim, a GEGLU feed-forward network of
    mlp_ratio x c, a 1x1 convolution out and the residual add. The block is the transformer builder's
    (_transformer_layers, unmasked) with the encoder-decoder's cross-attention after its self-attention."""
    s, n = hw * hw, c * hw * hw
    block = {"hidden": c, "heads": w["heads"], "ffn": w.get("mlp_ratio", 4) * c, "gated_ffn": True, "layers": 1}
    one = _transformer_layers(block, s, masked=False)
    cut = next(i for i, op in enumerate(one) if op.name == "layer0.add1") + 1  # after the self-attention
    cross = _cross_attention("layer0", block, s, w["context_tokens"], source_width=w["context_dim"])
    proj_in, _ = _conv(f"{p}.proj_in", c, c, 1, 1, hw)
    proj_out, _ = _conv(f"{p}.proj_out", c, c, 1, 1, hw)
    return [
        _pointwise(f"{p}.norm", "norm", n, flops_per=NORM_FLOPS_PER_ELEMENT),
        proj_in,
        *_renamed([*one[:cut], *cross, *one[cut:]], "layer0", f"{p}.block"),
        proj_out,
        _pointwise(f"{p}.add", "elementwise", n, n_in=2),
    ]


def _unet(w: dict) -> list[Op]:
    """A latent-diffusion UNet, one denoising step of one latent (Rombach et al. 2022; diffusers
    UNet2DConditionModel): a sinusoidal time embedding through two linear layers (channels[0] -> 4 x channels[0]);
    a 3x3 convolution in; down levels of layers_per_block ResNet blocks, each followed by attention[i] spatial
    transformers, and a stride-2 3x3 convolution between levels; a middle of ResNet block, transformer, ResNet
    block; up levels in reverse of layers_per_block + 1 ResNet blocks, each taking the matching down output
    concatenated to its input (the skip connections), with their transformers and a nearest-neighbour 2x upsample
    and 3x3 convolution between levels; then group norm, SiLU and a 3x3 convolution out."""
    chans, attn, per = w["channels"], w["attention"], w["layers_per_block"]
    hw, c0 = w["latent_px"], chans[0]
    temb = 4 * c0  # diffusers: time_embed_dim = block_out_channels[0] * 4
    conv_in, _ = _conv("conv_in", w["latent_channels"], c0, 3, 1, hw)
    ops = [
        _pointwise("time.sinusoid", "elementwise", c0, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        _linear("time.linear1", 1, c0, temb),
        _pointwise("time.act", "elementwise", temb, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        _linear("time.linear2", 1, temb, temb),
        conv_in,
    ]
    skips, c = [c0], c0
    for i, cout in enumerate(chans):
        for j in range(per):
            ops += _unet_resblock(f"down{i}.res{j}", c, cout, hw, temb)
            c = cout
            for k in range(attn[i]):
                ops += _unet_transformer(f"down{i}.attn{j}.{k}", w, c, hw)
            skips.append(c)
        if i < len(chans) - 1:
            op, hw = _conv(f"down{i}.downsample", c, c, 3, 2, hw)
            ops.append(op)
            skips.append(c)
    ops += _unet_resblock("mid.res0", c, c, hw, temb)
    ops += _unet_transformer("mid.attn0", w, c, hw)
    ops += _unet_resblock("mid.res1", c, c, hw, temb)
    for i, cout in enumerate(reversed(chans)):
        level = len(chans) - 1 - i
        for j in range(per + 1):
            skip = skips.pop()
            ops.append(_pointwise(f"up{i}.res{j}.cat", "elementwise", (c + skip) * hw * hw, flops_per=0.0))
            ops += _unet_resblock(f"up{i}.res{j}", c + skip, cout, hw, temb)
            c = cout
            for k in range(attn[level]):
                ops += _unet_transformer(f"up{i}.attn{j}.{k}", w, c, hw)
        if i < len(chans) - 1:
            hw *= 2
            op, _ = _conv(f"up{i}.upsample.conv", c, c, 3, 1, hw)
            n = c * hw * hw  # nearest-neighbour: each value copied to 2 x 2 positions
            ops += [Op(f"up{i}.upsample.interp", "elementwise", 0.0, n / 4, n, 0.0, n, 1), op]
    conv_out, _ = _conv("conv_out", c, w["latent_channels"], 3, 1, hw)
    n = c * hw * hw
    return [
        *ops,
        _pointwise("norm_out", "norm", n, flops_per=NORM_FLOPS_PER_ELEMENT),
        _pointwise("act_out", "elementwise", n, flops_per=ACTIVATION_FLOPS_PER_ELEMENT),
        conv_out,
    ]


def _mlp(w: dict) -> list[Op]:
    widths, ops = w["widths"], []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        ops.append(_linear(f"fc{i + 1}", 1, a, b))
        if i < len(widths) - 2:
            ops.append(_pointwise(f"relu{i + 1}", "elementwise", b))
    return ops


def _measured(w: dict) -> list[Op]:
    """A step recorded from a real run (jupyter_hwsim.calibrate): its matmul-class operators
    (convolutions, matrix products, forward and backward) and the rest, per sample."""
    mm, ew = w["matmul"], w["other"]
    return [
        Op(
            "measured.matmul",
            "matmul",
            mm["flops"],
            mm["values_in"],
            mm["values_out"],
            w["params"],
            max(1.0, mm["values_out"]),
            1,
            kernels=int(mm["kernels"]),
        ),
        Op(
            "measured.other",
            "elementwise",
            ew["flops"],
            ew["values_in"],
            ew["values_out"],
            0.0,
            max(1.0, ew["values_out"]),
            1,
            kernels=int(ew["kernels"]),
        ),
    ]


_BUILDERS = {
    "resnet": ["block", "blocks", "num_classes"],
    "transformer": ["layers", "hidden", "heads", "ffn", "vocab"],
    "encoder-decoder": ["encoder_layers", "decoder_layers", "hidden", "heads", "ffn", "vocab"],
    "vit": ["patch", "image_px", "layers", "hidden", "heads", "ffn", "num_classes"],
    "efficientnet": ["stem", "stages", "head", "num_classes"],
    "convnext": ["patch", "depths", "dims", "num_classes"],
    "unet": [
        "latent_px",
        "latent_channels",
        "channels",
        "layers_per_block",
        "attention",
        "heads",
        "context_tokens",
        "context_dim",
    ],  # fmt: skip
    "mlp": ["widths"],
    "measured": ["matmul", "other", "params", "device_bytes_per_sample"],
    "ops": ["ops"],  # an operator list as given (an imported graph: jupyter_hwsim.core.importers.onnx)
}
_PIPELINE = ["input_bytes_per_sample", "preprocess_ms_per_sample", "default_batch_size"]


# what a custom catalogue entry's keys accept: (kind, lo, hi, lo_open); kind is "int", "num", "nums" (a table of
# numbers, e.g. peak_tflops per precision), "ints" (a list of integers) or "name" (text). Every other number of an
# entry is checked finite and >= 0 (scenario.own); these keys are what the model divides by or loops over.
_KEYS = {
    "gpus": {
        "memory_gb": ("num", 0, 1e12, True),
        "memory_bandwidth_gbs": ("num", 0, 1e12, True),
        "peak_tflops": ("nums", 0, 1e12, True),
        "peak_tflops_acc16": ("nums", 0, 1e12, True),
        "gemm_efficiency": ("num", 0, 1.5, True),
        "parallel_units": ("int", 1, 1e12, False),
        "compute_efficiency": ("num", 0, 1.5, True),  # above 1: a boost clock past the rated peak's
        "efficiency_vs_bf16": ("nums", 0, 1.5, True),
        "memory_efficiency": ("num", 0, 1, True),
        "launch_overhead_us": ("num", 0, 1e6, False),
        "matmul_latency_us": ("num", 0, 1e6, False),
        "decode_attention_latency_us": ("num", 0, 1e6, False),
        "kernel_board": ("name", 0, 0, False),
        "tile": ("int", 1, 65536, False),
        "workspace_gb": ("num", 0, 1e12, False),
        "host_threads": ("int", 1, 4096, False),
    },
    "storage": {
        "bandwidth_gbs": ("num", 0, 1e12, True),
        "latency_ms": ("num", 0, 1e12, False),
        "concurrency": ("int", 1, 1e12, False),
    },
    "links": {"bandwidth_gbs": ("num", 0, 1e12, True), "pageable_factor": ("num", 0, 1, True)},
    "engines": {
        "issue_us": ("num", 0, 1e6, False),
        "call_us": ("num", 0, 1e6, False),
        "autocast_us": ("num", 0, 1e6, False),
        "backward_us": ("num", 0, 1e6, False),
        "step_us": ("num", 0, 1e7, False),
        "fusion": ("name", 0, 0, False),
        "accumulate": ("name", 0, 0, False),
        "fuses": ("names", 0, 0, False),
        "autocast_fp32": ("names", 0, 0, False),
        "attention": ("name", 0, 0, False),
        "epilogue_fusion": ("bool", 0, 0, False),
        "decode_bw_efficiency": ("nums", 0, 2, True),
        "decode_bw_efficiency_on": ("tables", 0, 2, True),
        "large_depthwise_bw_efficiency": ("num", 0, 1, True),
        "quantized_matmul": ("name", 0, 0, False),
        "quantized_matmul_efficiency": ("num", 0, 2, True),
        "quantized_matmul_platforms": ("names", 0, 0, False),
        "quantized_matmul_formats": ("names", 0, 0, False),
        "host_overhead_scale": ("num", 0, 100, True),
        "concat_kv_cache": ("bool", 0, 0, False),
        "prefill_logits": ("name", 0, 0, False),
        "attention_table": ("name", 0, 0, False),
        "reconstruct_rows": ("int", 1, 1 << 30, False),
    },
    "workloads": {
        "default_batch_size": ("int", 1, 65536, False),
        "input_bytes_per_sample": ("num", 0, 1e12, True),
        "preprocess_ms_per_sample": ("num", 0, 1e6, False),
        "layers": ("int", 1, 1024, False),  # the largest published models have ~130
        "encoder_layers": ("int", 1, 1024, False),
        "decoder_layers": ("int", 1, 1024, False),
        "source_len": ("int", 1, 1 << 20, False),
        "target_len": ("int", 1, 1 << 20, False),
        "source_vocab": ("int", 0, 1 << 24, False),
        "source_positions": ("int", 0, 1 << 24, False),
        "position_buckets": ("int", 0, 65536, False),
        "mel_bins": ("int", 1, 65536, False),
        "positions": ("int", 0, 1 << 24, False),
        "hidden": ("int", 1, 1 << 20, False),
        "heads": ("int", 1, 65536, False),
        "kv_heads": ("int", 1, 65536, False),
        "head_dim": ("int", 1, 65536, False),
        "ffn": ("int", 1, 1 << 22, False),
        "vocab": ("int", 1, 1 << 24, False),
        "head_outputs": ("int", 0, 1 << 24, False),
        "seq_len": ("int", 1, 1 << 20, False),
        "num_classes": ("int", 1, 1 << 24, False),
        "image_px": ("int", 1, 65536, False),
        "patch": ("int", 1, 65536, False),
        "experts": ("int", 0, 4096, False),
        "experts_per_token": ("int", 1, 4096, False),
        "blocks": ("ints", 0, 1024, False),
        "widths": ("ints", 1, 1 << 24, False),
        "block": ("name", 0, 0, False),
        "params": ("num", 0, 1e15, False),  # arch "measured"
        "device_bytes_per_sample": ("num", 0, 1e12, False),
        "stem": ("int", 1, 1 << 16, False),
        "head": ("int", 1, 1 << 20, False),
        "width_mult": ("num", 0, 64, True),
        "depth_mult": ("num", 0, 64, True),
        "se_ratio": ("num", 0, 1, False),
        "depths": ("ints", 0, 1024, False),
        "dims": ("ints", 1, 1 << 20, False),
        "kernel": ("int", 1, 65536, False),
        "mlp_ratio": ("int", 1, 64, False),
        "attention_dropout": ("num", 0, 1, False),
        "hidden_dropout": ("num", 0, 1, False),
        "latent_px": ("int", 1, 65536, False),
        "latent_channels": ("int", 1, 65536, False),
        "channels": ("ints", 1, 1 << 20, False),
        "layers_per_block": ("int", 1, 1024, False),
        "attention": ("ints", 0, 1024, False),
        "context_tokens": ("int", 1, 1 << 20, False),
        "context_dim": ("int", 1, 1 << 20, False),
    },
}
# engine keys whose text is one of a few words: anything else would fall back to the default without a word
_ENGINE_CHOICES = {
    "attention": ("naive", "fused"),
    "prefill_logits": ("all", "last"),
    "accumulate": ("fp32", "fp16"),
    "conv_layout": ("nchw", "nhwc"),
}
_BUILDERS_GPU = ("memory_gb", "memory_bandwidth_gbs", "peak_tflops", "parallel_units", "compute_efficiency",
                 "memory_efficiency", "launch_overhead_us", "tile", "workspace_gb")  # fmt: skip
_SECTION_FIELD = {
    "gpus": "gpu",
    "storage": "storage",
    "links": "host_link",
    "workloads": "workload",
    "engines": "engine",
}


def _check_key(name: str, value, spec) -> None:
    kind, lo, hi, lo_open = spec
    if kind == "bool":
        if not isinstance(value, bool):
            raise HwsimError(name, value, "true or false")
        return
    if kind == "name":
        if not isinstance(value, str):
            raise HwsimError(name, value, "text")
        return
    if kind == "names":
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise HwsimError(name, value, "a list of texts")
        return
    if kind == "tables":  # a table of tables of numbers: {platform: {precision: figure}}
        if not isinstance(value, dict) or not value:
            raise HwsimError(name, value, "a non-empty table of tables of numbers")
        for k, v in value.items():
            _check_key(f"{name}.{k}", v, ("nums", lo, hi, lo_open))
        return
    if kind in ("nums", "ints"):
        if not isinstance(value, dict if kind == "nums" else (list, tuple)) or not value:
            what = "a non-empty table of numbers" if kind == "nums" else "a non-empty list of integers"
            raise HwsimError(name, value, what)
        many = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in many:
            _check_key(
                f"{name}.{k}" if kind == "nums" else f"{name}[{k}]",
                v,
                ("num" if kind == "nums" else "int", lo, hi, lo_open),
            )
        return
    is_int = isinstance(value, int) and not isinstance(value, bool)
    ok = (is_int or (kind == "num" and isinstance(value, float))) and (value > lo if lo_open else value >= lo)
    if not ok or not value <= hi:
        what = "an integer" if kind == "int" else "a number"
        raise HwsimError(name, value, f"{what} {'>' if lo_open else '>='} {lo:g} and <= {hi:g}")


def check_custom(section: str, entry: dict) -> None:
    """Refuse a custom catalogue entry that lacks what the model needs, or whose numbers it cannot use (one
    schema for every surface: the Python API, the CLI and the magic's files, the REST body)."""
    field = _SECTION_FIELD[section]
    if section != "workloads":
        need = {
            "gpus": [*_BUILDERS_GPU],
            "storage": ["bandwidth_gbs", "latency_ms", "concurrency"],
            "links": ["bandwidth_gbs"],
            "engines": ["fusion", "fuses", "issue_us", "call_us", "autocast_us", "backward_us", "step_us", "trains"],
        }[section]
    else:
        arch = entry.get("arch")
        if not isinstance(arch, str) or arch not in _BUILDERS:
            raise HwsimError("workload.arch", arch, "one of " + ", ".join(_BUILDERS))
        need = _BUILDERS[arch] + _PIPELINE
    for key in need:
        if key not in entry:
            spec = _KEYS[section].get(key)
            what = f"; {_accepts(spec)}" if spec else ""
            raise HwsimError(f"{field}.{key}", None, f"a value for this key in the custom entry{what}")
    for key, spec in {"name": ("name", 0, 0, False), **_KEYS[section]}.items():
        if key in entry:
            _check_key(f"{field}.{key}", entry[key], spec)
    if section == "gpus" and "host_link" in entry:  # a link's name or its own entry
        if isinstance(entry["host_link"], dict):
            check_custom("links", entry["host_link"])
        elif not isinstance(entry["host_link"], str):
            raise HwsimError("gpu.host_link", entry["host_link"], "a link from the catalogue or a table of its entry")
    if section == "workloads":
        _check_workload(entry)
    for key, accepted in _ENGINE_CHOICES.items() if section == "engines" else ():
        if key in entry and entry[key] not in accepted:
            raise HwsimError(f"{field}.{key}", entry[key], " or ".join(accepted))
    _check_measured_table(section, field, entry)
    for key in ("host_overhead_scale_from", "prefill_host_from") if section == "engines" else ():
        lender = entry.get(key)
        if lender is not None and not (isinstance(lender, str) and lender in catalog.engines()):
            raise HwsimError(f"{field}.{key}", lender, f"one of {', '.join(catalog.engines())}")


def _check_measured_table(section: str, field: str, entry: dict) -> None:
    """An engine's attention_table and a device's kernel_board name what the measured attention table holds."""
    from . import attention  # it reads this module's causal share

    key = {"engines": "attention_table", "gpus": "kernel_board"}.get(section)
    if key is None or key not in entry:
        return
    held = attention.tables()[0 if section == "engines" else 1]
    if entry[key] not in held:
        raise HwsimError(f"{field}.{key}", entry[key], f"one of {', '.join(sorted(held))}")


def _accepts(spec) -> str:
    kind, lo, hi, lo_open = spec
    if kind == "bool":
        return "true or false"
    if kind in ("name", "names"):
        return "text" if kind == "name" else "a list of texts"
    what = {"int": "an integer", "num": "a number", "nums": "a table of numbers", "ints": "a list of integers",
            "tables": "a table of tables of numbers"}[kind]  # fmt: skip
    return f"{what} {'>' if lo_open else '>='} {lo:g} and <= {hi:g}"


def _check_workload(w: dict) -> None:
    """What one key alone does not say: heads that divide the width, a block the builder knows, ..."""
    arch = w["arch"]
    if arch == "encoder-decoder":
        for key in ("experts", "sliding_window"):
            if w.get(key):
                raise HwsimError(f"workload.{key}", w[key], "absent for an encoder-decoder (not modelled)")
        if w.get("kv_heads", w["heads"]) != w["heads"]:
            raise HwsimError("workload.kv_heads", w["kv_heads"], f"heads={w['heads']} (an encoder-decoder)")
    if arch in ("transformer", "vit", "encoder-decoder"):
        if not w.get("head_dim") and w["hidden"] < w["heads"]:
            raise HwsimError("workload.hidden", w["hidden"], f"at least heads={w['heads']} (or give head_dim)")
        if w.get("kv_heads", w["heads"]) > w["heads"]:
            raise HwsimError("workload.kv_heads", w["kv_heads"], f"at most heads={w['heads']}")
        if w.get("experts") and w.get("experts_per_token", 0) > w["experts"]:
            raise HwsimError(
                "workload.experts_per_token", w.get("experts_per_token"), f"at most experts={w['experts']}"
            )
        if w.get("experts") and "experts_per_token" not in w:
            raise HwsimError("workload.experts_per_token", None, "a value for this key when experts is given")
    if w.get("head_outputs") is not None and arch != "transformer":
        raise HwsimError("workload.head_outputs", w["head_outputs"], "absent unless arch is transformer")
    if arch == "vit" and w["patch"] > w["image_px"]:
        raise HwsimError("workload.patch", w["patch"], f"at most image_px={w['image_px']}")
    if arch == "resnet" and w["block"] not in ("basic", "bottleneck"):
        raise HwsimError("workload.block", w["block"], "basic or bottleneck")
    if arch == "resnet" and len(w["blocks"]) > 8:
        raise HwsimError("workload.blocks", w["blocks"], "at most 8 stages (each doubles the width)")
    if arch == "efficientnet":
        _check_stages(w["stages"])
    if arch == "convnext" and len(w["depths"]) != len(w["dims"]):
        raise HwsimError("workload.dims", w["dims"], f"one width per stage ({len(w['depths'])} depths)")
    if arch == "unet":
        if len(w["attention"]) != len(w["channels"]):
            raise HwsimError(
                "workload.attention", w["attention"], f"one count per level ({len(w['channels'])} channels)"
            )
        if any(c < w["heads"] for c in w["channels"]):
            raise HwsimError("workload.heads", w["heads"], f"at most the narrowest of channels={w['channels']}")
    if arch == "mlp" and len(w["widths"]) < 2:
        raise HwsimError("workload.widths", w["widths"], "at least two widths (input and output)")
    if arch == "measured":
        for part in ("matmul", "other"):
            if not isinstance(w[part], dict):
                raise HwsimError(f"workload.{part}", w[part], "a table of flops, values_in, values_out, kernels")
            for key in ("flops", "values_in", "values_out", "kernels"):
                v = w[part].get(key)
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise HwsimError(f"workload.{part}.{key}", v, "a number >= 0")
    if arch == "ops":
        _check_ops(w["ops"])


_STAGE_FIELDS = ("expand", "kernel", "stride", "channels", "layers")


def _check_stages(stages) -> None:
    """An EfficientNet stage table: a non-empty list of [expand, kernel, stride, channels, layers] integers."""
    if not isinstance(stages, (list, tuple)) or not stages:
        raise HwsimError("workload.stages", stages, "a non-empty list of [" + ", ".join(_STAGE_FIELDS) + "]")
    for i, row in enumerate(stages):
        if not isinstance(row, (list, tuple)) or len(row) != len(_STAGE_FIELDS):
            raise HwsimError(f"workload.stages[{i}]", row, "[" + ", ".join(_STAGE_FIELDS) + "]")
        for field, v in zip(_STAGE_FIELDS, row):
            _check_key(f"workload.stages[{i}].{field}", v, ("int", 0 if field == "layers" else 1, 65536, False))


_OP_CLASSES = ("matmul", "elementwise", "norm", "batchnorm", "softmax", "mask")
_OP_FLAGS = tuple(f.name for f in dataclasses.fields(Op) if isinstance(f.default, bool))  # conv, vector, training


def _check_ops(ops) -> None:
    """An "ops" entry: a non-empty list of Op fields (name, cls, flops, act_in, act_out; params, rows, ...)."""
    names = list(Op.__dataclass_fields__)
    if not isinstance(ops, (list, tuple)) or not ops:
        raise HwsimError("workload.ops", ops, "a non-empty list of operators (dicts of Op fields)")
    for i, op in enumerate(ops):
        if isinstance(op, Op):
            continue
        if not isinstance(op, dict) or not {"name", "cls", "flops", "act_in", "act_out"} <= set(op) <= set(names):
            raise HwsimError(f"workload.ops[{i}]", op, "a dict of " + ", ".join(names) + " (name to act_out required)")
        if op["cls"] not in _OP_CLASSES:
            raise HwsimError(f"workload.ops[{i}].cls", op["cls"], "one of " + ", ".join(_OP_CLASSES))
        for key in names:
            v = op.get(key)
            if key in _OP_FLAGS:
                if v is not None and not isinstance(v, bool):
                    raise HwsimError(f"workload.ops[{i}].{key}", v, "true or false")
            elif (
                key not in ("name", "cls")
                and v is not None
                and (isinstance(v, bool) or not isinstance(v, (int, float)))
            ):
                raise HwsimError(f"workload.ops[{i}].{key}", v, "a number >= 0")
        share = op.get("causal_share")
        if share is not None and not 0 < share <= 1:
            raise HwsimError(f"workload.ops[{i}].causal_share", share, "a share > 0 and <= 1")
        if not isinstance(op["name"], str):
            raise HwsimError(f"workload.ops[{i}].name", op["name"], "text")


def resolve(workload) -> dict:
    """A catalogue id, a custom dict or an imported file ("hf:config.json", "onnx:model.onnx") -> the entry dict."""
    if isinstance(workload, str) and workload.strip().lower().startswith(("hf:", "onnx:")):
        from .importers import load

        return load(workload)
    return workload if isinstance(workload, dict) else catalog.get("workloads", workload)


def default_seq(w: dict) -> int:
    if w["arch"] == "vit":
        return (w["image_px"] // w["patch"]) ** 2 + 1
    return int(w.get("seq_len", 1))


def forget() -> None:
    """Drop the operator lists built from catalogue entries (an entry added again under its name differs)."""
    for cached in (_ops_cached, _groups_cached, _decode_cached):
        cached.cache_clear()


@functools.lru_cache(maxsize=256)
def _ops_cached(key: str, seq: int) -> tuple[Op, ...]:
    return tuple(_build(catalog.get("workloads", key), seq))


def _build(w: dict, seq: int) -> list[Op]:
    arch = w["arch"]
    if arch == "resnet":
        return _resnet(w)
    if arch == "transformer":
        return _transformer(w, seq)
    if arch == "encoder-decoder":
        return _encoder_decoder(w, seq)
    if arch == "vit":
        return _vit(w)
    if arch == "efficientnet":
        return _efficientnet(w)
    if arch == "convnext":
        return _convnext(w)
    if arch == "unet":
        return _unet(w)
    if arch == "measured":
        return _measured(w)
    if arch == "ops":
        return [op if isinstance(op, Op) else Op(**op) for op in w["ops"]]
    return _mlp(w)


def operators(workload, seq: int | None = None) -> tuple[Op, ...]:
    """The forward operators of one sample."""
    w = resolve(workload)
    seq = seq or default_seq(w)
    if "id" in w and catalog.workloads().get(w["id"]) is w:
        return _ops_cached(w["id"], seq)
    return tuple(_build(w, seq))


def device_bytes_per_sample(w: dict, seq: int) -> float:
    """Bytes of one preprocessed sample copied to the device (fp32 images, int64 tokens)."""
    if "device_bytes_per_sample" in w:
        return float(w["device_bytes_per_sample"])
    if w["arch"] in IMAGE_ARCHS:
        return IMAGE_CHANNELS * w.get("image_px", DEFAULT_IMAGE_PX) ** 2 * FP32_BYTES
    if w["arch"] == "mlp":
        return w["widths"][0] * FP32_BYTES
    if w["arch"] == "unet":  # the fp32 latent and the text encoder's output it attends to
        return (w["latent_channels"] * w["latent_px"] ** 2 + w["context_tokens"] * w["context_dim"]) * FP32_BYTES
    if w["arch"] == "encoder-decoder":  # the source (fp32 log-mel frames, or token ids) and the target's ids
        t = source_len(w, seq)
        source = w["mel_bins"] * 2 * t * FP32_BYTES if w.get("mel_bins") else t * INT64_BYTES
        return source + seq * INT64_BYTES
    return seq * INT64_BYTES
