"""Your model as a PyTorch module: from_torch traces it on the meta device (no weights allocated) into the
operator list the built-in workloads use, with the FLOPs torch.utils.flop_counter counts for the same module."""

import math
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the torch extra)")
nn, F = torch.nn, torch.nn.functional

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from jupyter_hwsim import HwsimError, Scenario, estimate, from_torch, simulate  # noqa: E402
from jupyter_hwsim.core import workloads  # noqa: E402

# ---- models built from nn modules (torchvision and transformers are not needed) ---------------------------


def mlp():
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10))


def cnn():
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)]

    return nn.Sequential(
        *block(3, 32), *block(32, 64), *block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)
    )


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


def resnet():
    """A ResNet-18-style stack: stem, four stages of basic blocks, global pooling and a classifier."""
    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for i, width in enumerate((64, 128, 256, 512)):
        layers += [BasicBlock(cin, width, 1 if i == 0 else 2), BasicBlock(width, width, 1)]
        cin = width
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))


def encoder_layer():
    return nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)


class GPT2Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.mlp = nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(approximate="tanh"), nn.Linear(4 * h, h))

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in self.c_attn(self.ln_1(x)).split(h, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, h)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """GPT-2 style: learned positions, pre-norm blocks, the head tied to the token embedding."""

    def __init__(self, vocab=50257, ctx=1024, h=768, layers=4, heads=12):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(ctx, h)
        self.h = nn.ModuleList(GPT2Block(h, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def _rotate(x, cos, sin):
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-b, a), dim=-1) * sin


class LlamaBlock(nn.Module):
    def __init__(self, h, ffn, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, d = heads, kv_heads, h // heads
        self.input_layernorm, self.post_attention_layernorm = nn.RMSNorm(h), nn.RMSNorm(h)
        self.q_proj, self.o_proj = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)
        self.k_proj, self.v_proj = nn.Linear(h, kv_heads * d, bias=False), nn.Linear(h, kv_heads * d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(h, ffn, bias=False), nn.Linear(h, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, h, bias=False)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d), persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        y = self.input_layernorm(x)
        q = self.q_proj(y).view(b, s, self.heads, -1).transpose(1, 2)
        k, v = (p(y).view(b, s, self.kv_heads, -1).transpose(1, 2) for p in (self.k_proj, self.v_proj))
        freqs = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        q, k = _rotate(q, emb.cos(), emb.sin()), _rotate(k, emb.cos(), emb.sin())
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, h))
        y = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


