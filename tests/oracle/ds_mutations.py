"""Seeded, reproducible mutations of the DeepSpeed side of Axolotl configs for the DeepSpeed half of the suite.

Each mutation takes an Axolotl YAML the real stack launches and the DeepSpeed JSON it names, and applies one or two
edits to the JSON (a quoted or "auto" stage, legacy keys, missing or explicit batch keys, fixed scheduler steps,
short aliases, offload devices, precision blocks, keys DeepSpeed 0.18 does not know, typos) or to the YAML values
the HF Trainer compares the JSON with (micro batch, packing, precision, clipping, learning rate). Whether an edit
breaks the launch is not decided here: the real stack judges it.
"""
from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Callable

Edit = Callable[[dict, dict, random.Random], str]


@dataclass(frozen=True)
class DsMutation:
    name: str
    base: str
    config: dict
    deepspeed: dict


def _zero(ds: dict) -> dict:
    zero = ds.get("zero_optimization")
    if not isinstance(zero, dict):
        zero = ds["zero_optimization"] = {"stage": 2}
    return zero


def _stage(yml: dict, ds: dict, rng: random.Random) -> str:
    value = rng.choice(["3", "2", "1", "auto", 3.0, 4, True, 0, 1, 3])
    _zero(ds)["stage"] = value
    return f"stage={value!r}"


def _legacy_offload(yml: dict, ds: dict, rng: random.Random) -> str:
    zero = _zero(ds)
    key = rng.choice(["cpu_offload", "cpu_offload", "cpu_offload_param", "stage3_gather_fp16_weights_on_model_save"])
    value = rng.choice([True, True, False])
    if key == "cpu_offload" and rng.random() < 0.7:
        zero.pop("offload_optimizer", None)
    zero[key] = value
    return f"zero.{key}={value!r}"


def _batch_keys(yml: dict, ds: dict, rng: random.Random) -> str:
    mbs, gas = yml.get("micro_batch_size", 1), yml.get("gradient_accumulation_steps", 1)
    choice = rng.choice(["drop-micro-and-total", "drop-all", "drop-micro", "total-right", "total-wrong",
                         "micro-same", "micro-other", "micro-other-packed", "gas-same", "gas-other", "micro-str",
                         "gas-str", "total-only"])
    if choice == "drop-micro-and-total":
        ds.pop("train_micro_batch_size_per_gpu", None)
        ds.pop("train_batch_size", None)
    elif choice == "drop-all":
        for key in ("train_micro_batch_size_per_gpu", "train_batch_size", "gradient_accumulation_steps"):
            ds.pop(key, None)
    elif choice == "drop-micro":
        ds.pop("train_micro_batch_size_per_gpu", None)
    elif choice == "total-right":
        ds["train_batch_size"] = mbs * gas * 8
    elif choice == "total-wrong":
        ds["train_batch_size"] = mbs * gas * 8 + 4
    elif choice == "total-only":
        ds.pop("train_micro_batch_size_per_gpu", None)
        ds["train_batch_size"] = mbs * gas * 8
    elif choice == "micro-same":
        ds["train_micro_batch_size_per_gpu"] = mbs
    elif choice in ("micro-other", "micro-other-packed"):
        ds["train_micro_batch_size_per_gpu"] = mbs + 2
        if choice == "micro-other-packed":
            yml["sample_packing"] = True
    elif choice == "gas-same":
        ds["gradient_accumulation_steps"] = gas
    elif choice == "gas-other":
        ds["gradient_accumulation_steps"] = gas * 2
    elif choice == "micro-str":
        ds["train_micro_batch_size_per_gpu"] = str(mbs)
    elif choice == "gas-str":
        ds["gradient_accumulation_steps"] = str(gas)
    return f"batch {choice}"


def _scheduler(yml: dict, ds: dict, rng: random.Random) -> str:
    params = {"warmup_min_lr": "auto", "warmup_max_lr": "auto", "warmup_num_steps": "auto",
              "total_num_steps": "auto"}
    choice = rng.choice(["all-auto", "total-fixed", "warmup-fixed", "max-lr-fixed", "warmup-lr"])
    kind = "WarmupDecayLR"
    if choice == "total-fixed":
        params["total_num_steps"] = rng.choice([1000, 5000])
    elif choice == "warmup-fixed":
        params["warmup_num_steps"] = 10
    elif choice == "max-lr-fixed":
        params["warmup_max_lr"] = 3e-5
    elif choice == "warmup-lr":
        kind = "WarmupLR"
        params.pop("total_num_steps")
    ds["scheduler"] = {"type": kind, "params": params}
    return f"scheduler {choice}"


def _optimizer(yml: dict, ds: dict, rng: random.Random) -> str:
    params: dict[str, Any] = {"lr": "auto", "betas": "auto", "eps": "auto", "weight_decay": "auto"}
    choice = rng.choice(["all-auto", "lr-fixed", "betas-fixed", "max-grad-norm", "wd-fixed"])
    if choice == "lr-fixed":
        params["lr"] = 1e-5
    elif choice == "betas-fixed":
        params["betas"] = [0.9, 0.95]
    elif choice == "max-grad-norm":
        params["max_grad_norm"] = 1.0
    elif choice == "wd-fixed":
        params["weight_decay"] = 0.1
    ds["optimizer"] = {"type": "AdamW", "params": params}
    return f"optimizer {choice}"


