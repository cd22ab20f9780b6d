"""Which parameters are trained: full fine-tune, LoRA / QLoRA targets, modules_to_save, unfrozen_parameters."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from axlint.architectures import Architecture, Linear
from axlint.memory.setup import TrainSetup

_MODULE_PARAMS = ("embed_tokens", "lm_head")


@dataclass(frozen=True)
class Trainable:
    """Trainable parameter counts: ``adapter`` (LoRA A/B, fp32), ``base`` (base-model params in the load dtype:
    everything for a full fine-tune, the copies made by modules_to_save, or the unfrozen ones)."""

    adapter: int
    base: int

    @property
    def total(self) -> int:
        return self.adapter + self.base


def _layer_modules(arch: Architecture, layer: int) -> Iterator[tuple[str, Linear]]:
    """(HF module path, Linear) of one layer, e.g. ``model.layers.3.self_attn.q_proj``,
    ``model.layers.3.mlp.experts.w1``."""
    for lin in arch.attention_linears():
        yield f"model.layers.{layer}.self_attn.{lin.name}", lin
    for lin in arch.mlp_linears(layer):
        yield f"model.layers.{layer}.mlp.{'experts.' if lin.expert else ''}{lin.name}", lin


def _targeted(name: str, lin: Linear, setup: TrainSetup) -> bool:
    """PEFT matching: a regex string must fullmatch the module path; a list entry must equal the path or be a
    ``.``-separated suffix of it. ``lora_target_linear`` = Axolotl's ``find_all_linear_names``: every module that is
    an ``nn.Linear`` (or has "Linear" in its class name) except lm_head; transformers >= 5 stores the experts as 3-D
    parameters and the router as a ``*TopKRouter`` module holding a weight, so neither is one."""
    targets = setup.lora_target_modules
    if setup.lora_target_linear and not lin.expert and lin.name != "gate":
        return True
    if isinstance(targets, str):
        return re.fullmatch(targets, name) is not None
    return any(name == t or name.endswith("." + t) for t in targets)


def lora_targets(arch: Architecture, setup: TrainSetup) -> dict[int, tuple[Linear, ...]]:
    """Layer index -> the Linears of that layer that get a LoRA adapter. A list of names matches the same
    modules in every layer of one kind (dense / MoE), so only a regex needs every layer's paths."""
    by_kind: dict[bool, tuple[Linear, ...]] = {}
    out: dict[int, tuple[Linear, ...]] = {}
    for layer in range(arch.num_layers):
        kind = arch.is_moe_layer(layer)
        if isinstance(setup.lora_target_modules, str) or kind not in by_kind:
            by_kind[kind] = tuple(lin for name, lin in _layer_modules(arch, layer) if _targeted(name, lin, setup))
        out[layer] = by_kind[kind]
    return out


def lora_params(arch: Architecture, setup: TrainSetup) -> int:
    """Σ over adapted Linears of r·(d_in + d_out) × instances (PEFT LoRA A: r×d_in, B: d_out×r)."""
    return sum(setup.lora_r * (lin.d_in + lin.d_out) * lin.count
               for lins in lora_targets(arch, setup).values() for lin in lins)


def modules_to_save_params(arch: Architecture, setup: TrainSetup) -> int:
    """PEFT ModulesToSaveWrapper keeps a trainable full copy of each listed module (embed_tokens / lm_head;
    a tied lm_head is the embedding)."""
    sizes = {"embed_tokens": arch.embedding_params, "lm_head": arch.lm_head_params or arch.embedding_params}
    return sum(sizes.get(m.rsplit(".", 1)[-1], 0) for m in setup.modules_to_save)


def named_parameters(arch: Architecture) -> Iterator[tuple[str, int]]:
    """(HF parameter name, numel) for the decoder: what ``unfrozen_parameters`` regexes are matched against."""
    yield "model.embed_tokens.weight", arch.embedding_params
    norm_names = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm")[: arch.norms_per_layer]
    for layer in range(arch.num_layers):
        for name, lin in _layer_modules(arch, layer):
            yield f"{name}.weight", lin.count * lin.d_in * lin.d_out
            if lin.bias:
                yield f"{name}.bias", lin.count * lin.d_out
        if arch.norm_params:
            for norm in norm_names:
                yield f"model.layers.{layer}.{norm}.weight", arch.hidden_size
    yield "model.norm.weight", arch.final_norm_params
    if arch.lm_head_params:
        yield "lm_head.weight", arch.lm_head_params


LLAMA_LAYOUT = frozenset({"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text", "phi3",
                          "olmo2", "granite", "cohere", "starcoder2"})
"""Dense model types whose HF module paths are ``model.layers.N.self_attn.*`` / ``model.layers.N.mlp.*``, the
template ``named_parameters`` writes: only for these are full parameter names compared with a pattern."""


def unfrozen_regex(pattern: str) -> re.Pattern[str] | None:
    """Axolotl's reading of one ``unfrozen_parameters`` entry (0.18.0 ``utils/freeze.py``, ``LayerNamePattern``): a
    trailing ``[a:b]`` index range is cut off, every ``.`` not followed by ``+`` is a literal dot, and the rest is
    matched with ``re.match`` (anchored at the start). None when it does not compile."""
    ranged = re.match(r"^(.+)\[([0-9]*)(?::([0-9]*))?\]$", pattern)
    name = ranged.group(1) if ranged else pattern
    try:
        return re.compile(re.sub(r"\.(?!\+)", "\\.", name))
    except re.error:
        return None


def unfrozen_params(arch: Architecture, patterns: tuple[str, ...]) -> int:
    """Params whose name matches one of Axolotl's ``unfrozen_parameters`` patterns (see ``unfrozen_regex``)."""
    compiled = [c for c in map(unfrozen_regex, patterns) if c is not None]
    return sum(n for name, n in named_parameters(arch) if any(c.match(name) for c in compiled))


def unmatched_unfrozen(arch: Architecture, patterns: tuple[str, ...]) -> list[str]:
    """The ``unfrozen_parameters`` entries that match no parameter of the model (a pattern that does not compile
    is left to the schema rules)."""
    names = [name for name, _ in named_parameters(arch)]
    return [p for p in patterns if (c := unfrozen_regex(p)) is not None and not any(c.match(n) for n in names)]


def unmatched_lora_targets(arch: Architecture, targets: tuple[str, ...]) -> list[str]:
    """The ``lora_target_modules`` names that are neither a module path nor a ``.``-separated suffix of one, in any
    layer (PEFT's matching of a list). Every module counts, the containers too (``mlp``, ``self_attn``: PEFT matches
    them and then refuses them for their type, another error), and the norms, embed_tokens and lm_head."""
    leaves = {name for layer in range(arch.num_layers) for name, _ in _layer_modules(arch, layer)}
    leaves |= {name.removesuffix(".weight") for name, _ in named_parameters(arch)}
    modules = {".".join(parts[:i]) for parts in (p.split(".") for p in leaves) for i in range(1, len(parts) + 1)}
    suffixes = {".".join(parts[i:]) for parts in (m.split(".") for m in modules) for i in range(len(parts))}
    return [t for t in targets if t not in suffixes]


def trainable(arch: Architecture, setup: TrainSetup) -> Trainable:
    if setup.adapter in ("lora", "qlora"):
        return Trainable(lora_params(arch, setup), modules_to_save_params(arch, setup))
    if setup.unfrozen_parameters:
        return Trainable(0, unfrozen_params(arch, setup.unfrozen_parameters))
    return Trainable(0, arch.total_params)
