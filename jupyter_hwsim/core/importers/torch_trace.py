"""A PyTorch module -> a workload of arch "ops": one operator per traced aten operator, per sample.

The module runs once on the meta device, so no weight or activation is allocated: a module built under
`with torch.device("meta"):` runs as it is; a module holding real weights runs with meta stand-ins for its
parameters and buffers (torch.func.functional_call), its own tensors untouched and not copied. The forward
runs under inference mode with a dispatch mode that records every aten operator with its shapes; the
operators that name a whole computation (linear, scaled dot-product attention, layer/RMS/group/batch norm)
are recorded as one operator, the other composite ones are decomposed. Matrix products, convolutions and
attention are matmul-class with the FLOPs of torch.utils.flop_counter; norms, softmax, elementwise maths,
pooling, reductions and data movement are the vector classes (as the ONNX importer counts them); views,
factories and detaches are free. An operator of any other type is kept as an elementwise operator of one
FLOP per output value and named in the workload's warnings with its share of the FLOPs.

The leading dimension of the (first) example input is the batch unless `batch=` says otherwise; the
operators are per sample. Operators are named by the module path that ran them ("layers.0.mlp.linear").
"""

from __future__ import annotations

import math
from dataclasses import asdict, replace

from ..errors import HwsimError
from ..workloads import Op, grouped_vector

_ACCEPTED_INPUT = "a tensor, a shape tuple of positive ints, or a tuple/list (positional) or dict (keywords) of tensors"

# aten operator names (the overload packet, a trailing "_" of an in-place variant removed) by role
_LINEAR = {"linear"}
_MATMUL = {"mm", "addmm", "_addmm_activation", "bmm", "baddbmm", "mv", "addmv", "dot", "vdot", "_int_mm", "_scaled_mm"}
_CONV = {
    "convolution", "_convolution", "convolution_overrideable", "_slow_conv2d_forward", "cudnn_convolution",
    "mkldnn_convolution", "slow_conv3d_forward", "slow_conv_transpose2d", "slow_conv_transpose3d",
    "_nnpack_spatial_convolution", "slow_conv_dilated2d", "slow_conv_dilated3d",
}  # fmt: skip


