"""Features whose prerequisites Axolotl checks at start-up: a flag that needs another setting, or a value Axolotl
no longer takes. Each function mirrors one validator of Axolotl 0.18.0 and reads the config the way it does: a
`mode="before"` validator reads the written value (`data.get(...)`), a `mode="after"` one the validated field, for
which the resolved run (`run.facts`: the attention backend after the legacy flags, the FSDP version wherever it is
written, the expert kernels) stands in. tests/test_oracle_rule_cases.py and tests/test_oracle_choices.py hold them
to the real validators.
"""
from __future__ import annotations

from typing import Any, Iterator

from axlint.checks.locate import ax_hit, key_label, lists_plugin, written_block, written_config
from axlint.checks.startup import release_adapters
from axlint.edits import delete_key
from axlint.facts import KERNELS_PLUGIN, LIGER_PLUGIN, SWANLAB_PLUGIN, written_fsdp_version
from axlint.fixes import Applicability, Fix
from axlint.lax import lax_bool, truthy
from axlint.rule import FixAvailability, Hit, Rule, register_check
from axlint.run import TrainingRun

VARLEN_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3", "flex_attention", "xformers", "sage",
                              "kernels-community/flash-attn2", "kernels-community/flash-attn3",
                              "kernels-community/sage-attention"})
"""The attention backends that take packed variable-length batches (`ATTN_IMPLS_SUPPORTING_PACKING`, Axolotl
0.18.0 utils/schemas/enums.py)."""

SAFETENSORS_ONLY_SINCE = "0.14.0"
"""The first Axolotl release that refuses `save_safetensors: false` (`ModelOutputConfig.validate_save_safetensors`,
utils/schemas/model.py): it runs on transformers 5, which saves safetensors only."""


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


def _problems(run: TrainingRun, raw: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], str]]:
    """(key path, what is missing) for each feature whose prerequisite is not met. The validators (Axolotl 0.18.0
    utils/schemas/validation.py unless named): `check_evals` (do_bench_eval), `check_fp8_config`,
    `check_selective_checkpointing`, `check_scaling_softmax_requires_flex`, `check_better_transformers`
    (flash_optimum), `check_batch_flattening_fa`, `check_pretraining_w_max_steps`, `check_peft_layers_pattern`,
    `check_nemotron_h_gradient_checkpointing`, `check_push_ds_auth`, `check_fsdp2_cpu_offload_pin_memory`,
    `check_dpo` (dpo_loss_weights); integrations/liger/args.py `check_liger_use_token_scaling_flce`;
    config.py `check_fp32_norms`, `check_torch_compile_options_requires_compile`; fsdp.py
    `FSDPConfig.validate_size_based_wrap`."""
    for key, problem in _flag_problems(run, raw):
        yield (key,), problem
    yield from _fsdp_problems(raw)
    yield from _swanlab_problems(raw)