def _precision(yml: dict, ds: dict, rng: random.Random) -> str:
    choice = rng.choice(["both-true", "bf16-false", "fp16-true", "bf16-true", "auto", "yaml-fp16", "bfloat16"])
    if choice == "both-true":
        ds["bf16"] = {"enabled": True}
        ds["fp16"] = {"enabled": True}
    elif choice == "bf16-false":
        ds["bf16"] = {"enabled": False}
    elif choice == "fp16-true":
        ds["fp16"] = {"enabled": True}
    elif choice == "bf16-true":
        ds["bf16"] = {"enabled": True}
    elif choice == "auto":
        ds["bf16"] = {"enabled": "auto"}
        ds["fp16"] = {"enabled": "auto"}
    elif choice == "yaml-fp16":
        yml["bf16"] = False
        yml["fp16"] = True
    elif choice == "bfloat16":
        ds.pop("bf16", None)
        ds["bfloat16"] = {"enabled": True}
    return f"precision {choice}"


def _clipping(yml: dict, ds: dict, rng: random.Random) -> str:
    choice = rng.choice(["0.5", "1.0", "yaml-0.5", "auto-yaml-0.3"])
    if choice == "0.5":
        ds["gradient_clipping"] = 0.5
    elif choice == "1.0":
        ds["gradient_clipping"] = 1.0
    elif choice == "yaml-0.5":
        ds["gradient_clipping"] = 0.5
        yml["max_grad_norm"] = 0.5
    else:
        ds["gradient_clipping"] = "auto"
        yml["max_grad_norm"] = 0.3
    return f"clipping {choice}"


def _aliases(yml: dict, ds: dict, rng: random.Random) -> str:
    zero = _zero(ds)
    choice = rng.choice(["prefetch_bucket_size", "param_persistence_threshold", "max_live_parameters",
                         "stage3_max_live_parameters", "gather_16bit_weights_on_model_save",
                         "allgather_bucket_size"])
    value: Any = "auto"
    if choice == "gather_16bit_weights_on_model_save":
        value = rng.choice([True, False])
        zero.pop("stage3_gather_16bit_weights_on_model_save", None)
    elif rng.random() < 0.3:
        value = 100000
    if choice in ("prefetch_bucket_size", "param_persistence_threshold"):
        zero.pop("stage3_" + choice, None)
    zero[choice] = value
    return f"zero.{choice}={value!r}"


def _offload(yml: dict, ds: dict, rng: random.Random) -> str:
    zero = _zero(ds)
    block = rng.choice(["offload_optimizer", "offload_param"])
    device = rng.choice(["auto", "cpu", "nvme", "gpu", "none"])
    zero[block] = {"device": device}
    if device == "nvme":
        zero[block]["nvme_path"] = "nvme-scratch"
    if rng.random() < 0.2:
        zero[block]["ratio"] = 0.5
    if rng.random() < 0.2:
        ds["zero_force_ds_cpu_optimizer"] = False
    return f"zero.{block}.device={device!r}"


def _unknown_keys(yml: dict, ds: dict, rng: random.Random) -> str:
    zero = _zero(ds)
    choice = rng.choice(["compute_grad_norm", "parameter_alignment", "amp", "zero_optimisation", "overlap_com",
                         "gradient_clippping", "fractional", "reduce-zero", "zero-true", "mics"])
    if choice == "compute_grad_norm":
        zero["compute_grad_norm"] = rng.choice([True, False])
    elif choice == "parameter_alignment":
        zero["parameter_alignment"] = 8
    elif choice == "amp":
        ds["amp"] = {"enabled": True, "opt_level": "O1"}
    elif choice == "zero_optimisation":
        ds["zero_optimisation"] = ds.pop("zero_optimization")
    elif choice == "overlap_com":
        zero["overlap_com"] = zero.pop("overlap_comm", True)
    elif choice == "gradient_clippping":
        ds["gradient_clippping"] = ds.pop("gradient_clipping", 1.0)
    elif choice == "fractional":
        zero["reduce_bucket_size"] = 1500000.5
    elif choice == "reduce-zero":
        zero["reduce_bucket_size"] = 0
    elif choice == "zero-true":
        ds["zero_optimization"] = True
    elif choice == "mics":
        zero["mics_shard_size"] = 8
    return f"key {choice}"


def _yaml_side(yml: dict, ds: dict, rng: random.Random) -> str:
    choice = rng.choice(["mbs", "packing", "lr", "adapter", "gas", "batch_size"])
    if choice == "mbs":
        yml["micro_batch_size"] = rng.choice([1, 3, 4])
    elif choice == "packing":
        yml["sample_packing"] = True
    elif choice == "lr":
        yml["learning_rate"] = 1e-5
    elif choice == "adapter":
        yml["adapter"] = "lora"
        yml.update({"lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.05, "lora_target_linear": True})
    elif choice == "gas":
        yml["gradient_accumulation_steps"] = rng.choice([1, 2, 8])
    elif choice == "batch_size":
        yml.pop("gradient_accumulation_steps", None)
        yml["batch_size"] = yml.get("micro_batch_size", 1) * 4
    return f"yaml {choice}"


EDITS: list[Edit] = [_stage, _legacy_offload, _batch_keys, _batch_keys, _scheduler, _optimizer, _precision,
                     _clipping, _aliases, _offload, _unknown_keys, _unknown_keys, _yaml_side]


def mutate(bases: dict[str, tuple[dict, dict]], count: int, seed: int) -> list[DsMutation]:
    """`count` mutations of `bases` (name -> (YAML mapping, DeepSpeed mapping)), the same for the same seed."""
    rng = random.Random(seed)
    names = sorted(bases)
    out = []
    for _ in range(count):
        base = rng.choice(names)
        yml, ds = copy.deepcopy(bases[base][0]), copy.deepcopy(bases[base][1])
        steps = [rng.choice(EDITS)(yml, ds, rng) for _ in range(rng.choice((1, 1, 2)))]
        out.append(DsMutation("; ".join(steps), base, yml, ds))
    return out
