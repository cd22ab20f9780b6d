"""Search the memory knobs for the fastest configuration that fits, and the (micro batch × sequence) fit grid.

Knobs: gradient checkpointing, Liger FLCE / Cut Cross-Entropy (when the model type is patched), attention
backend, micro batch lowered with gradient_accumulation_steps raised by the same factor (same effective batch),
ZeRO stage, optimizer / parameter offload, and a load that never holds the whole model on one GPU
(``memory.loading``).

Cost model (relative step time of the same effective batch; throughput = 1 / Π step-time factors × utilisation):
  gradient checkpointing ×4/3 (one more forward; backward ≈ 2 forwards); offloaded checkpoints ×1.45
  Liger FLCE / CCE ×1.0 (memory-bound kernels replaced, no extra FLOPs)
  eager -> flash attention ×0.85
  ZeRO stage 0/1 ×1.0, 2 ×1.02, 3 ×1.15; optimizer offload ×1.6; parameter offload ×2.5
  micro batch of T tokens: utilisation ∝ T / (T + 1024) — smaller micro batches use the GPU less well
A configuration fits when max(train, eval) required (what must stay resident, MemoryEstimate.required)
≤ (1 − 5 %) × GPU memory; the eval peak counts only when the run evaluates (``evaluates``), and a smaller
``eval_batch_size`` is one more knob (no training cost).

The other direction, ``relax``: memory savers a run that fits does not need (gradient checkpointing, ZeRO-3, CPU
offload), each dropped alone while the run still fits within a wider margin.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from axlint.architectures import Architecture
from axlint.facts import (
    CCE_PLUGIN,
    LIGER_PLUGIN,
    Lora,
    LossKernel,
    Origin,
    RunFacts,
    Sharding,
    ShardingKind,
)
from axlint.hardware import Hardware
from axlint.memory import constants as C
from axlint.memory.estimate import MemoryEstimate, estimate_setup
from axlint.memory.knobs import Change, Knob, Saver, Step
from axlint.memory.liger_models import cce_supports, liger_supports
from axlint.memory.loading import load_remedy
from axlint.memory.params import linear_names, unmatched_lora_targets
from axlint.memory.setup import TrainSetup, read_setup

STOCK_ZERO3 = "deepspeed_configs/zero3_bf16.json"
STOCK_ZERO3_OFFLOAD = "deepspeed_configs/zero3_bf16_cpuoffload_all.json"
SCALE_OUT_COUNTS = (2, 4, 8, 16, 32, 64)
"""GPU counts `scale_out` tries, of the kind the run has."""
# ``relax`` keeps 15 % of the GPU free: the estimate is within ±10–25 % of the calibration measurements
# (tests/test_memory_calibration.py), and dropping a memory saver must not talk a working run into an OOM.
RELAX_MARGIN = 0.15


@dataclass(frozen=True)
class Suggestion:
    """A set of edits: ``changes`` to Axolotl keys, ``ds_changes`` to dotted DeepSpeed key paths."""

    changes: dict[str, Any]
    ds_changes: dict[str, Any]
    peak_gib: float
    saving_gib: float
    relative_throughput: float
    steps: tuple[Step, ...]
    """What the suggestion changes, in the order the knobs were tried (``report.memory_text`` words them)."""
    host_gib: float = 0.0
    """CPU RAM the offloaded model states need, for all ranks of a node (0 without offload)."""

    @property
    def where(self) -> str:
        """"axolotl" | "deepspeed" | "both"."""
        if self.changes and self.ds_changes:
            return "both"
        return "deepspeed" if self.ds_changes else "axolotl"

    @property
    def size(self) -> int:
        return len(self.changes) + len(self.ds_changes)


@dataclass(frozen=True)
class _Option:
    """One knob setting: how it changes the setup, the edits, its step-time factor and the step it is."""

    setup_changes: Mapping[str, Any]
    changes: Mapping[str, Any] = field(default_factory=dict)
    ds_changes: Mapping[str, Any] = field(default_factory=dict)
    step_time: float = 1.0
    step: Step | None = None


_KEEP = _Option({})


def _utilisation(tokens: int) -> float:
    return tokens / (tokens + C.UTILISATION_HALF_TOKENS)


def _checkpointing_options(s: TrainSetup) -> list[_Option]:
    if s.gradient_checkpointing:
        return [_KEEP]
    return [_KEEP, _Option({"gradient_checkpointing": True}, {"gradient_checkpointing": True},
                           step_time=C.GC_STEP_TIME, step=Step(Change.CHECKPOINTING_ON))]


def _loss_options(s: TrainSetup, arch: Architecture, plugins: list[str]) -> list[_Option]:
    if s.loss in (LossKernel.LIGER_FLCE, LossKernel.CCE):
        return [_KEEP]
    if liger_supports(arch.model_type):
        return [_KEEP, _Option({"loss": LossKernel.LIGER_FLCE},
                               {"plugins": sorted({*plugins, LIGER_PLUGIN}), "liger_fused_linear_cross_entropy": True},
                               step=Step(Change.LIGER_FLCE))]
    if cce_supports(arch.model_type):
        return [_KEEP, _Option({"loss": LossKernel.CCE},
                               {"plugins": sorted({*plugins, CCE_PLUGIN}), "cut_cross_entropy": True},
                               step=Step(Change.CUT_CROSS_ENTROPY))]
    return [_KEEP]


def _attention_options(s: TrainSetup) -> list[_Option]:
    """flash_attention_2 in place of eager attention (no s² scores), or of sdpa where Axolotl keeps the embeddings
    in fp32 for it (``TrainSetup.embeddings_fp32``; flash attention has them cast back to bf16). sdpa and flash
    attention are taken to run a step in the same time."""
    if s.attention != "eager" and not s.embeddings_fp32:
        return [_KEEP]
    step_time = C.EAGER_TO_FLASH_STEP_TIME if s.attention == "eager" else 1.0
    return [_KEEP, _Option({"attention": "flash", "attn_implementation": "flash_attention_2"},
                           {"attn_implementation": "flash_attention_2"}, step_time=step_time,
                           step=Step(Change.FLASH_ATTENTION, s.attention))]


def _expert_options(s: TrainSetup, arch: Architecture, lora: Lora) -> list[_Option]:
    """Axolotl's ``quantize_moe_experts`` for a 4/8-bit LoRA whose routed experts stay in the load dtype (transformers
    5 quantizes nn.Linear modules only). Axolotl refuses it beside ``lora_target_linear`` (0.18.0
    utils/schemas/config.py ``check_quantize_moe_experts``), so where the config (``lora``, as written) sets that,
    the option also writes out what ``lora_target_linear`` adds, every Linear's name (``params.linear_names``),
    into ``lora_target_modules`` and turns ``lora_target_linear`` off: the same modules get adapters. A written
    name that matches no module (a string Axolotl hands PEFT as a name beside ``lora_target_linear``, which PEFT
    compares literally: MEM011) is left out of that list, since no module has it. Its cost in step time is not
    modelled (1.0)."""
    if not s.quantization or not arch.expert_params or s.quantize_experts:
        return [_KEEP]
    if not lora.target_linear:
        return [_KEEP, _Option({"quantize_experts": True}, {"quantize_moe_experts": True},
                               step=Step(Change.QUANTIZE_EXPERTS))]
    dead = set(unmatched_lora_targets(arch, lora.target_modules))
    listed = tuple(sorted({*(t for t in lora.target_modules if t not in dead), *linear_names(arch)}))
    modules = tuple(sorted({*(t for t in s.lora_target_modules if t not in dead), *linear_names(arch)}))
    return [_KEEP, _Option({"quantize_experts": True, "lora_target_linear": False, "lora_target_modules": modules},
                           {"quantize_moe_experts": True, "lora_target_linear": False,
                            "lora_target_modules": list(listed)},
                           step=Step(Change.QUANTIZE_EXPERTS, new=listed))]


MAX_MICRO_BATCH_OPTION = 1024
"""The largest micro batch the solver proposes."""


def _micro_batch_options(s: TrainSetup, eval_follows: bool) -> list[_Option]:
    """Divisors of the micro batch up to MAX_MICRO_BATCH_OPTION, accumulation raised to keep the effective batch;
    an unset eval_batch_size follows micro_batch_size (Axolotl's normalize_config). The bound keeps the search
    short whatever number is written (a micro batch of 10**29 has no divisor worth trying above it)."""
    out = [_KEEP]
    mbs, ga = s.micro_batch_size, s.gradient_accumulation_steps
    for new in range(min(mbs - 1, MAX_MICRO_BATCH_OPTION), 0, -1):
        if mbs % new:
            continue
        factor = _utilisation(s.tokens) / _utilisation(s.pair_factor * new * s.sequence_len)
        follow = {"eval_batch_size": new} if eval_follows else {}
        out.append(_Option({"micro_batch_size": new, "gradient_accumulation_steps": ga * mbs // new, **follow},
                           {"micro_batch_size": new, "gradient_accumulation_steps": ga * mbs // new},
                           step_time=factor, step=Step(Change.MICRO_BATCH, (mbs, ga), (new, ga * mbs // new))))
    return out


def eval_batch_candidates(eval_batch_size: int, micro_batch_size: int) -> list[int]:
    """Smaller eval batches to try, largest first: the train micro batch (when smaller) and successive halvings."""
    values = {micro_batch_size} if micro_batch_size < eval_batch_size else set()
    half = eval_batch_size // 2
    while half >= 1:
        values.add(half)
        half //= 2
    return sorted(values, reverse=True)


def _eval_batch_options(s: TrainSetup, evaluating: bool) -> list[_Option]:
    if not evaluating:
        return [_KEEP]
    return [_KEEP] + [_Option({"eval_batch_size": v}, {"eval_batch_size": v},
                              step=Step(Change.EVAL_BATCH, s.eval_batch_size, v))
                      for v in eval_batch_candidates(s.eval_batch_size, s.micro_batch_size)]


def _loading_options(s: TrainSetup, arch: Architecture) -> list[_Option]:
    """A load that never holds the whole model on one GPU (``memory.loading.load_remedy``), where the run has one:
    Answer.AI's shard-by-shard 4-bit load for a QLoRA under FSDP1, or Axolotl's default of not moving the model to
    every GPU first. Neither changes a training step (1.0)."""
    found = load_remedy(arch, s)
    if found is None:
        return [_KEEP]
    change = Change.SKIP_MOVE_TO_DEVICE if s.model_load.move_to_device else Change.SHARDED_QUANT_LOAD
    return [_KEEP, _Option({"model_load": found.load}, found.changes, step=Step(change))]


def _zero_options(s: TrainSetup, arch: Architecture) -> list[_Option]:
    sh = s.sharding
    if sh.kind is ShardingKind.DEEPSPEED:
        out = [_KEEP]
        for stage in range(sh.stage + 1, 4):
            out.append(_Option({"sharding": replace(sh, stage=stage)}, ds_changes={"zero_optimization.stage": stage},
                               step_time=C.ZERO_STEP_TIME[stage] / C.ZERO_STEP_TIME[sh.stage],
                               step=Step(Change.ZERO_STAGE, sh.stage, stage)))
        if sh.stage >= 1 and not sh.offload_optimizer:
            out.append(_Option({"sharding": replace(sh, offload_optimizer=True)},
                               ds_changes={"zero_optimization.offload_optimizer.device": "cpu"},
                               step_time=C.OPTIMIZER_OFFLOAD_STEP_TIME, step=Step(Change.OFFLOAD_OPTIMIZER)))
        if sh.stage == 3 and not sh.offload_param:
            out.append(_Option({"sharding": replace(sh, offload_optimizer=True, offload_param=True)},
                               ds_changes={"zero_optimization.offload_optimizer.device": "cpu",
                                           "zero_optimization.offload_param.device": "cpu"},
                               step_time=C.OPTIMIZER_OFFLOAD_STEP_TIME * C.PARAM_OFFLOAD_STEP_TIME,
                               step=Step(Change.OFFLOAD_ALL)))
        return out
    if sh.kind in (ShardingKind.DDP, ShardingKind.SINGLE):  # Axolotl's stock ZeRO-3 files, "auto" buckets filled
        h = arch.hidden_size                                    # from hidden_size
        zero3 = Sharding(ShardingKind.DEEPSPEED, 3, sh.world, reduce_bucket=h * h, prefetch_bucket=0.9 * h * h,
                         max_live_parameters=0, persistence_threshold=10 * h, sub_group_size=0, overlap_comm=True)
        offload = replace(zero3, offload_optimizer=True, offload_param=True)
        sharded = [_Option({"sharding": zero3}, {"deepspeed": STOCK_ZERO3}, step_time=C.ZERO_STEP_TIME[3],
                           step=Step(Change.STOCK_ZERO3, new=STOCK_ZERO3))] if sh.world > 1 else []
        return [_KEEP, *sharded,
                _Option({"sharding": offload}, {"deepspeed": STOCK_ZERO3_OFFLOAD},
                        step_time=C.ZERO_STEP_TIME[3] * C.OPTIMIZER_OFFLOAD_STEP_TIME * C.PARAM_OFFLOAD_STEP_TIME,
                        step=Step(Change.STOCK_ZERO3_OFFLOAD, new=STOCK_ZERO3_OFFLOAD))]
    return [_KEEP]


def _peak(e: MemoryEstimate, evaluating: bool) -> float:
    return max(e.required, e.eval_required) if evaluating else e.required


def _knobs(facts: RunFacts, setup: TrainSetup, arch: Architecture, evaluating: bool) -> dict[Knob, list[_Option]]:
    """The options of every knob, each list starting with "keep as is"."""
    return {Knob.GRADIENT_CHECKPOINTING: _checkpointing_options(setup),
            Knob.LOSS: _loss_options(setup, arch, list(facts.plugins)),
            Knob.ATTENTION: _attention_options(setup),
            Knob.MICRO_BATCH: _micro_batch_options(setup, facts.eval_batch_size.origin is Origin.DEFAULT),
            Knob.ZERO: _zero_options(setup, arch),
            Knob.EXPERTS: _expert_options(setup, arch, facts.lora),
            Knob.LOADING: _loading_options(setup, arch),
            Knob.EVAL_BATCH: _eval_batch_options(setup, evaluating)}


def _apply(setup: TrainSetup, chosen: list[_Option]) -> TrainSetup:
    for o in chosen:
        setup = setup.with_changes(**o.setup_changes)
    return setup


def _relative_throughput(chosen: list[_Option] | tuple[_Option, ...]) -> float:
    step_time = 1.0
    for o in chosen:
        step_time *= o.step_time
    return round(1 / step_time, 3)


def _suggestion(chosen: list[_Option], e: MemoryEstimate, base_peak: float, evaluating: bool) -> Suggestion:
    return Suggestion({k: v for o in chosen for k, v in o.changes.items()},
                      {k: v for o in chosen for k, v in o.ds_changes.items()},
                      round(_peak(e, evaluating) / C.GIB, 2), round((base_peak - _peak(e, evaluating)) / C.GIB, 2),
                      _relative_throughput(chosen), _steps(chosen),
                      round(_host_bytes(e) / C.GIB, 1))


def _steps(chosen: list[_Option]) -> tuple[Step, ...]:
    return tuple(o.step for o in chosen if o.step is not None)


def _host_bytes(e: MemoryEstimate) -> float:
    """CPU RAM the offloaded states take on one host: `cpu_offload` is the whole model's, spread over the world;
    a host holds the share of its ranks (up to GPUS_PER_NODE)."""
    world = max(1, e.setup.sharding.world)
    return e.cpu_offload * min(world, C.GPUS_PER_NODE) / world


def suggest(facts: RunFacts, arch: Architecture, hw: Hardware, *, margin: float = C.SAFETY_MARGIN, limit: int = 5,
            expandable_segments: bool = False, base: MemoryEstimate | None = None) -> list[Suggestion]:
    """Ranked edits that make the run fit within (1 − margin) of the GPU: best relative throughput first, then
    fewest edits. A combination is dropped when a subset of its edits already fits at least as fast, or when it
    offloads more to CPU RAM than the host has (`hw.host_memory_gib`, when known).

    The throughput of a combination is known before it is estimated, so combinations are tried fastest first and
    the search stops once ``limit`` suggestions are found and only slower combinations remain. ``base``: the run's
    own estimate (``estimate_memory`` with the same ``expandable_segments``) when the caller has it."""
    setup = base.setup if base is not None else read_setup(facts, arch)
    return _search(facts, setup, arch, hw, margin=margin, limit=limit, expandable_segments=expandable_segments,
                   base=base)


def _search(facts: RunFacts, setup: TrainSetup, arch: Architecture, hw: Hardware, *, margin: float, limit: int,
            expandable_segments: bool, base: MemoryEstimate | None = None) -> list[Suggestion]:
    """``suggest`` from ``setup``, whose estimate ``base`` is when given."""
    evaluating = facts.evaluates
    if base is None:
        base = estimate_setup(setup, arch, hw, expandable_segments=expandable_segments)
    base_peak = _peak(base, evaluating)
    budget = hw.memory_gib * C.GIB * (1 - margin)
    host = hw.host_memory_gib * C.GIB if hw.host_memory_gib else None
    knobs = _knobs(facts, setup, arch, evaluating)
    eval_options = knobs.pop(Knob.EVAL_BATCH)
    combos = sorted(([o for o in combo if o is not _KEEP] for combo in itertools.product(*knobs.values())),
                    key=lambda chosen: (-_relative_throughput(chosen), len(chosen)))
    found: list[tuple[frozenset, Suggestion]] = []
    kept: list[Suggestion] = []
    for combo in combos:
        if len(kept) >= limit and _relative_throughput(combo) < kept[limit - 1].relative_throughput:
            break
        for eval_option in eval_options:  # the largest eval batch that fits with this combination
            chosen = combo + ([eval_option] if eval_option is not _KEEP else [])
            if not chosen:
                continue
            e = estimate_setup(_apply(setup, chosen), arch, hw, expandable_segments=expandable_segments)
            if e.required > budget or (host is not None and _host_bytes(e) > host):
                break  # the eval batch changes neither the training peak nor the offload
            if _peak(e, evaluating) <= budget:
                key, s = frozenset(_steps(chosen)), _suggestion(chosen, e, base_peak, evaluating)
                if not any(k < key and t.relative_throughput >= s.relative_throughput for k, t in found):
                    kept.append(s)
                found.append((key, s))
                break
    kept.sort(key=lambda s: (-s.relative_throughput, s.size))
    return kept[:limit]


@dataclass(frozen=True)
class ScaleOut:
    """What fits when nothing on the given GPUs does: ``gpus`` of the same kind and the edits on top."""

    gpus: int
    suggestion: Suggestion


def scale_out(facts: RunFacts, arch: Architecture, hw: Hardware, *, margin: float = C.SAFETY_MARGIN,
              expandable_segments: bool = False) -> ScaleOut | None:
    """The fewest GPUs of this kind (``SCALE_OUT_COUNTS`` above the current count) on which the run fits, its model
    states sharded over them: ZeRO-3 (DeepSpeed's stock file for a run without DeepSpeed, the stage raised in a
    DeepSpeed run) or the run's own FSDP. A sharded run that fits there unchanged is taken as it is (with whatever
    offload it already writes); otherwise the fastest edit that makes it fit there without CPU offload."""
    setup = read_setup(facts, arch)
    for count in (n for n in SCALE_OUT_COUNTS if n > hw.count):
        kind = ShardingKind.DDP if setup.sharding.kind is ShardingKind.SINGLE else setup.sharding.kind
        wider = setup.with_changes(sharding=replace(setup.sharding, world=count, kind=kind))
        more = replace(hw, count=count)
        as_is = estimate_setup(wider, arch, more, expandable_segments=expandable_segments)
        if kind is setup.sharding.kind and _peak(as_is, facts.evaluates) <= more.memory_gib * C.GIB * (1 - margin):
            return ScaleOut(count, _suggestion([], as_is, _peak(as_is, facts.evaluates), facts.evaluates))
        found = [s for s in _search(facts, wider, arch, more, margin=margin, limit=5,
                                    expandable_segments=expandable_segments, base=as_is) if not s.host_gib]
        if found:
            return ScaleOut(count, found[0])
    return None


def single_knob_fixes(facts: RunFacts, arch: Architecture, hw: Hardware, *, margin: float = C.SAFETY_MARGIN,
                      base: MemoryEstimate | None = None) -> dict[Knob, Suggestion]:
    """For each knob, its fastest setting that alone brings the *training* peak within (1 − margin) of the GPU;
    for the eval batch, the largest eval batch that brings the *eval* peak there. ``base``: the run's own estimate
    (``estimate_memory`` without expandable segments) when the caller has it."""
    setup = base.setup if base is not None else read_setup(facts, arch)
    if base is None:
        base = estimate_setup(setup, arch, hw)
    budget = hw.memory_gib * C.GIB * (1 - margin)
    out: dict[Knob, Suggestion] = {}
    for name, options in _knobs(facts, setup, arch, evaluating=True).items():
        fitting = []
        for o in options[1:]:
            peak = _knob_peak(estimate_setup(_apply(setup, [o]), arch, hw), name)
            if peak <= budget:
                fitting.append(Suggestion(dict(o.changes), dict(o.ds_changes), round(peak / C.GIB, 2),
                                          round((_knob_peak(base, name) - peak) / C.GIB, 2), _relative_throughput([o]),
                                          _steps([o])))
        if fitting:
            out[name] = max(fitting, key=lambda s: s.relative_throughput)
    return out


def _knob_peak(e: MemoryEstimate, knob: Knob) -> float:
    return e.eval_required if knob is Knob.EVAL_BATCH else e.required


def _relax_options(s: TrainSetup) -> dict[Saver, _Option]:
    """Memory savers that cost speed, each with the option that drops it (its step-time factor below 1)."""
    out: dict[Saver, _Option] = {}
    if s.gradient_checkpointing:
        cost = C.ACT_OFFLOAD_STEP_TIME if s.offload_checkpoints else C.GC_STEP_TIME
        out[Saver.GRADIENT_CHECKPOINTING] = _Option({"gradient_checkpointing": False, "offload_checkpoints": False},
                                                {"gradient_checkpointing": False}, step_time=1 / cost,
                                                step=Step(Change.CHECKPOINTING_OFF))
    sh = s.sharding
    if sh.kind is ShardingKind.DEEPSPEED and sh.stage == 3 and not sh.offload_param:
        out[Saver.ZERO3] = _Option({"sharding": replace(sh, stage=2)}, ds_changes={"zero_optimization.stage": 2},
                               step_time=C.ZERO_STEP_TIME[2] / C.ZERO_STEP_TIME[3],
                               step=Step(Change.ZERO_STAGE, 3, 2))
    if sh.offload_optimizer or sh.offload_param:
        cost = C.OPTIMIZER_OFFLOAD_STEP_TIME * (C.PARAM_OFFLOAD_STEP_TIME if sh.offload_param else 1.0)
        ds_changes = {f"zero_optimization.{k}.device": "none" for k, on in
                      (("offload_optimizer", sh.offload_optimizer), ("offload_param", sh.offload_param)) if on}
        out[Saver.OFFLOAD] = _Option({"sharding": replace(sh, offload_optimizer=False, offload_param=False)},
                                 ds_changes=ds_changes if sh.kind is ShardingKind.DEEPSPEED else {}, step_time=1 / cost,
                                 step=Step(Change.STOP_OFFLOAD))
    return out


def relax(facts: RunFacts, arch: Architecture, hw: Hardware, *, margin: float = RELAX_MARGIN,
          base: MemoryEstimate | None = None) -> dict[Saver, Suggestion]:
    """Memory savers the run does not need (ZeRO-3 is dropped to ZeRO-2), each mapped
    to the edit that drops it alone when the run (eval included when it evaluates) still fits within
    (1 − margin) of the GPU. ``saving_gib`` is then negative: the memory the faster run takes in addition.
    ``base``: the run's own estimate (``estimate_memory`` without expandable segments) when the caller has it;
    nothing is estimated for a run without a saver to drop."""
    setup = base.setup if base is not None else read_setup(facts, arch)
    options = _relax_options(setup)
    if not options:
        return {}
    evaluating = facts.evaluates
    base_peak = _peak(base if base is not None else estimate_setup(setup, arch, hw), evaluating)
    budget = hw.memory_gib * C.GIB * (1 - margin)
    out: dict[Saver, Suggestion] = {}
    for name, option in options.items():
        e = estimate_setup(_apply(setup, [option]), arch, hw)
        if _peak(e, evaluating) <= budget:
            out[name] = _suggestion([option], e, base_peak, evaluating)
    return out


@dataclass(frozen=True)
class FitGrid:
    """``required_gib[i][j]`` (``MemoryEstimate.required``) for ``micro_batch_sizes[i]`` × ``sequence_lens[j]``;
    ``capacity_gib`` per GPU."""

    micro_batch_sizes: tuple[int, ...]
    sequence_lens: tuple[int, ...]
    required_gib: tuple[tuple[float, ...], ...]
    capacity_gib: float

    def fits(self, i: int, j: int) -> bool:
        return self.required_gib[i][j] <= self.capacity_gib


def fit_grid(facts: RunFacts, arch: Architecture, hw: Hardware,
             micro_batch_sizes: tuple[int, ...] | list[int], sequence_lens: tuple[int, ...] | list[int], *,
             expandable_segments: bool = False) -> FitGrid:
    """Training required_gib for every (micro_batch_size, sequence_len) pair, all else as configured."""
    setup = read_setup(facts, arch)
    rows = tuple(
        tuple(round(estimate_setup(setup.with_changes(micro_batch_size=m, sequence_len=s), arch, hw,
                                   expandable_segments=expandable_segments).required / C.GIB, 2)
              for s in sequence_lens)
        for m in micro_batch_sizes)
    return FitGrid(tuple(micro_batch_sizes), tuple(sequence_lens), rows, hw.memory_gib)
