"""Costs of one batch on every resource: roofline per operator, memory footprint, loader demands.

The DES engine and the analytic twin both read these numbers, so they model the
same machine; they differ only in how they combine them (events vs. closed form).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field

from . import attention, catalog, workloads
from .scenario import Scenario

MATMUL = "matmul"

# Model constants, each with its source or, where none is recorded, marked as an assumption.
# a workload that gives no dataset size (it sizes the page cache's hit rate: host_cache_gb / dataset_gb);
# assumption: a small dataset, so that a default scenario reads from storage
DEFAULT_DATASET_GB = 1.0
# a 16-bit scale (fp16) per weight_group_size weights in group-quantized formats (llama.cpp Q4_0, GPTQ, AWQ)
QUANT_SCALE_BYTES = 2.0
# weight-only quantization (int4; int8 for LLMs) keeps activations in a 16-bit format
WEIGHT_ONLY_ACTIVATION_BYTES = 2.0
# an LLM's int8 and int4 are weight-only formats: 16-bit activations and math, quantized weights
WEIGHT_ONLY_FORMATS = ("int8", "int4")
REBUILT_WEIGHT_BYTES = 2.0  # a weight rebuilt to 16 bits for a library GEMM (costs.reconstructs)
# the backward pass of an operator costs twice its forward FLOPs (gradients of its input and of its weights, the
# 2N of the 6N FLOPs per parameter per token of Kaplan et al. 2020) and a matmul launches two kernels for them
BACKWARD_FLOPS_FACTOR = 2.0
BACKWARD_MATMUL_KERNELS = 2
# Adam's state per parameter: its two moments, m and v, in fp32
ADAM_MOMENT_BYTES = 8
# the fp32 master copy of weights narrower than fp32 (mixed-precision training)
FP32_MASTER_BYTES = 4
# PyTorch's foreach Adam (multi_tensor_apply) launches one kernel per this many tensors: depth_to_max_tensors
# for depth 4 (param, grad, m, v) in aten/src/ATen/native/cuda/MultiTensorApply.cuh
ADAM_TENSORS_PER_LAUNCH = 36
# inference holds at most this many times the largest operator's input and output at once (assumption: the
# allocator keeps the next operator's buffers beside the current ones)
INFERENCE_ACTIVATION_FACTOR = 2


@dataclass(frozen=True)
class OpCost:
    name: str
    cls: str
    flops: float  # per batch
    bytes: float  # HBM bytes per batch
    time_s: float  # roofline time without launch
    bound: str  # "compute" | "memory"
    occupancy: float


@dataclass
class StepCost:
    """One training or inference step on the device."""

    compute_s: float = 0.0  # kernels bound by FLOP/s
    memory_s: float = 0.0  # kernels bound by bandwidth
    launch_dev_s: float = 0.0  # device-side launch gaps
    issue_s: float = 0.0  # CPU time to issue the kernels
    flops: float = 0.0  # useful FLOPs of the step
    hbm_bytes: float = 0.0
    kernels: int = 0
    ops: list = field(default_factory=list)

    @property
    def kernel_s(self) -> float:
        return self.compute_s + self.memory_s + self.launch_dev_s

    @property
    def step_s(self) -> float:
        """GPU wall time of a step: kernels, or the CPU issuing them if that is slower."""
        return max(self.kernel_s, self.issue_s)


@dataclass
class Machine:
    """A scenario resolved against the catalogue: every value concrete."""

    s: Scenario
    workload: dict
    device: dict
    storage: dict
    link: dict
    engine: dict  # the runtime profile (data/engines.toml)
    batch: int
    seq: int
    precision: str  # what the hardware runs
    warnings: list
    storage_gbs: float
    storage_latency_ms: float
    storage_concurrency: int
    link_gbs: float
    dataset_gb: float
    preprocess_ms: float
    input_bytes: float
    device_bytes: float
    last_logits: bool = False  # a generation engine's prefill scores the vocabulary at the last position only


def _entry(section, value):
    return value if isinstance(value, dict) else catalog.get(section, value)


def effective_precision(device: dict, precision: str) -> tuple[str, list]:
    """The precision the device runs for the one asked, with a warning on fallback."""
    peaks, warnings, p = device["peak_tflops"], [], precision
    seen = set()
    while p not in peaks and p not in seen:
        seen.add(p)
        nxt = (
            device.get("fallbacks", {}).get(p) or catalog.get("precisions", p)["fallback"] or max(peaks, key=peaks.get)
        )
        p = nxt
    if p not in peaks:
        p = max(peaks, key=peaks.get)
    if p != precision:
        warnings.append(
            f"{device.get('name', device.get('id'))} has no native {precision}: "
            f"it runs at the {p} rate (bytes stay {precision})"
        )
    return p, warnings


def resolve(s: Scenario) -> Machine:
    w = workloads.resolve(s.workload)
    dev = _entry("gpus", s.gpu)
    sto = _entry("storage", s.storage)
    link = _entry("links", s.host_link or dev.get("host_link", "pcie4"))
    # LLM int8/int4 is weight-only quantization: the math runs at 16 bits
    math_precision = "fp16" if weight_only(s) else s.precision
    prec, warnings = effective_precision(dev, math_precision)
    warnings = [*(str(x) for x in w.get("warnings", ())), *warnings]  # an imported model's (unknown operators)
    seq = s.seq_len or workloads.default_seq(w)
    t = s.traits
    batch = next((getattr(s, f) for f in t.batch_fields if getattr(s, f)), None) or t.default_batch
    batch = batch or int(w["default_batch_size"])
    return Machine(
        s=s,
        workload=w,
        device=dev,
        storage=sto,
        link=link,
        engine=_entry("engines", s.engine),
        batch=batch,
        seq=seq,
        precision=prec,
        warnings=warnings,
        storage_gbs=s.storage_bandwidth_gbs or sto["bandwidth_gbs"],
        storage_latency_ms=sto["latency_ms"] if s.storage_latency_ms is None else s.storage_latency_ms,
        storage_concurrency=s.storage_concurrency or int(sto["concurrency"]),
        link_gbs=s.host_link_gbs or link["bandwidth_gbs"],
        dataset_gb=s.dataset_gb or float(w.get("dataset_gb", DEFAULT_DATASET_GB)),
        preprocess_ms=preprocess_ms(s, w),
        input_bytes=s.input_bytes_per_sample or float(w["input_bytes_per_sample"]),
        device_bytes=workloads.device_bytes_per_sample(w, seq),
    )


def value_bytes(precision: str) -> float:
    return float(catalog.get("precisions", precision)["bytes"])


QUANTIZED = ("fp8", "int8", "int4")


def weight_only(s: Scenario) -> bool:
    """An LLM quantized in a weight-only format: its weights int8 or int4, its activations and math 16-bit."""
    return s.traits.generates and s.precision in WEIGHT_ONLY_FORMATS


def weight_bytes(s: Scenario) -> float:
    """Bytes per weight, with a 16-bit scale per group for quantized formats (Q4_0: 4.5 bits)."""
    wb = value_bytes(s.precision)
    if s.precision in QUANTIZED and s.weight_group_size:
        wb += QUANT_SCALE_BYTES / s.weight_group_size
    return wb


def activation_bytes(precision: str, generates: bool = False) -> float:
    """int4 (and int8 for LLMs) is weight-only quantization: activations stay 16-bit."""
    if precision == "int4" or (generates and precision in QUANTIZED):
        return WEIGHT_ONLY_ACTIVATION_BYTES
    return value_bytes(precision)


# The output tiles a GEMM library picks among, as multiples of the device's reference tile (the tile at which
# its matmuls reach compute_efficiency): CUTLASS and cuBLAS kernels come in these shapes, largest first.
TILE_SHAPES = ((2, 1), (1, 2), (1, 1), (1, 0.5), (0.5, 1), (0.5, 0.5), (0.5, 0.25), (0.25, 0.25), (0.125, 1),
               (0.125, 0.5))  # fmt: skip
# a matmul with fewer output rows than a tensor-core instruction's (m16) runs as a GEMV on the vector units
GEMV_ROWS = 16
# split-K: the reduction dimension cut into slices that run as separate CTAs and are summed after (cuBLAS and
# CUTLASS use it to fill the chip when M x N is small); a slice keeps at least MIN_K_SLICE of K, below which
# the partial sums' traffic outweighs the gain (assumption, in the range CUTLASS's split-K examples use)
SPLITS = (1, 2, 4, 8, 16)
MIN_K_SLICE = 256


def sm_occupancy(op, batch: int, units: int, tile: int) -> float:
    """The fraction of the device's best matmul rate an operator of this shape reaches (vector operators: the
    share of the chip its elements fill).

    A matmul's M x N output is cut into tiles, one per CTA; the best of the library's tile shapes and split-K
    factors is taken, each scored by its waves' fill of the `units` SMs (wave quantization), the padding of
    its edge tiles, and its operand reuse against the reference tile (a tm x tn tile loads (tm + tn) operands
    per tm x tn multiply-adds, so a smaller tile waits on its operands)."""
    if op.cls != MATMUL:
        tiles = math.ceil(op.act_out * batch / (tile * tile))
        return min(1.0, max(1, tiles) / units)
    groups = op.groups * batch if op.groups > 1 else 1
    rows = op.rows if op.groups > 1 else op.rows * batch
    k = op.flops / max(2.0 * op.groups * op.rows * op.cols, 1.0)  # the reduction length: per sample, per group
    return _gemm_fill(groups, round(rows), round(op.cols), round(k), units, tile)


@functools.lru_cache(maxsize=65536)
def _gemm_fill(groups: int, m: int, n: int, k: int, units: int, tile: int) -> float:
    best = 0.0
    ref_reuse = tile / 2.0
    for fm, fn in TILE_SHAPES:
        tm, tn = max(1, int(tile * fm)), max(1, int(tile * fn))
        reuse = min(1.0, (tm * tn / (tm + tn)) / ref_reuse)
        if reuse <= best:
            continue
        bm, bn = math.ceil(max(m, 1) / tm), math.ceil(max(n, 1) / tn)
        padding = max(m, 1) * max(n, 1) / (bm * tm * bn * tn)
        for split in SPLITS:
            if split > 1 and k / split < MIN_K_SLICE:
                break
            ctas = groups * bm * bn * split
            waves = math.ceil(ctas / units)
            best = max(best, reuse * padding * ctas / (waves * units))
    return best


@dataclass(frozen=True)
class Rates:
    """What one device does per second at one precision: the roofline's two roofs and its launch cost."""

    matmul: float  # FLOP/s on tensor cores
    vector: float  # FLOP/s on the vector units (elementwise, norms, softmax)
    bw: float  # achievable HBM bytes/s
    launch_s: float  # device-side gap per kernel
    units: int
    tile: int
    matmul_fixed_s: float = 0.0  # a matmul kernel's fixed time inside it (prologue, pipeline fill, epilogue)
    weight_matmul: float = 0.0  # FLOP/s of a matmul with weights where the engine runs it otherwise (0: matmul)
    # the share of the bandwidth a depthwise convolution of LARGE_DEPTHWISE_WINDOW or more reaches
    large_depthwise_bw_efficiency: float = 1.0
    decode_attention_fixed_s: float = 0.0  # one decode-attention call's fixed time, however little it reads


