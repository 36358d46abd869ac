"""An ONNX graph -> a workload of arch "ops": one operator per graph node, per sample.

The graph is read with the `onnx` package (pip install onnx), its shapes inferred with symbolic dimensions set
to 1 (or to `dims`); the leading dimension of the first input is the batch. Matrix products, convolutions
and fused attention are matmul-class; norms, softmax, elementwise maths, pooling, reductions and data
movement are the vector classes; reshapes and constants are free. A node of any other type is kept as an
elementwise operator of one FLOP per output value and named in the workload's warnings with its share of
the FLOPs; nothing is dropped silently.
"""

from __future__ import annotations

import math
from dataclasses import asdict, astuple, replace
from pathlib import Path

from ..errors import HwsimError
from ..workloads import Op, grouped_vector

_MATMUL = {"MatMul", "Gemm", "FusedMatMul", "MatMulInteger", "QLinearMatMul", "MatMulNBits"}
_CONV = {"Conv", "ConvInteger", "QLinearConv", "FusedConv", "NhwcConv"}
_ATTENTION = {"Attention", "MultiHeadAttention", "GroupQueryAttention"}
_NORM = {
    "LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization", "GroupNormalization", "InstanceNormalization", "LpNormalization",
    "MeanVarianceNormalization", "EmbedLayerNormalization",
}  # fmt: skip
_SOFTMAX = {"Softmax", "LogSoftmax"}
_CHEAP = {
    "Add", "Sub", "Mul", "Div", "Relu", "LeakyRelu", "PRelu", "Clip", "Max", "Min", "Sum", "Mean", "Neg", "Abs",
    "Sqrt", "Reciprocal", "Pow", "Where", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
    "Not", "Xor", "Floor", "Ceil", "Round", "Sign", "Mod", "IsNaN", "IsInf", "Cast", "CastLike", "QuantizeLinear",
    "DequantizeLinear", "DynamicQuantizeLinear", "BiasAdd", "Trilu", "ThresholdedRelu", "Shrink",
}  # fmt: skip
_TRANSCENDENTAL = {
    "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "Erf", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish", "Exp", "Log",
    "Softplus", "Softsign", "Elu", "Selu", "Celu", "Mish", "Swish", "Sin", "Cos", "BiasSplitGelu",
}  # fmt: skip
_ROTARY = {"RotaryEmbedding"}
_POOL_REDUCE = {
    "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool", "ReduceMean",
    "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare",
    "ArgMax", "ArgMin", "CumSum", "TopK", "RoiAlign", "MaxRoiPool",
}  # fmt: skip
_MOVE = {
    "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements",
    "Expand", "Tile", "Pad", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "OneHot", "Compress", "NonZero",
    "ReverseSequence",
}  # fmt: skip
# operators whose output is rows picked out of their data input: on a weight, a lookup that reads only those rows
_GATHER = {"Gather", "GatherElements", "GatherND"}
_FREE = {
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Shape", "Size", "Constant", "ConstantOfShape", "Identity",
    "Dropout", "Range",
}  # fmt: skip
_VECTOR = {
    **dict.fromkeys(_NORM, ("norm", 5.0)),
    **dict.fromkeys(_SOFTMAX, ("softmax", 5.0)),
    "BatchNormalization": ("batchnorm", 5.0),
    **dict.fromkeys(_CHEAP, ("elementwise", 1.0)),
    **dict.fromkeys(_TRANSCENDENTAL, ("elementwise", 8.0)),
    **dict.fromkeys(_ROTARY, ("elementwise", 3.0)),
    **dict.fromkeys(_MOVE, ("elementwise", 0.0)),
}
_INT_TYPES = {2, 3, 4, 5, 6, 7, 9, 12, 13}  # uint8..int64, bool, uint32/64: shapes, indices (not weights)
_QUANT_WEIGHT_TYPES = {2, 3}  # uint8, int8: quantized weights do count


