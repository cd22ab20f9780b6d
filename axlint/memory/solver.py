"""Search the memory knobs for the fastest configuration that fits, and the (micro batch × sequence) fit grid.

Knobs: gradient checkpointing, Liger FLCE / Cut Cross-Entropy (when the model type is patched), attention
backend, micro batch lowered with gradient_accumulation_steps raised by the same factor (same effective batch),
ZeRO stage, optimizer / parameter offload.

Cost model (relative step time of the same effective batch; throughput = 1 / Π step-time factors × utilisation):
  gradient checkpointing ×4/3 (one more forward; backward ≈ 2 forwards); offloaded checkpoints ×1.45
  Liger FLCE / CCE ×1.0 (memory-bound kernels replaced, no extra FLOPs)
  eager -> flash attention ×0.85
  ZeRO stage 0/1 ×1.0, 2 ×1.02, 3 ×1.15; optimizer offload ×1.6; parameter offload ×2.5
  micro batch of T tokens: utilisation ∝ T / (T + 1024) — smaller micro batches use the GPU less well
A configuration fits when max(train, eval) peak_device ≤ (1 − 5 %) × GPU memory.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from axlint.architectures import Architecture
from axlint.hardware import Hardware
from axlint.memory import constants as C
from axlint.memory.estimate import MemoryEstimate, estimate_setup
from axlint.memory.liger_models import cce_supports, liger_supports
from axlint.memory.setup import CCE_PLUGIN, LIGER_PLUGIN, Sharding, TrainSetup, read_setup

STOCK_ZERO3 = "deepspeed_configs/zero3_bf16.json"


@dataclass(frozen=True)
class Suggestion:
    """A set of edits: ``changes`` to Axolotl keys, ``ds_changes`` to dotted DeepSpeed key paths."""

    changes: dict[str, Any]
    ds_changes: dict[str, Any]
    peak_gib: float
    saving_gib: float
    relative_throughput: float
    description: str

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
    """One knob setting: how it changes the setup, the edits, its step-time factor and a phrase."""

    setup_changes: Mapping[str, Any]
    changes: Mapping[str, Any] = field(default_factory=dict)
    ds_changes: Mapping[str, Any] = field(default_factory=dict)
    step_time: float = 1.0
    phrase: str = ""


_KEEP = _Option({})


def _utilisation(tokens: int) -> float:
    return tokens / (tokens + C.UTILISATION_HALF_TOKENS)


def _checkpointing_options(s: TrainSetup) -> list[_Option]:
    if s.gradient_checkpointing:
        return [_KEEP]
    return [_KEEP, _Option({"gradient_checkpointing": True}, {"gradient_checkpointing": True},
                           step_time=C.GC_STEP_TIME, phrase="turn on gradient checkpointing")]


def _loss_options(s: TrainSetup, arch: Architecture, plugins: list[str]) -> list[_Option]:
    if s.loss in ("liger_flce", "cce"):
        return [_KEEP]
    if liger_supports(arch.model_type):
        return [_KEEP, _Option({"loss": "liger_flce"},
                               {"plugins": sorted({*plugins, LIGER_PLUGIN}), "liger_fused_linear_cross_entropy": True},
                               phrase="use Liger's fused linear cross-entropy")]
    if cce_supports(arch.model_type):
        return [_KEEP, _Option({"loss": "cce"}, {"plugins": sorted({*plugins, CCE_PLUGIN}), "cut_cross_entropy": True},
                               phrase="use Cut Cross-Entropy")]
    return [_KEEP]


def _attention_options(s: TrainSetup) -> list[_Option]:
    if s.attention != "eager":
        return [_KEEP]
    return [_KEEP, _Option({"attention": "flash", "attn_implementation": "flash_attention_2"},
                           {"attn_implementation": "flash_attention_2"}, step_time=C.EAGER_TO_FLASH_STEP_TIME,
                           phrase="use flash_attention_2 instead of eager attention")]


def _micro_batch_options(s: TrainSetup) -> list[_Option]:
    out = [_KEEP]
    mbs, ga = s.micro_batch_size, s.gradient_accumulation_steps
    for new in range(mbs - 1, 0, -1):
        if mbs % new:
            continue
        factor = _utilisation(s.tokens) / _utilisation(new * s.sequence_len)
        out.append(_Option({"micro_batch_size": new, "gradient_accumulation_steps": ga * mbs // new},
                           {"micro_batch_size": new, "gradient_accumulation_steps": ga * mbs // new},
                           step_time=factor, phrase=f"micro_batch_size {mbs}->{new} with gradient_accumulation_steps "
                                                    f"{ga}->{ga * mbs // new}"))
    return out


def _zero_options(s: TrainSetup, arch: Architecture) -> list[_Option]:
    sh = s.sharding
    if sh.kind == "deepspeed":
        out = [_KEEP]
        for stage in range(sh.stage + 1, 4):
            out.append(_Option({"sharding": replace(sh, stage=stage)}, ds_changes={"zero_optimization.stage": stage},
                               step_time=C.ZERO_STEP_TIME[stage] / C.ZERO_STEP_TIME[sh.stage],
                               phrase=f"ZeRO stage {sh.stage}->{stage}"))
        if sh.stage >= 1 and not sh.offload_optimizer:
            out.append(_Option({"sharding": replace(sh, offload_optimizer=True)},
                               ds_changes={"zero_optimization.offload_optimizer.device": "cpu"},
                               step_time=C.OPTIMIZER_OFFLOAD_STEP_TIME, phrase="offload the optimizer to CPU"))
        if sh.stage == 3 and not sh.offload_param:
            out.append(_Option({"sharding": replace(sh, offload_optimizer=True, offload_param=True)},
                               ds_changes={"zero_optimization.offload_optimizer.device": "cpu",
                                           "zero_optimization.offload_param.device": "cpu"},
                               step_time=C.OPTIMIZER_OFFLOAD_STEP_TIME * C.PARAM_OFFLOAD_STEP_TIME,
                               phrase="offload the optimizer and the parameters to CPU"))
        return out
    if sh.kind == "ddp":  # Axolotl's stock ZeRO-3 config, "auto" buckets filled from hidden_size
        h = arch.hidden_size
        zero3 = Sharding("deepspeed", 3, sh.world, reduce_bucket=h * h, prefetch_bucket=0.9 * h * h,
                         max_live_parameters=0, persistence_threshold=10 * h, sub_group_size=0, overlap_comm=True)
        return [_KEEP, _Option({"sharding": zero3}, {"deepspeed": STOCK_ZERO3}, step_time=C.ZERO_STEP_TIME[3],
                               phrase=f"shard with DeepSpeed ZeRO-3 ({STOCK_ZERO3})")]
    return [_KEEP]


def _peak(e: MemoryEstimate) -> float:
    return max(e.peak_device, e.eval_peak_device)


def suggest(config: Mapping[str, Any], ds: Mapping[str, Any] | None, arch: Architecture, hw: Hardware, *,
            margin: float = C.SAFETY_MARGIN, limit: int = 5, expandable_segments: bool = False) -> list[Suggestion]:
    """Ranked edits that make the run fit within (1 − margin) of the GPU: best relative throughput first, then
    fewest edits. A combination is dropped when a subset of its edits already fits at least as fast."""
    setup = read_setup(config, ds, arch, hw)
    base = estimate_setup(setup, arch, hw, expandable_segments=expandable_segments)
    budget = hw.memory_gib * C.GIB * (1 - margin)
    plugins = [str(p) for p in (config.get("plugins") or [])]
    knobs = [_checkpointing_options(setup), _loss_options(setup, arch, plugins), _attention_options(setup),
             _micro_batch_options(setup), _zero_options(setup, arch)]
    found: list[tuple[frozenset, Suggestion]] = []
    for combo in itertools.product(*knobs):
        chosen = [o for o in combo if o is not _KEEP]
        if not chosen:
            continue
        new = setup
        for o in chosen:
            new = new.with_changes(**o.setup_changes)
        e = estimate_setup(new, arch, hw, expandable_segments=expandable_segments)
        if _peak(e) > budget:
            continue
        step_time = 1.0
        for o in chosen:
            step_time *= o.step_time
        changes = {k: v for o in chosen for k, v in o.changes.items()}
        ds_changes = {k: v for o in chosen for k, v in o.ds_changes.items()}
        key = frozenset(o.phrase for o in chosen)
        found.append((key, Suggestion(changes, ds_changes, round(_peak(e) / C.GIB, 2),
                                      round((_peak(base) - _peak(e)) / C.GIB, 2), round(1 / step_time, 3),
                                      "; ".join(o.phrase for o in chosen))))
    kept = [s for key, s in found
            if not any(k < key and t.relative_throughput >= s.relative_throughput for k, t in found)]
    kept.sort(key=lambda s: (-s.relative_throughput, s.size))
    return kept[:limit]


@dataclass(frozen=True)
class FitGrid:
    """``peak_device_gib[i][j]`` for ``micro_batch_sizes[i]`` × ``sequence_lens[j]``; ``capacity_gib`` per GPU."""

    micro_batch_sizes: tuple[int, ...]
    sequence_lens: tuple[int, ...]
    peak_device_gib: tuple[tuple[float, ...], ...]
    capacity_gib: float

    def fits(self, i: int, j: int) -> bool:
        return self.peak_device_gib[i][j] <= self.capacity_gib


def fit_grid(config: Mapping[str, Any], ds: Mapping[str, Any] | None, arch: Architecture, hw: Hardware,
             micro_batch_sizes: tuple[int, ...] | list[int], sequence_lens: tuple[int, ...] | list[int], *,
             expandable_segments: bool = False) -> FitGrid:
    """Training peak_device_gib for every (micro_batch_size, sequence_len) pair, all else as configured."""
    setup = read_setup(config, ds, arch, hw)
    rows = tuple(
        tuple(round(estimate_setup(setup.with_changes(micro_batch_size=m, sequence_len=s), arch, hw,
                                   expandable_segments=expandable_segments).peak_device / C.GIB, 2)
              for s in sequence_lens)
        for m in micro_batch_sizes)
    return FitGrid(tuple(micro_batch_sizes), tuple(sequence_lens), rows, hw.memory_gib)
