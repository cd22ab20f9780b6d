"""Features whose prerequisites Axolotl checks at start-up: a flag that needs another setting, or a value Axolotl
no longer takes. Each function mirrors one validator of Axolotl 0.18.0 and reads the config the way it does: a
`mode="before"` validator reads the written value (`data.get(...)`), a `mode="after"` one the validated field, for
which the resolved run (`run.facts`: the attention backend after the legacy flags, the FSDP version wherever it is
written) stands in. tests/test_oracle.py and the rules' cases hold them to the real validators.
"""
from __future__ import annotations

from typing import Any, Iterator

from axlint.checks.locate import ax_hit
from axlint.checks.startup import release_adapters
from axlint.edits import delete_key
from axlint.fixes import Applicability, Fix
from axlint.lax import lax_bool, lax_int, truthy
from axlint.rule import FixAvailability, Hit, Rule, register_check
from axlint.run import TrainingRun
from axlint.schemas.validator import version_key

VARLEN_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3", "flex_attention", "xformers", "sage",
                              "kernels-community/flash-attn2", "kernels-community/flash-attn3",
                              "kernels-community/sage-attention"})
"""The attention backends that take packed variable-length batches (`ATTN_IMPLS_SUPPORTING_PACKING`, Axolotl
0.18.0 utils/schemas/enums.py)."""

SAFETENSORS_ONLY_SINCE = "0.14.0"
"""The first Axolotl release that refuses `save_safetensors: false` (`ModelOutputConfig.validate_save_safetensors`,
utils/schemas/model.py): it runs on transformers 5, which saves safetensors only."""


def _raw(run: TrainingRun) -> dict[str, Any] | None:
    return run.raw if run.axolotl is not None and isinstance(run.raw, dict) else None


def _fsdp_version(raw: dict[str, Any]) -> int | None:
    """The FSDP version as Axolotl's validated config holds it: top-level `fsdp_version`, else the one written in
    `fsdp_config` (`fsdp_version` or `version`)."""
    block = raw.get("fsdp_config") if isinstance(raw.get("fsdp_config"), dict) else {}
    return lax_int(raw.get("fsdp_version") or block.get("fsdp_version") or block.get("version"))


def _selective_checkpointing(raw: dict[str, Any]) -> str | None:
    """`check_selective_checkpointing` (validation.py): it needs gradient checkpointing, non-reentrant, and no
    activation offloading other than `hidden_states`."""
    kwargs = raw.get("gradient_checkpointing_kwargs")
    offloading = raw.get("activation_offloading")
    if not truthy(raw.get("gradient_checkpointing")):
        return "needs `gradient_checkpointing: true`, whose recomputation it selects from"
    if isinstance(kwargs, dict) and truthy(kwargs.get("use_reentrant")):
        return "needs non-reentrant checkpointing; set `gradient_checkpointing_kwargs.use_reentrant: false`"
    if truthy(offloading) and offloading != "hidden_states":
        return (f"works beside `activation_offloading: hidden_states` (or false) only, not "
                f"`{str(offloading).lower() if isinstance(offloading, bool) else offloading}`")
    return None


