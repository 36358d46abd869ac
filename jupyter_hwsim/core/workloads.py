"""Workloads as operator lists, built from their architecture (layer shapes, not a FLOP count)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from . import catalog
from .errors import HwsimError

IMAGE_CHANNELS = 3.0  # RGB
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


@dataclass(frozen=True)
class Op:
    """One operator, per sample: FLOPs, activation elements in and out, weight parameters.

    rows x cols is its output matrix per group (for occupancy); groups > 1 means
    independent matrices per sample (attention heads). kernels: launches per pass
    (a measured step lumps many operators of one class into one Op).
    """

    name: str
    cls: str  # matmul | elementwise | norm | batchnorm | softmax
    flops: float
    act_in: float
    act_out: float
    params: float = 0.0
    rows: float = 1.0
    cols: float = 1.0
    groups: int = 1
    kernels: int = 1
    conv: bool = False  # a convolution: its layout matters to tensor cores (costs.nchw_transposes)


def _conv(name, cin, cout, k, stride, hw_in):
    hw = math.ceil(hw_in / stride)
    m = hw * hw
    return Op(
        name,
        "matmul",
        2.0 * m * cout * k * k * cin,
        cin * hw_in * hw_in,
        cout * m,
        cout * cin * k * k,
        m,
        cout,
        conv=True,
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


def _linear(name, s, k, n):
    return Op(name, "matmul", 2.0 * s * k * n, s * k, s * n, k * n, s, n)


def _head_dims(w: dict) -> tuple[int, int]:
    """(head_dim, heads x head_dim): hidden // heads unless the entry names its head_dim."""
    d = w.get("head_dim") or w["hidden"] // w["heads"]
    return d, w["heads"] * d


def _experts(op: Op, w: dict) -> Op:
    """A mixture-of-experts operator: each token runs experts_per_token experts; every expert's weights are held."""
    k, e = w["experts_per_token"], w["experts"]
    return Op(op.name, op.cls, op.flops * k, op.act_in * k, op.act_out * k, op.params * e, op.rows * k, op.cols)


