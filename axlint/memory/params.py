"""Which parameters are trained: full fine-tune, LoRA / QLoRA targets, modules_to_save, unfrozen_parameters."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Iterator

from axlint.architectures import Architecture, Linear
from axlint.architectures.families import flag
from axlint.facts import (
    Lora,
    ShardingKind,
    embedding_layers,
    layer_index_expression,
    pattern_key_expression,
    saved_expression,
)
from axlint.memory.freeze import mm_frozen
from axlint.memory.peft_targets import convert_targets

if TYPE_CHECKING:  # setup.py reads the model's Linear names from here
    from axlint.memory.setup import TrainSetup

@dataclass(frozen=True)
class Trainable:
    """Trainable parameter counts: ``adapter`` (LoRA A/B, fp32), ``base`` (base-model params in the load dtype:
    everything for a full fine-tune, the copies made by modules_to_save, or the unfrozen ones)."""

    adapter: int
    base: int
    untrained: int = 0
    """Adapter parameters on quantized experts that never receive a gradient (``untrained_expert_adapter_params``):
    held as weights, with no gradient and no optimizer state; as are ``idle_adapter`` and ``idle_base``, the
    adapter and base parameters a step never reaches (``idle_split``)."""
    idle_adapter: int = 0
    idle_base: int = 0

    @property
    def total(self) -> int:
        return self.adapter + self.base

    @property
    def trained_adapter(self) -> int:
        """The adapter parameters that get gradients and optimizer states."""
        return self.adapter - self.untrained - self.idle_adapter

    @property
    def trained_base(self) -> int:
        """The base parameters that get gradients and optimizer states."""
        return self.base - self.idle_base

    @property
    def trained(self) -> int:
        """The parameters that get gradients and optimizer states."""
        return self.trained_adapter + self.trained_base


@dataclass(frozen=True)
class IdleSplit:
    """The trainable parameters that get no gradient: ``frozen_*`` by ``freeze_mm_modules`` (no longer trainable),
    ``idle_*`` trainable but never reached by a step; ``idle_parts`` names the idle parts; ``freezable``:
    ``freeze_mm_modules`` would freeze every idle one; ``text_only``: a part is idle because the run feeds text only,
    ``mtp``: because the forward never runs the multi-token-prediction layers. ``fixed``: parameters the model builds
    frozen (``Vision.fixed_params``)."""

    frozen_base: int = 0
    frozen_adapter: int = 0
    fixed: int = 0
    idle_base: int = 0
    idle_adapter: int = 0
    idle_parts: tuple[str, ...] = ()
    freezable: bool = False
    text_only: bool = False
    mtp: bool = False

    @property
    def why(self) -> str:
        """Why the idle parts get no gradient, in the user's words."""
        reasons = []
        if self.text_only:
            reasons.append("without `processor_type` Axolotl feeds text only, and a text-only step never reaches "
                           + ("them" if not self.mtp else "the multimodal parts"))
        if self.mtp:
            reasons.append("the model's forward never runs its multi-token-prediction layers, which only speculative "
                           "decoding uses")
        return "; ".join(reasons)


NO_SPLIT = IdleSplit()
"""The split of a model with nothing idle (one instance: the solver asks for it in every estimate)."""


def idle_split(arch: Architecture, setup: TrainSetup) -> IdleSplit:
    """``IdleSplit`` of a run: the multimodal parts (``_multimodal_split``) and the multi-token-prediction layers
    (``_mtp_split``). Once per architecture and what of the setup it reads."""
    if not arch.multimodal and not arch.mtp_layers:
        return NO_SPLIT
    memo = arch.memos.setdefault("idle_split", {})
    key = (setup.adapter, setup.lora_r, setup.lora_rank_pattern, setup.dora, _targets_key(setup),
           setup.unfrozen_parameters, setup.freeze_mm_modules,
           setup.images is None)
    if key not in memo:
        memo[key] = _mtp_split(arch, setup, _multimodal_split(arch, setup))
    return memo[key]


def _multimodal_split(arch: Architecture, setup: TrainSetup) -> IdleSplit:
    """The parts of a multimodal model (none for a model without a sized tower): the tower(s) with the projector pieces
    under a ``freeze.MM_PREFIXES`` name, each other projector piece, and Llama 3.2 Vision's cross-attention decoder
    layers. A part's base parameters train in a full fine-tune; its adapters are ``adapter_params`` over its targeted
    Linears, at each one's rank (``adapter_rank``). ``freeze_mm_modules`` freezes the parts ``freeze.mm_frozen`` names.
    Without ``processor_type`` Axolotl feeds text only but loads the multimodal class (``training.model.model_class``):
    a text-only forward runs no tower or projector, and MllamaTextModel skips its cross-attention layers without
    ``cross_attention_states`` (transformers 5.14.1 - 5.24), so every part that is not frozen is idle (measured on small
    models of each multimodal type, one text-only step: tests/test_oracle_ddp.py). With ``processor_type`` every part is
    taken to be fed. Under ``unfrozen_parameters`` (no adapter) a part's base parameters are those the patterns name
    (``unfrozen_names``; a tower's unnamed norms and embeddings are left out)."""
    vision = arch.vision_part
    if vision is None:
        return NO_SPLIT
    full = not setup.adapter and not setup.unfrozen_parameters
    unfrozen = () if setup.adapter else setup.unfrozen_parameters
    r = setup.lora_r if setup.adapter else 0
    loose = {path: params for path, params in vision.projector_parts() if not mm_frozen(path)}
    if unfrozen:
        named = [(name, n) for name, n in vision.named_parameters() if is_unfrozen(name, unfrozen)]
        loose_base = sum(n for name, n in named if name.startswith(tuple(f"{path}." for path in loose)))
        covered_base = sum(n for _, n in named) - loose_base
    else:
        loose_base = sum(loose.values()) if full else 0
        covered_base = arch.extra_parameters - vision.fixed_params - loose_base if full else 0
    # the adapters outside the decoder (memoized) are the tower's, the projector's and the patch convolution's
    loose_adapter = sum(adapter_params(lin.d_in, lin.d_out, adapter_rank(path, setup), setup)
                        for path, lin in _vision_modules(arch) if path in loose and lora_adapts(path, lin, setup)) \
        if r and loose else 0
    covered_adapter = _outside_adapter_params(arch, setup) - loose_adapter if r else 0
    cross = cross_attention_layers(arch)
    cross_base = sum(numel for layer in cross for name, numel in _layer_parameters(arch, layer)
                     if full or is_unfrozen(f"{_layer_prefix(arch, layer)}.{name}", unfrozen))
    targets = lora_targets(arch, setup) if r else {}
    cross_adapter = sum(adapter_params(lin.d_in, lin.d_out, layer_ranks(arch, setup, layer).get(lin, r), setup)
                        * lin.count for layer in cross for lin in targets.get(layer, ()))
    frozen = setup.freeze_mm_modules
    split = IdleSplit(frozen_base=covered_base if frozen else 0, frozen_adapter=covered_adapter if frozen else 0,
                            fixed=vision.fixed_params)
    if setup.images is not None:
        return split
    tower = "the audio tower and its projector" if arch.hears_audio else "the vision tower and its projector"
    parts = [(tower, 0, 0) if frozen else (tower, covered_base, covered_adapter)]
    if loose:
        parts.append((f"the projector `{vision.row.path}`", loose_base, loose_adapter))
    parts.append((f"the {len(cross)} cross-attention decoder layers", cross_base, cross_adapter))
    idle = [(label, base, adapter) for label, base, adapter in parts if base or adapter]
    return replace(split, idle_base=sum(base for _, base, _ in idle), idle_adapter=sum(a for _, _, a in idle),
                   idle_parts=tuple(label for label, _, _ in idle), freezable=[p[0] for p in idle] == [tower],
                   text_only=bool(idle))


def _mtp_split(arch: Architecture, setup: TrainSetup, split: IdleSplit) -> IdleSplit:
    """``split`` with the multi-token-prediction layers (``Family.mtp``) as one more idle part: MiMo's modeling_mimo.py
    builds them in ``MiMoModel.__init__`` and inherits Qwen2Model's forward, which never runs them, so their weights
    (full fine-tune) or the adapters on their targeted Linears (``_mtp_modules``) get no gradient, images or not
    (shown with transformers' Qwen2 forward under the layers as modeling_mimo.py assembles them:
    tests/test_coverage_remote.py). ``freeze_mm_modules`` does not name them. Under ``unfrozen_parameters`` (no
    adapter) their base parameters are those the patterns name; with an adapter as well they are not judged."""
    if not arch.mtp_layers or (setup.unfrozen_parameters and setup.adapter):
        return split
    r = setup.lora_r if setup.adapter else 0
    adapter = sum(adapter_params(lin.d_in, lin.d_out, adapter_rank(path, setup), setup)
                  for path, lin in _mtp_modules(arch) if r and lora_adapts(path, lin, setup))
    if setup.unfrozen_parameters:
        base = sum(n for name, n in _mtp_parameters(arch) if is_unfrozen(name, setup.unfrozen_parameters))
    else:
        base = 0 if setup.adapter else arch.mtp_params
    if not (base or adapter):
        return split
    count = f"{arch.mtp_layers} multi-token-prediction layers" if arch.mtp_layers > 1 else "multi-token-prediction layer"
    label = f"the {count} `{arch.decoder_path}.{arch.layout.mtp.module}`"
    return replace(split, idle_base=split.idle_base + base, idle_adapter=split.idle_adapter + adapter,
                   idle_parts=(*split.idle_parts, label), freezable=False, mtp=True)


def cross_attention_layers(arch: Architecture) -> tuple[int, ...]:
    """The decoder's cross-attention layers (Llama 3.2 Vision's, ``cross_attention.py``); once per architecture."""
    cached = arch.memos.get("cross_attention_layers")
    if cached is None:
        cached = arch.memos["cross_attention_layers"] = tuple(
            i for i, plan in enumerate(arch.layer_plans) if "cross_attention" in plan.other_mixers)
    return cached


