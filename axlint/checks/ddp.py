"""Multi-GPU runs under plain DDP (no DeepSpeed, no FSDP) that stop in their first steps.

Axolotl 0.18.0 hands the HF Trainer ``ddp_find_unused_parameters=bool(cfg.ddp_find_unused_parameters)`` whenever
``cfg.ddp`` (``WORLD_SIZE`` > 1, ``utils/config/__init__.py``), so DDP starts with ``find_unused_parameters=False``
unless the YAML says true (``core/builders/causal.py``). Both failures below were reproduced with two processes of
the HF Trainer that Axolotl builds (transformers 5.14.1, torch 2.13, gloo) by tests/test_oracle_ddp.py, which also
holds that DeepSpeed ZeRO-1/2/3 and FSDP2 train past parameters without a gradient.
"""
from __future__ import annotations

from typing import Iterator

from axlint.checks.locate import ax_hit
from axlint.checks.targets import model_names_known
from axlint.facts import ShardingKind
from axlint.lax import lax_bool
from axlint.memory.facts import memory_facts
from axlint.rule import Hit, Rule, register_check
from axlint.run import TrainingRun

AUTO_UNUSED = frozenset({"gemma4", "gemma4_unified"})
"""Model types for which Axolotl itself turns ``ddp_find_unused_parameters`` on and reentrant checkpointing off
under DDP (0.18.0 ``utils/config/__init__.py``, ``normalize_config``)."""


def _plain_ddp(run: TrainingRun) -> bool:
    """An Axolotl run on more than one GPU that DDP wraps: no DeepSpeed, no FSDP, and ``ddp`` not written false."""
    return (run.axolotl is not None and run.facts.sharding.kind is ShardingKind.DDP
            and lax_bool(run.raw.get("ddp")) is not False)


def reentrant_checkpointing(run: TrainingRun) -> bool | None:
    """Whether the run recomputes its layers with reentrant checkpointing (None: cannot tell): the kwargs the HF
    Trainer gets (``RunFacts.gradient_checkpointing_kwargs``), false for Gemma 4, which Axolotl forces
    non-reentrant, and when ``activation_offloading`` replaces the HF checkpointing (``core/builders/base.py``).
    Kwargs without ``use_reentrant`` leave it to torch's default: None."""
    raw = run.raw
    if lax_bool(raw.get("gradient_checkpointing")) is not True or raw.get("activation_offloading"):
        return False
    if run.arch is not None and run.arch.model_type in AUTO_UNUSED:
        return False
    value = lax_bool(run.facts.gradient_checkpointing_kwargs.get("use_reentrant"))
    return value if isinstance(value, bool) else None


@register_check("ddp_idle_parameters", args=("what", "why", "gpus", "advice"))
def idle_parameters(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Trainable parameters that a step never reaches (``params.idle_split``) under DDP with
    ``find_unused_parameters=False``: the reducer waits for their gradients, and the next step's forward raises.
    Not judged where the repository's own code builds the model (``targets.model_names_known``)."""
    from axlint.memory.params import idle_split

    if (not _plain_ddp(run) or not model_names_known(run) or lax_bool(run.raw.get("ddp_find_unused_parameters"))
            or run.arch.model_type in AUTO_UNUSED):
        return
    facts = memory_facts(run)
    if facts is None:
        return
    setup = facts.estimate.setup
    split = idle_split(run.arch, setup)
    if not (split.idle_base or split.idle_adapter):
        return
    advice = "set `freeze_mm_modules: true` (Axolotl then freezes the towers and projectors), or " \
        if split.freezable else ""
    advice += ("set `ddp_find_unused_parameters: true` with `gradient_checkpointing_kwargs: {use_reentrant: "
               "false}`")
    if setup.adapter:
        advice += ", or leave those modules out of the LoRA targets"
        path = ("lora_target_linear",) if setup.lora_target_linear else ("lora_target_modules",)
    else:
        path = ("base_model",)
    count = split.idle_base + split.idle_adapter
    what = (f"{count / 1e6:,.1f} M trainable parameters of {' and '.join(split.idle_parts)}"
            + (" (their LoRA adapters)" if setup.adapter else ""))
    yield ax_hit(run, path, part="value", what=what, why=split.why, gpus=str(run.world_size), advice=advice)


@register_check("ddp_unused_reentrant", args=("how", "gpus"))
def unused_with_reentrant(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """``ddp_find_unused_parameters: true`` with reentrant checkpointing under DDP: the reducer marks a parameter
    ready in the forward's unused-parameter search and again when the checkpoint recomputes and backpropagates."""
    if not _plain_ddp(run) or lax_bool(run.raw.get("ddp_find_unused_parameters")) is not True \
            or reentrant_checkpointing(run) is not True:
        return
    kwargs = run.raw.get("gradient_checkpointing_kwargs")
    how = ("`gradient_checkpointing_kwargs.use_reentrant: true`" if isinstance(kwargs, dict)
           else "reentrant gradient checkpointing, which Axolotl writes when `gradient_checkpointing_kwargs` is unset")
    yield ax_hit(run, ("ddp_find_unused_parameters",), part="value", how=how, gpus=str(run.world_size))
