"""Published rows -> scenarios, by lookup tables (not per-row code).

Every row of `data/reference/published.csv` (and the older validation rows of `measurements.csv`) is mapped
through the tables below, each a list of (regular expression, value, note) searched in order, first match wins:

  hardware string -> catalogue device     model string -> workload      precision string -> precision fields
  engine string   -> engine id and fusion input string -> lengths / sizes   category + metric -> what to compare
  settings string -> loader fields (workers, synthetic data)             source id -> source family

A row is expressible when every table has an entry for it; otherwise `case(row)` names the first table that
refuses it and why. A mapping records what the publication states, with each assumption in the row's notes;
none is chosen to make a row fit.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from importlib import resources
from pathlib import Path

from ..core import catalog
from ..core.scenario import KIND_TRAITS

MODELS_DIR = Path(__file__).resolve().parents[1] / "data" / "models"


def _hf(name: str) -> str:
    return f"hf:{MODELS_DIR / (name + '.json')}"


# --------------------------------------------------------------------------------------------------------------
# source id -> source family: one publisher's document family counts as one source when leaving sources out
FAMILIES = [
    (r"^nvidia-dle-", "nvidia-dle"),  # five DeepLearningExamples READMEs, one publisher
    (r"^trtllm-", "trtllm-docs"),  # TensorRT-LLM performance docs, three versions
    (r"^llamacpp-pr", "llamacpp-prs"),  # comments on llama.cpp pull requests
    (r"^gpt-fast-", "gpt-fast"),  # gpt-fast's README and the PyTorch blog post that introduced it, one team
    (r"^hf-(optimum|quanto|perf|bloom|llmint8)", "huggingface"),  # Hugging Face's own benchmark READMEs and posts
    (r"^exllama", "exllama-readmes"),  # ExLlama v1 and v2 READMEs, one author
    (r"^vllm-blog-", "vllm-blog"),  # vLLM project blog posts
    (r"^timm-bench-", "timm-benchmarks"),  # timm results/benchmark-*.csv, one author and script, per GPU
    (r"^mlperf-inf-", "mlperf-inference"),  # MLPerf Inference results repositories, every round
    # llama.cpp device scoreboards (GitHub discussions #4167, #15013, #15021, #10879): one family per board
    (r"^llamacpp-apple$", "llamacpp-board-apple"),
    (r"^llamacpp-cuda$", "llamacpp-board-cuda"),
    (r"^llamacpp-rocm$", "llamacpp-board-rocm"),
    (r"^llamacpp-vulkan$", "llamacpp-board-vulkan"),
]


def family(source_id: str) -> str:
    for pattern, fam in FAMILIES:
        if re.search(pattern, source_id):
            return fam
    return source_id


# --------------------------------------------------------------------------------------------------------------
# hardware string -> (device id, note); device None: not expressible, the note says why.
# Host cores of the DGX machines (a 1-GPU run has the whole host): DGX-1 2x 20-core Xeon E5-2698 v4, DGX-2
# 2x 24-core Xeon Platinum 8168, DGX A100 2x 64-core EPYC 7742, DGX H100 2x 56-core Xeon 8480C.
HOST_CORES = [(r"DGX-1", 40), (r"DGX-2", 48), (r"DGX A100", 128), (r"DGX H100", 112)]
# The host CPU of a row that names its system (data/cpus.toml): its core speed sets how fast the host issues
# kernels and runs the framework's Python per operator (DGX H100's 8480C is taken as the catalogue's 8480+).
HOST_CPUS = [
    (r"DGX-1", "xeon-e5-2698-v4"),
    (r"DGX-2", "xeon-8168"),
    (r"DGX A100", "epyc-7742"),
    (r"DGX H100", "xeon-8480plus"),
    (r"i9-13900K", "core-i9-13900k"),
    (r"host (CPU )?AMD EPYC 7742", "epyc-7742"),
    (r"host (CPU )?AMD EPYC 7763", "epyc-7763"),
    (r"host (CPU )?AMD EPYC 9554", "epyc-9554"),
    (r"host (CPU )?Intel\(R\) Xeon\(R\) Gold 6430", "xeon-gold-6430"),
]

HARDWARE = [
    (r"^\d+x |^8x", None, "multi-GPU run (data parallelism across GPUs is not modelled)"),
    (r"^V100-SXM2-16GB", "v100-sxm2-16gb", ""),
    (r"^V100-SXM2-32GB", "v100-sxm2-32gb", ""),
    (
        r"^V100-SXM3-32GB",
        "v100-sxm2-32gb",
        "V100 SXM3 (DGX-2) as the V100 SXM2 32GB entry: same GV100, memory and peaks",
    ),
    (r"^V100-SXM2$", "v100-sxm2-16gb", "V100 memory variant not stated: 16GB assumed"),
    (r"^T4$|^Tesla T4$|^T4 \(|^T4; ", "t4", ""),
    (
        r"^A800-SXM4-80GB",
        "a100-sxm-80gb",
        "the A800 is an A100 SXM4 80GB with NVLink cut to 400 GB/s: one GPU is the same",
    ),
    (r"^RTX 4090 D", None, "RTX 4090 D: the China-market 4090 with 114 of its 128 SMs, not in the catalogue"),
    (r"^A2 \(", None, "NVIDIA A2: not in the catalogue"),
    (r"^H20-3e", None, "H20-3e (141 GB HBM3e): not in the catalogue, whose h20 is the 96 GB part"),
    (r"^RTX 4000 Ada", None, "RTX 4000 Ada: not in the catalogue"),
    (r"^V100S?-PCIE-32GB", None, "V100 or V100S PCIe 32GB: not in the catalogue, whose V100s are SXM2 parts"),
    (r"^MTT S4000", None, "Moore Threads MTT S4000: not in the catalogue"),
    (r"^A100-SXM4-40GB", "a100-sxm-40gb", ""),
    (r"^(1x )?A100-SXM4-80GB|^1x A100-80GB", "a100-sxm-80gb", ""),
    (r"^A100-PCIe-40GB", "a100-pcie-40gb", ""),
    (r"^A100-PCIe-80GB", "a100-pcie-80gb", ""),
    (r"^A100 \(variant not stated", "a100-sxm-80gb", "A100 variant not stated: the more common SXM 80GB part"),
    (
        r"^A100-80GB \(8xA100 node",
        "a100-sxm-80gb",
        "8-GPU hybrid-cube-mesh node = SXM; the 330 W power cap is not modelled",
    ),
    (r"^A100-80GB \(1x; form factor", "a100-sxm-80gb", "A100 80GB form factor not stated: SXM assumed"),
    (r"^A100 \(1x; README System setup: p4", "a100-sxm-40gb", "p4d.24xlarge carries A100 SXM4 40GB parts"),
    (r"^A100 80GB$|^A100$", "a100-sxm-80gb", "A100 variant not stated: the more common SXM 80GB part"),
    (r"^A100-40GB \(form factor not stated", "a100-sxm-40gb", "A100 40GB form factor not stated: SXM assumed"),
    (r"^V100 \(variant not stated", "v100-sxm2-16gb", "V100 variant not stated: the SXM2 16GB part assumed"),
    (r"^A10 ", "a10", ""),
    (r"^A10G", "a10", "AWS's A10G: the catalogue's a10 entry (its alias a10g)"),
    (r"^L4 ", "l4", ""),
    (r"^L40S", "l40s", ""),
    (r"^L40$", "l40", ""),
    (r"^A40$", "a40", ""),
    (r"^A30$|^A30 \(", "a30", ""),
    (r"^H100 SXM|^H100-SXM", "h100-sxm", ""),
    (r"^H100 PCIe", "h100-pcie", ""),
    (r"^H100 \(single GPU; variant not stated", "h100-sxm", "H100 variant not stated: the more common SXM part"),
    (r"^H200", "h200", ""),
    (r"^B200", "b200", ""),
    (r"^RTX 4090", "rtx-4090", ""),
    (r"^RTX 4080$", "rtx-4080", ""),
    (r"^RTX 5080$", "rtx-5080", ""),
    (r"^RTX 3090 Ti", "rtx-3090-ti", ""),
    (r"^RTX 3090", "rtx-3090", ""),
    (r"^RTX 5090", "rtx-5090", ""),
    (r"^RTX 3080 Ti", "rtx-3080-ti", ""),
    (r"^RTX 4070 Ti", "rtx-4070-ti", ""),
    (r"^RTX 2080 Ti", "rtx-2080-ti", ""),
    (r"^RTX 3060 12GB", "rtx-3060", ""),
    (r"^RTX 3060 ", "rtx-3060", "RTX 3060 memory variant not stated: the 12 GB card"),
    (r"^RTX A4000", "rtx-a4000", ""),
    (r"^AMD Radeon RX 6800 XT", "rx-6800-xt", ""),
    (r"^AMD Radeon RX 9070 XT", "rx-9070-xt", ""),
    (r"^AMD Radeon AI Pro R9700", "radeon-ai-pro-r9700", ""),
    (r"^DGX Spark \(GB10|^NVIDIA GB10", "gb10", "GB10, the DGX Spark's chip (a Dell Pro Max GB10 is the same part)"),
    (r"Ryzen AI Max\+ 395 iGPU", "ryzen-ai-max-395", "the iGPU at the top of its 45-120 W range"),
    (r"^RTX 6000 Ada", "rtx-6000-ada", ""),
    (r"^RTX A6000", "rtx-a6000", ""),
    (r"^Quadro RTX 8000", "quadro-rtx-8000", ""),
    (r"^(Apple )?M2 Ultra", "m2-ultra", ""),
    (r"^M3 Max", "m3-max", ""),
    (r"^Apple M1 Ultra \(64-core GPU", "m1-ultra", ""),
    (r"^Apple M1 Ultra \(48-core GPU", "m1-ultra-48c", ""),
    (r"^Apple M1 Max \(32-core GPU", "m1-max", ""),
    (r"^Apple M1 Max", "m1-max", "M1 Max GPU core count not stated: the 32-core chip (both have 400 GB/s)"),
    (r"^Apple M3 Max \(40-core GPU", "m3-max", ""),
    (r"^Apple M3 Ultra \(80-core GPU", "m3-ultra", ""),
    (r"^Apple M3 Ultra", "m3-ultra", "M3 Ultra GPU core count not stated: the 80-core chip (both have 819 GB/s)"),
    (r"^Apple M4 \(Mac mini, 10-core", "m4", "the base M4's 10-core GPU"),
    (r"^Apple M4 \(10-core GPU", "m4", ""),
    (r"^Intel Xeon E5-2698 v4", "ideal", "loader measured alone: an accelerator that is never the bottleneck"),
    (r"^(AMD EPYC 9B\d\d|Intel Xeon Platinum 8581C|Arm Neoverse-[NV]\d) ", "ideal", "loader alone: no accelerator"),
    (r"^MI250X \(one GCD\)", "mi250x", "one GCD: the catalogue device is what one process sees"),
]

# a device that never binds: data-loading rows measure the input pipeline alone
IDEAL_DEVICE = {
    "name": "ideal accelerator (never the bottleneck)",
    "memory_gb": 1e6,
    "memory_bandwidth_gbs": 1e6,  # the largest a custom entry accepts (core/workloads.py _KEYS)
    "peak_tflops": {"fp32": 1e7, "fp16": 1e7, "bf16": 1e7},
    "parallel_units": 100000,
    "compute_efficiency": 1.0,
    "memory_efficiency": 1.0,
    "launch_overhead_us": 0.0,
    "tile": 128,
    "workspace_gb": 0.0,
    "host_link": "host-memory",
}


# --------------------------------------------------------------------------------------------------------------
# model string -> (workload, note); workload None: not expressible
def _gptj() -> dict:
    """GPT-J-6B from its config.json. The importer does not read model_type gptj; its layers have the GPT-NeoX
    operator list (rotary attention without grouped heads, a 4x non-gated MLP, untied output head), so the
    config's own values are spelled in the catalogue vocabulary."""
    cfg = json.loads((MODELS_DIR / "gpt-j-6b.json").read_text())
    h = cfg["n_embd"]
    return {
        "name": "GPT-J-6B",
        "arch": "transformer",
        "layers": cfg["n_layer"],
        "hidden": h,
        "heads": cfg["n_head"],
        "kv_heads": cfg["n_head"],
        "ffn": cfg["n_inner"] or 4 * h,
        "vocab": cfg["vocab_size"],
        "seq_len": cfg["n_positions"],
        "causal": True,
        "rotary": True,
        "default_batch_size": 1,
        "input_bytes_per_sample": cfg["n_positions"] * 8,
        "preprocess_ms_per_sample": 0.01,
        "dataset_gb": 100,
    }


