"""Memory checks (MEM, PERF) over the run's memory facts (`axlint.memory.facts`: the analytic per-GPU estimate
on `run.hardware`, given or build_run's default assumption, and what the solver says about it).

A rule that claims an OOM needs exact token counts (sample packing or padding to `sequence_len`) and parallelism
that the model covers; an unpacked run is judged at full length by MEM009 instead, one with a setting or a model
part the model does not cover is skipped (MEM010), except that work left out on top of the estimate (images or
audio: a lower bound) still lets MEM001 claim an OOM, without a fix. The estimator and the solver are imported on
first use only.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from axlint import edits
from axlint.checks.locate import ax_hit, first_written
from axlint.document import Document, KeyPath
from axlint.facts import LEGACY_ATTENTION, LossKernel, ShardingKind
from axlint.fixes import Applicability, Fix
from axlint.memory.facts import (
    BNB_SKIPPED_LINEARS,
    LOWER_BOUND_KEYS,
    MemoryFacts,
    memory_facts,
    modelled_facts,
    oom_facts,
    oom_fix_facts,
    oom_knob,
)
from axlint.memory.knobs import Knob, Saver
from axlint.memory.loading import LOAD_PHASE
from axlint.report.memory_text import (
    changes_text,
    description,
    gib,
    gpu_args,
    scale_out_text,
    suggestion_text,
    throughput_text,
    top_components,
)
from axlint.rule import FixAvailability, Hit, Rule, register_check
from axlint.run import DsSource, TrainingRun
from axlint.search import largest_true

if TYPE_CHECKING:
    from axlint.memory.estimate import MemoryEstimate
    from axlint.memory.solver import Suggestion

LOW_HEADROOM = 0.05
"""MEM002 below this share of the GPU free: the solver's own margin, so that no fix axlint offers lands here. The
estimate already carries 15 % allocator slack and is within ±10 % of the calibration runs at the peak."""
LOGITS_SHARE = 0.25
LOGITS_OF_GPU = 0.10
"""MEM004: logits + loss at least 10 % of the GPU (8 GiB on 80 GB, 2.4 GiB on 24 GB: they matter on this card), and
either the run does not fit or they are at least 25 % of the training peak (they dominate it)."""
# ---------------------------------------------------------------------------------------------------- locations, fixes


def _written(run: TrainingRun, path: KeyPath) -> bool:
    return run.axolotl is not None and run.axolotl.node(path) is not None


def _value_hit(run: TrainingRun, candidates: tuple[KeyPath, ...], args: dict[str, Any], fix: Fix | None = None) -> Hit:
    """A hit on the value of the first written key of `candidates`, else on `base_model`, else the first line."""
    return ax_hit(run, first_written(run, *candidates, default=("base_model",)), "value", fix, **args)


def _ds_edits(run: TrainingRun, ds_changes: Mapping[str, Any]) -> tuple[Document, list] | None:
    """Edits of the DeepSpeed text (a file, or the inline mapping); None for Axolotl's stock configs."""
    if not run.ds_editable:
        return None
    out = []
    for dotted, value in ds_changes.items():
        out += edits.set_value(run.deepspeed, run.ds_prefix + tuple(dotted.split(".")), value)
    return run.deepspeed, out


def _ax_edits(run: TrainingRun, changes: Mapping[str, Any]) -> list:
    """Edits of the YAML: plugins are appended (the list keeps its comments); with `batch_size` written and no
    accumulation, Axolotl derives the accumulation itself, so it is not written; a new `attn_implementation` takes
    the place of the legacy attention flags written true, which Axolotl refuses beside it."""
    doc = run.axolotl
    assert doc is not None
    out = []
    for key, value in changes.items():
        if key == "gradient_accumulation_steps" and "batch_size" in run.raw and key not in run.raw:
            continue
        if key == "attn_implementation":
            for flag, _ in LEGACY_ATTENTION:
                if run.raw.get(flag):
                    out += edits.delete_key(doc, (flag,))
        if key == "plugins":
            for plugin in value:
                if plugin not in run.facts.plugins:
                    out += edits.append_item(doc, ("plugins",), plugin)
        else:
            out += edits.set_value(doc, _yaml_path(run, key), value)
    return out


def _yaml_path(run: TrainingRun, key: str) -> KeyPath:
    """A change key as a path in the YAML: a dotted key reaches into a block. In ``fsdp_config`` a key already written
    with the legacy ``fsdp_`` prefix is set where it is (Axolotl reads both); a new one is written without it."""
    path = tuple(key.split("."))
    block = run.raw.get(path[0])
    if path[0] != "fsdp_config" or len(path) != 2 or not isinstance(block, Mapping) or path[1] in block:
        return path
    prefixed = f"fsdp_{path[1]}"
    return (path[0], prefixed) if prefixed in block else path


