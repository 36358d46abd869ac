"""Measured prefill attention: the rate a serving engine's fused causal attention kernel reaches on one chip.

A fused attention kernel does not run at the matmul rate. Each query block loops over its keys with a softmax
between its two products, a causal mask leaves the blocks near the diagonal short, and a few sequences of a few
heads do not fill the chip, so its rate grows with the prompt's length and with batch x heads. NVIDIA's
AIConfigurator measured each engine's attention layer over batch x prompt length on its boards
(data/reference/aic_attention_table.csv: Llama-3-8B's shape, 32 query heads and 8 key-value heads of 128, bf16).
A scenario reads the rate at its own prompt length and at the batch that gives as many (sequence, head) pairs:
batch x heads / 32. FLOPs count as the model counts them: 4 s^2 x heads x head size x the causal share."""

from __future__ import annotations

import csv
import functools
import io
import math
from importlib import resources

from . import workloads

TABLE = "aic_attention_table.csv"
REF_HEADS = 32  # the tables' query heads
REF_HEAD_SIZE = 128


def flops(batch: float, s: int) -> float:
    """The tables' causal self-attention's FLOPs over `batch` prompts of s tokens: its two products, at the causal
    share."""
    return 4.0 * batch * s * s * REF_HEADS * REF_HEAD_SIZE * workloads.causal_share(s, s)


@functools.cache
def _rows() -> tuple[dict, ...]:
    text = resources.files("jupyter_hwsim").joinpath("data", "reference", TABLE).read_text(encoding="utf-8")
    return tuple(csv.DictReader(io.StringIO(text)))


@functools.cache
def _grid(framework: str, board: str) -> dict[int, list[tuple[float, float]]]:
    """{prompt length: [(log2 batch, log2 FLOP/s), ...] by batch} of one engine's table on one board."""
    grid: dict[int, list[tuple[float, float]]] = {}
    for r in _rows():
        if r["framework"] == framework and r["board"] == board:
            b, s = int(r["batch"]), int(r["isl"])
            rate = flops(b, s) / (float(r["latency_us"]) * 1e-6)
            grid.setdefault(s, []).append((math.log2(b), math.log2(rate)))
    return {s: sorted(points) for s, points in sorted(grid.items())}


def tables() -> tuple[frozenset, frozenset]:
    """(engine tables, boards) the file holds: what an engine's attention_table and a device's kernel_board may
    name."""
    return frozenset(r["framework"] for r in _rows()), frozenset(r["board"] for r in _rows())


def _along(points: list[tuple[float, float]], x: float) -> float:
    """y at x on a piecewise-linear curve (log-log here): below the first point, the first segment's line (fewer
    sequences or shorter prompts: the slope the table shows there), never above the first point; above the last,
    the last point's y (the rate levels off once the chip is full)."""
    if len(points) == 1 or x >= points[-1][0]:
        return points[-1][1]
    i = next((k for k in range(1, len(points)) if points[k][0] >= x), 1)
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return min(y, y0) if x < x0 else y


def rate_flops(framework: str, board: str, batch_heads: float, s: int) -> float:
    """FLOP/s of the engine's causal attention on the board for `batch_heads` (batch x heads / REF_HEADS) prompts
    of s tokens: interpolated in log batch and log length between the measured points."""
    grid = _grid(framework, board)
    if not grid:
        raise KeyError(f"no attention table for {framework} on {board}")
    lengths = list(grid)
    lb, ls = math.log2(max(batch_heads, 1e-9)), math.log2(max(s, 1))
    by_length = [(math.log2(n), _along(grid[n], lb)) for n in lengths]
    return 2.0 ** _along(by_length, ls)
