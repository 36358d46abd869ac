"""The host work TensorFlow's graph runtime spends per operator and per step: the figures data/engines.toml's
tensorflow entry uses.

A TF1-style graph (tf.compat.v1, the runtime NVIDIA's DeepLearningExamples TF1 tables ran) of ResNet's small
blocks (Conv2D, FusedBatchNormV3, Relu, Add; eight channels on a 2x2 image) runs on the CPU, where each kernel
costs next to nothing, so the time per node is the executor's own: scheduling, allocation, shape checks and the
kernel call. Printed: one session.run of a one-node graph (the Python client and the session's fixed cost), the
time per node of the block chain (from two chain lengths, so the fixed cost cancels), and one step of a
MonitoredSession with a timing hook and a step-counter hook, the way Estimator.evaluate/predict steps are timed
in those tables, against a bare session.run of the same graph. One thread; medians.

engines.toml takes these relative to a PyTorch module call measured beside them: run this in alternation with
benchmarks/bench_framework_overhead.py (a shared VM's speed drifts between hours), as docs/benchmarks.md shows.
TensorFlow is not a dependency of jupyter-hwsim; install it beside it to run this:

    pip install tensorflow-cpu && python benchmarks/bench_tf_overhead.py
"""

import statistics
import time

import numpy as np
import tensorflow as tf
from chain import SHORT, report

v1 = tf.compat.v1
v1.disable_eager_execution()

CHANNELS = 8


def _block(x, i: int):
    """One ResNet basic block of graph nodes: 1x1 conv, batch norm, relu, 3x3 conv, batch norm, add, relu."""
    init = v1.initializers.random_normal(stddev=0.1)
    w1 = v1.get_variable(f"w1_{i}", [1, 1, CHANNELS, CHANNELS], initializer=init)
    w2 = v1.get_variable(f"w2_{i}", [3, 3, CHANNELS, CHANNELS], initializer=init)
    ones, zeros = tf.ones([CHANNELS]), tf.zeros([CHANNELS])

    def bn(y):
        return v1.nn.fused_batch_norm(y, ones, zeros, mean=zeros, variance=ones, is_training=False)[0]

    y = tf.nn.relu(bn(tf.nn.conv2d(x, w1, 1, "SAME")))
    return tf.nn.relu(bn(tf.nn.conv2d(y, w2, 1, "SAME")) + x)


def _graph(blocks: int):
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(np.random.rand(1, 2, 2, CHANNELS).astype(np.float32))
        y = x
        for i in range(blocks):
            y = _block(y, i)
        out = tf.reduce_sum(y)
        init = v1.global_variables_initializer()
    return g, out, init


def _config():
    """One thread each, and no graph rewriting: grappler would fuse the CPU's conv, batch norm and relu into one
    oneDNN node, which the GPU graphs of the tables do not."""
    c = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    c.graph_options.rewrite_options.disable_meta_optimizer = True
    return c


def _median_run_s(sess, fetch, reps: int = 300) -> float:
    for _ in range(20):
        sess.run(fetch)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        sess.run(fetch)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def session_run_us(blocks: int) -> float:
    """Median wall time of one bare session.run of the chain of `blocks` blocks."""
    g, out, init = _graph(blocks)
    with v1.Session(graph=g, config=_config()) as sess:
        sess.run(init)
        return _median_run_s(sess, out) * 1e6


class _Timer(v1.train.SessionRunHook):
    """The tables' timing hook: wall time from its before_run to its after_run."""

    def __init__(self):
        self.times: list[float] = []

    def before_run(self, run_context):
        self.t0 = time.perf_counter()

    def after_run(self, run_context, run_values):
        self.times.append(time.perf_counter() - self.t0)


class _Counter(v1.train.SessionRunHook):
    """Estimator's eval-step hook: it adds the step counter to every step's fetches."""

    def __init__(self, counter):
        self.counter = counter

    def before_run(self, run_context):
        return v1.train.SessionRunArgs(self.counter)


def monitored_step_us(blocks: int, steps: int = 300) -> float:
    """Median hook-timed step of a MonitoredSession running the chain, with the step counter fetched each step."""
    g, out, _ = _graph(blocks)
    with g.as_default():
        counter = v1.get_variable("eval_step", [], tf.int64, v1.zeros_initializer(), trainable=False)
        update = v1.assign_add(counter, 1)
        timer = _Timer()
        creator = v1.train.ChiefSessionCreator(config=_config())
        with v1.train.MonitoredSession(session_creator=creator, hooks=[timer, _Counter(counter)]) as sess:
            for _ in range(steps + 20):
                sess.run([out, update])
    return statistics.median(timer.times[20:]) * 1e6


if __name__ == "__main__":
    print(f"tensorflow {tf.__version__} (tf.compat.v1 graph mode), one thread")
    bare = report(session_run_us, "session.run", "node")
    hooked = monitored_step_us(SHORT)
    print(f"hook-timed MonitoredSession step, {SHORT} blocks".ljust(44) + f"{hooked:8.1f} us (bare run {bare:.1f} us)")
    print("per step beyond a bare run".ljust(44) + f"{hooked - bare:8.1f} us")
