"""Checks of Axolotl keys that a `when:` condition cannot say: attention backends, adapters, plugins, ZeRO-3."""
from __future__ import annotations

from typing import Any, Iterator

from axlint import edits
from axlint.checks.locate import ax_hit
from axlint.facts import CCE_PLUGIN, KERNELS_PLUGIN, LEGACY_ATTENTION, LIGER_FLAGS, LIGER_PLUGIN, capability_error
from axlint.fixes import Applicability, Fix
from axlint.lax import is_int, lax_bool
from axlint.rule import FixAvailability, Hit, Rule, register_check
from axlint.run import TrainingRun

FLASH_LIBRARY = frozenset({"flash_attention_2", "flash_attention_3"})
CROSS_ENTROPY_KEYS = ("cut_cross_entropy", "chunked_cross_entropy", "liger_cross_entropy",
                      "liger_fused_linear_cross_entropy")


def plugins(run: TrainingRun) -> list[str]:
    """The `plugins:` the config lists (Axolotl registers each before it validates the config)."""
    listed = run.raw.get("plugins")
    return [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []


def glm_dsa_context_parallel(run: TrainingRun) -> bool:
    """`use_glm_dsa_kernels` with the kernels plugin: the GLM DSA kernels bring their own context-parallel
    attention, and Axolotl skips its flash-attention requirements for context parallelism (Axolotl 0.18.0
    `utils/schemas/validation.py`, `check_context_parallel_size`; the key exists only with the plugin)."""
    return bool(run.raw.get("use_glm_dsa_kernels")) and KERNELS_PLUGIN in plugins(run)


def attention_key(run: TrainingRun) -> tuple[str, ...]:
    """The key that chose the attention backend (for locating a finding)."""
    return run.facts.attn_implementation.key or ("attn_implementation",)


def is_flash_library(backend: str | None) -> bool:
    """flash-attn kernels: FA2/FA3, or a hub kernel of that library (`kernels-community/...flash-attn...`)."""
    return backend in FLASH_LIBRARY or (isinstance(backend, str) and "/" in backend and "flash" in backend)


def above_one(value: Any) -> bool:
    return is_int(value) and value > 1


@register_check("ax_sample_packing_attention")
def check_sample_packing_attention(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`sample_packing` with no attention backend: packed samples are not isolated (Axolotl 0.18.0 warns)."""
    if run.axolotl is not None and run.facts.sample_packing.value and run.facts.attn_implementation.value is None:
        yield ax_hit(run, ("sample_packing",))


@register_check("ax_eager_long_sequence", args=("sequence_len", "size"), options=("min_sequence_len",))
def check_eager_long_sequence(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Eager attention keeps the fp32 softmax of every head: 6·heads·seq² bytes per sequence and layer; nothing for a
    decoder without softmax attention (Mamba)."""
    seq = run.facts.sequence_len.value
    threshold = rule.options["min_sequence_len"]
    if run.axolotl is None or run.facts.attn_implementation.value != "eager" or seq < threshold:
        return
    if run.arch is not None and not any(map(run.arch.has_attention, range(run.arch.num_layers))):
        return
    heads = getattr(run.arch, "num_heads", None)
    mbs = run.facts.micro_batch_size.value
    size = (f"{6 * heads * seq * seq * mbs / 2**30:.1f} GiB per layer for {heads} heads × micro batch {mbs}"
            if heads else f"{6 * seq * seq / 2**30:.2f} GiB per head, layer and sequence")
    yield ax_hit(run, attention_key(run), part="value", sequence_len=seq, size=size)


@register_check("ax_reentrant_zero3", fix=FixAvailability.SOMETIMES)
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


@register_check("ax_multiple_cross_entropy", args=("problem",))
def check_multiple_cross_entropy(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """More than one cross-entropy replacement on. Refused when the YAML turns on two (Axolotl 0.18.0
    `utils/schemas/validation.py`, `check_cross_entropy_conflicts`) or when `chunked_cross_entropy` is on with the
    Cut Cross Entropy plugin listed (`integrations/cut_cross_entropy/args.py`, `check_chunked_cross_entropy_not_set`,
    whatever `cut_cross_entropy` says). Accepted, though both patch the loss, when the plugin's default turns
    `cut_cross_entropy` on and a Liger cross-entropy is on with the Liger plugin listed."""
    on = [k for k in CROSS_ENTROPY_KEYS if run.raw.get(k)]
    listed = plugins(run)
    if len(on) > 1:
        yield ax_hit(run, (on[1],), problem=f"{', '.join(f'`{k}`' for k in on)} are all on: Axolotl refuses the "
                                            "config, it allows one cross-entropy replacement at a time; keep one")
    elif CCE_PLUGIN in listed and run.raw.get("chunked_cross_entropy"):
        yield ax_hit(run, ("chunked_cross_entropy",),
                     problem="`chunked_cross_entropy` with the Cut Cross Entropy plugin listed: Axolotl refuses the "
                             "config (the plugin refuses chunked cross-entropy even with `cut_cross_entropy: "
                             "false`); remove the key or the plugin")
    elif CCE_PLUGIN in listed and "cut_cross_entropy" not in run.raw and LIGER_PLUGIN in listed:
        liger = [k for k in ("liger_cross_entropy", "liger_fused_linear_cross_entropy") if run.raw.get(k)]
        if liger:
            yield ax_hit(run, (liger[0],),
                         problem=f"`{liger[0]}` is on and the Cut Cross Entropy plugin turns `cut_cross_entropy` "
                                 "on by default: Axolotl starts, but both plugins patch the model's loss when it "
                                 "loads and only one of the two kernels computes it; write `cut_cross_entropy: "
                                 f"false` or remove `{liger[0]}`")


@register_check("ax_plugin_unsupported_model", args=("plugin", "model_type", "error"))
def check_plugin_unsupported_model(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The Cut Cross Entropy or Liger plugin on a model type whose Axolotl support declares it unsupported
    (``facts.capability_error``): the plugin's ``pre_model_load`` raises before the weights load. CCE runs whenever
    its plugin is listed and `cut_cross_entropy` is not written false (the plugin's default is on), reported at the
    key or at the plugin; Liger when a Liger flag is truthy, at the first."""
    arch, listed = run.arch, plugins(run)
    if run.axolotl is None or arch is None:
        return
    error = capability_error(arch.model_type, "cut_cross_entropy")
    if error and CCE_PLUGIN in listed and lax_bool(run.raw.get("cut_cross_entropy")) is not False:
        where = (("cut_cross_entropy",) if "cut_cross_entropy" in run.raw
                 else ("plugins", run.raw["plugins"].index(CCE_PLUGIN)))
        yield ax_hit(run, where, part="value", plugin="Cut Cross Entropy", model_type=arch.model_type, error=error)
    error = capability_error(arch.model_type, "liger")
    flags = [flag for flag in LIGER_FLAGS if run.raw.get(flag)] if LIGER_PLUGIN in listed else []
    if error and flags:
        yield ax_hit(run, (flags[0],), part="value", plugin="Liger", model_type=arch.model_type, error=error)


@register_check("ax_cce_needs_half_precision", args=("bf16",))
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


@register_check("ax_attention_with_legacy_flag", args=("flag", "impl"))
def check_attention_with_legacy_flag(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`attn_implementation` next to a legacy attention flag: Axolotl refuses the combination when the flag is
    truthy, `"true"` and `1` included (Axolotl 0.18.0 `utils/schemas/config.py`, the legacy-flag validator)."""
    if not run.raw.get("attn_implementation"):
        return
    for flag, _ in LEGACY_ATTENTION:
        if run.raw.get(flag):
            yield ax_hit(run, (flag,), flag=flag, impl=run.raw["attn_implementation"])


@register_check("ax_context_parallel_attention", args=("backend",))
def check_context_parallel_attention(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`context_parallel_size` > 1 needs the flash-attn library (ring-flash-attn), unless the GLM DSA kernels
    bring their own context-parallel attention (Axolotl 0.18.0 `utils/schemas/validation.py`,
    `check_context_parallel_size`)."""
    if run.axolotl is None or glm_dsa_context_parallel(run) or not any(
            above_one(run.config.get(k)) for k in ("context_parallel_size", "sequence_parallel_degree")):
        return
    backend = run.facts.attn_implementation.value
    if not is_flash_library(backend):
        where = attention_key(run) if backend else (
            "context_parallel_size" if "context_parallel_size" in run.raw else "sequence_parallel_degree",)
        yield ax_hit(run, where, part="value" if backend else "key", backend=backend or "none")
