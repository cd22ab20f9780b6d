"""Checks of the LoRA keys (pack `lora`): LoRA keys without an adapter, embedding copies in
`lora_modules_to_save`, and the embedding modules Axolotl requires when new tokens are added."""
from __future__ import annotations

from typing import Iterator

from axlint.architectures import Architecture
from axlint.checks.locate import ax_hit
from axlint.edits import set_value
from axlint.facts import (
    DEFAULT_EMBEDDING_LAYERS,
    EMBEDDING_LAYERS,
    FP32_MLP_INPUT_CAUSES,
    FP32_SOURCE_CAUSES,
    LORA_KERNEL_FLAGS,
    LORA_KERNEL_LAYERS_NOT_FOUND,
    SDPA_VARLEN_FP32_FALLBACK_SINCE,
    embedding_layers,
    fp32_layer_inputs,
    lora_attention_rewrite_error,
    lora_kernel_dtype_error,
    lora_kernel_layers_error,
    lora_qkv_dtype_error,
    sdpa_varlen_dtype_error,
)
from axlint.fixes import Applicability, Fix
from axlint.lax import lax_bool
from axlint.rule import FixAvailability, Hit, Rule, register_check
from axlint.run import TrainingRun

LORA_KEYS = ("lora_r", "lora_alpha", "lora_target_modules", "lora_target_linear", "lora_modules_to_save")
EMBEDDING_MODULES = frozenset({"embed_tokens", "lm_head", "wte", "embed_in", "embed_out", "word_embeddings",
                               "tok_embeddings", "output"})


