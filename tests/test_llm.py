"""LLM generation: decode is bandwidth / bytes, batching shares the weight read, the KV cache fills memory."""

import json

import pytest

from jupyter_hwsim import HwsimError, Scenario, estimate, simulate
from jupyter_hwsim.core import catalog, costs, workloads
from jupyter_hwsim.kinds import llm

ONE = dict(kind="llm", concurrency=1, output_tokens_cv=0.0)


@pytest.mark.parametrize(
    "workload, gpu, precision",
    [
        ("llama-2-7b", "a100", "fp16"),
        ("llama-2-13b", "h100", "bf16"),
        ("mistral-7b", "rtx-4090", "int8"),
        ("llama-2-70b", "a100", "int4"),
        ("llama-3-8b", "m2-ultra", "fp16"),
    ],
)
@pytest.mark.parametrize("fn", [estimate, simulate])
def test_single_stream_decode_is_bandwidth_over_bytes_per_token(workload, gpu, precision, fn):
    """tokens/s = effective bandwidth / bytes read per token (weights + KV cache), plus the device's gap between
    kernels, each weight matmul's fixed time (matmul_latency_us: prologue, pipeline fill, epilogue) and each
    layer's attention call's (decode_attention_latency_us)."""
    r = fn(
        Scenario(workload=workload, gpu=gpu, precision=precision, engine="vllm", jitter_cv=0.0, **ONE),
        suggest=False,
    )
    dev = costs.resolve(Scenario(gpu=gpu)).device
    bw = dev["memory_bandwidth_gbs"] * 1e9 * dev["memory_efficiency"]
    assert r.details["effective_bandwidth_gbs"] * 1e9 == pytest.approx(bw)
    bytes_per_token = r.details["bytes_per_token_single_stream"]
    gaps = r.details["kernels_per_step"] * dev["launch_overhead_us"] * 1e-6
    m = costs.resolve(Scenario(workload=workload, gpu=gpu, precision=precision, **ONE))
    per_token, _ = workloads.decode_operators(m.workload)
    fixed = sum(op.cls == "matmul" for op in per_token) * dev["matmul_latency_us"] * 1e-6
    fixed += workloads.decode_layers(m.workload) * dev["decode_attention_latency_us"] * 1e-6
    assert r.tokens_per_s_per_stream == pytest.approx(1.0 / (bytes_per_token / bw + gaps + fixed), rel=0.01)
    assert 0.02 < fixed * r.tokens_per_s_per_stream < 0.5  # a visible share, but the bytes still rule
    assert r.bottleneck == "memory_bw"
    # the bytes are the weights at their precision plus the cache read at the mean context
    weights = sum(op.params for op in per_token) * costs.weight_bytes(m.s)  # the embedding table is not read
    assert weights < bytes_per_token < weights * 1.1


def test_halving_bytes_per_weight_nearly_doubles_batch_one_decode():
    s = Scenario(workload="llama-2-13b", gpu="a100", fusion="tensorrt", **ONE)
    rates = {p: estimate(s.replace(precision=p), suggest=False) for p in ("fp16", "int8", "int4")}
    assert all(r.bottleneck == "memory_bw" for r in rates.values())
    up8 = rates["int8"].tokens_per_s_per_stream / rates["fp16"].tokens_per_s_per_stream
    up4 = rates["int4"].tokens_per_s_per_stream / rates["int8"].tokens_per_s_per_stream
    assert 1.6 < up8 <= 2.0 and 1.5 < up4 <= 2.0
    assert up4 < up8  # the fixed parts (KV cache, launch gaps) weigh more as the weights shrink


def test_eager_int4_decode_on_a_fast_gpu_waits_on_kernel_launches():
    s = Scenario(workload="llama-2-7b", gpu="h100", precision="int4", **ONE)
    eager, graphs = estimate(s, suggest=False), estimate(s.replace(fusion="tensorrt"), suggest=False)
    assert eager.bottleneck == "overhead"
    assert graphs.throughput > 1.3 * eager.throughput