MODELS = [
    (r"^ResNet-50", "resnet50", ""),
    (r"^ResNet-18", "resnet18", ""),
    # timm model names (results/benchmark-*.csv): each is the catalogue architecture at its own input size
    (r"^resnet50 \(timm", "resnet50", "timm resnet50: the v1.5 layout (stride in the 3x3 conv), as the catalogue"),
    (r"^resnet101 \(timm", "resnet101", "timm resnet101: the v1.5 layout, as the catalogue"),
    (r"^resnet152 \(timm", "resnet152", "timm resnet152: the v1.5 layout, as the catalogue"),
    (r"^vit_small_patch16_224 \(timm", "vit-s16", ""),
    (r"^vit_base_patch16_224 \(timm", "vit-b16", ""),
    (r"^vit_large_patch16_224 \(timm", "vit-l16", ""),
    (r"^efficientnet_b0 \(timm", "efficientnet-b0", ""),
    (r"^convnext_tiny \(timm", "convnext-t", ""),
    (r"^BERT-large", "bert-large", ""),
    (r"^ResNet-101", "resnet101", ""),
    (r"^ResNet-152", "resnet152", ""),
    (r"^ResNet-34", None, "ResNet-34: not in the catalogue"),
    (r"^EfficientNet-B0 \(PaddleClas", "efficientnet-b0", ""),
    (r"^EfficientNet-B4 \(PaddleClas", "efficientnet-b4", ""),
    (r"^EfficientNet-B[1-35-7] ", None, "EfficientNet-B1-B3 and B5-B7: not in the catalogue"),
    (r"^MobileNetV[23]", None, "MobileNetV2/V3: not in the catalogue"),
    (r"^Swin-", None, "Swin Transformer (shifted windows): not in the catalogue"),
    (r"^ViT-B/16 \(PaddleClas", "vit-b16", ""),
    (r"^ViT-L/16 \(PaddleClas", "vit-l16", ""),
    (r"^DeiT-S/16", "vit-s16", "DeiT-S is ViT-S/16 (Touvron et al. 2021, table 1)"),
    (r"^DeiT-B/16", "vit-b16", "DeiT-B is ViT-B/16 (Touvron et al. 2021, table 1)"),
    (r"^ImageNet-2012 (val|train) JPEG loading", "resnet50", "the ResNet-50 input pipeline (ImageNet JPEGs)"),
    (r"^SSD300", None, "SSD300 detector: not in the catalogue, no importer for it"),
    (r"^GNMT", None, "GNMT (LSTM encoder-decoder): not in the catalogue, no importer for it"),
    (r"^RetinaNet", None, "RetinaNet detector: not in the catalogue, no importer for it"),
    (r"^RNN-T", None, "RNN-T speech model: not in the catalogue, no importer for it"),
    (r"^Llama-2-7B|^Llama2-7B|^CodeLlama-7B|^llama 7B$", "llama-2-7b", ""),
    (r"^Llama-2-13B", "llama-2-13b", ""),
    (r"^Llama-2-70B|^Llama2-70B", "llama-2-70b", ""),
    (r"^LLaMA-1 7B|^Llama-1-7B|^Llama-7B$|^LLaMA 7B architecture", _hf("llama-1-7b"), ""),
    (r"^OpenLLaMA-7B", _hf("llama-1-7b"), "OpenLLaMA-7B reproduces the LLaMA-7B architecture"),
    (r"^Llama-1-13B|^Llama-13B$|^LLaMA 13B", _hf("llama-1-13b"), ""),
    (r"^Llama-1-33B|^Llama-33B", _hf("llama-1-33b"), ""),
    (r"^Llama-3\.1-8B", _hf("llama-3.1-8b"), ""),
    (r"^Llama-3\.3-70B", _hf("llama-3.3-70b"), ""),
    (r"^Llama-3\.1-70B", _hf("llama-3.3-70b"), "Llama-3.1-70B has the Llama-3.3-70B config"),
    (r"^Llama-3\.2-3B", _hf("llama-3.2-3b"), ""),
    (r"^Llama 3B \(llama-bench", None, "checkpoint not stated (llama-bench 'llama 3B')"),
    (r"^TinyLlama", _hf("tinyllama-1.1b"), ""),
    (r"^OpenL[Ll]a[Mm][Aa]-3B", _hf("open-llama-3b"), ""),
    (r"^CodeLlama-34B", _hf("codellama-34b"), ""),
    (r"^Qwen2\.5-Coder-3B", _hf("qwen2.5-coder-3b"), ""),
    (r"^Qwen/Qwen2\.5-0\.5B", _hf("qwen2.5-0.5b"), ""),
    (r"^meta-llama/Meta-Llama-3-8B", "llama-3-8b", ""),
    (r"^(meta-llama|hugging-quants|ISTA-DASLab|VPTQ-community)/(Meta-)?Llama-3\.1-8B", _hf("llama-3.1-8b"), ""),
    (r"^meta-llama/Llama-3\.1-70B", _hf("llama-3.3-70b"), "Llama-3.1-70B has the Llama-3.3-70B config"),
    (r"Nemotron", None, "Nemotron (hybrid Mamba-Transformer, or NAS-pruned layers): not importable"),
    (r"^Mixtral-8x7B", _hf("mixtral-8x7b"), ""),
    (r"^Mistral-7B", "mistral-7b", ""),
    # PyTorch eager inference benchmarks (AITemplate's, transformer-deploy's and Hugging Face's READMEs)
    (r"^microsoft/resnet-50", "resnet50", "Hugging Face ResNetForImageClassification taken as the v1.5 layout"),
    (
        r"^vit_base_patch16_224 \(timm VisionTransformer, no class token",
        "vit-b16",
        "AITemplate's ViT-B/16 pools its patches instead of a class token: one token fewer than the catalogue's",
    ),
    (r"^google/vit-base-patch16-224", "vit-b16", ""),
    (r"^vit_large_patch16_384", "vit-l16", ""),
    (
        r"^bert-base-uncased encoder stack only",
        "bert-base",
        "the encoder stack only: the catalogue's bert-base also runs its embeddings (a few small kernels)",
    ),
    (r"^bert-base-cased", "bert-base", "a cased vocabulary and a classification head: the same encoder"),
    (r"^gpt2 \(124M, single forward pass", "gpt2", ""),
    (r"^GPT-J-6B", "gptj", "GPT-J config.json spelled in catalogue terms (the importer does not read gptj)"),
    (r"^gpt-oss", None, "gpt-oss (MXFP4 mixture of experts, alternating window layers): not importable"),
    (r"^NVIDIA-Nemotron", None, "Nemotron-H (hybrid Mamba-Transformer mixture of experts): not importable"),
]
_BUILT = {"gptj": _gptj}
# the task a transformer row runs (model and settings text) -> the head in place of the vocabulary head
# (workload head_outputs: outputs per position, 0 for none)
TASK_HEADS = [
    (r"SQuAD", 2, "SQuAD span extraction: a start and an end logit per position (BertForQuestionAnswering's "
                  "qa_outputs), no vocabulary head"),
    (r"ner-conll", 9, "token classification over CoNLL-2003's nine BIO tags (O, and B-/I- of PER, ORG, LOC, MISC)"),
    (r"encoder stack only", 0, "the encoder's hidden states are the output: no head"),
]  # fmt: skip


