"""Settings Axolotl's start-up validation refuses: the config never reaches the model download.

Each check mirrors one validator of Axolotl 0.18.0 (`src/axolotl/utils/schemas/validation.py` and `config.py`,
`AxolotlInputConfig`), reading the config as written (`run.raw`), the way those `mode="before"` validators read
`data.get(...)`: a key counts when its value is truthy, so `0`, `""`, `[]` and `null` are "not set". The
differential suite (tests/test_oracle.py) runs the real validators on the same configs and holds the two equal.
"""
from __future__ import annotations

from typing import Any, Iterator

from axlint.checks.locate import ax_hit, first_written, lists_plugin, written_config
from axlint.facts import ATTENTION_ALIASES, CANONICAL_ATTENTION, KERNELS_PLUGIN, LIGER_PLUGIN
from axlint.mesh import PARALLEL_KEYS
from axlint.lax import as_number, is_int
from axlint.rule import Hit, Rule, register_check
from axlint.run import TrainingRun
from axlint.schemas.validator import close_match

BATCH_KEYS = ("micro_batch_size", "gradient_accumulation_steps", "batch_size")
EIGHT_BIT_UNDER_FSDP2 = frozenset({"adamw_8bit", "adamw_bnb_8bit"})


def _at(run: TrainingRun, *keys: str, **args: Any) -> Hit:
    """A hit at the first of `keys` that is written (line 1 when none is)."""
    return ax_hit(run, first_written(run, *((k,) for k in keys)), **args)


