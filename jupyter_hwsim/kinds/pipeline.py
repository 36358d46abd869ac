"""Training and offline inference: a PyTorch DataLoader pipeline (storage, loader workers on CPU cores, the
host-to-device copy) feeding the GPU step, through the core's simulator or its analytic twin."""

from __future__ import annotations

from ..core import analytic, catalog, costs, simulator
from ..core.costs import host_threads
from ..diagnosis import (
    LINK_LADDER,
    STORAGE_LADDER,
    bigger_gpus,
    engine_changes,
    layout_changes,
    native_precisions,
    next_gpu,
    oom_sentence,
)
from .base import Candidate, KindBase, percentiles, step_details

CLOSE_BEHIND = 0.15  # a stage with less spare capacity than this caps what relieving the bottleneck gains
AS_SATURATED = 0.01  # less spare capacity than this: the next stage is as saturated (assumption: wording only)
# a compute-bound GPU below this MFU whose matmuls fill less than this share of its units is called "mostly
# empty", and a bigger batch is the advice (assumption: wording thresholds, no effect on any number)
EMPTY_GPU_MFU = 0.3
EMPTY_GPU_OCCUPANCY = 0.5


_STAGES = {
    "loop": ("the GPU step", "GPU"),
    "io": ("storage", "storage"),
    "cpu": ("the data loader", "data loader"),
    "host_link": ("the host-to-device copy", "host link"),
}


def _sentence_case(text: str) -> str:
    """The first letter up, the rest as written ("the GPU step" -> "The GPU step", where capitalize() says "gpu")."""
    return text[:1].upper() + text[1:]


def _close_behind(b: str, m, d, state: dict | None) -> str:
    """A sentence when another overlapping stage is within CLOSE_BEHIND of the bottleneck's capacity: by the
    bottleneck law, relieving the bottleneck alone gains at most that stage's spare capacity. The capacities
    are the analytic twin's: the estimate's own state, else computed once here."""
    if b == "memory_capacity" or not m.s.loader_workers or host_threads(m):  # no overlapping stages' capacities
        return ""
    caps = (state or {}).get("capacity") or analytic.steady_state(m, d)["capacity"]
    here = b if b in ("io", "cpu", "host_link") else "loop"
    if caps[here] == float("inf"):
        return ""
    nxt = min((k for k in caps if k != here), key=caps.get)
    spare = max(0.0, caps[nxt] / caps[here] - 1.0)
    if spare >= CLOSE_BEHIND:
        return ""
    if spare < AS_SATURATED:
        return (
            f" {_sentence_case(_STAGES[nxt][0])} is as saturated: relieving the {_STAGES[here][1]} alone "
            "gains next to nothing."
        )
    return (
        f" Close behind is {_STAGES[nxt][0]}, with about {spare:.0%} to spare: about all that relieving "
        f"the {_STAGES[here][1]} alone can gain."
    )