def test_eager_fp16_decode_is_bound_by_its_host_and_a_serving_engine_is_not():
    """Eager PyTorch issues each decode step's kernels from Python at the engine's fitted host cost; on an A100 that
    takes longer than reading the weights, so a serving engine's CUDA graphs decode the same stream ~3x faster."""
    s = Scenario(workload="llama-2-7b", gpu="a100", precision="fp16", **ONE)
    eager, served = estimate(s, suggest=False), estimate(s.replace(engine="vllm"), suggest=False)
    assert eager.bottleneck == "overhead" and served.bottleneck == "memory_bw"
    e = eager.scenario["engine"]
    m = costs.resolve(s)
    kernels = eager.details["kernels_per_step"]
    entry = m.engine
    issue_s = kernels * (entry["issue_us"] + entry["call_us"]) * entry["host_overhead_scale"] * 1e-6 / m.s.cpu_speed
    assert e == "pytorch-eager" and eager.details["decode_step_ms"] == pytest.approx(issue_s * 1e3, rel=1e-6)
    assert 2.5 < served.tokens_per_s_per_stream / eager.tokens_per_s_per_stream < 4.5


def test_a_host_bound_decode_step_is_named_overhead_whatever_its_gpu_part_holds():
    """16 eager streams: the GPU spends more of its time reading memory than waiting, yet the step is the host's
    issue time, so the bottleneck is overhead and the best single change is an engine that replays graphs."""
    r = estimate(Scenario(kind="llm", workload="llama-2-7b", gpu="a100", precision="fp16", concurrency=16, steps=40))
    assert r.gpu_time["memory"] > r.gpu_time["launch"]
    assert r.bottleneck == "overhead"
    single = [x for x in r.suggestions if "parts" not in x and x.get("speedup")]
    assert single[0]["change"].startswith("engine=")
    served = estimate(Scenario.from_dict(r.scenario).replace(engine="vllm", fusion=None), suggest=False)
    assert served.bottleneck == "memory_bw"


def test_a_mixture_of_experts_decode_reads_the_routed_experts_weights():
    """A batch-1 decode step of Mixtral-8x7B (top-2 of 8) reads the dense weights and 2 of each layer's 8 experts;
    at batch b it reads E(1 - (1 - k/E)^b) of them on average, nearly all 8 at batch 16; the memory still holds
    every expert."""
    s = Scenario(workload="mixtral-8x7b", gpu="h100", precision="int8", prompt_tokens=16, output_tokens=64, **ONE)
    m = costs.resolve(s)
    per_token, _ = workloads.decode_operators(m.workload)
    experts = [op for op in per_token if op.experts]
    assert experts and all((op.experts, op.experts_per_token) == (8, 2) for op in experts)
    dense = sum(op.params for op in per_token if not op.experts)
    held = sum(op.params for op in experts)
    wb = costs.weight_bytes(m.s)

    def weights_read(b):
        return llm.decode_cost(m).bytes_per_step(b, 0.0)  # no cache: the weights and activations

    one = weights_read(1)
    assert one == pytest.approx((dense + held * 2 / 8) * wb, rel=0.02)
    for b in (2, 4, 16):
        expected = (dense + held * (1 - (1 - 2 / 8) ** b)) * wb
        assert weights_read(b) == pytest.approx(expected, rel=0.02)
    r = estimate(s, suggest=False)
    assert r.memory["weights_gb"] * 1e9 >= (dense + held) * wb * 0.99  # every expert is held
    prompt = workloads.operators(m.workload, 512)
    assert all(workloads.weight_share(op) > 0.999 for op in prompt if op.experts)  # a prompt touches them all


def test_a_serving_engine_prefill_scores_the_vocabulary_at_the_last_position_only():
    """vLLM samples the first token from the prompt's last position and computes no other position's logits
    (engines.toml prefill_logits = last): its prefill does one row of the head, where a plain forward does every
    prompt position's, and it holds no row of scores per prompt token; the rest of the prefill is the same."""
    s = Scenario(workload="llama-3.1-8b", gpu="h100", precision="bf16", engine="vllm", prompt_tokens=8192, **ONE)
    entry = {k: v for k, v in costs.resolve(s).engine.items() if k not in ("id", "origin", "sources")}
    assert entry["prefill_logits"] == "last"
    last = costs.resolve(s)
    every = costs.resolve(s.replace(engine={**entry, "prefill_logits": "all"}))
    head = next(op for op in workloads.operators(last.workload, 8192) if op.logits)
    assert head.rows == 8192 and head.flops == 2.0 * 8192 * 4096 * 128256
    assert llm.prefill(every, 1).flops - llm.prefill(last, 1).flops == pytest.approx(head.flops * 8191 / 8192)
    assert llm.memory(last)["activations_gb"] < llm.memory(every)["activations_gb"]
    # a decode step scores one position either way
    assert llm.decode_cost(last).linear(1) == llm.decode_cost(every).linear(1)