def _onnx():
    try:
        import onnx
    except ImportError:
        raise HwsimError(
            "workload", "onnx:...", "an ONNX model read with the onnx package", "pip install onnx"
        ) from None
    return onnx


def from_onnx(path, name=None, dims=None, source=None) -> dict:
    """A workload dict {"arch": "ops", "ops": [...]} from a local .onnx file.

    dims: values for symbolic input dimensions by name (e.g. {"sequence_length": 128}); the rest are 1.
    """
    spec = source or str(path)
    if isinstance(path, str) and path.lower().startswith("onnx:"):
        path = path[5:].strip()
    onnx = _onnx()
    p = Path(path).expanduser()
    if not p.is_file():
        raise HwsimError("workload", spec, "onnx:<path of a local .onnx file>", f"no such file: {p.absolute()}")
    try:
        model = onnx.load(str(p), load_external_data=False)
    except Exception as e:  # the protobuf parser's errors have no common base
        raise HwsimError(
            "workload", spec, "an ONNX model file", f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
        ) from None
    g, dims = model.graph, dict(dims or {})
    weights = {t.name: (list(t.dims), t.data_type) for t in g.initializer}
    inputs = [i for i in g.input if i.name not in weights]
    if not inputs or not g.node:
        raise HwsimError("workload", spec, "an ONNX graph with inputs and nodes")
    set_to = []
    for inp in inputs:
        for j, d in enumerate(inp.type.tensor_type.shape.dim):
            if not d.HasField("dim_value"):
                label = d.dim_param or f"{inp.name}[{j}]"
                d.dim_value = int(dims.get(label, 1))
                set_to.append(f"{label}={d.dim_value}")
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:
        raise HwsimError(
            "workload", spec, "an ONNX graph whose shapes can be inferred", str(e).splitlines()[0][:80]
        ) from None
    g = model.graph
    first = inputs[0].type.tensor_type.shape.dim
    batch = first[0].dim_value if len(first) and first[0].dim_value > 1 else 1
    ops, notes = _Graph(g, weights, batch).ops()
    if batch > 1:  # per sample
        ops = [Op(o.name, o.cls, o.flops / batch, o.act_in / batch, o.act_out / batch, *astuple(o)[5:]) for o in ops]
    warnings = []
    if set_to:
        warnings.append("symbolic input dimensions set to " + ", ".join(dict.fromkeys(set_to)) + " (dims= to change)")
    total = sum(op.flops for op in ops) or 1.0
    unclassified = []
    for kind, op, what in notes:
        share = op.flops / batch / total
        unclassified.append({"name": op.name, "op_type": what, "flops_share": share, "reason": kind})
        warnings.append(f"{op.name} ({what}): {kind}; {100 * share:.3g}% of FLOPs")
    bytes_in = _input_bytes(onnx, inputs) / batch
    w = {
        "arch": "ops",
        "name": name or g.name or p.stem,
        "ops": [asdict(op) for op in ops],
        "default_batch_size": batch if batch > 1 else 32,
        "input_bytes_per_sample": bytes_in,
        "device_bytes_per_sample": bytes_in,
        "preprocess_ms_per_sample": 0.01,
        "params_total": float(sum(op.params for op in ops)),
        "unclassified": unclassified,
        "warnings": warnings,
        "sources": {
            "ops": f"{spec}: {len(g.node)} nodes, opset {', '.join(str(o.version) for o in model.opset_import)}",
            "input_bytes_per_sample": "derived: the graph inputs of one sample",
            "preprocess_ms_per_sample": "assumption: inputs ready in memory, collate only",
            "default_batch_size": "the graph's batch dimension, else an assumption of 32",
        },
    }
    return w


def _input_bytes(onnx, inputs) -> float:
    total = 0.0
    for inp in inputs:
        t = inp.type.tensor_type
        try:
            size = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).itemsize
        except Exception:
            size = 4
        total += math.prod(d.dim_value for d in t.shape.dim) * size
    return total


