"""Analytic per-GPU memory estimate of an Axolotl + DeepSpeed run: one small module per component family,
``estimate`` composes them, ``solver`` searches settings that fit."""
from axlint.memory.estimate import MemoryEstimate, estimate_memory

__all__ = ["MemoryEstimate", "estimate_memory"]
