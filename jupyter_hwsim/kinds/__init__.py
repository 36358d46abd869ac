"""Scenario kinds: each one module behind one protocol (`kinds.base.Kind`), registered here by name.

Adding a kind: a module here implementing the protocol, its entry in REGISTRY, and its traits (unit, batch
field, default workload, panel fields) in `core.scenario.KIND_TRAITS`.
"""

from __future__ import annotations

from .base import Kind
from .llm import LLM
from .pipeline import INFERENCE, TRAINING
from .serving import SERVING

REGISTRY: dict[str, Kind] = {k.name: k for k in (TRAINING, INFERENCE, SERVING, LLM)}


def get(name: str) -> Kind:
    """The kind registered under a scenario's `kind`."""
    return REGISTRY[name]