# cuDNN (8.2 and later) and PyTorch's native depthwise kernels specialise 3x3 and 5x5 windows (pytorch/pytorch PR
# 22302 and PR 58749: up to 6x for 5x5); a 7x7 or larger window runs a generic kernel far from the bandwidth roof
# (engines.toml large_depthwise_bw_efficiency).
LARGE_DEPTHWISE_WINDOW = 7


def rates(m: Machine) -> Rates:
    dev, peaks = m.device, m.device["peak_tflops"]
    eff = dev["compute_efficiency"]
    matmul = peaks[m.precision]
    if m.engine.get("accumulate") == "fp16":  # a GeForce card runs fp16-accumulate GEMMs at twice the rate
        matmul = dev.get("peak_tflops_acc16", {}).get(m.precision, matmul)
    # fp8 matmuls reach a smaller share of their doubled peak than bf16 ones of theirs (devices.toml efficiency_vs_bf16)
    own = dev.get("efficiency_vs_bf16", {}).get(m.precision, 1.0)
    return Rates(
        matmul * 1e12 * dev.get("gemm_efficiency", eff) * own,
        peaks.get("fp32", min(peaks.values())) * 1e12 * eff,
        dev["memory_bandwidth_gbs"] * 1e9 * dev["memory_efficiency"],
        dev["launch_overhead_us"] * 1e-6,
        dev["parallel_units"],
        dev["tile"],
        _device_figure(dev, "matmul_latency_us") * 1e-6,
        quantized_matmul_tflops(m) * 1e12 * eff,
        float(m.engine.get("large_depthwise_bw_efficiency", 1.0)),
        _device_figure(dev, "decode_attention_latency_us") * 1e-6,
    )


