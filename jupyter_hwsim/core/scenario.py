"""Scenario: an immutable, validated description of one pipeline on one machine."""

from __future__ import annotations

import dataclasses
import math
import numbers
import sys
from dataclasses import dataclass
from typing import Any

from . import catalog
from .errors import HwsimError, did_you_mean, show

BATCHING = ("static", "continuous")
MODES = ("closed-loop", "offline")  # llm arrivals without a rate (DESIGN 2.3)
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")
FUSIONS = ("eager", "compiled", "tensorrt")  # the older knob: an alias of the engine each names (engines.toml)
IMPORTED = ("hf:", "onnx:")  # workload="hf:config.json" or "onnx:model.onnx": read by core/importers
TINY = sys.float_info.min  # the smallest normal float: a number below it (but not 0) overflows whatever it divides


@dataclass(frozen=True)
class KindTraits:
    """What the core needs to know of a scenario kind. Its behaviour (demands, simulation, details, diagnosis)
    lives in one module of `kinds/`, registered under the same name."""

    unit: str  # what throughput counts
    batch_fields: tuple[str, ...]  # the fields that set the batch, the first one set wins; the first is the knob
    default_batch: int | None  # when none is set (None: the workload's default batch)
    default_workload: str  # the workload it starts from when none is named
    panel_fields: tuple[str, ...]  # what a what-if panel shows for it, beside COMMON_FIELDS
    trains: bool = False  # forward, backward and the optimizer update
    generates: bool = False  # autoregressive decoding: a language model, a KV cache, weight-only int8/int4
    suggest_steps: int = 60  # steps (requests for serving) of the short re-runs that measure each suggestion
    largest_batch: int = 4096  # the largest batch a batch-size sweep tries

    @property
    def batch_field(self) -> str:
        return self.batch_fields[0]


# what a what-if panel shows: the fields of every kind, then those of each kind (KindTraits.panel_fields)
COMMON_FIELDS = ("kind", "workload", "gpu", "precision", "engine")
_LOADER = ("loader_workers", "cpu_cores", "storage", "storage_bandwidth_gbs", "host_link", "pin_memory")
_SERVING = ("arrival_rate_rps", "max_batch_size", "max_queue_delay_ms", "latency_slo_ms", "replicas",
            "loader_workers", "cpu_cores", "host_link", "pin_memory")  # fmt: skip
_LLM = ("prompt_tokens", "output_tokens", "concurrency", "batching", "mode", "latency_slo_ms")
KIND_TRAITS = {
    "training": KindTraits(
        "samples/s", ("batch_size",), None, "resnet50", ("batch_size", "channels_last", *_LOADER), trains=True
    ),
    "inference": KindTraits("samples/s", ("batch_size",), None, "resnet50", ("batch_size", "channels_last", *_LOADER)),
    "serving": KindTraits(
        "requests/s", ("max_batch_size", "batch_size"), 8, "resnet50", _SERVING, suggest_steps=400, largest_batch=1024
    ),  # fmt: skip
    "llm": KindTraits("tokens/s", ("concurrency",), 16, "llama-2-7b", _LLM, generates=True, largest_batch=1024),
}
KINDS = tuple(KIND_TRAITS)
KIND_FIELDS = {k: t.panel_fields for k, t in KIND_TRAITS.items()}


def panel_fields(kind: str) -> tuple[str, ...]:
    """The fields a what-if panel has controls for: the only changes it may suggest."""
    return (*COMMON_FIELDS, *KIND_FIELDS[kind])


# fields a kind reads beyond COMMON_FIELDS, its panel_fields and batch_fields
_ALSO_APPLY = {
    "training": ("latency_slo_ms",),  # best_batch and `sweep --best` judge every kind against it
    "inference": ("latency_slo_ms",),
    "serving": ("concurrency", "think_time_ms"),  # a closed loop of clients
    "llm": ("arrival_rate_rps", "cpu_cores", "output_tokens_cv", "kv_precision"),
}
# the fields that belong to some kinds only; any other field applies to every kind
_KIND_ONLY = {f for k, t in KIND_TRAITS.items() for f in (*t.panel_fields, *t.batch_fields, *_ALSO_APPLY.get(k, ()))}
_KIND_ONLY -= set(COMMON_FIELDS)