def _explain_pipeline(b: str, m, d, util: dict, mem: dict) -> str:
    s, step = m.s, d.step
    step_ms = step.step_s * 1e3
    if b == "memory_capacity":
        return oom_sentence(m, mem) + "Use a smaller batch, a lower precision or a device with more memory."
    if b == "io":
        return (
            f"The GPU waits on storage: reading a batch of {m.batch} samples keeps the "
            f"{m.storage.get('name', 'storage')} busy {d.storage_s * 1e3:.1f} ms against a "
            f"{step_ms:.1f} ms GPU step. A faster GPU would only idle more; faster storage or "
            "caching the dataset in host RAM helps."
        )
    if b == "cpu" and not s.loader_workers:
        return (
            f"The data loader cannot keep up: with loader_workers=0 the main process preprocesses each batch "
            f"({d.preprocess_s * 1e3:.0f} ms of CPU) between steps, so nothing overlaps the {step_ms:.1f} ms "
            "GPU step. Loader workers (up to the core count) help."
        )
    if b == "cpu":
        return (
            f"The data loader cannot keep up: preprocessing a batch costs {d.preprocess_s * 1e3:.0f} ms "
            f"of CPU and only {min(s.loader_workers, s.cpu_cores)} worker(s) run at once, against a "
            f"{step_ms:.1f} ms GPU step. "
            + (
                "More loader workers (up to the core count) help."
                if s.loader_workers < s.cpu_cores
                else "More CPU cores or cheaper preprocessing (GPU decoding) help."
            )
        )
    if b == "host_link":
        return (
            f"Copying each batch to the device ({m.batch * m.device_bytes / 1e6:.0f} MB over "
            f"{m.link.get('name', 'the host link')}) takes {d.copy_s * 1e3:.1f} ms, longer than the "
            f"{step_ms:.1f} ms step."
            + ("" if s.pin_memory else " Pinned memory would make it asynchronous and faster.")
        )
    if b == "overhead":
        return (
            f"The GPU waits on kernel launches: {step.kernels} kernels per step cost "
            f"{step.issue_s * 1e3:.2f} ms of CPU to issue, but run in {(step.compute_s + step.memory_s) * 1e3:.2f} ms. "
            "Bigger batches, compilation or CUDA graphs amortize the launches."
        )
    if b == "memory_bw":
        return (
            f"The GPU is memory-bound: its kernels wait on memory bandwidth (HBM {util['hbm_bw']:.0%} "
            f"busy) while the math units reach only {util['gpu_mfu']:.0%} of peak {m.precision} FLOP/s. "
            "Fusing operators or a lower precision cut the bytes moved."
        )
    occupancy = min((o.occupancy for o in step.ops if o.bound == "compute"), default=1.0)
    if util["gpu_mfu"] < EMPTY_GPU_MFU and occupancy < EMPTY_GPU_OCCUPANCY:
        return (
            f"The GPU is compute-bound but mostly empty: its matrix products are too small to fill the chip "
            f"(as little as {occupancy:.0%} of its units busy), so it reaches only {util['gpu_mfu']:.0%} of peak "
            f"{m.precision} FLOP/s. A bigger batch (or longer sequences) fills it; a faster chip would idle more."
        )
    return (
        f"The GPU is compute-bound: it reaches {util['gpu_mfu']:.0%} of peak {m.precision} FLOP/s. "
        "Only a lower precision (faster tensor cores), less work per sample or a faster chip help."
    )


