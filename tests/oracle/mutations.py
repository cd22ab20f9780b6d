"""Seeded, reproducible mutations of the vendored Axolotl corpus for the differential suite.

Each mutation takes one corpus config that Axolotl accepts and applies one or two edits: a generic one (drop a
key, null it, misspell a key or a value, change a value's type) or a targeted one from `TARGETED`, settings that
Axolotl's validators, the HF Trainer or DeepSpeed are known to care about. Whether an edit makes the config fail
is not decided here: the real stack judges it and axlint is compared with that verdict.
"""
from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Callable

DROP = object()
"""Marks a key a targeted edit removes."""

FSDP2 = {"fsdp_version": 2, "fsdp_config": {"offload_params": False, "state_dict_type": "FULL_STATE_DICT",
                                             "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                                             "transformer_layer_cls_to_wrap": "LlamaDecoderLayer",
                                             "reshard_after_forward": True}}

TARGETED: list[dict[str, Any]] = [
    {"eval_steps": 10, "val_set_size": 0},
    {"eval_steps": 10, "val_set_size": 0.05},
    {"save_strategy": "best"},
    {"save_strategy": "best", "metric_for_best_model": "eval_loss"},
    {"save_strategy": "no", "save_steps": 10},
    {"eval_strategy": "no", "eval_steps": 10},
    {"evals_per_epoch": 4, "eval_steps": 10},
    {"saves_per_epoch": 2, "save_steps": 10},
    {"early_stopping_patience": 3},
    {"early_stopping_patience": 3, "save_steps": 20, "eval_steps": 10, "val_set_size": 0.05},
    {"load_best_model_at_end": True},
    {"learning_rate": DROP},
    {"datasets": DROP},
    {"base_model": DROP},
    {"max_packed_sequence_len": 2048},
    {"rope_scaling": {"type": "linear", "factor": 2.0}},
    {"flash_attn_rms_norm": True},
    {"unsloth_lora_mlp": True},
    {"chat_template": "jinja"},
    {"chat_template": "chatml"},
    {"chat_template": "chatlm"},
    {"test_datasets": [{"path": "tatsu-lab/alpaca", "type": "alpaca"}], "val_set_size": 0.05},
    {"attn_implementation": "flashy"},
    {"attn_implementation": "flash_attention_2"},
    {"attn_implementation": "sdpa", "sample_packing": True},
    {"flash_attention": True, "sdp_attention": True},
    {"flash_attention": True, "xformers_attention": True},
    {"flash_attention": "true"},
    {"sample_packing": True, "flash_attention": False, "sdp_attention": False},
    {"bf16": True, "fp16": True},
    {"bf16": "full"},
    {"bf16": "auto"},
    {"bf16": False, "fp16": False, "tf32": True},
    {"fp16": True, "bf16": False},
    {"adapter": "lora", "load_in_4bit": True},
    {"adapter": "qlora", "load_in_4bit": False},
    {"adapter": "qlora", "load_in_8bit": True, "load_in_4bit": True},
    {"adapter": "lora", "load_in_8bit": True, "load_in_4bit": True},
    {"adapter": "lora", "lora_r": 16, "lora_alpha": 32, "lora_target_linear": True, "lora_target_modules": DROP},
    {"adapter": "lora", "lora_target_modules": DROP, "lora_target_linear": DROP},
    {"adapter": "mora"},
    {"adapter": "lora", "lora_dropout": 1.5},
    {"warmup_steps": 0, "warmup_ratio": 0.1},
    {"warmup_steps": 10, "warmup_ratio": 0.1},
    {"warmup_steps": 0.1},
    {"gradient_checkpointing": True, "activation_offloading": True},
    {"gradient_checkpointing": "unsloth"},
    {"gradient_checkpointing": "offload"},
    {"gradient_checkpointing": False, "activation_offloading": True},
    {"optimizer": "adamw_bnb_8bit", **FSDP2},
    {"optimizer": "adamw_torch_8bit", **FSDP2},
    {"optimizer": "adamw_torhc_fused"},
    {"optimizer": "muon"},
    {"lr_scheduler": "cosin"},
    {"lr_scheduler": "rex"},
    {"deepspeed": "deepspeed_configs/zero3_bf16.json"},
    {"deepspeed": "deepspeed_configs/zero3_bf16.json", **FSDP2},
    {"deepspeed": "deepspeed_configs/zero2.json", "fsdp": ["full_shard", "auto_wrap"]},
    {"fsdp": ["full_shard", "auto_wrap"], "fsdp_config": DROP},
    {"fsdp_version": 1, "fsdp_config": {"fsdp_offload_params": True}},
    {"unfrozen_parameters": []},
    {"unfrozen_parameters": ["lm_head.*"], "adapter": "lora"},
    {"micro_batch_size": 0},
    {"micro_batch_size": "2"},
    {"gradient_accumulation_steps": 0},
    {"num_epochs": 0},
    {"sequence_len": "4096"},
    {"sequence_len": 4096.5},
    {"eval_batch_size": 64},
    {"streaming": True},
    {"streaming": True, "max_steps": 100},
    {"max_steps": 100},
    {"lora_modules_to_save": ["embed_tokens", "lm_head"]},
    {"tokens": ["<x>"]},
    {"tokens": "<x>"},
    {"special_tokens": {"pad_token": "<pad>"}},
    {"special_tokens": {"pad_tokn": "<pad>"}},
    {"special_tokens": "<pad>"},
    {"torch_compile": True},
    {"torch_compile": "auto"},
    {"rl": "dpo"},
    {"rl": "grpo", "trl": {"num_generations": 3}},
    {"rl": "grpo", "trl": {"num_generations": 4}, "micro_batch_size": 2},
    {"rl": "orpo"},
    {"rl": "kto"},
    {"rl": "ppo"},
    {"plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_fused_linear_cross_entropy": True},
    {"plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_fused_linear_cross_entropy": True,
     "liger_cross_entropy": True},
    {"liger_fused_linear_cross_entropy": True},
    {"plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"], "cut_cross_entropy": True},
    {"plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"], "cut_cross_entropy": True,
     "plugins_extra": DROP, "liger_fused_linear_cross_entropy": True},
    {"cut_cross_entropy": True},
    {"output_dir": None},
    {"output_dir": 5},
    {"val_set_size": 1.5},
    {"val_set_size": -0.1},
    {"weight_decay": "0.0"},
    {"learning_rate": "2e-4"},
    {"learning_rate": "fast"},
    {"max_grad_norm": -1},
    {"logging_steps": 0},
    {"seed": "42"},
    {"dataset_prepared_path": None},
    {"resume_from_checkpoint": True},
    {"auto_resume_from_checkpoints": True},
    {"group_by_length": True, "sample_packing": True},
    {"pad_to_sequence_len": True, "sample_packing": False},
    {"eval_sample_packing": True, "sample_packing": False},
    {"sample_packing": True, "micro_batch_size": 4},
    {"load_in_8bit": True, "adapter": DROP},
    {"load_in_4bit": True, "adapter": DROP},
    {"gptq": True, "adapter": "lora"},
    {"neftune_noise_alpha": 5},
    {"noisy_embedding_alpha": 5},
    {"model_type": "AutoModelForCausalLM"},
    {"tokenizer_type": "AutoTokenizer"},
    {"trust_remote_code": "yes"},
    {"strict": False},
    {"is_falcon_derived_model": True},
    {"lora_target_linear": True, "adapter": "lora", "lora_target_modules": ["q_proj"]},
    {"relora_steps": 100},
    {"relora": True, "adapter": "lora", "relora_steps": 100},
    {"lisa_n_layers": 4},
    {"context_parallel_size": 2, "flash_attention": True},
    {"tensor_parallel_size": 2},
    {"dpo_beta": 0.1},
    {"eval_table_size": 5},
    {"train_on_inputs": "yes"},
    {"shuffle_merged_datasets": False},
    {"dataset_processes": 0},
    {"ddp_timeout": "forever"},
]


