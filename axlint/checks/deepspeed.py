"""Checks of the DeepSpeed config: batch identity, precision, "auto" values, ZeRO keys and offload.

Under Axolotl the DeepSpeed file goes through the HF Trainer, which fills `"auto"` values from the training
arguments and raises on explicit values that disagree with them (transformers/integrations/deepspeed.py 5.14.1,
`HfTrainerDeepSpeedConfig`), and through accelerate's `DeepSpeedPlugin` (accelerate/utils/dataclasses.py 1.13.0).
A JSON checked on its own is read the way DeepSpeed's own parser reads it (deepspeed/runtime/config.py 0.18.9),
since nothing says a launcher will fill it. tests/test_oracle_deepspeed.py runs that stack on the corpus.
"""
from __future__ import annotations

import math
from typing import Any, Iterator

from axlint.document import KeyPath
from axlint.facts import ZERO_ALIASES, precision_flags
from axlint.fixes import Applicability, Fix, key_fix
from axlint.lax import as_number, is_int
from axlint.rule import FixAvailability, Hit, Rule, register_check
from axlint.run import TrainingRun

BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
AUTO = "auto"

HF_FILLED: frozenset[KeyPath] = frozenset({
    ("train_micro_batch_size_per_gpu",), ("gradient_accumulation_steps",), ("train_batch_size",),
    ("gradient_clipping",), ("fp16", "enabled"), ("bf16", "enabled"),
    ("optimizer", "params", "lr"), ("optimizer", "params", "betas"), ("optimizer", "params", "eps"),
    ("optimizer", "params", "weight_decay"), ("scheduler", "params", "warmup_min_lr"),
    ("scheduler", "params", "warmup_max_lr"), ("scheduler", "params", "warmup_num_steps"),
    ("scheduler", "params", "total_num_steps"),
    ("zero_optimization", "stage"), ("zero_optimization", "reduce_bucket_size"),
    ("zero_optimization", "stage3_prefetch_bucket_size"), ("zero_optimization", "stage3_param_persistence_threshold"),
    ("zero_optimization", "stage3_gather_16bit_weights_on_model_save"),
    ("zero_optimization", "offload_optimizer", "device"), ("zero_optimization", "offload_param", "device"),
    ("zero_optimization", "offload_optimizer", "nvme_path"), ("zero_optimization", "offload_param", "nvme_path"),
})
"""Keys whose "auto" the HF Trainer or accelerate fill; accelerate's `deepspeed_config_process` raises on any other."""

ALIAS_OF_FILLED = {short: long for short, long in ZERO_ALIASES.items() if ("zero_optimization", long) in HF_FILLED}
"""Short spellings whose `stage3_` name HF fills; HF and accelerate never look the short name up."""

INT_FIELDS = frozenset({"reduce_bucket_size", "allgather_bucket_size", "sub_group_size", "zero_hpz_partition_size",
                        "stage3_module_granularity_threshold", "module_granularity_threshold",
                        *ZERO_ALIASES, *ZERO_ALIASES.values()}
                       - {"gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save"})
"""Integer fields of `zero_optimization` (pydantic ints in DeepSpeedZeroConfig: a fractional float fails)."""
OFFLOAD_INT_FIELDS = {"offload_param": ("buffer_count", "buffer_size", "max_in_cpu"), "offload_optimizer": ("buffer_count",)}

REMOVED_TOP = {"amp": "NVIDIA Apex AMP integration", "nebula": "Nebula checkpointing",
               "compression_training": "compression training", "quantize_training": "quantize training",
               "sparse_gradients": "sparse gradients", "eigenvalue": "eigenvalue computation",
               "sparse_attention": "sparse attention", "elasticity": "elastic training",
               "graph_harvesting": "graph harvesting", "curriculum_learning": "legacy curriculum learning",
               "progressive_layer_drop": "progressive layer drop"}
REMOVED_ZERO = {"mics_shard_size": "MiCS", "mics_hierarchical_params_gather": "MiCS",
                "zeropp_loco_param": "ZeRO++ LoCo"}
REMOVED_OPTIMIZERS = {"onebitadam", "zerooneadam", "onebitlamb"}

DEPRECATED_ZERO = {"cpu_offload": "offload_optimizer", "cpu_offload_param": "offload_param",
                   "cpu_offload_use_pin_memory": None,
                   "stage3_gather_fp16_weights_on_model_save": "stage3_gather_16bit_weights_on_model_save"}
"""Deprecated `zero_optimization` fields and the field that replaces them (deepspeed/runtime/zero/config.py)."""

OFFLOAD_KEEPS_OPTIMIZER = {"adamw_torch", "adamw_torch_fused", "adagrad", "lion_32bit"}
"""Axolotl/HF optimizer names that accelerate's `map_pytorch_optim_to_deepspeed` keeps under offload."""