def skipped_layers(arch: Architecture, setup: TrainSetup) -> tuple[int, ...]:
    """The decoder layers a step does not run: without images (no ``processor_type``) MllamaTextModel skips its
    cross-attention layers, which run only with ``cross_attention_states`` (transformers 5.14.1 - 5.24; shown on fake
    tensors by tests/test_simulate_vs_analytic.py); none otherwise."""
    return cross_attention_layers(arch) if setup.images is None else ()


def layer_modules(arch: Architecture, layer: int) -> Iterator[tuple[str, Linear]]:
    """(HF module path, Linear) of one layer, e.g. ``model.layers.3.self_attn.q_proj``,
    ``model.layers.3.mlp.experts.w1``, ``gpt_neox.layers.3.attention.query_key_value``,
    ``model.layers.0.linear_attn.out_proj`` (a hybrid layer's other mixer, ``Architecture.mixer_shapes``): the
    layer's prefix and its kind's ``kind_modules``."""
    prefix = _layer_prefix(arch, layer)
    for name, lin in kind_modules(arch, arch.layer_kinds[layer]):
        yield f"{prefix}.{name}", lin


def kind_modules(arch: Architecture, kind: int) -> tuple[tuple[str, Linear], ...]:
    """(module path inside the layer, Linear) of the layers of one kind (``Architecture.layer_kinds``): the attention's,
    the other mixers', the MLP's. Built once per architecture and kind."""
    memo = arch.memos.setdefault("kind_modules", {})
    if kind not in memo:
        f, layer = arch.layout, arch.kind_layers[kind][0]
        out = [(f"{f.attention_module}.{lin.name}", lin) for lin in arch.attention_linears(layer)]
        out += [(f"{shape.module}.{lin.name}", lin) for shape in arch.mixer_shapes(layer) for lin in shape.linears]
        for lin in arch.mlp_linears(layer):
            if f.moe_beside_mlp and (lin.expert or lin.router or lin.name == f.router_name):
                # Gemma 4: the router and the experts sit at the layer, beside its dense MLP (granitemoehybrid: in the
                # block_sparse_moe its names carry)
                out.append((f"{'experts.' if lin.expert and '.' not in lin.name else ''}{lin.name}", lin))
            else:
                out.append((f"{f.mlp_module}.{'experts.' if lin.expert else ''}{lin.name}", lin))
        out += [(lin.name, lin) for lin in arch.per_layer_input_linears]  # Gemma 4: at the layer itself
        memo[kind] = tuple(out)
    return memo[kind]


def layer_groups(arch: Architecture, setup: TrainSetup) -> tuple[tuple[int, ...], ...]:
    """Layers of one kind (``Architecture.layer_kinds``) with the same adapters under ``setup``, the groups in the
    order of their first layer: the layers of each kind when the module targets are a list of names (matched in one
    layer of each kind: ``lora_targets``), no entry of them or of the modules to save names a layer (a name
    without an index matches the same modules or parameters after each layer's index) and
    ``peft_layers_to_transform`` and `lora_rank_pattern` are not set; else grouped by their adapters and those
    adapters' ranks (``layer_ranks``), once per architecture and targets (a regex ``lora_target_modules``, an entry
    with an index, the listed layers or a rank key may single out layers)."""
    targets = setup.lora_target_modules
    if (not isinstance(targets, str)
            and not any(map(_has_index, (*targets, *setup.lora_target_parameters, *setup.modules_to_save)))
            and setup.lora_layers is None and not setup.lora_rank_pattern):
        return arch.kind_layers
    memo = arch.memos.setdefault("layer_groups", {})
    key = (_targets_key(setup), setup.lora_target_parameters, bool(setup.adapter), setup.lora_r)
    if key not in memo:
        adapted = lora_targets(arch, setup)
        groups: dict[tuple, list[int]] = {}
        for layer, kind in enumerate(arch.layer_kinds):
            experts, router = adapted_expert_parameters(arch, setup, layer), adapted_router(arch, setup, layer)
            ranks = frozenset(layer_ranks(arch, setup, layer).items())
            groups.setdefault((kind, adapted[layer], experts, router, ranks), []).append(layer)
        memo[key] = tuple(map(tuple, groups.values()))
    return memo[key]


def targeted(name: str, lin: Linear, setup: TrainSetup) -> bool:
    """Whether the module targets reach the Linear at module path ``name``, by PEFT's matching: a regex string must fullmatch the module path; a list entry must equal the path or be a
    ``.``-separated suffix of it. ``lora_target_linear`` = Axolotl's ``find_all_linear_names``: every module that is
    an ``nn.Linear`` (or has "Linear" in its class name) except lm_head; transformers >= 5 stores the experts as 3-D
    parameters and the router as a ``*TopKRouter`` module holding a weight, so neither is one, and no module target
    reaches the experts (``lora_target_parameters``, or PEFT's conversion in ``peft_targets``, does) unless the
    repository's own code builds them as modules (``TrainSetup.expert_modules``)."""
    targets = setup.lora_target_modules
    if lin.expert and not setup.expert_modules:
        return False
    if setup.lora_target_linear and not lin.router:
        return True
    return _named(name, targets)


def _named(path: str, targets: tuple[str, ...] | str) -> bool:
    """PEFT's matching of a module path against ``target_modules``: a regex string fullmatches it; a list entry
    equals it or is a ``.``-separated suffix of it."""
    if isinstance(targets, str):
        compiled = _target_regex(targets)
        return compiled is not None and compiled.fullmatch(path) is not None
    return any(path == t or path.endswith("." + t) for t in targets)


def adapted_patch_conv(arch: Architecture, setup: TrainSetup) -> tuple[str, int, int] | None:
    """(module path, inputs per patch, outputs) of the tower's patch convolution when a LoRA target reaches it:
    PEFT 0.19 wraps an ``nn.Conv2d`` / ``Conv3d`` too (lora_A r × inputs per patch, lora_B outputs × r, no biases),
    matched by name as a Linear is; ``lora_target_linear`` reaches it when its name is one of the Linears' it
    collects (``Tower.patch_conv``)."""
    conv = arch.vision_part.patch_conv() if setup.adapter and arch.vision_part else None
    if conv is None:
        return None
    path, d_in, d_out = conv
    named = setup.lora_target_linear and path.rsplit(".", 1)[-1] in linear_names(arch)
    return (path, d_in, d_out) if named or _named(path, setup.lora_target_modules) else None