# --------------------------------------------------------------------------------------------------------------
# precision string (lower case) -> (fields, note); fields None: not expressible
PRECISIONS = [
    (r"presumed|\(assumed\)", None, "precision presumed by the collector, not stated by the source"),
    (r"^n/a \(uint8", {}, ""),
    (r"^bf16 weights; kv cache fp8", {"precision": "bf16", "kv_precision": "fp8"}, ""),
    (r"^bf16", {"precision": "bf16"}, ""),
    (r"^tf32", {"precision": "tf32"}, ""),
    (r"^fp32", {"precision": "fp32"}, ""),
    (r"^(amp|mixed|ampere)", {"precision": "fp16"}, "AMP / mixed precision: fp16 tensor cores"),
    (r"^(fp16|f16|mostly f16)", {"precision": "fp16"}, ""),
    (r"^fp8", {"precision": "fp8"}, ""),
    (r"^int8 \(weight-only\)", {"precision": "int8", "weight_group_size": 0}, "int8 weight-only, per channel"),
    (r"^int8$", {"precision": "int8"}, "int8 weights and activations (calibrated)"),
    (r"^(awq int4|torchao int4 weight-only) \(group 128", {"precision": "int4", "weight_group_size": 128}, ""),
    (r"^(aqlm|gptq|vptq) .*2-bit|^vptq", None, "about 2 bits per weight: no such precision"),
    (r"^int4 \(weight-only, group 32\)", {"precision": "int4", "weight_group_size": 32}, ""),
    (r"^int4 \(weight-only, group 64\)", {"precision": "int4", "weight_group_size": 64}, ""),
    (r"^int4 gptq \(groupsize 128", {"precision": "int4", "weight_group_size": 128}, ""),
    (r"^int4 gptq \(thebloke", {"precision": "int4", "weight_group_size": 128}, "TheBloke GPTQ: group 128 assumed"),
    (r"^(mostly )?q4_0|^q4f16_1", {"precision": "int4", "weight_group_size": 32}, "one fp16 scale per 32 weights"),
    (r"^(mostly )?q8_0", {"precision": "int8", "weight_group_size": 32}, "one fp16 scale per 32 weights"),
    (r"^(mostly )?q4_1", {"precision": "int4", "weight_group_size": 16}, "scale and minimum per 32 = 5 bits/weight"),
    (
        r"q4_k",
        {"precision": "int4", "weight_group_size": 32},
        "Q4_K at 4.5 bits/weight; the Q6_K tensors of the _M mix not counted",
    ),
    (r"q[56]_k", None, "a 5-6 bit k-quant: no such precision"),
    (r"^exl2 4\.0 bpw", {"precision": "int4", "weight_group_size": 0}, "EXL2 4.0 bits/weight on average"),
    (r"^exl2 5\.0 bpw", {"precision": "int4", "weight_group_size": 16}, "EXL2 5.0 bits/weight = 4 bits + 16/16"),
    (r"^exl2 [23]\.\d bpw", None, "fewer than 4 bits per weight: no such precision"),
    (r"nvfp4|fp4", None, "4-bit floating point (NVFP4): no such precision"),
    (r"mxfp4", None, "MXFP4 expert weights: no such precision"),
    (r"^quantized per nvidia submission", None, "precision not stated in the result log"),
]