def _json(value: Any) -> str:
    """A value as the DeepSpeed file writes it. json is imported on first use: its import compiles regexes, ~2 ms
    of every check that reads no JSON."""
    import json

    return json.dumps(value)


# ---------------------------------------------------------------------------------------------------- reading


def through_hf(run: TrainingRun) -> bool:
    """The DeepSpeed config reaches DeepSpeed through Axolotl, i.e. the HF Trainer and accelerate."""
    return run.axolotl is not None


def zero_block(run: TrainingRun) -> dict[str, Any]:
    zero = (run.ds_raw or {}).get("zero_optimization")
    return zero if isinstance(zero, dict) else {}


def zero_get(zero: dict[str, Any], long: str) -> tuple[str, Any] | None:
    """(name as written, value) of a ZeRO field given by its `stage3_` name, read under either spelling."""
    if long in zero:
        return long, zero[long]
    short = next((s for s, lng in ZERO_ALIASES.items() if lng == long), None)
    if short is not None and short in zero:
        return short, zero[short]
    return None


def offload_device(zero: dict[str, Any], block: str) -> str | None:
    conf = zero.get(block)
    device = conf.get("device") if isinstance(conf, dict) else None
    return device if isinstance(device, str) else None


def hf_batch(run: TrainingRun) -> tuple[int, int] | None:
    """(micro_batch_size, gradient_accumulation_steps) the HF Trainer gets from the YAML (resolved: a quoted "4" is
    4, `batch_size` derives the accumulation); None for a DeepSpeed file checked on its own."""
    if run.axolotl is None:
        return None
    return run.facts.micro_batch_size.value, run.facts.gradient_accumulation_steps.value


def world_known(run: TrainingRun) -> bool:
    """The GPU count was given, and no context/tensor parallelism changes what the batch identity counts."""
    parallel = any(is_int(run.config.get(k)) and run.config[k] > 1
                   for k in ("context_parallel_size", "tensor_parallel_size", "sequence_parallel_degree"))
    return not run.world_size_assumed and not parallel


