"""Checks of Axolotl keys that a `when:` condition cannot say: attention backends, adapters, plugins, ZeRO-3."""
from __future__ import annotations

from typing import Any, Iterator

from axlint import edits
from axlint.checks import Hit, register_check
from axlint.engine import Rule
from axlint.facts import LEGACY_ATTENTION
from axlint.fixes import Applicability, Fix
from axlint.run import TrainingRun


FLASH_LIBRARY = frozenset({"flash_attention_2", "flash_attention_3"})
LORA_KEYS = ("lora_r", "lora_alpha", "lora_target_modules", "lora_target_linear", "lora_modules_to_save")
EMBEDDING_MODULES = frozenset({"embed_tokens", "lm_head", "wte", "embed_in", "embed_out", "word_embeddings",
                               "tok_embeddings", "output"})
CROSS_ENTROPY_KEYS = ("cut_cross_entropy", "chunked_cross_entropy", "liger_cross_entropy",
                      "liger_fused_linear_cross_entropy")
CCE_PLUGIN = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"


def attention_key(run: TrainingRun) -> tuple[str, ...]:
    """The key that chose the attention backend (for locating a finding)."""
    return run.facts.attn_implementation.key or ("attn_implementation",)


def is_flash_library(backend: str | None) -> bool:
    """flash-attn kernels: FA2/FA3, or a hub kernel of that library (`kernels-community/...flash-attn...`)."""
    return backend in FLASH_LIBRARY or (isinstance(backend, str) and "/" in backend and "flash" in backend)


def ax_hit(run: TrainingRun, path: tuple[str | int, ...], part: str = "key", fix: Fix | None = None,
           **args: Any) -> Hit:
    doc, span = run.ax_span(path, part)
    return Hit(doc, span, args, fix)