def quantized_matmul_tflops(m: Machine) -> float:
    """The rate of the weight matmuls of a weight-quantized LLM (int8, int4) where the engine runs them with kernels
    of their own (llama.cpp's MMQ: activations quantized to int8, int8 dot products; tinygemm's int4 kernel under
    torch.compile) on a device with the tensor rate they use: that rate times the engine's
    quantized_matmul_efficiency (how far its kernels get from it), for the formats it names
    (quantized_matmul_formats; all weight-only formats where absent). 0 elsewhere: the weights are dequantized and
    multiplied at the 16-bit rate (engines.toml quantized_matmul)."""
    e, s = m.engine, m.s
    rate = e.get("quantized_matmul")
    if not rate or not weight_only(s) or s.precision not in e.get("quantized_matmul_formats", WEIGHT_ONLY_FORMATS):
        return 0.0
    if rate not in m.device["peak_tflops"] or catalog.maker(m.device) not in e.get("quantized_matmul_platforms", ()):
        return 0.0
    return float(m.device["peak_tflops"][rate]) * float(e.get("quantized_matmul_efficiency", 1.0))


def _device_figure(dev: dict, key: str) -> float:
    """A device's figure for `key` (matmul_latency_us, decode_attention_latency_us); a custom device without one
    takes the catalogue's default (built-in entries carry it already)."""
    value = dev.get(key)
    return float(catalog.defaults("gpus")[key] if value is None else value)


# A tensor-core matmul pays part of both roofs where they are close: its weight stream and its MMAs overlap
# imperfectly, so its time is fixed + (t_c^P + t_m^P)^(1/P) rather than the roofline's max (P -> infinity).
# P fitted, with each device's gemm_efficiency, to Vidur's measured PyTorch fp16 linears of Llama-2-7B's shapes on
# A100 and H100, M = 1..4096 (data/reference/vidur_linear_table.csv; tests/test_gemm_table.py refits it).
MATMUL_OVERLAP_P = 2.5


def gemv(op, b: int) -> bool:
    """A matmul that runs as a matrix-vector kernel: a depthwise convolution, or fewer output rows than GEMV_ROWS."""
    return op.cls == MATMUL and (op.vector or (op.groups == 1 and op.rows * b < GEMV_ROWS))


def with_matmul_overheads(op, r: Rates, kernels: int, t_c: float, t_m: float, b: int = 1) -> tuple[float, float]:
    """(t_c, t_m) of a matmul with what it pays beyond its larger roof added to that roof, so that their max is
    its time: however small, a GEMM kernel pays its prologue, pipeline fill and epilogue per kernel
    (devices.toml matmul_latency_us, from a measured GEMM table), which keeps small matmuls far from both roofs;
    and a tensor-core matmul near its ridge point pays part of the smaller roof too (MATMUL_OVERLAP_P)."""
    if op.cls != MATMUL or not kernels:
        return t_c, t_m
    extra = kernels * r.matmul_fixed_s
    hi, lo = max(t_c, t_m), min(t_c, t_m)
    if lo > 0 and not gemv(op, b):
        extra += hi * ((1.0 + (lo / hi) ** MATMUL_OVERLAP_P) ** (1.0 / MATMUL_OVERLAP_P) - 1.0)
    return (t_c + extra, t_m) if t_c >= t_m else (t_c, t_m + extra)