@functools.lru_cache(maxsize=None)
def _target_regex(pattern: str) -> re.Pattern[str] | None:
    """A regex ``lora_target_modules``, compiled once per process (``targeted``, ``regex_leaf_names``,
    ``regex_matches_nothing`` match it against every module path of the model); None when it does not compile, so
    that it matches nothing (PEFT stops the launch on it: ``facts.Lora.regex_error``, AX239)."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


_EXPERT_PROJECTIONS = frozenset({"gate_proj", "up_proj", "down_proj", "w1", "w2", "w3"})


def expert_parameters(arch: Architecture, layer: int) -> Iterator[tuple[str, Linear]]:
    """(parameter path, shape as a Linear with ``count`` experts) of the routed experts' 3-D parameters of a MoE layer
    in transformers 5, which fuses gate and up: ``<experts>.gate_up_proj`` [E, 2I, h] (``up_proj`` [E, I, h] for experts
    without a gate) and ``<experts>.down_proj`` [E, h, I] (e.g. models/qwen3_moe, minimax_m2, gemma4 ``*Experts``; names checked in tests/test_families.py)."""
    prefix = _layer_prefix(arch, layer)
    for path, lin in _kind_expert_parameters(arch, arch.layer_kinds[layer]):
        yield f"{prefix}.{path}", lin


def _kind_expert_parameters(arch: Architecture, kind: int) -> tuple[tuple[str, Linear], ...]:
    """``expert_parameters`` of the layers of one kind, their paths inside the layer; once per architecture and
    kind."""
    memo = arch.memos.setdefault("kind_expert_parameters", {})
    if kind in memo:
        return memo[kind]
    experts = [(name, lin) for name, lin in kind_modules(arch, kind) if lin.expert]
    out: tuple[tuple[str, Linear], ...] = ()
    if len(experts) in (2, 3) and all(name.rsplit(".", 1)[-1] in _EXPERT_PROJECTIONS for name, _ in experts):
        (first_path, first), (_, down) = experts[0], experts[-1]  # DBRX's 2-D w1 / v1 / w2 are laid out otherwise
        module = first_path.rsplit(".", 1)[0]
        if len(experts) == 3:
            out = ((f"{module}.gate_up_proj", Linear("gate_up_proj", first.d_in, 2 * first.d_out, count=first.count,
                                                     expert=True)),)
        else:  # experts without a gate (Nemotron-H): up_proj [E, I, h]
            out = ((f"{module}.up_proj", Linear("up_proj", first.d_in, first.d_out, count=first.count, expert=True)),)
        out += ((f"{module}.down_proj", Linear("down_proj", down.d_in, down.d_out, count=down.count, expert=True)),)
    memo[kind] = out
    return out


def _parameter_targeted(path: str, targets: tuple[str, ...]) -> bool:
    """PEFT 0.21 ``BaseTuner._inject_parameters``: a ``target_parameters`` entry matches a parameter whose
    ``module.param`` name equals it or ends with ``.`` + it."""
    return any(path == t or path.endswith("." + t) for t in targets)


def adapted_expert_parameters(arch: Architecture, setup: TrainSetup, layer: int) -> tuple[Linear, ...]:
    """The routed-expert parameters of ``layer`` that ``lora_target_parameters`` wraps in a LoRA ``ParamWrapper``."""
    if not setup.adapter or not setup.lora_target_parameters or not arch.is_moe_layer(layer):
        return ()
    return tuple(lin for path, lin in expert_parameters(arch, layer)
                 if _parameter_targeted(path, setup.lora_target_parameters))


def adapted_router(arch: Architecture, setup: TrainSetup, layer: int) -> Linear | None:
    """The router of a MoE ``layer`` when a ``target_parameters`` entry names its weight (``gate.weight``, what PEFT
    makes of a ``gate`` module target on a converted model: ``peft_targets``)."""
    if not setup.adapter or not setup.lora_target_parameters or not arch.is_moe_layer(layer):
        return None
    prefix = _layer_prefix(arch, layer)
    return next((lin for path, lin in kind_modules(arch, arch.layer_kinds[layer])
                 if (lin.router or lin.name == arch.layout.router_name)
                 and _parameter_targeted(f"{prefix}.{path}.weight", setup.lora_target_parameters)), None)


def target_parameter_lora_params(arch: Architecture, setup: TrainSetup) -> int:
    """LoRA on parameters (``lora_target_parameters`` and PEFT's conversion of old expert names): PEFT
    ``lora.ParamWrapper.update_layer`` gives a [E, d_in, d_out] parameter ``lora_A = Linear(d_in, r·E)`` and
    ``lora_B = Linear(r·E, d_out)``, r·E·(d_in + d_out), the same as one LoRA per expert; a fused gate_up_proj
    reached through both old names has rank 2r (``TrainSetup.lora_doubled``); the router weight [E, h] r·(h + E).
    Counted once per ``layer_groups`` group, times its layers."""
    if not setup.adapter or not setup.lora_target_parameters:
        return 0
    total = 0
    for layers in layer_groups(arch, setup):
        per_layer = sum(_parameter_lora_params(setup, lin) for lin in adapted_expert_parameters(arch, setup, layers[0]))
        router = adapted_router(arch, setup, layers[0])
        per_layer += setup.lora_r * (router.d_in + router.d_out) if router else 0
        total += per_layer * len(layers)
    return total


def _parameter_lora_params(setup: TrainSetup, lin: Linear) -> int:
    """r·E·(d_in + d_out) of one adapted 3-D parameter (rank 2r when reached through both old names)."""
    rank = setup.lora_r * (2 if lin.name in setup.lora_doubled else 1)
    return rank * lin.count * (lin.d_in + lin.d_out)


def untrained_expert_adapter_params(arch: Architecture, setup: TrainSetup) -> int:
    """With the experts stored quantized on load (Axolotl's ``quantize_moe_experts``), PEFT nests one ``ParamWrapper``
    per targeted weight of the experts module, the first weight the module defines innermost (Axolotl's own
    injection keeps that order). In the forward the outer wrapper computes its ΔW and enters parametrize's cache
    before the inner one runs; the inner one then reads its weight (``get_delta_weight`` → ``get_param``) through
    the quantization parametrization, which stores the plain dequantized weight in that cache, and registers its
    LoRA parametrization after it, so the experts read the cached weight without the adapter: every adapter but
    the outermost gets no gradient (PEFT 0.19.0 – 0.20.0 ``ParamWrapper._activate_lora``; shown with Axolotl 0.18.0's
    own quantization and injection and PEFT 0.19.1 by ``benchmarks/memory/expert_adapter_probe.py``,
    tests/test_oracle_expert_adapters.py, and on an H100, where the GLM-4.7-Flash run with gate_up_proj and down_proj
    targeted held 2.7 GiB less than an estimate that trained both). Those adapters are the targeted expert weights
    of each layer but the one defined last (down_proj after gate_up_proj). PEFT 0.18 enters no cache there and trains
    them all (``TrainSetup.inner_expert_adapters_untrained`` False)."""
    if (not setup.adapter or not setup.lora_target_parameters or not setup.experts_parametrized
            or not setup.inner_expert_adapters_untrained):
        return 0
    return sum(sum(_parameter_lora_params(setup, lin) for lin in adapted_expert_parameters(arch, setup, layers[0])[:-1])
               * len(layers) for layers in layer_groups(arch, setup))


def linear_names(arch: Architecture) -> tuple[str, ...]:
    """Axolotl's ``find_all_linear_names`` (0.18.0 loaders/adapter.py): the last name of every ``nn.Linear``
    module path (the vision tower's and the multi-token-prediction layers' too; none of a family whose Linears are
    transformers' ``Conv1D``), less the output embedding's name Axolotl gives the model type
    (``facts.embedding_layers``: GPT-NeoX's ``embed_out``, so its ``lm_head`` stays); what ``lora_target_linear``
    hands PEFT. Built once per architecture, from one layer of each kind."""
    cached = arch.memos.get("linear_names")
    if cached is None:
        names = {path.rsplit(".", 1)[-1] for path, lin, outside in _linear_paths(arch)
                 if not lin.router and (outside or not arch.layout.conv1d)}
        if not arch.num_labels:  # the output projection, an nn.Linear (tied or not)
            names.add(arch.layout.lm_head_name)
        cached = arch.memos["linear_names"] = tuple(sorted(names - {embedding_layers(arch.model_type)[1]}))
    return cached


def _linear_paths(arch: Architecture) -> tuple[tuple[str, Linear, bool], ...]:
    """(module path, Linear, whether it sits outside the decoder layers) of the model's Linears but the routed
    experts: those of the first layer of each kind (every layer of a kind has the same), then those outside the
    layers (``_outside_modules``). Built once per architecture; ``linear_names``, ``linears_inside``,
    ``linear_path_named`` and ``refused_lora_targets`` read it."""
    cached = arch.memos.get("linear_paths")
    if cached is None:
        cached = arch.memos["linear_paths"] = (
            *((f"{_layer_prefix(arch, layers[0])}.{name}", lin, False) for kind, layers in enumerate(arch.kind_layers)
              for name, lin in kind_modules(arch, kind) if not lin.expert),
            *((path, lin, True) for path, lin in _outside_modules(arch)))
    return cached


def linears_inside(arch: Architecture, path: str) -> tuple[str, ...]:
    """The last names of the ``nn.Linear`` modules below the module ``path`` (a path of ``refused_lora_targets``: in
    the first layer of its kind, or outside the layers)."""
    return tuple(sorted({p.rsplit(".", 1)[-1] for p, lin, _ in _linear_paths(arch)
                         if not lin.router and p.startswith(path + ".")}))


def linear_path_named(arch: Architecture, name: str) -> str:
    """The module path of an ``nn.Linear`` whose last name is ``name`` (one of ``linear_names``): in the first layer
    of the first kind that has one, else outside the layers, else the output projection."""
    return next((p for p, lin, _ in _linear_paths(arch) if not lin.router and p.rsplit(".", 1)[-1] == name),
                arch.layout.lm_head_name)


def lora_targets(arch: Architecture, setup: TrainSetup) -> dict[int, tuple[Linear, ...]]:
    """Layer index -> the Linears of that layer that get a LoRA adapter: those the targets reach that no module to
    save takes (``kept_whole``), in the layers ``peft_layers_to_transform`` keeps. A list of names matches the same
    modules in every layer of one kind (``Architecture.kind_layers``: it is matched in the kind's first layer), so
    only a regex, or a list entry that names a layer (``layers.3.self_attn.q_proj``), needs every layer's paths.
    Built once per architecture and targets (the solver's variants of a run keep them)."""
    memo = arch.memos.setdefault("lora_targets", {})
    key = _targets_key(setup)
    if key not in memo:
        targets, saved = setup.lora_target_modules, setup.modules_to_save

        def adapted(name: str, lin: Linear) -> bool:
            return targeted(name, lin, setup) and not kept_whole(name, saved)
        if isinstance(targets, str) or any(_has_index(t) for t in (*targets, *saved)):
            found = {layer: tuple(lin for name, lin in layer_modules(arch, layer) if adapted(name, lin))
                     for layer in range(arch.num_layers)}
        else:
            by_kind = [tuple(lin for name, lin in layer_modules(arch, layers[0]) if adapted(name, lin))
                       for layers in arch.kind_layers]
            found = {layer: by_kind[kind] for layer, kind in enumerate(arch.layer_kinds)}
        if setup.lora_layers is not None:  # peft_layers_to_transform: the listed layers only (PEFT reads the index
            # of a module inside the layer, whose path goes on after a dot)
            found = {layer: lins if in_lora_layers(f"{_layer_prefix(arch, layer)}.", setup) else ()
                     for layer, lins in found.items()}
        memo[key] = found
    return memo[key]


def _targets_key(setup: TrainSetup) -> tuple:
    """What ``lora_targets`` reads of a setup: the module targets, ``lora_target_linear``, ``expert_modules``, the
    layers ``peft_layers_to_transform`` keeps, and the modules to save (``kept_whole``); and the rank keys, which
    the memos keyed by it (``layer_groups``, ``_outside_adapter_params``) read too."""
    return (setup.lora_target_modules, setup.lora_target_linear, setup.expert_modules, setup.lora_layers,
            setup.modules_to_save, setup.lora_rank_pattern)


def _outside_adapter_params(arch: Architecture, setup: TrainSetup) -> int:
    """Σ ``adapter_params`` over the Linears outside the decoder layers (``_outside_modules``) that the module targets
    reach, and over the patch convolution they reach (``adapted_patch_conv``); once per architecture, targets, rank
    and DoRA."""
    memo = arch.memos.setdefault("outside_adapter_params", {})
    key = (_targets_key(setup), setup.lora_r, setup.dora)
    if key not in memo:
        conv = adapted_patch_conv(arch, setup)
        memo[key] = sum(adapter_params(lin.d_in, lin.d_out, adapter_rank(name, setup), setup)
                        for name, lin in outside_lora_linears(arch, setup)) \
            + (adapter_params(conv[1], conv[2], adapter_rank(conv[0], setup), setup)
               if conv and _left_to_lora(conv[0], setup) else 0)
    return memo[key]


def outside_lora_linears(arch: Architecture, setup: TrainSetup) -> tuple[tuple[str, Linear], ...]:
    """(module path, Linear) of the Linears outside the decoder layers (``_outside_modules``) that PEFT adapts
    (``lora_adapts``)."""
    return tuple((name, lin) for name, lin in _outside_modules(arch) if lora_adapts(name, lin, setup))


def adapter_params(d_in: int, d_out: int, rank: int, setup: TrainSetup) -> int:
    """The trainable parameters of one LoRA adapter on a ``d_in -> d_out`` Linear (or convolution, ``d_in`` its
    inputs per output): lora_A rank×d_in and lora_B d_out×rank, and with DoRA (``TrainSetup.dora``) the magnitude
    vector of d_out (PEFT 0.19.1 ``DoraLinearLayer.weight`` / ``_DoraConvNdLayer``, tuners/lora/dora.py)."""
    return rank * (d_in + d_out) + (d_out if setup.dora else 0)


def adapter_rank(path: str, setup: TrainSetup) -> int:
    """The LoRA rank PEFT gives the adapted module at ``path``: the value of the first `lora_rank_pattern` key whose
    expression (``facts.pattern_key_expression``) matches the path, else ``lora_r`` (PEFT 0.19.1 ``get_pattern_key``,
    utils/other.py, read by ``_create_and_replace``, tuners/lora/model.py; a key that does not compile stops the
    wrap, AX246, and is passed over here)."""
    if not setup.lora_rank_pattern:
        return setup.lora_r
    return _pattern_rank(path, setup.lora_rank_pattern, setup.lora_r)


@functools.lru_cache(maxsize=65536)
def _pattern_rank(path: str, pattern: tuple[tuple[str, int], ...], default: int) -> int:
    """``adapter_rank`` once per module path and pattern."""
    for key, rank in pattern:
        compiled = _compiled(pattern_key_expression(key))
        if compiled is not None and compiled.match(path):
            return rank
    return default


def layer_ranks(arch: Architecture, setup: TrainSetup, layer: int) -> dict[Linear, int]:
    """Linear -> rank for the Linears of ``layer`` that get an adapter (``lora_targets``) of another rank than
    ``lora_r`` (``adapter_rank``); empty without `lora_rank_pattern`."""
    if not setup.lora_rank_pattern or not setup.adapter:
        return {}
    adapted = lora_targets(arch, setup).get(layer, ())
    ranks = ((lin, adapter_rank(name, setup)) for name, lin in layer_modules(arch, layer) if lin in adapted)
    return {lin: rank for lin, rank in ranks if rank != setup.lora_r}


def _outside_modules(arch: Architecture) -> tuple[tuple[str, Linear], ...]:
    """(module path, Linear) of the ``nn.Linear`` modules outside the decoder layers: the vision tower's and
    projector's (``_vision_modules``) and the multi-token-prediction layers' (``_mtp_modules``)."""
    return _vision_modules(arch) + _mtp_modules(arch)


def _mtp_modules(arch: Architecture) -> tuple[tuple[str, Linear], ...]:
    """(module path, Linear) of the multi-token-prediction layers' Linears (``Architecture.mtp_linears``), each
    layer's at ``<root>.<Family.mtp.module>.N``: layer 0's module paths, then the input projection."""
    mtp = arch.layout.mtp
    if not mtp or not arch.mtp_layers:
        return ()
    inner = (*kind_modules(arch, arch.layer_kinds[0]), (mtp.proj_name, arch.mtp_linears[-1]))
    return tuple((f"{arch.decoder_path}.{mtp.module}.{i}.{path}", lin)
                 for i in range(arch.mtp_layers) for path, lin in inner)


def _vision_modules(arch: Architecture) -> tuple[tuple[str, Linear], ...]:
    """(module path, Linear) of every ``nn.Linear`` of the vision tower (each layer's) and projector
    (``vision.Vision.linears``, paths checked against transformers in tests/test_vision.py); listed once per
    architecture."""
    cached = arch.memos.get("vision_modules")
    if cached is None:
        cached = arch.memos["vision_modules"] = tuple(
            (lin.path, Linear(lin.name, lin.d_in, lin.d_out, lin.bias)) for lin in arch.vision_linears())
    return cached


def lora_params(arch: Architecture, setup: TrainSetup) -> int:
    """Σ over adapted Linears of ``adapter_params`` × instances (PEFT LoRA A: r×d_in, B: d_out×r, r each one's rank,
    ``adapter_rank``; DoRA's magnitude): the decoder's, and the vision tower's that the targets reach (Axolotl's
    ``lora_target_linear`` collects the Linear names of the whole model, and PEFT matches a listed name in every module
    path that ends with it), and the multi-token-prediction layers' likewise."""
    adapted, decoder = lora_targets(arch, setup), 0
    for layers in layer_groups(arch, setup):
        ranks = layer_ranks(arch, setup, layers[0])
        decoder += len(layers) * sum(adapter_params(lin.d_in, lin.d_out, ranks.get(lin, setup.lora_r), setup)
                                     * lin.count for lin in adapted[layers[0]])
    return decoder + _outside_adapter_params(arch, setup)


def modules_to_save_params(arch: Architecture, setup: TrainSetup) -> int:
    """PEFT ModulesToSaveWrapper keeps a trainable full copy of every module whose path ends with a listed name
    (plain ``str.endswith``, as PEFT 0.19 matches ``modules_to_save``: ``norm`` copies every norm); a tied lm_head
    is the embedding. The usual embedding / output projection are counted without walking the module paths."""
    sizes = {arch.layout.embed_name: arch.embedding_params,
             arch.head_name: arch.lm_head_params + (arch.embedding_params if arch.tie_word_embeddings else 0)}
    if all(m in sizes for m in setup.modules_to_save):
        return sum(sizes[m] for m in setup.modules_to_save)
    params = dict(_decoder_params(arch))
    saved = _saved_modules(arch, setup.modules_to_save)
    return sum(n for path in saved for name, n in params.items() if name.startswith(path + "."))


def _decoder_params(arch: Architecture) -> Iterator[tuple[str, int]]:
    """``named_parameters``, with a tied lm_head's weight (PEFT copies the module, and with it the shared weight)."""
    yield from named_parameters(arch)
    if arch.tie_word_embeddings:
        yield f"{arch.layout.lm_head_name}.weight", arch.embedding_params


def _saved_modules(arch: Architecture, entries: tuple[str, ...]) -> list[str]:
    """The outermost module paths that end with one of ``entries`` (a module inside a copied one is in the copy)."""
    found = sorted(p for p in module_paths(arch) if any(p.endswith(e) for e in entries))
    return [p for i, p in enumerate(found) if not any(p.startswith(q + ".") for q in found[:i])]


def unmatched_modules_to_save(arch: Architecture, entries: tuple[str, ...]) -> list[str]:
    """The ``lora_modules_to_save`` entries that no module path ends with (PEFT then copies nothing for them)."""
    paths = module_paths(arch)
    return [e for e in entries if not any(p.endswith(e) for p in paths)]


def saved_over_targets(arch: Architecture, targets: tuple[str, ...] | str, target_linear: bool,
                       saved: tuple[str, ...]) -> bool:
    """Whether ``lora_modules_to_save`` takes every module the LoRA targets reach out of PEFT's hands
    (``kept_whole``), so that the wrap finds nothing to adapt; the targets reach at least one module. The targets
    are matched as PEFT matches them (``_named``); ``target_linear`` adds every Linear's name (``linear_names``)."""
    reached = reached_paths(arch, targets, target_linear)
    return bool(reached) and _saved_skips(saved) is not None and all(kept_whole(p, saved) for p in reached)


def reached_paths(arch: Architecture, targets: tuple[str, ...] | str, target_linear: bool) -> list[str]:
    """The module paths (``module_paths``) the LoRA targets reach as PEFT matches them (``_named``);
    ``target_linear`` adds every Linear's name (``linear_names``)."""
    linear = linear_names(arch) if target_linear else ()
    return [p for p in module_paths(arch) if _named(p, targets) or _named(p, linear)]


def reaches_layers_pattern(arch: Architecture, lora: Lora, position: int) -> bool:
    """Whether PEFT reads the ``peft_layers_pattern`` name at ``position`` for a module the list targets reach and
    no module to save takes: one whose path none of the names before it gives a layer index (PEFT 0.19.1 tries
    them in order and stops at the first that matches, ``peft_layer_index``)."""
    earlier = _index_regexes(lora.layers_pattern[:position]) if position else ()
    paths = reached_paths(arch, lora.target_modules, lora.target_linear)
    return None not in earlier and any(not any(r.match(p) for r in earlier if r is not None)
                                       for p in paths if not kept_whole(p, lora.modules_to_save))


def reaches_pattern_key(arch: Architecture, lora: Lora, keys: tuple[str, ...], position: int) -> bool:
    """Whether PEFT reads the `lora_rank_pattern` / `lora_alpha_pattern` key at ``position`` of ``keys`` for a module
    it adapts (``lora_paths``): one whose path none of the keys before it that compile matches (PEFT 0.19.1
    ``get_pattern_key`` tries them in order and stops at the first match)."""
    earlier = [r for r in map(_compiled, map(pattern_key_expression, keys[:position])) if r is not None]
    return any(not any(r.match(p) for r in earlier) for p in lora_paths(arch, lora))


def unmatched_pattern_keys(arch: Architecture, lora: Lora, keys: tuple[str, ...]) -> list[str]:
    """The `lora_rank_pattern` / `lora_alpha_pattern` keys that match the path of no module PEFT adapts
    (``lora_paths``; PEFT 0.19.1 ``get_pattern_key``), so set nothing. Keys that do not compile (AX246) are passed
    over; none when PEFT adapts nothing (AX239 and MEM011 say why)."""
    paths = lora_paths(arch, lora) if keys else []
    regexes = [(key, _compiled(pattern_key_expression(key))) for key in keys] if paths else []
    return [key for key, r in regexes if r is not None and not any(r.match(p) for p in paths)]


def lora_paths(arch: Architecture, lora: Lora) -> list[str]:
    """The module paths the list or expression of targets reaches (``reached_paths``) that no module to save takes
    (``kept_whole``) and ``peft_layers_to_transform`` keeps (``peft_layer_index``): the modules PEFT adapts, the
    routed experts' parameters aside."""
    paths = reached_paths(arch, lora.target_modules, lora.target_linear)
    return [p for p in paths if not kept_whole(p, lora.modules_to_save) and (
        not lora.layers_to_transform or peft_layer_index(p, lora.layers_pattern) in lora.layers_to_transform)]


def unmatched_layers_patterns(arch: Architecture, lora: Lora) -> list[str]:
    """The ``peft_layers_pattern`` names from which PEFT reads no layer index on any module the targets reach and no
    module to save takes (``peft_layer_index``); none when a name is no regular expression."""
    if None in _index_regexes(lora.layers_pattern):
        return []
    paths = [p for p in reached_paths(arch, lora.target_modules, lora.target_linear)
             if not kept_whole(p, lora.modules_to_save)]
    return [name for name in lora.layers_pattern if not any(peft_layer_index(p, (name,)) is not None for p in paths)]


def kept_whole(path: str, saved: tuple[str, ...]) -> bool:
    """Whether PEFT leaves the module at ``path`` to ``lora_modules_to_save`` instead of adapting it: PEFT 0.19.1
    (``check_target_module_exists``, tuners/tuners_utils.py) skips a module whose path ``re.match``es
    ``(^|.*\\.)<entry>($|\\..*)`` for an entry (the entry's whole name, or a module inside it), and the module is
    then copied whole (``modules_to_save_params``). False when an entry is no regular expression."""
    skips = _saved_skips(saved) if saved else None
    return bool(skips) and any(skip.match(path) for skip in skips)


def adapted_but_saved(arch: Architecture, setup: TrainSetup) -> tuple[str, str] | None:
    """(entry, module path) of the first Linear, in the model's order (``_model_linears``), that LoRA adapts
    (``lora_adapts``) and whose path ends with a ``lora_modules_to_save`` entry that is not one of its whole names
    (``proj`` of ``q_proj``): PEFT 0.19.1 puts the adapters in first, then matches the modules to save with plain
    ``str.endswith`` (``_set_trainable``, utils/other.py) and refuses to copy a LoRA layer
    (``ModulesToSaveWrapper.check_module``: ``TypeError``). None when there is none, or an entry is no regular
    expression (PEFT stops on that first)."""
    saved = setup.modules_to_save
    if not saved or _saved_skips(saved) is None:
        return None
    for path, lin in _model_linears(arch):
        entry = next((e for e in saved if path.endswith(e)), None)
        if entry is not None and lora_adapts(path, lin, setup):
            return entry, path
    return None


def saved_targets(arch: Architecture, setup: TrainSetup) -> list[tuple[str, int, int]]:
    """(entry, modules, parameters) of each ``lora_modules_to_save`` entry that takes Linears the LoRA targets
    reach out of the LoRA (``kept_whole``): PEFT trains a full copy of each of those modules instead of an adapter
    (``modules_to_save_params``). Entries that take none are left out."""
    reached = [(path, lin) for path, lin in _model_linears(arch)
               if targeted(path, lin, setup) and in_lora_layers(path, setup)]
    found = []
    for entry in setup.modules_to_save:
        taken = [lin for path, lin in reached if kept_whole(path, (entry,))]
        if taken:
            found.append((entry, sum(lin.count for lin in taken), sum(lin.params for lin in taken)))
    return found


def lora_adapts(path: str, lin: Linear, setup: TrainSetup) -> bool:
    """Whether PEFT puts an adapter on the Linear at module ``path``: the targets reach it (``targeted``), the
    layers of ``peft_layers_to_transform`` hold it, and no module to save takes it (``kept_whole``)."""
    return targeted(path, lin, setup) and _left_to_lora(path, setup)


def _left_to_lora(path: str, setup: TrainSetup) -> bool:
    """Whether PEFT adapts the module at ``path`` once a target reaches it: ``peft_layers_to_transform`` keeps its
    layer (``in_lora_layers``) and no module to save takes it (``kept_whole``)."""
    return in_lora_layers(path, setup) and not kept_whole(path, setup.modules_to_save)


def _model_linears(arch: Architecture) -> Iterator[tuple[str, Linear]]:
    """(module path, Linear) of every Linear of the model but the output projection: each decoder layer's in turn
    (``layer_modules``), then those outside the layers (``_outside_modules``)."""
    for layer in range(arch.num_layers):
        yield from layer_modules(arch, layer)
    yield from _outside_modules(arch)


@functools.lru_cache(maxsize=None)
def _saved_skips(saved: tuple[str, ...]) -> tuple[re.Pattern[str], ...] | None:
    """``kept_whole``'s expressions, compiled once per process; None when an entry does not compile."""
    try:
        return tuple(re.compile(saved_expression(name)) for name in saved)
    except re.error:
        return None


def named_parameters(arch: Architecture) -> tuple[tuple[str, int], ...]:
    """(HF parameter name, numel) for the decoder, in the family's module paths (``families.Family``): what
    ``unfrozen_parameters`` regexes are matched against. The MLP's routed experts are listed as Linears, which
    transformers 5 no longer names that way; ``names_checked`` says when the names are the real ones. Listed once
    per architecture (``unfrozen_parameters`` and ``lora_modules_to_save`` are matched against them per estimate)."""
    cached = arch.memos.get("named_parameters")
    if cached is None:
        cached = arch.memos["named_parameters"] = tuple(_list_parameters(arch))
    return cached


def _list_parameters(arch: Architecture) -> Iterator[tuple[str, int]]:
    """``named_parameters``, one by one: the embeddings, each layer's (``_layer_parameters`` of its kind, under
    the layer's path), the multi-token-prediction layers', the final norm and the head."""
    yield from _embedding_parameters(arch)
    per_kind = [tuple(_layer_parameters(arch, layers[0])) for layers in arch.kind_layers]
    for layer, kind in enumerate(arch.layer_kinds):
        prefix = _layer_prefix(arch, layer)
        for name, numel in per_kind[kind]:
            yield f"{prefix}.{name}", numel
    yield from _mtp_parameters(arch)
    yield from _output_parameters(arch)


def _mtp_parameters(arch: Architecture) -> Iterator[tuple[str, int]]:
    """The multi-token-prediction layers' parameters (``Family.mtp``): each layer 0's (``_layer_parameters``), the
    input projection's weight (2h -> h, no bias) and its own norms."""
    mtp, h = arch.layout.mtp, arch.hidden_size
    if not mtp:
        return
    tensors = ("weight", "bias")[: arch.tensors_per_norm]
    norms = ((f"{norm}.{tensor}", h) for norm in mtp.norm_names for tensor in tensors)
    inner = (*_layer_parameters(arch, 0), (f"{mtp.proj_name}.weight", 2 * h * h), *norms)
    for i in range(arch.mtp_layers):
        for name, numel in inner:
            yield f"{arch.decoder_path}.{mtp.module}.{i}.{name}", numel


def _layer_prefix(arch: Architecture, layer: int) -> str:
    """The module path of decoder layer ``layer`` (``model.layers.3``)."""
    return f"{arch.decoder_path}.{arch.layout.layer_path.format(layer=layer)}"


def _embedding_parameters(arch: Architecture) -> Iterator[tuple[str, int]]:
    f, root = arch.layout, arch.decoder_path
    yield f"{root}.{f.embed_name}.weight", arch.embedding_params
    if f.position_embed_name:
        yield f"{root}.{f.position_embed_name}.weight", arch.position_embedding_params
    p = arch.per_layer_input_size
    if p:  # Gemma 4's per-layer embeddings
        yield f"{root}.{f.per_layer_embed_name}.weight", arch.per_layer_table_params
        yield f"{root}.{f.per_layer_projection_name}.weight", arch.hidden_size * arch.num_layers * p
        yield f"{root}.{f.per_layer_projection_norm_name}.weight", p
    for name in f.stream_projection_names if arch.residual_streams > 1 else ():  # Gemma 3n's AltUp
        for i in range(arch.residual_streams - 1):
            yield f"{root}.{name}.{i}.weight", arch.hidden_size * arch.hidden_size
    n = arch.residual_streams
    if f.stream_head_name:  # DeepSeek-V4's hc_head
        yield f"{root}.{f.stream_head_name}.hc_fn", n * n * arch.hidden_size
        yield f"{root}.{f.stream_head_name}.hc_base", n
        yield f"{root}.{f.stream_head_name}.hc_scale", 1


def _layer_parameters(arch: Architecture, layer: int) -> Iterator[tuple[str, int]]:
    """(parameter name inside the layer, numel) of one decoder layer: its Linears' weights and biases, the other
    mixers' tensors, the qk-norms, a router's scales, the experts' score bias, attention sinks, MLA's latent norms
    (q_a_layernorm, kv_a_layernorm), a learned activation's scalars, the norms. The same for every layer of one
    kind (``Architecture.layer_kinds``)."""
    f, h = arch.layout, arch.hidden_size
    for name, lin in kind_modules(arch, arch.layer_kinds[layer]):
        yield f"{name}.weight", lin.count * lin.d_in * lin.d_out
        if lin.bias:
            yield f"{name}.bias", lin.count * lin.d_out
    attention = f.attention_module
    for shape in arch.mixer_shapes(layer):
        for name, numel in shape.others:
            yield f"{shape.module}.{name}", numel
        yield from shape.layer_others
    has_attention = arch.has_attention(layer)
    if arch.qk_norm and has_attention:
        full = arch.qk_norm == "full"
        yield f"{attention}.{f.qk_norm_names[0]}.weight", arch.q_dim if full else arch.layer_head_dim(layer)
        if not arch.kv_shared(layer):  # a kv-shared layer has no k_norm (Gemma 4)
            yield f"{attention}.{f.qk_norm_names[1]}.weight", arch.kv_dim if full else arch.layer_head_dim(layer)
    if f.router_scales and arch.is_moe_layer(layer):
        router = f.router_name.rsplit('.', 1)[0]
        yield f"{router}.scale", h
        yield f"{router}.per_expert_scale", arch.num_experts
    if f.expert_score_bias and arch.is_moe_layer(layer):
        yield f"{f.mlp_module}.{f.expert_score_bias}", arch.num_experts
    if f.attention_sinks and has_attention:
        yield f"{attention}.sinks", arch.num_heads
    if arch.is_mla and has_attention:  # DeepSeek's low-rank attention: RMSNorms over its two latents
        if arch.config.get("q_lora_rank"):
            yield f"{attention}.q_a_layernorm.weight", int(arch.config["q_lora_rank"])
        yield f"{attention}.kv_a_layernorm.weight", int(arch.config["kv_lora_rank"])
    for name in arch.activation_param_names if arch.layer_plan(layer).mlp == "dense" else ():
        yield f"{f.mlp_module}.act_fn.{name}", 1
    for norm in arch.layer_norm_names(layer):
        for tensor in ("weight", "bias")[: arch.tensors_per_norm]:
            yield f"{norm}.{tensor}", h


def _output_parameters(arch: Architecture) -> Iterator[tuple[str, int]]:
    """The final norm's and the head's parameters."""
    f, h = arch.layout, arch.hidden_size
    for tensor in ("weight", "bias")[: arch.tensors_per_norm]:
        yield f"{arch.decoder_path}.{f.final_norm_name}.{tensor}", h
    if arch.num_labels:
        yield f"{arch.head_name}.weight", arch.num_labels * h
        if arch.score_bias:
            yield f"{arch.head_name}.bias", arch.num_labels
        return
    if not arch.tie_word_embeddings:
        yield f"{f.lm_head_name}.weight", arch.vocab_size * h
    if flag(f.lm_head_bias, arch.config):
        yield f"{f.lm_head_name}.bias", arch.vocab_size


def names_checked(arch: Architecture) -> bool:
    """Whether ``named_parameters`` are the model's real names (a dense model of a known family, checked against
    transformers in tests/test_families.py), so that name patterns may be judged against them."""
    return arch.family is not None and not arch.is_moe and not arch.is_mla


def unfrozen_regex(pattern: str) -> re.Pattern[str] | None:
    """Axolotl's reading of one ``unfrozen_parameters`` entry (0.18.0 ``utils/freeze.py``, ``LayerNamePattern``): a
    trailing ``[a:b]`` index range is cut off, every ``.`` not followed by ``+`` is a literal dot, and the rest is
    matched with ``re.match`` (anchored at the start). None when it does not compile (``unfrozen_pattern_error``)."""
    compiled = _compile_unfrozen(pattern)
    return compiled if isinstance(compiled, re.Pattern) else None


def unfrozen_pattern_error(pattern: str) -> str | None:
    """The ``re.error`` that Axolotl's ``LayerNamePattern`` raises for ``pattern`` (``unfrozen_regex``'s reading),
    e.g. "missing ), unterminated subpattern at position 0"; None when it compiles."""
    compiled = _compile_unfrozen(pattern)
    return None if isinstance(compiled, re.Pattern) else str(compiled)


def _compile_unfrozen(pattern: str) -> re.Pattern[str] | re.error:
    ranged = re.match(r"^(.+)\[([0-9]*)(?::([0-9]*))?\]$", pattern)
    name = ranged.group(1) if ranged else pattern
    try:
        return re.compile(re.sub(r"\.(?!\+)", "\\.", name))
    except re.error as exc:
        return exc


@functools.cache
def _unfrozen_regexes(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(c for c in map(unfrozen_regex, patterns) if c is not None)


def is_unfrozen(name: str, patterns: tuple[str, ...]) -> bool:
    """Whether one of Axolotl's ``unfrozen_parameters`` patterns (``unfrozen_regex``) names the parameter ``name``."""
    return any(c.match(name) for c in _unfrozen_regexes(patterns))


def unfrozen_names(arch: Architecture) -> tuple[tuple[str, int], ...]:
    """(parameter name, numel) that ``unfrozen_parameters`` patterns are matched against: the decoder's
    (``named_parameters``) and the vision or audio tower's and projector's that axlint names
    (``Vision.named_parameters``); once per architecture."""
    cached = arch.memos.get("unfrozen_names")
    if cached is None:
        tower = arch.vision_part.named_parameters() if arch.vision_part else ()
        cached = arch.memos["unfrozen_names"] = (*named_parameters(arch), *tower)
    return cached


def unfrozen_params(arch: Architecture, patterns: tuple[str, ...]) -> int:
    """Params whose name matches one of Axolotl's ``unfrozen_parameters`` patterns (``is_unfrozen``,
    ``unfrozen_names``); once per architecture and patterns."""
    memo = arch.memos.setdefault("unfrozen_params", {})
    if patterns not in memo:
        memo[patterns] = sum(n for name, n in unfrozen_names(arch) if is_unfrozen(name, patterns))
    return memo[patterns]


UNFROZEN_LITERAL_END = re.compile(r"[*+?\[\](){}|^$\\]")
"""Where the literal start of an ``unfrozen_parameters`` pattern ends: its first regular-expression character (a dot
is a literal dot in Axolotl's reading, ``unfrozen_regex``)."""


def unmatched_unfrozen(arch: Architecture, patterns: tuple[str, ...]) -> list[str]:
    """The ``unfrozen_parameters`` entries that match no parameter of the model (``unfrozen_names``). A pattern
    whose literal start lies inside a tower whose parameters axlint names only partly (``Vision.partly_named_roots``)
    is not judged; a pattern that does not compile is AX242's (``unfrozen_pattern_error``)."""
    names = [name for name, _ in unfrozen_names(arch)]
    roots = tuple(f"{root}." for root in arch.vision_part.partly_named_roots()) if arch.vision_part else ()
    return [p for p in patterns if (c := unfrozen_regex(p)) is not None and not any(c.match(n) for n in names)
            and not (roots and UNFROZEN_LITERAL_END.split(p, maxsplit=1)[0].startswith(roots))]


def unmatched_lora_targets(arch: Architecture, targets: tuple[str, ...]) -> list[str]:
    """The ``lora_target_modules`` names that are neither a module path nor a ``.``-separated suffix of one, in any
    layer (PEFT's matching of a list). Every module counts, the containers too (``mlp``, ``self_attn``: PEFT matches
    them and then refuses them for their type: AX239), and the norms, embed_tokens and lm_head. A name PEFT
    turns into a routed-expert parameter (``peft_targets.convert_targets``) matches the experts."""
    moved = set(convert_targets(arch.model_type, targets).moved) if arch.is_moe else set()
    unmatched = [t for t in targets if t not in moved and (_has_index(t) or t not in _plain_suffixes(arch))]
    if any(_has_index(t) for t in unmatched):
        every = _suffixes(module_paths(arch))
        return [t for t in unmatched if t not in every]
    return unmatched


PEFT_MAMBA_TYPES = frozenset({"falcon_h1", "mamba", "mamba2", "falcon_mamba"})
PEFT_MAMBA_REFUSED = frozenset({"out_proj", "conv1d"})
"""PEFT 0.19.1 refuses LoRA on a module of one of these names in a model of one of these types (``tuners/
tuners_utils.py`` ``_check_lora_target_modules_mamba``)."""


def refused_lora_targets(arch: Architecture, targets: Iterable[str]) -> list[tuple[str, str, str]]:
    """(target, a module path it reaches, what that module is) for each LoRA target name (a list entry, or a name
    ``lora_target_linear`` adds) on which PEFT 0.19.1 stops the launch while it wraps the model. PEFT matches a name
    against every module path (equal, or the end of the path after a dot) and wraps only ``nn.Linear``,
    ``nn.Embedding``, ``nn.Conv1d/2d/3d``, transformers' ``Conv1D`` and ``nn.MultiheadAttention`` (``tuners/lora/
    model.py`` ``_create_new_module``): any other module a name reaches raises ``ValueError: Target module ... is not
    supported``. What it is: "layer" (a whole layer: a name that is a layer index), "container" (a module holding
    other modules: ``mlp``, ``self_attn``), "norm", "experts" (transformers 5's routed experts, 3-D parameters), or
    "mamba" (``PEFT_MAMBA_REFUSED`` in a ``PEFT_MAMBA_TYPES`` model), or "router" (a router that returns a tuple,
    ``Family.router_returns_tuple``: PEFT wraps it, and the run stops at its first forward pass instead, with
    ``AttributeError: 'tuple' object has no attribute 'dtype'`` from the LoRA layer). Names PEFT turns into expert
    parameters (``peft_targets.convert_targets``) are left to that conversion; a router that is not an
    ``nn.Linear`` is not judged."""
    mamba = arch.model_type in PEFT_MAMBA_TYPES
    linear = set(linear_names(arch))
    router = arch.layout.router_name.rsplit(".", 1)[-1] if arch.layout.router_returns_tuple else None
    targets = tuple(t for t in targets if (last := t.rsplit(".", 1)[-1]) not in linear or last.isdigit()
                    or last == router or (mamba and last in PEFT_MAMBA_REFUSED))  # a Linear's name reaches it
    if not targets:
        return []
    moved = set(convert_targets(arch.model_type, targets).moved) if arch.is_moe else set()
    by_leaf = _refused_modules(arch)
    out = []
    for target in targets:
        found = next(((path, what) for path, what in by_leaf.get(target.rsplit(".", 1)[-1], ())
                      if path == target or path.endswith("." + target)), None)
        if found and target not in moved:
            out.append((target, *found))
    return out


def _refused_modules(arch: Architecture) -> dict[str, tuple[tuple[str, str], ...]]:
    """The modules ``refused_lora_targets`` stops on, by their last name: (path, what), in the first layer of each
    kind and outside the layers (every layer's own path among them). Built once per architecture."""
    cached = arch.memos.get("refused_modules")
    if cached is not None:
        return cached
    paths, wrapped, unjudged, tuple_routers = set(_outer_paths(arch)), set(), set(), set()
    for kind, layers in enumerate(arch.kind_layers):
        paths.update(f"{_layer_prefix(arch, layers[0])}.{path}" for path in _kind_paths(arch)[kind])
    for path, lin, outside in _linear_paths(arch):  # the experts' module is refused below
        if arch.layout.router_returns_tuple and not outside and lin.name == arch.layout.router_name:
            tuple_routers.add(path)
        else:
            (unjudged if lin.router else wrapped).add(path)
    wrapped.update(name.rsplit(".", 1)[0] for name, _ in _embedding_parameters(arch))
    wrapped.add(arch.head_name)
    holders = {path.rpartition(".")[0] for path in paths}
    mamba = arch.model_type in PEFT_MAMBA_TYPES
    found: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(paths):
        leaf = path.rsplit(".", 1)[-1]
        if mamba and leaf in PEFT_MAMBA_REFUSED:
            what = "mamba"
        elif path in tuple_routers:
            what = "router"
        elif path in wrapped or path in unjudged or f"{path}.linear" in wrapped:  # Gemma 4's clippable Linears
            continue
        elif path in holders or leaf.isdigit():  # only the first layer of each kind lists its modules
            what = "layer" if leaf.isdigit() else "container"
        elif leaf == "experts":
            what = "experts"
        elif leaf in ("conv1d", "conv"):  # convolutions PEFT wraps
            continue
        else:
            what = "norm"
        found.setdefault(leaf, []).append((path, what))
    cached = arch.memos["refused_modules"] = {leaf: tuple(v) for leaf, v in found.items()}
    return cached


def _plain_suffixes(arch: Architecture) -> frozenset[str]:
    """Every ``.``-separated suffix without an index part of every module path: the targets without an index that
    match something. Such a suffix of a path inside a layer lies after the layer's index, the same in every layer of
    one kind, so one layer of each kind is read. Built once per architecture."""
    cached = arch.memos.get("plain_suffixes")
    if cached is None:
        paths = {*_outer_paths(arch), *(f"{_layer_prefix(arch, layers[0])}.{path}"
                                        for layers, kind_paths in zip(arch.kind_layers, _kind_paths(arch))
                                        for path in kind_paths)}
        cached = arch.memos["plain_suffixes"] = frozenset(
            suffix for suffix in _suffixes({_after_index(p) for p in paths}) if not _has_index(suffix))
    return cached


@functools.lru_cache(maxsize=None)
def _has_index(name: str) -> bool:
    """Whether a module or parameter name names a layer (one of its ``.``-separated parts is a number); asked of
    the same few target names by every estimate."""
    return any(part.isdigit() for part in name.split("."))


def _after_index(path: str) -> str:
    """The part of a module path after its last index component (``model.layers.3.mlp.up_proj`` -> ``mlp.up_proj``):
    layers of one kind share it, so checking a target without an index against these is checking every layer."""
    parts = path.split(".")
    last = max((i for i, part in enumerate(parts) if part.isdigit()), default=-1)
    return ".".join(parts[last + 1:]) if last < len(parts) - 1 else path


def _suffixes(paths: Iterable[str]) -> set[str]:
    """Every ``.``-separated suffix of every path (PEFT's list matching: equal, or ending in ``.`` + the name)."""
    return {".".join(parts[i:]) for parts in (p.split(".") for p in paths) for i in range(len(parts))}


def head_trains(arch: Architecture, setup: TrainSetup) -> bool:
    """The output head's weight gets a gradient: a full fine-tune, an adapter that lists the head in
    ``modules_to_save`` (a classification head's score always trains), or an ``unfrozen_parameters`` pattern that
    matches the head's weight (the embedding's, when they are tied)."""
    if setup.adapter in ("lora", "qlora"):
        return bool(arch.num_labels) or arch.head_name in setup.modules_to_save
    if setup.unfrozen_parameters:
        tied = f"{arch.decoder_path}.{arch.layout.embed_name}.weight"
        names = [f"{arch.head_name}.weight"] + ([tied] if arch.tie_word_embeddings else [])
        return any(is_unfrozen(name, setup.unfrozen_parameters) for name in names)
    return True


def upcast_params(arch: Architecture, setup: TrainSetup) -> int:
    """The parameters kept in fp32 with the embeddings (``TrainSetup.embeddings_fp32``; 0 otherwise): the input
    embedding V·h, and lm_head's V·h unless it is tied to it or a classification head replaces it (Axolotl casts the
    modules named embed_tokens and lm_head). The norms are cast too; their h-sized weights are not counted."""
    if not setup.embeddings_fp32:
        return 0
    head = 0 if arch.tie_word_embeddings or arch.num_labels else arch.vocab_size * arch.hidden_size
    return arch.embedding_params + head


def upcast_trained(arch: Architecture, setup: TrainSetup) -> int:
    """Of ``upcast_params``, those that get a gradient: all in a full fine-tune; under ``unfrozen_parameters`` the
    embedding when a pattern matches its weight and the untied lm_head when ``head_trains``."""
    if not setup.embeddings_fp32:
        return 0
    if not setup.unfrozen_parameters:
        return upcast_params(arch, setup)
    head = upcast_params(arch, setup) - arch.embedding_params
    embed = f"{arch.decoder_path}.{arch.layout.embed_name}.weight"
    return ((arch.embedding_params if is_unfrozen(embed, setup.unfrozen_parameters) else 0)
            + (head if head and head_trains(arch, setup) else 0))


def token_layers(arch: Architecture, tokens: tuple[tuple[str, int], ...]) -> dict[str, int] | None:
    """Which of "embedding" and "output" (the output projection) PEFT's trainable tokens wrap for ``tokens``
    (``TrainSetup.trainable_tokens``: layer name, tokens; PEFT 0.19.1 tuners/trainable_tokens), each with the tokens
    it trains itself (0: it follows the embedding's, as a tied output projection does); None when a written layer
    name is neither (PEFT matches a name as the end of a module path). A list as written (the name "") is the input
    embedding's, and a tied output projection follows it."""
    f = arch.layout
    paths = {"embedding": f"{arch.decoder_path}.{f.embed_name}", "output": f.lm_head_name}
    wrapped: dict[str, int] = {}
    for name, count in tokens:
        found = [part for part, path in paths.items() if name == "" and part == "embedding"
                 or name and (path == name or path.endswith(f".{name}"))]
        if not found:
            return None
        wrapped[found[0]] = wrapped.get(found[0], 0) + count
    if "embedding" in wrapped and arch.tie_word_embeddings:
        wrapped.setdefault("output", 0)
    return wrapped


TOKEN_LAYER_ADDS = ("tokens", "special_tokens", "added_tokens_overrides", "resize_token_embeddings_to_32x")
"""Settings with which Axolotl may resize the embeddings before PEFT wraps the model: the rows are then not known."""


def token_layer_refusal(arch: Architecture, lora: Lora, resized: bool) -> tuple[str, str, str] | None:
    """The first layer of ``peft_trainable_token_indices`` (``Lora.trainable_tokens``; a list as written is the input
    embedding's, named "") that PEFT 0.19.1 refuses, as (the name as written, what it reaches, PEFT's error); None
    where PEFT wraps them all. PEFT looks the names up first, and names that are neither a module path nor a
    ``.``-suffix of one stop it (``unmatched_lora_targets``: the same matching as LoRA's targets). It then wraps each
    module a name reaches in a ``TrainableTokensLayer`` (tuners/trainable_tokens/layer.py), which refuses a module
    that already carries a LoRA adapter (``lora_paths``), reads the ``weight`` and ``in_features`` of anything but an
    ``nn.Embedding`` (a norm or a container has neither), and copies the listed rows of the weight, so that an index
    past its last row stops it; not judged where the embeddings may be resized first (``resized``). Checked on a
    small Llama through Axolotl 0.18.0's ``_build_peft_lora_config`` in tests/test_oracle_lora_targets.py."""
    names = tuple(name for name, _ in lora.trainable_tokens if name)
    missing = unmatched_lora_targets(arch, names)
    if missing:
        listed = ", ".join(repr(name) for name in missing)
        return (missing[0], "no module of this model",
                f"ValueError: Target modules {{{listed}}} not found in the base model")
    embedding = f"{arch.decoder_path}.{arch.layout.embed_name}"
    rows = {path: lin.d_out for path, lin in _model_linears(arch)}
    rows |= {embedding: arch.vocab_size, arch.layout.lm_head_name: arch.vocab_size}
    adapted = set(lora_paths(arch, lora))
    for name, indices in lora.trainable_tokens:
        for path in [embedding] if not name else reached_paths(arch, (name,), False):
            if path in adapted:
                kind = "Embedding" if path == embedding else "Linear"
                return (name, f"`{path}`, which carries a LoRA adapter",
                        f"TypeError: trainable_token_indices cannot be applied to modules of type <class "
                        f"'peft.tuners.lora.layer.{kind}'>")
            if path not in rows:
                return (name, f"`{path}`, which is neither an embedding nor a Linear layer",
                        "AttributeError: ... object has no attribute 'weight' (or 'in_features')")
            past = [i for i in indices if i >= rows[path]]
            if past and not resized:
                return (name, f"`{path}`, whose weight has {rows[path]} rows, at index {past[0]}",
                        f"IndexError: index {past[0]} is out of bounds for dimension 0 with size {rows[path]}")
    return None


def trainable_token_params(arch: Architecture, setup: TrainSetup) -> int:
    """The rows PEFT's trainable tokens train (``token_layers``): h per token of each wrapped layer."""
    if setup.adapter not in ("lora", "qlora"):
        return 0
    return sum((token_layers(arch, setup.trainable_tokens) or {}).values()) * arch.hidden_size


def trainable(arch: Architecture, setup: TrainSetup) -> Trainable:
    """Under a classification head Axolotl gives PEFT ``task_type`` SEQ_CLS / TOKEN_CLS (0.18.0
    loaders/adapter.py ``_get_peft_task_type``), and PEFT's PeftModelFor{Sequence,Token}Classification add
    ``classifier`` / ``score`` to ``modules_to_save``: the score head trains in full beside the adapter. A
    multimodal model's parameters that ``freeze_mm_modules`` freezes do not train; those a step never reaches
    (``idle_split``) get no gradient, so torch's optimizers keep no state for them, except under DeepSpeed and FSDP,
    whose flat gradient and state buffers cover every trainable parameter."""
    mm = idle_split(arch, setup)
    held = setup.sharding.kind in (ShardingKind.DEEPSPEED, ShardingKind.FSDP)  # flat buffers: idle ones too
    idle_base, idle_adapter = (0, 0) if held else (mm.idle_base, mm.idle_adapter)
    if setup.adapter in ("lora", "qlora"):
        saved = modules_to_save_params(arch, setup)
        if arch.num_labels and arch.head_name not in setup.modules_to_save:
            saved += arch.lm_head_params
        return Trainable(lora_params(arch, setup) + target_parameter_lora_params(arch, setup)
                         + trainable_token_params(arch, setup) - mm.frozen_adapter,
                         saved, untrained_expert_adapter_params(arch, setup), idle_adapter)
    if setup.unfrozen_parameters:
        return Trainable(0, unfrozen_params(arch, setup.unfrozen_parameters) - mm.frozen_base, idle_base=idle_base)
    return Trainable(0, arch.total_params - mm.fixed - mm.frozen_base, idle_base=idle_base)


def module_paths(arch: Architecture) -> tuple[str, ...]:
    """Every module path a regex ``lora_target_modules`` is matched against (PEFT ``re.fullmatch``): the decoder's
    Linears and containers, its norms, embed_tokens and lm_head, a vision tower's Linears, the multi-token-prediction
    layers' modules. Routed experts are the
    one ``experts`` module that holds their 3-D parameters (transformers 5). Built once per architecture (the MEM011
    checks and every solver estimate with modules_to_save ask for them), each layer from its kind's
    ``_kind_paths``."""
    cached = arch.memos.get("module_paths")
    if cached is None:
        outer, per_kind = _outer_paths(arch), _kind_paths(arch)
        paths = set(outer)
        for layer, kind in enumerate(arch.layer_kinds):
            prefix = _layer_prefix(arch, layer)
            paths.update(f"{prefix}.{path}" for path in per_kind[kind])
        cached = arch.memos["module_paths"] = tuple(sorted(paths))
    return cached


@functools.lru_cache(maxsize=None)
def _index_regexes(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, ...]:
    """PEFT 0.19.1's layer-index expressions (``check_target_module_exists``), in PEFT's order: one per
    ``layers_pattern`` name (``facts.layer_index_expression``; None for a name that is no regular expression), else
    the last ``.<name>.<digits>.``."""
    return tuple(_compiled(layer_index_expression(p)) for p in patterns) or (re.compile(r".*\.[^.]*\.(\d+)\."),)


def _compiled(expression: str) -> re.Pattern[str] | None:
    try:
        return re.compile(expression)
    except re.error:
        return None


def peft_layer_index(path: str, patterns: tuple[str, ...] = ()) -> int | None:
    """The layer index PEFT 0.19.1 (tuners/tuners_utils.py ``check_target_module_exists``) reads off a module path
    for ``layers_to_transform``: the digits after the last ``.<name>.`` that a dot follows, or, with
    ``layers_pattern``, after the first of its names that matches, tried in order; None when there is none (PEFT
    then does not adapt the module) or a name that does not compile comes first (PEFT raises there: AX239)."""
    for regex in _index_regexes(patterns):
        match = regex.match(path) if regex is not None else None
        if regex is None or match is not None:
            return int(match.group(1)) if match is not None else None
    return None


def in_lora_layers(path: str, setup: TrainSetup) -> bool:
    """Whether ``peft_layers_to_transform`` (``TrainSetup.lora_layers``) lets PEFT adapt the module at ``path``."""
    if setup.lora_layers is None:
        return True
    indexes, patterns = setup.lora_layers
    return peft_layer_index(path, patterns) in indexes


def peft_layer_indexes(arch: Architecture, patterns: tuple[str, ...] = ()) -> frozenset[int] | None:
    """The layer indexes PEFT reads off the model's module paths (``peft_layer_index``): a ``layers_to_transform``
    entry outside them adapts nothing. None when a pattern is no regular expression. Once per architecture and
    patterns."""
    memo = arch.memos.setdefault("peft_layer_indexes", {})
    if patterns not in memo:
        memo[patterns] = None if None in _index_regexes(patterns) else frozenset(
            index for path in module_paths(arch) if (index := peft_layer_index(path, patterns)) is not None)
    return memo[patterns]


def regex_leaf_names(arch: Architecture, pattern: str, old_names: Iterable[str]) -> tuple[str, ...]:
    """PEFT 0.20 (Axolotl 0.19.0's pin) ``_resolve_string_target_modules`` for a regex ``target_modules`` on a model
    it converts: the last names of the module paths the regex fullmatches, and each old expert name (``old_names``)
    whose transformers 4 path, ``<experts>.<old name>``, it would fullmatch. Empty when it does not compile or matches
    nothing (PEFT then keeps the regex)."""
    compiled = _target_regex(pattern)
    if compiled is None:
        return ()
    matched = {path.rsplit(".", 1)[-1] for path in module_paths(arch) if compiled.fullmatch(path)}
    containers = {path.rsplit(".", 1)[0] for layer in range(arch.num_layers) for path, _ in expert_parameters(arch, layer)}
    matched |= {old for old in old_names if any(compiled.fullmatch(f"{c}.{old}") for c in containers)}
    return tuple(sorted(matched))


def _outer_paths(arch: Architecture) -> frozenset[str]:
    """The module paths outside the decoder layers' own modules: the layers' paths and the modules that hold them
    (``model``, ``model.layers``, ``model.layers.3``), the embeddings, the final norm, the head, the vision
    tower, the multi-token-prediction layers. Built once per architecture."""
    cached = arch.memos.get("outer_paths")
    if cached is None:
        cached = arch.memos["outer_paths"] = frozenset(_prefixes(_outer_leaves(arch)))
    return cached


def _outer_leaves(arch: Architecture) -> list[str]:
    """The outermost module paths of ``_outer_paths``, before the modules that hold them are added."""
    kind_paths = _kind_paths(arch)
    leaves = [_layer_prefix(arch, layer) for layer, kind in enumerate(arch.layer_kinds) if kind_paths[kind]]
    leaves += [name.rsplit(".", 1)[0] for name, _ in (*_embedding_parameters(arch), *_output_parameters(arch))]
    if arch.tie_word_embeddings:  # the tied lm_head of ``_decoder_params``
        leaves.append(arch.layout.lm_head_name)
    leaves += [name for name, _ in _vision_modules(arch)]
    leaves += [name.rsplit(".", 1)[0] for name, _ in _mtp_parameters(arch)]
    return leaves


def _kind_paths(arch: Architecture) -> tuple[frozenset[str], ...]:
    """Per layer kind, the module paths inside one of its layers (``self_attn``, ``self_attn.q_proj``,
    ``input_layernorm``): its Linears (the routed experts as their ``experts`` module) and the modules that hold its
    other parameters, with their containers. Built once per architecture."""
    cached = arch.memos.get("kind_paths")
    if cached is None:
        out = []
        for kind, layers in enumerate(arch.kind_layers):
            modules = kind_modules(arch, kind)
            experts = {name for name, lin in modules if lin.expert}
            leaves = [name.rsplit(".", 1)[0] if lin.expert else name for name, lin in modules]
            leaves += [owner for name, _ in _layer_parameters(arch, layers[0])
                       if (owner := name.rpartition(".")[0]) and owner not in experts]
            out.append(frozenset(_prefixes(leaves)))
        cached = arch.memos["kind_paths"] = tuple(out)
    return cached


def _prefixes(paths: Iterable[str]) -> set[str]:
    """Every path and the paths of the modules that hold it (``a.b.c``: ``a``, ``a.b``, ``a.b.c``). A path already
    in the set brought its holders with it, so each path stops at the first one there (the sibling paths of a tower's
    layers share all but their last part)."""
    out: set[str] = set()
    for path in paths:
        while path not in out:
            out.add(path)
            if "." not in path:
                break
            path = path.rpartition(".")[0]
    return out


def regex_matches_nothing(arch: Architecture, pattern: str) -> bool:
    """A regex ``lora_target_modules`` that fullmatches no module path (one that does not compile is AX239's)."""
    compiled = _target_regex(pattern)
    if compiled is None:
        return False
    return not any(compiled.fullmatch(path) for path in module_paths(arch))

