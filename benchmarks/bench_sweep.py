"""Sweep scaling: a 200-point sweep in-process, then on a spawned pool of 1 and of 2 worker processes
(DESIGN section 7). The pool rows include the pool's start-up (each worker imports the package), so
pool(1) vs pool(2) is the scaling and inline vs pool(2) is what a user gains.
Run: python benchmarks/bench_sweep.py"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

from jupyter_hwsim import Scenario, sweep

AXES = dict(
    batch_size=[8, 16, 32, 64, 128],
    loader_workers=[1, 2, 4, 8, 16],
    gpu=["t4", "a100", "h100", "l4"],
    precision=["bf16", "fp16"],
)


def timed(s, **kw) -> float:
    t = time.perf_counter()
    table = sweep(s, progress=False, **kw, **AXES)
    assert len(table.rows) == 200
    return time.perf_counter() - t


def pooled(s, n: int) -> float:
    with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn")) as ex:
        return timed(s, executor=ex)


def main():
    s = Scenario(steps=200)
    inline = timed(s, workers=1)
    one, two = pooled(s, 1), pooled(s, 2)
    print(f"200 points in-process: {inline:.1f} s")
    print(f"200 points on a pool of 1: {one:.1f} s")
    print(f"200 points on a pool of 2: {two:.1f} s")
    print(f"speed-up, pool of 2 over pool of 1: {one / two:.2f}x; over in-process: {inline / two:.2f}x")


if __name__ == "__main__":
    main()