def test_an_engine_that_graphs_decode_only_issues_a_prompts_kernels_one_by_one():
    """SGLang replays CUDA graphs for decode batches and runs a prompt's forward module by module (engines.toml
    prefill_host_from): its prefill's host time is eager PyTorch's per kernel and per call, which a short prompt
    waits on and a long one hides under its kernels; its decode steps and its GPU work are those of the same engine
    prefilling from a graph."""
    fields = dict(workload="llama-3-8b", gpu="h100", precision="bf16", output_tokens=64, **ONE)
    eager = catalog.get("engines", "pytorch-eager")
    sglang = {k: v for k, v in catalog.get("engines", "sglang").items() if k not in ("id", "aliases", "sources")}
    whole = {k: v for k, v in sglang.items() if k != "prefill_host_from"}
    for prompt in (64, 4096):
        graphed, moduled = (costs.resolve(Scenario(engine=e, prompt_tokens=prompt, **fields)) for e in (whole, sglang))
        a, b = llm.prefill(graphed, 1), llm.prefill(moduled, 1)
        assert (a.flops, a.hbm_bytes, a.kernels) == (b.flops, b.hbm_bytes, b.kernels)
        per_kernel = eager["issue_us"] * costs.host_overhead_scale(eager) * 1e-6
        per_call = eager["call_us"] * costs.host_overhead_scale(eager) * 1e-6
        assert b.issue_s == pytest.approx(b.kernels * per_kernel + len(b.ops) * per_call, rel=1e-9)
        assert a.issue_s < b.issue_s / 20
        assert llm.decode_cost(graphed).linear(1) == llm.decode_cost(moduled).linear(1)
        if prompt == 64:  # the host is the longer: the first token waits on it
            assert b.step_s == pytest.approx(max(b.issue_s, b.step_s), rel=1e-9) and b.step_s > 1.5 * a.step_s
        else:  # 4096 tokens of matmuls hide the issue
            assert b.step_s == pytest.approx(a.step_s, rel=1e-6)


def test_each_layers_decode_attention_pays_its_fixed_time_however_short_the_context():
    """A decode-attention call takes 9-12 us on an H100 however few tokens it reads (AIConfigurator's measured
    tables; devices.toml decode_attention_latency_us): a step pays it once per layer, whatever the batch and
    context, and an encoder-decoder's decoder twice per layer (self- and cross-attention)."""
    h100 = catalog.get("gpus", "h100-sxm")
    base = {k: v for k, v in h100.items() if k not in ("id", "aliases", "sources", "origin")}
    for workload, calls in (("llama-2-7b", 32), ("whisper-small", 24)):
        s = Scenario(workload=workload, gpu="h100-sxm", engine="vllm", prompt_tokens=64, output_tokens=64, **ONE)
        fixed, free = (
            llm.decode_cost(costs.resolve(s.replace(gpu={**base, "decode_attention_latency_us": us})))
            for us in (h100["decode_attention_latency_us"], 0.0)
        )
        for b, ctx in ((1, 64.0), (16, 4096.0)):
            extra = fixed.steps(b, [ctx])["step"][0] - free.steps(b, [ctx])["step"][0]
            assert extra == pytest.approx(calls * h100["decode_attention_latency_us"] * 1e-6, rel=1e-9)


def test_a_cache_grown_by_concatenation_is_copied_whole_every_step():
    """torch.cat (Hugging Face's DynamicCache) reads and writes every cached K and V once more per step: the bytes of
    a step grow by 2 x the cache at the mean context, and nothing else changes."""
    s = Scenario(workload="llama-2-7b", gpu="a10", precision="fp16", prompt_tokens=512, output_tokens=512, **ONE)
    base = {k: v for k, v in costs.resolve(s).engine.items() if k not in ("id", "origin", "sources")}
    grown, kept = (
        estimate(s.replace(engine={**base, "concat_kv_cache": flag}), suggest=False) for flag in (True, False)
    )
    ctx = 512 + 512 / 2
    kv_per_token = grown.memory["kv_gb_per_sequence"] * 1e9 / (512 + 512)
    extra = grown.details["bytes_per_token_single_stream"] - kept.details["bytes_per_token_single_stream"]
    assert extra == pytest.approx(2 * ctx * kv_per_token, rel=1e-6)
    assert grown.memory["weights_gb"] == kept.memory["weights_gb"]


