"""The host work PyTorch eager spends per operator call: the figures data/engines.toml's pytorch-eager entry uses.

A chain of small Conv2d/BatchNorm2d/ReLU modules (ResNet's blocks, eight channels on a 2x2 image) runs on the
CPU, where each kernel costs next to nothing, so the time per module call is the framework's own: Python's
nn.Module __call__, the dispatcher, autograd's bookkeeping and, under autocast, its casts. Printed per call:
inference, inference under autocast (bf16), training (forward and backward) and training under autocast, and a
bare torch.add beside them (the dispatcher alone). One thread; medians of 30 runs.

    python benchmarks/bench_framework_overhead.py
"""

import statistics
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.c1, self.b1, self.r = nn.Conv2d(c, c, 1), nn.BatchNorm2d(c), nn.ReLU()
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)

    def forward(self, x):
        return self.r(self.b2(self.c2(self.r(self.b1(self.c1(x))))) + x)


CALLS_PER_BLOCK = 7  # conv, bn, relu, conv, bn, add, relu


def per_call_us(autocast: bool, train: bool, blocks: int = 16, reps: int = 30) -> float:
    net = nn.Sequential(*[Block(8) for _ in range(blocks)])
    x = torch.randn(1, 8, 2, 2)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=autocast):
            if train:
                net(x).sum().backward()
            else:
                with torch.no_grad():
                    net(x)
        times.append(time.perf_counter() - t)
    return statistics.median(times[3:]) / (blocks * CALLS_PER_BLOCK) * 1e6


def bare_op_us(n: int = 20000) -> float:
    x = torch.randn(4)
    for _ in range(1000):
        torch.add(x, 1)
    t = time.perf_counter()
    for _ in range(n):
        torch.add(x, 1)
    return (time.perf_counter() - t) / n * 1e6


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, one thread")
    print(f"bare torch.add                  {bare_op_us():6.1f} us per op")
    for train in (False, True):
        for autocast in (False, True):
            what = ("training (fwd+bwd)" if train else "inference") + (" + autocast" if autocast else "")
            print(f"module call, {what:28} {per_call_us(autocast, train):6.1f} us per forward call")