@register_check("startup_batch_keys", args=("written",))
def batch_keys(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Fewer than two of micro_batch_size, gradient_accumulation_steps, batch_size are set (truthy)."""
    raw = written_config(run)
    if raw is not None and sum(1 for k in BATCH_KEYS if raw.get(k)) < 2:
        written = [k for k in BATCH_KEYS if raw.get(k)]
        yield _at(run, *BATCH_KEYS, written=", ".join(f"`{k}`" for k in written) or "none of them")


@register_check("startup_save_schedule", args=("problem",))
def save_schedule(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`save_steps` with a `save_strategy` other than steps, or next to `saves_per_epoch`."""
    raw = written_config(run)
    if raw is None or not raw.get("save_steps"):
        return
    if raw.get("save_strategy") and raw.get("save_strategy") != "steps":
        yield _at(run, "save_steps", problem=f"`save_strategy: {raw['save_strategy']}` does not save by steps")
    elif raw.get("saves_per_epoch"):
        yield _at(run, "save_steps", problem="`saves_per_epoch` sets the same schedule another way")


@register_check("startup_eval_schedule", args=("problem",))
def eval_schedule(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`eval_steps` with an `eval_strategy` other than steps or next to `evals_per_epoch`; `evals_per_epoch` with
    an `eval_strategy` other than steps."""
    raw = written_config(run)
    if raw is None:
        return
    strategy = raw.get("eval_strategy")
    if raw.get("eval_steps") and strategy and strategy != "steps":
        yield _at(run, "eval_steps", problem=f"`eval_strategy: {strategy}` does not evaluate by steps")
    elif raw.get("eval_steps") and raw.get("evals_per_epoch"):
        yield _at(run, "eval_steps", problem="`evals_per_epoch` sets the same schedule another way")
    elif raw.get("evals_per_epoch") and strategy and strategy != "steps":
        yield _at(run, "evals_per_epoch", problem=f"`eval_strategy: {strategy}` does not evaluate by steps")


@register_check("startup_eval_without_split")
def eval_without_split(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`val_set_size: 0` written, an eval schedule set, no `test_datasets`, and `eval_strategy` not "no"."""
    raw = written_config(run)
    if (raw is not None and raw.get("val_set_size") == 0 and (raw.get("eval_steps") or raw.get("eval_strategy"))
            and not raw.get("test_datasets") and raw.get("eval_strategy") != "no"):
        yield _at(run, "eval_steps", "eval_strategy")


def _value_without_companion(run: TrainingRun, key: str, value: str, companion: str) -> Iterator[Hit]:
    """`key: value` written while `companion`, which that value needs, is not set."""
    raw = written_config(run)
    if raw is not None and raw.get(key) == value and not raw.get(companion):
        yield _at(run, key, part="value")


@register_check("startup_save_best_metric")
def save_best_metric(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    yield from _value_without_companion(run, "save_strategy", "best", "metric_for_best_model")


@register_check("startup_early_stopping", args=("problem",))
def early_stopping(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`early_stopping_patience` needs `save_steps` and `eval_steps`, with eval_steps dividing save_steps."""
    raw = written_config(run)
    if raw is None or not raw.get("early_stopping_patience"):
        return
    save, every = raw.get("save_steps"), raw.get("eval_steps")
    if not save or not every:
        yield _at(run, "early_stopping_patience", problem="it needs both `save_steps` and `eval_steps` set")
    elif as_number(save) is not None and as_number(every) and as_number(save) % as_number(every) != 0:
        yield _at(run, "early_stopping_patience", problem=f"`eval_steps: {every}` does not divide `save_steps: {save}`")


@register_check("startup_test_datasets_split")
def test_datasets_split(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    raw = written_config(run)
    if raw is not None and raw.get("test_datasets") and raw.get("val_set_size"):
        yield _at(run, "val_set_size")


@register_check("startup_streaming", args=("problem",))
def streaming(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Streaming datasets need `max_steps` and cannot split off `val_set_size`."""
    raw = written_config(run)
    if raw is None or not raw.get("streaming"):
        return
    if raw.get("val_set_size"):
        yield _at(run, "val_set_size", problem="`val_set_size` cannot split a stream; use `test_datasets`")
    elif not raw.get("max_steps"):
        yield _at(run, "streaming", problem="the trainer cannot count a stream's steps; set `max_steps`")


@register_check("startup_sharegpt_type", args=("type",))
def sharegpt_type(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A `datasets` entry of `type: sharegpt...`, removed in favour of `type: chat_template`."""
    raw = written_config(run)
    datasets = raw.get("datasets") if raw is not None else None
    if not isinstance(datasets, list):
        return
    for i, entry in enumerate(datasets):
        kind = entry.get("type") if isinstance(entry, dict) else None
        if isinstance(kind, str) and kind.startswith("sharegpt"):
            yield ax_hit(run, ("datasets", i, "type"), "value", type=kind)
            return  # Axolotl stops at the first one


@register_check("startup_jinja_template")
def jinja_template(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    yield from _value_without_companion(run, "chat_template", "jinja", "chat_template_jinja")


@register_check("startup_fsdp_8bit_optimizer", args=("value", "problem", "instead"))
def fsdp_8bit_optimizer(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An 8-bit optimizer Axolotl refuses under FSDP: bitsandbytes' AdamW under FSDP2, any 8-bit optimizer with
    FSDP1 parameter offload."""
    raw = written_config(run)
    fsdp = raw.get("fsdp_config") if raw is not None else None
    optimizer = str(raw.get("optimizer")) if raw is not None and raw.get("optimizer") else ""
    if not fsdp or "8bit" not in optimizer:
        return
    if str(raw.get("fsdp_version") or (fsdp.get("fsdp_version") if isinstance(fsdp, dict) else None)) == "2":
        if optimizer in EIGHT_BIT_UNDER_FSDP2:
            yield _at(run, "optimizer", part="value", value=optimizer,
                      problem="FSDP2 fails in bitsandbytes' CUDA ops with it", instead="adamw_torch_8bit")
    elif isinstance(fsdp, dict) and (fsdp.get("offload_params") or fsdp.get("fsdp_offload_params")):
        yield _at(run, "optimizer", part="value", value=optimizer, problem="FSDP1 parameter offload does not support it",
                  instead="a 32-bit optimizer such as adamw_torch_fused")


@register_check("startup_eval_table_packing")
def eval_table_packing(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    raw = written_config(run)
    if (raw is not None and raw.get("sample_packing") and raw.get("eval_table_size")
            and raw.get("eval_sample_packing") is not False):
        yield _at(run, "eval_table_size")


@register_check("startup_attn_implementation", args=("problem",))
def attn_implementation(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An `attn_implementation` Axolotl does not accept (next to a legacy flag is AX118's finding)."""
    raw = written_config(run)
    if raw is None or raw.get("attn_implementation") is None:
        return
    value = raw["attn_implementation"]
    if not isinstance(value, str) or not value:
        return  # a wrong type is the schema's finding
    if value in ATTENTION_ALIASES:
        yield _at(run, "attn_implementation", part="value",
                  problem=f"`{value}` is a short name Axolotl refuses; write `{ATTENTION_ALIASES[value]}`")
    elif value not in CANONICAL_ATTENTION and "/" not in value:
        yield _at(run, "attn_implementation", part="value",
                  problem=f"`{value}` is not a backend; write one of {', '.join(sorted(CANONICAL_ATTENTION))}, "
                          "or a hub kernel path such as `kernels-community/flash-attn3`")


@register_check("startup_learning_rate", args=("value",))
def learning_rate(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A `learning_rate` string Python's float() cannot read (Axolotl converts strings with it)."""
    raw = written_config(run)
    value = raw.get("learning_rate") if raw is not None else None
    if isinstance(value, str) and value:
        try:
            float(value)
        except ValueError:
            yield _at(run, "learning_rate", part="value", value=value)


@register_check("startup_required_keys", args=("missing",))
def required_keys(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`base_model` and `learning_rate` are required fields; `datasets` or `pretraining_dataset` must be given."""
    raw = written_config(run)
    if raw is None:
        return
    for key in ("base_model", "learning_rate"):
        if key not in raw:
            yield _at(run, key, missing=f"`{key}` is required")
    if raw.get("datasets") is None and raw.get("pretraining_dataset") is None:
        yield _at(run, "datasets", "pretraining_dataset",
                  missing="`datasets` (or `pretraining_dataset`) is required")


@register_check("startup_grpo_generations", args=("problem",))
def grpo_generations(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """GRPO's generation batch against `trl.num_generations`: at least 2 generations, a batch they divide, and a
    full group per GPU (`check_grpo_batch_size_divisibility`). The batch is `trl.generation_batch_size`, else
    micro_batch_size × gradient_accumulation_steps as written (0 or unset count as 1; `batch_size` is not read)."""
    raw = written_config(run)
    trl = raw.get("trl") if raw is not None and raw.get("rl") == "grpo" else None
    if not isinstance(trl, dict):
        return
    generations = trl.get("num_generations")
    if not is_int(generations):
        return  # unset: TRL's own default applies later; another type is the schema's finding
    where = ("trl", "num_generations")
    if generations < 2:
        yield ax_hit(run, where, "value", problem=f"`trl.num_generations: {generations}` gives every group zero "
                                                  "advantage, so the policy never updates; use 2 or more")
        return
    explicit = trl.get("generation_batch_size")
    if explicit is not None:
        batch, source = as_number(explicit), f"`trl.generation_batch_size: {explicit}`"
    else:
        mbs, gas = raw.get("micro_batch_size") or 1, raw.get("gradient_accumulation_steps") or 1
        batch = as_number(mbs) * as_number(gas) if as_number(mbs) and as_number(gas) else None
        source = f"micro_batch_size × gradient_accumulation_steps = {mbs} × {gas}"
    if batch is None or batch != int(batch):
        return
    batch = int(batch)
    if batch % generations:
        yield ax_hit(run, where, "value", problem=f"the generation batch ({source} = {batch}) is not a multiple of "
                                                  f"`trl.num_generations: {generations}`")
    elif run.world_size > 1 and batch < generations * run.world_size:
        gpus = f"{run.world_size} GPUs" + (" (assumed; give yours with --hardware)" if run.world_size_assumed else "")
        yield ax_hit(run, where, "value",
                     problem=f"on {gpus} every GPU needs a full group: the generation batch ({source} = {batch}) "
                             f"must be at least num_generations × GPUs = {generations * run.world_size}")


@register_check("startup_liger_tensor_parallel", args=("key", "why"))
def liger_tensor_parallel(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """With the Liger plugin listed: `liger_rms_norm` and `tensor_parallel_size` > 1 (`check_liger_rms_norm_tensor_
    parallel`, on the YAML as written), or Liger's fused linear cross-entropy with it (`check_tensor_parallel_size_
    liger_fused_linear_cross_entropy`)."""
    raw = written_config(run)
    if raw is None or not lists_plugin(raw, LIGER_PLUGIN):
        return
    size = as_number(raw.get("tensor_parallel_size"))
    if size is None or size <= 1:
        return
    for key, why in (("liger_rms_norm", "Liger's RMSNorm does not support tensor-parallel sharded weights"),
                     ("liger_fused_linear_cross_entropy", "Liger's losses do not support tensor parallelism")):
        if raw.get(key):
            yield _at(run, key, key=key, why=why)
            return


@register_check("startup_quantization_config_with_bnb", args=("flag", "method"))
def quantization_config_with_bnb(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`model_quantization_config` with `load_in_8bit` or `load_in_4bit` (`check_model_quantization_config_vs_bnb`)."""
    raw = written_config(run)
    if raw is None or not raw.get("model_quantization_config"):
        return
    flag = next((k for k in ("load_in_8bit", "load_in_4bit") if raw.get(k)), None)
    if flag:
        yield _at(run, flag, flag=flag, method=raw["model_quantization_config"])


@register_check("startup_qat_conflicts", args=("key",))
def qat_conflicts(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`qat` with `peft`, `load_in_8bit` or `load_in_4bit`, in that order (`check_qat_config`)."""
    raw = written_config(run)
    if raw is None or not raw.get("qat"):
        return
    other = next((k for k in ("peft", "load_in_8bit", "load_in_4bit") if raw.get(k)), None)
    if other:
        yield _at(run, other, key=other)


@register_check("startup_pretraining_val_split")
def pretraining_val_split(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`val_set_size` with `pretraining_dataset` (`check_pretraining_w_val_set_size`)."""
    raw = written_config(run)
    if raw is not None and raw.get("pretraining_dataset") and raw.get("val_set_size"):
        yield _at(run, "val_set_size")


MISTRAL_COMMON_REFUSED = ("added_tokens_overrides", "special_tokens", "tokens", "chat_template", "processor_kwargs")
"""Keys that edit the tokenizer or its template, which the mistral-common tokenizer does not support, in the
order Axolotl checks them (`check_mistral_common_incompatible_options`)."""


@register_check("startup_mistral_common_edits", args=("key",))
def mistral_common_edits(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`tokenizer_use_mistral_common` truthy with a key that edits the tokenizer. Axolotl also turns the flag on
    for Magistral models when it is not written, but in 0.18.0 that happens after this check has run, so only a
    written value counts (checked with its `validate_config`)."""
    raw = written_config(run)
    if raw is None or not raw.get("tokenizer_use_mistral_common"):
        return
    key = next((k for k in MISTRAL_COMMON_REFUSED if raw.get(k)), None)
    if key:
        yield _at(run, key, key=key)


@register_check("startup_quantize_moe_experts", args=("problem",))
def quantize_moe_experts(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`quantize_moe_experts` needs a LoRA/QLoRA adapter on a 4- or 8-bit load and no `lora_target_linear`, checked
    in that order (`check_quantize_moe_experts`)."""
    raw = written_config(run)
    if raw is None or not raw.get("quantize_moe_experts"):
        return
    if raw.get("lora_target_linear"):
        yield _at(run, "lora_target_linear", problem="`lora_target_linear` would wrap the quantized expert weights; "
                                                     "target them with `lora_target_parameters` instead")
    elif raw.get("adapter") not in ("lora", "qlora"):
        yield _at(run, "adapter", "quantize_moe_experts", part="value" if "adapter" in raw else "key",
                  problem="it needs `adapter: lora` or `adapter: qlora`")
    elif not (raw.get("load_in_4bit") or raw.get("load_in_8bit")):
        yield _at(run, "quantize_moe_experts", problem="it needs `load_in_4bit: true` or `load_in_8bit: true`")




@register_check("startup_dsv4_module_lora", args=("key",))
def dsv4_module_lora(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """With the kernels plugin: `use_dsv4_kernels` and module-level LoRA (`lora_target_modules` or
    `lora_target_linear`) without `lora_exclude_modules` (`check_dsv4_attention_lora_unsupported`)."""
    raw = written_config(run)
    if raw is None or not lists_plugin(raw, KERNELS_PLUGIN) or not raw.get("use_dsv4_kernels"):
        return
    key = next((k for k in ("lora_target_modules", "lora_target_linear") if raw.get(k)), None)
    if key and not raw.get("lora_exclude_modules"):
        yield _at(run, key, key=key)


def release_adapters(run: TrainingRun) -> dict[str, Any] | None:
    """What the chosen Axolotl release's `validate_adapter` accepts: `{"builtin": [...], "plugins": {name: plugin}}`,
    recorded in its generated schema from Axolotl's own source (0.17 on); None for older releases."""
    from axlint.schemas.validator import load_schema

    version = run.schemas.axolotl if run.schemas is not None else None
    adapter = load_schema("axolotl", version)["properties"].get("adapter") or {}
    return adapter.get("x-axlint-adapters")


@register_check("startup_adapter_unknown", args=("adapter", "advice"))
def adapter_unknown(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An `adapter` that is neither built in nor registered by a listed plugin (`validate_adapter`: the plugin
    manager is asked, and only the plugins in `plugins:` are registered). A plugin from outside Axolotl may register
    adapters axlint cannot know, so a config that lists one is not judged."""
    raw = written_config(run)
    adapter = raw.get("adapter") if raw is not None else None
    known = release_adapters(run) if adapter else None
    if known is None or adapter in known["builtin"]:
        return
    plugins = raw.get("plugins") if isinstance(raw.get("plugins"), list) else []
    if any(isinstance(p, str) and not p.startswith("axolotl.") for p in plugins):
        return
    plugin = known["plugins"].get(adapter) if isinstance(adapter, str) else None
    if plugin is not None and plugin in plugins:
        return
    if plugin is not None:
        advice = f"list `{plugin}` under `plugins:`"
    else:
        close = close_match(str(adapter), [*known["builtin"], *known["plugins"]], n=1, cutoff=0.6)
        advice = f"did you mean `{close[0]}`?" if close else f"write one of {', '.join(known['builtin'])}"
    yield ax_hit(run, ("adapter",), "value", adapter=adapter, advice=advice)


@register_check("startup_parallel_layout", args=("key", "value", "world", "problem"))
def parallel_layout(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Parallel sizes Axolotl cannot lay out on the GPUs given (``axlint.facts.build_mesh``, mirroring Axolotl
    0.18.0 ``_get_parallel_config_kwargs`` and accelerate's total-size check), on the first size written. Silent
    when the GPU count is assumed: the assumed count follows the sizes."""
    raw = written_config(run)
    if raw is None or run.world_size_assumed or not run.facts.sharding.mesh_problem:
        return
    key = next((k for k in PARALLEL_KEYS if is_int(raw.get(k)) and raw[k] > 1), None)
    if key is None:  # a size written as a string ("2"): the schema rules speak of it
        return
    yield ax_hit(run, (key,), "value", key=key, value=raw[key], world=run.world_size,
                 problem=run.facts.sharding.mesh_problem)