def candidates(m, bottleneck: str, mem: dict) -> list[Candidate]:
    """Changes worth trying: (label, fields to change, why)."""
    s, out = m.s, []
    if bottleneck == "memory_capacity":
        b = m.batch
        while b > 1:
            b //= 2
            out.append((f"batch_size={b}", {"batch_size": b}, "less activation memory"))
        for p in ("bf16", "fp8", "int8", "int4"):
            if catalog.get("precisions", p)["bytes"] < catalog.get("precisions", s.precision)["bytes"]:
                out.append((f"precision={p}", {"precision": p}, "fewer bytes per weight"))
        if s.fusion == "eager":
            out += engine_changes(s, [("torch-compile", "fused operators keep fewer activations")])
        out += bigger_gpus(mem)
        return out
    w = s.loader_workers
    out.append((f"loader_workers={max(1, 2 * w)}", {"loader_workers": max(1, 2 * w)}, "more parallel loading"))
    out.append((f"cpu_cores={2 * s.cpu_cores}", {"cpu_cores": 2 * s.cpu_cores}, "more host cores"))
    if isinstance(s.storage, str) and s.storage in STORAGE_LADDER[:-1]:
        nxt = STORAGE_LADDER[STORAGE_LADDER.index(s.storage) + 1]
        out.append(
            (
                f"storage={nxt}",
                {
                    "storage": nxt,
                    "storage_bandwidth_gbs": None,
                    "storage_latency_ms": None,
                    "storage_concurrency": None,
                },
                "faster reads",
            )
        )
    if s.host_cache_gb < m.dataset_gb:
        out.append((f"host_cache_gb={m.dataset_gb:g}", {"host_cache_gb": m.dataset_gb}, "dataset served from RAM"))
    if not s.pin_memory:
        out.append(("pin_memory=true", {"pin_memory": True}, "asynchronous copies"))
    link_id = m.link.get("id")
    if link_id in LINK_LADDER[:-2]:
        nxt = LINK_LADDER[LINK_LADDER.index(link_id) + 1]
        out.append((f"host_link={nxt}", {"host_link": nxt, "host_link_gbs": None}, "faster copies"))
    out += native_precisions(m) + layout_changes(m)
    if s.precision in ("fp32", "tf32"):
        p = "bf16" if "bf16" in m.device["peak_tflops"] else "fp16"
        out.append((f"precision={p}", {"precision": p}, "tensor-core math, half the bytes"))
    elif not s.traits.trains and s.precision in ("fp16", "bf16"):
        out.append(("precision=int8", {"precision": "int8"}, "half the bytes again"))
    out += engine_changes(
        s,
        [
            ("torch-compile", "fewer kernels and HBM round trips, no Python per operator"),
            ("cuda-graphs", "compiled, and each step replayed as one CUDA graph"),
            *([] if s.traits.trains else [("tensorrt", "fused engine, graph launch")]),
        ],
    )
    out.append((f"batch_size={2 * m.batch}", {"batch_size": 2 * m.batch}, "more work per kernel"))
    nxt = next_gpu(m)
    out.append((f"gpu={nxt}", {"gpu": nxt}, "a faster chip"))  # the host link stays what the scenario says
    return out


class PipelineKind(KindBase):
    """Training (forward, backward, optimizer) or offline inference over a DataLoader pipeline."""

    def __init__(self, name: str):
        self.name = name

    def prepare(self, m):
        return costs.demands(m), costs.memory(m)

    def state(self, m, d, method, seed, budget_s):
        st = d.step
        sim, timeline = {}, []
        if method == "estimate":
            state = analytic.steady_state(m, d)
        else:
            out = simulator.run(m, d, seed, budget_s)
            state = simulator.measure(m, d, out)
            timeline = out["timeline"]
            sim = {
                "events": out["events"],
                "simulated_s": float(out["ends"][-1]),
                "warmup_s": float(state["warmup_s"]),
            }
        x = state["batches_per_s"]
        state.update(
            throughput=x * m.batch,
            latency_ms=percentiles(state["step_ms"]),
            flops_per_s=x * st.flops,
            bytes_per_s=x * st.hbm_bytes,
            extra={},
        )
        return state, sim, timeline

    def bottleneck(self, m, d, state, gpu_time):
        b = super().bottleneck(m, d, state, gpu_time)
        if b in ("compute", "memory_bw") and d.step.issue_s >= d.step.kernel_s > 0:
            return "overhead"  # a step as long as its issue: faster kernels change nothing
        return b

    def details(self, m, d, mem, state):
        out = step_details(m, d.step)
        out["demand_ms"] = {
            "storage": d.storage_s * 1e3,
            "read": d.read_s * 1e3,
            "preprocess": d.preprocess_s * 1e3,
            "copy": d.copy_s * 1e3,
        }
        return out

    def explain(self, b, m, d, util, mem, state):
        text = _explain_pipeline(b, m, d, util, mem) + _close_behind(b, m, d, state)
        if m.device.get("host_threads"):  # the device is the host's own CPU (calibrate)
            text = text.replace("The GPU", "The CPU running the step").replace("GPU step", "step")
        return text

    def candidates(self, m, b, mem):
        return candidates(m, b, mem)


TRAINING = PipelineKind("training")
INFERENCE = PipelineKind("inference")