def _problems(run: TrainingRun, raw: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, what is missing) for each feature whose prerequisite is not met. The validators (Axolotl 0.18.0
    utils/schemas/validation.py unless named): `check_evals` (do_bench_eval), `check_fp8_config`,
    `check_selective_checkpointing`, `check_scaling_softmax_requires_flex`, `check_better_transformers`
    (flash_optimum), `check_batch_flattening_fa`, and config.py `check_fp32_norms`."""
    attention = run.facts.attn_implementation.value
    if truthy(raw.get("do_bench_eval")) and not (truthy(raw.get("evals_per_epoch")) or truthy(raw.get("eval_steps"))):
        yield "do_bench_eval", "needs `evals_per_epoch` or `eval_steps`: the benchmark runs at evaluation time"
    if truthy(raw.get("fp8_enable_fsdp_float8_all_gather")) and lax_int(raw.get("fsdp_version")) != 2:
        yield ("fp8_enable_fsdp_float8_all_gather",
               "needs FSDP2 written as a top-level `fsdp_version: 2` (this check reads no `fsdp_config` key)")
    if truthy(raw.get("selective_checkpointing")) and (problem := _selective_checkpointing(raw)) is not None:
        yield "selective_checkpointing", problem
    if truthy(raw.get("scaling_softmax")) and attention != "flex_attention":
        yield "scaling_softmax", "needs `attn_implementation: flex_attention`"
    if raw.get("flash_optimum") is True and (raw.get("bf16", "auto") == "auto" or truthy(raw.get("bf16"))
                                             or truthy(raw.get("fp16"))):
        yield ("flash_optimum", "(BetterTransformer) runs without mixed precision: Axolotl refuses it beside bf16 "
                                "or fp16, and `bf16` is `auto` unless written; set `bf16: false`")
    batch_flattening = raw.get("batch_flattening")
    if truthy(batch_flattening) and batch_flattening != "auto":
        if attention not in VARLEN_ATTENTION:
            yield ("batch_flattening", f"needs an attention backend that takes variable-length batches "
                                       f"(flash_attention_2, flex_attention, ...), not {attention or 'the default sdpa'}")
        elif truthy(raw.get("sample_packing")):
            yield "batch_flattening", "cannot run beside `sample_packing`, which packs the batch another way"
    if truthy(raw.get("fp32_norms")):
        if raw.get("fsdp_config") is None:
            yield "fp32_norms", "needs FSDP2: an `fsdp_config` block with `fsdp_version: 2`"
        elif _fsdp_version(raw) != 2:
            yield "fp32_norms", "needs `fsdp_version: 2`: FSDP1 keeps one dtype per flattened unit"


@register_check("startup_feature_prerequisite", args=("key", "problem"))
def feature_prerequisite(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A feature flag whose prerequisite is missing (`_problems`), at the flag."""
    raw = _raw(run)
    if raw is None:
        return
    for key, problem in _problems(run, raw):
        yield ax_hit(run, (key,), key=key, problem=problem)


def _relora_problem(run: TrainingRun, raw: dict[str, Any]) -> tuple[str, str] | None:
    """(key to point at, what is wrong) for `check_relora` (validation.py), first failing check first."""
    adapter = raw.get("adapter")
    builtin = (release_adapters(run) or {}).get("builtin", ())
    if not truthy(raw.get("jagged_restart_steps")):
        return "relora", "needs `jagged_restart_steps`, the steps between two restarts"
    if not adapter or (adapter in builtin and adapter not in ("lora", "qlora")):
        return ("adapter" if adapter else "relora"), "needs `adapter: lora` or `adapter: qlora`"
    if truthy(raw.get("fsdp")) or truthy(raw.get("fsdp_config")):
        return "relora", "cannot run under FSDP"
    if truthy(raw.get("deepspeed")):
        return "relora", "cannot run under DeepSpeed"
    if raw.get("lr_scheduler") == "one_cycle":
        return "lr_scheduler", "cannot run with `lr_scheduler: one_cycle`"
    if truthy(raw.get("flash_attn_fuse_mlp")):
        return "flash_attn_fuse_mlp", "cannot run with fused MLP modules (`flash_attn_fuse_mlp`)"
    return None


@register_check("startup_relora", args=("problem",))
def relora(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`relora: true` with a setting `check_relora` refuses, or without one it needs."""
    raw = _raw(run)
    if raw is None or not truthy(raw.get("relora")):
        return
    found = _relora_problem(run, raw)
    if found is not None:
        key, problem = found
        yield ax_hit(run, (key,), problem=problem)


@register_check("startup_save_safetensors_false", fix=FixAvailability.ALWAYS)
def save_safetensors_false(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`save_safetensors: false` under an Axolotl release from SAFETENSORS_ONLY_SINCE on. Deleting the line is safe:
    those releases can only save safetensors, which is what the line's absence means."""
    raw = _raw(run)
    if raw is None or lax_bool(raw.get("save_safetensors")) is not False:
        return
    version = run.schemas.axolotl if run.schemas is not None else None
    if version is not None and version_key(version) < version_key(SAFETENSORS_ONLY_SINCE):
        return
    doc = run.axolotl
    assert doc is not None
    fix = Fix(doc.path, tuple(delete_key(doc, ("save_safetensors",))), Applicability.SAFE,
              "delete `save_safetensors: false`")
    yield ax_hit(run, ("save_safetensors",), "value", fix=fix)
