"""Memory checks (MEM, PERF) over the analytic per-GPU estimate, computed once per run and cached on it.

`memory_facts(run)` holds the estimate on `run.hardware` (given, or build_run's default assumption), and lazily
the solver's ranked suggestions, the single-knob fixes and the memory savers the run does not need. A rule that
claims an OOM needs exact token counts (sample packing or padding to `sequence_len`) and parallelism that the
model covers; an unpacked run is judged at full length by MEM009 instead, one with context / tensor / expert
parallelism is skipped (MEM010). The estimator and the solver are imported on first use only.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from axlint import edits
from axlint.checks import Hit, register_check
from axlint.document import Document, KeyPath
from axlint.engine import Rule
from axlint.facts import RunFacts
from axlint.fixes import Applicability, Fix
from axlint.run import TrainingRun

if TYPE_CHECKING:
    from axlint.architectures import Architecture
    from axlint.hardware import Hardware
    from axlint.memory.estimate import MemoryEstimate
    from axlint.memory.solver import ScaleOut, Suggestion

GIB = 2**30
LOW_HEADROOM = 0.05
"""MEM002 below this share of the GPU free: the solver's own margin, so that no fix axlint offers lands here. The
estimate already carries 15 % allocator slack and is within ±10 % of the calibration runs at the peak."""
LOGITS_SHARE = 0.25
LOGITS_OF_GPU = 0.10
"""MEM004: logits + loss at least 10 % of the GPU (8 GiB on 80 GB, 2.4 GiB on 24 GB: they matter on this card), and
either the run does not fit or they are at least 25 % of the training peak (they dominate it)."""
NOT_MODELLED_SIZES = {"context_parallel_size": "splits every sequence over GPUs",
                      "sequence_parallel_degree": "splits every sequence over GPUs",
                      "tensor_parallel_size": "splits every layer over GPUs",
                      "expert_parallel_size": "splits the experts over GPUs"}
NOT_MODELLED_FLAGS = {"tiled_mlp": "computes the MLP in sequence tiles",
                      "layer_offloading": "keeps the frozen layers on the CPU",
                      "reward_model": "has a score head instead of vocabulary logits",
                      "process_reward_model": "has a token-label head instead of vocabulary logits"}
"""Settings the estimate does not model; it would overstate the memory, so the memory rules stand aside (MEM010)."""
LOWER_BOUND_KEYS = ("rl", "qat")
"""A reference model, paired sequences (preference / RL trainers) or fake-quantized copies (QAT) come on top of
the estimate: it is a lower bound, good for an OOM claim, not for advice to drop a memory saver (PERF)."""


# ---------------------------------------------------------------------------------------------------- facts


@dataclass
class MemoryFacts:
    """The estimate of one run and what the solver says about it (each search on first use)."""

    config: Mapping[str, Any]
    run: RunFacts
    arch: "Architecture"
    hw: "Hardware"
    estimate: "MemoryEstimate"

    @property
    def evaluating(self) -> bool:
        return self.run.evaluates

    @property
    def capacity(self) -> float:
        return self.hw.memory_gib * GIB

    @property
    def exact_tokens(self) -> bool:
        """Every micro batch holds micro_batch_size × sequence_len tokens (packed or padded), not at most that."""
        return self.estimate.setup.packed_or_padded

    @property
    def eval_exact_tokens(self) -> bool:
        return self.exact_tokens and (self.run.eval_sample_packing or self.run.pad_to_sequence_len.value)

    @property
    def train_fits(self) -> bool:
        return self.estimate.fits

    @property
    def eval_fits(self) -> bool:
        return not self.evaluating or self.estimate.eval_fits

    @property
    def peak(self) -> float:
        """The peak that counts: training, or eval when the run evaluates and eval is higher."""
        e = self.estimate
        return max(e.peak_device, e.eval_peak_device) if self.evaluating else e.peak_device

    @cached_property
    def suggestions(self) -> list["Suggestion"]:
        from axlint.memory.solver import suggest

        return suggest(self.run, self.arch, self.hw)

    @cached_property
    def scale_out(self) -> "ScaleOut | None":
        """What fits on more GPUs of this kind, asked only when nothing fits on these."""
        from axlint.memory.solver import scale_out

        return None if self.suggestions else scale_out(self.run, self.arch, self.hw)

    @cached_property
    def knob_fixes(self) -> dict[str, "Suggestion"]:
        from axlint.memory.solver import single_knob_fixes

        return single_knob_fixes(self.run, self.arch, self.hw)

    @cached_property
    def relaxations(self) -> dict[str, "Suggestion"]:
        from axlint.memory.solver import relax

        return relax(self.run, self.arch, self.hw)


def not_modelled(config: Mapping[str, Any]) -> dict[str, str]:
    """The settings of the run that the memory model does not cover: `key: value` -> what it does."""
    found = {f"{k}: {config[k]}": why for k, why in NOT_MODELLED_SIZES.items()
             if isinstance(config.get(k), int) and not isinstance(config.get(k), bool) and config[k] > 1}
    return found | {f"{k}: true": why for k, why in NOT_MODELLED_FLAGS.items() if config.get(k) is True}


def compute_facts(run: TrainingRun, *, expandable_segments: bool = False) -> MemoryFacts | None:
    """The estimate of an Axolotl run whose architecture resolves; None otherwise."""
    if run.axolotl is None or run.arch is None:
        return None
    from axlint.memory.estimate import estimate_memory
    estimate = estimate_memory(run.facts, run.arch, run.hardware, expandable_segments=expandable_segments)
    return MemoryFacts(run.config, run.facts, run.arch, run.hardware, estimate)


def memory_facts(run: TrainingRun) -> MemoryFacts | None:
    """`compute_facts`, cached on the run (every memory rule reads it)."""
    if "memory" not in run.extra:
        run.extra["memory"] = compute_facts(run)
    return run.extra["memory"]


def _modelled_facts(run: TrainingRun) -> MemoryFacts | None:
    """The facts when the memory rules may speak: a known architecture and no parallelism the model lacks."""
    facts = memory_facts(run)
    return facts if facts is not None and not not_modelled(run.config) else None


def _oom_knob(run: TrainingRun, knob: str) -> tuple[MemoryFacts, Any] | None:
    """(facts, the solver's fix that turns only `knob`) when training is over the GPU and that knob fits it."""
    facts = _oom_facts(run)
    fix_ = facts.knob_fixes.get(knob) if facts is not None else None
    return (facts, fix_) if facts is not None and fix_ is not None else None


def _oom_facts(run: TrainingRun) -> MemoryFacts | None:
    """The facts when a claim about an OOM can be made: exact token counts, training over the GPU."""
    facts = _modelled_facts(run)
    return facts if facts is not None and facts.exact_tokens and not facts.train_fits else None


# ---------------------------------------------------------------------------------------------------- wording


def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def gpu_args(facts: MemoryFacts) -> dict[str, str]:
    """The GPU's memory and the hardware wording (with its assumption) that every memory message carries."""
    return {"capacity": f"{facts.hw.memory_gib:.1f} GiB", "hardware": hardware_text(facts.hw)}


def hardware_text(hw: "Hardware") -> str:
    """`8×H100-80GB`, with `assuming ` in front when nobody said which GPUs (pass --hardware)."""
    text = f"{hw.count}×{hw.gpu}"
    return f"assuming {text}; pass --hardware" if hw.assumed else f"on {text}"


def top_components(e: "MemoryEstimate", n: int = 3) -> str:
    """The `n` largest components of the peak phase: `activations 197.1 GiB, logits + loss 54.8 GiB, ...`."""
    from axlint.report.estimate_table import LABELS

    ranked = sorted(e.components.items(), key=lambda kv: kv[1], reverse=True)[:n]
    return ", ".join(f"{LABELS[k]} {gib(v)}" for k, v in ranked)


def speed(factor: float) -> str:
    from axlint.memory.solver import throughput_text

    return throughput_text(factor)


def suggestion_text(s: "Suggestion", hw: "Hardware") -> str:
    return f"{s.changes_text} -> {s.peak_gib:.1f} GiB, {speed(s.relative_throughput)}{host_text(s, hw)}"


def host_text(s: "Suggestion", hw: "Hardware") -> str:
    """What an offload asks of the host's RAM, against the host memory when it is known."""
    if not s.host_gib:
        return ""
    have = (f"the host has {hw.host_memory_gib:.0f} GiB" if hw.host_memory_gib
            else "pass --host-memory to have it checked")
    return f", needs {s.host_gib:.0f} GiB of CPU RAM per host ({have})"


def scale_out_text(found: "ScaleOut | None", hw: "Hardware") -> str:
    """The advice when nothing fits on the GPUs given."""
    if found is None:
        return f"nothing axlint can change fits it on {hw.label}, nor on up to 64 of these GPUs"
    return (f"nothing axlint can change fits it on {hw.label}; on {found.gpus}×{hw.gpu} it fits with "
            f"{suggestion_text(found.suggestion, replace(hw, count=found.gpus))}")


# ---------------------------------------------------------------------------------------------------- locations, fixes


def _written(run: TrainingRun, path: KeyPath) -> bool:
    return run.axolotl is not None and run.axolotl.node(path) is not None


def ax_hit(run: TrainingRun, candidates: tuple[KeyPath, ...], args: dict[str, Any], fix: Fix | None = None) -> Hit:
    """A hit on the value of the first written key of `candidates`, else on `base_model`, else the first line."""
    path = next((p for p in (*candidates, ("base_model",)) if _written(run, p)), ("base_model",))
    doc, span = run.ax_span(path, "value")
    return Hit(doc, span, args, fix)


def _ds_edits(run: TrainingRun, ds_changes: Mapping[str, Any]) -> tuple[Document, list] | None:
    """Edits of the DeepSpeed text (a file, or the inline mapping); None for Axolotl's stock configs."""
    if run.deepspeed is None or run.ds_source not in ("file", "inline"):
        return None
    out = []
    for dotted, value in ds_changes.items():
        out += edits.set_value(run.deepspeed, run.ds_prefix + tuple(dotted.split(".")), value)
    return run.deepspeed, out


def _ax_edits(run: TrainingRun, changes: Mapping[str, Any]) -> list:
    """Edits of the YAML: plugins are appended (the list keeps its comments); with `batch_size` written and no
    accumulation, Axolotl derives the accumulation itself, so it is not written."""
    doc = run.axolotl
    assert doc is not None
    out = []
    for key, value in changes.items():
        if key == "gradient_accumulation_steps" and "batch_size" in run.raw and key not in run.raw:
            continue
        if key == "plugins":
            for plugin in value:
                if plugin not in run.facts.plugins:
                    out += edits.append_item(doc, ("plugins",), plugin)
        else:
            out += edits.set_value(doc, (key,), value)
    return out


def suggestion_fix(run: TrainingRun, s: "Suggestion") -> Fix | None:
    """The suggestion as one file's edits (the YAML, or the DeepSpeed JSON); None when it spans both files or
    the DeepSpeed config is one of Axolotl's stock files. Safe only for gradient checkpointing alone."""
    safe = not s.ds_changes and set(s.changes) == {"gradient_checkpointing"}
    applicability = Applicability.SAFE if safe else Applicability.UNSAFE
    if s.ds_changes and s.changes and run.ds_source != "inline":
        return None
    changes = _ax_edits(run, s.changes) if s.changes else []
    if s.ds_changes:
        found = _ds_edits(run, s.ds_changes)
        if found is None:
            return None
        doc, ds_edits = found
        changes += ds_edits
    else:
        doc = run.axolotl
    return Fix(doc.path, tuple(changes), applicability, s.description) if changes and doc is not None else None


def first_fix(run: TrainingRun, suggestions: list["Suggestion"]) -> Fix | None:
    """The fix of the best suggestion that one file can express."""
    return next((f for s in suggestions if (f := suggestion_fix(run, s)) is not None), None)


# ---------------------------------------------------------------------------------------------------- MEM


def _culprit(run: TrainingRun, e: "MemoryEstimate") -> tuple[KeyPath, ...]:
    """Keys to point at for the largest component of the peak: what the user would change."""
    top = max((k for k in e.components if k not in ("cuda_context", "allocator_slack")), key=e.components.__getitem__)
    tokens: tuple[KeyPath, ...] = (("micro_batch_size",), ("sequence_len",)) if e.setup.micro_batch_size > 1 \
        else (("sequence_len",), ("micro_batch_size",))
    if top == "activations":
        return ((("gradient_checkpointing",),) if not e.setup.gradient_checkpointing else ()) + tokens
    if top == "logits":
        return tokens
    return ("deepspeed",), ("adapter",)


@register_check("mem_oom_predicted")
def oom_predicted(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Training does not fit: the peak, its three largest parts, and the solver's fastest way to fit."""
    facts = _oom_facts(run)
    if facts is None:
        return
    e = facts.estimate
    best = facts.suggestions[0] if facts.suggestions else None
    advice = f"fastest fix: {suggestion_text(best, facts.hw)}" if best else scale_out_text(facts.scale_out, facts.hw)
    args = {"peak": gib(e.peak_device), **gpu_args(facts), "phase": e.phase,
            "top": top_components(e), "advice": advice}
    yield ax_hit(run, _culprit(run, e), args, first_fix(run, facts.suggestions))


@register_check("mem_low_headroom")
def low_headroom(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """It fits, with less than LOW_HEADROOM of the GPU to spare: fragmentation alone can break it."""
    facts = _modelled_facts(run)
    if facts is None or not facts.exact_tokens or not facts.train_fits or not facts.eval_fits:
        return
    spare = facts.capacity - facts.peak
    if spare >= LOW_HEADROOM * facts.capacity:
        return
    from axlint.memory.estimate import estimate_setup

    e = facts.estimate
    eval_peak = facts.evaluating and e.eval_peak_device > e.peak_device
    expandable = estimate_setup(e.setup, facts.arch, facts.hw, expandable_segments=True)
    with_it = max(expandable.peak_device, expandable.eval_peak_device) if facts.evaluating else expandable.peak_device
    args = {"peak": gib(facts.peak), "phase": "eval" if eval_peak else "training",
            **gpu_args(facts), "spare": gib(spare),
            "percent": f"{spare / facts.capacity * 100:.1f}", "threshold": f"{LOW_HEADROOM * 100:.0f}",
            "expandable": gib(with_it)}
    yield ax_hit(run, (("micro_batch_size",), ("sequence_len",)), args)


@register_check("mem_gradient_checkpointing_needed")
def gradient_checkpointing_needed(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Checkpointing off, training over the GPU, and checkpointing alone fits it or the best fix includes it."""
    facts = _oom_facts(run)
    if facts is None or facts.estimate.setup.gradient_checkpointing:
        return
    alone = facts.knob_fixes.get("gradient_checkpointing")
    best = facts.suggestions[0] if facts.suggestions else None
    if alone is None and (best is None or "gradient_checkpointing" not in best.changes):
        return
    from axlint.memory.estimate import estimate_setup

    e = facts.estimate
    on = estimate_setup(e.setup.with_changes(gradient_checkpointing=True), facts.arch, facts.hw)
    if alone:
        effect = "enough on its own"
    else:
        rest = {k: v for k, v in best.changes.items() if k not in ("gradient_checkpointing", "eval_batch_size")}
        effect = f"not enough alone: also {replace(best, changes=rest).changes_text}"
    args = {"tokens": f"{e.setup.micro_batch_size}×{e.setup.sequence_len}", "peak": gib(e.peak_device),
            "new_peak": gib(on.peak_device), **gpu_args(facts), "effect": effect}
    doc = run.axolotl
    assert doc is not None
    fix = Fix(doc.path, tuple(edits.set_value(doc, ("gradient_checkpointing",), True)), Applicability.SAFE,
              "set `gradient_checkpointing: true`")
    yield ax_hit(run, (("gradient_checkpointing",), ("sequence_len",)), args, fix)


def _loss_fix(run: TrainingRun, model_type: str) -> tuple[str, Fix | None]:
    """Liger FLCE where Liger patches the model type, else Cut Cross-Entropy; other cross-entropy options off."""
    from axlint.memory.liger_models import cce_supports, liger_supports
    from axlint.facts import CCE_PLUGIN, LIGER_PLUGIN

    doc = run.axolotl
    assert doc is not None
    if liger_supports(model_type):
        name, plugin, key = "Liger's fused linear cross-entropy", LIGER_PLUGIN, "liger_fused_linear_cross_entropy"
    elif cce_supports(model_type):
        name, plugin, key = "Cut Cross-Entropy", CCE_PLUGIN, "cut_cross_entropy"
    else:
        return "", None
    changes = _ax_edits(run, {"plugins": [plugin], key: True})
    for other in ("liger_cross_entropy", "chunked_cross_entropy"):
        if run.raw.get(other):
            changes += edits.set_value(doc, (other,), False)
    return name, Fix(doc.path, tuple(changes), Applicability.UNSAFE, f"use {name}: plugin + `{key}: true`")


@register_check("mem_liger_or_cce_missing")
def liger_or_cce_missing(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The fp32 logits and loss are a large part of the peak, and no fused cross-entropy avoids them."""
    facts = _modelled_facts(run)
    if facts is None or facts.estimate.setup.loss in ("liger_flce", "cce") or run.facts.rl:
        return  # preference / RL trainers compute their own loss: the plugin's patch does not reach it
    from axlint.memory.logits import logits_bytes

    e = facts.estimate
    logits, fwd = logits_bytes(facts.arch, e.setup, e.setup.tokens), e.phases["forward-backward"]
    if logits < LOGITS_OF_GPU * facts.capacity or (facts.train_fits and logits < LOGITS_SHARE * fwd):
        return
    name, fix = _loss_fix(run, facts.arch.model_type)
    if fix is None:
        return
    args = {"logits": gib(logits), "share": f"{logits / fwd * 100:.0f}", "vocab": f"{facts.arch.vocab_size:,}",
            "tokens": f"{e.setup.micro_batch_size}×{e.setup.sequence_len}", "remedy": name, **gpu_args(facts)}
    yield ax_hit(run, (("plugins",), ("sequence_len",)), args, fix)


@register_check("mem_micro_batch_too_large")
def micro_batch_too_large(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Training over the GPU, and a smaller micro batch (accumulation raised, same effective batch) fits it."""
    found = _oom_knob(run, "micro_batch")
    if found is None:
        return
    facts, fix_ = found
    args = {"mbs": str(facts.estimate.setup.micro_batch_size), "peak": gib(facts.estimate.peak_device),
            **gpu_args(facts), "new_mbs": str(fix_.changes["micro_batch_size"]),
            "new_gas": str(fix_.changes["gradient_accumulation_steps"]), "new_peak": f"{fix_.peak_gib:.1f} GiB",
            "speed": speed(fix_.relative_throughput)}
    yield ax_hit(run, (("micro_batch_size",),), args, suggestion_fix(run, fix_))


@register_check("mem_eval_batch_spike")
def eval_batch_spike(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The run evaluates and the eval peak (full logits, no fused loss in eval) is over the GPU."""
    facts = _modelled_facts(run)
    if facts is None or not facts.evaluating or not facts.eval_exact_tokens or facts.estimate.eval_fits:
        return
    e = facts.estimate
    fix_ = facts.knob_fixes.get("eval_batch")
    if fix_ is not None:
        new = fix_.changes["eval_batch_size"]
        advice = f"eval_batch_size {new} fits ({fix_.peak_gib:.1f} GiB)"
        doc = run.axolotl
        assert doc is not None
        fix = Fix(doc.path, tuple(edits.set_value(doc, ("eval_batch_size",), new)), Applicability.SAFE,
                  f"set `eval_batch_size: {new}`")
    else:
        advice, fix = "even eval_batch_size 1 does not fit: shorten eval_sequence_len", None
    args = {"eval_peak": gib(e.eval_peak_device), **gpu_args(facts),
            "tokens": f"{e.setup.eval_batch_size}×{e.setup.eval_sequence_len}", "train_peak": gib(e.peak_device),
            "advice": advice}
    yield ax_hit(run, (("eval_batch_size",), ("micro_batch_size",)), args, fix)


@register_check("mem_zero_stage_too_weak")
def zero_stage_too_weak(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Training over the GPU with the current sharding, and a higher ZeRO stage or CPU offload alone fits it."""
    found = _oom_knob(run, "zero")
    if found is None:
        return
    facts, fix_ = found
    sh = facts.estimate.setup.sharding
    now = f"ZeRO stage {sh.stage}" + (" with optimizer offload" if sh.offload_optimizer else "") \
        if sh.kind == "deepspeed" else f"plain data parallelism over {sh.world} GPUs"
    args = {"now": now, "peak": gib(facts.estimate.peak_device), **gpu_args(facts),
            "change": fix_.description, "new_peak": f"{fix_.peak_gib:.1f} GiB",
            "speed": speed(fix_.relative_throughput)}
    fix = suggestion_fix(run, fix_)
    if fix_.ds_changes and run.ds_source in ("file", "inline"):
        doc, span = run.ds_span(("zero_optimization", "stage"), "value")
        yield Hit(doc, span, args, fix)
    else:
        yield ax_hit(run, (("deepspeed",),), args, fix)


@register_check("mem_unknown_model")
def unknown_model(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`base_model` names a model axlint cannot describe: no memory rule can run."""
    model = run.config.get("base_model_config") or run.config.get("base_model")
    if run.axolotl is None or not isinstance(model, str) or run.arch is not None:
        return
    yield ax_hit(run, (("base_model_config",), ("base_model",)), {"model": model})


@register_check("mem_oom_at_full_length")
def oom_at_full_length(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Unpacked and unpadded: a micro batch whose longest sample reaches sequence_len does not fit."""
    facts = _modelled_facts(run)
    if facts is None or facts.exact_tokens or facts.train_fits:
        return
    e = facts.estimate
    longest = _longest_fitting(facts)
    fix = None
    if longest:
        doc = run.axolotl
        assert doc is not None
        fix = Fix(doc.path, tuple(edits.set_value(doc, ("sequence_len",), longest)), Applicability.UNSAFE,
                  f"set `sequence_len: {longest}` (longer samples are dropped)")
    args = {"tokens": f"{e.setup.micro_batch_size}×{e.setup.sequence_len}", "peak": gib(e.peak_device),
            **gpu_args(facts),
            "longest": f"samples up to {longest} tokens fit" if longest else "not even 256-token samples fit"}
    yield ax_hit(run, (("sequence_len",),), args, fix)


SEQUENCE_STEP = 256


def _longest_fitting(facts: MemoryFacts) -> int:
    """The longest sequence_len (a multiple of 256) whose full-length micro batch fits within the solver margin."""
    from axlint.memory import constants as C
    from axlint.memory.estimate import estimate_setup

    setup, budget = facts.estimate.setup, facts.capacity * (1 - C.SAFETY_MARGIN)

    def fits(seq: int) -> bool:
        e = estimate_setup(setup.with_changes(sequence_len=seq, eval_sequence_len=seq), facts.arch, facts.hw)
        return e.peak_device <= budget

    lo, hi = 0, setup.sequence_len // SEQUENCE_STEP
    while lo < hi:  # the largest k with fits(k·step); peak grows with the sequence length
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid * SEQUENCE_STEP) else (lo, mid - 1)
    return lo * SEQUENCE_STEP


@register_check("mem_not_modelled")
def memory_not_modelled(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Context / tensor / expert parallelism or tiled MLPs: the memory rules stand aside."""
    found = not_modelled(run.config)
    if run.axolotl is None or not found or memory_facts(run) is None:
        return
    key = next(iter(found)).split(":", 1)[0]
    doc, span = run.ax_span((key,), "key")
    yield Hit(doc, span, {"settings": ", ".join(f"`{k}` ({why})" for k, why in found.items())})


# ---------------------------------------------------------------------------------------------------- PERF


def _perf_facts(run: TrainingRun) -> MemoryFacts | None:
    """Facts to advise dropping a memory saver: modelled, exact tokens, not a lower bound, fitting."""
    facts = _modelled_facts(run)
    if facts is None or not facts.exact_tokens or any(run.config.get(k) for k in LOWER_BOUND_KEYS):
        return None
    return facts if facts.train_fits and facts.eval_fits else None


def _perf_args(facts: MemoryFacts, s: "Suggestion") -> dict[str, str]:
    from axlint.memory.solver import RELAX_MARGIN

    return {"peak": f"{s.peak_gib:.1f} GiB", **gpu_args(facts),
            "speed": speed(s.relative_throughput), "extra": f"{-s.saving_gib:.1f} GiB",
            "margin": f"{RELAX_MARGIN * 100:.0f}"}


@register_check("perf_checkpointing_unneeded")
def checkpointing_unneeded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    facts = _perf_facts(run)
    s = facts.relaxations.get("gradient_checkpointing") if facts is not None else None
    if facts is None or s is None:
        return
    path = run.facts.gradient_checkpointing.key or ("gradient_checkpointing",)
    doc = run.axolotl
    assert doc is not None
    fix = None
    if _written(run, path):
        fix = Fix(doc.path, tuple(edits.set_value(doc, path, False)), Applicability.UNSAFE,
                  f"set `{'.'.join(path)}: false`")
    yield ax_hit(run, (path,), _perf_args(facts, s), fix)


@register_check("perf_zero3_unneeded")
def zero3_unneeded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    facts = _perf_facts(run)
    s = facts.relaxations.get("zero3") if facts is not None else None
    if facts is None or s is None:
        return
    doc, span = run.ds_span(("zero_optimization", "stage"), "value")
    yield Hit(doc, span, _perf_args(facts, s), suggestion_fix(run, s))


@register_check("perf_offload_unneeded")
def offload_unneeded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    facts = _perf_facts(run)
    s = facts.relaxations.get("offload") if facts is not None else None
    if facts is None or s is None:
        return
    sh = facts.estimate.setup.sharding
    what = "the optimizer and the parameters" if sh.offload_param else "the optimizer"
    args = {**_perf_args(facts, s), "what": what if sh.kind == "deepspeed" else "the parameters"}
    if s.ds_changes:
        block = "offload_param" if sh.offload_param else "offload_optimizer"
        doc, span = run.ds_span(("zero_optimization", block, "device"), "value")
        yield Hit(doc, span, args, suggestion_fix(run, s))
    else:
        yield ax_hit(run, (("fsdp_config",),), args)