def test_continuous_batching_beats_static_for_variable_lengths():
    s = Scenario(kind="llm", workload="llama-2-7b", gpu="a100", concurrency=16, output_tokens_cv=0.8, steps=160)
    static, cont = (
        simulate(s.replace(batching="static"), suggest=False),
        simulate(s.replace(batching="continuous"), suggest=False),
    )
    assert cont.throughput > 1.2 * static.throughput
    # with equal lengths there is nothing to waste: the two agree
    same = s.replace(output_tokens_cv=0.0)
    a, b = simulate(same.replace(batching="static"), suggest=False), simulate(same, suggest=False)
    assert a.throughput == pytest.approx(b.throughput, rel=0.1)


def test_concurrency_amortizes_the_weight_read():
    s = Scenario(
        kind="llm",
        workload="llama-3-8b",
        gpu="a100",
        prompt_tokens=128,
        output_tokens=128,
        output_tokens_cv=0.0,
        engine="vllm",  # fused: eager's unfused elementwise kernels would keep a large batch memory-bound
    )
    by_c = {c: estimate(s.replace(concurrency=c), suggest=False) for c in (1, 8, 64, 512)}
    # one stream reads every weight per token; 512 share each read, and the math units do most of the work
    assert by_c[1].bottleneck == "memory_bw" and by_c[512].utilization["gpu_mfu"] > 10 * by_c[1].utilization["gpu_mfu"]
    tput = [by_c[c].throughput for c in (1, 8, 64, 512)]
    assert tput == sorted(tput)
    assert by_c[8].throughput > 6 * by_c[1].throughput  # nearly free while memory-bound
    per_stream = [by_c[c].tokens_per_s_per_stream for c in (1, 8, 64, 512)]
    assert per_stream == sorted(per_stream, reverse=True)  # each stream slows as the batch grows
    assert by_c[1].utilization["gpu_mfu"] < 0.05 < by_c[1].utilization["hbm_bw"]