def above_one(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 1


@register_check("ax_sample_packing_attention")
def check_sample_packing_attention(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`sample_packing` with no attention backend: packed samples are not isolated (axolotl.md §2.3 #46)."""
    if run.axolotl is not None and run.facts.sample_packing.value and run.facts.attn_implementation.value is None:
        yield ax_hit(run, ("sample_packing",))


@register_check("ax_eager_long_sequence")
def check_eager_long_sequence(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Eager attention keeps the fp32 softmax of every head: 6·heads·seq² bytes per sequence and layer."""
    seq = run.facts.sequence_len.value
    threshold = rule.options.get("min_sequence_len", 8192)
    if run.axolotl is None or run.facts.attn_implementation.value != "eager" or seq < threshold:
        return
    heads = getattr(run.arch, "num_heads", None)
    mbs = run.facts.micro_batch_size.value
    size = (f"{6 * heads * seq * seq * mbs / 2**30:.1f} GiB per layer for {heads} heads × micro batch {mbs}"
            if heads else f"{6 * seq * seq / 2**30:.2f} GiB per head, layer and sequence")
    yield ax_hit(run, attention_key(run), part="value", seq=seq, size=size)


@register_check("ax_lora_keys_without_adapter")
def check_lora_keys_without_adapter(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """LoRA keys in a config without `adapter`: Axolotl runs a full fine-tune and ignores them."""
    if run.axolotl is None or run.facts.adapter.value:
        return
    written = [k for k in LORA_KEYS if run.raw.get(k) not in (None, False, [], "")]
    if written:
        yield ax_hit(run, (written[0],), keys=", ".join(f"`{k}`" for k in written))


@register_check("ax_modules_to_save_embeddings")
def check_modules_to_save_embeddings(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`lora_modules_to_save` with the embedding or LM head: full trainable copies with optimizer state."""
    modules = run.config.get("lora_modules_to_save")
    if run.axolotl is None or not run.facts.adapter.value or not isinstance(modules, list):
        return
    arch = run.arch
    params = arch.vocab_size * arch.hidden_size if arch is not None else None
    size = (f"{params / 1e6:.0f}M parameters, ≈{params * 16 / 2**30:.1f} GiB of fp32 weights, gradients and "
            f"AdamW state" if params else "vocab × hidden parameters at ≈16 bytes each with AdamW")
    for index, name in enumerate(modules):
        if isinstance(name, str) and name.rsplit(".", 1)[-1] in EMBEDDING_MODULES:
            yield ax_hit(run, ("lora_modules_to_save", index), part="value", module=name, size=size)


@register_check("ax_reentrant_zero3")
def check_reentrant_zero3(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Non-reentrant gradient checkpointing under ZeRO-3: CheckpointError about recomputed values."""
    kwargs = run.config.get("gradient_checkpointing_kwargs")
    if (run.axolotl is None or not run.facts.gradient_checkpointing.value or not isinstance(kwargs, dict)
            or kwargs.get("use_reentrant") is not False or run.zero_stage != 3):
        return
    needs_non_reentrant = any(run.config.get(k) for k in ("unfrozen_parameters", "selective_checkpointing")) or \
        run.config.get("activation_offloading") == "hidden_states"
    path = ("gradient_checkpointing_kwargs", "use_reentrant")
    fix = None if needs_non_reentrant else Fix(
        run.axolotl.path, tuple(edits.set_value(run.axolotl, path, True)), Applicability.UNSAFE,
        "set `gradient_checkpointing_kwargs.use_reentrant` to true")
    yield ax_hit(run, path, part="value", fix=fix)


@register_check("ax_multiple_cross_entropy")
def check_multiple_cross_entropy(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """More than one cross-entropy replacement turned on in the YAML (axolotl.md §2.3 #86)."""
    on = [k for k in CROSS_ENTROPY_KEYS if run.raw.get(k)]
    if len(on) > 1:
        yield ax_hit(run, (on[1],), keys=", ".join(f"`{k}`" for k in on))


@register_check("ax_cce_needs_half_precision")
def check_cce_half_precision(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The CCE plugin's validator reads the YAML as written: a truthy `cut_cross_entropy` with neither `bf16` nor
    `fp16` truthy is refused (Axolotl 0.18.0 `integrations/cut_cross_entropy/args.py`, `check_dtype_is_half`).
    The plugin's own default (`cut_cross_entropy` on) is not seen by that check, so listing the plugin alone
    passes, and `bf16: auto` (Axolotl's default) trains in bf16 on GPUs that have it."""
    plugins = run.raw.get("plugins")
    if not isinstance(plugins, list) or CCE_PLUGIN not in plugins or not run.raw.get("cut_cross_entropy"):
        return
    if run.raw.get("bf16") or run.raw.get("fp16"):
        return
    where = ("bf16",) if "bf16" in run.raw else ("cut_cross_entropy",)
    yield ax_hit(run, where, part="value", bf16=run.raw.get("bf16", "unset"))


@register_check("ax_attention_with_legacy_flag")
def check_attention_with_legacy_flag(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`attn_implementation` next to a legacy attention flag: Axolotl refuses the combination when the flag is
    truthy, `"true"` and `1` included (Axolotl 0.18.0 `utils/schemas/config.py`, the legacy-flag validator)."""
    if not run.raw.get("attn_implementation"):
        return
    for flag, _ in LEGACY_ATTENTION:
        if run.raw.get(flag):
            yield ax_hit(run, (flag,), flag=flag, impl=run.raw["attn_implementation"])


@register_check("ax_context_parallel_attention")
def check_context_parallel_attention(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`context_parallel_size` > 1 needs the flash-attn library (ring-flash-attn) (§2.3 #119)."""
    if run.axolotl is None or not any(above_one(run.config.get(k)) for k in ("context_parallel_size",
                                                                          "sequence_parallel_degree")):
        return
    backend = run.facts.attn_implementation.value
    if not is_flash_library(backend):
        where = attention_key(run) if backend else (
            "context_parallel_size" if "context_parallel_size" in run.raw else "sequence_parallel_degree",)
        yield ax_hit(run, where, part="value" if backend else "key", backend=backend or "none")