# --------------------------------------------------------------------------------------------------------------
# engine string (lower case) -> (engine id, fusion). The engine id is kept in each case: when the scenario gains
# an `engine` field, it is set from here in one place (ENGINE_FIELD).
ENGINES = [
    (r"^dali \(mixed/gpu", ("dali-gpu", "eager")),
    (r"^dali", ("dali-cpu", "eager")),
    (r"pytorch-dataloader", ("pytorch-dataloader", "eager")),
    (r"^tensorpack dataflow", ("tensorpack-dataflow", "eager")),
    (r"^tf\.data", ("tf.data", "eager")),
    (r"tensorrt-llm", ("tensorrt-llm", "tensorrt")),
    (r"^tensorrt|^paddle-inference\+tensorrt", ("tensorrt", "tensorrt")),  # Paddle Inference's TensorRT subgraph
    (r"^ppl\.nn", ("ppl.nn", "tensorrt")),
    (r"^vllm", ("vllm", "tensorrt")),
    (r"^sglang", ("sglang", "tensorrt")),
    (r"gpt-fast", ("gpt-fast", "compiled")),
    (r"mlc", ("mlc-llm", "compiled")),
    (r"tensorflow\+xla", ("tensorflow+xla", "compiled")),
    (r"^tensorflow", ("tensorflow", "eager")),
    (r"^mxnet", ("mxnet", "eager")),
    (r"llama\.cpp", ("llama.cpp", "eager")),
    (r"^exllamav2", ("exllamav2", "eager")),
    (r"^exllama", ("exllama", "eager")),
    (r"ffcv", ("pytorch-eager+ffcv", "eager")),
    (r"^torch\.compile \(inductor\)", ("torch-compile", "compiled")),  # default mode: no CUDA graphs
    (r"^pytorch|torchvision", ("pytorch-eager", "eager")),
]
ENGINE_FIELD = "engine"  # "engine" once Scenario has it: each case then carries engine=<catalogue id> instead of fusion
# engine id -> the runtime of the engine catalogue (engines.toml) it is; None: none yet, fusion stands in
ENGINE_CATALOGUE = {
    "pytorch-eager": "pytorch-eager",
    "pytorch-eager+ffcv": "pytorch-eager",
    "pytorch-dataloader": "pytorch-eager",
    "dali-cpu": "pytorch-eager",
    "gpt-fast": "cuda-graphs",  # torch.compile(mode="reduce-overhead")
    "torch-compile": "torch-compile",
    "tensorflow+xla": "xla",
    "tensorrt": "tensorrt",
    "tensorrt-llm": "tensorrt-llm",
    "vllm": "vllm",
    "sglang": "sglang",
    "llama.cpp": "llama-cpp",
    "tensorflow": "tensorflow",
    "mxnet": "mxnet",
    "mlc-llm": "mlc-llm",
    "exllama": "exllama",
    "exllamav2": "exllama",
}


CONV_ARCHS = ("resnet", "efficientnet", "convnext", "unet")  # workloads whose FLOPs are convolutions


def _runs_fp32_as_tf32(engine: str, row: dict, gpu, workload=None) -> bool:
    """fp32 math on a device with TF32 tensor cores runs as TF32 in NVIDIA's NGC PyTorch containers (they set
    TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1), in TensorFlow 2.4+ (TF32 on by default), and in any PyTorch for a
    convolutional network: torch.backends.cudnn.allow_tf32 defaults to True (PyTorch CUDA semantics docs,
    'TensorFloat-32 (TF32) on Ampere (and later) devices'), while matmuls stay fp32 outside NGC since 1.12."""
    peaks = (catalog.get("gpus", gpu) if isinstance(gpu, str) else gpu).get("peak_tflops", {})
    if "tf32" not in peaks:
        return False
    if row["source_id"] in _labels_tf32():  # a source with TF32 columns of its own means FP32 by "fp32"
        return False
    version = row.get("software_version", "")
    convnet = isinstance(workload, str) and catalog.get("workloads", workload).get("arch") in CONV_ARCHS
    return (engine.startswith("pytorch") and ("NGC" in version or convnet)) or engine.startswith("tensorflow")


@functools.cache
def _labels_tf32() -> frozenset:
    """The sources that report TF32 runs under their own label."""
    text = resources.files("jupyter_hwsim").joinpath("data", "reference", "published.csv").read_text()
    return frozenset(r["source_id"] for r in csv.DictReader(io.StringIO(text)) if "tf32" in r["precision"].lower())


NOT_EXPRESSIBLE_ENGINES = {
    "dali-gpu": "JPEG decoding on the GPU (DALI mixed decoder) is not modelled",
    "tensorpack-dataflow": "batches serialized through ZMQ to one consumer process: no sourced hand-off cost",
    "tf.data": "tf.data's decode_and_crop_jpeg and TensorFlow image ops: no decoder of the catalogue",
    "ppl.nn": "OpenMMLab's PPL.NN runtime: no engine of the catalogue",
}
# dataloading rows: the host CPU (hardware string -> data/cpus.toml) and the JPEG decoder (engine id ->
# data/decoders.toml) each row names; torchvision's ImageFolder loads its JPEGs with PIL
LOADER_CPUS = [
    (r"Xeon E5-2698 v4", "xeon-e5-2698-v4", ""),
    (r"EPYC 9B14", "epyc-9654", "Google's EPYC 9B14 taken as the EPYC 9654: both 96-core Zen 4 Genoa parts"),
    (
        r"Xeon Platinum 8581C",
        "xeon-8480plus",
        "the Emerald Rapids 8581C taken as the Sapphire Rapids 8480+: a Raptor Cove core taken as a Golden Cove one "
        "(as core-i9-13900k), its own clocks not in the reference table",
    ),
    (
        r"EPYC 9B45",
        "epyc-9655",
        "Google's EPYC 9B45 taken as the EPYC 9655: both 96-core Zen 5 Turin parts, the 9B45's clocks not published",
    ),
    (r"Neoverse-N1 \(Ampere Altra", "altra-q64-30", "Google Cloud's Ampere Altra: the Q64-30 its CPU platforms name"),
]
LOADER_DECODERS = {"dali-cpu": "dali-cpu", "dali-gpu": "dali-gpu", "pytorch-dataloader": "pillow"}
LOADER_NAMED_DECODER = r"\((pillow|opencv|torchvision) decoder"  # the engine string names the decoder
LOADER_CHAINS = [(r"evaluation transform", "-eval"), (r"decode only", "-decode")]  # input -> transform chain
# a loader whose workers return uncollated NumPy arrays pickles every sample through a pipe: the catalogue has no
# sourced hand-off cost for that (the published throughput flattens from 4 workers), so only 0 workers is expressed
LOADER_PICKLED = (r"uncollated NumPy arrays", 1)


