"""LLM generation (kind="llm"): prefill, decode steps that read the weights (a mixture of experts: the routed
experts) and the KV cache, static and continuous batching.

A decode step of B sequences holding C cached tokens in all costs
  linear(B) + C x attention-per-cached-token + launch gaps
(the weights are read once per step and shared by the batch; each sequence
reads its own K and V). The engine advances from event to event (an arrival, a
sequence finishing, a prefill); between events the batch is fixed, so its steps
are summed in closed form, one event per segment rather than per token.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from ..core import catalog, costs, workloads
from ..core.simulator import Environment, jitter
from ..diagnosis import bigger_gpus, engine_changes, lower_precisions, native_precisions, next_gpu, oom_sentence
from .base import Candidate, KindBase, percentiles

PREFILL_CHUNK_TOKENS = 8192  # prefill activations are held for at most this many tokens at once
# the closed form's cap on the share of time newcomers' prefills take from decoding: the inter-token latency
# stretches by 1 / (1 - share), at most 20x, where arrivals x prefill time reach 1 (assumption; docs/metrics.md)
PREFILL_INTERRUPT_MAX_SHARE = 0.95


def kv_precision(s) -> str:
    """KV-cache format: as asked, else 16-bit beside integer weights, else the model's precision."""
    if s.kv_precision:
        return s.kv_precision
    return "fp16" if s.precision in ("int8", "int4") else s.precision


@dataclass
class DecodeCost:
    """Costs of decode steps as linear functions of the cached tokens C, per batch size B."""

    m: object
    r: costs.Rates
    wb: float
    ab: float
    kvb: float
    issue_s: float  # CPU seconds to issue one kernel (and, in a Python framework, its operator call)
    step_host_s: float  # fixed CPU seconds per step (a compiled graph's guards, a session call)
    per_ctx: list
    ctx_compute_s: float = 0.0  # per cached token
    ctx_memory_s: float = 0.0
    ctx_flops: float = 0.0
    ctx_bytes: float = 0.0
    ctx_kernels: int = 0
    attention_fixed_s: float = 0.0  # per step: its attention calls' fixed time (decode_attention_latency_us)
    _lin: dict = field(default_factory=dict)

    def __post_init__(self):
        fused = costs.fused_classes(self.m)
        flash = "softmax" in fused  # fused attention: scores never written to HBM
        heads = self.m.workload["heads"]
        # a cache grown by torch.cat is read and written whole every step, beside attention's own read
        reads = 3.0 if self.m.engine.get("concat_kv_cache") else 1.0
        for op in self.per_ctx:
            cache = op.act_in - (heads if op.name.endswith("context") else 0)
            if op.cls == "softmax":
                if flash:
                    continue
                nbytes = 2 * heads * self.ab
            else:
                nbytes = cache * self.kvb * reads + (0 if flash else heads * self.ab)
            rate = self.r.matmul if op.cls == costs.MATMUL else self.r.vector
            t_c, t_m = op.flops / rate, nbytes / self.r.bw
            if t_c >= t_m:
                self.ctx_compute_s += t_c
            else:
                self.ctx_memory_s += t_m
            self.ctx_flops += op.flops
            self.ctx_bytes += nbytes
            self.ctx_kernels += op.kernels  # an encoder-decoder's: a self- and a cross-attention kernel
            if op.name.endswith("scores"):  # an attention call per layer (an encoder-decoder's two: kernels=2)
                self.attention_fixed_s += op.kernels * self.r.decode_attention_fixed_s

    def linear(self, b: int) -> tuple[float, float, float, float, int]:
        """(compute_s, memory_s, flops, bytes, kernels) of the per-token operators at batch b."""
        hit = self._lin.get(b)
        if hit is None:
            cs = ms = fl = by = 0.0
            k = 0
            for (f, nb, t_c, t_m, kern), n, _ in self._shapes(b).values():
                if t_c >= t_m:
                    cs += n * t_c
                else:
                    ms += n * t_m
                fl, by, k = fl + n * f, by + n * nb, k + n * kern
            hit = self._lin[b] = (cs, ms, fl, by, k)
        return hit

    def _shapes(self, b: int) -> dict:
        """name -> (roofline of one occurrence, occurrences, operator) of each distinct per-token operator.

        An operator that reads weights does so at the engine's decode kernels' share of the bandwidth for this
        weight format (its dequantising GEMV: int4 is neither twice int8 nor equal to it unless they say so)."""
        fused = costs.fused_classes(self.m)
        eff = decode_bw_efficiency(self.m)
        out = {}
        for name, op, n in workloads.decode_groups(self.m.workload):
            f, nb, t_c, t_m = costs.roofline(op, b, self.r, self.wb, self.ab, op.cls in fused)
            if op.params:
                t_m /= eff
            kernels = 0 if op.cls in fused else 1
            t_c, t_m = costs.with_matmul_overheads(op, self.r, kernels, t_c, t_m, b)
            out[name] = ((f, nb, t_c, t_m, kernels), n, op)
        return out

    def steps(self, b: int, ctx) -> dict:
        """Per-step arrays for cached-token totals ctx (one value per step)."""
        cs, ms, fl, by, k = self.linear(b)
        ctx = np.asarray(ctx, dtype=float)
        kernels = k + self.ctx_kernels
        compute = cs + ctx * self.ctx_compute_s
        memory = ms + ctx * self.ctx_memory_s + self.attention_fixed_s
        launch = kernels * self.r.launch_s
        kernel = compute + memory + launch
        issue = kernels * self.issue_s + self.step_host_s
        return {
            "compute": compute,
            "memory": memory,
            "launch": launch + np.maximum(0.0, issue - kernel),
            "step": np.maximum(kernel, issue),
            "issue": np.full(ctx.shape, issue),
            "flops": fl + ctx * self.ctx_flops,
            "bytes": by + ctx * self.ctx_bytes,
        }

    def op_costs(self, b: int) -> list[dict]:
        """The roofline of one decode step at batch b, one entry per operator summed over the layers
        (attention at the mean context)."""
        ctx = b * mean_context(self.m)
        out = []
        for name, ((f, nb, t_c, t_m, _), n, op) in self._shapes(b).items():
            out.append(
                {
                    "name": name,
                    "class": op.cls,
                    "count": n,
                    "flops": n * f,
                    "bytes": n * nb,
                    "time_ms": n * max(t_c, t_m) * 1e3,
                    "bound": "compute" if t_c >= t_m else "memory",
                    "occupancy": costs.sm_occupancy(op, b, self.r.units, self.r.tile),
                }
            )
        t_c, t_m = ctx * self.ctx_compute_s, ctx * self.ctx_memory_s + self.attention_fixed_s
        out.append(
            {
                "name": "attention",
                "class": "attention",
                "count": workloads.decode_layers(self.m.workload),
                "flops": ctx * self.ctx_flops,
                "bytes": ctx * self.ctx_bytes,
                "time_ms": (t_c + t_m) * 1e3,
                "bound": "compute" if t_c > t_m else "memory",
                "occupancy": 1.0,
            }
        )
        return out

    def bytes_per_step(self, b: int, ctx: float) -> float:
        return self.linear(b)[3] + ctx * self.ctx_bytes


