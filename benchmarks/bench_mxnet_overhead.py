"""The host work MXNet spends per operator and per call of a hybridized Gluon network: the figures
data/engines.toml's mxnet entry uses.

A hybridized chain of ResNet's small blocks (Conv2D, BatchNorm, Activation, add; eight channels on a 2x2 image) runs
on the CPU with static_alloc and static_shape (how NVIDIA's DeepLearningExamples ResNet-50 hybridizes its net),
where each kernel costs next to nothing, so the time per operator is the cached graph's executor and engine: the
dependency engine's scheduling, the operator's dispatch and the kernel call. Printed: the time per operator (from
two chain lengths, so the fixed cost cancels) and one call's fixed cost (Python's Gluon call into the cached
graph and the wait for its output). One worker thread; medians.

engines.toml takes these relative to a PyTorch module call measured beside them: run this in alternation with
benchmarks/bench_framework_overhead.py (a shared VM's speed drifts between hours), as docs/benchmarks.md shows.
MXNet is not a dependency of jupyter-hwsim (it is retired); install it beside it to run this:

    pip install mxnet==1.9.1 "numpy<1.24" && python benchmarks/bench_mxnet_overhead.py
"""

import os

os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402

import mxnet as mx  # noqa: E402
from chain import report  # noqa: E402
from mxnet.gluon import nn  # noqa: E402

CHANNELS = 8


class Block(nn.HybridBlock):
    """One ResNet basic block: 1x1 conv, batch norm, relu, 3x3 conv, batch norm, add, relu."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2D(CHANNELS, 1, use_bias=False), nn.BatchNorm()
        self.c2, self.b2 = nn.Conv2D(CHANNELS, 3, padding=1, use_bias=False), nn.BatchNorm()

    def hybrid_forward(self, F, x):
        y = F.Activation(self.b1(self.c1(x)), act_type="relu")
        return F.Activation(self.b2(self.c2(y)) + x, act_type="relu")


def call_us(blocks: int, reps: int = 300) -> float:
    """Median wall time of one call of the hybridized chain, output waited for."""
    net = nn.HybridSequential()
    for _ in range(blocks):
        net.add(Block())
    net.initialize()
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.random.uniform(shape=(1, CHANNELS, 2, 2))
    for _ in range(20):
        net(x).wait_to_read()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        net(x).wait_to_read()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


if __name__ == "__main__":
    print(f"mxnet {mx.__version__}, hybridized (static_alloc, static_shape), one worker thread")
    report(call_us, "call", "operator")