def roofline(
    op, b: int, r: Rates, wb: float, ab: float, fused: bool, scale: float = 1.0, occupancy: bool = True
) -> tuple[float, float, float, float]:
    """(flops, bytes, compute-roof seconds, memory-roof seconds) of one operator pass over b samples."""
    flops = op.flops * b * scale
    act = 0.0 if fused else (op.act_in + op.act_out) * b * ab * scale
    nbytes = act + op.params * workloads.weight_share(op, b) * wb * scale
    if op.cls != MATMUL:
        occ = sm_occupancy(op, b, r.units, r.tile) if occupancy else 1.0
        return flops, nbytes, flops / (r.vector * occ), nbytes / r.bw
    if op.vector:  # no tensor-core form: the vector units, a 7x7 or larger window at its kernels' bandwidth
        bw = r.bw * (r.large_depthwise_bw_efficiency if op.window >= LARGE_DEPTHWISE_WINDOW else 1.0)
        return flops, nbytes, flops / r.vector, nbytes / bw
    rate = r.weight_matmul if op.params and r.weight_matmul else r.matmul
    if not occupancy:  # a recorded step: no shapes
        return flops, nbytes, flops / (r.vector if gemv(op, b) else rate), nbytes / r.bw
    rate *= sm_occupancy(op, b, r.units, r.tile)
    if gemv(op, b):  # the library runs the faster of a vector-unit GEMV and a tensor-core tile padded to its rows
        rate = max(r.vector, rate)
    return flops, nbytes, flops / rate, nbytes / r.bw


_STEP_CACHE: dict = {}


def step_cost(m: Machine, batch: int | None = None, seq: int | None = None) -> StepCost:
    """Roofline cost of one step at a batch (default the scenario's): forward (+ backward + optimizer
    when training); cached per configuration."""
    batch, seq = batch or m.batch, seq or m.seq
    s, key = m.s, None
    if all(isinstance(v, str) for v in (s.workload, s.gpu, s.engine)):
        key = (
            s.workload,
            s.gpu,
            s.traits.trains,
            s.traits.generates,
            s.precision,
            m.precision,
            s.engine,
            tuple(m.workload.get("file_stamp") or ()),  # an imported file edited since: cost it again
            batch,
            seq,
            s.cpu_speed,
            s.weight_group_size,
            s.channels_last,
            m.last_logits,
            m.engine.get("graphs"),  # a serving engine's prefill issues its kernels one by one (llm.prefill_engine)
        )
        hit = _STEP_CACHE.get(key)
        if hit is not None:
            return hit
    c = _build_step_cost(m if (batch, seq) == (m.batch, m.seq) else dataclasses.replace(m, batch=batch, seq=seq))
    if key is not None:
        if len(_STEP_CACHE) > 4096:
            _STEP_CACHE.clear()
        _STEP_CACHE[key] = c
    return c


def last_row(op):
    """A language model's head over its last position only: what a generation engine's prefill computes, which
    samples the next token from the last position's scores (engines.toml prefill_logits)."""
    return dataclasses.replace(
        op, flops=op.flops / op.rows, act_in=op.act_in / op.rows, act_out=op.act_out / op.rows, rows=1.0
    )


def fused_classes(m: Machine) -> frozenset:
    """Operator classes the engine fuses away in this scenario. An attention's scale and mask go with its softmax
    or into its neighbours wherever the engine fuses either. Batch normalization folds into the convolution's
    weights only at inference: a training step normalizes with its own batch's statistics, which need the
    convolution's output first (a reduction over it), so a training step pays batchnorm's passes on any engine."""
    fuses = frozenset(m.engine["fuses"])
    if fused_attention(m):  # the attention kernel scales, masks and normalizes its scores on chip
        fuses |= {"softmax"}
    if fuses & {"softmax", "elementwise"}:
        fuses |= {"mask"}
    return fuses - {"batchnorm"} if m.s.traits.trains else fuses


def stranded_between_matmuls(m: Machine, ops, fused: frozenset) -> set[int]:
    """Indices of fusible operators an engine without epilogue fusion must run as a kernel of their own
    (engines.toml epilogue_fusion): a run of them between two matmuls or convolutions, which run as library calls
    (cuBLAS, cuDNN), has no generated kernel to fuse into, so it runs as one kernel, priced as its largest operator
    (a GELU between two linears; a squeeze-excite's gate and scale between its fully connected layer and the
    projection; a SiLU between two convolutions once batch norm is folded into the first)."""
    if m.engine.get("epilogue_fusion", True):
        return set()

    def library_call(op) -> bool:  # a matmul, or what vanishes into one (batch norm folded into its convolution)
        return op.cls == MATMUL or (op.cls == "batchnorm" and op.cls in fused)

    inside = {"softmax", "mask"} if fused_attention(m) else set()  # in the attention's own kernel

    def fusible(op) -> bool:
        return op.cls in fused and op.cls not in inside and not library_call(op)

    out, i = set(), 1
    while i < len(ops):
        if fusible(ops[i]) and library_call(ops[i - 1]):
            j = i
            while j < len(ops) and fusible(ops[j]):
                j += 1
            if j < len(ops) and library_call(ops[j]):  # ops[i:j] sit between two library calls
                out.add(max(range(i, j), key=lambda k: ops[k].act_in + ops[k].act_out))
            i = j
        else:
            i += 1
    return out