def _vector_conv(op: str, args) -> bool:
    """A forward convolution whose groups each reduce over too few input channels for tensor cores (depthwise):
    its weight is (out, in / groups, *kernel), so groups = in / weight.shape[1]."""
    x, w = args[0], args[1]
    transposed = "transpose" in op or (op in ("convolution", "_convolution") and len(args) > 6 and bool(args[6]))
    if transposed or x.dim() < 2 or w.dim() < 2 or not w.shape[1] or x.shape[1] % w.shape[1]:
        return False
    return grouped_vector(x.shape[1] // w.shape[1], w.shape[1])


_ATTENTION = {
    "scaled_dot_product_attention", "_scaled_dot_product_attention_math", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
}  # fmt: skip
_NORM = {
    "layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm", "native_group_norm",
    "instance_norm",
}  # fmt: skip
_BATCHNORM = {
    "batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_impl_index",
    "_batch_norm_with_update", "_batch_norm_no_update",
}  # fmt: skip
_SOFTMAX = {"softmax", "_softmax", "_safe_softmax", "log_softmax", "_log_softmax"}
_EMBEDDING = {"embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only"}
# operators whose output is rows picked out of their input: on a weight, a lookup that reads only those rows
_GATHER = {"embedding", "index", "_unsafe_index", "index_select", "gather"}
_CHEAP = {
    "add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "relu6", "threshold", "leaky_relu", "hardtanh",
    "clamp", "clamp_min", "clamp_max", "clip", "maximum", "minimum", "fmax", "fmin", "where", "eq", "ne", "lt", "le",
    "gt", "ge", "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_not", "bitwise_xor", "floor", "ceil", "round", "trunc", "sign", "sgn", "remainder", "fmod",
    "floor_divide", "true_divide", "_to_copy", "masked_fill", "addcmul", "addcdiv", "lerp", "pow", "sqrt", "rsqrt",
    "reciprocal", "square", "fill", "zero", "native_dropout", "bernoulli", "isnan", "isinf", "triu", "tril",
    "prelu", "_prelu_kernel", "hardshrink", "softshrink", "nan_to_num", "copysign", "xlogy", "heaviside",
}  # fmt: skip
_TRANSCENDENTAL = {
    "gelu", "silu", "sigmoid", "tanh", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "erf", "erfc",
    "erfinv", "softplus", "elu", "selu", "celu", "mish", "hardsigmoid", "hardswish", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "glu", "log_sigmoid_forward", "logit",
}  # fmt: skip
_POOL_REDUCE = {
    "mean", "sum", "nansum", "amax", "amin", "max", "min", "aminmax", "prod", "var", "std", "var_mean", "std_mean",
    "argmax", "argmin", "cumsum", "cumprod", "logcumsumexp", "topk", "sort", "logsumexp", "norm",
    "linalg_vector_norm", "any", "all", "count_nonzero", "max_pool1d", "max_pool2d", "max_pool3d",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "_adaptive_avg_pool2d",
    "_adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool2d",
    "mkldnn_max_pool2d", "fractional_max_pool2d",
}  # fmt: skip
_MOVE = {
    "clone", "copy", "cat", "stack", "index", "_unsafe_index", "index_select", "gather", "scatter", "scatter_add",
    "scatter_reduce", "index_put", "_index_put_impl", "index_add", "index_copy", "index_fill", "constant_pad_nd",
    "reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
    "replication_pad3d", "repeat", "repeat_interleave", "roll", "flip", "one_hot", "nonzero", "masked_select",
    "masked_scatter", "pixel_shuffle", "pixel_unshuffle", "im2col", "col2im", "narrow_copy", "slice_scatter",
    "select_scatter", "diagonal_scatter", "as_strided_scatter", "channel_shuffle", "native_channel_shuffle",
    "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact2d",
    "upsample_linear1d", "upsample_bilinear2d", "upsample_bicubic2d", "upsample_trilinear3d",
    "_upsample_bilinear2d_aa",
}  # fmt: skip
_FREE = {
    "_unsafe_view", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "lift_fresh", "lift_fresh_copy",
    "empty", "empty_strided", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "arange", "linspace", "eye",
    "scalar_tensor", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal", "uniform",
    "_local_scalar_dense", "resize", "set", "_assert_async", "_assert_tensor_metadata", "_functional_assert_async",
    "sym_constrain_range", "sym_constrain_range_for_size", "_make_dep_token", "detach", "alias", "_reshape_alias",
    "_to_dense", "record_stream",
}  # fmt: skip
# the composite operators recorded whole (not decomposed): one kernel each, or one fused kernel in practice
_WHOLE = _LINEAR | _ATTENTION | _NORM | _BATCHNORM | _SOFTMAX | _EMBEDDING
_PER_ELEMENT = {
    **dict.fromkeys(_NORM, ("norm", 5.0)),
    **dict.fromkeys(_BATCHNORM, ("batchnorm", 5.0)),
    **dict.fromkeys(_SOFTMAX, ("softmax", 5.0)),
    **dict.fromkeys(_CHEAP, ("elementwise", 1.0)),
    **dict.fromkeys(_TRANSCENDENTAL, ("elementwise", 8.0)),
    **dict.fromkeys(_MOVE | _EMBEDDING, ("elementwise", 0.0)),
}


def _torch():
    try:
        import torch
    except ImportError:
        raise HwsimError(
            "from_torch", "torch", "PyTorch installed (the torch extra: pip install 'jupyter-hwsim[torch]')"
        ) from None
    return torch


def from_torch(module, example_input, name=None, training=False, batch=None) -> dict:
    """A workload dict {"arch": "ops", "ops": [...]} from a torch.nn.Module traced on the meta device.

    example_input: a tensor (any device; only its shape and dtype are used), a shape tuple (token ids when
    the module's first layer is an embedding, else its parameters' float type), a tuple/list of tensors
    (positional arguments) or a dict of tensors (keyword arguments). training: trace in train mode
    (dropout, batch statistics); the module's own mode is restored. batch: the size of the batch dimension
    (default: the leading dimension of the first input); the operators are per sample.
    """
    torch = _torch()
    if not isinstance(module, torch.nn.Module):
        raise HwsimError("module", module, "a torch.nn.Module")
    if name is not None and not isinstance(name, str):
        raise HwsimError("name", name, "text (the workload's name)")
    if not isinstance(training, bool):
        raise HwsimError("training", training, "True or False")
    args, kwargs = _inputs(torch, module, example_input)
    first = next(t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor))
    if batch is None:
        batch = int(first.shape[0]) if first.dim() and first.shape[0] > 0 else 1
    elif isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise HwsimError("batch", batch, "a positive integer (the size of the batch dimension)")
    tracer = _Tracer(torch, module, batch)
    tracer.run(args, kwargs, training)
    ops = [_per_sample(op, batch) for op in tracer.ops]
    if not ops:
        raise HwsimError("module", type(module).__name__, "a module whose forward runs at least one operator")
    total = sum(op.flops for op in ops) or 1.0
    unclassified: list[dict] = []
    by_type: dict[str, list[tuple[str, float]]] = {}
    for op, what in tracer.notes:
        share = op.flops / batch / total
        unclassified.append({"name": op.name, "op_type": what, "flops_share": share, "reason": "not a known operator"})
        by_type.setdefault(what, []).append((op.name, share))
    warnings = []
    for what, found in by_type.items():
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        share = sum(s for _, s in found)
        warnings.append(
            f"{found[0][0]}{more} ({what}): not a known operator, counted as elementwise at 1 FLOP per output value;"
            f" {100 * share:.3g}% of FLOPs"
        )
    params_total = float(sum(p.numel() for p in module.parameters()))
    used = float(sum(op.params for op in ops))
    if params_total > used:
        warnings.append(
            f"{params_total - used:.0f} of {params_total:.0f} parameters are not used by forward with this input"
        )
    tensors = [t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor)]
    bytes_in = sum(t.numel() * t.element_size() for t in tensors) / batch
    label = name or type(module).__name__
    shapes = ", ".join(str(tuple(t.shape)) for t in tensors)
    return {
        "arch": "ops",
        "name": label,
        "ops": [asdict(op) for op in ops],
        "default_batch_size": batch if batch > 1 else 1 if params_total > 1e9 else 32,
        "input_bytes_per_sample": bytes_in,
        "device_bytes_per_sample": bytes_in,
        "preprocess_ms_per_sample": 0.01,
        "params_total": params_total,
        "params_active": params_total,
        "unclassified": unclassified,
        "warnings": warnings,
        "sources": {
            "ops": f"traced on the meta device: {type(module).__name__} with input {shapes}, "
            f"{len(ops)} operators, torch {torch.__version__}",
            "params_total": "derived: the module's parameters (each shared tensor once)",
            "input_bytes_per_sample": "derived: the example input of one sample",
            "preprocess_ms_per_sample": "assumption: inputs ready in memory, collate only",
            "default_batch_size": "the example input's batch, else 1 above 1B parameters, else an assumption of 32",
        },
    }


