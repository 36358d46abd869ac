"""Diagnosis: name the bottleneck, explain it in words, and rank the changes that would help by re-simulating."""
from .diagnose import explain, merit, name_bottleneck, suggestions

__all__ = ["explain", "merit", "name_bottleneck", "suggestions"]