def fused_attention(m: Machine) -> bool:
    """The engine runs attention as one fused kernel (flash or memory-efficient attention: engines.toml attention):
    the score matrix never leaves the chip, and the two matmuls and the softmax are one kernel."""
    return m.engine.get("attention") == "fused"


def reconstructs(m: Machine, op, b: int) -> bool:
    """The engine turns this weight-only quantized matmul's weights back into 16-bit ones first, in a kernel of its
    own, and multiplies those with a 16-bit GEMM: ExLlama's path for `reconstruct_rows` rows or more (engines.toml).
    The GEMM then reads 2-byte weights, and the reconstruction reads the quantized ones and writes the 2-byte ones."""
    rows = m.engine.get("reconstruct_rows")
    return (
        bool(rows) and weight_only(m.s) and op.cls == MATMUL and op.params > 0 and not op.gather and op.rows * b >= rows
    )


def attention_table(m: Machine) -> tuple[str, str] | None:
    """(engine table, board) where the engine's fused prefill attention is measured on this chip: the engine names
    its table (engines.toml attention_table) and the device the board measured for it (devices.toml kernel_board)."""
    framework, board = m.engine.get("attention_table"), m.device.get("kernel_board")
    return (framework, board) if framework and board and fused_attention(m) else None


def measured_attention_s(m: Machine, ops, b: int) -> dict[int, float]:
    """Seconds per operator index where the attention kernel is measured (attention.rate_flops): a causal
    self-attention's whole kernel on its score matmul, at its prompt length and at batch x heads; nothing on the
    operators inside the kernel (its mask, softmax and context matmul). A window shorter than the prompt or a
    query shorter than its keys is not what the tables measured, so those stay with the roofline."""
    table = attention_table(m)
    if table is None or not m.workload.get("causal"):
        return {}
    out: dict[int, float] = {}
    for i, op in enumerate(ops):
        if not (op.cls == MATMUL and op.scores_out and op.rows == op.cols):
            continue
        j = next((k for k in range(i + 1, len(ops)) if ops[k].scores_in), None)
        if j is None:
            break
        flops = (op.flops + ops[j].flops) * op.causal_share * b
        out[i] = flops / attention.rate_flops(*table, b * op.groups / attention.REF_HEADS, round(op.rows))
        out.update(dict.fromkeys(range(i + 1, j + 1), 0.0))
    return out