def leaves(data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Every scalar of a loaded JSON/YAML value with its key path."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from leaves(value, path + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from leaves(value, path + (i,))
    else:
        yield path, data


# ---------------------------------------------------------------------------------------------------- hits, fixes


def ds_hit(run: TrainingRun, path: KeyPath, part: str = "value", fix: Fix | None = None, **args: Any) -> Hit:
    """A finding at a DeepSpeed key; `{config}` in a message names the Axolotl YAML it was compared with."""
    doc, span = run.ds_span(path, part)
    config = str(run.axolotl.path) if run.axolotl is not None else ""
    return Hit(doc, span, {"config": config, **args}, fix)


def ds_fix(run: TrainingRun, path: KeyPath, title: str, applicability: Applicability, action: str = "set",
           value: Any = None) -> Fix | None:
    """A fix on the DeepSpeed text (a file, or the inline `deepspeed:` mapping); None for a stock config."""
    if not run.ds_editable:
        return None
    return key_fix(run.deepspeed, run.ds_prefix + tuple(path), action, value, applicability, title)


def auto_fix(run: TrainingRun, path: KeyPath, applicability: Applicability) -> Fix | None:
    """Set a DeepSpeed value to "auto" so that the HF Trainer fills it from the YAML."""
    if not through_hf(run):
        return None
    return ds_fix(run, path, f'set `{".".join(map(str, path))}` to "auto"', applicability, value=AUTO)


# ---------------------------------------------------------------------------------------------------- batch size


def batch_breaks(run: TrainingRun, tbs: int) -> str | None:
    """Why `train_batch_size` cannot equal micro × accumulation × GPUs, or None when it can (or is not checked).

    Through HF the micro batch and accumulation are the YAML's; on its own, DeepSpeed derives the missing one
    (`_set_batch_related_parameters`). With an assumed GPU count only a value that fits no GPU count is reported.
    """
    known, world = world_known(run), run.world_size
    if through_hf(run):
        batch = hf_batch(run)
        if batch is None or run.config.get("auto_find_batch_size"):
            return None
        mbs, gas = batch
    else:
        ds = run.ds_raw or {}
        mbs, gas = (ds.get(k) if is_int(ds.get(k)) and ds[k] > 0 else None for k in BATCH_KEYS[1:])
    parts = [f"micro batch {mbs}"] * (mbs is not None) + [f"accumulation {gas}"] * (gas is not None)
    unit = (mbs or 1) * (gas or 1)
    if known:
        parts.append(f"{world} GPUs")
        unit *= world
    per = " × ".join(parts) + f" = {unit}" if parts else f"{unit}"
    if mbs is not None and gas is not None and known:
        return None if tbs == unit else per
    return None if tbs > 0 and tbs % unit == 0 else f"{per}, and {tbs} is not a multiple of {unit}"


@register_check("ds_train_batch_size", args=("train_batch_size", "detail", "effect"),
                fix=FixAvailability.SOMETIMES)
def check_train_batch_size(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`train_batch_size` must equal micro batch × gradient accumulation × world size (`_batch_assertion`)."""
    tbs = (run.ds_raw or {}).get("train_batch_size")
    if not is_int(tbs):
        return
    detail = batch_breaks(run, tbs)
    if detail is None:
        return
    effect = ("the HF Trainer raises \"DeepSpeed config values that mismatch TrainingArguments values\""
              if through_hf(run) else "DeepSpeed asserts \"Check batch related parameters\"")
    yield ds_hit(run, ("train_batch_size",), train_batch_size=tbs, detail=detail, effect=effect,
                 fix=auto_fix(run, ("train_batch_size",), Applicability.SAFE))


@register_check("ds_train_batch_size_hardcoded",
                args=("train_batch_size", "gpus", "micro_batch_size", "gradient_accumulation_steps"),
                fix=FixAvailability.SOMETIMES)
def check_train_batch_size_hardcoded(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An explicit `train_batch_size` that fits some GPU count, checked while the GPU count is unknown."""
    tbs = (run.ds_raw or {}).get("train_batch_size")
    batch = hf_batch(run)
    if not (is_int(tbs) and through_hf(run) and batch and not world_known(run)) or batch_breaks(run, tbs):
        return
    if run.config.get("auto_find_batch_size"):
        return
    mbs, gas = batch
    yield ds_hit(run, ("train_batch_size",), train_batch_size=tbs, gpus=tbs // (mbs * gas), micro_batch_size=mbs,
                 gradient_accumulation_steps=gas, fix=auto_fix(run, ("train_batch_size",), Applicability.SAFE))


def _yaml_batch_hits(run: TrainingRun, ds_key: str, yaml_key: str, yaml_value: int) -> Iterator[Hit]:
    value = (run.ds_raw or {}).get(ds_key)
    if is_int(value) and value != yaml_value:
        yield ds_hit(run, (ds_key,), ds_key=ds_key, ds_value=value, yaml_key=yaml_key, yaml_value=yaml_value,
                     fix=auto_fix(run, (ds_key,), Applicability.SAFE))


@register_check("ds_micro_batch_matches_yaml", args=("ds_key", "ds_value", "config", "yaml_key", "yaml_value"),
                fix=FixAvailability.SOMETIMES)
def check_micro_batch(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`train_micro_batch_size_per_gpu` ≠ `micro_batch_size`: the HF mismatch error. With `sample_packing` Axolotl
    overwrites the plugin's value after the Trainer is built, but `trainer_config_process` already recorded the
    mismatch when TrainingArguments was created, and `trainer_config_finalize` raises it at train start."""
    batch = hf_batch(run)
    if through_hf(run) and batch and not run.config.get("auto_find_batch_size"):
        yield from _yaml_batch_hits(run, "train_micro_batch_size_per_gpu", "micro_batch_size", batch[0])


@register_check("ds_accumulation_matches_yaml", args=("ds_key", "ds_value", "config", "yaml_key", "yaml_value"),
                fix=FixAvailability.SOMETIMES)
def check_accumulation(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`gradient_accumulation_steps` in the JSON ≠ the YAML's: the HF mismatch error."""
    batch = hf_batch(run)
    if through_hf(run) and batch:
        yield from _yaml_batch_hits(run, "gradient_accumulation_steps", "gradient_accumulation_steps", batch[1])


@register_check("ds_batch_value_string", args=("key", "text", "effect"), fix=FixAvailability.SOMETIMES)
def check_batch_value_string(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A batch key written as a string ("8"): HF compares it with an int and raises; DeepSpeed raises TypeError."""
    ds = run.ds_raw or {}
    effect = ("the HF Trainer compares the string with the number and raises the mismatch error "
              "(\"ds {key}={text} vs hf ...={text}\")" if through_hf(run)
              else "DeepSpeed raises TypeError: '>' not supported between instances of 'str' and 'int'")
    for key in BATCH_KEYS:
        value = ds.get(key)
        if not isinstance(value, str) or value == AUTO:
            continue
        number = value.strip()
        fix = (ds_fix(run, (key,), f"write `{key}` as the number {int(number)}", Applicability.SAFE, value=int(number))
               if number.isdigit() else None)
        yield ds_hit(run, (key,), fix=fix, key=key, text=value, effect=effect.format(key=key, text=value))


# ---------------------------------------------------------------------------------------------------- precision


def yaml_precisions(run: TrainingRun) -> set[tuple[bool, bool]]:
    """The (bf16, fp16) pairs the HF Trainer may get from the YAML (the resolved facts: Axolotl's `resolve_dtype`,
    then `fp16 and not bf16`). `bf16: auto` follows the GPU; without `--hardware` the GPU is unknown, so the
    outcome on a GPU without bf16 is allowed too."""
    facts = run.facts
    outcomes = {(facts.bf16.value, facts.fp16.value)}
    if getattr(run.hardware, "assumed", True):
        outcomes.add(precision_flags(run.raw, bf16_capable=not getattr(run.hardware, "bf16", True)))
    return outcomes


@register_check("ds_precision_matches_yaml", args=("block", "ds_value", "config", "yaml_value"),
                fix=FixAvailability.SOMETIMES)
def check_precision(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`bf16.enabled` / `fp16.enabled` given as true/false in the JSON but not what the YAML trains with."""
    if not through_hf(run):
        return
    options = yaml_precisions(run)
    ds = run.ds_raw or {}
    for index, block in enumerate(("bf16", "fp16")):
        conf = ds.get(block)
        value = conf.get("enabled") if isinstance(conf, dict) else None
        if isinstance(value, bool) and all(opt[index] != value for opt in options):
            yaml_value = "true" if next(iter(options))[index] else "false"
            yield ds_hit(run, (block, "enabled"), block=block, ds_value="true" if value else "false",
                         yaml_value=yaml_value, fix=auto_fix(run, (block, "enabled"), Applicability.UNSAFE))


# ---------------------------------------------------------------------------------------------------- "auto"


@register_check("ds_auto_without_hf", args=("count", "keys"))
def check_auto_without_hf(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A DeepSpeed JSON checked on its own whose "auto" values only the HF Trainer/accelerate fill."""
    if through_hf(run):
        return
    autos = [path for path, value in leaves(run.ds_raw or {}) if value == AUTO and path in HF_FILLED]
    if autos:
        names = ", ".join(".".join(map(str, p)) for p in autos)
        yield ds_hit(run, autos[0], count=len(autos), keys=names)


@register_check("ds_auto_alias", args=("short", "long"), fix=FixAvailability.SOMETIMES)
def check_auto_alias(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """"auto" under a short ZeRO-3 alias: HF and accelerate fill only the `stage3_` spelling."""
    zero = zero_block(run)
    for short, long in ALIAS_OF_FILLED.items():
        if zero.get(short) == AUTO:
            path = ("zero_optimization", short)
            fix = ds_fix(run, path, f"rename `{short}` to `{long}`", Applicability.SAFE, action="rename", value=long)
            yield ds_hit(run, path, part="key", short=short, long=long, fix=fix)


@register_check("ds_auto_not_filled", args=("key",))
def check_auto_not_filled(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """"auto" on a key no launcher fills: accelerate raises "not found in kwargs"; DeepSpeed uses its default."""
    for path, value in leaves(run.ds_raw or {}):
        if value != AUTO or path in HF_FILLED or "replace_method" in path:
            continue
        if len(path) == 2 and path[0] == "zero_optimization" and path[1] in ALIAS_OF_FILLED:
            continue
        yield ds_hit(run, path, key=".".join(map(str, path)))


def quoted_stage(run: TrainingRun) -> int | None:
    """The stage of a `"stage": "3"` written as a quoted whole number (DeepSpeed reads 3, HF and accelerate do not)."""
    return run.zero_stage if isinstance(zero_block(run).get("stage"), str) else None


@register_check("ds_zero_stage_value", args=("stage", "effect"), fix=FixAvailability.SOMETIMES)
def check_zero_stage_value(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`stage` that is not an integer: "auto", 3.0 or true make Axolotl's launch fail (accelerate runs
    `int(os.environ["ACCELERATE_DEEPSPEED_ZERO_STAGE"])` on `str(stage)`); a quoted "3" trains ZeRO-3 in DeepSpeed
    while HF, accelerate and Axolotl's save path compare it with the integer 3 (DS131)."""
    zero = zero_block(run)
    if "stage" not in zero:
        return
    stage = zero["stage"]
    path = ("zero_optimization", "stage")
    if is_int(stage) or quoted_stage(run) is not None or stage is False or stage is None:  # DS131: quoted
        return
    if isinstance(stage, float) and stage.is_integer():
        fix = ds_fix(run, path, f"write the stage as the integer {int(stage)}", Applicability.SAFE, value=int(stage))
    else:
        fix = None
    if through_hf(run):
        effect = (f"Axolotl exports it as ACCELERATE_DEEPSPEED_ZERO_STAGE={stage!s} and accelerate's DeepSpeedPlugin "
                  f"raises \"ValueError: invalid literal for int() with base 10: '{stage!s}'\" before training")
    else:
        effect = ("DeepSpeed accepts only 0, 1, 2 or 3 (and whole numbers written as text); under the HF Trainer "
                  "or Axolotl, accelerate calls int() on it and refuses the launch")
    yield ds_hit(run, path, fix=fix, stage=_json(stage), effect=effect)


@register_check("ds_zero_stage_quoted", fix=FixAvailability.SOMETIMES)
def check_zero_stage_quoted(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`"stage": "3"`: DeepSpeed trains ZeRO-3; HF's `is_zero3()`, accelerate's `get_state_dict`, the HF Trainer's
    `save_model` and Axolotl's final save compare the value with the integer 3 and take their non-ZeRO-3 paths.
    A quoted "0", "1" or "2" runs as written (nothing on the HF side depends on it but the offload flag)."""
    if quoted_stage(run) != 3:
        return
    path = ("zero_optimization", "stage")
    fix = ds_fix(run, path, "write the stage as the number 3", Applicability.SAFE, value=3)
    yield ds_hit(run, path, fix=fix)


@register_check("ds_offload_device_auto", args=("block",))
def check_offload_device_auto(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`offload_*.device: "auto"` resolves to no offload (accelerate's default, and DeepSpeed's)."""
    zero = zero_block(run)
    for block in ("offload_optimizer", "offload_param"):
        if offload_device(zero, block) == AUTO:
            yield ds_hit(run, ("zero_optimization", block, "device"), block=block)


# ---------------------------------------------------------------------------------------------------- ZeRO keys


@register_check("ds_zero3_gather_weights", args=("setting",), fix=FixAvailability.SOMETIMES)
def check_zero3_gather(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """ZeRO-3 without `stage3_gather_16bit_weights_on_model_save: true`: the HF Trainer cannot gather the weights
    and writes a DeepSpeed checkpoint instead of a model file. LoRA/QLoRA adapters are gathered by
    `_zero3_consolidated_16bit_state_dict(exclude_frozen_parameters=True)`, which ignores the flag."""
    if run.zero_stage != 3 or (is_int(run.config.get("tensor_parallel_size")) and run.config["tensor_parallel_size"] > 1):
        return
    if through_hf(run) and run.facts.adapter.value in ("lora", "qlora"):
        return
    zero = zero_block(run)
    found = zero_get(zero, "stage3_gather_16bit_weights_on_model_save")
    deprecated = zero.get("stage3_gather_fp16_weights_on_model_save")
    if (found and found[1] is True) or (found is None and deprecated is True):
        return
    name = found[0] if found else "stage3_gather_16bit_weights_on_model_save"
    setting = f"`{name}: {_json(found[1])}`" if found else "the flag unset (default false)"
    fix = ds_fix(run, ("zero_optimization", name), f"set `{name}` to true", Applicability.SAFE, value=True)
    if found:
        yield ds_hit(run, ("zero_optimization", name), fix=fix, setting=setting)
    else:
        yield ds_hit(run, ("zero_optimization", "stage"), fix=fix, setting=setting)


@register_check("ds_offload_param_below_stage3", args=("stage",), fix=FixAvailability.SOMETIMES)
def check_offload_param_stage(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`offload_param` is valid only with ZeRO-3; stage 1/2 accept it and ignore it."""
    stage, zero = run.zero_stage, zero_block(run)
    if stage is not None and stage < 3 and offload_device(zero, "offload_param") in ("cpu", "nvme"):
        path = ("zero_optimization", "offload_param")
        fix = ds_fix(run, path, "delete the ignored `offload_param` block", Applicability.SAFE, action="delete")
        yield ds_hit(run, path, part="key", stage=stage, fix=fix)


@register_check("ds_partial_offload_below_stage3", args=("ratio", "stage"))
def check_partial_offload(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`offload_optimizer.ratio` < 1 with stage < 3: "Partial offloading only supported for ZeRO Stage 3."."""
    stage, conf = run.zero_stage, zero_block(run).get("offload_optimizer")
    ratio = as_number(conf.get("ratio")) if isinstance(conf, dict) else None
    if stage is not None and stage < 3 and ratio is not None and ratio < 1:
        yield ds_hit(run, ("zero_optimization", "offload_optimizer", "ratio"), ratio=conf["ratio"], stage=stage)


@register_check("ds_deprecated_zero_key", args=("key", "instead"), fix=FixAvailability.SOMETIMES)
def check_deprecated_zero(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Deprecated ZeRO fields given without their replacement: DeepSpeed logs a warning and moves the value."""
    zero = zero_block(run)
    if isinstance((run.ds_raw or {}).get("zero_optimization"), bool):
        yield ds_hit(run, ("zero_optimization",), key="zero_optimization: true/false", instead='`{"stage": 1}` / `{"stage": 0}`')
    for old, new in DEPRECATED_ZERO.items():
        if old not in zero or (new and zero_get(zero, new)):
            continue
        path = ("zero_optimization", old)
        fix = (ds_fix(run, path, f"rename `{old}` to `{new}`", Applicability.SAFE, action="rename", value=new)
               if old == "stage3_gather_fp16_weights_on_model_save" else None)
        instead = {"cpu_offload": '`offload_optimizer: {"device": "cpu"}`',
                   "cpu_offload_param": '`offload_param: {"device": "cpu"}`',
                   "cpu_offload_use_pin_memory": "`pin_memory` inside the offload blocks"}.get(old, f"`{new}`")
        yield ds_hit(run, path, part="key", fix=fix, key=old, instead=instead)


@register_check("ds_deprecated_with_replacement", args=("old", "new"), fix=FixAvailability.SOMETIMES)
def check_deprecated_with_replacement(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A deprecated ZeRO field next to its replacement: DeepSpeed raises AssertionError."""
    zero = zero_block(run)
    for old, new in DEPRECATED_ZERO.items():
        found = zero_get(zero, new) if new else None
        if old in zero and found:
            path = ("zero_optimization", old)
            fix = ds_fix(run, path, f"delete the deprecated `{old}`", Applicability.UNSAFE, action="delete")
            yield ds_hit(run, path, part="key", fix=fix, old=old, new=found[0])


@register_check("ds_removed_feature", args=("key", "feature"))
def check_removed_feature(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Keys and optimizers DeepSpeed 0.19.8 removed and rejects with DeepSpeedConfigError."""
    ds, zero = run.ds_raw or {}, zero_block(run)
    for key, feature in REMOVED_TOP.items():
        if key in ds:
            yield ds_hit(run, (key,), part="key", key=key, feature=feature)
    for key, feature in REMOVED_ZERO.items():
        if key in zero:
            yield ds_hit(run, ("zero_optimization", key), part="key", key=key, feature=feature)
    optimizer = ds.get("optimizer")
    kind = optimizer.get("type") if isinstance(optimizer, dict) else None
    if isinstance(kind, str) and kind.lower() in REMOVED_OPTIMIZERS:
        yield ds_hit(run, ("optimizer", "type"), key=f"optimizer type {kind}", feature="the 1-bit optimizer family")


@register_check("ds_fractional_int", args=("key", "value"), fix=FixAvailability.SOMETIMES)
def check_fractional_int(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A float with a fractional part in an integer ZeRO field: pydantic raises `int_from_float`."""
    zero = zero_block(run)
    fields = [((k,), zero[k]) for k in zero if k in INT_FIELDS]
    for block, names in OFFLOAD_INT_FIELDS.items():
        conf = zero.get(block)
        if isinstance(conf, dict):
            fields += [((block, k), conf[k]) for k in names if k in conf]
    for sub, value in fields:
        if isinstance(value, float) and math.isfinite(value) and not value.is_integer():  # inf / nan: the schema's
            path = ("zero_optimization", *sub)
            fix = ds_fix(run, path, f"truncate `{'.'.join(path)}` to {int(value)}", Applicability.UNSAFE,
                         value=int(value))
            yield ds_hit(run, path, fix=fix, key=".".join(sub), value=value)


# ---------------------------------------------------------------------------------------------------- vs the YAML


@register_check("ds_gradient_clipping_matches_yaml", args=("ds_value", "config", "yaml_value"),
                fix=FixAvailability.SOMETIMES)
def check_gradient_clipping(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An explicit `gradient_clipping` that is not the YAML's `max_grad_norm` (HF default 1.0): mismatch error."""
    ds_value = as_number((run.ds_raw or {}).get("gradient_clipping"))
    if not through_hf(run) or ds_value is None or isinstance((run.ds_raw or {}).get("gradient_clipping"), str):
        return
    yaml_value = as_number(run.config.get("max_grad_norm"))
    yaml_value = 1.0 if yaml_value is None else yaml_value
    if ds_value != yaml_value:
        yield ds_hit(run, ("gradient_clipping",), ds_value=(run.ds_raw or {})["gradient_clipping"],
                     yaml_value=yaml_value, fix=auto_fix(run, ("gradient_clipping",), Applicability.UNSAFE))


def hf_optimizer_args(cfg: dict[str, Any]) -> dict[str, Any]:
    """What the HF Trainer compares `optimizer.params` with: the YAML values or TrainingArguments defaults."""
    def pick(key: str, default: float) -> float | None:
        value = cfg.get(key)
        return default if value is None else as_number(value)

    return {"lr": pick("learning_rate", 5e-5), "weight_decay": pick("weight_decay", 0.0),
            "eps": pick("adam_epsilon", 1e-8), "betas": [pick("adam_beta1", 0.9), pick("adam_beta2", 0.999)]}


@register_check("ds_optimizer_params_match_yaml", args=("key", "ds_value", "config", "yaml_key", "yaml_value"),
                fix=FixAvailability.SOMETIMES)
def check_optimizer_params(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Explicit `optimizer.params` / `scheduler.params.warmup_max_lr` that disagree with the YAML: mismatch error."""
    if not through_hf(run):
        return
    ds = run.ds_raw or {}
    expected = hf_optimizer_args(run.config)
    yaml_names = {"lr": "learning_rate", "weight_decay": "weight_decay", "eps": "adam_epsilon",
                  "betas": "adam_beta1/adam_beta2"}
    checks = [(("optimizer", "params", k), expected[k], yaml_names[k]) for k in expected]
    checks.append((("scheduler", "params", "warmup_max_lr"), expected["lr"], "learning_rate"))
    for path, want, yaml_key in checks:
        block = ds.get(path[0])
        params = block.get("params") if isinstance(block, dict) else None
        have = params.get(path[2]) if isinstance(params, dict) else None
        if have is None or isinstance(have, str) or want is None or (isinstance(want, list) and None in want):
            continue
        got = [as_number(v) for v in have] if isinstance(have, list) else as_number(have)
        if got != want:
            yield ds_hit(run, path, key=".".join(path), ds_value=_json(have), yaml_key=yaml_key,
                         yaml_value=_json(want), fix=auto_fix(run, path, Applicability.UNSAFE))


@register_check("ds_block_overrides_yaml", args=("block", "yaml_key", "yaml_value", "config"))
def check_block_overrides_yaml(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An `optimizer`/`scheduler` block in the JSON makes HF use DeepSpeed's, ignoring the YAML's choice."""
    if not through_hf(run):
        return
    ds = run.ds_raw or {}
    for block, yaml_key in (("optimizer", "optimizer"), ("scheduler", "lr_scheduler")):
        if isinstance(ds.get(block), dict) and run.raw.get(yaml_key) is not None:
            yield ds_hit(run, (block,), part="key", block=block, yaml_key=yaml_key, yaml_value=run.raw[yaml_key])


@register_check("ds_offload_swaps_optimizer", args=("optimizer",))
def check_offload_swaps_optimizer(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Optimizer offload with a YAML optimizer accelerate cannot keep: it is silently replaced."""
    if not through_hf(run) or run.ds_raw is None:
        return
    zero = zero_block(run)
    if offload_device(zero, "offload_optimizer") not in ("cpu", "nvme") or isinstance(run.ds_raw.get("optimizer"), dict):
        return
    if run.ds_raw.get("zero_force_ds_cpu_optimizer") is False:
        return
    name = run.config.get("optimizer")
    if isinstance(name, str) and name not in OFFLOAD_KEEPS_OPTIMIZER:
        doc, span = run.ax_span(("optimizer",), "value") if "optimizer" in run.raw else run.ds_span(
            ("zero_optimization", "offload_optimizer"), "key")
        yield Hit(doc, span, {"optimizer": name})


# ---------------------------------------------------------------------------------------------------- launch


@register_check("ds_no_micro_batch")
def check_no_micro_batch(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Neither `train_micro_batch_size_per_gpu` nor `train_batch_size`: HF and accelerate fill only keys that are
    written, and DeepSpeed's `_set_batch_related_parameters` asserts that one of the two is given."""
    ds = run.ds_raw
    if not isinstance(ds, dict) or "train_micro_batch_size_per_gpu" in ds or "train_batch_size" in ds:
        return
    if through_hf(run) and (run.config.get("auto_find_batch_size") or run.facts.sample_packing.value):
        return  # with packing, Axolotl writes `micro_batch_size` into the key after the Trainer is built
    yield ds_hit(run, (), part="key")


@register_check("ds_legacy_cpu_offload")
def check_legacy_cpu_offload(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`cpu_offload: true` under the HF Trainer: DeepSpeed turns it into optimizer offload, but accelerate looks
    only at `offload_optimizer.device` before swapping the Trainer's optimizer for DeepSpeedCPUAdam, so the engine
    gets a torch optimizer with offload on and raises ZeRORuntimeException."""
    ds, zero = run.ds_raw or {}, zero_block(run)
    if not through_hf(run) or zero.get("cpu_offload") is not True or isinstance(ds.get("optimizer"), dict):
        return
    if offload_device(zero, "offload_optimizer") not in (None, "none") or ds.get("zero_force_ds_cpu_optimizer") is False:
        return
    yield ds_hit(run, ("zero_optimization", "cpu_offload"), part="key")


@register_check("ds_scheduler_steps_fixed", args=("key", "value", "what"), fix=FixAvailability.SOMETIMES)
def check_scheduler_steps_fixed(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A number for `scheduler.params.total_num_steps` / `warmup_num_steps`: the HF Trainer compares them with the
    step count it computes and the warm-up Axolotl passes, and raises the mismatch at train start."""
    if not through_hf(run):
        return
    block = (run.ds_raw or {}).get("scheduler")
    params = block.get("params") if isinstance(block, dict) else None
    if not isinstance(params, dict):
        return
    max_steps, warmup = run.config.get("max_steps"), run.config.get("warmup_steps")
    expected = {"total_num_steps": (max_steps if is_int(max_steps) and max_steps > 0 else None,
                                    "the number of optimizer steps (`max_steps`, or epochs × batches)"),
                "warmup_num_steps": (2 if warmup == 1 else warmup if is_int(warmup) else None,
                                     "the warm-up steps Axolotl passes (`warmup_steps`, or from `warmup_ratio`)")}
    for key, (want, what) in expected.items():
        value = params.get(key)
        if value is None or isinstance(value, str) or value == want:
            continue
        path = ("scheduler", "params", key)
        yield ds_hit(run, path, key=key, value=_json(value), what=what,
                     fix=auto_fix(run, path, Applicability.UNSAFE))


ZERO_UNKNOWN_018 = ("compute_grad_norm", "parameter_alignment")
"""`zero_optimization` fields that DeepSpeed 0.19 added and 0.18.x (Axolotl 0.18.0's pin) refuses as extra inputs."""


@register_check("ds_zero_field_unknown_018", args=("key",))
def check_zero_field_unknown_018(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """`compute_grad_norm` / `parameter_alignment`: DeepSpeedZeroConfig 0.18.9 forbids extra fields."""
    zero = zero_block(run)
    for key in ZERO_UNKNOWN_018:
        if key in zero:
            yield ds_hit(run, ("zero_optimization", key), part="key", key=key)


@register_check("ds_alias_with_name", args=("short", "long"), fix=FixAvailability.SOMETIMES)
def check_alias_with_name(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A ZeRO field under both its `stage3_` name and its short alias: pydantic validates the field by its name
    and refuses the alias as an extra input."""
    zero = zero_block(run)
    for short, long in ZERO_ALIASES.items():
        if short in zero and long in zero:
            path = ("zero_optimization", short)
            fix = ds_fix(run, path, f"delete `{short}`", Applicability.UNSAFE, action="delete")
            yield ds_hit(run, path, part="key", short=short, long=long, fix=fix)


@register_check("ds_zero_block_missing", args=("effect",))
def check_zero_block_missing(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A DeepSpeed config used through Axolotl without a `zero_optimization` mapping: accelerate's DeepSpeedPlugin
    refuses a missing block, and Axolotl's `prepare_optim_env` calls `.get("stage")` on whatever is there."""
    ds = run.ds_raw
    if not through_hf(run) or not isinstance(ds, dict) or isinstance(ds.get("zero_optimization"), dict):
        return
    if "zero_optimization" in ds:
        effect = ("Axolotl reads its `stage` with `.get()` and fails with \"AttributeError: '"
                  f"{type(ds['zero_optimization']).__name__}' object has no attribute 'get'\"")
    else:
        effect = "accelerate raises \"Please specify the ZeRO optimization config in the DeepSpeed config.\""
    yield ds_hit(run, ("zero_optimization",), part="key" if "zero_optimization" in ds else "key", effect=effect)


COMPILE_FIELDS_018 = frozenset({
    "debug_log", "deepcompile", "double_buffer", "free_activation", "free_activation_threshold",
    "keep_all_input_tensors", "keep_int_input_tensors", "offload_activation", "offload_opt_states",
    "offload_parameters", "passes", "symmetric_memory", "sync_after_allgather", "sync_after_reduce",
    "sync_before_allgather", "sync_before_reduce"})
"""The fields of DeepSpeed 0.18.9's `CompileConfig` (deepspeed/compile/config.py), which forbids any other."""


@register_check("ds_compile_block_unknown", args=("key",))
def check_compile_block_unknown(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """Keys of the top-level `compile` block that DeepSpeed 0.18.9's CompileConfig does not have."""
    block = (run.ds_raw or {}).get("compile")
    if not isinstance(block, dict):
        return
    for key in block:
        if key not in COMPILE_FIELDS_018:
            yield ds_hit(run, ("compile", key), part="key", key=key)