def _inputs(torch, module, example_input):
    """(args, kwargs) of meta tensors for the example input; a refused input names `example_input`."""

    def meta(t):
        return t if t.device.type == "meta" else torch.empty_like(t, device="meta")

    x = example_input
    if isinstance(x, torch.Tensor):
        return (meta(x),), {}
    if isinstance(x, torch.Size) or (
        isinstance(x, (tuple, list)) and x and all(isinstance(d, int) and not isinstance(d, bool) for d in x)
    ):
        if any(d < 1 for d in x):
            raise HwsimError("example_input", x, _ACCEPTED_INPUT)
        return (torch.empty(tuple(x), dtype=_input_dtype(torch, module), device="meta"),), {}
    if isinstance(x, (tuple, list)) and x and isinstance(x[0], torch.Tensor):
        return tuple(meta(t) if isinstance(t, torch.Tensor) else t for t in x), {}
    if isinstance(x, dict) and x and all(isinstance(k, str) for k in x):
        if any(isinstance(t, torch.Tensor) for t in x.values()):
            return (), {k: meta(t) if isinstance(t, torch.Tensor) else t for k, t in x.items()}
    raise HwsimError("example_input", x, _ACCEPTED_INPUT)


def _input_dtype(torch, module):
    """Token ids (int64) for a module whose first layer with weights is an embedding, else its float type."""
    for m in module.modules():
        if next(m.parameters(recurse=False), None) is not None:
            if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)):
                return torch.long
            break
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)


def _per_sample(op: Op, batch: int) -> Op:
    """The operator of one sample: its FLOPs and activations divided by the batch, every other field kept (its
    shape, parameters, and the conv and vector flags)."""
    if batch == 1:
        return op
    return replace(op, flops=op.flops / batch, act_in=op.act_in / batch, act_out=op.act_out / batch)