def _build_step_cost(m: Machine) -> StepCost:
    b, training = m.batch, m.s.traits.trains
    measured = m.workload["arch"] == "measured"  # a recorded step already holds its backward and optimizer
    r = rates(m)
    wb, ab = weight_bytes(m.s), activation_bytes(m.s.precision, m.s.traits.generates)
    fused = fused_classes(m)
    transposes = nchw_transposes(m)
    fp32_classes = autocast_fp32_classes(m)
    c = StepCost()
    backward = [("bwd", BACKWARD_FLOPS_FACTOR, BACKWARD_MATMUL_KERNELS)]
    passes = [("fwd", 1.0, 1)] + (backward if training and not measured else [])
    flash = fused_attention(m)
    present = [last_row(op) if m.last_logits and op.logits else op
               for op in workloads.operators(m.workload, m.seq) if training or not op.training]  # fmt: skip
    stranded = stranded_between_matmuls(m, present, fused)
    attn_s = measured_attention_s(m, present, b)
    for i, op in enumerate(present):
        if flash and (op.scores_out or op.scores_in):  # the scores stay on chip; one kernel for the attention
            op = dataclasses.replace(op, act_out=op.act_out - op.scores_out, act_in=op.act_in - op.scores_in,
                                     kernels=0 if op.scores_in else op.kernels)  # fmt: skip
        if flash and op.causal_share < 1.0:  # a fused causal attention skips the blocks above the diagonal
            op = dataclasses.replace(op, flops=op.flops * op.causal_share)
        is_fused = op.cls in fused and i not in stranded
        recon = reconstructs(m, op, b)
        for tag, scale, n_mm in passes:
            # an embedding's backward writes the whole table's gradient (a dense one), where its forward reads rows
            pass_op = dataclasses.replace(op, gather=False) if op.gather and tag == "bwd" else op
            flops, nbytes, t_c, t_m = roofline(
                pass_op,
                b,
                r,
                REBUILT_WEIGHT_BYTES if recon else wb,
                ab,
                is_fused,
                scale,
                occupancy=not measured,
            )  # a recorded step has no shapes
            if training and op.cls == "batchnorm" and not is_fused:
                extra = op.act_in * b * ab * scale  # batch statistics: one more pass over the input
                nbytes += extra
                t_m += extra / r.bw
            if op.cls in fp32_classes and not is_fused:  # 4-byte reads and writes, a cast kernel in and one out
                extra = 4.0 * (op.act_in + op.act_out) * b * ab * scale
                nbytes += extra
                t_m += extra / r.bw
                c.kernels += 2
                c.launch_dev_s += 2 * r.launch_s
            if transposes and op.tensor_core_conv:  # NCHW in, NHWC for the tensor cores, NCHW out: read and written
                extra = 2.0 * (op.act_in + op.act_out) * b * ab * scale
                nbytes += extra
                t_m += extra / r.bw
                c.launch_dev_s += 2 * r.launch_s  # two transpose kernels, issued inside the library call
            kernels = 0 if is_fused else op.kernels * (n_mm if op.cls == MATMUL else 1)
            if i in attn_s and tag == "fwd":  # a measured kernel's time holds its fixed time, softmax and reads
                t_c, t_m = (attn_s[i], t_m) if attn_s[i] else (0.0, 0.0)
            elif not measured:  # a recorded step's kernel times hold their fixed time already
                t_c, t_m = with_matmul_overheads(op, r, kernels, t_c, t_m, b)
            t = max(t_c, t_m)
            if t_c >= t_m:
                c.compute_s += t
            else:
                c.memory_s += t
            c.flops += flops
            c.hbm_bytes += nbytes
            c.kernels += kernels
            c.launch_dev_s += kernels * r.launch_s
            if recon:  # the reconstruction kernel: quantized weights in, 16-bit weights out
                extra = op.params * workloads.weight_share(op, b) * (wb + REBUILT_WEIGHT_BYTES) * scale
                c.memory_s += extra / r.bw
                c.hbm_bytes += extra
                c.kernels += 1
                c.launch_dev_s += r.launch_s
            if tag == "fwd":
                c.ops.append(
                    OpCost(
                        op.name,
                        op.cls,
                        flops,
                        nbytes,
                        t,
                        "compute" if t_c >= t_m else "memory",
                        sm_occupancy(op, b, r.units, r.tile),
                    )
                )
    if training and not measured:  # Adam: read param, grad, m, v (+fp32 master); write param, m, v
        params = parameters(m)
        nbytes = params * (wb * 3 + ADAM_MOMENT_BYTES * 2 + (FP32_MASTER_BYTES * 2 if wb < FP32_MASTER_BYTES else 0))
        t = nbytes / r.bw
        tensors = op_sums(workloads.operators(m.workload, m.seq))["tensors"]
        kernels = math.ceil(tensors / ADAM_TENSORS_PER_LAUNCH)  # foreach multi_tensor_apply
        c.memory_s += t
        c.hbm_bytes += nbytes
        c.kernels += kernels
        c.launch_dev_s += kernels * r.launch_s
    # a device that runs on the host's cores issues nothing: its per-operator cost is its launch overhead
    c.issue_s = 0.0 if host_threads(m) else host_issue_s(m, c.kernels, 0 if measured else len(c.ops), training)
    return c


TENSOR_CORE_FORMATS = ("tf32", "fp16", "bf16", "fp8", "int8")


def autocast_fp32_classes(m: Machine) -> frozenset:
    """Operator classes that run in fp32 with a cast each side (engines.toml autocast_fp32): under autocast, which
    16-bit math in an eager framework runs under (language models are cast whole instead, model.half())."""
    if m.s.precision not in AUTOCAST or m.s.traits.generates:
        return frozenset()
    return frozenset(m.engine.get("autocast_fp32", ()))


def nchw_transposes(m: Machine) -> bool:
    """Whether each tensor-core convolution pays two layout transposes: an engine that keeps PyTorch's default NCHW layout
    (engines.toml conv_layout), a scenario that did not ask for channels_last, and NVIDIA tensor cores, whose
    convolutions run in NHWC (cuDNN transposes NCHW tensors in and out)."""
    return (
        m.engine.get("conv_layout") == "nchw"
        and not m.s.channels_last
        and m.precision in TENSOR_CORE_FORMATS
        and catalog.maker(m.device) == "NVIDIA"
    )


def host_issue_s(m: Machine, kernels: int, calls: int, training: bool = False) -> float:
    """The host's time to issue one step: a dispatch per kernel, plus, in a framework that runs Python per
    operator, each operator call's own work (module call, autocast's casts for 16-bit math, autograd's backward
    bookkeeping when training), on this host's cores."""
    e = m.engine
    # language models are cast to 16 bits whole (model.half()); other 16-bit models run under autocast
    cast_us = e["autocast_us"] if m.s.precision in AUTOCAST and not m.s.traits.generates else 0.0
    scale = host_overhead_scale(e)
    per_call = e["call_us"] * scale + cast_us
    if training:
        per_call += e["backward_us"] + cast_us
    return (kernels * e["issue_us"] * scale + calls * per_call + e["step_us"]) * 1e-6 / m.s.cpu_speed


def host_overhead_scale(engine: dict) -> float:
    """How much more a kernel issue and an operator call cost in the published runs of this engine than in its
    microbenchmarks (engines.toml host_overhead_scale; 1.0 where none is fitted). Fitted on forward passes, it
    prices every step: forward, training, and an LLM's decode steps (kinds/llm.py), which published eager
    generate() runs check without being fitted to them (docs/validation.md). An engine with host_overhead_scale_from
    carries that engine's. A step replayed as a CUDA graph issues no kernel from the host: its per-kernel cost is
    the replay's, measured on a GPU, and is not scaled."""
    if engine.get("graphs"):
        return 1.0
    lender = engine.get("host_overhead_scale_from")
    if lender:
        return host_overhead_scale(catalog.get("engines", lender))
    return float(engine.get("host_overhead_scale", 1.0))