@register_check("ax_lora_keys_without_adapter", args=("keys",))
def check_lora_keys_without_adapter(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """LoRA keys in a config without `adapter`: Axolotl runs a full fine-tune and ignores them."""
    if run.axolotl is None or run.facts.adapter.value:
        return
    written = [k for k in LORA_KEYS if run.raw.get(k) not in (None, False, [], "")]
    if written:
        yield ax_hit(run, (written[0],), keys=", ".join(f"`{k}`" for k in written))


@register_check("ax_modules_to_save_embeddings", args=("module", "size"))
def check_modules_to_save_embeddings(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`lora_modules_to_save` with the embedding or LM head: full trainable copies with optimizer state, priced by
    the memory estimate (``copy_cost``) where the model is known."""
    modules = run.config.get("lora_modules_to_save")
    if run.axolotl is None or not run.facts.adapter.value or not isinstance(modules, list):
        return
    if run.raw.get("tokens"):
        return  # new tokens: Axolotl requires the embedding modules here (AX132)
    arch = run.arch
    params = arch.vocab_size * arch.hidden_size if arch is not None else None
    for index, name in enumerate(modules):
        if isinstance(name, str) and name.rsplit(".", 1)[-1] in EMBEDDING_MODULES:
            cost = copy_cost(run, name)
            size = (f"{params / 1e6:.0f}M parameters" if params else "vocab × hidden parameters") + (
                f", ≈{cost / 2**30:.1f} GiB more at the peak with its gradient and optimizer state" if cost
                else ", each with a gradient and optimizer state")
            yield ax_hit(run, ("lora_modules_to_save", index), part="value", module=name, size=size)


def copy_cost(run: TrainingRun, name: str) -> float | None:
    """What the copy of module `name` adds to the estimate's peak allocated memory: the run's estimate less the
    same run without `name` in the modules to save (weights in the load dtype or fp32, gradient and optimizer
    state as the estimate counts them: ``states.weight_bytes``, ``optimizer_state_bytes``); None without one."""
    from axlint.memory.estimate import estimate_setup

    facts = run.memory
    if facts is None:
        return None
    e = facts.estimate
    without = e.setup.with_changes(modules_to_save=tuple(m for m in e.setup.modules_to_save if m != name))
    return e.peak_allocated - estimate_setup(without, facts.arch, facts.hw).peak_allocated


@register_check("ax_new_tokens_embedding_modules", args=("required", "missing"))
def check_new_tokens_embedding_modules(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """New `tokens` with an adapter: Axolotl refuses to load the model unless `lora_modules_to_save` names the
    model's input and output embedding modules, exactly (Axolotl 0.18.0 `loaders/utils.py`,
    `check_model_config`)."""
    if run.axolotl is None or not run.raw.get("adapter") or not run.raw.get("tokens"):
        return
    modules = run.raw.get("lora_modules_to_save")
    # Axolotl tests `name in lora_modules_to_save`: list membership, or a substring of a string value
    listed = modules if isinstance(modules, str) else [m for m in modules if isinstance(m, str)] \
        if isinstance(modules, list) else []
    required = embedding_layers(getattr(run.arch, "model_type", None))
    missing = [m for m in required if m not in listed]
    if not missing:
        return
    if run.arch is None and any(m in listed and m not in DEFAULT_EMBEDDING_LAYERS
                                for names in EMBEDDING_LAYERS.values() for m in names):
        return  # an unknown model whose author named another family's modules: the model type decides
    where = ("lora_modules_to_save",) if "lora_modules_to_save" in run.raw else ("tokens",)
    yield ax_hit(run, where, required=", ".join(f"`{m}`" for m in required),
                 missing=", ".join(f"`{m}`" for m in missing))


EXPERT_WEIGHT_ORDER = {"gate_up_proj": 0, "gate_proj": 0, "up_proj": 0, "down_proj": 1}
"""Where a transformers 5 experts module defines each 3-D weight: gate_up_proj (or the unfused gate/up) before
down_proj (e.g. models/qwen3_moe, glm4_moe_lite ``*NaiveMoe``)."""


@register_check("lora_quantized_experts_inner_adapter", args=("target", "becomes", "trained"))
def check_quantized_experts_inner_adapter(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`quantize_moe_experts` with two or more expert weights of one experts module adapted, through
    `lora_target_parameters` or module targets PEFT converts to them: PEFT 0.19-0.20 trains only the adapter of the
    weight the module defines last (``memory.params.untrained_expert_adapter_params`` has the mechanism and its
    sources)."""
    if (run.axolotl is None or not run.facts.adapter.value or not run.facts.quantization.value
            or not run.raw.get("quantize_moe_experts")):
        return
    groups: dict[str, list[tuple[tuple[str, int], str, str, bool]]] = {}  # module -> (where, written, weight, moved)
    parameters = run.raw.get("lora_target_parameters")
    for index, target in enumerate(parameters if isinstance(parameters, list) else []):
        if isinstance(target, str) and "." in target:
            module, _, weight = target.rpartition(".")
            groups.setdefault(module, []).append((("lora_target_parameters", index), target, weight, False))
    modules = run.raw.get("lora_target_modules")
    if run.arch is not None and isinstance(modules, list):
        from axlint.memory.setup import peft_targets

        converted = peft_targets(run.facts, run.arch)
        became = dict(zip(converted.moved, converted.moved_to))
        for index, target in enumerate(modules):
            if isinstance(target, str) and target in became:
                groups.setdefault("", []).append((("lora_target_modules", index), target, became[target], True))
    for entries in groups.values():
        ranks = {EXPERT_WEIGHT_ORDER.get(weight, -1) for _, _, weight, _ in entries}
        last = max(ranks)
        if len(ranks) < 2 or min(ranks) < 0:
            continue  # one weight, or no way to tell which one the module defines last
        trained = next(f"`{written if not moved else weight}`" for _, written, weight, moved in entries
                       if EXPERT_WEIGHT_ORDER[weight] == last)
        for where, written, weight, moved in entries:
            if EXPERT_WEIGHT_ORDER[weight] < last:
                becomes = f"PEFT makes it a LoRA on the routed experts' `{weight}`, and " if moved else ""
                yield ax_hit(run, where, part="value", target=written, becomes=becomes, trained=trained)


LORA_ATTENTION_REWRITE_SINCE = "0.18.0"
"""The Axolotl release whose attention rewrite (with the transformers it pins, 5.14.1) ``LORA_ATTENTION_REWRITE_FAILS``
was read from; earlier releases pin other transformers, whose attention code differs."""


def _kernel_hits(run: TrainingRun, flags: tuple[str, ...], auto: bool = True, **args: str) -> Iterator[Hit]:
    """Hits that turn the failing LoRA kernels off: one at each of `flags` written true, with the fix that sets it
    false; when none is written and Axolotl turned the kernels on by itself (no `lora_*_kernel` flag written) and
    `auto`, one at `adapter` with the fix that writes `lora_qkv_kernel: false` (a written kernel flag stops Axolotl
    from turning any of them on). `args` fill the message; `how` says which of the two it is."""
    doc = run.axolotl
    assert doc is not None
    written = [key for key in flags if lax_bool(run.raw.get(key)) is True]
    for key in written:
        fix = Fix(doc.path, tuple(set_value(doc, (key,), False)), Applicability.SAFE, f"set `{key}: false`")
        yield ax_hit(run, (key,), "value", fix=fix, how=f"`{key}: true` turns it on", **args)
    by_axolotl = not any(run.raw.get(key) is not None for key in LORA_KERNEL_FLAGS)
    if not written and auto and by_axolotl and doc.node(("adapter",)) is not None:
        fix = Fix(doc.path, tuple(set_value(doc, ("lora_qkv_kernel",), False)), Applicability.SAFE,
                  "write `lora_qkv_kernel: false` (Axolotl then turns none of its LoRA kernels on by itself)")
        yield ax_hit(run, ("adapter",), "value", fix=fix,
                     how="no `lora_*_kernel` flag is written, so Axolotl turns its LoRA kernels on by itself", **args)


def _judged_release(run: TrainingRun) -> bool:
    """The run's Axolotl release is one the kernel rules were judged on (``LORA_ATTENTION_REWRITE_SINCE`` on)."""
    return run.axolotl_from(LORA_ATTENTION_REWRITE_SINCE) is not False


def _judged_arch(run: TrainingRun) -> Architecture | None:
    """The run's architecture where the kernel rules judge it: an Axolotl config of a judged release
    (``_judged_release``) whose model resolves; None otherwise."""
    if run.axolotl is None or run.arch is None or not _judged_release(run):
        return None
    return run.arch


@register_check("ax_lora_kernel_attention", args=("model_type", "error", "how", "mlp"), fix=FixAvailability.ALWAYS)
def check_lora_kernel_attention(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The fused LoRA QKV or O kernel on a model whose attention Axolotl cannot rewrite for it
    (``facts.lora_attention_rewrite_error``), at the flags that turn it on (``_kernel_hits``)."""
    arch = _judged_arch(run)
    if arch is None:
        return
    error = lora_attention_rewrite_error(run.facts, arch.model_type)
    if error is not None:
        keeps_mlp = (arch.model_type not in LORA_KERNEL_LAYERS_NOT_FOUND
                     and not fp32_layer_inputs(run.facts, *arch.autocast_dtype_facts) and _mlp_kernel_runs(run, arch))
        mlp = " (add `lora_mlp_kernel: true` to keep the MLP kernel)" if keeps_mlp else ""
        yield from _kernel_hits(run, ("lora_qkv_kernel", "lora_o_kernel"), model_type=arch.model_type, error=error,
                                mlp=mlp)


def _mlp_kernel_runs(run: TrainingRun, arch: Architecture) -> bool:
    """Axolotl's LoRA MLP kernel, turned on, runs this run's MLP in some layer (``activations.fused_mlp``: a dense
    gated MLP of SiLU or GELU whose gate, up and down projections all carry an adapter). The run's setup is its
    memory estimate's, read once for every memory rule (an Axolotl run whose model resolves has one)."""
    from axlint.memory.activations import fused_mlp

    assert run.memory is not None
    setup = run.memory.estimate.setup.with_changes(lora_kernels=("mlp",))
    return any(fused_mlp(arch, setup, layers[0]) for layers in arch.kind_layers)


@register_check("ax_lora_kernel_layers", args=("model_type", "error", "how"), fix=FixAvailability.ALWAYS)
def check_lora_kernel_layers(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A fused LoRA kernel on a causal LM whose layers Axolotl's kernel patch cannot find
    (``facts.lora_kernel_layers_error``), at the flags that turn it on (``_kernel_hits``). Where the QKV / O kernels'
    attention rewrite fails first, before the load (AX233, which then also owns the kernels Axolotl turned on by
    itself), only a written `lora_mlp_kernel: true` is left to report; a reward model fails earlier still (AX234)."""
    arch = _judged_arch(run)
    if arch is None or run.facts.head != "lm":
        return
    error = lora_kernel_layers_error(run.facts, arch.model_type)
    if error is None:
        return
    rewrite_fails = lora_attention_rewrite_error(run.facts, arch.model_type) is not None
    flags = ("lora_mlp_kernel",) if rewrite_fails else ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel")
    yield from _kernel_hits(run, flags, auto=not rewrite_fails, model_type=arch.model_type, error=error)


@register_check("ax_lora_qkv_fp32_hidden", args=("model_type", "cause", "error", "how"), fix=FixAvailability.ALWAYS)
def check_lora_qkv_fp32_hidden(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The fused LoRA QKV kernel on a QLoRA whose MLP activation CUDA's autocast makes fp32
    (``facts.lora_qkv_dtype_error``), at the flag that turns it on (``_kernel_hits``)."""
    arch = _judged_arch(run)
    if arch is None:
        return
    error = lora_qkv_dtype_error(run.facts, *arch.autocast_dtype_facts)
    if error is not None:
        source = fp32_layer_inputs(run.facts, *arch.autocast_dtype_facts)
        yield from _kernel_hits(run, ("lora_qkv_kernel",), model_type=arch.model_type, error=error,
                                cause=FP32_SOURCE_CAUSES[str(source)])


@register_check("ax_lora_mlp_fp32_hidden", args=("model_type", "cause", "error", "how"), fix=FixAvailability.ALWAYS)
def check_lora_mlp_fp32_hidden(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A written `lora_mlp_kernel: true` on a QLoRA whose MLP reads fp32 hidden states
    (``facts.lora_kernel_dtype_error``) where the kernel runs the model's MLP (``_mlp_kernel_runs``). The kernels
    Axolotl turns on by itself are AX237's, whose fix turns them all off."""
    arch = _judged_arch(run)
    if arch is None or lax_bool(run.raw.get("lora_mlp_kernel")) is not True:
        return
    error = lora_kernel_dtype_error(run.facts, *arch.autocast_dtype_facts)
    if error is not None and _mlp_kernel_runs(run, arch):
        source = fp32_layer_inputs(run.facts, *arch.autocast_dtype_facts)
        yield from _kernel_hits(run, ("lora_mlp_kernel",), auto=False, model_type=arch.model_type, error=error,
                                cause=FP32_MLP_INPUT_CAUSES[str(source)])


@register_check("ax_sdpa_varlen_fp32_hidden", args=("model_type", "cause", "error"), fix=FixAvailability.ALWAYS)
def check_sdpa_varlen_fp32_hidden(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Axolotl's variable-length sdpa for packed rows on a QLoRA whose hidden states are fp32
    (``facts.sdpa_varlen_dtype_error``), under the Axolotl releases that send fp32 queries to it (before
    ``SDPA_VARLEN_FP32_FALLBACK_SINCE``), at the key that turns it on (`sdpa_varlen: true`, else the attention key),
    with the fix that writes `sdpa_varlen: false`."""
    arch, doc = _judged_arch(run), run.axolotl
    if arch is None or doc is None or run.axolotl_from(SDPA_VARLEN_FP32_FALLBACK_SINCE):
        return
    error = sdpa_varlen_dtype_error(run.facts, arch.model_type, arch.config, arch.kbit_layer_norm)
    if error is None:
        return
    written = run.facts.sdpa_varlen is True
    key = ("sdpa_varlen",) if written else run.facts.attn_implementation.key or ("attn_implementation",)
    fix = Fix(doc.path, tuple(set_value(doc, ("sdpa_varlen",), False)), Applicability.SAFE,
              "set `sdpa_varlen: false`" if written else "write `sdpa_varlen: false`")
    yield ax_hit(run, key, "value", fix=fix, model_type=arch.model_type, error=error,
                 cause=FP32_SOURCE_CAUSES[str(fp32_layer_inputs(run.facts, *arch.autocast_dtype_facts))])


@register_check("ax_lora_kernel_classifier", args=("head", "how"), fix=FixAvailability.ALWAYS)
def check_lora_kernel_classifier(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Any fused LoRA kernel on a reward or process reward model: PEFT wraps its classification model as
    PeftModelForSequenceClassification / PeftModelForTokenClassification, which Axolotl's kernel patch refuses
    (``apply_lora_kernel_patches`` asks for a PeftModelForCausalLM), at the flags that turn it on
    (``_kernel_hits``)."""
    facts = run.facts
    if run.axolotl is None or facts.head == "lm" or not facts.adapter.value or not _judged_release(run):
        return
    if {"mlp", "qkv", "o"} & set(facts.lora_kernels):
        head = "reward_model" if facts.head == "sequence" else "process_reward_model"
        yield from _kernel_hits(run, ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel"), head=head)


_FULL_PRECISION = "Subsequently, re-quantize the residual model to help minimize quantization errors."
_INITS = "`true`, `false`, `gaussian`, `olora`, `pissa`, `pissa_niter_N` (N an integer), `orthogonal`"


def peft_init_refusal(value: object, rank: int, quantization: str | None,
                      loftq_bits: bool) -> tuple[str, str, str] | None:
    """(what is wrong, PEFT's error, what to write) for a `peft_init_lora_weights` that PEFT 0.19.1 refuses, as
    Axolotl 0.18.0 hands it over (a truthy value only, ``_build_lora_config_kwargs``); None when PEFT runs it. The
    order is PEFT's ``LoraLayer.update_layer`` (tuners/lora/layer.py): ``pissa*`` and ``corda*`` first take the
    weights in full precision (``pissa_init`` / ``corda_init``: a 4/8-bit load has none), then PiSSA's name is read
    (``pissa`` or ``pissa_niter_<int>``) and CorDA's needs ``preprocess_corda``, which Axolotl does not run;
    ``olora`` (any case), ``eva`` and ``lora_ga`` run; ``loftq`` needs the ``loftq_config`` Axolotl builds from
    ``peft.loftq_config.loftq_bits`` (``LoraConfig.__post_init__``, tuners/lora/config.py); ``orthogonal`` needs an
    even rank; anything else but ``gaussian`` (any case) is unknown (``reset_lora_parameters``)."""
    if not isinstance(value, str) or not value:
        return None
    if value.startswith(("pissa", "corda")):
        method = "PiSSA" if value.startswith("pissa") else "CorDA"
        if quantization is not None:
            return (f"takes the full-precision weights for {method}, which this {'4' if quantization == 'nf4' else '8'}"
                    "-bit load does not keep",
                    f"TypeError: Please initialize {method} under float32, float16, or bfloat16. {_FULL_PRECISION}",
                    f"Initialize {method} on a 16-bit load, or write `olora`, which PEFT also runs on a quantized one")
        if method == "CorDA":
            return ("needs PEFT's `preprocess_corda` run over data first, which Axolotl does not run",
                    "ValueError: `eigens` attribute not found for layer, please run `preprocess_corda` first.",
                    "Write `pissa` or `olora`, or drop the key")
        parts = value.split("_niter_")
        if value == "pissa" or (len(parts) == 2 and _is_int(parts[1])):
            return None
        error = (f"ValueError: invalid literal for int() with base 10: {parts[1]!r}" if len(parts) == 2 else
                 f"ValueError: init_lora_weights should be 'pissa' or 'pissa_niter_[number of iters]', got {value} "
                 "instead.")
        return "is neither `pissa` nor `pissa_niter_N` with N an integer", error, \
            "Write `pissa`, or `pissa_niter_4` for PEFT's faster randomized SVD"
    if value.lower() in ("olora", "gaussian") or value in ("eva", "lora_ga"):
        return None
    if value == "loftq":
        return None if loftq_bits else (
            "without `peft.loftq_config.loftq_bits`, from which Axolotl builds the `loftq_config` LoftQ needs",
            "ValueError: `loftq_config` must be specified when `init_lora_weights` is 'loftq'.",
            "Write `peft: {loftq_config: {loftq_bits: 4}}`, which selects LoftQ by itself")
    if value == "orthogonal":
        return None if rank % 2 == 0 else (
            f"with an odd `lora_r` ({rank})",
            f"ValueError: Orthogonal initialization requires the LoRA rank to be even, got {rank} instead.",
            f"Set an even `lora_r` (e.g. {rank + 1})")
    return ("is not an initialization PEFT knows", f"ValueError: Unknown initialization init_lora_weights={value!r}",
            f"Write one of {_INITS}, or `loftq` with `peft.loftq_config.loftq_bits`")


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


@register_check("lora_init_peft_refuses", args=("value", "problem", "stage", "error", "advice"))
def lora_init_peft_refuses(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A `peft_init_lora_weights` PEFT refuses (``peft_init_refusal``), on its value."""
    facts, raw = run.facts, run.raw
    value = raw.get("peft_init_lora_weights")
    if run.axolotl is None or facts.adapter.value not in ("lora", "qlora") or not isinstance(value, str):
        return
    peft = raw.get("peft")
    loftq = peft.get("loftq_config") if isinstance(peft, dict) else None
    refusal = peft_init_refusal(value, facts.lora.r, facts.quantization.value,
                                isinstance(loftq, dict) and bool(loftq.get("loftq_bits")))
    if refusal is None:
        return
    problem, error, advice = refusal
    stage = "when Axolotl builds the LoRA config" if value == "loftq" else "while it wraps the model"
    yield ax_hit(run, ("peft_init_lora_weights",), part="value", value=value, problem=problem,
                 stage=f"{stage}, once the model is loaded", error=error.rstrip("."), advice=advice)