class _Graph:
    def __init__(self, g, weights: dict, batch: int):
        self.g, self.batch = g, batch
        self.notes: list = []
        self.shape: dict = {}
        self.etype: dict = {}
        for vi in [*g.input, *g.value_info, *g.output]:
            t = vi.type.tensor_type
            if t.HasField("shape"):
                self.shape[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
            self.etype[vi.name] = t.elem_type
        self.roots: dict = {}  # weight tensor -> the stored tensors it derives from
        for name, (d, dt) in weights.items():
            self.shape[name], self.etype[name], self.roots[name] = d, dt, {name}
        for node in g.node:
            if node.op_type == "Constant":
                for a in node.attribute:
                    if a.name == "value" and a.HasField("t"):
                        self.shape[node.output[0]] = list(a.t.dims)
                        self.etype[node.output[0]] = a.t.data_type
                        self.roots[node.output[0]] = {node.output[0]}
        self.counted: set = set()
        self.fresh: list = []  # the stored weights the operator being classified counted first
        self.meta: set = set()  # shape arithmetic (Shape, Size and what derives from them): no kernel

    def n(self, name):
        s = self.shape.get(name)
        return None if s is None or any(d is None for d in s) else math.prod(s)

    def ops(self):
        out: list[Op] = []
        looked_up: dict[str, int] = {}  # stored weight -> index of the lookup (gather) op that holds it
        for i, node in enumerate(self.g.node):
            name = node.name or f"{node.op_type}_{i}"
            ins = [x for x in node.input if x]
            if node.op_type in ("Shape", "Size") or (
                ins and any(x in self.meta for x in ins) and all(x in self.meta or x in self.roots for x in ins)
            ):
                self.meta.update(node.output)
                continue
            if node.op_type != "Constant" and ins and all(x in self.roots for x in ins):
                for y in node.output:  # constant folding: a weight transformed (transposed, cast, dequantized)
                    self.roots[y] = set().union(*(self.roots[x] for x in ins))
                continue
            if node.op_type in _FREE:
                continue
            self.fresh = []
            op = self.classify(node, name, ins)
            if op is None:
                continue
            if op.gather:
                looked_up.update(dict.fromkeys(self.fresh, len(out)))
            else:  # a table a lookup holds, now read whole (a tied head): this operator holds it
                for r in {r for x in ins for r in self.roots.get(x, ()) if r in looked_up}:
                    j, n = looked_up.pop(r), self.n(r) or 0
                    out[j], op = replace(out[j], params=out[j].params - n), replace(op, params=op.params + n)
            out.append(op)
        return out, self.notes

    def params(self, ins) -> float:
        """Parameters of the stored weights behind these inputs, each counted once in the graph."""
        total = 0.0
        for x in ins:
            for r in self.roots.get(x, ()):
                dt = self.etype.get(r)
                if r in self.counted or (dt in _INT_TYPES and dt not in _QUANT_WEIGHT_TYPES):
                    continue
                self.counted.add(r)
                self.fresh.append(r)
                total += self.n(r) or 0
        return total

    def acts(self, ins) -> float:
        return float(sum(self.n(x) or 0 for x in ins if x not in self.roots))

    def classify(self, node, name, ins):
        t, y = node.op_type, node.output[0] if node.output else ""
        out_n = self.n(y)
        out_n = None if out_n is None else float(out_n)
        if out_n is None:
            op = Op(name, "elementwise", 0.0, self.acts(ins), 0.0, self.params(ins), 1, 1)
            self.notes.append(("output shape unknown, counted as 0 FLOPs", op, t))
            return op
        act_in, ys = self.acts(ins), self.shape[y]
        if t in _MATMUL:
            return self.matmul(node, name, ins, ys, out_n, act_in)
        if t in _CONV:
            w = self.shape.get(ins[3] if t == "QLinearConv" else ins[1]) or [ys[1], 1]
            k = math.prod(w[1:])
            rows = math.prod(ys[2:]) if len(ys) > 2 else 1
            vector = grouped_vector(_attr(node, "group", 1), w[1])
            return Op(name, "matmul", 2.0 * out_n * k, act_in, out_n, self.params(ins), rows, ys[1], conv=True,
                      vector=vector, window=max(w[2:], default=1))  # fmt: skip
        if t == "ConvTranspose":
            w, xs = self.shape.get(ins[1]), self.shape.get(ins[0])
            k = math.prod(w[1:]) * _attr(node, "group", 1) if w else 1
            rows = math.prod(xs[2:]) if xs and len(xs) > 2 else 1
            return Op(name, "matmul", 2.0 * (self.n(ins[0]) or 0) * k, act_in, out_n, self.params(ins), rows, ys[1])
        if t in _ATTENTION:
            op = self.attention(node, name, ins, out_n, act_in)
            if op is not None:
                return op
        rows = max(1.0, out_n / self.batch)
        if t in _VECTOR:
            cls, per = _VECTOR[t]
            params = self.params(ins)
            return Op(name, cls, per * out_n, act_in, out_n, params, rows, 1, gather=t in _GATHER and params > 0)
        if t in _POOL_REDUCE:
            return Op(name, "elementwise", max(act_in, out_n), act_in, out_n, self.params(ins), rows, 1)
        op = Op(name, "elementwise", float(out_n), act_in, out_n, self.params(ins), rows, 1)
        self.notes.append(("not a known operator, counted as elementwise at 1 FLOP per output value", op, t))
        return op

    def matmul(self, node, name, ins, ys, out_n, act_in):
        t = node.op_type
        a = self.shape.get(ins[0]) or []
        if t == "MatMulNBits":
            k, cols = _attr(node, "K", 0), _attr(node, "N", ys[-1])
            params = float(k * cols) if ins[1] not in self.counted else 0.0
            self.counted.add(ins[1])
        else:
            b_in = ins[3] if t == "QLinearMatMul" else ins[1]
            if t == "Gemm" and _attr(node, "transA", 0):
                k = a[-2] if len(a) >= 2 else 1
            else:
                k = a[-1] if a else 1
            cols = ys[-1] if ys else 1
            weight_b = b_in in self.roots
            params = self.params(ins)
        if t == "MatMulNBits" or weight_b or len(ys) < 2:
            rows, groups = max(1.0, out_n / max(1, cols) / self.batch), 1
        else:
            rows, groups = ys[-2], int(out_n // max(1, ys[-2] * ys[-1] * self.batch))
        return Op(name, "matmul", 2.0 * out_n * (k or 1), act_in, out_n, params, rows, cols, max(1, groups))

    def attention(self, node, name, ins, out_n, act_in):
        """Fused attention: 4 x queries x keys x query width (scores and context), plus the packed
        QKV projection of com.microsoft Attention."""
        q, k = self.shape.get(ins[0]), self.shape.get(ins[1]) if len(ins) > 1 else None
        heads = _attr(node, "num_heads", 0) or _attr(node, "q_num_heads", 0) or 1
        if not q or None in q:
            return None
        if node.op_type == "Attention" and node.domain == "com.microsoft":
            wq = k  # the packed [input, 3 x hidden] weight
            if not wq or len(wq) != 2:
                return None
            s, width = q[1], wq[1] // 3
            proj = 2.0 * math.prod(q[:2]) * wq[0] * wq[1]
            return Op(name, "matmul", proj + 4.0 * q[0] * s * s * width, act_in, out_n, self.params(ins), s, s, heads)
        s, width = (q[2], q[1] * q[3]) if len(q) == 4 else (q[1], q[2])
        keys = s
        if k and None not in k:
            keys = k[2] if len(k) == 4 else k[1]
        past = self.shape.get(node.input[3]) if node.op_type == "GroupQueryAttention" and len(node.input) > 3 else None
        if past and None not in past and len(past) == 4:
            keys += past[2]
        return Op(name, "matmul", 4.0 * q[0] * s * keys * width, act_in, out_n, self.params(ins), s, keys, heads)


def _attr(node, key, default):
    for a in node.attribute:
        if a.name == key:
            return a.i
    return default