AUTOCAST = ("fp16", "bf16")  # 16-bit math in an eager framework runs under autocast (the AMP recipe)


def host_threads(m: Machine) -> int:
    """Threads a step keeps busy on the host's own cores (a CPU as the device), else 0."""
    n = int(m.device.get("host_threads", 0))
    return min(n, m.s.cpu_cores) if n else 0


def core_share(cores: int, runnable: float, efficiency: float = 1.0) -> float:
    """The rate at which a thread (or a gang of them) advances among `runnable` threads time-sliced
    fairly on `cores`: the fair share C / T, the same for every thread of a gang. T may be fractional
    (the analytic twin's mean number of busy workers).
    A gang that meets at a barrier after every operator (an OpenMP step) would advance only while all its
    threads hold a core at once (C(T-k, C-k) / C(T, C): 1/3 and then 1/6 beside one and two workers on 2
    cores). Measured here, the step slowed 1.0-1.3 times from one worker to two, not 2 (its threads spin
    at the barrier and keep their cores), which the fair share's 4/3 is near (docs/calibration.md).
    `efficiency` scales the rate while the cores are oversubscribed: what calibrate measured beyond the
    scheduler's share (caches the other threads evict, a gang's threads waiting at barriers); capped at
    full speed."""
    if runnable <= cores:
        return 1.0
    over = min(1.0, runnable - cores)  # the share of time oversubscribed, for the twin's fractional T
    factor = 1.0 - over * (1.0 - efficiency)
    return min(1.0, factor * cores / runnable)


def _contention_figures(m: Machine) -> dict:
    """What calibrate measured of how a host device's step shares the cores with the threads beside it."""
    return m.device.get("contention_efficiency", {})


def contention(m: Machine) -> tuple[float, float]:
    """(step, thread) efficiencies of a host device's step gang and of the single threads beside it
    (loader workers, the main process's receive) while the cores are oversubscribed; 1 unless measured.
    The CPU a worker loses per batch beside the step is a hand-off cost (demands)."""
    e = _contention_figures(m)
    return float(e.get("step", 1.0)), float(e.get("threads", 1.0))


_SUMS: dict = {}


def forget() -> None:
    """Drop the step costs and operator sums kept by entry names (an entry added again under its name differs)."""
    _STEP_CACHE.clear()
    _SUMS.clear()


# operator classes whose output backward does not keep: in-place elementwise ops (ReLU(inplace=True), add_), and an
# attention's scale and mask (their gradient passes through; the softmax keeps its own output)
UNSAVED_CLASSES = ("elementwise", "mask")


def op_sums(ops: tuple, fused: frozenset = frozenset()) -> dict:
    """Sums over an operator list that every run needs: parameters, tensors that hold some, the largest input plus
    output of one operator (and of one that scores no vocabulary), and the activations training saves for
    backward (fused operators and UNSAVED_CLASSES save none). Memoized on the list itself (the catalogue builds
    each list once and shares it), so the suggestion search's many runs sum it once."""
    key = (id(ops), fused)
    hit = _SUMS.get(key)
    if hit is not None and hit[0] is ops:
        return hit[1]
    out = {
        "params": sum(op.params for op in ops),
        "tensors": sum(1 for op in ops if op.params),
        "max_io": max(op.act_in + op.act_out for op in ops),
        "max_io_unscored": max(op.act_in + op.act_out for op in ops if not op.logits),  # without the vocab scores
        "saved": sum(op.act_out for op in ops if op.cls not in fused and op.cls not in UNSAVED_CLASSES),
    }
    if len(_SUMS) >= 64:  # custom workloads build a new list per run: keep only a few
        _SUMS.clear()
    _SUMS[key] = (ops, out)
    return out


def parameters(m: Machine) -> float:
    return op_sums(workloads.operators(m.workload, m.seq))["params"]


def memory(m: Machine) -> dict:
    """Device memory: weights, gradients, optimizer state, activations, workspace (GB)."""
    p, wb, ab = parameters(m), weight_bytes(m.s), activation_bytes(m.s.precision, m.s.traits.generates)
    training = m.s.traits.trains
    sums = op_sums(workloads.operators(m.workload, m.seq), fused_classes(m))
    if training:  # saved for backward; in-place elementwise ops (ReLU(inplace=True), add_) save nothing more
        act = sums["saved"] * m.batch * ab
    else:
        act = INFERENCE_ACTIVATION_FACTOR * sums["max_io"] * m.batch * ab
    out = {
        "weights_gb": p * wb / 1e9,
        "gradients_gb": p * wb / 1e9 if training else 0.0,
        "optimizer_gb": p * (ADAM_MOMENT_BYTES + (FP32_MASTER_BYTES if wb < FP32_MASTER_BYTES else 0)) / 1e9
        if training
        else 0.0,
        "activations_gb": act / 1e9,
        "kv_cache_gb": 0.0,
        "workspace_gb": float(m.device["workspace_gb"]),
    }
    out["total_gb"] = sum(out.values())
    out["capacity_gb"] = capacity_gb(m.device)
    out["oom"] = out["total_gb"] > out["capacity_gb"]
    return out


