"""Core benchmarks (DESIGN section 7): estimate() time, simulate() medians, events/s against bare SimPy,
and how cost grows with steps and batch size. Run: python benchmarks/bench_core.py"""

from __future__ import annotations

import statistics
import time

import simpy

from jupyter_hwsim import Scenario, estimate, simulate

DEFAULTS = {
    "training resnet50 / a100": Scenario(),
    "training bert-base / t4": Scenario(workload="bert-base", gpu="t4", precision="fp16"),
    "inference resnet50 / l4": Scenario(kind="inference", workload="resnet50", gpu="l4", precision="int8"),
    "training mlp-small / h100": Scenario(workload="mlp-small", gpu="h100"),
    "serving resnet50 / a100": Scenario(kind="serving"),
    "serving bert-base / t4": Scenario(
        kind="serving", workload="bert-base", gpu="t4", precision="fp16", arrival_rate_rps=200
    ),
    "llm llama-2-7b / a100": Scenario(kind="llm"),
    "llm mistral-7b / h100 static": Scenario(kind="llm", workload="mistral-7b", gpu="h100", batching="static"),
}


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(out)


def bare_simpy_events_per_s(steps: int, workers: int) -> float:
    """The same shape with nothing but SimPy: workers -> store -> consumer, timeouts only."""
    env = simpy.Environment()
    store = simpy.Store(env, capacity=workers * 2)
    cores = simpy.Resource(env, capacity=workers)

    def worker():
        while True:
            with cores.request() as r:
                yield r
                yield env.timeout(1.0)
            yield env.timeout(0.1)
            yield store.put(1)

    def loop():
        for _ in range(steps):
            yield store.get()
            yield env.timeout(0.2)

    for _ in range(workers):
        env.process(worker())
    done = env.process(loop())
    t = time.perf_counter()
    env.run(until=done)
    return next(env._eid) / (time.perf_counter() - t)  # scheduled events, counted as the engine counts them


def main():
    s0 = Scenario()
    estimate(s0)
    simulate(s0, suggest=False)  # warm caches (catalogue, operator lists)
    for name, s in DEFAULTS.items():
        estimate(s)
        print(
            f"estimate {name:28} median {timed(lambda s=s: estimate(s, suggest=False), 200):.3f} ms alone, "
            f"{timed(lambda s=s: estimate(s), 20):6.2f} ms with suggestions"
        )
    for name, s in DEFAULTS.items():
        core = timed(lambda s=s: simulate(s, suggest=False), 11)
        full = timed(lambda s=s: simulate(s), 5)
        print(f"simulate {name:28} median {core:6.1f} ms alone, {full:6.1f} ms with re-simulated suggestions")
    r = simulate(s0, suggest=False)
    t = timed(lambda: simulate(s0, suggest=False), 5)
    ours = r.sim["events"] / (t / 1e3)
    bare = bare_simpy_events_per_s(s0.steps + 30, s0.loader_workers)
    print(f"events/s  hwsim {ours:,.0f}   bare SimPy loop {bare:,.0f}   ratio {ours / bare:.2f}")
    print("steps      ms")
    for steps in (100, 200, 400, 800, 1600):
        print(f"{steps:6d} {timed(lambda steps=steps: simulate(s0.replace(steps=steps), suggest=False), 3):8.1f}")
    print("batch      ms")
    for b in (16, 64, 256, 1024):
        print(f"{b:6d} {timed(lambda b=b: simulate(s0.replace(batch_size=b, gpu='b200'), suggest=False), 3):8.1f}")
    print("dataset_gb ms")
    for gb in (1, 100, 10000):
        print(f"{gb:6d} {timed(lambda gb=gb: simulate(s0.replace(dataset_gb=gb), suggest=False), 3):8.1f}")


if __name__ == "__main__":
    main()
