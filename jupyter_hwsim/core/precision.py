"""The numeric cost of a precision, measured: quantize a matrix product with NumPy and compare to fp64."""

from __future__ import annotations

import functools

import numpy as np

WARN_ABOVE = 0.02  # relative error above which a result carries a warning


def _bf16(a: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even to bfloat16 (keep the top 16 bits of float32)."""
    u: np.ndarray = a.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.view(np.float32)


def _fp8_e4m3(a: np.ndarray) -> np.ndarray:
    """E4M3 rounding: 3 mantissa bits, values clipped to +-448."""
    a = np.clip(a.astype(np.float64), -448, 448)
    m, e = np.frexp(a)
    return np.ldexp(np.round(m * 16) / 16, e)


def _symmetric_int(a: np.ndarray, bits: int, axis: int, group: int = 0) -> np.ndarray:
    """Symmetric integer quantization, dequantized back to float: one scale per channel, or per
    `group` consecutive values along `axis` (llama.cpp Q4_0, GPTQ/AWQ groups) when it divides it."""
    qmax = 2 ** (bits - 1) - 1
    if group and a.shape[axis] % group == 0 and group < a.shape[axis]:
        moved = np.moveaxis(a, axis, 0)
        grouped = moved.reshape(moved.shape[0] // group, group, *moved.shape[1:])
        q = _symmetric_int(grouped, bits, axis=1)
        return np.moveaxis(q.reshape(moved.shape), 0, axis)
    scale = np.abs(a).max(axis=axis, keepdims=True) / qmax
    scale[scale == 0] = 1.0
    return np.clip(np.round(a / scale), -qmax, qmax) * scale


def _quantize(a: np.ndarray, precision: str, axis: int, group: int = 0) -> np.ndarray:
    if precision == "fp32":
        return a.astype(np.float32).astype(np.float64)
    if precision == "tf32":  # 10 mantissa bits
        m, e = np.frexp(a)
        return np.ldexp(np.round(m * 2048) / 2048, e)
    if precision == "fp16":
        return a.astype(np.float16).astype(np.float64)
    if precision == "bf16":
        return _bf16(a).astype(np.float64)
    if precision == "fp8":
        return _fp8_e4m3(a)
    return _symmetric_int(a, {"int8": 8, "int4": 4}[precision], axis, group)


@functools.cache
def matmul_error(precision: str, group_size: int = 0, n: int = 256, seed: int = 0) -> float:
    """Relative Frobenius error of A @ W with both operands in `precision` (int4: weights only);
    integer weights get a scale per group_size weights along the reduction (0: per channel)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    w = rng.standard_normal((n, n)) / np.sqrt(n)
    exact = a @ w
    qa = _quantize(a, "fp16" if precision == "int4" else precision, axis=1)  # int4 is weight-only
    qw = _quantize(w, precision, axis=0, group=group_size)
    err = np.linalg.norm(qa @ qw - exact) / np.linalg.norm(exact)
    # 6 significant digits: BLAS sums in a thread-dependent order, and a result must not depend on where it ran
    return float(f"{err:.6g}")
