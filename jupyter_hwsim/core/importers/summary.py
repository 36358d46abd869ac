"""What was understood of an imported model: layers, parameters, FLOPs, warnings (`python -m jupyter_hwsim import`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import HwsimError


def spec_of(path: str) -> str:
    """The workload string of a model file: "hf:..." and "onnx:..." as given, a .onnx file as onnx:, a
    config.json or a model directory as hf:."""
    path = path.strip()
    if not path:
        raise HwsimError("import", path, "a config.json, a model directory or an .onnx file")
    if path.lower().startswith(("hf:", "onnx:")):
        return path
    return f"onnx:{path}" if Path(path).suffix.lower() == ".onnx" else f"hf:{path}"


def describe(workload, seq: int | None = None) -> dict:
    """The figures a user checks an import by. FLOPs are of one forward pass: per token for a language model
    (at `seq` tokens, default the model's context), per sample otherwise."""
    from ..workloads import default_seq, operators, resolve
    from .hf import parameter_counts

    w = resolve(workload)
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 1):
        raise HwsimError("--seq", seq, "a positive integer (tokens per sequence)")
    lm = w.get("arch") == "transformer"
    s = (seq or default_seq(w)) if lm else default_seq(w)
    ops = operators(w, s)
    flops = float(sum(op.flops for op in ops))
    counts = parameter_counts(w)
    total = float(w.get("params_total", counts["total"]))
    out = {
        "name": w.get("name", ""),
        "arch": w.get("arch"),
        "model_type": w.get("hf_model_type"),
        "layers": w.get("layers"),
        "encoder_layers": w.get("encoder_layers"),
        "decoder_layers": w.get("decoder_layers"),
        "hidden": w.get("hidden"),
        "heads": w.get("heads"),
        "kv_heads": w.get("kv_heads"),
        "head": _head_text(w) if lm else None,
        "operators": len(ops),
        "matmul_operators": sum(op.cls == "matmul" for op in ops),
        "params_total": total,
        "params_active": float(w.get("params_active", counts["active"])),
        "seq_len": s if lm or w.get("arch") == "vit" else None,
        "flops_per_token" if lm else "flops_per_sample": flops / s if lm else flops,
        "matmul_flops_share": float(sum(op.flops for op in ops if op.cls == "matmul")) / flops if flops else 0.0,
        "warnings": [str(m) for m in w.get("warnings", ())],
        "source": next(iter(w.get("sources", {}).values()), ""),
    }
    return {k: v for k, v in out.items() if v is not None}


def _head_text(w: dict) -> str:
    """What a transformer's last layer scores: the vocabulary, or its task head's outputs (head_outputs)."""
    n = w.get("head_outputs")
    if n is None:
        return f"vocabulary ({w['vocab']:,} scores per position)"
    return f"task head, {n} outputs per position" if n else "none (the hidden states are the output)"


def describe_text(d: dict) -> str:
    """describe()'s dict as aligned lines."""
    lines = []
    for key, value in d.items():
        if key == "warnings":
            continue
        if isinstance(value, float):
            text = f"{value:.4g}" if value < 1e4 else f"{value:.4g} ({value:,.0f})"
        else:
            text = str(value)
        lines.append(f"{key.replace('_', ' '):20s} {text}")
    lines += [f"warning: {m}" for m in d.get("warnings", [])] or ["warnings             none"]
    return "\n".join(lines)