def test_kv_cache_size_and_the_largest_concurrency_that_fits():
    s = Scenario(
        kind="llm", workload="llama-2-70b", gpu="h100", precision="int4", prompt_tokens=1024, output_tokens=1024
    )
    m = costs.resolve(s)
    w = m.workload
    per_seq = 2 * w["layers"] * w["kv_heads"] * (w["hidden"] // w["heads"]) * 2048 * 2  # fp16 K and V
    mem = llm.memory(m)
    assert mem["kv_gb_per_sequence"] * 1e9 == pytest.approx(per_seq)
    assert mem["kv_cache_gb"] == pytest.approx(16 * per_seq / 1e9)
    fits = mem["max_concurrency"]
    assert not estimate(s.replace(concurrency=fits), suggest=False).memory["oom"]
    over = simulate(s.replace(concurrency=fits + 1))
    assert over.memory["oom"] and over.bottleneck == "memory_capacity" and over.throughput == 0
    assert "weights" in over.explanation and "kv cache" in over.explanation
    assert f"at most {fits} fit" in over.explanation
    assert any(x["change"] == f"concurrency={fits}" and x["fits"] for x in over.suggestions)
    assert any(x["change"] == "kv_precision=fp8" and x["fits"] for x in over.suggestions)
    json.dumps(over.to_dict(), allow_nan=False)


def test_kv_precision_and_grouped_query_attention_shrink_the_cache():
    base = dict(kind="llm", prompt_tokens=512, output_tokens=512)
    mha = llm.memory(costs.resolve(Scenario(workload="llama-2-7b", **base)))
    gqa = llm.memory(costs.resolve(Scenario(workload="llama-3-8b", **base)))
    fp8 = llm.memory(costs.resolve(Scenario(workload="llama-2-7b", kv_precision="fp8", **base)))
    assert gqa["kv_gb_per_sequence"] == pytest.approx(mha["kv_gb_per_sequence"] / 4)  # 8 of 32 KV heads
    assert fp8["kv_gb_per_sequence"] == pytest.approx(mha["kv_gb_per_sequence"] / 2)


def test_group_scales_add_the_bytes_of_q4_0():
    s = Scenario(kind="llm", precision="int4", weight_group_size=32)
    assert costs.weight_bytes(s) * 8 == pytest.approx(4.5)  # Q4_0: 18 bytes per 32 weights
    assert costs.weight_bytes(s.replace(weight_group_size=0)) == 0.5


def test_estimate_and_simulation_agree_without_variability():
    # a serving engine, whose prefill is not host-bound: the closed form prices each newcomer's prefill alone,
    # the simulation prefills clients that return together in one step (the same when the GPU bounds the prefill)
    for batching in ("static", "continuous"):
        s = Scenario(
            kind="llm",
            workload="mistral-7b",
            gpu="h100",
            engine="vllm",
            concurrency=8,
            output_tokens_cv=0.0,
            jitter_cv=0.0,
            batching=batching,
            steps=64,
        )
        e, r = estimate(s, suggest=False), simulate(s, suggest=False)
        assert r.throughput == pytest.approx(e.throughput, rel=0.03), batching
        assert r.latency_ms["p50"] == pytest.approx(e.latency_ms["p50"], rel=0.03), batching


def test_arrivals_time_to_first_token_and_idle_gpu():
    s = Scenario(kind="llm", workload="llama-2-7b", gpu="a100", arrival_rate_rps=0.1, concurrency=16, steps=40)
    r = simulate(s, suggest=False)
    prefill_ms = llm.prefill(costs.resolve(s), 1).step_s * 1e3
    assert r.ttft_ms["p50"] == pytest.approx(prefill_ms, rel=0.5)  # no queue: a prefill plus a step
    assert r.throughput == pytest.approx(0.1 * s.output_tokens, rel=0.35)
    assert r.bottleneck == "arrivals" and r.gpu_time["idle"] > 0.5
    assert all(x.get("metric") == "p99 latency" for x in simulate(s).suggestions)


def test_decode_operators_follow_the_architecture():
    w = workloads.resolve("llama-3-8b")
    per_token, per_ctx = workloads.decode_operators(w)
    params = sum(op.params for op in per_token)
    total = sum(op.params for op in workloads.operators(w, 1))
    assert params == pytest.approx(total - w["vocab"] * w["hidden"])  # every weight but the embedding table
    assert workloads.kv_values_per_token(w) == 2 * 32 * 8 * 128


@pytest.mark.parametrize(
    "fields, field",
    [
        (dict(kind="llm", prompt_tokens=4096), "prompt_tokens"),
        (dict(kind="llm", prompt_tokens=4000, output_tokens=200), "output_tokens"),
        (dict(kind="llm", concurrency=0), "concurrency"),
        (dict(kind="llm", arrival_rate_rps=0), "arrival_rate_rps"),
        (dict(kind="llm", workload="resnet50"), "workload"),
        (dict(kind="llm", batching="dynamic"), "batching"),
        (dict(kind="llm", kv_precision="fp4"), "kv_precision"),
        (dict(kind="llm", output_tokens_cv=-1), "output_tokens_cv"),
    ],
)
def test_bad_llm_inputs_name_the_field(fields, field):
    with pytest.raises(HwsimError) as e:
        Scenario(**fields)
    assert e.value.field == field


@pytest.mark.parametrize("rate", [20, 1000])
def test_an_overloaded_open_loop_runs_at_its_capacity_in_both_methods(rate):
    """Arrivals beyond capacity: the simulation measures the saturated steady state (it used to measure only the
    first prefills before the last arrival, 30 tokens/s against the estimate's 1,137), and both say overloaded."""
    s = Scenario(kind="llm", arrival_rate_rps=rate, concurrency=16, steps=200)
    sim, est = simulate(s, suggest=False), estimate(s, suggest=False)
    assert sim.throughput == pytest.approx(est.throughput, rel=0.05)
    assert any(w.startswith("overloaded") for w in sim.warnings) and any(
        w.startswith("overloaded") for w in est.warnings
    )


def test_llama_3_70b_has_its_published_size_and_the_3_3_shapes():
    """Meta-Llama-3-70B: 70.55 B parameters (its safetensors index), the shapes Llama 3.3 70B keeps with a longer
    context."""
    from jupyter_hwsim.core import catalog

    w = catalog.get("workloads", "llama-3-70b")
    m = costs.resolve(Scenario(kind="llm", workload="llama-3-70b", gpu="h100"))
    assert costs.parameters(m) == pytest.approx(70.55e9, rel=0.01)
    newer = catalog.get("workloads", "llama-3.3-70b")
    assert all(w[k] == newer[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab"))
    assert (w["seq_len"], newer["seq_len"]) == (8192, 131072)