# plain words for each field where its name is not plain enough (Field.label); units worth showing beside them
LABELS = {
    "kind": "What it does",
    "gpu": "GPU",
    "batch_size": "Batch size",
    "seq_len": "Sequence length",
    "loader_workers": "Loader workers",
    "prefetch_factor": "Batches prefetched per worker",
    "cpu_cores": "CPU cores",
    "cpu_speed": "CPU core speed (x reference)",
    "cpu": "Host CPU",
    "decoder": "Image decoder",
    "augmentation": "Augmentation",
    "storage": "Storage",
    "storage_bandwidth_gbs": "Storage read speed",
    "storage_latency_ms": "Storage latency",
    "storage_concurrency": "Storage reads in flight",
    "host_link": "Host-to-GPU link",
    "host_link_gbs": "Host-to-GPU link speed",
    "pin_memory": "Pinned memory",
    "channels_last": "Channels-last layout",
    "dataset_gb": "Dataset size",
    "host_cache_gb": "Host page cache",
    "preprocess_ms_per_sample": "CPU preprocessing per sample",
    "input_bytes_per_sample": "Bytes read per sample",
    "jitter_cv": "Jitter (coefficient of variation)",
    "steps": "Steps simulated",
    "arrival_rate_rps": "Request rate",
    "concurrency": "Concurrent clients",
    "think_time_ms": "Client think time",
    "max_batch_size": "Largest batch",
    "max_queue_delay_ms": "Longest batching wait",
    "latency_slo_ms": "Latency target",
    "replicas": "Replicas (GPUs)",
    "prompt_tokens": "Prompt length",
    "output_tokens": "Output length",
    "output_tokens_cv": "Output length variation (CV)",
    "batching": "Batching",
    "mode": "Arrivals",
    "kv_precision": "KV-cache precision",
    "weight_group_size": "Weights per quantization scale",
    "price_per_hour_usd": "GPU price per hour",
    "grid_gco2_per_kwh": "Grid carbon intensity",
}
_LABEL_UNITS = ("GB/s", "ms", "GB", "req/s", "tokens", "bytes", "USD/h", "gCO2e/kWh")