# --------------------------------------------------------------------------------------------------------------
# input string -> (fields, note) or (None, reason). Groups of the match fill the fields (see _INPUT_FIELDS).
def _lengths(prompt, output, **extra):
    return {"prompt_tokens": prompt, "output_tokens": output, **extra}


INPUTS = [
    (r"^224", lambda m: {}, ""),
    (r"^seq(\d+)", lambda m: {"seq_len": int(m[1])}, ""),
    (
        r"^prompt(\d+)\+gen1 \(one decode step",
        lambda m: _lengths(int(m[1]), 2),
        "one decode step after the prompt: the step that makes the second token",
    ),
    (r"^prompt(\d+)\+gen(\d+)( \(|$)", lambda m: _lengths(int(m[1]), int(m[2])), ""),
    (r"^prompt(\d+)$", lambda m: _lengths(int(m[1]), 1), "first token: one output token"),
    (r"^pp(\d+)\+tg(\d+)", lambda m: _lengths(int(m[1]), int(m[2])), ""),
    (r"^pp(\d+)", lambda m: _lengths(int(m[1]), 1), ""),
    (r"^tg(\d+) at full context \(last (\d+) of (\d+)\)", lambda m: _lengths(int(m[3]) - int(m[2]), int(m[2])), ""),
    (r"^tg(\d+)", lambda m: _lengths(1, int(m[1])), "llama-bench tg: generation from an empty context"),
    (
        r"^prompt \"What is the meaning of life\?\"\+gen(\d+)",
        lambda m: _lengths(8, int(m[1])),
        "an 8-token prompt (chat template not counted)",
    ),  # fmt: skip
    (r"^decode (\d+) tok", lambda m: _lengths(8, int(m[1])), "an 8-token prompt (chat template not counted)"),
    (
        r"^short prompt \+ generation",
        lambda m: _lengths(32, 128),
        "lengths not stated: 32 prompt, 128 generated assumed",
    ),
    (r"^eval", lambda m: _lengths(1, 128), "eval speed taken as llama-bench tg128 (empty context, 128 tokens)"),
    (r"^n/a$", lambda m: _lengths(128, 128), "lengths not stated: 128 prompt and 128 output tokens assumed"),
    (
        r"^~(\d+)k prompt \+ ~(\d+)k output \(.(\d+)%\)",
        lambda m: _lengths(int(m[1]) * 1000, int(m[2]) * 1000, output_tokens_cv=round(int(m[3]) / 100 / 3**0.5, 4)),
        "lengths uniform within the stated spread (output cv = spread / sqrt 3)",
    ),  # fmt: skip
    (r"^ShareGPT", None, "request lengths of the ShareGPT sample not stated"),
    (r"^CNN-DM", None, "request lengths of the CNN-DailyMail sample not stated"),
    (r"^progressive|^160-192px", None, "progressive 160-192 px resolution: the workload's image size is fixed"),
    (r"^ImageNet val JPEGs", lambda m: {}, ""),
    (r"^380$", lambda m: {}, "380 px: EfficientNet-B4's own input, as the catalogue's entry"),
    (
        r"^prompt~(\d+)\(p50 of [^)]*\)\+gen(?:<=)?(\d+)",
        lambda m: _lengths(int(m[1]), int(m[2])),
        "the sample's median prompt: a median TTFT over prompts of varying length is the TTFT of the median "
        "length, as TTFT grows with the prompt",
    ),
    (r"^(300|800x800|audio|WMT16)", lambda m: {}, ""),
    (r"^384$", None, "a 384 px input: the catalogue's ViT-L/16 is the 224 px model"),
]


# --------------------------------------------------------------------------------------------------------------
# (category, metric) -> (measure, fields) or (None, reason). A measure names the Result figure compared:
#   throughput      Result.throughput (samples/s, or output tokens/s for llm)
#   latency_mean    Result.latency_ms["mean"] of a batch-1 inference step (estimate: one step time)
#   latency_p90     the same step time against a published 90th percentile
#   step_ms         ms per training step = 1000 x batch / throughput
#   per_stream      Result.tokens_per_s_per_stream (1 / time per output token)
#   generate_tps    one sequence's new tokens over the whole generate() call, its prefill included (a static batch)
#   ttft_b1         Result.ttft_ms["p50"] of one closed-loop client: one prompt's prefill
#   ttft_p50        Result.ttft_ms["p50"] of simulate() with `concurrency` closed-loop clients
#   prefill_tps     Result.prefill_tokens_per_s: one request's prompt tokens over its prefill
#   pg_tps          (prompt + output) / (prefill_ms + output x decode_step_ms): llama-bench's pg test
#   itl_median      Result.latency_ms["p50"] of simulate(): the median gap between output tokens
#   time_per_batch  seconds per batch = batch / throughput
METRICS = [
    (("training", "throughput"), "throughput", {}),
    (("inference", "throughput"), "throughput", {}),
    (("latency_b1", "latency_avg"), "latency_mean", {}),
    (("latency_b1", "latency_p90"), "latency_p90", {}),
    (("training", "step_ms"), "step_ms", {}),
    (("llm_decode", "decode"), "per_stream", {"concurrency": 1}),
    (("llm_decode", "generate"), "generate_tps", {"batching": "static"}),
    (("llm_decode", "single_step"), "per_stream", {"batching": "static"}),
    (("llm_decode", "throughput_out"), "throughput", {"batching": "static"}),
    (("llm_decode", "aggregate"), "throughput", {}),
    (("llm_ttft", "ttft"), "ttft_b1", {"concurrency": 1}),
    (("llm_prefill", "prefill"), "prefill_tps", {"concurrency": 1}),
    (("llm_prefill", "prefill+decode"), "pg_tps", {"concurrency": 1}),
    (("serving", "throughput_out_total"), "throughput", {}),
    (("serving", "itl_median"), "itl_median", {}),
    (("serving", "ttft_median"), "ttft_p50", {}),
    (("dataloading", "time_per_batch_mean"), "time_per_batch", {}),
    (("dataloading", "images_per_second"), "throughput", {}),
    (("inference", "latency_avg"), "step_ms", {}),
]
METRIC_REASONS = [
    (("serving", "throughput_scheduled"), "MLPerf Server: the highest rate meeting a p99 bound (a search)"),
    (("training", "time_to_train"), "time to train includes evaluation and schedule: not a throughput"),
]
SIMULATED = {"itl_median", "ttft_p50"}  # measures read from simulate(); the others from estimate()