@dataclass(frozen=True)
class Mutation:
    """One mutated config: what was done (for a failure message) and the resulting mapping."""

    name: str
    base: str
    config: dict


def _edit_targeted(config: dict, rng: random.Random) -> str:
    edit = rng.choice(TARGETED)
    for key, value in edit.items():
        if value is DROP:
            config.pop(key, None)
        else:
            config[key] = copy.deepcopy(value)
    return "set " + ", ".join(f"{k}={'<drop>' if v is DROP else v!r}" for k, v in edit.items())


def _edit_drop(config: dict, rng: random.Random) -> str:
    key = rng.choice(sorted(config))
    del config[key]
    return f"drop {key}"


def _edit_null(config: dict, rng: random.Random) -> str:
    key = rng.choice(sorted(config))
    config[key] = None
    return f"null {key}"


def _misspell(word: str, rng: random.Random) -> str:
    if len(word) < 4:
        return word + word[-1]
    i = rng.randrange(1, len(word) - 2)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def _edit_key_typo(config: dict, rng: random.Random) -> str:
    key = rng.choice(sorted(config))
    new = _misspell(key, rng)
    config[new] = config.pop(key)
    return f"rename {key} -> {new}"


def _edit_value_typo(config: dict, rng: random.Random) -> str:
    strings = sorted(k for k, v in config.items() if isinstance(v, str) and k not in ("base_model", "output_dir"))
    if not strings:
        return _edit_key_typo(config, rng)
    key = rng.choice(strings)
    config[key] = _misspell(config[key], rng)
    return f"misspell {key}"


def _edit_retype(config: dict, rng: random.Random) -> str:
    key = rng.choice(sorted(config))
    value = config[key]
    options = [str(value), [value], {"value": value}, True, 3]
    config[key] = rng.choice([o for o in options if o != value and type(o) is not type(value)] or [None])
    return f"retype {key} -> {type(config[key]).__name__}"


def _edit_dataset(config: dict, rng: random.Random) -> str:
    datasets = config.get("datasets")
    if not isinstance(datasets, list) or not datasets or not isinstance(datasets[0], dict):
        return _edit_targeted(config, rng)
    entry = datasets[0]
    choice = rng.choice(["sharegpt", "sharegpt:chat", "completion", "alpaca", "chat_template", "tpye", "drop-path"])
    if choice == "tpye":
        entry["tpye"] = entry.pop("type", "alpaca")
    elif choice == "drop-path":
        entry.pop("path", None)
    else:
        entry["type"] = choice
    return f"datasets[0] {choice}"


GENERIC: list[Callable[[dict, random.Random], str]] = [
    _edit_drop, _edit_null, _edit_key_typo, _edit_value_typo, _edit_retype, _edit_dataset]


def mutate(bases: dict[str, dict], count: int, seed: int) -> list[Mutation]:
    """`count` mutations of the configs in `bases` (name -> mapping), the same list for the same seed."""
    rng = random.Random(seed)
    names = sorted(bases)
    out = []
    for _ in range(count):
        base = rng.choice(names)
        config = copy.deepcopy(bases[base])
        steps = [_edit_targeted(config, rng) if rng.random() < 0.6 else rng.choice(GENERIC)(config, rng)
                 for _ in range(rng.choice((1, 1, 2)))]
        if config:
            out.append(Mutation("; ".join(steps), base, config))
    return out