@dataclass(frozen=True)
class Field:
    """What a scenario field accepts: its type, unit, range and default."""

    name: str
    type: type
    unit: str
    help: str
    default: Any = None  # None: taken from the catalogue entry
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False  # True: lo itself is refused (> lo)
    choices: tuple | None = None

    @property
    def label(self) -> str:
        """Plain words with the unit, as a panel shows the field: "Loader workers", "Storage read speed (GB/s)"."""
        words = LABELS.get(self.name, self.name.replace("_", " ").capitalize())
        return f"{words} ({self.unit})" if self.unit in _LABEL_UNITS else words

    def accepted(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.type is bool:
            return "true or false"
        if self.type is str:
            return "a catalogue name (python -m jupyter_hwsim catalog) or a dict of its entry"
        kind = "an integer" if self.type is int else "a number"
        op = ">" if self.lo_open else ">="
        return f"{kind} {op} {self.lo:g} and <= {self.hi:g}" + (f" ({self.unit})" if self.unit else "")

    def check(self, value):
        """The value converted to this field's type, or a HwsimError."""
        if value is None:
            return None
        if self.name in ("workload", "gpu", "storage", "host_link", "cpu", "engine") and isinstance(value, dict):
            return value
        if self.name == "workload" and isinstance(value, str) and value.strip().lower().startswith(IMPORTED):
            return value.strip()  # a file path keeps its case
        if self.choices is not None or self.type is str:
            if not isinstance(value, str):
                raise HwsimError(self.name, value, self.accepted() if self.choices else "a catalogue name")
            value = value.strip().lower()
            if self.choices and value not in self.choices:
                raise HwsimError(self.name, value, self.accepted(), did_you_mean(value, self.choices))
            return value
        if self.type is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            raise HwsimError(self.name, value, self.accepted())
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise HwsimError(self.name, value, self.accepted())
        if isinstance(value, numbers.Integral):
            value = int(value)
            if abs(value) > 2**63:  # 10**400 has no float; it is out of every range anyway
                raise HwsimError(self.name, value, self.accepted())
        else:
            try:
                value = float(value)
            except (OverflowError, ValueError):
                raise HwsimError(self.name, value, self.accepted()) from None
            if not math.isfinite(value):
                raise HwsimError(self.name, value, self.accepted())
            if 0 < abs(value) < TINY:  # a subnormal: dividing by it overflows
                raise HwsimError(self.name, value, self.accepted(), f"a number this small is zero: at least {TINY:g}")
        if self.type is int:
            if value != int(value):
                raise HwsimError(self.name, value, self.accepted())
            value = int(value)
        else:
            value = float(value)
        if value < self.lo or value > self.hi or (self.lo_open and value == self.lo):
            raise HwsimError(self.name, value, self.accepted())
        return value


FIELDS = {
    f.name: f
    for f in [
        Field("kind", str, "", "what the pipeline does", "training", choices=KINDS),
        Field(
            "workload",
            str,
            "",
            "model from the catalogue, a dict of its architecture, hf:config.json or onnx:model.onnx "
            "(default resnet50; llama-2-7b for llm)",
        ),
        Field("gpu", str, "", "accelerator from the catalogue", "a100-sxm-80gb"),
        Field("precision", str, "", "number format of weights and math", "bf16", choices=PRECISIONS),
        Field("batch_size", int, "samples", "samples per step", None, 1, 65536),
        Field("seq_len", int, "tokens", "tokens per sample (transformers)", None, 1, 1_048_576),
        Field(
            "loader_workers", int, "processes", "DataLoader worker processes (0: load in the main process)", 8, 0, 1024
        ),
        Field("prefetch_factor", int, "batches", "batches each worker may have ready", 2, 1, 64),
        Field("cpu_cores", int, "cores", "host cores for loading and the training loop", 16, 1, 1024),
        Field("cpu_speed", float, "x", "host core speed relative to the reference core", 1.0, 0.0, 100, True),
        Field(
            "cpu",
            str,
            "",
            "host CPU from the catalogue (python -m jupyter_hwsim catalog cpus) or a dict: sets the defaults of "
            "cpu_cores and cpu_speed",
        ),
        Field(
            "decoder",
            str,
            "",
            "JPEG decoder and augmentation of an image pipeline (python -m jupyter_hwsim catalog decoders); "
            "default: the workload's preprocess_ms_per_sample",
        ),
        Field(
            "augmentation",
            str,
            "",
            "transform chain of an image pipeline, priced for the decoder's library (python -m jupyter_hwsim "
            "catalog augmentations: resize-crop-flip, resize-center-crop, none); needs decoder; default: the "
            "decoder's own chain",
        ),
        Field("storage", str, "", "dataset storage from the catalogue", "nvme-gen4"),
        Field("storage_bandwidth_gbs", float, "GB/s", "storage read bandwidth", None, 0.0, 10000, True),
        Field("storage_latency_ms", float, "ms", "storage latency per sample read", None, 0.0, 10000),
        Field("storage_concurrency", int, "requests", "reads in flight that overlap their latency", None, 1, 4096),
        Field("host_link", str, "", "host-to-device link from the catalogue (default: the GPU's)"),
        Field("host_link_gbs", float, "GB/s", "host-to-device copy bandwidth (pinned)", None, 0.0, 10000, True),
        Field("pin_memory", bool, "", "pinned host buffers: asynchronous copies at link speed", True),
        Field(
            "channels_last",
            bool,
            "",
            "convolution activations in NHWC (PyTorch's channels_last memory format); false: PyTorch's default "
            "NCHW, which an NVIDIA tensor-core convolution transposes on the way in and out",
            False,
        ),
        Field("engine", str, "", "the runtime that executes the model (python -m jupyter_hwsim catalog engines)"),
        Field(
            "fusion",
            str,
            "",
            "alias of engine: eager (pytorch-eager), compiled (torch-compile) or tensorrt",
            choices=FUSIONS,
        ),  # fmt: skip
        Field("dataset_gb", float, "GB", "dataset size on storage", None, 0.0, 1e7, True),
        Field("host_cache_gb", float, "GB", "host page cache available to the dataset", 0.0, 0.0, 1e6),
        Field(
            "preprocess_ms_per_sample",
            float,
            "ms",
            "CPU decode + augment per sample on the reference core",
            None,
            0.0,
            1e5,
        ),
        Field("input_bytes_per_sample", float, "bytes", "bytes read from storage per sample", None, 0.0, 1e10, True),
        Field("jitter_cv", float, "", "coefficient of variation of every service time (lognormal)", 0.1, 0.0, 4.0),
        Field(
            "steps",
            int,
            "steps",
            "steps (training, inference) or requests (serving; llm: at least twice the concurrency) to simulate",
            200,
            10,
            100_000,
        ),
        # serving and llm
        Field(
            "arrival_rate_rps",
            float,
            "req/s",
            "Poisson request rate (serving: default 100 unless concurrency "
            "gives a closed loop; llm: none means all requests at once, offline)",
            None,
            0.0,
            1e7,
            True,
        ),
        Field(
            "concurrency",
            int,
            "clients",
            "serving: closed-loop clients; llm: sequences sharing a decode step (default 16)",
            None,
            1,
            65536,
        ),
        Field(
            "think_time_ms", float, "ms", "closed-loop client think time between requests (exponential)", 0.0, 0.0, 1e7
        ),
        Field(
            "max_batch_size",
            int,
            "requests",
            "dynamic batcher: largest batch (default batch_size, else 8)",
            None,
            1,
            65536,
        ),
        Field(
            "max_queue_delay_ms", float, "ms", "dynamic batcher: longest a request waits for companions", 1.0, 0.0, 1e5
        ),
        Field("latency_slo_ms", float, "ms", "latency budget for goodput and best_batch", 100.0, 0.0, 1e7, True),
        Field("replicas", int, "GPUs", "identical model instances, each on its own GPU", 1, 1, 1024),
        Field("prompt_tokens", int, "tokens", "llm: prompt length (prefill)", 512, 1, 1_048_576),
        Field("output_tokens", int, "tokens", "llm: mean generated tokens per request", 128, 1, 1_048_576),
        Field(
            "output_tokens_cv", float, "", "llm: coefficient of variation of output lengths (lognormal)", 0.5, 0.0, 4.0
        ),
        Field(
            "batching",
            str,
            "",
            "llm: static (a batch waits for its longest sequence) or continuous (sequences join every step)",
            "continuous",
            choices=BATCHING,
        ),
        Field(
            "mode",
            str,
            "",
            "llm without arrival_rate_rps: closed-loop (default: each of `concurrency` clients sends its next "
            "request when its last one finishes) or offline (every request queued at t=0, a throughput benchmark)",
            None,
            choices=MODES,
        ),
        Field(
            "kv_precision",
            str,
            "",
            "llm: KV-cache number format (default: 16-bit for int weights, else the precision)",
            None,
            choices=PRECISIONS,
        ),
        Field(
            "price_per_hour_usd",
            float,
            "USD/h",
            "price of one GPU-hour (default: the catalogue's dated cloud list price; set your own)",
            None,
            0.0,
            1e6,
        ),
        Field(
            "grid_gco2_per_kwh",
            float,
            "gCO2e/kWh",
            "carbon intensity of the electricity (default 436: the world's generation in 2022, Ember Global "
            "Electricity Review 2023)",
            436.0,
            0.0,
            5000.0,
        ),
        Field(
            "weight_group_size",
            int,
            "weights",
            "weights per 16-bit quantization scale (int8/int4/fp8; "
            "0: per-channel, negligible; 32: llama.cpp Q4_0/Q8_0, MLC q4f16_1; 128: GPTQ/AWQ)",
            0,
            0,
            65536,
        ),
    ]
}


def json_schema() -> dict:
    """The scenario as a JSON Schema (draft 2020-12), made from FIELDS: what a form or a REST client may send.
    Every field may be null (its default); a catalogue field takes a name (ids listed as examples: aliases and
    case are accepted too) or an object of its entry."""
    props = {}
    for f in FIELDS.values():
        p: dict[str, Any] = {"title": f.label, "description": f.help}
        if f.unit:
            p["x-unit"] = f.unit
        if f.default is not None:
            p["default"] = f.default
        if f.choices:
            p["enum"] = [*f.choices, None]
        elif f.name in _CATALOGUE_FIELDS or f.name in ("cpu", "decoder", "augmentation"):
            section = _CATALOGUE_FIELDS.get(f.name, f.name + "s")
            p["anyOf"] = [
                {"type": "string", "examples": sorted(getattr(catalog, section)())},
                *([{"type": "object"}] if f.name not in ("decoder", "augmentation") else []),
                {"type": "null"},
            ]
        elif f.type is bool:
            p["type"] = ["boolean", "null"]
        elif f.type is str:
            p["type"] = ["string", "null"]
        else:
            p["type"] = ["integer" if f.type is int else "number", "null"]
            p["exclusiveMinimum" if f.lo_open else "minimum"] = f.lo
            p["maximum"] = f.hi
        props[f.name] = p
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "jupyter-hwsim scenario",
        "type": "object",
        "additionalProperties": False,
        "properties": props,
    }


