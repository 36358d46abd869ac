"""The Stable Diffusion v1.5 UNet (issue 26): its parameters against the published count, its FLOPs against a
trace of an equivalent PyTorch module, and a run end to end."""

import math

import pytest

from jupyter_hwsim import Scenario, catalog, estimate
from jupyter_hwsim.core import workloads

# runwayml/stable-diffusion-v1-5 UNet2DConditionModel: 859,520,964 parameters with biases and norm scales (the
# "860M" of the model card); the builders count weight matrices and convolution kernels only (test_workloads_catalog)
PUBLISHED_PARAMS = 859_520_964


def test_sd15_unet_parameters_match_the_published_count():
    w = catalog.get("workloads", "sd15-unet")
    assert catalog.get("workloads", "sd-unet") is w and catalog.get("workloads", "stable-diffusion-unet") is w
    params = sum(op.params for op in workloads.operators(w))
    assert params == pytest.approx(PUBLISHED_PARAMS, rel=0.01)


def _torch_unet():
    """A module with the diffusers UNet2DConditionModel layers of SD v1.5 (convolutions, linear layers, attention
    as matrix products), written from its config for this check."""
    import torch
    from test_from_torch import ResBlock  # the same residual block, timestep embedding of 1280
    from torch import nn

    F = nn.functional

    class Attn(nn.Module):
        def __init__(self, c, ctx):
            super().__init__()
            self.q, self.k, self.v = (
                nn.Linear(c, c, bias=False),
                nn.Linear(ctx, c, bias=False),
                nn.Linear(ctx, c, bias=False),
            )
            self.o = nn.Linear(c, c)

        def forward(self, x, ctx):
            b, s, c = x.shape
            q, k, v = (t.reshape(b, -1, 8, c // 8).transpose(1, 2) for t in (self.q(x), self.k(ctx), self.v(ctx)))
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(c // 8), -1) @ v
            return self.o(a.transpose(1, 2).reshape(b, s, c))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n, self.pi, self.po = nn.GroupNorm(32, c), nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1)
            self.l1, self.a1, self.l2, self.a2 = nn.LayerNorm(c), Attn(c, c), nn.LayerNorm(c), Attn(c, 768)
            self.l3, self.ff1, self.ff2 = nn.LayerNorm(c), nn.Linear(c, 8 * c), nn.Linear(4 * c, c)

        def forward(self, x, ctx):
            b, c, hh, ww = x.shape
            h = self.pi(self.n(x)).flatten(2).transpose(1, 2)
            h = h + self.a1(self.l1(h), self.l1(h))
            h = h + self.a2(self.l2(h), ctx)
            u, g = self.ff1(self.l3(h)).chunk(2, -1)
            h = h + self.ff2(u * F.gelu(g))
            return x + self.po(h.transpose(1, 2).reshape(b, c, hh, ww))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            ch, att = [320, 640, 1280, 1280], [1, 1, 1, 0]
            self.t1, self.t2, self.cin = nn.Linear(320, 1280), nn.Linear(1280, 1280), nn.Conv2d(4, 320, 3, padding=1)
            self.down, skips, c = nn.ModuleList(), [320], 320
            for i, co in enumerate(ch):
                for _ in range(2):
                    self.down.append(nn.ModuleList([ResBlock(c, co, 1280), Block(co) if att[i] else nn.Identity()]))
                    c = co
                    skips.append(c)
                if i < 3:
                    self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                    skips.append(c)
            self.mid = nn.ModuleList([ResBlock(c, c, 1280), Block(c), ResBlock(c, c, 1280)])
            self.up = nn.ModuleList()
            for i, co in enumerate(reversed(ch)):
                for _ in range(3):
                    self.up.append(
                        nn.ModuleList([ResBlock(c + skips.pop(), co, 1280), Block(co) if att[3 - i] else nn.Identity()])
                    )
                    c = co
                if i < 3:
                    self.up.append(nn.Conv2d(c, c, 3, padding=1))
            self.nout, self.cout = nn.GroupNorm(32, 320), nn.Conv2d(320, 4, 3, padding=1)

        def forward(self, x, temb_in, ctx):
            temb = self.t2(F.silu(self.t1(temb_in)))
            x = self.cin(x)
            skips = [x]
            for m in self.down:
                if isinstance(m, nn.Conv2d):
                    x = m(x)
                else:
                    x = m[0](x, temb)
                    x = x if isinstance(m[1], nn.Identity) else m[1](x, ctx)
                skips.append(x)
            x = self.mid[2](self.mid[1](self.mid[0](x, temb), ctx), temb)
            for m in self.up:
                if isinstance(m, nn.Conv2d):
                    x = m(F.interpolate(x, scale_factor=2.0, mode="nearest"))
                else:
                    x = m[0](torch.cat([x, skips.pop()], 1), temb)
                    x = x if isinstance(m[1], nn.Identity) else m[1](x, ctx)
            return self.cout(F.silu(self.nout(x)))

    return UNet


def test_sd15_unet_flops_match_a_trace_of_the_module():
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        net = _torch_unet()()
        args = (torch.zeros(1, 4, 64, 64), torch.zeros(1, 320), torch.zeros(1, 77, 768))
    assert sum(p.numel() for p in net.parameters()) == PUBLISHED_PARAMS  # the module is the published model
    with FlopCounterMode(display=False) as counter:
        net(*args)
    ours = sum(op.flops for op in workloads.operators("sd15-unet") if op.cls == "matmul")
    assert ours == pytest.approx(counter.get_total_flops(), rel=0.05)


@pytest.mark.parametrize("kind", ["inference", "training"])
def test_sd15_unet_runs_end_to_end(kind):
    r = estimate(Scenario(kind=kind, workload="sd-unet", gpu="a100-sxm-80gb", precision="fp16"), suggest=False)
    assert r.throughput > 0 and math.isfinite(r.throughput)
    assert not r.memory["oom"]
    assert workloads.device_bytes_per_sample(catalog.get("workloads", "sd15-unet"), 1) == 302_080
