"""Settings Axolotl refuses together, and values it refuses, at start-up. Each entry mirrors one validator of
Axolotl 0.18.0 (`src/axolotl/utils/schemas/validation.py` unless its docstring names another file) and reads the
config the way it does: `mode="before"` validators read the written value (`data.get(...)`: a key counts when it is
truthy), `mode="after"` ones the validated field. tests/test_oracle_rule_cases.py holds the rules' cases to the real
validators.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

from axlint.checks.locate import ax_hit, key_label, lists_plugin, written_block, written_config
from axlint.facts import KERNELS_PLUGIN, LIGER_PLUGIN, LORA_KERNEL_FLAGS, SWANLAB_PLUGIN
from axlint.lax import as_number, truthy
from axlint.rule import Hit, Rule, format_value, register_check
from axlint.run import TrainingRun

Conflict = tuple[tuple[str, ...], str]
"""(the key path to point at, what Axolotl refuses in words)."""

PREFERENCE_RL = frozenset({"dpo", "kto", "orpo", "ipo"})
"""The preference trainers FSDP2 cannot run on a 4/8-bit base model (`check_fsdp2_base_model_quant_rl`)."""

CAUSAL_LM_METRICS = ("sacrebleu", "comet", "ter", "chrf", "perplexity")
"""What `eval_causal_lm_metrics` takes (`SUPPORTED_METRICS`)."""

LARGE_HEAD_ATTENTION = ("auto", "sdpa", "triton_flash")
"""The policies `large_head_attention` takes (config.py `validate_large_head_attention`, case-insensitive)."""

AO_DTYPES = ("int4", "int8", "float8_e4m3fn", "fp8", "float8", "nvfp4", "mxfp4")
"""What `qat` / `quantization` take for `weight_dtype` and `activation_dtype` (quantization.py
`validate_ao_dtype`)."""

IMAGE_RESIZE = ("bilinear", "bicubic", "lanczos")
"""What `image_resize_algorithm` takes, case-insensitive (multimodal.py `convert_image_resize_algorithm`)."""

RESERVED_PROCESSOR_KWARGS = ("revision", "trust_remote_code")
"""Keys `processor_kwargs` may not hold; the top-level keys set them (model.py
`reject_reserved_processor_kwargs`)."""

KERNEL_CHOICES = {"expert_backend": ("scattermoe", "sonicmoe", "eager", "builtin"),
                  "moe_grouped_backend": ("auto", "marlin", "cutlass", "deepgemm"),
                  "nonexpert_quantization": ("none", "bf16", "fp8", "fp8_blockwise", "nf4", "nvfp4"),
                  "dsv4_fp4_grouped_mode": ("nvfp4",),
                  "dsv4_fp8_nonexpert_mode": ("float8tensor", "bf16")}
"""The KernelsPlugin's choice keys and what each takes, case-insensitive (integrations/kernels/args.py:
`_canonicalize_expert_backend`, `check_moe_grouped_backend`, `check_nonexpert_quantization`,
`check_dsv4_fp4_grouped_mode`, `check_dsv4_fp8_nonexpert_mode`)."""

SWANLAB_MODES = ("cloud", "local", "offline", "disabled")
"""What `swanlab_mode` takes (integrations/swanlab/args.py `validate_swanlab_mode`)."""

INDUCTOR_OPTIONS = frozenset({"coordinate_descent_tuning", "coordinate_descent_check_all_directions", "shape_padding",
                              "epilogue_fusion", "max_autotune_gemm", "fx_graph_cache", "assume_aligned_inputs",
                              "comprehensive_padding", "decompose_mem_bound_mm", "triton.cudagraphs"})
"""The inductor flags `torch_compile_options` takes (`INDUCTOR_COMPILE_OPTIONS_ALLOWLIST`, utils/schemas/enums.py;
config.py `validate_torch_compile_options`)."""


def _base_model(raw: dict[str, Any]) -> str:
    return str(raw.get("base_model") or "").lower()


def _kernel(raw: dict[str, Any]) -> str | None:
    """The first LoRA kernel flag written true, as `check_multigpu_lora_kernels` lists them."""
    return next((k for k in LORA_KERNEL_FLAGS if truthy(raw.get(k))), None)


def _conflicts(run: TrainingRun, raw: dict[str, Any]) -> Iterator[Conflict]:
    """Every pair (or set) of settings one of Axolotl's validators refuses, at the key a user would change."""
    fsdp = written_block(raw, "fsdp_config")
    datasets = raw.get("datasets")
    if truthy(raw.get("adapter")) and truthy(raw.get("peft_layers_to_transform")) and truthy(
            raw.get("unfrozen_parameters")):  # check_frozen
        yield ("unfrozen_parameters",), "`unfrozen_parameters` beside an adapter's `peft_layers_to_transform`"
    if truthy(raw.get("noisy_embedding_alpha")) and truthy(raw.get("neftune_noise_alpha")):  # check_neftune
        yield (("noisy_embedding_alpha",), "both `noisy_embedding_alpha` and its new name `neftune_noise_alpha`; "
                                           "delete `noisy_embedding_alpha`")
    if truthy(raw.get("lr_groups")) and truthy(raw.get("loraplus_lr_ratio")):  # check_lr_groups
        yield ("loraplus_lr_ratio",), "`lr_groups` together with `loraplus_lr_ratio`: both set per-module rates"
    if truthy(raw.get("do_causal_lm_eval")) and truthy(raw.get("eval_sample_packing")):  # check_causal_lm_evals
        yield ("eval_sample_packing",), "`eval_sample_packing` with `do_causal_lm_eval`, which generates per sample"
    if truthy(raw.get("pretrain_multipack_buffer_size")) and truthy(raw.get("streaming_multipack_buffer_size")):
        yield (("pretrain_multipack_buffer_size",),  # check_multipack_buffer_size
               "both `pretrain_multipack_buffer_size` and its new name `streaming_multipack_buffer_size`; delete the "
               "old one")
    if (truthy(raw.get("streaming")) and truthy(raw.get("sample_packing")) and isinstance(datasets, list)
            and len(datasets) > 1):  # check_streaming_w_multiple_datasets
        yield ("sample_packing",), "`sample_packing` over more than one streamed dataset (not implemented)"
    if "falcon" in _base_model(raw) and truthy(raw.get("fsdp")):  # check_falcon_fsdp
        yield ("fsdp",), "FSDP (the `fsdp` list) for a Falcon model"
    if raw.get("rl") == "simpo" and truthy(raw.get("warmup_ratio")):  # check_simpo_warmup
        yield ("warmup_ratio",), "`warmup_ratio` with `rl: simpo`; use `warmup_steps`"
    if "mpt" in _base_model(raw) and truthy(raw.get("gradient_checkpointing")):  # check_mpt_checkpointing
        yield ("gradient_checkpointing",), "gradient checkpointing for an MPT model"
    if raw.get("model_quantization_config") == "Mxfp4Config" and fsdp.get("cpu_ram_efficient_loading") is True:
        yield (("fsdp_config", "cpu_ram_efficient_loading"),  # check_gpt_oss_fsdp_loading
               "FSDP's `cpu_ram_efficient_loading` with `model_quantization_config: Mxfp4Config`")
    rl = raw.get("rl")
    if raw.get("fsdp_version") == 2 and isinstance(rl, str) and rl in PREFERENCE_RL:  # check_fsdp2_base_model_quant_rl
        quantized = next((k for k in ("load_in_8bit", "load_in_4bit") if truthy(raw.get(k))), None)
        if quantized is not None:
            yield ((quantized,), f"`{quantized}` with FSDP2 and `rl: {raw['rl']}`; use DeepSpeed or "
                                 "`fsdp_version: 1`")
    if truthy(raw.get("use_onebitllms")) and raw.get("adapter") in ("lora", "qlora"):  # check_onebitllms_lora
        yield ("use_onebitllms",), f"`use_onebitllms` with `adapter: {raw['adapter']}`"
    if truthy(raw.get("gptq")) and truthy(raw.get("revision_of_model")):  # check_gptq_w_revision
        yield (("revision_of_model",), "`revision_of_model` for a GPTQ model; download that revision and point "
                                       "`base_model` at it")
    if truthy(raw.get("pretraining_dataset")) and truthy(raw.get("include_tokens_per_second")):  # pretrain_with_tps
        yield ("include_tokens_per_second",), "`include_tokens_per_second` with `pretraining_dataset`"
    kernel = _kernel(raw)
    if (kernel is not None and raw.get("fsdp_config") is not None and str(raw.get("fsdp_version")) != "2"
            and run.world_size > 1):  # config.py check_multigpu_lora_kernels
        yield ((kernel,), f"`{kernel}` under FSDP1 on {run.world_size} GPUs; set a top-level `fsdp_version: 2` or "
                          "turn the kernels off")
    trl = written_block(raw, "trl")
    if truthy(raw.get("beta")) and truthy(trl.get("beta")) and raw["beta"] != trl["beta"]:
        yield ("beta",), "`beta` and `trl.beta` differ; keep one"  # config.py check_beta_and_trl_beta_match
    yield from _rl_conflicts(run, raw)
    if not truthy(raw.get("rl")):
        yield from _message_field_conflicts(datasets)
    if lists_plugin(raw, LIGER_PLUGIN):  # integrations/liger/args.py
        if raw.get("liger_swiglu") is not None and raw.get("liger_glu_activation") is not None:
            yield (("liger_swiglu",), "both `liger_swiglu` and its new name `liger_glu_activation`; delete "
                                      "`liger_swiglu`")  # check_deprecated_swiglu
        if (raw.get("liger_glu_activation") is True and raw.get("tiled_mlp") is True
                and not truthy(raw.get("tiled_mlp_use_original_mlp"))):  # check_tiled_mlp_conflict
            yield (("tiled_mlp",), "`tiled_mlp` with `liger_glu_activation`, unless `tiled_mlp_use_original_mlp: "
                                   "true` keeps the model's own MLP to tile")
    if lists_plugin(raw, KERNELS_PLUGIN):
        yield from _kernel_conflicts(run, raw)
    plugins = raw.get("plugins") if isinstance(raw.get("plugins"), list) else []
    if (any(isinstance(p, str) and "SpectrumPlugin" in p for p in plugins) and truthy(raw.get("fsdp"))
            and truthy(raw.get("fsdp_config")) and not truthy(fsdp.get("use_orig_params"))):
        yield (("fsdp_config",), "FSDP (the `fsdp` list) with the Spectrum plugin without `fsdp_config."
                                 "use_orig_params: true`: Spectrum freezes part of each flattened unit")
        # integrations/spectrum/args.py check_fsdp_use_orig_params
    if truthy(raw.get("dataset_exact_deduplication")):
        if truthy(raw.get("streaming")) or truthy(raw.get("pretraining_dataset")):
            yield (("dataset_exact_deduplication",),  # config.py check_deduplication_with_streaming
                   "`dataset_exact_deduplication` on a streamed dataset (not implemented)")
        elif truthy(raw.get("skip_prepare_dataset")):  # config.py check_deduplication_with_skip_prepare
            yield (("dataset_exact_deduplication",),
                   "`dataset_exact_deduplication` with `skip_prepare_dataset`, which skips the step that deduplicates")