def decode_bw_efficiency(m) -> float:
    """The share of the achievable bandwidth the engine's decode kernels reach reading weights of this format on
    this device (decode_bw_share)."""
    return decode_bw_share(m.engine, m.s.precision, catalog.maker(m.device))


def decode_bw_share(engine: dict, precision: str, platform: str) -> float:
    """engines.toml decode_bw_efficiency for the weight format, or decode_bw_efficiency_on's figure where the
    engine's kernels on this platform (the device's maker) have their own; 1.0, the roofline, where it gives none."""
    on = engine.get("decode_bw_efficiency_on", {}).get(platform, {})
    return float(on.get(precision, engine.get("decode_bw_efficiency", {}).get(precision, 1.0)))


def decode_cost(m) -> DecodeCost:
    s = m.s
    return DecodeCost(
        m,
        costs.rates(m),
        costs.weight_bytes(s),
        costs.activation_bytes(s.precision, generates=True),
        costs.value_bytes(kv_precision(s)),
        (m.engine["issue_us"] + m.engine["call_us"]) * costs.host_overhead_scale(m.engine) * 1e-6 / s.cpu_speed,
        m.engine["step_us"] * 1e-6 / s.cpu_speed,
        workloads.decode_operators(m.workload)[1],
    )


def prefill(m, b: int):
    """StepCost of prefilling b prompts together (one forward over prompt_tokens each; an encoder-decoder's encoder
    pass over the source and its decoder over the first token: workloads.generation_prefill), issued as the
    engine issues a prompt's forward (prefill_engine)."""
    w, seq = workloads.generation_prefill(m.workload, m.s.prompt_tokens)
    last, engine = last_logits(m), prefill_engine(m.engine)
    if w is not m.workload or last != m.last_logits or engine is not m.engine:
        m = dataclasses.replace(m, workload=w, last_logits=last, engine=engine)
    return costs.step_cost(m, batch=b, seq=seq)