def suggestion_fix(run: TrainingRun, s: "Suggestion") -> Fix | None:
    """The suggestion as one file's edits (the YAML, or the DeepSpeed JSON); None when it spans both files or
    the DeepSpeed config is one of Axolotl's stock files. Safe only for gradient checkpointing alone."""
    safe = not s.ds_changes and set(s.changes) == {"gradient_checkpointing"}
    applicability = Applicability.SAFE if safe else Applicability.UNSAFE
    if s.ds_changes and s.changes and run.ds_source is not DsSource.INLINE:
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
    return Fix(doc.path, tuple(changes), applicability, description(s)) if changes and doc is not None else None


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
    if e.phase == LOAD_PHASE:
        return ("adapter",), ("load_in_8bit",), ("load_in_4bit",), ("fsdp_config",)
    return ("deepspeed",), ("adapter",)


@register_check("mem_oom_predicted", args=("peak", "phase", "capacity", "hardware", "top", "advice"),
                fix=FixAvailability.SOMETIMES)
def oom_predicted(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Training does not fit: the peak, its three largest parts, and the solver's fastest way to fit."""
    facts = oom_facts(run)
    if facts is None:
        return
    e = facts.estimate
    best = facts.suggestions[0] if facts.suggestions else None
    advice = f"fastest fix: {suggestion_text(best, facts.hw)}" if best else scale_out_text(facts.scale_out, facts.hw)
    if facts.lower_bound:  # a fix sized without the work left out may not be enough
        advice = "what the estimate leaves out (MEM010) comes on top"
    args = {"peak": gib(e.required), **gpu_args(facts), "phase": e.phase,
            "top": top_components(e), "advice": advice}
    yield _value_hit(run, _culprit(run, e), args, None if facts.lower_bound else first_fix(run, facts.suggestions))


@register_check("mem_low_headroom", args=("phase", "peak", "spare", "capacity", "percent", "threshold", "hardware"))
def low_headroom(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """It fits, with less than LOW_HEADROOM of the GPU to spare: a longer sample or more fragmentation breaks it."""
    facts = modelled_facts(run)
    if facts is None or not facts.exact_tokens or not facts.train_fits or not facts.eval_fits:
        return
    spare = facts.capacity - facts.peak
    if spare >= LOW_HEADROOM * facts.capacity:
        return
    e = facts.estimate
    eval_peak = facts.evaluating and e.eval_required > e.required
    args = {"peak": gib(facts.peak), "phase": "eval" if eval_peak else "training",
            **gpu_args(facts), "spare": gib(spare),
            "percent": f"{spare / facts.capacity * 100:.1f}", "threshold": f"{LOW_HEADROOM * 100:.0f}"}
    yield _value_hit(run, (("micro_batch_size",), ("sequence_len",)), args)


@register_check("mem_gradient_checkpointing_needed",
                args=("tokens", "peak", "capacity", "hardware", "new_peak", "effect"), fix=FixAvailability.SOMETIMES)
def gradient_checkpointing_needed(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Checkpointing off, training over the GPU, and checkpointing alone fits it or the best fix includes it."""
    facts = oom_fix_facts(run)
    if facts is None or facts.estimate.setup.gradient_checkpointing:
        return
    alone = facts.knob_fixes.get(Knob.GRADIENT_CHECKPOINTING)
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
        effect = f"not enough alone: also {changes_text(replace(best, changes=rest))}"
    args = {"tokens": f"{e.setup.micro_batch_size}×{e.setup.sequence_len}", "peak": gib(e.required),
            "new_peak": gib(on.required), **gpu_args(facts), "effect": effect}
    doc = run.axolotl
    assert doc is not None
    fix = Fix(doc.path, tuple(edits.set_value(doc, ("gradient_checkpointing",), True)), Applicability.SAFE,
              "set `gradient_checkpointing: true`")
    yield _value_hit(run, (("gradient_checkpointing",), ("sequence_len",)), args, fix)


def _loss_fix(run: TrainingRun, model_type: str) -> tuple[str, Fix | None]:
    """Liger FLCE where Liger patches the model type, else Cut Cross-Entropy; other cross-entropy options off."""
    from axlint.facts import CCE_PLUGIN, LIGER_PLUGIN
    from axlint.memory.liger_models import cce_supports, liger_supports

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


@register_check("mem_liger_or_cce_missing", args=("logits", "share", "vocab", "tokens", "hardware", "remedy"),
                fix=FixAvailability.SOMETIMES)
def liger_or_cce_missing(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The fp32 logits and loss are a large part of the peak, and no fused cross-entropy avoids them."""
    facts = modelled_facts(run)
    if facts is None or facts.estimate.setup.loss in (LossKernel.LIGER_FLCE, LossKernel.CCE) or run.facts.rl:
        return  # preference / RL trainers compute their own loss: the plugin's patch does not reach it
    from axlint.memory.logits import logits_bytes

    e = facts.estimate
    logits, fwd = logits_bytes(e.arch, e.setup, e.setup.tokens), e.phases["forward-backward"]
    if logits < LOGITS_OF_GPU * facts.capacity or (facts.train_fits and logits < LOGITS_SHARE * fwd):
        return
    name, fix = _loss_fix(run, facts.arch.model_type)
    if fix is None:
        return
    args = {"logits": gib(logits), "share": f"{logits / fwd * 100:.0f}", "vocab": f"{facts.arch.vocab_size:,}",
            "tokens": f"{e.setup.micro_batch_size}×{e.setup.sequence_len}", "remedy": name, **gpu_args(facts)}
    yield _value_hit(run, (("plugins",), ("sequence_len",)), args, fix)


@register_check("mem_micro_batch_too_large",
                args=("micro_batch_size", "peak", "capacity", "hardware", "new_micro_batch_size",
                      "new_gradient_accumulation_steps", "new_peak", "speed"),
                fix=FixAvailability.SOMETIMES)
def micro_batch_too_large(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Training over the GPU, and a smaller micro batch (accumulation raised, same effective batch) fits it."""
    found = oom_knob(run, Knob.MICRO_BATCH)
    if found is None:
        return
    facts, fix_ = found
    args = {"micro_batch_size": str(facts.estimate.setup.micro_batch_size), "peak": gib(facts.estimate.required),
            **gpu_args(facts), "new_micro_batch_size": str(fix_.changes["micro_batch_size"]),
            "new_gradient_accumulation_steps": str(fix_.changes["gradient_accumulation_steps"]),
            "new_peak": f"{fix_.peak_gib:.1f} GiB", "speed": throughput_text(fix_.relative_throughput)}
    yield _value_hit(run, (("micro_batch_size",),), args, suggestion_fix(run, fix_))


@register_check("mem_eval_batch_spike", args=("eval_peak", "tokens", "capacity", "train_peak", "hardware", "advice"),
                fix=FixAvailability.SOMETIMES)
def eval_batch_spike(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The run evaluates and the eval peak (full logits, no fused loss in eval) is over the GPU."""
    facts = modelled_facts(run)
    if facts is None or not facts.evaluating or not facts.eval_exact_tokens or facts.estimate.eval_fits:
        return
    e = facts.estimate
    fix_ = facts.knob_fixes.get(Knob.EVAL_BATCH)
    if fix_ is not None:
        new = fix_.changes["eval_batch_size"]
        advice = f"eval_batch_size {new} fits ({fix_.peak_gib:.1f} GiB)"
        doc = run.axolotl
        assert doc is not None
        fix = Fix(doc.path, tuple(edits.set_value(doc, ("eval_batch_size",), new)), Applicability.SAFE,
                  f"set `eval_batch_size: {new}`")
    else:
        advice, fix = "even eval_batch_size 1 does not fit: shorten eval_sequence_len", None
    args = {"eval_peak": gib(e.eval_required), **gpu_args(facts),
            "tokens": f"{e.setup.eval_batch_size}×{e.setup.eval_sequence_len}", "train_peak": gib(e.required),
            "advice": advice}
    yield _value_hit(run, (("eval_batch_size",), ("micro_batch_size",)), args, fix)


@register_check("mem_zero_stage_too_weak", args=("now", "peak", "capacity", "hardware", "change", "new_peak", "speed"),
                fix=FixAvailability.SOMETIMES)
def zero_stage_too_weak(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Training over the GPU with the current sharding, and a higher ZeRO stage or CPU offload alone fits it."""
    found = oom_knob(run, Knob.ZERO)
    if found is None:
        return
    facts, fix_ = found
    sh = facts.estimate.setup.sharding
    if sh.kind is ShardingKind.DEEPSPEED:
        now = f"ZeRO stage {sh.stage}" + (" with optimizer offload" if sh.offload_optimizer else "")
    else:
        now = f"plain data parallelism over {sh.world} GPUs" if sh.world > 1 else "one GPU without ZeRO or FSDP"
    args = {"now": now, "peak": gib(facts.estimate.required), **gpu_args(facts),
            "change": description(fix_), "new_peak": f"{fix_.peak_gib:.1f} GiB",
            "speed": throughput_text(fix_.relative_throughput)}
    fix = suggestion_fix(run, fix_)
    if fix_.ds_changes and run.ds_editable:
        doc, span = run.ds_span(("zero_optimization", "stage"), "value")
        yield Hit(doc, span, args, fix)
    else:
        yield _value_hit(run, (("deepspeed",),), args, fix)


@register_check("mem_unknown_model", args=("model",))
def unknown_model(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`base_model` names a model axlint cannot describe: no memory rule can run."""
    model = run.config.get("base_model_config") or run.config.get("base_model")
    if run.axolotl is None or not isinstance(model, str) or run.arch is not None:
        return
    yield _value_hit(run, (("base_model_config",), ("base_model",)), {"model": model})


@register_check("mem_oom_at_full_length", args=("tokens", "peak", "capacity", "hardware", "longest"),
                fix=FixAvailability.SOMETIMES)
def oom_at_full_length(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Unpacked and unpadded: a micro batch whose longest sample reaches sequence_len does not fit."""
    facts = modelled_facts(run)
    if facts is None or facts.exact_tokens or facts.train_fits or facts.load_oom:  # MEM001 speaks for the load
        return
    e = facts.estimate
    longest = _longest_fitting(facts)
    fix = None
    if longest:
        doc = run.axolotl
        assert doc is not None
        fix = Fix(doc.path, tuple(edits.set_value(doc, ("sequence_len",), longest)), Applicability.UNSAFE,
                  f"set `sequence_len: {longest}` (longer samples are dropped)")
    args = {"tokens": f"{e.setup.micro_batch_size}×{e.setup.sequence_len}", "peak": gib(e.required),
            **gpu_args(facts),
            "longest": f"samples up to {longest} tokens fit" if longest else "not even 256-token samples fit"}
    yield _value_hit(run, (("sequence_len",),), args, fix)


SEQUENCE_STEP = 256


def _longest_fitting(facts: MemoryFacts) -> int:
    """The longest sequence_len (a multiple of 256) whose full-length micro batch fits within the solver margin."""
    from axlint.memory import constants as C
    from axlint.memory.estimate import estimate_setup

    setup, budget = facts.estimate.setup, facts.capacity * (1 - C.SAFETY_MARGIN)

    def fits(seq: int) -> bool:
        e = estimate_setup(setup.with_changes(sequence_len=seq, eval_sequence_len=seq), facts.arch, facts.hw)
        return e.required <= budget

    # the peak grows with the sequence length: the largest k with a fitting k·step
    return largest_true(lambda k: fits(k * SEQUENCE_STEP), 0, setup.sequence_len // SEQUENCE_STEP) * SEQUENCE_STEP


@register_check("mem_not_modelled", args=("settings", "effect"))
def memory_not_modelled(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Tensor parallelism, a parallel layout Axolotl refuses, layer offloading, a part of the model axlint cannot size:
    the memory rules stand aside; images or audio whose work the estimate leaves out: only an OOM is reported."""
    facts = memory_facts(run)
    found = facts.unknown if run.axolotl is not None and facts is not None else {}
    if not found:
        return
    key = next(iter(found)).split(":", 1)[0]
    doc, span = run.ax_span((key,), "key")
    effect = ("the estimate is a lower bound, so only a predicted OOM is reported" if facts.lower_bound
              else "the memory rules stand aside")
    yield Hit(doc, span, {"settings": ", ".join(f"`{k}` ({why})" for k, why in found.items()), "effect": effect})


@register_check("mem_quantized_load_skips_layers", args=("key", "what", "linear", "weights", "advice"))
def quantized_load_skips_layers(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A 4/8-bit load of a model whose layers' Linears are a subclass of ``nn.Linear`` (``BNB_SKIPPED_LINEARS``):
    transformers 5.5 and later leave them out of the bitsandbytes conversion, so they stay in the load dtype, fp32
    after PEFT's k-bit preparation (``RunFacts.experts_fp32``: where Axolotl runs it). Shown on a small Falcon by
    tests/test_oracle_quantized_load.py."""
    from axlint.memory import constants as C

    arch, quantization = run.arch, run.facts.quantization.value
    linear = BNB_SKIPPED_LINEARS.get(arch.decoder_type) if arch is not None else None
    if run.axolotl is None or linear is None or quantization is None:
        return
    key = "load_in_4bit" if quantization == "nf4" else "load_in_8bit"
    half = {"bfloat16": "bf16", "float16": "fp16"}.get(run.facts.dtype.value)
    prepared = bool(half) and run.facts.experts_fp32
    n = arch.unconverted_linear_params  # 0: some of the layers' Linears are converted (not DeepSeek-V4's grouped ones)

    def size(bytes_per: int) -> str:
        return f" ({gib(n * bytes_per)})" if n else ""

    weights = (f"its {n / 1e9:.2f} B layer weights" if n else "they") + f" stay in {half or 'fp32'}" \
        + size(C.BF16 if half else C.FP32)
    if prepared:
        weights += (", and PEFT's k-bit preparation, which Axolotl runs for a LoRA on such a load, turns them to fp32"
                    + size(C.FP32))
    if not n:
        advice = "the other Linears are quantized"
    elif prepared:
        advice = f"to train the same adapters on {half} weights at half that, " + (
            f"write `adapter: lora` without `{key}`" if key == "load_in_4bit" else f"remove `{key}`")
    else:
        advice = f"`{key}` changes nothing here: remove it"
    what = f"none of this model's `{linear}` layers" if not n else "none of this model's layers"
    yield ax_hit(run, (key,), key=key, what=what, linear=linear, weights=weights, advice=advice)


# ---------------------------------------------------------------------------------------------------- PERF


def _perf_facts(run: TrainingRun) -> MemoryFacts | None:
    """Facts to advise dropping a memory saver: modelled, exact tokens, not a lower bound, fitting."""
    facts = modelled_facts(run)
    if facts is None or not facts.exact_tokens or any(run.config.get(k) for k in LOWER_BOUND_KEYS):
        return None
    return facts if facts.train_fits and facts.eval_fits else None


def _perf_args(facts: MemoryFacts, s: "Suggestion") -> dict[str, str]:
    from axlint.memory.solver import RELAX_MARGIN

    return {"peak": f"{s.peak_gib:.1f} GiB", **gpu_args(facts),
            "speed": throughput_text(s.relative_throughput), "extra": f"{-s.saving_gib:.1f} GiB",
            "margin": f"{RELAX_MARGIN * 100:.0f}"}


@register_check("perf_checkpointing_unneeded", args=("peak", "capacity", "margin", "hardware", "speed", "extra"),
                fix=FixAvailability.SOMETIMES)
def checkpointing_unneeded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    facts = _perf_facts(run)
    s = facts.relaxations.get(Saver.GRADIENT_CHECKPOINTING) if facts is not None else None
    if facts is None or s is None:
        return
    path = run.facts.gradient_checkpointing.key or ("gradient_checkpointing",)
    doc = run.axolotl
    assert doc is not None
    fix = None
    if _written(run, path):
        fix = Fix(doc.path, tuple(edits.set_value(doc, path, False)), Applicability.UNSAFE,
                  f"set `{'.'.join(path)}: false`")
    yield _value_hit(run, (path,), _perf_args(facts, s), fix)


@register_check("perf_zero3_unneeded", args=("peak", "capacity", "margin", "hardware", "speed"),
                fix=FixAvailability.SOMETIMES)
def zero3_unneeded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    facts = _perf_facts(run)
    s = facts.relaxations.get(Saver.ZERO3) if facts is not None else None
    if facts is None or s is None:
        return
    doc, span = run.ds_span(("zero_optimization", "stage"), "value")
    yield Hit(doc, span, _perf_args(facts, s), suggestion_fix(run, s))


@register_check("perf_offload_unneeded", args=("what", "peak", "capacity", "margin", "hardware", "speed"),
                fix=FixAvailability.SOMETIMES)
def offload_unneeded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    facts = _perf_facts(run)
    s = facts.relaxations.get(Saver.OFFLOAD) if facts is not None else None
    if facts is None or s is None:
        return
    sh = facts.estimate.setup.sharding
    what = "the optimizer and the parameters" if sh.offload_param else "the optimizer"
    args = {**_perf_args(facts, s), "what": what if sh.kind is ShardingKind.DEEPSPEED else "the parameters"}
    if s.ds_changes:
        block = "offload_param" if sh.offload_param else "offload_optimizer"
        doc, span = run.ds_span(("zero_optimization", block, "device"), "value")
        yield Hit(doc, span, args, suggestion_fix(run, s))
    else:
        yield _value_hit(run, (("fsdp_config",),), args)