def _kernel_conflicts(run: TrainingRun, raw: dict[str, Any]) -> Iterator[Conflict]:
    """The Kernels plugin's backend flags (integrations/kernels/args.py): `expert_backend` against a legacy flag
    written true for the other backend (`_canonicalize_expert_backend`), both legacy flags
    (`check_mutually_exclusive`), and `nvfp4_merge_aware` beside the fused LoRA kernels (`check_nvfp4_merge_aware`)."""
    backend = str(raw.get("expert_backend") or "").lower()
    for flag, name in (("use_scattermoe", "scattermoe"), ("use_sonicmoe", "sonicmoe")):
        if backend in KERNEL_CHOICES["expert_backend"] and raw.get(flag) is True and backend != name:
            yield (flag,), f"`{flag}: true` against `expert_backend: {raw['expert_backend']}`; keep one"
            return
    if truthy(raw.get("use_scattermoe")) and truthy(raw.get("use_sonicmoe")):
        yield ("use_sonicmoe",), "both `use_scattermoe` and `use_sonicmoe`: the experts run on one backend; keep one"
    fused = [k for k in LORA_KERNEL_FLAGS[:3] if raw.get(k) is True]  # not the embedding kernel
    if (truthy(raw.get("nvfp4_merge_aware")) and "sonicmoe" in run.facts.expert_kernels
            and raw.get("adapter") == "lora" and fused):
        yield ((fused[0],), f"`{fused[0]}` with `nvfp4_merge_aware`: the fused kernels bypass the LoRA layers "
                            "whose delta it snaps to the NVFP4 grid")


