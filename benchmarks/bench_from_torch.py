"""Trace a 7B Llama-like module (32 layers, hidden 4096, FFN 11008, 32 heads, vocab 32000) built on the meta
device with from_torch: the time (cold, in a fresh process, and warm), the parameter count (~6.74e9, as
Llama-2-7B), the FLOPs beside torch.utils.flop_counter's and the memory the process gained (no weight is allocated: the growth is the tracer's, not 27 GB
of fp32 weights). Target: under 10 s.

    python benchmarks/bench_from_torch.py [--seq 128] [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time


def _rss_mb() -> float:
    """The process's current resident set (Linux /proc), else its peak."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 1e6
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


def llama(torch, layers=32, hidden=4096, ffn=11008, heads=32, vocab=32000):
    """A Llama-style decoder from nn modules: RMSNorm, rotary q/k, causal scaled_dot_product_attention,
    a SwiGLU feed-forward, untied embedding and head."""
    nn, F = torch.nn, torch.nn.functional

    def rotate(x, cos, sin):
        a, b = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-b, a), dim=-1) * sin

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (
                nn.Linear(hidden, hidden, bias=False) for _ in range(4)
            )
            d = hidden // heads
            self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, d, 2).float() / d), persistent=False)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = (p(x).view(b, s, heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
            freqs = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(y.transpose(1, 2).reshape(b, s, hidden))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_proj = nn.Linear(hidden, ffn, bias=False)
            self.up_proj = nn.Linear(hidden, ffn, bias=False)
            self.down_proj = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm, self.post_attention_layernorm = nn.RMSNorm(hidden), nn.RMSNorm(hidden)
            self.self_attn, self.mlp = Attention(), MLP()

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, hidden)
            self.layers = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.RMSNorm(hidden)
            self.lm_head = nn.Linear(hidden, vocab, bias=False)

        def forward(self, ids):
            x = self.embed_tokens(ids)
            for layer in self.layers:
                x = layer(x)
            return self.lm_head(self.norm(x))

    return Llama()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=128, help="tokens in the example input (default 128)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    import torch

    from jupyter_hwsim import from_torch

    t_import = time.perf_counter() - t0
    rss_import = _rss_mb()
    t0 = time.perf_counter()
    with torch.device("meta"):
        model = llama(torch)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    w = from_torch(model, (1, a.seq), name="llama-7b (traced)")
    t_cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    from_torch(model, (1, a.seq))
    t_warm = time.perf_counter() - t0
    rss_growth = _rss_mb() - rss_import
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"), FlopCounterMode(display=False) as counter:
        model(torch.empty(1, a.seq, dtype=torch.long))
    reference = counter.get_total_flops()
    flops = sum(op["flops"] for op in w["ops"])
    matmul = sum(op["flops"] for op in w["ops"] if op["cls"] == "matmul")
    out = {
        "seq": a.seq,
        "import_s": round(t_import, 2),
        "build_on_meta_s": round(t_build, 2),
        "trace_cold_s": round(t_cold, 2),
        "trace_warm_s": round(t_warm, 2),
        "operators": len(w["ops"]),
        "params_total": w["params_total"],
        "flops_per_sample": flops,
        "matmul_share": round(matmul / flops, 4),
        "flop_counter_flops": float(reference),
        "total_vs_flop_counter": round(flops / reference - 1, 5),
        "matmul_vs_flop_counter": round(matmul / reference - 1, 6),
        "rss_before_mb": round(rss0),
        "rss_growth_after_import_mb": round(rss_growth),
        "fp32_weights_would_be_mb": round(w["params_total"] * 4 / 1e6),
        "unclassified": len(w["unclassified"]),
    }
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:28s} {v:.4g}" if isinstance(v, float) else f"{k:28s} {v}")
    ok = t_cold < 10 and abs(w["params_total"] - 6.74e9) / 6.74e9 < 0.01 and rss_growth < 1000
    ok = ok and abs(flops / reference - 1) < 0.05
    print("PASS" if ok else "FAIL", "(target: traced under 10 s, ~6.74e9 parameters, no weights allocated)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