# DRAM comes in binary sizes: a card sold as "80 GB" holds 80 GiB (nvidia-smi shows an A100/A800 80GB as
# 81920 MiB, a P100 16GB as 16384 MiB), 85.9 GB in the 1e9-byte GB that every other memory figure here uses.
GB_PER_CATALOGUE_GB = 2**30 / 1e9


def capacity_gb(device: dict) -> float:
    """The device's memory in GB of 1e9 bytes, from the catalogue's memory_gb (its marketed size, in GiB)."""
    return float(device["memory_gb"]) * GB_PER_CATALOGUE_GB


def capacity_text(gb: float) -> str:
    """A capacity of gb (1e9 bytes) as its card states it and in GB: "24 GiB (25.8 GB)"."""
    return f"{round(gb / GB_PER_CATALOGUE_GB, 1):g} GiB ({gb:.1f} GB)"


@dataclass
class Demands:
    """Seconds of each resource one batch needs (service demands of the bottleneck law)."""

    storage_s: float  # storage device busy
    read_s: float  # a worker's wall time reading its batch (device + latency in flight)
    preprocess_s: float  # core-seconds of decode/augment/collate (per sample, and per batch: sampler, collate)
    handoff_s: float  # core-seconds a worker spends handing a batch over (shared memory per byte, IPC per batch)
    receive_s: float  # main-process core-seconds to take a batch from a worker
    copy_s: float  # host link busy
    step: StepCost
    cache_hit: float


def preprocess_ms(s: Scenario, w: dict) -> float:
    """CPU ms of one sample on the reference core: the scenario's preprocess_ms_per_sample, else its decoder's
    decode of the workload's mean image (the host's share of it) plus augmentation, else the workload's own
    figure (data/decoders.toml). The augmentation is the scenario's named chain priced for the decoder's library
    (data/augmentations.toml; none on the host for a GPU decoder, whose chain runs on the GPU), else the
    decoder's own chain."""
    if s.preprocess_ms_per_sample is not None:
        return s.preprocess_ms_per_sample
    if s.decoder is None:
        return w["preprocess_ms_per_sample"]
    d = catalog.get("decoders", s.decoder)
    decode = float(w["image_mpix"]) * 1e3 / d["decode_mpix_per_s"]
    return decode * d["host_decode_share"] + augment_ms(s.augmentation, d)


def augment_ms(augmentation: str | None, decoder: dict) -> float:
    """Host ms of one sample's transform chain on the reference core: the named chain for the decoder's library
    (0 for a GPU decoder), else the decoder's own chain (augment_ms_per_sample)."""
    if augmentation is None:
        return float(decoder["augment_ms_per_sample"])
    if decoder["device"] != "cpu":
        return 0.0
    return float(catalog.get("augmentations", augmentation)["ms_per_sample"][decoder["library"]])


def gpu_decode_s(m: Machine) -> float:
    """Device seconds per batch that a GPU decoder (dali-gpu: nvJPEG) adds to the step; 0 for the others."""
    if m.s.decoder is None:
        return 0.0
    d = catalog.get("decoders", m.s.decoder)
    hw = isinstance(m.s.gpu, str) and m.s.gpu.startswith(tuple(d["hw_decoder_gpus"]))
    rate = d["hw_decode_mpix_per_s"] if hw else d["gpu_decode_mpix_per_s"]
    return m.batch * float(m.workload["image_mpix"]) / rate if rate else 0.0


def _with_gpu_decode(step: StepCost, m: Machine) -> StepCost:
    """The step with a GPU decoder's device time (counted as compute: nvJPEG's kernels) in front of it."""
    t = gpu_decode_s(m)
    return dataclasses.replace(step, compute_s=step.compute_s + t) if t else step


def demands(m: Machine) -> Demands:
    s = m.s
    hit = min(1.0, s.host_cache_gb / m.dataset_gb) if m.dataset_gb > 0 else 1.0
    miss = (1.0 - hit) * m.batch
    lat = m.storage_latency_ms / 1e3
    transfer = miss * m.input_bytes / (m.storage_gbs * 1e9)
    factor = 1.0 if s.pin_memory else float(m.link.get("pageable_factor", 1.0))
    return Demands(
        storage_s=transfer + miss * lat / m.storage_concurrency,
        read_s=transfer + miss * lat,
        preprocess_s=(m.batch * m.preprocess_ms + float(m.workload.get("preprocess_ms_per_batch", 0.0)))
        / 1e3
        / s.cpu_speed,
        handoff_s=(
            m.batch * float(m.workload.get("handoff_ms_per_sample", 0.0))
            + float(m.workload.get("handoff_ms_per_batch", 0.0))
            + float(_contention_figures(m).get("worker_ms_per_batch", 0.0))
        )
        / 1e3
        / s.cpu_speed
        if s.loader_workers
        else 0.0,
        receive_s=float(m.workload.get("receive_ms_per_batch", 0.0)) / 1e3 / s.cpu_speed if s.loader_workers else 0.0,
        copy_s=m.batch * m.device_bytes / (m.link_gbs * 1e9 * factor),
        step=_with_gpu_decode(step_cost(m), m),
        cache_hit=hit,
    )
