"""Per-operator and fixed host costs of a framework from one call of a chain of ResNet blocks at two lengths: the
fixed cost cancels in the difference. Shared by bench_tf_overhead.py and bench_mxnet_overhead.py, which run in
environments of their own (their frameworks are not dependencies of jupyter-hwsim)."""

import statistics

SHORT, LONG = 4, 36  # blocks
OPS_PER_BLOCK = 7  # conv, batch norm, relu, conv, batch norm, add, relu


def report(call_us, call: str, op: str, rounds: int = 5) -> float:
    """Print a call's time at both lengths, the time per operator and the fixed cost per call; return the call's
    time at SHORT blocks. call_us(blocks) gives one call's median wall time in us; each length is measured in
    `rounds` alternating rounds, each with a graph of its own, and the medians are kept (a graph's placement in
    memory moves one round's figure by up to a third on a shared VM)."""
    short, long = [], []
    for _ in range(rounds):
        short.append(call_us(SHORT))
        long.append(call_us(LONG))
    t_short, t_long = statistics.median(short), statistics.median(long)
    per_op = (t_long - t_short) / ((LONG - SHORT) * OPS_PER_BLOCK)
    for blocks, t in ((SHORT, t_short), (LONG, t_long)):
        print(f"{call}, {blocks} blocks ({blocks * OPS_PER_BLOCK} {op}s)".ljust(44) + f"{t:8.1f} us")
    print(f"per {op}".ljust(44) + f"{per_op:8.1f} us")
    print(f"fixed per {call}".ljust(44) + f"{t_short - SHORT * OPS_PER_BLOCK * per_op:8.1f} us")
    return t_short