def prefill_engine(e: dict) -> dict:
    """The engine as a prompt's forward runs on it. A serving engine that replays CUDA graphs for decode steps
    only (engines.toml prefill_host_from) issues a prompt's kernels one by one through its model's code, at the
    host costs of the engine named there; every other engine runs a prompt as it runs a step."""
    name = e.get("prefill_host_from")
    if not name:
        return e
    lender = catalog.get("engines", name)
    scale = costs.host_overhead_scale({**lender, "graphs": False})
    return {**e, "graphs": False, "issue_us": lender["issue_us"], "call_us": lender["call_us"],
            "host_overhead_scale": scale, "host_overhead_scale_from": None, "prefill_host_from": None}  # fmt: skip


def last_logits(m) -> bool:
    """Whether the engine's prefill scores the vocabulary at each prompt's last position only (engines.toml
    prefill_logits), as a serving engine does to sample the first token, where a model's plain forward scores
    every position."""
    return m.engine.get("prefill_logits") == "last"


def mean_context(m) -> float:
    """Tokens one sequence holds in its cache at its mean decode step: the cached prompt and half its output."""
    return cached_prompt(m) + m.s.output_tokens / 2.0


def cached_prompt(m) -> int:
    """Tokens each sequence's KV cache holds before its first decode step: the prompt's, and an encoder-decoder's
    fixed source (Whisper's audio positions: cross-attention keys and values)."""
    return m.s.prompt_tokens + workloads.fixed_source(m.workload)


