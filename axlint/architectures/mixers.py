"""Interim copy of the hybrid-layer contract (notes/prompts/contract.md) until the core on branch ``hybrid`` lands;
the core's module replaces this one at the merge."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

from axlint.architectures.linear import Linear


@dataclass(frozen=True)
class LayerPlan:
    mixers: tuple[str, ...] = ("attention",)
    mlp: Literal["dense", "moe"] | None = "dense"


@dataclass(frozen=True)
class MixerShape:
    module: str
    linears: tuple[Linear, ...]
    others: tuple[tuple[str, int], ...] = ()
    saved_per_token: float = 0.0
    backward_per_token: float = 0.0
    inner_linears: tuple[str, ...] = ()


MIXERS: dict[str, Callable[[Mapping[str, Any], int], MixerShape]] = {}
LAYER_PLANS: dict[str, Callable[[Mapping[str, Any], int], "tuple[LayerPlan, ...]"]] = {}