def _message_field_conflicts(datasets: Any) -> Iterator[Conflict]:
    """A `datasets` entry whose legacy `message_field_role` / `message_field_content` names another field than its
    `message_property_mappings` does (utils/schemas/utils.py `handle_legacy_message_fields_logic`, run by
    `SFTDataset`, the entry model when `rl` is unset; `test_datasets` entries are not checked there)."""
    for i, entry in enumerate(datasets if isinstance(datasets, list) else []):
        mappings = entry.get("message_property_mappings") if isinstance(entry, dict) else None
        if not isinstance(mappings, dict):
            continue
        for legacy, field in (("message_field_role", "role"), ("message_field_content", "content")):
            if legacy in entry and field in mappings and mappings[field] != entry[legacy]:
                yield (("datasets", i, legacy), f"`{legacy}: {entry[legacy]}` and `message_property_mappings."
                                                f"{field}: {mappings[field]}` name different fields; keep the "
                                                "mapping, the legacy key is deprecated")


def _rl_conflicts(run: TrainingRun, raw: dict[str, Any]) -> Iterator[Conflict]:
    """`check_dpo`, `check_kto_config`, `check_grpo_liger_sequence_parallel`, `check_gdpo` and
    `check_rl_config_gradient_checkpointing` (validation.py)."""
    rl = raw.get("rl")
    types, weights = raw.get("dpo_loss_type"), raw.get("dpo_loss_weights")
    if (rl == "dpo" and isinstance(types, list) and isinstance(weights, list)
            and len(types) != len(weights)):
        yield (("dpo_loss_weights",), f"{len(weights)} `dpo_loss_weights` for {len(types)} `dpo_loss_type` "
                                      "entries; give one weight per loss")
    if rl == "kto":
        yield from _kto_conflicts(raw)
    trl = written_block(raw, "trl")
    cp = raw.get("context_parallel_size")
    if rl == "grpo" and truthy(trl.get("use_liger_loss")) and isinstance(cp, int) and cp > 1:
        yield (("context_parallel_size",), "context parallelism with `rl: grpo` and Liger's loss "
                                           "(`trl.use_liger_loss`)")  # check_grpo_liger_sequence_parallel
    if rl == "gdpo" and trl.get("multi_objective_aggregation") == "sum_then_normalize":
        yield (("trl", "multi_objective_aggregation"), "`multi_objective_aggregation: sum_then_normalize` (that is "
                                                       "GRPO's aggregation) with `rl: gdpo`")
    kwargs = raw.get("gradient_checkpointing_kwargs")
    if (truthy(rl) and truthy(raw.get("gradient_checkpointing")) and isinstance(kwargs, dict)
            and truthy(kwargs.get("use_reentrant")) and truthy(raw.get("load_in_4bit"))
            and raw.get("adapter") == "qlora" and run.world_size > 1):
        yield (("gradient_checkpointing_kwargs", "use_reentrant"),
               f"reentrant gradient checkpointing for a QLoRA `rl: {rl}` run on {run.world_size} GPUs; set "
               "`use_reentrant: false`")


