"""Your model as a PyTorch module: from_torch traces it on the meta device (no weights allocated) into the
operator list the built-in workloads use, with the FLOPs torch.utils.flop_counter counts for the same module."""

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
}


def _build(label):
    make, shape = MODELS[label]
    with torch.device("meta"):
        model = make().eval()
    if shape[0] == "ids":
        x = torch.empty(shape[1:], dtype=torch.long, device="meta")
    else:
        x = torch.empty(shape, device="meta")
    return model, x


def _reference(model, x) -> float:
    """FlopCounterMode's count for the same module and input, per sample."""
    with torch.device("meta"), FlopCounterMode(display=False) as counter:
        model(x)
    return counter.get_total_flops() / x.shape[0]


@pytest.mark.parametrize("label", list(MODELS))
def test_flops_agree_with_the_flop_counter(label):
    model, x = _build(label)
    w = from_torch(model, x, name=label)
    ref = _reference(model, x)
    ops = workloads.operators(w)
    total = sum(op.flops for op in ops)
    matmul = sum(op.flops for op in ops if op.cls == "matmul")
    # the counter counts matrix products and convolutions; the operator list also has the vector operators
    assert matmul == pytest.approx(ref, rel=1e-3), (label, matmul, ref)
    assert abs(total - ref) / ref < 0.05, (label, total, ref)
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


def test_tied_weights_are_counted_once():
    model, x = _build("gpt2-style")
    w = from_torch(model, x)
    ops = {op.name: op for op in workloads.operators(w)}
    assert ops["wte.embedding"].params == 50257 * 768 and ops["lm_head.linear"].params == 0
    assert w["params_total"] == sum(p.numel() for p in model.parameters())


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