_CATALOGUE_FIELDS = {"workload": "workloads", "gpu": "gpus", "storage": "storage", "host_link": "links",
                     "engine": "engines"}  # fmt: skip
MAX_DEPTH = 8  # levels of dicts and lists in a custom catalogue entry
MAX_ITEMS = 100_000  # keys of one dict or items of one list in it (an imported operator list)
MAX_TEXT = 10_000  # characters of one string in it


class FrozenDict(dict):
    """A dict that refuses changes: a scenario's own copy of a custom catalogue entry."""

    __slots__ = ("_hash",)
    _hash: int

    def __hash__(self) -> int:  # type: ignore[override]  # read-only: a scenario holding one is a cache key too
        try:
            return self._hash
        except AttributeError:
            self._hash = hash(frozenset(self.items()))
            return self._hash

    def _refuse(self, *args, **kwargs):
        raise TypeError("a scenario's catalogue entry is read-only: make a new scenario with Scenario.replace()")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def own(value, name: str, depth: int = 0):
    """A deep-frozen copy of a custom catalogue entry (dicts become FrozenDicts, lists tuples), checked on the
    way: nesting depth, sizes, text keys, finite non-negative numbers. The caller's objects are never kept."""
    from .workloads import Op

    if depth > MAX_DEPTH:
        raise HwsimError(name, value, f"at most {MAX_DEPTH} levels of nested tables and lists")
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise HwsimError(name, f"<{len(value)} keys>", f"at most {MAX_ITEMS} keys")
        for k in value:
            if not isinstance(k, str):
                raise HwsimError(f"{name}[{show(k)}]", k, "text keys")
        return FrozenDict({k: own(v, f"{name}.{k}", depth + 1) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise HwsimError(name, f"<{len(value)} items>", f"at most {MAX_ITEMS} items")
        return tuple(own(v, f"{name}[{i}]", depth + 1) for i, v in enumerate(value))
    if value is None:  # no key of an entry takes null: leave the key out for its default
        raise HwsimError(name, value, "a number, text, true/false, a table or a list (leave the key out instead)")
    if isinstance(value, (bool, Op)):
        return value
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise HwsimError(name, value, f"a text of at most {MAX_TEXT} characters")
        return value
    if isinstance(value, numbers.Real):
        try:
            x = int(value) if isinstance(value, numbers.Integral) else float(value)
        except (OverflowError, ValueError):
            x = math.inf
        if not (0 <= x <= 1e30 and x == x) or 0 < x < TINY:  # no NaN, no infinity, nothing huge, no subnormal
            raise HwsimError(name, value, f"a finite number >= 0 and <= 1e30 (and 0 or at least {TINY:g})")
        return x
    raise HwsimError(name, value, "a number, text, true/false, a table or a list")


_SCALARS = frozenset((str, int, float, bool, type(None)))


def thaw(value):
    """A plain, mutable deep copy of what own() made (dicts and lists, as JSON has them)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


CPU_KEYS = {"physical_cores": (1, 100_000), "threads": (1, 1_000_000), "core_speed": (1e-3, 100)}
CPU_OPTIONAL = {"smt_gain": (0, 1), "efficiency_cores": (0, 100_000), "efficiency_core_speed": (0, 1)}


def check_cpu(entry: dict) -> dict:
    """A custom host CPU: physical_cores, threads and core_speed (optional smt_gain, efficiency_cores,
    efficiency_core_speed), each in range; refused with the key it lacks or gets wrong."""
    for key, (lo, hi) in {**CPU_KEYS, **CPU_OPTIONAL}.items():
        if key not in entry:
            if key in CPU_KEYS:
                raise HwsimError(f"cpu.{key}", None, "a value for this key in the custom entry")
            continue
        v = entry[key]
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not lo <= float(v) <= hi:
            raise HwsimError(f"cpu.{key}", v, f"a number >= {lo:g} and <= {hi:g}")
    if entry["threads"] < entry["physical_cores"]:
        raise HwsimError("cpu.threads", entry["threads"], f"at least physical_cores={entry['physical_cores']}")
    return entry


def host_defaults(cpu) -> tuple[int, float]:
    """(cpu_cores, cpu_speed) a host CPU implies: its cores, an efficiency core counted as the share of a
    performance core it is, plus smt_gain of a core per extra hardware thread; its core_speed. No cpu: 16
    cores at the reference speed."""
    if cpu is None:
        return FIELDS["cpu_cores"].default, FIELDS["cpu_speed"].default
    e = cpu if isinstance(cpu, dict) else catalog.get("cpus", cpu)
    d = catalog.get("cpus", "xeon-e5-2698-v4")  # the catalogue's defaults fill what a custom entry leaves out
    phys, eff = e["physical_cores"], e.get("efficiency_cores", d["efficiency_cores"])
    cores = phys - eff + eff * e.get("efficiency_core_speed", d["efficiency_core_speed"])
    cores += e.get("smt_gain", d["smt_gain"]) * max(0, e["threads"] - phys)
    return max(1, round(cores)), float(e["core_speed"])


def _default(name: str) -> Any:
    """A field's default as FIELDS gives it: the one place defaults are written (the Scenario fields below and
    their to_dict() order follow FIELDS, checked after the class)."""
    return FIELDS[name].default


def _refuse_unknown(data: dict) -> None:
    """A key that is no scenario field is refused, with the nearest field's name."""
    unknown = [k for k in data if k not in FIELDS]
    if unknown:
        raise HwsimError(
            unknown[0],
            data[unknown[0]],
            "a known scenario field",
            did_you_mean(unknown[0], FIELDS) or "see `python -m jupyter_hwsim help`",
        )


@dataclass(frozen=True)
class Scenario:
    """One pipeline; a field left as None takes its catalogue entry's value."""

    kind: str = _default("kind")
    workload: Any = _default("workload")
    gpu: Any = _default("gpu")
    precision: str = _default("precision")
    batch_size: int | None = _default("batch_size")
    seq_len: int | None = _default("seq_len")
    loader_workers: int = _default("loader_workers")
    prefetch_factor: int = _default("prefetch_factor")
    # None in: not given, so the cpu's cores and core speed, else FIELDS' defaults (16, 1.0); always a number once
    # constructed
    cpu_cores: int = None  # type: ignore[assignment]
    cpu_speed: float = None  # type: ignore[assignment]
    cpu: Any = _default("cpu")
    decoder: str | None = _default("decoder")
    augmentation: str | None = _default("augmentation")
    storage: Any = _default("storage")
    storage_bandwidth_gbs: float | None = _default("storage_bandwidth_gbs")
    storage_latency_ms: float | None = _default("storage_latency_ms")
    storage_concurrency: int | None = _default("storage_concurrency")
    host_link: Any = _default("host_link")
    host_link_gbs: float | None = _default("host_link_gbs")
    pin_memory: bool = _default("pin_memory")
    channels_last: bool = _default("channels_last")
    engine: str | None = _default("engine")
    fusion: str | None = _default("fusion")
    dataset_gb: float | None = _default("dataset_gb")
    host_cache_gb: float = _default("host_cache_gb")
    preprocess_ms_per_sample: float | None = _default("preprocess_ms_per_sample")
    input_bytes_per_sample: float | None = _default("input_bytes_per_sample")
    jitter_cv: float = _default("jitter_cv")
    steps: int = _default("steps")
    arrival_rate_rps: float | None = _default("arrival_rate_rps")
    concurrency: int | None = _default("concurrency")
    think_time_ms: float = _default("think_time_ms")
    max_batch_size: int | None = _default("max_batch_size")
    max_queue_delay_ms: float = _default("max_queue_delay_ms")
    latency_slo_ms: float = _default("latency_slo_ms")
    replicas: int = _default("replicas")
    prompt_tokens: int = _default("prompt_tokens")
    output_tokens: int = _default("output_tokens")
    output_tokens_cv: float = _default("output_tokens_cv")
    batching: str = _default("batching")
    mode: str | None = _default("mode")
    kv_precision: str | None = _default("kv_precision")
    price_per_hour_usd: float | None = _default("price_per_hour_usd")
    grid_gco2_per_kwh: float = _default("grid_gco2_per_kwh")
    weight_group_size: int = _default("weight_group_size")

    def __post_init__(self):
        self._settle(FIELDS, (self.cpu_cores, self.cpu_speed))

    def _settle(self, names, given) -> None:
        """Check and resolve the fields in names (all of them when constructed, the changed ones in replace()),
        then the checks that span fields, always. given: the cpu_cores and cpu_speed the caller set (None: from
        the cpu)."""
        for name in names:
            value = FIELDS[name].check(getattr(self, name))
            if value is None and FIELDS[name].default is not None:
                value = FIELDS[name].default
            object.__setattr__(self, name, value)
        if self.workload is None:
            object.__setattr__(self, "workload", self.traits.default_workload)
        for name, section in _CATALOGUE_FIELDS.items():
            if name not in names:
                continue
            value = getattr(self, name)
            if name == "workload" and isinstance(value, str) and value.lower().startswith(IMPORTED):
                from .workloads import resolve

                value = resolve(value)  # reads the file now; the scenario keeps the string
            if isinstance(value, str):
                object.__setattr__(self, name, catalog.get(section, value)["id"])
            elif isinstance(value, dict):
                from .workloads import check_custom

                value = own(value, name)  # a deep-frozen copy: changing the caller's dict changes nothing here
                check_custom(section, value)
                if isinstance(getattr(self, name), dict):  # an imported workload keeps its file name
                    object.__setattr__(self, name, value)
        self._resolve_engine()
        self._resolve_host(given)
        if self.mode is not None and self.arrival_rate_rps:
            raise HwsimError(
                "mode", self.mode, "no mode with arrival_rate_rps (Poisson arrivals), or leave the rate out"
            )
        if self.traits.generates:
            self._check_language_model()

    def _resolve_engine(self):
        """engine and its alias fusion agree: either one names the other; neither means PyTorch eager."""
        if self.engine is None:
            object.__setattr__(self, "engine", catalog.get("engines", self.fusion or "eager")["id"])
        e = self.engine if isinstance(self.engine, dict) else catalog.get("engines", self.engine)
        name = e.get("id", e.get("name", "custom"))
        if self.fusion is not None and self.fusion != e["fusion"]:
            raise HwsimError("fusion", self.fusion, f"{e['fusion']} for engine={name}, or leave fusion out")
        object.__setattr__(self, "fusion", e["fusion"])
        if self.traits.trains and not e["trains"]:
            trainers = [k for k, v in catalog.engines().items() if v["trains"]]
            raise HwsimError("engine", name, f"an engine that trains for kind=training: {', '.join(trainers)}")
        if "platforms" in e:
            device = catalog.get("gpus", self.gpu) if isinstance(self.gpu, str) else self.gpu
            if catalog.maker(device) not in e["platforms"]:
                raise HwsimError("engine", name, f"a device by {' or '.join(e['platforms'])} (gpu={self.gpu})")
        if "kinds" in e and self.kind not in e["kinds"]:
            raise HwsimError("engine", name, f"kind={' or '.join(e['kinds'])} ({e['name']} runs no {self.kind})")

    @property
    def arrivals(self) -> str:
        """The arrival semantics: poisson with a rate, else the mode (closed-loop unless offline is asked)."""
        return "poisson" if self.arrival_rate_rps else (self.mode or "closed-loop")

    def _resolve_host(self, given):
        """cpu names the host CPU: cpu_cores and cpu_speed not given take its figures; decoder names the
        JPEG decoder of an image workload, augmentation its transform chain, priced for the decoder's library
        (data/cpus.toml, data/decoders.toml, data/augmentations.toml)."""
        if self.cpu is not None:
            if isinstance(self.cpu, dict):
                object.__setattr__(self, "cpu", check_cpu(own(self.cpu, "cpu")))  # own() refuses 10**400 first
            else:
                object.__setattr__(self, "cpu", catalog.get("cpus", self.cpu)["id"])
            cores, speed = host_defaults(self.cpu)
            if given[0] is None:
                object.__setattr__(self, "cpu_cores", cores)
            if given[1] is None:
                object.__setattr__(self, "cpu_speed", speed)
        if self.decoder is not None:
            object.__setattr__(self, "decoder", catalog.get("decoders", self.decoder)["id"])
            from .workloads import resolve

            w = resolve(self.workload)
            if not w.get("image_mpix"):
                raise HwsimError(
                    "decoder",
                    self.decoder,
                    f"an image workload with image_mpix (megapixels per JPEG; {w.get('id', 'this workload')} "
                    "has none), or leave decoder out",
                )
        if self.augmentation is not None:
            a = catalog.get("augmentations", self.augmentation)
            object.__setattr__(self, "augmentation", a["id"])
            if self.decoder is None:
                raise HwsimError(
                    "augmentation",
                    self.augmentation,
                    "a decoder as well (decoder=pillow, opencv, ...: its library runs the chain), or leave "
                    "augmentation out",
                )
            d = catalog.get("decoders", self.decoder)
            if d["device"] == "cpu" and d["library"] not in a["ms_per_sample"]:
                priced = ", ".join(k for k, e in catalog.augmentations().items() if d["library"] in e["ms_per_sample"])
                raise HwsimError(
                    "augmentation",
                    self.augmentation,
                    f"a chain priced for {d['library']} (decoder={self.decoder}): {priced or 'none is'}",
                )

    @property
    def traits(self) -> KindTraits:
        """What the core needs to know of this scenario's kind."""
        return KIND_TRAITS[self.kind]

    def _check_language_model(self):
        from .workloads import resolve

        w = resolve(self.workload)
        if w.get("arch") not in ("transformer", "encoder-decoder") or "vocab" not in w:
            raise HwsimError(
                "workload",
                w.get("id", "custom"),
                "a language model (a transformer or an encoder-decoder with a vocabulary) for kind=llm",
                "e.g. llama-2-7b",
            )
        if w.get("head_outputs") is not None:  # a task head scores labels, not the next token
            raise HwsimError(
                "workload.head_outputs", w["head_outputs"], "absent for kind=llm (generation samples the vocabulary)"
            )
        ctx = self.seq_len or int(w.get("seq_len", 2048))
        if w["arch"] == "encoder-decoder" and not w.get("source_len"):  # the prompt is the encoder's source
            for name, n in (("prompt_tokens", self.prompt_tokens), ("output_tokens", self.output_tokens)):
                if n > ctx:
                    raise HwsimError(
                        name, n, f"at most the {ctx} positions of {w.get('id', 'the model')} (source and target each)"
                    )
            return
        if self.prompt_tokens >= ctx:
            raise HwsimError(
                "prompt_tokens", self.prompt_tokens, f"fewer than the {ctx}-token context of {w.get('id', 'the model')}"
            )
        if self.prompt_tokens + self.output_tokens > ctx:
            raise HwsimError(
                "output_tokens",
                self.output_tokens,
                f"at most {ctx - self.prompt_tokens} (context {ctx} minus {self.prompt_tokens} prompt tokens)",
            )

    @classmethod
    def from_dict(cls, data: dict) -> Scenario:
        """A scenario from a plain dict; unknown keys are refused with a suggestion."""
        if not isinstance(data, dict):
            raise HwsimError("scenario", data, "an object of field: value pairs")
        _refuse_unknown(data)
        return cls(**data)

    def field_warnings(self) -> list[str]:
        """A sentence per field set away from its default that this kind does not read (arrival_rate_rps on a
        training scenario): warned about, not refused, so that replace(kind=...) keeps working."""
        t = self.traits
        applies = {*COMMON_FIELDS, *t.panel_fields, *t.batch_fields, *_ALSO_APPLY.get(self.kind, ())}
        out = []
        for f in dataclasses.fields(self):
            if f.name not in _KIND_ONLY or f.name in applies:
                continue
            value, default = getattr(self, f.name), FIELDS[f.name].default
            if isinstance(default, str) and f.name in _CATALOGUE_FIELDS and isinstance(value, str):
                default = catalog.get(_CATALOGUE_FIELDS[f.name], default)["id"]
            if value != default:
                kinds = [k for k, tr in KIND_TRAITS.items() if f.name in (*tr.panel_fields, *tr.batch_fields,
                         *_ALSO_APPLY.get(k, ()))]  # fmt: skip
                out.append(
                    f"{f.name}={show(value)} does not apply to kind={self.kind} and is ignored "
                    f"(it applies to {', '.join(kinds)})"
                )
        if "max_queue_delay_ms" in applies and self.max_queue_delay_ms > self.latency_slo_ms:  # a batcher
            out.append(
                f"max_queue_delay_ms={self.max_queue_delay_ms:g} is above the latency budget "
                f"(latency_slo_ms={self.latency_slo_ms:g}): a batch that does not fill waits that long for "
                "companions, so its requests miss the budget and the throughput falls with the wait; "
                "keep the delay well below the budget"
            )
        return out

    def to_dict(self) -> dict:
        """Every field, JSON-serializable; None means 'from the catalogue'."""
        d = self.__dict__
        return {n: v if type(v) in _SCALARS else thaw(v) for n in FIELDS for v in (d[n],)}

    def replace(self, **changes) -> Scenario:
        """A new scenario with some fields changed, validated like any other: the changed fields are checked
        (the rest were checked when this one was made) and every check that spans fields runs again."""
        _refuse_unknown(changes)
        changes = dict(changes)
        if "fusion" in changes and "engine" not in changes:
            changes["engine"] = None  # fusion names an engine: the new fusion picks it
        elif "engine" in changes and "fusion" not in changes:
            changes["fusion"] = None
        given = [changes.get("cpu_cores", self.cpu_cores), changes.get("cpu_speed", self.cpu_speed)]
        if "cpu" in changes:  # cores and speed that the old cpu set follow the new one; ones given stay
            for i, (name, implied) in enumerate(zip(("cpu_cores", "cpu_speed"), host_defaults(self.cpu))):
                if name not in changes and getattr(self, name) == implied:
                    given[i] = None
        new = object.__new__(Scenario)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        if given[0] is None or given[1] is None:  # as construction does: not given, the FIELDS default first
            changes.setdefault("cpu_cores", None)
            changes.setdefault("cpu_speed", None)
            new.__dict__.update(cpu_cores=given[0], cpu_speed=given[1])
        new._settle(changes, tuple(given))
        return new


if [f.name for f in dataclasses.fields(Scenario)] != list(FIELDS):  # one list of fields, in one order
    raise ImportError("Scenario's fields and FIELDS name different fields or put them in different orders")
