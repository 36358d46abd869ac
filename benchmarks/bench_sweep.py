"""Sweep scaling: a 200-point sweep on 1 and on 2 local worker processes (DESIGN section 7).
Run: python benchmarks/bench_sweep.py"""
from __future__ import annotations

import time

from jupyter_hwsim import Scenario, sweep

AXES = dict(batch_size=[8, 16, 32, 64, 128], loader_workers=[1, 2, 4, 8, 16], gpu=["t4", "a100", "h100", "l4"],
            precision=["bf16", "fp16"])


def main():
    s = Scenario(steps=200)
    times = {}
    for workers in (1, 2):
        t = time.perf_counter()
        table = sweep(s, workers=workers, progress=False, **AXES)
        times[workers] = time.perf_counter() - t
        print(f"{len(table.rows)} points on {workers} worker(s): {times[workers]:.1f} s")
    print(f"speed-up with 2 workers: {times[1] / times[2]:.2f}x")


if __name__ == "__main__":
    main()
