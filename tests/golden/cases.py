"""The golden scenarios: every kind, workload, device, precision and fusion mode, with seeded results.

`python tests/golden/cases.py` rewrites results.json.gz from the code as it stands. Only a change meant to move
numbers does that, in the same commit, saying why; a refactor must leave the file untouched.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import random
import sys

from jupyter_hwsim import Scenario, catalog, estimate, simulate

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results.json.gz"
IMAGE = ("resnet18", "resnet50", "vit-b16", "mlp-small")
TEXT = ("bert-base", "bert-large", "gpt2")
LLMS = ("gpt2", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "mistral-7b")
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")
FUSIONS = ("eager", "compiled", "tensorrt")
# the catalogue's devices when the golden file was first written: devices added later do not move the cases
GPUS = ("t4", "v100-sxm2-16gb", "v100-sxm2-32gb", "a10", "a100-sxm-40gb", "a100-sxm-80gb", "l4", "l40s", "h100-sxm",
        "h100-pcie", "h200", "b200", "rtx-4090", "rtx-3090", "mi250x", "mi300x", "tpu-v4", "tpu-v5e", "tpu-v5p",
        "xeon-8480", "m2-ultra", "m3-max", "rtx-3090-ti")  # fmt: skip


def cases() -> list[dict]:
    """About 140 scenario dicts: a sweep of each axis around a default, then seeded random combinations."""
    out: list[dict] = []
    gpus = list(GPUS)
    for gpu in gpus:
        out.append(dict(kind="training", workload="resnet50", gpu=gpu, steps=60))
        out.append(
            dict(
                kind="llm", workload="llama-2-7b", gpu=gpu, concurrency=4, steps=12, output_tokens=32, prompt_tokens=128
            )
        )
    for w in IMAGE + TEXT:
        out.append(dict(kind="training", workload=w, steps=60))
        out.append(dict(kind="inference", workload=w, batch_size=8, steps=60))
        out.append(dict(kind="serving", workload=w, arrival_rate_rps=200, steps=150))
    for w in LLMS:
        out.append(dict(kind="llm", workload=w, gpu="h100-sxm", concurrency=8, steps=16, output_tokens=32))
    for p in PRECISIONS:
        for f in FUSIONS:
            out.append(dict(kind="inference", workload="resnet50", gpu="l4", precision=p, fusion=f, steps=60))
        out.append(
            dict(
                kind="llm",
                workload="llama-2-7b",
                gpu="a100",
                precision=p,
                concurrency=2,
                steps=10,
                output_tokens=16,
                batching="static",
            )
        )
    out += [
        dict(kind="training", loader_workers=0, cpu_cores=2, steps=40),
        dict(kind="training", storage="hdd", loader_workers=32, steps=40),
        dict(kind="training", storage="network-fs", host_cache_gb=200, steps=40),
        dict(kind="training", pin_memory=False, host_link="pcie3", steps=40),
        dict(kind="serving", concurrency=8, think_time_ms=5, steps=120),
        dict(kind="serving", arrival_rate_rps=900, max_batch_size=32, max_queue_delay_ms=5, replicas=2, steps=150),
        dict(kind="llm", arrival_rate_rps=2, concurrency=16, steps=32, output_tokens=64),
        dict(kind="llm", workload="llama-2-70b", gpu="l4", steps=10),
    ]  # out of memory
    rng = random.Random(7)
    for _ in range(30):
        kind = rng.choice(("training", "inference", "serving", "llm"))
        d = dict(
            kind=kind,
            gpu=rng.choice(gpus),
            precision=rng.choice(PRECISIONS),
            fusion=rng.choice(FUSIONS),
            jitter_cv=rng.choice((0.0, 0.1, 0.3)),
        )
        nvidia = catalog.get("gpus", d["gpu"])["name"].startswith("NVIDIA")
        if d["fusion"] == "tensorrt" and (kind == "training" or not nvidia):
            d["fusion"] = "compiled"  # TensorRT neither trains nor runs off NVIDIA: refused since engines came in
        if kind == "llm":
            d.update(
                workload=rng.choice(LLMS),
                concurrency=rng.choice((1, 4, 16)),
                steps=32,
                output_tokens=32,
                prompt_tokens=rng.choice((64, 512)),
            )
        else:
            d.update(
                workload=rng.choice(IMAGE + TEXT),
                batch_size=rng.choice((1, 16, 128)),
                steps=60,
                loader_workers=rng.choice((0, 2, 8)),
                cpu_cores=rng.choice((2, 8, 32)),
            )
        out.append(d)
    return out


def _clean(d: dict) -> dict:
    """A result dict without what varies from run to run (the simulator's wall time)."""
    d = json.loads(json.dumps(d, default=str))
    d.get("sim", {}).pop("wall_ms", None)
    return d


def results() -> list[dict]:
    """Each case's seeded simulation (with re-simulated suggestions for every third case) and estimate."""
    out = []
    for i, fields in enumerate(cases()):
        s = Scenario(**fields)
        out.append(
            {
                "case": fields,
                "simulate": _clean(simulate(s, seed=i, suggest=i % 3 == 0).to_dict()),
                "estimate": _clean(estimate(s, suggest=False).to_dict()),
            }
        )
    return out


if __name__ == "__main__":
    data = results()
    with gzip.open(RESULTS, "wt") as f:
        json.dump(data, f, sort_keys=True, separators=(",", ":"))
    print(f"wrote {len(data)} cases to {RESULTS}", file=sys.stderr)