def _kto_conflicts(raw: dict[str, Any]) -> Iterator[Conflict]:
    """`check_kto_config`: packed eval batches (packed training batches are AX121's), and `remove_unused_columns`
    not written false, unless `check_mm_prepare`, which runs first, sets it false for `skip_prepare_dataset`."""
    if truthy(raw.get("eval_sample_packing")) and not truthy(raw.get("sample_packing")):
        yield ("eval_sample_packing",), ("`eval_sample_packing` with `rl: kto` (\"sample_packing is not supported "
                                         "with kto\")")
        return
    keep = raw.get("remove_unused_columns")
    if truthy(raw.get("sample_packing")) or keep is False or (keep is None and truthy(raw.get("skip_prepare_dataset"))):
        return
    where = ("remove_unused_columns",) if "remove_unused_columns" in raw else ("rl",)
    yield where, ("`rl: kto` without `remove_unused_columns: false`: the KTO trainer reads dataset columns that the "
                  "HF Trainer drops by default; set `remove_unused_columns: false`")


@register_check("startup_conflicting_settings", args=("problem",))
def conflicting_settings(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Settings Axolotl refuses together (`_conflicts`)."""
    raw = written_config(run)
    if raw is None:
        return
    for path, problem in _conflicts(run, raw):
        yield ax_hit(run, path, problem=problem)


def _invalid_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return True
    return False


def _positive_int(value: Any) -> bool:
    """What `check_moe_dequant_chunk_size` (integrations/kernels/args.py) accepts: not a bool, `int()` reads it, a
    float is whole, and it is above 0."""
    if isinstance(value, bool):
        return False
    try:
        number = int(value)
    except (TypeError, ValueError):
        return False
    return number > 0 and not (isinstance(value, float) and not value.is_integer())


def _refused_values(raw: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], Any, str]]:
    """(path, value, what Axolotl takes instead) for each value a field validator refuses."""
    alpha = as_number(raw.get("neftune_noise_alpha"))
    if alpha is not None and alpha <= 0:  # validate_neftune_noise_alpha
        yield ("neftune_noise_alpha",), raw["neftune_noise_alpha"], "it must be above 0"
    metrics = raw.get("eval_causal_lm_metrics")
    if truthy(metrics):  # check_causal_lm_evals
        if not isinstance(metrics, list):
            yield ("eval_causal_lm_metrics",), metrics, "it must be a list"
        else:
            for i, metric in enumerate(metrics):
                if metric not in CAUSAL_LM_METRICS:
                    yield (("eval_causal_lm_metrics", i), metric,
                           f"the metrics are {', '.join(CAUSAL_LM_METRICS)}")
    targets = raw.get("lora_target_modules")
    if isinstance(targets, list):  # config.py check_lora_target_modules_regex
        for i, target in enumerate(targets):
            if isinstance(target, str) and _invalid_regex(target):
                yield ("lora_target_modules", i), target, "it is not a valid Python regular expression"
    policy = raw.get("large_head_attention")
    if policy is not None and str(policy).lower() not in LARGE_HEAD_ATTENTION:  # config.py
        yield ("large_head_attention",), policy, f"it takes {', '.join(LARGE_HEAD_ATTENTION)}"
    for block in ("qat", "quantization"):  # quantization.py validate_ao_dtype
        config = raw.get(block)
        for field in ("weight_dtype", "activation_dtype") if isinstance(config, dict) else ():
            if config.get(field) is not None and config[field] not in AO_DTYPES:
                yield (block, field), config[field], f"it takes {', '.join(AO_DTYPES)}"
    resize = raw.get("image_resize_algorithm")
    if isinstance(resize, str) and resize.lower() not in IMAGE_RESIZE:  # multimodal.py
        yield ("image_resize_algorithm",), resize, f"it takes {', '.join(IMAGE_RESIZE)}"
    kwargs = raw.get("processor_kwargs")
    if isinstance(kwargs, dict):  # model.py reject_reserved_processor_kwargs
        for key in (k for k in RESERVED_PROCESSOR_KWARGS if k in kwargs):
            top = "revision_of_model" if key == "revision" else key
            yield ("processor_kwargs", key), kwargs[key], f"set it with the top-level `{top}` instead"
    if lists_plugin(raw, KERNELS_PLUGIN):  # integrations/kernels/args.py
        for key, choices in KERNEL_CHOICES.items():
            if raw.get(key) is not None and str(raw[key]).lower() not in choices:
                yield (key,), raw[key], f"it takes {', '.join(choices)}"
        start = raw.get("nvfp4_merge_aware_start_step")  # check_nvfp4_merge_aware
        if (truthy(raw.get("nvfp4_merge_aware")) and start is not None
                and (isinstance(start, bool) or (isinstance(start, float) and not 0 < start < 1)
                     or (isinstance(start, int) and start < 0) or not isinstance(start, (int, float)))):
            yield (("nvfp4_merge_aware_start_step",), start,
                   "it is a step (a whole number from 0) or a fraction of max_steps (between 0 and 1)")
        chunk = raw.get("moe_dequant_chunk_size")
        if chunk is not None and not _positive_int(chunk):
            yield ("moe_dequant_chunk_size",), chunk, "it must be a positive whole number"
    if lists_plugin(raw, SWANLAB_PLUGIN):  # integrations/swanlab/args.py
        mode, project = raw.get("swanlab_mode"), raw.get("swanlab_project")
        if mode is not None and mode not in SWANLAB_MODES:  # validate_swanlab_mode
            yield ("swanlab_mode",), mode, f"it takes {', '.join(SWANLAB_MODES)}"
        if isinstance(project, str) and not project.strip():  # validate_swanlab_project
            yield ("swanlab_project",), project, "a project name cannot be empty; name one or delete the line"
    options = raw.get("torch_compile_options")
    if isinstance(options, dict):  # config.py validate_torch_compile_options
        for flag in sorted(set(map(str, options)) - INDUCTOR_OPTIONS):
            yield (("torch_compile_options", flag), options.get(flag),
                   f"`{flag}` is not among the inductor flags Axolotl passes on ({', '.join(sorted(INDUCTOR_OPTIONS))})")


@register_check("startup_refused_value", args=("key", "value", "problem"))
def refused_value(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A value one of Axolotl's field validators refuses (`_refused_values`), at the value."""
    raw = written_config(run)
    if raw is None:
        return
    for path, value, problem in _refused_values(raw):
        yield ax_hit(run, path, "value", key=key_label(path), value=format_value(value), problem=problem)
