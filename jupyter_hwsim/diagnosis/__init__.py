"""Diagnosis shared by every kind: name the bottleneck, rank what would help by re-simulating each change."""

from .diagnose import (
    GPU_LADDER,
    LINK_LADDER,
    STORAGE_LADDER,
    bigger_gpus,
    engine_changes,
    layout_changes,
    lower_precisions,
    merit,
    name_bottleneck,
    native_precisions,
    next_gpu,
    oom_sentence,
    suggestions,
)

__all__ = [
    "GPU_LADDER",
    "LINK_LADDER",
    "STORAGE_LADDER",
    "bigger_gpus",
    "engine_changes",
    "layout_changes",
    "lower_precisions",
    "merit",
    "name_bottleneck",
    "native_precisions",
    "next_gpu",
    "oom_sentence",
    "suggestions",
]