def memory(m) -> dict:
    """Weights, KV cache of every sequence in flight at its full length, prefill activations."""
    s, w = m.s, m.workload
    p = costs.parameters(m)
    kv_tok = workloads.kv_values_per_token(w) * costs.value_bytes(kv_precision(s))
    per_seq = kv_tok * (cached_prompt(m) + s.output_tokens)
    if w.get("arch") == "encoder-decoder":  # a prefill holds one sequence's largest operator per sequence
        pw, pseq = workloads.generation_prefill(w, s.prompt_tokens)
        seqs = min(m.batch, max(1, PREFILL_CHUNK_TOKENS // cached_prompt(m)))
        act = costs.INFERENCE_ACTIVATION_FACTOR * costs.op_sums(workloads.operators(pw, pseq))["max_io"] * seqs
    else:
        tokens = min(m.batch * s.prompt_tokens, max(PREFILL_CHUNK_TOKENS, s.prompt_tokens))
        # the largest operator per prompt token: a head that scores the last position only holds no row per token
        io = costs.op_sums(workloads.operators(w, 1))["max_io_unscored" if last_logits(m) else "max_io"]
        act = costs.INFERENCE_ACTIVATION_FACTOR * io * tokens
    act *= costs.activation_bytes(s.precision, generates=True)
    out = {
        "weights_gb": p * costs.weight_bytes(s) / 1e9,
        "gradients_gb": 0.0,
        "optimizer_gb": 0.0,
        "activations_gb": act / 1e9,
        "kv_cache_gb": m.batch * per_seq / 1e9,
        "workspace_gb": float(m.device["workspace_gb"]),
    }
    out["total_gb"] = sum(out.values())
    out["capacity_gb"] = costs.capacity_gb(m.device)
    out["oom"] = out["total_gb"] > out["capacity_gb"]
    free = out["capacity_gb"] - out["weights_gb"] - out["activations_gb"] - out["workspace_gb"]
    out["max_concurrency"] = max(0, int(free * 1e9 // per_seq))
    out["kv_gb_per_sequence"] = per_seq / 1e9
    return out


def requests(m) -> int:
    """Requests to serve: `steps`, and at least twice the concurrency so that every slot is exercised."""
    return max(m.s.steps, 2 * m.batch)


def _output_lengths(s, rng, n: int, w: dict | None = None) -> np.ndarray:
    text_source = w is not None and w.get("arch") == "encoder-decoder" and not workloads.fixed_source(w)
    cap = (s.seq_len or 10**9) - (0 if text_source else s.prompt_tokens)  # a text source is not in the decoder
    if s.output_tokens_cv <= 0:
        return np.full(n, s.output_tokens, dtype=np.int64)
    o = np.rint(s.output_tokens * jitter(rng, s.output_tokens_cv, n))
    return np.clip(o, 1, cap).astype(np.int64)


class _Acc:
    """Totals over the run: GPU time by cause, FLOPs, bytes, CPU issue time, and token records."""

    def __init__(self):
        self.t = {"compute": 0.0, "memory": 0.0, "launch": 0.0}
        self.flops = self.bytes = self.issue = 0.0
        self.busy = []  # (start, end, compute, memory, launch, flops, bytes, issue, tokens)

    def add(self, start, dur, compute, memory, launch, flops, nbytes, issue, tokens):
        self.busy.append((start, start + dur, compute, memory, launch, flops, nbytes, issue, tokens))


def run(m, d: DecodeCost, seed: int, budget_s: float = 20.0) -> dict:
    """Serve every request; returns per-request times, inter-token gaps and GPU busy records."""
    import time

    wall0 = time.perf_counter()
    s = m.s
    n = requests(m)
    rng = np.random.default_rng(seed)
    out_len = _output_lengths(s, rng, n, m.workload)
    if s.arrival_rate_rps:
        arrive = np.cumsum(rng.exponential(1.0 / s.arrival_rate_rps, n))
    else:
        arrive = np.zeros(n)
    cv = s.jitter_cv
    conc = m.batch
    env = Environment(budget_s, s.steps)
    acc = _Acc()
    first = np.full(n, np.nan)  # first token (end of prefill)
    done = np.full(n, np.nan)
    gaps = []  # arrays of inter-token gaps (seconds)
    timeline = []  # (track, what, start, end, first request) per prefill and decode segment
    state = {"next": 0}

    def jit():
        return float(jitter(rng, cv, 1)[0]) if cv > 0 else 1.0

    closed_loop = s.arrivals == "closed-loop"

    def do_prefill(batch):
        if closed_loop:  # a client sends its request when a slot is free: it waits in no queue
            arrive[batch] = env.now
        c = prefill(m, len(batch))
        j = jit()
        dur = c.step_s * j
        acc.add(
            env.now,
            dur,
            c.compute_s * j,
            c.memory_s * j,
            (c.step_s - c.compute_s - c.memory_s) * j,
            c.flops,
            c.hbm_bytes,
            c.issue_s,
            len(batch),
        )
        timeline.append(("gpu", f"prefill x{len(batch)}", env.now, env.now + dur, int(batch[0])))
        yield env.timeout(dur)
        first[batch] = env.now

    def admit(waiting):
        while state["next"] < n and arrive[state["next"]] <= env.now + 1e-15:
            waiting.append(state["next"])
            state["next"] += 1

    def decode(active_ids, ctx0, k, useful=None):
        """k decode steps of a fixed batch whose cached tokens start at ctx0; returns the step durations.

        useful: tokens that count (static batching computes finished sequences as padding)."""
        b = len(active_ids)
        st = d.steps(b, ctx0 + b * np.arange(k))
        j = jitter(rng, cv, k) if cv > 0 else np.ones(k)
        dur = st["step"] * j
        acc.add(
            env.now,
            float(dur.sum()),
            float((st["compute"] * j).sum()),
            float((st["memory"] * j).sum()),
            float((st["launch"] * j).sum()),
            float(st["flops"].sum()),
            float(st["bytes"].sum()),
            float(st["issue"].sum()),
            b * k if useful is None else useful,
        )
        timeline.append(
            (
                "gpu",
                f"decode x{b}" if k == 1 else f"decode x{b} ({k} steps)",
                env.now,
                env.now + float(dur.sum()),
                int(active_ids[0]),
            )
        )
        return dur

    def check_budget():
        if time.perf_counter() - wall0 > budget_s:
            from ..core.errors import HwsimError

            raise HwsimError("steps", s.steps, f"a run that fits the {budget_s:g} s simulation budget", "lower steps")

    def static():
        waiting = []
        while state["next"] < n or waiting:
            admit(waiting)
            if not waiting:
                yield env.timeout(arrive[state["next"]] - env.now)
                continue
            batch = np.array(waiting[:conc])
            del waiting[:conc]
            yield from do_prefill(batch)
            longest = int(out_len[batch].max())
            if longest > 1:  # every sequence is computed until the longest finishes
                t0 = env.now
                dur = decode(
                    batch, len(batch) * (cached_prompt(m) + 1), longest - 1, useful=int((out_len[batch] - 1).sum())
                )
                yield env.timeout(float(dur.sum()))
                ends = t0 + np.cumsum(dur)
                for i in batch:
                    o = int(out_len[i])
                    if o > 1:
                        gaps.append(np.diff(np.concatenate(([first[i]], ends[: o - 1]))))
            done[batch] = env.now  # the batch returns together
            check_budget()

    def continuous():
        waiting, active = [], []
        made = np.zeros(n, dtype=np.int64)  # tokens generated so far
        last = np.zeros(n)
        while state["next"] < n or waiting or active:
            admit(waiting)
            free = conc - len(active)
            if free > 0 and waiting:
                new = np.array(waiting[:free])
                del waiting[:free]
                yield from do_prefill(new)
                made[new] = 1
                last[new] = first[new]
                fin = new[out_len[new] <= 1]
                done[fin] = env.now
                active += [int(i) for i in new if out_len[i] > 1]
                continue
            if not active:
                yield env.timeout(arrive[state["next"]] - env.now)
                continue
            ids = np.array(active)
            left = out_len[ids] - made[ids]
            k = int(left.min())
            ctx0 = float((cached_prompt(m) + made[ids]).sum())
            if free > 0 and state["next"] < n:  # stop at the next arrival: it joins at the next step
                st1 = d.steps(len(ids), [ctx0])["step"][0]
                k = max(1, min(k, int(math.ceil((arrive[state["next"]] - env.now) / max(st1, 1e-12)))))
            t0 = env.now
            dur = decode(ids, ctx0, k)
            yield env.timeout(float(dur.sum()))
            ends = t0 + np.cumsum(dur)
            gaps.append(ends[0] - last[ids])
            if k > 1:
                gaps.append(np.repeat(dur[1:], len(ids)))
            made[ids] += k
            last[ids] = ends[-1]
            fin = ids[made[ids] >= out_len[ids]]
            done[fin] = env.now
            active = [int(i) for i in ids if made[i] < out_len[i]]
            check_budget()

    env.process(static() if s.batching == "static" else continuous())
    env.run()
    return {
        "arrive": arrive,
        "first": first,
        "done": done,
        "out_len": out_len,
        "acc": acc,
        "gaps": np.concatenate(gaps) if gaps else np.zeros(1),
        "events": env.scheduled,
        "timeline": timeline,
        "end": env.now,
        "wall_ms": (time.perf_counter() - wall0) * 1e3,
    }


def _window(out: dict, s, concurrency: int) -> tuple[float, float]:
    """Offline: until the last request starts (every slot busy: the steady state, not the drain), or the whole
    run when one batch holds them all. With arrivals: from the 10th-percentile arrival to the last one; when more
    requests than slots still wait for their first token at the last arrival (an overloaded server), the
    steady state is saturation and runs on until the last request starts."""
    last_start = float(np.nanmax(out["first"]))
    if not s.arrival_rate_rps:
        return 0.0, last_start if last_start > 0.5 * out["end"] else out["end"]
    a = out["arrive"]
    waiting = int(np.sum(out["first"] > a[-1]))
    return float(a[len(a) // 10]), last_start if waiting > concurrency else float(a[-1])


def measure(m, d: DecodeCost, out: dict) -> dict:
    """Tokens/s, time per output token, TTFT, GPU time and utilization over the measured window."""
    s = m.s
    lo, hi = _window(out, s, m.batch)
    span = hi - lo
    tot = {"compute": 0.0, "memory": 0.0, "launch": 0.0, "flops": 0.0, "bytes": 0.0, "issue": 0.0, "tokens": 0.0}
    for a, b, c, mm, la, fl, by, iss, tok in out["acc"].busy:
        f = (min(b, hi) - max(a, lo)) / (b - a) if b > a else float(lo <= a <= hi)
        if f <= 0:
            continue
        f = min(1.0, f)
        for k, v in zip(
            ("compute", "memory", "launch", "flops", "bytes", "issue", "tokens"), (c, mm, la, fl, by, iss, tok)
        ):
            tot[k] += v * f
    gpu_time = {k: tot[k] / span for k in ("compute", "memory", "launch")}
    busy = sum(gpu_time.values())
    if busy > 1.0:
        gpu_time = {k: v / busy for k, v in gpu_time.items()}
    gpu_time["idle"] = max(0.0, 1.0 - sum(gpu_time.values()))
    x = tot["tokens"] / span
    ttft = out["first"] - out["arrive"]
    e2e = out["done"] - out["arrive"]
    keep = slice(len(ttft) // 10, None) if s.arrival_rate_rps else slice(None)
    tpot = (out["done"] - out["first"])[keep] / np.maximum(1, out["out_len"][keep] - 1)
    good = float(np.mean(tpot * 1e3 <= s.latency_slo_ms))
    gaps = out["gaps"]
    util = {
        "storage": 0.0,
        "cpu": min(1.0, tot["issue"] / (span * s.cpu_cores)),
        "host_link": 0.0,
        "gpu_busy": gpu_time["compute"] + gpu_time["memory"],
    }
    return {
        "tokens_per_s": x,
        "gpu_time": gpu_time,
        "utilization": util,
        "flops_per_s": tot["flops"] / span,
        "bytes_per_s": tot["bytes"] / span,
        "saturation": {"loop": 1.0 - gpu_time["idle"], "arrivals": gpu_time["idle"]},
        "latency_ms": percentiles(np.asarray(gaps, dtype=float) * 1e3),
        "ttft_ms": percentiles(np.asarray(ttft[keep], dtype=float) * 1e3),
        "e2e_ms": percentiles(np.asarray(e2e[keep], dtype=float) * 1e3),
        "per_stream": 1.0 / float(np.mean(gaps)) if np.mean(gaps) > 0 else 0.0,  # one-token outputs: no gaps
        "requests_per_s": x / float(np.mean(out["out_len"])),
        "slo_fraction": good,
        "window_s": span,
        "warmup_s": lo,
    }


def _expected_max(s, b: int) -> float:
    """Mean of the longest of b output lengths (lognormal), by the b/(b+1) quantile."""
    if s.output_tokens_cv <= 0 or b <= 1:
        return float(s.output_tokens)
    sigma = math.sqrt(math.log1p(s.output_tokens_cv**2))
    z = NormalDist().inv_cdf(b / (b + 1.0))
    return float(s.output_tokens * math.exp(-sigma * sigma / 2 + sigma * z))


def steady_state(m, d: DecodeCost) -> dict:
    """Closed form: a full batch in steady state (offline), or the batch that the arrival rate sustains."""
    s = m.s
    conc, P, n_out = m.batch, cached_prompt(m), float(s.output_tokens)
    pre1 = prefill(m, 1)

    def decode_step_at(b, ctx):
        return {k: float(v[0]) for k, v in d.steps(b, [ctx]).items()}

    def decode_step(b):
        return decode_step_at(b, b * (P + n_out / 2.0))

    if s.batching == "static":  # a batch runs until its longest sequence is done
        longest = _expected_max(s, conc)
        pb = prefill(m, conc)
        n_steps = max(0.0, longest - 1)
        st = {k: v * n_steps for k, v in decode_step_at(conc, conc * (P + longest / 2.0)).items()}
        batch_s = pb.step_s + st["step"]
        cap_tok = conc * n_out / batch_s
        parts = {
            "compute": pb.compute_s + st["compute"],
            "memory": pb.memory_s + st["memory"],
            "launch": pb.step_s - pb.compute_s - pb.memory_s + st["launch"],
            "flops": pb.flops + st["flops"],
            "bytes": pb.hbm_bytes + st["bytes"],
            "issue": pb.issue_s + st["issue"],
        }
        per_tokens = conc * n_out
        b_eff, itl = conc, st["step"] / max(n_steps, 1.0)
    else:
        b_eff = conc
        if s.arrival_rate_rps:  # sequences in flight: rate x time in system (Little), at most conc
            b_eff = 1
            for _ in range(30):
                t_req = pre1.step_s + (n_out - 1) * decode_step(max(1, round(b_eff)))["step"]
                b_eff = min(conc, max(1.0, s.arrival_rate_rps * t_req))
        b = max(1, round(b_eff))
        st = decode_step(b)
        # per request: its prefill plus its share of (n_out - 1) decode steps
        share = (n_out - 1) / b
        parts = {
            "compute": pre1.compute_s + share * st["compute"],
            "memory": pre1.memory_s + share * st["memory"],
            "launch": pre1.step_s - pre1.compute_s - pre1.memory_s + share * st["launch"],
            "flops": pre1.flops + share * st["flops"],
            "bytes": pre1.hbm_bytes + share * st["bytes"],
            "issue": pre1.issue_s + share * st["issue"],
        }
        per_req_s = pre1.step_s + share * st["step"]
        cap_tok = n_out / per_req_s
        per_tokens = n_out
        itl = st["step"]
    offered = s.arrival_rate_rps * n_out if s.arrival_rate_rps else float("inf")
    x = min(cap_tok, offered)
    rate = x / per_tokens  # work units (requests or batches) per second
    gpu_time = {k: min(1.0, rate * parts[k]) for k in ("compute", "memory", "launch")}
    gpu_time["idle"] = max(0.0, 1.0 - sum(gpu_time.values()))
    busy_frac = 1.0 - gpu_time["idle"]
    if s.batching != "static" and s.arrival_rate_rps:  # prefills of newcomers interrupt the decode steps
        itl = itl / max(1e-9, 1.0 - min(PREFILL_INTERRUPT_MAX_SHARE, s.arrival_rate_rps * pre1.step_s))
    ttft = pre1.step_s if s.batching != "static" else prefill(m, conc).step_s
    if s.arrivals == "offline":  # all requests queue at once; the mean waits half the run
        ttft += 0.5 * requests(m) * n_out / max(x, 1e-12)
    e2e = ttft + (n_out - 1) * itl
    flat = lambda v: {"p50": v * 1e3, "p95": v * 1e3, "p99": v * 1e3, "mean": v * 1e3}  # noqa: E731
    util = {
        "storage": 0.0,
        "cpu": min(1.0, rate * parts["issue"] / s.cpu_cores),
        "host_link": 0.0,
        "gpu_busy": gpu_time["compute"] + gpu_time["memory"],
    }
    return {
        "tokens_per_s": x,
        "gpu_time": gpu_time,
        "utilization": util,
        "flops_per_s": rate * parts["flops"],
        "bytes_per_s": rate * parts["bytes"],
        "saturation": {"loop": busy_frac, "arrivals": gpu_time["idle"]},
        "latency_ms": flat(itl),
        "ttft_ms": flat(ttft),
        "e2e_ms": flat(e2e),
        "per_stream": 1.0 / itl if itl > 0 else 0.0,  # one-token outputs: no decode step
        "requests_per_s": x / n_out,
        "slo_fraction": float(itl * 1e3 <= s.latency_slo_ms),
        "window_s": 0.0,
        "warmup_s": 0.0,
        "batch_in_flight": b_eff,
    }


def _explain(b, m, d, util, mem, state) -> str:
    s = m.s
    if b == "memory_capacity":
        return (
            oom_sentence(m, mem) + f"Each sequence's KV cache takes {mem['kv_gb_per_sequence']:.2f} GB, so at most "
            f"{mem['max_concurrency']} fit: lower concurrency, a lower KV precision or weight precision, "
            "or a bigger device."
        )
    weights = mem["weights_gb"]
    if b == "arrivals":
        idle = (state or {}).get("gpu_time", {}).get("idle", 1 - util["gpu_busy"])
        return (
            f"The GPU idles {idle:.0%} of the time waiting for requests: at "
            f"{s.arrival_rate_rps:g} requests/s there is not enough work to batch. Latency here is the "
            "single-stream speed; more load would raise tokens/s at little cost."
        )
    if b == "memory_bw":
        return (
            f"Decoding is memory-bound: every step reads all {weights:.1f} GB of weights plus the KV cache "
            f"to make one token per sequence (HBM {util['hbm_bw']:.0%} busy, math {util['gpu_mfu']:.0%} of "
            f"peak). Tokens/s per stream is about bandwidth / bytes per token; more concurrent sequences "
            "share each weight read, and fewer bytes per weight (int8, int4) speed up every step."
        )
    if b == "overhead":
        return (
            "The GPU waits on the host: each decode step issues hundreds of small kernels, and issuing them "
            "(in eager PyTorch, each operator's Python and dispatch work) takes longer than they run. CUDA graphs "
            "or a serving engine (engine=cuda-graphs, vllm or tensorrt-llm) remove most of it."
        )
    return (
        f"Decoding is compute-bound: with {m.batch} sequences per step the math units reach "
        f"{util['gpu_mfu']:.0%} of peak {m.precision}. More concurrency now adds latency per token, not "
        "throughput; a faster chip or lower-precision math helps."
    )


def _candidates(m, bottleneck: str, mem: dict) -> list[Candidate]:
    s, out = m.s, []
    if bottleneck == "memory_capacity":
        if mem["max_concurrency"] >= 1:
            k = mem["max_concurrency"]
            out.append((f"concurrency={k}", {"concurrency": k}, "the most sequences whose KV cache fits"))
        if catalog.get("precisions", s.kv_precision or "fp16")["bytes"] > 1:
            out.append(("kv_precision=fp8", {"kv_precision": "fp8"}, "half the KV cache"))
        for p in lower_precisions(s, ("int8", "int4")):
            out.append((f"precision={p}", {"precision": p}, "fewer bytes per weight"))
        out += bigger_gpus(mem)
        return out
    if m.batch * 2 <= max(1, mem["max_concurrency"]):
        out.append(
            (f"concurrency={m.batch * 2}", {"concurrency": m.batch * 2}, "more sequences share each weight read")
        )
    if s.batching == "static":
        out.append(("batching=continuous", {"batching": "continuous"}, "no waiting for the longest sequence"))
    out += native_precisions(m)
    for p in lower_precisions(s, ("int8", "int4")):
        out.append((f"precision={p}", {"precision": p}, "fewer bytes per weight to read every step"))
    out += engine_changes(
        s,
        [
            ("cuda-graphs", "compiled decode replayed as a CUDA graph (gpt-fast style)"),
            ("vllm", "fused attention, continuous batching, CUDA graphs"),
            ("tensorrt-llm", "fused attention, graph launch"),
        ],
    )
    out.append((f"gpu={next_gpu(m)}", {"gpu": next_gpu(m)}, "more bandwidth and FLOP/s"))
    return out


class LLMKind(KindBase):
    """LLM generation: prefill and decode steps with static or continuous batching."""

    name = "llm"

    def prepare(self, m):
        return decode_cost(m), memory(m)

    def bottleneck(self, m, d, state, gpu_time):
        """As the other kinds name it, except that a decode step whose kernels the host takes longer to issue than
        they run is the host's (overhead), however the GPU's own part divides: faster memory would not shorten it."""
        b = super().bottleneck(m, d, state, gpu_time)
        if b in ("compute", "memory_bw"):
            step = d.steps(m.batch, [m.batch * mean_context(m)])
            if step["issue"][0] >= step["step"][0]:
                return "overhead"
        return b

    def state(self, m, d, method, seed, budget_s):
        timeline = []
        if method == "estimate":
            state, sim = steady_state(m, d), {}
        else:
            out = run(m, d, seed, budget_s)
            state = measure(m, d, out)
            timeline = out["timeline"]
            sim = {"events": out["events"], "simulated_s": float(out["end"]), "warmup_s": float(state["warmup_s"])}
        state["throughput"] = state["tokens_per_s"]
        state["extra"] = {
            "ttft_ms": state["ttft_ms"],
            "tokens_per_s_per_stream": state["per_stream"],
            "goodput": state["requests_per_s"] * state["slo_fraction"],
            "prefill_tokens_per_s": m.s.prompt_tokens / prefill(m, 1).step_s,
            "arrivals": m.s.arrivals,
        }
        return state, sim, timeline

    def details(self, m, d, mem, state):
        s, b = m.s, m.batch
        ctx = mean_context(m)
        step = {k: float(v[0]) for k, v in d.steps(b, [b * ctx]).items()}
        return {
            "concurrency": b,
            "prompt_tokens": s.prompt_tokens,
            "output_tokens": s.output_tokens,
            "precision_run": m.precision,
            "kv_precision": kv_precision(s),
            "bytes_per_token_single_stream": d.bytes_per_step(1, ctx),
            "effective_bandwidth_gbs": d.r.bw / 1e9,
            "decode_step_ms": step["step"] * 1e3,
            "prefill_ms": prefill(m, 1).step_s * 1e3,
            "kernels_per_step": d.linear(b)[4] + d.ctx_kernels,
            "kv_gb_per_sequence": mem["kv_gb_per_sequence"],
            "e2e_ms": state.get("e2e_ms") if state else None,
            "ops": d.op_costs(b),
        }

    def explain(self, b, m, d, util, mem, state):
        return _explain(b, m, d, util, mem, state)

    def candidates(self, m, b, mem):
        return _candidates(m, b, mem)

    def offered(self, s):
        return s.arrival_rate_rps * s.output_tokens if s.arrival_rate_rps else None

    def finish(self, r, mem):
        r.max_concurrency = mem["max_concurrency"]


LLM = LLMKind()