def _transformer_layers(w: dict, s: int) -> list[Op]:
    h, heads, kv = w["hidden"], w["heads"], w.get("kv_heads", w["heads"])
    (d, q), f = _head_dims(w), w["ffn"]
    t = min(s, w.get("sliding_window") or s)  # keys each query attends to
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
        ops += [
            _pointwise(f"{p}.ln1", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
            _linear(f"{p}.qkv", s, h, q + 2 * kv * d),
            Op(f"{p}.attn.scores", "matmul", 2.0 * s * t * q, (s + t) * q, heads * s * t, 0, s, t, heads),
            Op(
                f"{p}.attn.softmax",
                "softmax",
                SOFTMAX_FLOPS_PER_ELEMENT * heads * s * t,
                heads * s * t,
                heads * s * t,
                0,
                heads * s * t,
                1,
            ),
            Op(f"{p}.attn.context", "matmul", 2.0 * s * t * q, heads * s * t + t * q, s * q, 0, s, d, heads),
            _linear(f"{p}.attn.out", s, q, h),
            _pointwise(f"{p}.add1", "elementwise", s * h, n_in=2),
            _pointwise(f"{p}.ln2", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
            *ffn,
            _pointwise(f"{p}.add2", "elementwise", s * h, n_in=2),
        ]
    return ops


def _transformer(w: dict, s: int) -> list[Op]:
    h, vocab = w["hidden"], w["vocab"]
    table = 0 if w.get("tie_embeddings") else vocab * h  # tied: the lm_head holds the one copy
    if w.get("positions"):  # learned position (and token-type) embedding rows
        table += w["positions"] * h
    emb = Op("embedding", "elementwise", 0.0, s, s * h, table, s * h, 1)
    ops = [
        emb,
        *_transformer_layers(w, s),
        _pointwise("ln_f", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
        _linear("lm_head", s, h, vocab),
    ]
    return ops


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
    per_token += [_pointwise("ln_f", "norm", h, flops_per=NORM_FLOPS_PER_ELEMENT), _linear("lm_head", 1, h, w["vocab"])]
    return per_token, per_ctx


def kv_values_per_token(w: dict) -> float:
    """K and V values cached per token: 2 x layers x kv_heads x head_dim."""
    return 2.0 * w["layers"] * w.get("kv_heads", w["heads"]) * _head_dims(w)[0]


def _vit(w: dict) -> list[Op]:
    px, patch, h = w["image_px"], w["patch"], w["hidden"]
    s = (px // patch) ** 2 + 1
    op, _ = _conv("patch_embed", 3, h, patch, patch, px)
    return [
        op,
        *_transformer_layers(w, s),
        _pointwise("ln_f", "norm", s * h, flops_per=NORM_FLOPS_PER_ELEMENT),
        Op(
            "head", "matmul", 2.0 * h * w["num_classes"], h, w["num_classes"], h * w["num_classes"], 1, w["num_classes"]
        ),
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
    "vit": ["patch", "image_px", "layers", "hidden", "heads", "ffn", "num_classes"],
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
        "parallel_units": ("int", 1, 1e12, False),
        "compute_efficiency": ("num", 0, 1, True),
        "memory_efficiency": ("num", 0, 1, True),
        "launch_overhead_us": ("num", 0, 1e6, False),
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
    },
    "workloads": {
        "default_batch_size": ("int", 1, 65536, False),
        "input_bytes_per_sample": ("num", 0, 1e12, True),
        "preprocess_ms_per_sample": ("num", 0, 1e6, False),
        "layers": ("int", 1, 1024, False),  # the largest published models have ~130
        "hidden": ("int", 1, 1 << 20, False),
        "heads": ("int", 1, 65536, False),
        "kv_heads": ("int", 1, 65536, False),
        "head_dim": ("int", 1, 65536, False),
        "ffn": ("int", 1, 1 << 22, False),
        "vocab": ("int", 1, 1 << 24, False),
        "seq_len": ("int", 1, 1 << 20, False),
        "num_classes": ("int", 1, 1 << 24, False),
        "image_px": ("int", 1, 65536, False),
        "patch": ("int", 1, 65536, False),
        "experts": ("int", 0, 4096, False),
        "experts_per_token": ("int", 1, 4096, False),
        "blocks": ("ints", 0, 1024, False),
        "widths": ("ints", 1, 1 << 24, False),
        "block": ("name", 0, 0, False),
    },
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
    if kind == "name":
        if not isinstance(value, str):
            raise HwsimError(name, value, "text")
        return
    if kind in ("nums", "ints"):
        many = value.items() if kind == "nums" else enumerate(value) if isinstance(value, (list, tuple)) else None
        if kind == "nums" and not isinstance(value, dict) or many is None or not value:
            what = "a non-empty table of numbers" if kind == "nums" else "a non-empty list of integers"
            raise HwsimError(name, value, what)
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
    for key, spec in _KEYS[section].items():
        if key in entry:
            _check_key(f"{field}.{key}", entry[key], spec)
    if section == "gpus" and "host_link" in entry:  # a link's name or its own entry
        if isinstance(entry["host_link"], dict):
            check_custom("links", entry["host_link"])
        elif not isinstance(entry["host_link"], str):
            raise HwsimError("gpu.host_link", entry["host_link"], "a link from the catalogue or a table of its entry")
    if section == "workloads":
        _check_workload(entry)


def _accepts(spec) -> str:
    kind, lo, hi, lo_open = spec
    if kind == "name":
        return "text"
    what = {"int": "an integer", "num": "a number", "nums": "a table of numbers", "ints": "a list of integers"}[kind]
    return f"{what} {'>' if lo_open else '>='} {lo:g} and <= {hi:g}"


def _check_workload(w: dict) -> None:
    """What one key alone does not say: heads that divide the width, a block the builder knows, ..."""
    arch = w["arch"]
    if arch in ("transformer", "vit"):
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
    if arch == "vit" and w["patch"] > w["image_px"]:
        raise HwsimError("workload.patch", w["patch"], f"at most image_px={w['image_px']}")
    if arch == "resnet" and w["block"] not in ("basic", "bottleneck"):
        raise HwsimError("workload.block", w["block"], "basic or bottleneck")
    if arch == "resnet" and len(w["blocks"]) > 8:
        raise HwsimError("workload.blocks", w["blocks"], "at most 8 stages (each doubles the width)")
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


_OP_CLASSES = ("matmul", "elementwise", "norm", "batchnorm", "softmax")


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
            if key == "conv":
                if v is not None and not isinstance(v, bool):
                    raise HwsimError(f"workload.ops[{i}].conv", v, "true or false")
            elif (
                key not in ("name", "cls")
                and v is not None
                and (isinstance(v, bool) or not isinstance(v, (int, float)))
            ):
                raise HwsimError(f"workload.ops[{i}].{key}", v, "a number >= 0")
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


@functools.lru_cache(maxsize=256)
def _ops_cached(key: str, seq: int) -> tuple[Op, ...]:
    return tuple(_build(catalog.get("workloads", key), seq))


def _build(w: dict, seq: int) -> list[Op]:
    arch = w["arch"]
    if arch == "resnet":
        return _resnet(w)
    if arch == "transformer":
        return _transformer(w, seq)
    if arch == "vit":
        return _vit(w)
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
    if w["arch"] in ("resnet", "vit"):
        return IMAGE_CHANNELS * w.get("image_px", DEFAULT_IMAGE_PX) ** 2 * FP32_BYTES
    if w["arch"] == "mlp":
        return w["widths"][0] * FP32_BYTES
    return seq * INT64_BYTES