class Llama(nn.Module):
    def __init__(self, vocab=32000, h=1024, ffn=2816, layers=4, heads=16, kv_heads=4):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList(LlamaBlock(h, ffn, heads, kv_heads) for _ in range(layers))
        self.norm = nn.RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class ViT(nn.Module):
    """ViT-B/16 style with 4 layers: a patch convolution, a class token, learned positions, an encoder."""

    def __init__(self, px=224, patch=16, h=768, layers=4, heads=12, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, h, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, h))
        self.pos = nn.Parameter(torch.zeros(1, (px // patch) ** 2 + 1, h))
        layer = nn.TransformerEncoderLayer(h, heads, 4 * h, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(h), nn.Linear(h, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


class Recurrent(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(256, 512, num_layers=2, batch_first=True)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        return self.fc(self.rnn(x)[0][:, -1])


def separable():
    """MobileNet-style depthwise-separable convolutions (grouped convolution), hardswish, upsampling."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, 2, 1),
        nn.BatchNorm2d(32),
        nn.Hardswish(),
        nn.Conv2d(32, 32, 3, 1, 1, groups=32),
        nn.Conv2d(32, 64, 1),
        nn.BatchNorm2d(64),
        nn.ReLU6(),
        nn.ConvTranspose2d(64, 32, 2, 2),
        nn.Upsample(scale_factor=2),
        nn.Conv2d(32, 8, 1),
    )


class AttentionWeights(nn.Module):
    """nn.MultiheadAttention returning its weights: explicit matrix products and softmax, not fused."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(256, 4, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=True)[0]


# ---- more architectures: EfficientNet, ConvNeXt, mixture of experts, encoder-decoder, UNet, 3-D and 1-D conv ----


class SqueezeExcite(nn.Module):
    def __init__(self, c, squeeze):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.fc2(F.silu(self.fc1(F.adaptive_avg_pool2d(x, 1)))))


class MBConv(nn.Module):
    """EfficientNet's block: 1x1 expansion, k x k depthwise convolution, squeeze-and-excitation (a quarter of
    the block's input channels), 1x1 projection, a residual where the shape allows."""

    def __init__(self, cin, cout, expand, k, stride):
        super().__init__()
        mid, layers = cin * expand, []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU()]
        layers += [
            nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.SiLU(),
            SqueezeExcite(mid, max(1, cin // 4)),
            nn.Conv2d(mid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


B0_STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
             (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]  # fmt: skip


def efficientnet_b0():
    """EfficientNet-B0 (Tan & Le 2019, table 1): a 3x3 stem, MBConv stages, a 1x1 head, pooling, a classifier."""
    layers, cin = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU()], 32
    for expand, k, stride, cout, n in B0_STAGES:
        for b in range(n):
            layers.append(MBConv(cin, cout, expand, k, stride if b == 0 else 1))
            cin = cout
    head = [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.SiLU(), nn.AdaptiveAvgPool2d(1)]
    return nn.Sequential(*layers, *head, nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, 1000))


class LayerNorm2d(nn.LayerNorm):
    """A layer norm over the channels of an NCHW tensor (ConvNeXt's downsampling layers)."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dwconv = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pwconv1, self.pwconv2 = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 1e-6))  # layer scale

    def forward(self, x):
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))  # channels last: the linears are the 1x1 convolutions
        return x + (self.gamma * self.pwconv2(F.gelu(self.pwconv1(y)))).permute(0, 3, 1, 2)


def convnext_t():
    """ConvNeXt-T (Liu et al. 2022): a 4x4 patchify stem, stages (3, 3, 9, 3) of (96, 192, 384, 768) channels,
    a layer norm and a 2x2 stride-2 convolution between stages, pooling, a layer norm and the classifier."""
    dims, depths = (96, 192, 384, 768), (3, 3, 9, 3)
    layers = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6)]
    for i, (c, n) in enumerate(zip(dims, depths)):
        if i:
            layers += [LayerNorm2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], c, 2, 2)]
        layers += [ConvNeXtBlock(c) for _ in range(n)]
    return nn.Sequential(
        *layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(dims[-1]), nn.Linear(dims[-1], 1000)
    )


class MixtureOfExperts(nn.Module):
    """Mixtral-style sparse feed-forward layer, run as gpt-fast runs it: a router scores 8 SwiGLU experts per
    token, the top 2 are kept (their softmax weights renormalised), and each token's two experts' weights are
    gathered and applied to it: only the selected experts compute, and nothing depends on the values (the
    Hugging Face loop over experts indexes by the routing result, which the meta device cannot run)."""

    def __init__(self, h=512, ffn=1792, experts=8, top=2):
        super().__init__()
        self.top = top
        self.norm = nn.RMSNorm(h)
        self.gate = nn.Linear(h, experts, bias=False)  # the router
        self.w1, self.w3 = nn.Parameter(torch.empty(experts, ffn, h)), nn.Parameter(torch.empty(experts, ffn, h))
        self.w2 = nn.Parameter(torch.empty(experts, h, ffn))

    def forward(self, x):
        b, s, h = x.shape
        y = self.norm(x).reshape(-1, h)
        weights, chosen = torch.topk(F.softmax(self.gate(y), dim=-1, dtype=torch.float), self.top, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        w1, w3, w2 = self.w1[chosen], self.w3[chosen], self.w2[chosen]  # (tokens, top, out, in)
        z = F.silu(torch.einsum("ti,taoi->tao", y, w1)) * torch.einsum("ti,taoi->tao", y, w3)
        z = torch.einsum("tao,taio->tai", z, w2)
        return x + torch.einsum("tai,ta->ti", z, weights).view(b, s, h)


def _sinusoids(length, channels):
    """Whisper's fixed sinusoidal positions of the audio frames."""
    scales = torch.exp(-math.log(10000) / (channels // 2 - 1) * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * scales[None]
    return torch.cat((t.sin(), t.cos()), dim=1)


class WhisperStyle(nn.Module):
    """Whisper-style encoder-decoder (Radford et al. 2022): two 1-D convolutions over log-mel frames (the second
    of stride 2), fixed sinusoidal positions, a pre-norm encoder; token embeddings with learned positions, a
    decoder with causal self-attention and cross-attention to the audio (nn.Transformer); the head tied."""

    def __init__(self, mels=80, frames=400, h=384, heads=6, layers=2, vocab=51865, ctx=448):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv1d(mels, h, 3, padding=1), nn.Conv1d(h, h, 3, stride=2, padding=1)
        self.register_buffer("audio_pos", _sinusoids(frames // 2, h), persistent=False)
        self.embed, self.pos = nn.Embedding(vocab, h), nn.Parameter(torch.zeros(ctx, h))
        kw = {"dropout": 0.0, "activation": "gelu", "batch_first": True, "norm_first": True}
        encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(h, heads, 4 * h, **kw), layers, nn.LayerNorm(h), enable_nested_tensor=False
        )
        self.transformer = nn.Transformer(h, heads, layers, layers, 4 * h, custom_encoder=encoder, **kw)

    def forward(self, mel, tokens):
        audio = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).transpose(1, 2) + self.audio_pos
        text = self.embed(tokens) + self.pos[: tokens.shape[1]]
        causal = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        out = self.transformer(audio, text, tgt_mask=causal, tgt_is_causal=True)
        return F.linear(out, self.embed.weight)


class ResBlock(nn.Module):
    """A diffusion UNet's residual block: GroupNorm, SiLU, 3x3 convolution, the timestep embedding added per
    channel, GroupNorm, SiLU, 3x3 convolution, a 1x1 convolution on the skip where the width changes."""

    def __init__(self, cin, cout, temb):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(temb, cout)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        y = self.conv1(F.silu(self.norm1(x))) + self.time(F.silu(t))[:, :, None, None]
        return self.skip(x) + self.conv2(F.silu(self.norm2(y)))


class SelfAttention2d(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.norm, self.attn = nn.GroupNorm(32, c), nn.MultiheadAttention(c, heads, batch_first=True)

    def forward(self, x):
        b, c, hh, ww = x.shape
        y = self.norm(x).flatten(2).transpose(1, 2)
        y = self.attn(y, y, y, need_weights=False)[0]
        return x + y.transpose(1, 2).reshape(b, c, hh, ww)


class UNet(nn.Module):
    """Stable Diffusion's building blocks at two resolutions: a sinusoidal timestep embedding and its MLP, down
    (residual blocks, a stride-2 convolution), a middle with self-attention, up (the skips concatenated,
    residual blocks, nearest upsampling and a convolution), GroupNorm throughout."""

    def __init__(self, cin=4, ch=128, temb=512):
        super().__init__()
        self.ch = ch
        self.time = nn.Sequential(nn.Linear(ch, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(cin, ch, 3, padding=1)
        self.down1, self.downsample = ResBlock(ch, ch, temb), nn.Conv2d(ch, ch, 3, 2, 1)
        self.down2 = ResBlock(ch, 2 * ch, temb)
        self.mid1, self.mid2 = ResBlock(2 * ch, 2 * ch, temb), ResBlock(2 * ch, 2 * ch, temb)
        self.mid_attn = SelfAttention2d(2 * ch, 8)
        self.up2 = ResBlock(4 * ch, 2 * ch, temb)
        self.upsample = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(2 * ch, 2 * ch, 3, padding=1))  # nearest
        self.up1 = ResBlock(3 * ch, ch, temb)
        self.out = nn.Sequential(nn.GroupNorm(32, ch), nn.SiLU(), nn.Conv2d(ch, cin, 3, padding=1))

    def forward(self, x, timestep):
        half = self.ch // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, device=x.device) / half)
        angles = timestep[:, None] * freqs[None]
        t = self.time(torch.cat((angles.cos(), angles.sin()), dim=-1))
        h1 = self.down1(self.conv_in(x), t)
        h2 = self.down2(self.downsample(h1), t)
        m = self.mid2(self.mid_attn(self.mid1(h2, t)), t)
        u = self.upsample(self.up2(torch.cat((m, h2), dim=1), t))
        return self.out(self.up1(torch.cat((u, h1), dim=1), t))


def video3d():
    """A 3-D CNN over video clips (C3D/R(2+1)D-style): a full 3x3x3 convolution, a factorised (1x3x3 spatial,
    3x1x1 temporal) one, 3-D batch norm and pooling, a classifier over Kinetics-400's classes."""

    def bn_relu(c):
        return [nn.BatchNorm3d(c), nn.ReLU()]

    return nn.Sequential(
        nn.Conv3d(3, 64, 3, padding=1, bias=False), *bn_relu(64), nn.MaxPool3d((1, 2, 2)),
        nn.Conv3d(64, 128, (1, 3, 3), padding=(0, 1, 1), bias=False), *bn_relu(128),
        nn.Conv3d(128, 128, (3, 1, 1), padding=(1, 0, 0), bias=False), *bn_relu(128), nn.MaxPool3d(2),
        nn.Conv3d(128, 256, 3, stride=2, padding=1, bias=False), *bn_relu(256),
        nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(256, 400),
    )  # fmt: skip


class ConformerBlock(nn.Module):
    """A Conformer block (Gulati et al. 2020), speech: half a feed-forward module, self-attention, the
    convolution module (pointwise, GLU, depthwise 1-D convolution of kernel 31, batch norm, SiLU, pointwise),
    half a feed-forward module, a layer norm."""

    def __init__(self, h=256, heads=4, kernel=31):
        super().__init__()

        def ffn():
            return nn.Sequential(nn.LayerNorm(h), nn.Linear(h, 4 * h), nn.SiLU(), nn.Linear(4 * h, h))

        self.ffn1, self.ffn2 = ffn(), ffn()
        self.attn_norm, self.attn = nn.LayerNorm(h), nn.MultiheadAttention(h, heads, batch_first=True)
        self.conv_norm, self.pointwise1 = nn.LayerNorm(h), nn.Conv1d(h, 2 * h, 1)
        self.depthwise = nn.Conv1d(h, h, kernel, padding=kernel // 2, groups=h)
        self.bn, self.pointwise2 = nn.BatchNorm1d(h), nn.Conv1d(h, h, 1)
        self.norm = nn.LayerNorm(h)

    def forward(self, x):
        x = x + 0.5 * self.ffn1(x)
        y = self.attn_norm(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        y = F.glu(self.pointwise1(self.conv_norm(x).transpose(1, 2)), dim=1)
        x = x + self.pointwise2(F.silu(self.bn(self.depthwise(y)))).transpose(1, 2)
        return self.norm(x + 0.5 * self.ffn2(x))


MODELS = {
    "mlp": (mlp, (16, 784)),
    "cnn": (cnn, (8, 3, 64, 64)),
    "resnet18-style": (resnet, (2, 3, 224, 224)),
    "transformer-encoder-layer": (encoder_layer, (4, 128, 512)),
    "gpt2-style": (GPT2, ("ids", 2, 256)),
    "llama-style-gqa": (Llama, ("ids", 2, 256)),
    "vit-style": (ViT, (2, 3, 224, 224)),
    "lstm": (lambda: Recurrent(nn.LSTM), (4, 32, 256)),
    "gru": (lambda: Recurrent(nn.GRU), (4, 32, 256)),
    "separable-conv": (separable, (4, 3, 64, 64)),
    "mha-with-weights": (AttentionWeights, (4, 64, 256)),
    "efficientnet-b0": (efficientnet_b0, (2, 3, 224, 224)),
    "convnext-t": (convnext_t, (2, 3, 224, 224)),
    "mixtral-style-moe": (MixtureOfExperts, (2, 128, 512)),
    "whisper-style-encoder-decoder": (WhisperStyle, ((2, 80, 400), ("ids", 2, 64))),
    "unet-style-groupnorm-skips": (UNet, ((2, 4, 32, 32), (2,))),
    "video-3d-conv": (video3d, (2, 3, 16, 112, 112)),
    "conformer-depthwise-1d": (ConformerBlock, (4, 200, 256)),
}

# The models whose vector operators hold more than 5% of their FLOPs, which FlopCounterMode does not count:
# EfficientNet-B0 puts a batch norm (5 FLOPs per value) and a SiLU (8) after each of its low-FLOP pointwise and
# depthwise convolutions, 10.2% of its FLOPs (the catalogue's efficientnet-b0 counts them the same way:
# test_traced_efficientnet_and_convnext_match_the_catalogue).
VECTOR_SHARE = {"efficientnet-b0": 0.12}


def _tensor(shape):
    """A meta tensor of a shape; ("ids", *shape) for token ids."""
    if shape[0] == "ids":
        return torch.empty(shape[1:], dtype=torch.long, device="meta")
    return torch.empty(shape, device="meta")


def _build(label):
    """The module on meta and its example input: a tensor, or a tuple of tensors (positional arguments)."""
    make, shape = MODELS[label]
    with torch.device("meta"):
        model = make().eval()
    if isinstance(shape[0], tuple):
        return model, tuple(_tensor(s) for s in shape)
    return model, _tensor(shape)


def _reference(model, x) -> float:
    """FlopCounterMode's count for the same module and input, per sample."""
    xs = x if isinstance(x, tuple) else (x,)
    with torch.device("meta"), FlopCounterMode(display=False) as counter:
        model(*xs)
    return counter.get_total_flops() / xs[0].shape[0]


@pytest.mark.parametrize("label", list(MODELS))
def test_flops_agree_with_the_flop_counter(label):
    model, x = _build(label)
    w = from_torch(model, x, name=label)
    ref = _reference(model, x)
    ops = workloads.operators(w)
    total = sum(op.flops for op in ops)
    matmul = sum(op.flops for op in ops if op.cls == "matmul")
    # the counter counts matrix products, convolutions and attention: the same count, to rounding
    assert matmul == pytest.approx(ref, rel=1e-12), (label, matmul, ref)
    # the operator list also has the vector operators (norms, activations, pooling), which the counter leaves out
    assert abs(total - ref) / ref < VECTOR_SHARE.get(label, 0.05), (label, total, ref)
    assert w["unclassified"] == [], w["warnings"]  # every operator of these models is a known one
    assert w["params_total"] == sum(p.numel() for p in model.parameters())
    assert sum(op.params for op in ops) == w["params_total"]  # each weight counted once, where it is used


def test_llama_operators_shapes_and_parameters():
    model, x = _build("llama-style-gqa")
    w = from_torch(model, x)
    ops = {op.name: op for op in workloads.operators(w)}
    h, s, heads = 1024, 256, 16
    q = ops["layers.0.q_proj.linear"]
    assert (q.cls, q.flops, q.params, q.rows, q.cols) == ("matmul", 2.0 * s * h * h, h * h, s, h)
    assert q.act_in == s * h and q.act_out == s * h  # per sample: the batch of 2 divided out
    assert ops["layers.0.k_proj.linear"].cols == 4 * 64  # grouped-query attention: 4 key/value heads
    attn = ops["layers.0.scaled_dot_product_attention"]  # one fused operator, as the kernel runs
    assert (attn.cls, attn.rows, attn.cols, attn.groups) == ("matmul", s, s, heads)
    assert attn.flops == 4.0 * heads * s * s * 64
    assert ops["layers.0.input_layernorm.rms_norm"].cls == "norm"
    assert ops["embed_tokens.embedding"].params == 32000 * h and ops["embed_tokens.embedding"].flops == 0
    assert ops["layers.0.silu"].flops == 8.0 * s * 2816
    assert ops["lm_head.linear"].params == 32000 * h
    assert w["default_batch_size"] == 2 and w["input_bytes_per_sample"] == s * 8  # int64 token ids


def test_tied_weights_are_counted_once_by_the_head_that_reads_them_whole():
    model, x = _build("gpt2-style")
    w = from_torch(model, x)
    ops = {op.name: op for op in workloads.operators(w)}
    # the lookup reads its tokens' rows; the tied head reads the whole table, so it holds it
    assert ops["wte.embedding"].params == 0 and ops["lm_head.linear"].params == 50257 * 768
    assert ops["wpe.embedding"].gather and ops["wpe.embedding"].params == 1024 * 768
    assert not ops["lm_head.linear"].gather
    assert w["params_total"] == sum(p.numel() for p in model.parameters())


def test_an_embedding_lookup_reads_its_tokens_rows():
    model, x = _build("llama-style-gqa")
    ops = {op.name: op for op in workloads.operators(from_torch(model, x))}
    emb, head = ops["embed_tokens.embedding"], ops["lm_head.linear"]
    assert emb.gather and emb.params == 32000 * 1024 and not head.gather
    # 256 tokens of 1024 values out of a 32000 x 1024 table, per sample
    assert workloads.weight_share(emb, batch=2) == pytest.approx(2 * 256 / 32000)
    assert workloads.weight_share(head, batch=2) == 1.0


@pytest.mark.parametrize("label", list(MODELS))
def test_depthwise_convolutions_are_vector_operators(label):
    """A convolution whose groups each reduce over fewer than 8 input channels has no tensor-core form
    (Op.vector): exactly the depthwise ones are flagged, in 2-D and 1-D, after the batch is divided out."""
    model, x = _build(label)
    ops = workloads.operators(from_torch(model, x))
    depthwise = {
        path
        for path, m in model.named_modules()
        if isinstance(m, nn.modules.conv._ConvNd) and m.groups > 1 and m.in_channels // m.groups < 8
    }
    assert {op.name.rsplit(".", 1)[0] for op in ops if op.vector} == depthwise
    assert all(op.conv and op.cls == "matmul" for op in ops if op.vector)
    expected = {"efficientnet-b0": 16, "convnext-t": 18, "separable-conv": 1, "conformer-depthwise-1d": 1}
    assert sum(op.vector for op in ops) == expected.get(label, 0)


# torchvision's num_params for efficientnet_b0 and convnext_tiny (EfficientNet_B0_Weights, ConvNeXt_Tiny_Weights)
@pytest.mark.parametrize("label,published", [("efficientnet-b0", 5_288_548), ("convnext-t", 28_589_128)])
def test_traced_efficientnet_and_convnext_match_the_catalogue(label, published):
    """The whole networks traced give the catalogue's operator lists built from their layer tables: the same
    matrix and depthwise FLOPs, the vector operators within 3% (the tracer counts a global average pooling at
    one FLOP per value read, the catalogue's builders at one per value written); their parameters are
    torchvision's (the builders leave out biases and norm scales)."""
    model, x = _build(label)
    w = from_torch(model, x)
    traced, built = workloads.operators(w), workloads.operators(label)

    def flops(ops, pick):
        return sum(op.flops for op in ops if pick(op))

    assert flops(traced, lambda o: o.cls == "matmul") == flops(built, lambda o: o.cls == "matmul")
    assert flops(traced, lambda o: o.vector) == flops(built, lambda o: o.vector) > 0
    rest = flops(traced, lambda o: o.cls != "matmul"), flops(built, lambda o: o.cls != "matmul")
    assert rest[0] == pytest.approx(rest[1], rel=0.03)
    assert w["params_total"] == published


class Vaswani(nn.Module):
    """The Transformer of Vaswani et al. 2017 (post-norm nn.Transformer) with one token table shared by the
    source, the target and the head."""

    def __init__(self, vocab=37000, h=1024, heads=16, layers=6, ffn=4096):
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        self.transformer = nn.Transformer(h, heads, layers, layers, ffn, dropout=0.0, batch_first=True)

    def forward(self, src, tgt):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        out = self.transformer(self.embed(src), self.embed(tgt), tgt_mask=causal, tgt_is_causal=True)
        return F.linear(out, self.embed.weight)


def test_the_encoder_decoder_builder_gives_the_traced_flops():
    """The catalogue's encoder-decoder operator list has the matrix FLOPs of the same network traced: Vaswani et
    al.'s big Transformer (transformer-big itself) and the Whisper-style module above (its audio stem too)."""
    with torch.device("meta"):
        big = Vaswani().eval()
    ids = torch.empty(2, 32, dtype=torch.long, device="meta")
    whisper, x = _build("whisper-style-encoder-decoder")
    small = dict(arch="encoder-decoder", encoder_layers=2, decoder_layers=2, hidden=384, heads=6, ffn=1536,
                 vocab=51865, mel_bins=80, source_len=200, positions=448, tie_embeddings=True)  # fmt: skip
    for module, example, built, seq in [(big, (ids, ids), "transformer-big", 32), (whisper, x, small, 64)]:
        traced = workloads.operators(from_torch(module, example))
        ops = workloads.operators(built, seq)
        assert sum(o.flops for o in traced if o.cls == "matmul") == sum(o.flops for o in ops if o.cls == "matmul")
        assert sum(o.flops for o in ops) == pytest.approx(sum(o.flops for o in traced), rel=0.01)
        # weights alike: the traced module also has biases and norm scales (0.1% of transformer-big)
        assert sum(o.params for o in ops) == pytest.approx(sum(o.params for o in traced), rel=0.002)


def test_unused_parameters_are_named_in_the_warnings():
    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.spare = nn.Linear(8, 8), nn.Linear(8, 4)

        def forward(self, x):
            return self.used(x)

    w = from_torch(Unused().to("meta"), (2, 8))
    assert w["params_total"] == 72 + 36 and sum(o["params"] for o in w["ops"]) == 72
    assert any(m.startswith("36 of 108 parameters are not used") for m in w["warnings"])


def test_a_shape_tuple_and_the_batch_divided_out():
    with torch.device("meta"):
        model = Llama(layers=1)
    one, four = from_torch(model, (1, 64)), from_torch(model, (4, 64))  # token ids: the first layer is an embedding

    def matmuls(w):
        return [o["flops"] for o in w["ops"] if o["cls"] == "matmul"]

    assert matmuls(one) == matmuls(four)  # (the rotary table is computed once per batch: not per sample)
    assert (one["default_batch_size"], four["default_batch_size"]) == (32, 4)
    cnn_model = cnn().to("meta")
    a = from_torch(cnn_model, (2, 3, 64, 64))
    assert a["ops"][0]["flops"] == 2.0 * 32 * 64 * 64 * 3 * 9 and a["input_bytes_per_sample"] == 3 * 64 * 64 * 4
    # batch= when the leading dimension is not the batch
    seq_first = from_torch(nn.Linear(8, 8, device="meta"), (10, 4, 8), batch=4)
    assert seq_first["ops"][0]["flops"] == 2.0 * 10 * 8 * 8


def test_a_module_with_real_weights_is_left_untouched():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.LayerNorm(128), nn.Dropout(0.1), nn.Linear(128, 4))
    before = [p.detach().clone() for p in model.parameters()]
    w = from_torch(model, torch.randn(3, 64))
    assert all(p.device.type == "cpu" and torch.equal(p, b) for p, b in zip(model.parameters(), before))
    assert model.training  # its mode is restored
    with torch.device("meta"):
        same = nn.Sequential(nn.Linear(64, 128), nn.LayerNorm(128), nn.Dropout(0.1), nn.Linear(128, 4))
    assert w["ops"] == from_torch(same, (3, 64))["ops"]
    assert model(torch.randn(2, 64)).shape == (2, 4)  # still runs on its weights


def test_training_mode_traces_dropout_and_batch_statistics():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(32, 32), nn.Dropout(0.5), nn.BatchNorm1d(32)).eval()
    ev, tr = from_torch(model, (8, 32)), from_torch(model, (8, 32), training=True)
    assert not any("dropout" in o["name"] for o in ev["ops"])
    assert any(o["name"].startswith("1.") and o["flops"] > 0 for o in tr["ops"])  # the dropout mask
    assert not model.training


def test_inputs_as_a_tuple_or_keywords():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 8), nn.Linear(32, 8)

        def forward(self, x, y=None):
            return self.a(x) + self.b(y)

    with torch.device("meta"):
        two = Two()
    x, y = torch.empty(4, 16), torch.empty(4, 32)
    pos, kw = from_torch(two, (x, y)), from_torch(two, {"x": x, "y": y})
    assert pos["ops"] == kw["ops"] and len(pos["ops"]) == 3
    assert pos["input_bytes_per_sample"] == (16 + 32) * 4


@pytest.mark.parametrize("label", ["transformer-encoder-layer", "resnet18-style", "llama-style-gqa"])
def test_the_scenario_accepts_it(label):
    model, x = _build(label)
    w = from_torch(model, x, name=label)
    for kind in ("inference", "training"):
        s = Scenario(workload=w, kind=kind, gpu="l4", steps=20)
        r = simulate(s, seed=1, suggest=False)
        e = estimate(s, suggest=False)
        assert r.throughput > 0 and e.throughput > 0, (label, kind)
        assert abs(r.throughput - e.throughput) / e.throughput < 0.5


class Spectral(nn.Module):
    """A mixing layer through an FFT (FNet-style): the FFT is not an operator the tracer knows."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 256)

    def forward(self, x):
        return self.fc(torch.fft.fft2(x.to(torch.complex64)).real)


def test_an_unknown_operator_is_reported_with_its_flop_share():
    with torch.device("meta"):
        model = Spectral()
    w = from_torch(model, (4, 64, 256))
    ops = workloads.operators(w)
    total = sum(op.flops for op in ops)
    odd = w["unclassified"]
    assert odd and all(u["op_type"].startswith("aten._fft") for u in odd)
    (first,) = [op for op in ops if op.name == odd[0]["name"]]  # kept, not dropped
    assert first.flops == 64 * 256 and odd[0]["flops_share"] == pytest.approx(first.flops / total)
    (msg,) = [m for m in w["warnings"] if "aten._fft" in m]
    assert msg.startswith(odd[0]["name"]) and "% of FLOPs" in msg
    r = estimate(Scenario(kind="inference", workload=w, gpu="l4"), suggest=False)
    assert any("aten._fft" in m for m in r.warnings)  # the user sees it in the result


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("this module wants\na real tensor")


class DataDependent(nn.Module):
    def forward(self, x):
        return x[x > 0].sum() if x.sum().item() > 0 else x


BAD = [
    ("not a module", (4, 8), "module"),
    (nn.Linear(8, 8), "abc", "example_input"),
    (nn.Linear(8, 8), (0, 8), "example_input"),
    (nn.Linear(8, 8), (), "example_input"),
    (nn.Linear(8, 8), (2.5, 8), "example_input"),
    (nn.Linear(8, 8), [[1, 2]], "example_input"),
    (Raises(), (4, 8), "module"),
    (DataDependent(), (4, 8), "module"),
    (nn.Linear(8, 8), (4, 9), "module"),  # a shape the module cannot take
]


@pytest.mark.parametrize("module,example_input,field", BAD, ids=[f"{i}-{b[2]}" for i, b in enumerate(BAD)])
def test_bad_input_is_one_line_naming_the_argument(module, example_input, field):
    with pytest.raises(HwsimError) as err:
        from_torch(module, example_input)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_bad_name_and_batch():
    for kw, field in [({"name": 3}, "name"), ({"batch": 0}, "batch"), ({"training": "yes"}, "training")]:
        with pytest.raises(HwsimError) as err:
            from_torch(nn.Linear(2, 2), (1, 2), **kw)
        assert err.value.field == field


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as if it were not installed
    with pytest.raises(HwsimError) as err:
        from_torch(object(), (1, 2))
    assert "jupyter-hwsim[torch]" in str(err.value) and "\n" not in str(err.value)


def test_the_core_does_not_import_torch():
    code = "import sys, jupyter_hwsim, jupyter_hwsim.core.importers.torch_trace; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_7b_module_traces_in_seconds_without_weights():
    with torch.device("meta"):
        model = Llama(h=4096, ffn=11008, layers=32, heads=32, kv_heads=32)
    t0 = time.perf_counter()
    w = from_torch(model, (1, 128), name="llama-7b")
    elapsed = time.perf_counter() - t0
    assert elapsed < 10, elapsed
    assert abs(w["params_total"] - 6.74e9) / 6.74e9 < 0.01  # Llama-2-7B: 6,738,415,616
    assert all(p.device.type == "meta" for p in model.parameters())
    assert len(w["ops"]) > 32 * 10 and w["unclassified"] == []