# kind of scenario per category
KINDS = {
    "training": "training",
    "inference": "inference",
    "latency_b1": "inference",
    "dataloading": "inference",
    "llm_decode": "llm",
    "llm_ttft": "llm",
    "llm_prefill": "llm",
    "serving": "llm",
}
LLM_DEFAULTS = {"output_tokens_cv": 0.0, "steps": 10, "concurrency": 1}  # fixed lengths as the benchmarks use

# settings string -> loader fields. The first three: the loader as stated; a run without a stated loader gets
# as many workers as its host has cores (the loader is then not what binds, as in those benchmark harnesses).
SETTINGS = [
    (r"synthetic data", lambda m: {"preprocess_ms_per_sample": 0.0}, "synthetic data: no decoding"),
    (r"dali-gpu", lambda m: {"preprocess_ms_per_sample": 0.0}, "DALI decodes on the GPU: that GPU time not modelled"),
    (r"workers (\d+)", lambda m: {"loader_workers": int(m[1])}, ""),
    (r"C=(\d+) CPUs, W=(\d+)", lambda m: {"cpu_cores": int(m[1]), "loader_workers": int(m[2])}, ""),
    (r"per-GPU batch|run_squad|run_pretraining", lambda m: {}, ""),
]
# software versions whose attention is naive: PyTorch before 2.0 (no scaled_dot_product_attention), and the
# Hugging Face transformers of 2023, before SDPA became its default attention (4.36, December 2023)
NAIVE_ATTENTION_VERSIONS = (
    r"PyTorch 1\.|^torch 1\.|NGC PyTorch 2[0-2]\.|pytorch:2[0-2]\.|HF transformers docs, 2023"
    r"|transformers 4\.(\d|[12]\d|3[0-5])\b|before 4\.36"
)
# a harness that casts the model to 16 bits (model.half()): autocast, if on, finds nothing to cast (the engine's
# autocast_us is the cost of casting fp32 weights per call, benchmarks/bench_framework_overhead.py)
HALF_MODEL = r"model\.half\(\)"
# a harness that preallocates its KV cache (lit-gpt's and gpt-fast's KVCache), where eager PyTorch's entry grows it
# by concatenation as Hugging Face's generate() does
STATIC_KV_CACHE = r"static (preallocated )?KV ?cache"
# a quantisation library whose int4 weight-only linears multiply with tinygemm (aten._weight_int4pack_mm) at every
# row count, as the cuda-graphs engine's do (its quantized_matmul figures: engines.toml)
TINYGEMM_PRECISION = r"^torchao int4 weight-only"


# a harness that issues an engine's kernels one by one, where the catalogue's engine replays CUDA graphs: TensorRT-LLM's
# gptSessionBenchmark takes CUDA graphs only with --enable_cuda_graph, which none of the performance docs' commands
# pass (benchmarks/cpp/gptSessionBenchmark.cpp, docs/source/performance.md, v0.5-v0.9); each kernel is then a
# launch from C++ (ref:B5-09, 3.0 us)
UNGRAPHED_HARNESS = (r"gptSessionBenchmark", 3.0)
# vLLM before 0.8 runs its V0 engine, which replays CUDA graphs for decode-only batches and runs a prompt's forward
# as the model's PyTorch modules ("Currently cuda graph is only supported by the decode phase", vllm/worker/
# model_runner.py, execute_model, v0.4-v0.7); from 0.8 the V1 engine compiles the model and captures prefills too
EAGER_PREFILL_HARNESS = r"^vLLM v?0\.[0-7]\."
# NVIDIA's DeepLearningExamples MXNet ResNet-50 runner sets MXNET_ENABLE_CUDA_GRAPHS=1 from its 22.10 release on
# (MxNet/Classification/RN50v1.5/runner, commit 1bd98ac3, 2022-12-13), so a hybridized net's step is replayed as
# one CUDA graph (each kernel then costs a graph replay's share, as the cuda-graphs engine's issue_us); its 20.12
# release did not set it, and MXNet's default is off
GRAPHED_HARNESS = (r"^nvidia-dle-rn50-mxnet$", r"NGC MXNet 2[2-9]\.")


def _changed_engine(entry, **change) -> dict:
    """A catalogue engine as a custom entry with some of its fields changed (what a row's harness did otherwise)."""
    return {**{k: v for k, v in entry.items() if k not in ("id", "aliases", "sources")}, **change}


# source id -> (precisions, why): where the harness convolves in NCHW and the framework leaves those precisions'
# tensor-core convolutions in NCHW (cuDNN transposes them in and out: costs.nchw_transposes)
SOURCE_NCHW = {
    "nvidia-dle-rn50-tf": (
        ("tf32",),
        "NCHW convolutions at TF32: the harness computes in NCHW (runtime/runner.py compute_format, "
        "utils/cmdline_helper.py --data_format default), and TensorFlow's layout pass moved only fp16 to NHWC "
        "until TF32 support came in 2022 (tensorflow/tensorflow PR 31087, PR 55761), after NGC 20.06",
    ),
}
# source id -> the loader its harness runs where the row's settings do not say (read from the harness at the
# source's commit)
SOURCE_LOADERS = {
    "nvidia-dle-rn50-tf": (
        {"loader_workers": 10},
        "tf.data decodes and resizes on 10 threads (runtime/runner.py: num_preprocessing_threads = 10 without DALI; "
        "training_perf.sh and inference_benchmark.sh pass --data_dir, real TFRecords)",
    ),
}
SERVING_SETTINGS = [
    # trtllm-bench: all requests queued at once; the runtime batch is what memory allows
    (r"all (\d+) requests queued at once", lambda m: {"concurrency": "fit", "requests": int(m[1])}),
    (r"kv_cache_free_gpu_mem_fraction (0\.\d+)", lambda m: {"kv_memory_fraction": float(m[1])}),
    (r"(\d+) requests at concurrency (\d+)", lambda m: {"concurrency": int(m[2]), "steps": int(m[1])}),
]

# older rows of measurements.csv used as validation rows: id -> column overrides (source id, category, metric,
# what each field means in published.csv terms); "duplicate" rows repeat a published row and are dropped.
LEGACY_SOURCE = {
    r"^B1-1[2-5]$": {"source_id": "llamacpp-pr4766", "category": "llm_decode", "metric": "decode"},
    r"^B1-(1[6-9]|2[0-8])$": {
        "source_id": "gpu-benchmarks-on-llm-inference",
        "category": "llm_decode",
        "metric": "decode",
    },
    r"^B1-47$": {"source_id": "mystic-vllm-guide", "category": "llm_decode", "metric": "decode"},
    r"^B1-4[89]$": {"source_id": "mystic-vllm-guide", "category": "llm_decode", "metric": "aggregate"},
    r"^B2-(0[3-47]|1[03])$": {"source_id": "nvidia-dle-rn50-pyt", "category": "training", "metric": "throughput"},
    r"^B2-1[12]$": {"source_id": "pytorch-experiments-skb", "category": "training", "metric": "step_ms"},
}
LEGACY_DUPLICATES = {
    "B1-29": "V-mlc-llm-perf-bench-07",
    "B1-30": "V-mlc-llm-perf-bench-10",
    "B1-31": "V-mlc-llm-perf-bench-01",
    "B1-32": "V-mlc-llm-perf-bench-04",
    "B2-01": "V-nvidia-dle-rn50-pyt-01",
    "B2-02": "V-nvidia-dle-rn50-pyt-02",
    "B2-05": "V-nvidia-dle-rn50-pyt-03",
    "B2-06": "V-nvidia-dle-rn50-pyt-04",
    "B2-08": "V-nvidia-dle-rn50-pyt-05",
    "B2-09": "V-nvidia-dle-rn50-pyt-06",
    "B2-14": "V-ffcv-imagenet-readme-06",
}