def _flag_problems(run: TrainingRun, raw: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(top-level key, what is missing) of the validators `_problems` lists."""
    attention = run.facts.attn_implementation.value
    if truthy(raw.get("do_bench_eval")) and not (truthy(raw.get("evals_per_epoch")) or truthy(raw.get("eval_steps"))):
        yield "do_bench_eval", "needs `evals_per_epoch` or `eval_steps`: the benchmark runs at evaluation time"
    if truthy(raw.get("fp8_enable_fsdp_float8_all_gather")) and raw.get("fsdp_version") != 2:
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
        elif written_fsdp_version(raw) != 2:
            yield "fp32_norms", "needs `fsdp_version: 2`: FSDP1 keeps one dtype per flattened unit"
    if truthy(raw.get("pretraining_dataset")) and not truthy(raw.get("max_steps")):  # check_pretraining_w_max_steps
        yield "pretraining_dataset", "needs `max_steps`: a streamed pretraining dataset has no length to count steps from"
    if truthy(raw.get("peft_layers_pattern")) and not truthy(raw.get("peft_layers_to_transform")):
        yield "peft_layers_pattern", "needs `peft_layers_to_transform`, the layer indices it names"
    if ("nemotron-h" in str(raw.get("base_model") or "").lower() and truthy(raw.get("gradient_checkpointing"))
            and not run.facts.sample_packing.value):  # check_nemotron_h_gradient_checkpointing
        yield ("gradient_checkpointing", "for a Nemotron-H model needs `sample_packing: true`: the model enables "
                                         "checkpointing only through Axolotl's packing patch")
    if truthy(raw.get("push_dataset_to_hub")) and raw.get("hf_use_auth_token") is not True:  # check_push_ds_auth
        yield "push_dataset_to_hub", "needs `hf_use_auth_token: true`"
    if raw.get("rl") == "dpo" and raw.get("dpo_loss_weights") is not None and raw.get("dpo_loss_type") is None:
        yield "dpo_loss_weights", "needs `dpo_loss_type`, the losses it weighs"  # check_dpo
    if (lists_plugin(raw, LIGER_PLUGIN) and truthy(raw.get("liger_use_token_scaling"))
            and not truthy(raw.get("liger_fused_linear_cross_entropy"))):  # liger/args.py
        yield "liger_use_token_scaling", "needs `liger_fused_linear_cross_entropy: true`, whose loss it scales"
    if lists_plugin(raw, KERNELS_PLUGIN):
        yield from _merge_aware_problems(run, raw)
    if raw.get("torch_compile_options") is not None and not truthy(raw.get("torch_compile")):
        yield ("torch_compile_options",  # config.py check_torch_compile_options_requires_compile
               "needs `torch_compile: true` (or `auto`), without which the flags do nothing")


def _merge_aware_problems(run: TrainingRun, raw: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The Kernels plugin's `check_nvfp4_merge_aware` (integrations/kernels/args.py): the start step needs the
    feature, and the feature needs the SonicMoE backend and a LoRA adapter."""
    if not truthy(raw.get("nvfp4_merge_aware")):
        if raw.get("nvfp4_merge_aware_start_step") is not None:
            yield "nvfp4_merge_aware_start_step", "needs `nvfp4_merge_aware: true`"
        return
    if "sonicmoe" not in run.facts.expert_kernels:
        yield "nvfp4_merge_aware", "needs the SonicMoE expert backend (`expert_backend: sonicmoe`)"
    elif raw.get("adapter") != "lora":
        yield "nvfp4_merge_aware", "needs `adapter: lora`: it snaps the LoRA delta to the NVFP4 grid of the base"


def _swanlab_problems(raw: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """With the SwanLab plugin listed, `use_swanlab` defaults to true, and then `swanlab_project` is required
    (integrations/swanlab/args.py `validate_swanlab_enabled_requires_project`): at `use_swanlab` when it is written,
    else at the plugin's entry in `plugins:`."""
    if not lists_plugin(raw, SWANLAB_PLUGIN) or truthy(raw.get("swanlab_project")):
        return
    written = raw.get("use_swanlab", True)
    if written is True or lax_bool(written) is True:
        if "use_swanlab" in raw:
            yield ("use_swanlab",), "needs `swanlab_project`, the project the runs are logged to"
        else:
            yield (("plugins", raw["plugins"].index(SWANLAB_PLUGIN)),
                   "(the SwanLab plugin) turns SwanLab on, since `use_swanlab` defaults to true, and SwanLab needs "
                   "`swanlab_project`, the project the runs are logged to; name one or set `use_swanlab: false`")


def _fsdp_problems(raw: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], str]]:
    """(path in `fsdp_config`, what is missing): unpinned offload memory needs FSDP2 (read from the top-level
    `fsdp_version` only) and `offload_params`; size-based wrapping needs `min_num_params` (either key may carry
    the legacy `fsdp_` prefix, which Axolotl strips first)."""
    fsdp = written_block(raw, "fsdp_config")
    if fsdp.get("cpu_offload_pin_memory") is False:
        if str(raw.get("fsdp_version")) != "2":
            yield (("fsdp_config", "cpu_offload_pin_memory"),
                   "set to false needs FSDP2 written as a top-level `fsdp_version: 2`")
        elif not truthy(fsdp.get("offload_params")):
            yield (("fsdp_config", "cpu_offload_pin_memory"),
                   "set to false needs `offload_params: true`: it only says whether offloaded parameters are pinned")
    policy = next((k for k in ("auto_wrap_policy", "fsdp_auto_wrap_policy") if k in fsdp), None)
    if policy is not None and fsdp[policy] == "SIZE_BASED_WRAP" and fsdp.get(
            "min_num_params", fsdp.get("fsdp_min_num_params")) is None:
        yield (("fsdp_config", policy), "is `SIZE_BASED_WRAP`, which needs `min_num_params`, the parameter count "
                                        "of a wrapped unit")


@register_check("startup_feature_prerequisite", args=("key", "problem"))
def feature_prerequisite(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A feature flag whose prerequisite is missing (`_problems`), at the flag."""
    raw = written_config(run)
    if raw is None:
        return
    for path, problem in _problems(run, raw):
        yield ax_hit(run, path, key=key_label(path), problem=problem)


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
    raw = written_config(run)
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
    raw = written_config(run)
    if raw is None or lax_bool(raw.get("save_safetensors")) is not False:
        return
    if run.axolotl_from(SAFETENSORS_ONLY_SINCE) is False:
        return
    doc = run.axolotl
    assert doc is not None
    fix = Fix(doc.path, tuple(delete_key(doc, ("save_safetensors",))), Applicability.SAFE,
              "delete `save_safetensors: false`")
    yield ax_hit(run, ("save_safetensors",), "value", fix=fix)
