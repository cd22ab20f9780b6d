"""Hybrid decoders: which token mixer each layer runs, and the shape of the mixers that are not softmax attention.

Most decoders run the same layer everywhere: the family's softmax attention, then a dense or MoE MLP. Hybrid models
mix other token mixers in (linear attention, state-space layers), some layers without an MLP or without a mixer.
A family row that names a ``layer_plan`` (``families.Family.layer_plan``) has its layers read from config.json by
the reader of that name in ``LAYER_PLANS``; every mixer a plan names other than "attention" is built by its
``MIXERS`` entry from the decoder config.json and the layer index. ``Architecture`` (model.py) lays a layer out from
its plan: parameters, module paths, LoRA targets and the activation model (memory/activations.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

from axlint.architectures.linear import Linear

MlpKind = Literal["dense", "moe"]

ATTENTION = "attention"
"""The family's usual softmax attention (``Family.attention_module``), laid out by ``Architecture``."""


@dataclass(frozen=True)
class LayerPlan:
    """One decoder layer: ``mixers``, its token mixers in module order ("attention" or a key of ``MIXERS``; empty for
    a layer without one), and ``mlp``: "dense", "moe" or None (a layer without an MLP)."""

    mixers: tuple[str, ...] = (ATTENTION,)
    mlp: MlpKind | None = "dense"

    @property
    def has_attention(self) -> bool:
        return ATTENTION in self.mixers

    @property
    def other_mixers(self) -> tuple[str, ...]:
        """The mixers ``MIXERS`` builds (every one but the family's attention)."""
        return tuple(m for m in self.mixers if m != ATTENTION)


@dataclass(frozen=True)
class MixerShape:
    """A token mixer of one layer, as its modelling code builds it.

    ``module``: its module name inside the decoder layer; ``linears``: its ``nn.Linear`` modules, named relative to
    ``module``; ``others``: every other parameter tensor as (name relative to ``module``, numel). Activations, in
    bytes per token of bf16 training: ``saved_per_token``, what it keeps for backward beyond the inputs of its
    Linears (those are counted once per input tensor by ``memory.activations.input_groups``, by ``d_in``);
    ``backward_per_token``, the gradient temporaries of its backward beyond what is saved. ``inner_linears``: the
    names of its Linears that read a tensor the mixer computes (its output projection); the others read the layer's
    normed input."""

    module: str
    linears: tuple[Linear, ...]
    others: tuple[tuple[str, int], ...] = ()
    saved_per_token: float = 0.0
    backward_per_token: float = 0.0
    inner_linears: tuple[str, ...] = ()

    @property
    def params(self) -> int:
        return sum(lin.params for lin in self.linears) + sum(n for _, n in self.others)

    @property
    def input_linears(self) -> tuple[Linear, ...]:
        """The Linears that read the layer's normed input."""
        return tuple(lin for lin in self.linears if lin.name not in self.inner_linears)

    @property
    def own_linears(self) -> tuple[Linear, ...]:
        """The Linears that read a tensor of the mixer's own (``inner_linears``)."""
        return tuple(lin for lin in self.linears if lin.name in self.inner_linears)


MixerBuilder = Callable[[Mapping[str, Any], int], MixerShape]
"""(decoder config.json, layer index) -> the mixer of that layer."""

PlanReader = Callable[[Mapping[str, Any], int], "tuple[LayerPlan, ...]"]
"""(decoder config.json, number of layers) -> one ``LayerPlan`` per layer."""

MIXERS: dict[str, MixerBuilder] = {}
"""Mixer kind -> its builder."""

LAYER_PLANS: dict[str, PlanReader] = {}
"""Name a ``Family`` row gives in ``layer_plan`` -> its reader of config.json."""