# --------------------------------------------------------------------------------------------------------------
def _reference_text(name: str) -> str:
    return resources.files("jupyter_hwsim").joinpath("data", "reference", name).read_text(encoding="utf-8")


@functools.cache
def published_rows() -> tuple[dict, ...]:
    """Every row of published.csv, then the older validation rows of measurements.csv in the same columns."""
    rows = [dict(r) for r in csv.DictReader(io.StringIO(_reference_text("published.csv")))]
    for r in csv.DictReader(io.StringIO(_reference_text("measurements.csv"))):
        cid = r["case_id"]
        over = next((v for p, v in LEGACY_SOURCE.items() if re.search(p, cid)), None)
        if over is None or cid in LEGACY_DUPLICATES:
            continue  # B4/B5/C rows derived model parameters: never validation rows
        url = re.search(r"https?://\S+", r["source"])
        gh = re.match(r"github:(\S+) (\S+?)(?:@(\w+))?(\s|$)", r["source"])
        if url:
            link = url[0].rstrip(")")
        elif gh:
            link = f"https://github.com/{gh[1]}/blob/{gh[3] or 'HEAD'}/{gh[2]}"
        else:
            link = ""
        rows.append(
            {
                "case_id": cid,
                "model": r["model"],
                "hardware": r["hardware"],
                "precision": r["precision"],
                "batch": r["batch"],
                "input": r["seq_or_input"],
                "engine": r["framework"],
                "software_version": "",
                "settings": "",
                "value": r["value"],
                "unit": r["unit"],
                "source_url": link,
                "source_detail": r["source"],
                **over,
            }
        )
    return tuple(rows)


def _first(table, text: str):
    for entry in table:
        m = re.search(entry[0], text, re.IGNORECASE)
        if m:
            return m, entry
    return None, None


def _loader_fields(row: dict, engine: str) -> dict:
    """A dataloading row's host CPU, decoder with its transform chain and cores: {"fields", "notes"} or
    {"reason"}. The CPU is named whole (LOADER_CPUS); the decoder from the engine string, its chain from the input
    (data/decoders.toml). "C=N CPUs allotted" of an SMT host are N hardware threads: each is taken at
    (1 + smt_gain) / 2 of a core, its sibling thread busy with the shared host's other work (assumption). "N vCPUs
    = C cores x 2 threads": C cores plus smt_gain of a core per sibling, as a named CPU counts them."""
    hw, notes = row["hardware"], []
    found = next(((c, n) for p, c, n in LOADER_CPUS if re.search(p, hw)), None)
    if found is None:
        return {"reason": f"host CPU not in the catalogue ({hw.split(' (')[0]})"}
    fields: dict = {"cpu": found[0]}
    notes.append(found[1])
    named = re.search(LOADER_NAMED_DECODER, row["engine"])
    base = named[1] if named else LOADER_DECODERS.get(engine)
    if base:
        chain = next((s for p, s in LOADER_CHAINS if re.search(p, row["input"])), "")
        if base + chain not in catalog.decoders():
            return {"reason": f"decoder {base} with that transform chain ({chain or 'training'}) not in the catalogue"}
        fields["decoder"] = base + chain
        notes.append(f"decoder {base + chain} (data/decoders.toml) on the row's host CPU")
    workers = re.search(r"workers (\d+)", row["settings"])
    if re.search(LOADER_PICKLED[0], row["settings"]) and workers and int(workers[1]) >= LOADER_PICKLED[1]:
        return {"reason": "workers return uncollated NumPy arrays, pickled through a pipe: no sourced hand-off cost"}
    cpu = catalog.get("cpus", found[0])
    allotted = re.search(r"C=(\d+) CPUs allotted", hw)
    if allotted and cpu["threads"] > cpu["physical_cores"]:
        fields["cpu_speed"] = cpu["core_speed"] * (1 + cpu["smt_gain"]) / 2
        notes.append("each allotted CPU is a hardware thread of the shared host: (1 + smt_gain) / 2 of a core")
    if re.search(r"preloaded in memory", row["input"]):
        fields["host_cache_gb"] = 1e4
        notes.append("JPEG bytes in memory: no storage reads")
    vcpus = re.search(r"(\d+) vCPUs = (\d+) cores x 2 threads", hw)
    if vcpus:
        cores = int(vcpus[2])
        fields["cpu_cores"] = round(cores + cpu["smt_gain"] * (int(vcpus[1]) - cores))
        notes.append(f"{vcpus[1]} vCPUs: {cores} cores and their SMT siblings")
    single = re.search(r"(\d+) vCPUs = (\d+) cores\)", hw)
    if single:  # one thread per core (Arm): each vCPU a whole core
        fields["cpu_cores"] = int(single[2])
        notes.append(f"{single[1]} vCPUs: {single[2]} cores, one thread each")
    return {"fields": fields, "notes": notes}