class _Tracer:
    """Runs the module once on meta tensors and records one Op (for the whole batch) per aten operator."""

    def __init__(self, torch, module, batch: int):
        self.torch, self.module, self.batch = torch, module, batch
        self.ops: list[Op] = []
        self.notes: list = []
        self.stack: list[str] = []
        self.used: dict[str, int] = {}
        self.roots: dict[int, tuple] = {}  # id(tensor) -> (tensor kept alive, parameter ids, is a weight)
        self.counted: set = set()
        self.looked_up: dict[int, int] = {}  # parameter id -> index of the lookup (gather) op that holds it

    def run(self, args, kwargs, training: bool) -> None:
        torch = self.torch
        from torch.utils._python_dispatch import TorchDispatchMode

        tracer = self

        class _Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                op = func._overloadpacket.__name__
                base = op[:-1] if op.endswith("_") and not op.endswith("__") else op
                if base not in _WHOLE and base not in _FREE:
                    with self:
                        out = func.decompose(*args, **kwargs)
                    if out is not NotImplemented:
                        return out
                out = func(*args, **kwargs)
                tracer.record(func, base, args, kwargs, out)
                return out

        stand_ins, params = self._meta_state()
        modes = {m: m.training for m in self.module.modules()}

        def enter(path):
            return lambda _m, _a: self.stack.append(path)  # returns None: the input is unchanged

        def leave(_m, _a, _o):
            if self.stack:
                self.stack.pop()  # returns None: the output is unchanged

        handles = []
        for path, m in self.module.named_modules():
            handles += [m.register_forward_pre_hook(enter(path)), m.register_forward_hook(leave)]
        try:
            self.module.train(training)
            with torch.device("meta"), torch.inference_mode(), _Record():
                if stand_ins:
                    torch.func.functional_call(self.module, stand_ins, args, kwargs, tie_weights=False, strict=False)
                else:
                    self.module(*args, **kwargs)
        except HwsimError:
            raise
        except Exception as e:  # whatever the module's own code raises
            line = (str(e).strip().splitlines() or [""])[0][:120]
            raise HwsimError(
                "module",
                type(self.module).__name__,
                "a module whose forward runs on the meta device with example_input",
                f"{type(e).__name__}: {line}",
            ) from None
        finally:
            for h in handles:
                h.remove()
            for m, mode in modes.items():
                m.training = mode
        del params

    def _meta_state(self) -> tuple[dict, list]:
        """Meta stand-ins for parameters and buffers not on meta (none for a module built on meta); every
        parameter and buffer is registered as a root (a weight: not an activation)."""
        torch = self.torch
        stand_ins: dict = {}
        same: dict[int, object] = {}
        kept = []
        for kind in ("parameters", "buffers"):
            named = getattr(self.module, f"named_{kind}")(remove_duplicate=False)
            for path, t in named:
                if t is None:
                    continue
                m = same.get(id(t))
                if m is None:
                    m = t if t.device.type == "meta" else torch.empty_like(t, device="meta", requires_grad=False)
                    same[id(t)] = m
                    kept.append(m)
                    self.roots[id(m)] = (m, frozenset({id(m)}) if kind == "parameters" else frozenset(), True)
                if m is not t:
                    stand_ins[path] = m
        return stand_ins, kept

    def _root(self, t):
        r = self.roots.get(id(t))
        return r if r is not None and r[0] is t else None

    def _tensors(self, args, kwargs):
        torch = self.torch
        for a in [*args, *kwargs.values()]:
            if isinstance(a, torch.Tensor):
                yield a
            elif isinstance(a, (list, tuple)):
                yield from (x for x in a if isinstance(x, torch.Tensor))

    def record(self, func, op: str, args, kwargs, out) -> None:
        torch = self.torch
        ins = list(self._tensors(args, kwargs))
        if isinstance(out, torch.Tensor):
            outs = [out]
        else:
            outs = [o for o in out if isinstance(o, torch.Tensor)] if isinstance(out, (list, tuple)) else []
        if func.is_view or op in ("_unsafe_view", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk"):
            src = self._root(ins[0]) if ins else None
            if src is not None:  # a view of a weight is the weight
                for o in outs:
                    self.roots[id(o)] = (o, src[1], True)
            return
        if op in _FREE or not outs:
            return
        params, act_in, held = 0.0, 0.0, []
        lookup = op in _GATHER
        for t in ins:
            r = self._root(t)
            if r is None:
                act_in += t.numel()
                continue
            if not lookup:  # a table a lookup holds, now read whole (a tied head): this operator holds it
                for pid in r[1] & self.looked_up.keys():
                    i, n = self.looked_up.pop(pid), self.roots[pid][0].numel()
                    self.ops[i] = replace(self.ops[i], params=self.ops[i].params - n)
                    params += n
            for pid in r[1] - self.counted:
                self.counted.add(pid)
                params += self.roots[pid][0].numel()
                held.append(pid)
        y = outs[0]
        out_n = float(y.numel())
        path = self.stack[-1] if self.stack else ""
        label = f"{path}.{op}" if path else op
        n = self.used.get(label, 0)
        self.used[label] = n + 1
        label = f"{label}_{n}" if n else label
        b = self.batch
        if op in _LINEAR or op in _MATMUL:
            flops = self._matmul_flops(func, op, args, kwargs, out, ins, y)
            cols = y.shape[-1] if y.dim() else 1
            if op in ("bmm", "baddbmm") and y.dim() == 3:
                rows, groups = y.shape[1], max(1, y.shape[0] // b)
            else:
                rows, groups = max(1.0, out_n / max(1, cols) / b), 1
            self.ops.append(Op(label, "matmul", flops, act_in, out_n, params, rows, cols, groups))
        elif op in _CONV:
            flops = self._registry(func, args, kwargs, out)
            if flops is None:
                w = args[1]
                flops = 2.0 * out_n * math.prod(w.shape[1:])
            rows = math.prod(y.shape[2:]) if y.dim() > 2 else 1
            cols = y.shape[1] if y.dim() > 1 else 1
            window = max(args[1].shape[2:], default=1) if args[1].dim() > 2 else 1
            self.ops.append(
                Op(label, "matmul", flops, act_in, out_n, params, rows, cols, conv=True, vector=_vector_conv(op, args),
                   window=int(window))
            )  # fmt: skip
        elif op in _ATTENTION:
            q, k, v = ins[0], ins[1], ins[2]
            s, t = q.shape[-2], k.shape[-2]
            flops = 2.0 * math.prod(q.shape[:-1]) * t * (q.shape[-1] + v.shape[-1])
            heads = q.shape[-3] if q.dim() >= 4 else 1
            self.ops.append(Op(label, "matmul", flops, act_in, out_n, params, s, t, heads))
        else:
            rows = max(1.0, out_n / b)
            if op in _PER_ELEMENT:
                cls, per = _PER_ELEMENT[op]
                if lookup:
                    self.looked_up.update(dict.fromkeys(held, len(self.ops)))
                self.ops.append(
                    Op(label, cls, per * out_n, act_in, out_n, params, rows, 1, gather=lookup and params > 0)
                )
            elif op in _POOL_REDUCE:
                self.ops.append(Op(label, "elementwise", max(act_in, out_n), act_in, out_n, params, rows, 1))
            else:
                o = Op(label, "elementwise", out_n, act_in, out_n, params, rows, 1)
                self.ops.append(o)
                self.notes.append((o, f"aten.{func._overloadpacket.__name__}"))

    def _registry(self, func, args, kwargs, out):
        """FLOPs from torch.utils.flop_counter's formula for this operator, None where it has none."""
        try:
            from torch.utils.flop_counter import flop_registry
        except ImportError:
            return None
        count = flop_registry.get(func._overloadpacket)
        if count is None:
            return None
        try:
            return float(count(*args, **kwargs, out_val=out))
        except Exception:  # a formula that does not take these arguments: ours below
            return None

    def _matmul_flops(self, func, op, args, kwargs, out, ins, y) -> float:
        if op not in _LINEAR:
            flops = self._registry(func, args, kwargs, out)
            if flops is not None:
                return flops
        # 2 x output values x the contracted width (the last dimension of the left operand)
        left = ins[1] if op in ("addmv", "baddbmm", "addmm", "_addmm_activation") and len(ins) > 2 else ins[0]
        k = left.shape[-1] if left.dim() else 1
        return 2.0 * max(1, y.numel()) * k