def case(row: dict) -> dict:
    """The scenario a published row maps to: {"fields", "measure", "engine", "notes"}, or {"reason"} when the row
    cannot be expressed. `fields` may hold concurrency="fit" with "requests" (resolved when run)."""
    notes: list[str] = []
    cat, metric = row["category"], row["metric"]
    measure, extra = next(((m, f) for (c, pre), m, f in METRICS if c == cat and metric.startswith(pre)), (None, {}))
    fields: dict = {"kind": KINDS[cat]}
    generates = KIND_TRAITS[fields["kind"]].generates  # a language model: lengths, concurrency, no loader
    if generates:
        fields.update(LLM_DEFAULTS)
    fields.update(extra)

    _, hw = _first(HARDWARE, row["hardware"])
    if hw is None:
        return {"reason": f"device not in the catalogue ({row['hardware']})"}
    if hw[1] is None:
        return {"reason": hw[2]}
    fields["gpu"] = IDEAL_DEVICE if hw[1] == "ideal" else hw[1]
    notes.append(hw[2])
    cores = next((n for p, n in HOST_CORES if re.search(p, row["hardware"])), None)
    if re.search(r"(?<!no )(NHWC|channels[_ -]last)(?! not set)", row.get("settings", ""), re.I):
        fields["channels_last"] = True
        notes.append("NHWC (channels_last) activations, as the row's settings say")
    host = next((c for p, c in HOST_CPUS if re.search(p, row["hardware"])), None)
    if host and cat != "dataloading":  # dataloading rows name their CPU whole (LOADER_CPUS)
        fields["cpu_speed"] = catalog.cpus()[host]["core_speed"]
        notes.append(f"host cores at the speed of the {host} (data/cpus.toml)")

    _, mod = _first(MODELS, row["model"])
    if mod is None:
        return {"reason": f"model not in the catalogue and no config for it ({row['model']})"}
    if mod[1] is None:
        return {"reason": mod[2]}
    fields["workload"] = _BUILT[mod[1]]() if mod[1] in _BUILT else mod[1]
    notes.append(mod[2])
    _, task = _first(TASK_HEADS, f"{row['model']} {row.get('settings', '')}")
    if task and isinstance(fields["workload"], str) and catalog.get("workloads", fields["workload"]).get("vocab"):
        fields["workload"] = {**catalog.get("workloads", fields["workload"]), "head_outputs": task[1]}
        notes.append(task[2])

    _, prec = _first(PRECISIONS, row["precision"].lower())
    if prec is None:
        return {"reason": f"precision not mapped ({row['precision']})"}
    if prec[1] is None:
        return {"reason": prec[2]}
    fields.update(prec[1])
    notes.append(prec[2])

    _, eng = _first(ENGINES, row["engine"].lower())
    if eng is None:
        return {"reason": f"engine not mapped ({row['engine']})"}
    engine, fusion = eng[1]
    if cat == "dataloading":
        loader = _loader_fields(row, engine)
        if "reason" in loader:
            return loader
        fields.update(loader["fields"])
        notes += loader["notes"]
    if engine in NOT_EXPRESSIBLE_ENGINES and not fields.get("decoder"):
        return {"reason": NOT_EXPRESSIBLE_ENGINES[engine]}
    fields["fusion"] = fusion
    if ENGINE_FIELD and ENGINE_CATALOGUE.get(engine):
        del fields["fusion"]
        fields[ENGINE_FIELD] = ENGINE_CATALOGUE[engine]

    if fields.get("precision") == "fp32" and _runs_fp32_as_tf32(engine, row, fields["gpu"], fields.get("workload")):
        fields["precision"] = "tf32"
        notes.append(
            "fp32 runs as TF32 here: NGC's PyTorch enables TF32 for cuBLAS and cuDNN, TensorFlow 2.4+ by default, "
            "PyTorch for cuDNN convolutions"
        )
    engine_entry = catalog.get("engines", fields[ENGINE_FIELD]) if isinstance(fields.get(ENGINE_FIELD), str) else {}

    def harness(note: str, **change) -> None:
        """The row's harness ran the engine otherwise: change those fields (on top of any earlier change)."""
        base = fields[ENGINE_FIELD] if isinstance(fields[ENGINE_FIELD], dict) else engine_entry
        fields[ENGINE_FIELD] = _changed_engine(base, **change)
        notes.append(note)

    if (
        re.search(NAIVE_ATTENTION_VERSIONS, row.get("software_version", ""))
        and engine_entry.get("attention") == "fused"
    ):
        harness(
            "naive attention: PyTorch before 2.0, or Hugging Face transformers before 4.36, runs its own",
            attention="naive",
        )
    if re.search(UNGRAPHED_HARNESS[0], row.get("settings", "")) and engine_entry.get("graphs"):
        harness("kernels launched one by one: gptSessionBenchmark runs without --enable_cuda_graph", graphs=False,
                issue_us=UNGRAPHED_HARNESS[1])  # fmt: skip
    if re.search(EAGER_PREFILL_HARNESS, row.get("software_version", "")) and not engine_entry.get("prefill_host_from"):
        harness(
            "vLLM's V0 engine: a prompt's forward runs outside CUDA graphs, module by module",
            prefill_host_from="pytorch-eager",
        )
    if (
        re.search(GRAPHED_HARNESS[0], row["source_id"])
        and re.search(GRAPHED_HARNESS[1], row.get("software_version", ""))
        and engine_entry
        and not engine_entry.get("graphs")
    ):
        harness("one CUDA graph per step: the harness sets MXNET_ENABLE_CUDA_GRAPHS=1 from its 22.10 release on",
                graphs=True, issue_us=catalog.get("engines", "cuda-graphs")["issue_us"])  # fmt: skip
    if re.search(HALF_MODEL, row.get("settings", "")) and engine_entry.get("autocast_us"):
        harness("16-bit weights by model.half(): no autocast casts", autocast_us=0.0, autocast_fp32=[])
    if re.search(STATIC_KV_CACHE, row.get("settings", ""), re.I) and engine_entry.get("concat_kv_cache"):
        harness("a static KV cache, written in place: no concatenation", concat_kv_cache=False)
    if re.search(TINYGEMM_PRECISION, row.get("precision", ""), re.I) and not engine_entry.get("quantized_matmul"):
        tinygemm = catalog.get("engines", "cuda-graphs")
        harness(
            "torchao's int4 weight-only linears multiply with tinygemm (aten._weight_int4pack_mm) at every row count",
            **{k: tinygemm[k] for k in tinygemm if k.startswith("quantized_matmul")},
        )
    if fields["gpu"] is IDEAL_DEVICE and engine_entry:
        harness("the loader timed alone: no model step issued", issue_us=0.0, call_us=0.0, autocast_us=0.0, step_us=0.0)
    nchw = SOURCE_NCHW.get(row["source_id"])
    if nchw and fields.get("precision") in nchw[0] and engine_entry:
        harness(nchw[1], conv_layout="nchw")

    m, inp = _first(INPUTS, row["input"])
    if inp is None:
        return {"reason": f"input not mapped ({row['input']})"}
    if inp[1] is None:
        return {"reason": inp[2]}
    fields.update(inp[1](m))
    notes.append(inp[2])
    if measure is None:
        reason = next((r for (c, pre), r in METRIC_REASONS if c == cat and metric.startswith(pre)), None)
        return {"reason": reason or f"metric not modelled ({cat}: {metric})"}

    batch = row["batch"].strip()
    if not generates:
        if not batch.isdigit():
            return {"reason": f"batch size not stated ({batch or 'empty'})"}
        fields["batch_size"] = int(batch)
        for pattern, fn, note in SETTINGS:
            m = re.search(pattern, row["settings"])
            if m:
                fields.update(fn(m))
                notes.append(note)
        if (
            "loader_workers" not in fields
            and "preprocess_ms_per_sample" not in fields
            and row["source_id"] in SOURCE_LOADERS
        ):
            loader, note = SOURCE_LOADERS[row["source_id"]]
            fields.update(loader)
            notes.append(note)
        if "loader_workers" not in fields and "preprocess_ms_per_sample" not in fields:
            fields["loader_workers"] = fields["cpu_cores"] = cores or 16
            notes.append("loader not stated: one worker per host core")
        elif cores and "cpu_cores" not in fields:
            fields["cpu_cores"] = max(cores, fields.get("loader_workers", 0))
        elif "cpu_cores" not in fields:
            fields["cpu_cores"] = max(16, fields.get("loader_workers", 0))
    else:
        if fields.get("batching") == "static":
            if not batch.isdigit():
                return {"reason": f"batch size not stated ({batch or 'empty'})"}
            fields["concurrency"] = int(batch)
            fields["steps"] = max(10, int(batch))
        elif cat == "serving" or measure == "throughput":
            fields["concurrency"] = int(batch) if batch.isdigit() else fields["concurrency"]
            for pattern, fn in SERVING_SETTINGS:
                m = re.search(pattern, row["settings"])
                if m:
                    fields.update(fn(m))
    if "requests" in fields:
        fields["steps"] = max(10, min(fields["requests"], 100_000))
        notes.append("runtime batch: the sequences whose KV cache fits in the stated share of free memory")
    return {"fields": fields, "measure": measure, "engine": engine, "notes": [n for n in notes if n]}
