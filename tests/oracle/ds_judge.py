"""Run inside the oracle venv (tests/oracle/requirements.txt): what an Axolotl launch does with the DeepSpeed config
before the first step, on a CPU machine, and what DeepSpeed's own parser says about a DeepSpeed JSON on its own.

For an Axolotl YAML, the steps of `axolotl train` up to `deepspeed.initialize`, in launch order:

1. Axolotl's `load_cfg`: plugins, `validate_config` (as judge.py), then the parts of `normalize_config` that touch
   the DeepSpeed run: accumulation from `batch_size`, `bf16: auto` resolved for a bf16 GPU, the JSON loaded
   (axolotl/utils/config/__init__.py, Axolotl 0.18.0).
2. `prepare_optim_env` / `setup_deepspeed_env`: the ACCELERATE_* variables, among them
   `ACCELERATE_DEEPSPEED_ZERO_STAGE=str(stage)` and the mixed precision (axolotl/utils/trainer.py).
3. The builder's `TrainingArguments` with the fields Axolotl passes (axolotl/core/builders/base.py): its
   `__post_init__` runs `HfTrainerDeepSpeedConfig.trainer_config_process` and accelerate's `DeepSpeedPlugin`
   (transformers/training_args.py 5.14.1, accelerate/utils/dataclasses.py 1.13.0). `world_size` is the GPU count.
4. `AcceleratorState`: `DeepSpeedPlugin.set_mixed_precision` (accelerate/state.py).
5. Axolotl's post-trainer hook: with `sample_packing` it writes `micro_batch_size` into the plugin's
   `train_micro_batch_size_per_gpu` (axolotl/core/builders/causal.py).
6. `deepspeed_init`: `trainer_config_finalize` with a model whose config has the hidden size and a step count
   (transformers/integrations/deepspeed.py): raises the mismatches recorded in step 3.
7. accelerate's `_prepare_deepspeed`: `deepspeed_config_process(must_match=False, ...)` with the values it fills
   (accelerate/accelerator.py): raises on an "auto" nobody fills.
8. DeepSpeed's `DeepSpeedConfig` on the final dict at that world size (deepspeed/runtime/config.py 0.18.9).
9. The engine's optimizer checks (`engine_optimizer`: `max_grad_norm` in an optimizer block, offload with the
   Trainer's torch optimizer).

A DeepSpeed JSON judged on its own goes straight to step 8, unfilled. Reads one JSON object per line on stdin:
{"id": path, "world_size": N, "hidden_size": H, "capabilities": {...}}; writes {"id", "verdict", "stage",
"error", "locs"} per line: verdict "accepted", "refused" or "environment", stage the step that refused.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import json
import logging
import os
import sys
import tempfile
import types
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DS_ACCELERATOR", "cpu")
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge as axolotl_judge  # noqa: E402  (the Axolotl half: same plugins + validate_config)

import deepspeed.comm  # noqa: E402
import torch  # noqa: E402
import transformers.training_args as hf_training_args  # noqa: E402
from deepspeed.runtime.config import DeepSpeedConfig  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from transformers import TrainingArguments  # noqa: E402

STEPS = 1237
"""Optimizer steps of the judged run when the YAML sets no `max_steps` (the dataset is not loaded): what Axolotl
passes as `max_steps` and `trainer_config_finalize` receives as `num_training_steps`. An odd count, so that a
step number written in a mutated JSON does not match it by chance."""
KEEP_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELERATE_", "WORLD_SIZE", "LOCAL_RANK"))}
OUTPUT = tempfile.mkdtemp(prefix="ds-judge-")

hf_training_args.is_torch_bf16_gpu_available = lambda: True  # the judged GPUs (H100) do bf16; this CPU does not


class Refused(Exception):
    """A step of the launch refused the config."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.stage = stage
        self.exc = exc


@contextlib.contextmanager
def step(stage: str):
    try:
        yield
    except Refused:
        raise
    except Exception as exc:  # every exception of a launch step stops the launch
        raise Refused(stage, exc) from exc


@contextlib.contextmanager
def world(size: int):
    """DeepSpeed's `dist.get_world_size()` / `get_rank()` as on `size` GPUs, without a process group."""
    saved = deepspeed.comm.get_world_size, deepspeed.comm.get_rank
    deepspeed.comm.get_world_size = lambda *a, **k: size
    deepspeed.comm.get_rank = lambda *a, **k: 0
    try:
        yield
    finally:
        deepspeed.comm.get_world_size, deepspeed.comm.get_rank = saved


def deepspeed_parse(config: dict, world_size: int) -> DeepSpeedConfig:
    with step("deepspeed"), world(world_size):
        return DeepSpeedConfig(copy.deepcopy(config))


def engine_optimizer(config: dict, parsed: DeepSpeedConfig) -> None:
    """Step 9, the optimizer check of `DeepSpeedEngine._configure_optimizer` (deepspeed/runtime/engine.py 0.18.9):
    with optimizer offload on, a client optimizer that is not DeepSpeed's CPU Adam/Lion raises
    ZeRORuntimeException unless `zero_force_ds_cpu_optimizer` is false. Without an `optimizer` block the client
    optimizer is the Trainer's; accelerate swaps it for DeepSpeedCPUAdam only when the *dict* says
    `offload_optimizer.device` is not "none" (accelerate/accelerator.py `_prepare_deepspeed`), so an offload
    DeepSpeed derives from a legacy key reaches the engine with the Trainer's torch optimizer."""
    block = config.get("optimizer")
    if isinstance(block, dict):  # `_configure_basic_optimizer`: DeepSpeed builds the optimizer from the block
        if "max_grad_norm" in (block.get("params") or {}):
            raise Refused("deepspeed-engine", ValueError(
                "'max_grad_norm' is not supported as an optimizer parameter, please switch to using the deepspeed "
                "parameter 'gradient_clipping'"))
        return
    offload = parsed.zero_config.offload_optimizer
    if offload is None or str(getattr(offload.device, "value", offload.device)) not in ("cpu", "nvme"):
        return
    zero = config.get("zero_optimization") if isinstance(config.get("zero_optimization"), dict) else {}
    block = zero.get("offload_optimizer") if isinstance(zero.get("offload_optimizer"), dict) else {}
    swapped = block.get("device", "none") != "none" and config.get("zero_force_ds_cpu_optimizer", True)
    if not swapped and parsed.zero_force_ds_cpu_optimizer:
        raise Refused("deepspeed-engine", RuntimeError(
            "ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer (torch AdamW)"))


def _args_class(world_size: int) -> type:
    class Args(TrainingArguments):
        @functools.cached_property
        def _setup_devices(self) -> torch.device:  # no process group: the devices are judged, not used
            self.distributed_state = None
            self._n_gpu = 1
            return torch.device("cpu")

        @property
        def world_size(self) -> int:  # the launch's GPU count, as torch.distributed would report it
            return world_size
    return Args


def _reset_env(env: dict[str, str]) -> None:
    for key in [k for k in os.environ if k not in KEEP_ENV]:
        del os.environ[key]
    os.environ.update(env)


def hf_launch(cfg, world_size: int, hidden_size: int) -> None:
    """Steps 1 (normalize) to 8 for a validated Axolotl config that names a DeepSpeed config."""
    with step("axolotl"):
        gas = cfg.gradient_accumulation_steps or (cfg.batch_size // cfg.micro_batch_size)
        mbs = cfg.micro_batch_size
        bf16, fp16 = cfg.bf16, cfg.fp16
        if not fp16 and bf16 == "auto":
            bf16 = True
        if fp16 and bf16 == "auto":
            bf16 = False
        if bf16 and bf16 != "full":
            fp16 = False
        ds = cfg.deepspeed
        if isinstance(ds, str):
            with open(ds, encoding="utf-8") as fh:
                ds = json.load(fh)
        ds = ds.to_dict() if hasattr(ds, "to_dict") else copy.deepcopy(ds)
    with step("axolotl"):  # prepare_optim_env / setup_deepspeed_env
        stage = (ds.get("zero_optimization") or {}).get("stage") if isinstance(ds, dict) else None
        env = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS": str(gas),
               "WORLD_SIZE": str(world_size), "LOCAL_RANK": "0"}
        if stage:
            env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] = str(stage)
            if stage == 3:
                env["ACCELERATE_DEEPSPEED_ZERO3_INIT"] = "true"
        env["ACCELERATE_MIXED_PRECISION"] = ("fp8" if cfg.fp8 else "bf16" if bf16 is True else
                                             "fp16" if fp16 else "no")
        _reset_env(env)
    kwargs = {"output_dir": OUTPUT, "per_device_train_batch_size": mbs, "gradient_accumulation_steps": gas,
              "fp16": bool(fp16 and not bf16), "max_steps": cfg.max_steps or STEPS, "deepspeed": ds,
              "report_to": "none"}
    if bf16 == "full":
        kwargs["bf16_full_eval"] = True
    else:
        kwargs["bf16"] = bool(bf16)
    for key in ("adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "learning_rate", "weight_decay"):
        if cfg.get(key) is not None:
            kwargs[key] = cfg[key]
    total = kwargs["max_steps"]  # Axolotl's `_configure_warmup_and_logging` with this many steps
    if cfg.warmup_steps is not None:
        warmup = cfg.warmup_steps
    elif cfg.warmup_ratio is not None:
        warmup = max(int(cfg.warmup_ratio * total), 0)
    else:
        warmup = min(int(0.03 * total), 100)
    kwargs["warmup_steps"] = 2 if warmup == 1 else warmup
    with step("hf"):
        args = _args_class(world_size)(**kwargs)
    plugin = args.deepspeed_plugin
    with step("accelerate"):
        plugin.set_mixed_precision(args.mixed_precision)
    if cfg.sample_packing:
        plugin.deepspeed_config["train_micro_batch_size_per_gpu"] = mbs
    model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=hidden_size))
    with step("hf"):
        plugin.hf_ds_config.trainer_config_finalize(args, model, args.max_steps)
    with step("accelerate"):
        filled = {"gradient_clipping": 1.0, "zero_optimization.stage3_gather_16bit_weights_on_model_save": False}
        micro = plugin.get_value("train_micro_batch_size_per_gpu")
        if micro is not None:
            filled["train_micro_batch_size_per_gpu"] = micro
            filled["train_batch_size"] = micro * plugin.get_value("gradient_accumulation_steps") * world_size
        filled.update({"zero_optimization.reduce_bucket_size": hidden_size * hidden_size,
                       "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
                       "zero_optimization.stage3_param_persistence_threshold": 10 * hidden_size})
        if "optimizer" in plugin.deepspeed_config:
            filled.update({"optimizer.params.lr": args.learning_rate,
                           "optimizer.params.weight_decay": args.weight_decay})
        plugin.deepspeed_config_process(must_match=False, **filled)
    engine_optimizer(plugin.deepspeed_config, deepspeed_parse(plugin.deepspeed_config, world_size))


def judge(item: dict) -> dict:
    path, world_size = item["id"], item.get("world_size", 8)
    try:
        if path.endswith(".json"):
            with step("deepspeed"):
                with open(path, encoding="utf-8") as fh:
                    config = json.load(fh)
            deepspeed_parse(config, world_size)
        else:
            try:
                cfg = axolotl_judge.validated(path, item["capabilities"])
            except ValidationError as exc:
                errors = exc.errors()
                message = errors[0]["msg"] if errors else str(exc)
                return {"verdict": axolotl_judge._kind(message), "stage": "axolotl",
                        "error": axolotl_judge._first_line(message),
                        "locs": [[str(part) for part in e["loc"]] for e in errors]}
            except Exception as exc:
                raise Refused("axolotl", exc) from exc
            if cfg.deepspeed:
                hf_launch(cfg, world_size, item.get("hidden_size", 4096))
    except Refused as refused:
        message = str(refused)
        kind = "environment" if isinstance(refused.exc, ImportError) else axolotl_judge._kind(message)
        return {"verdict": kind, "stage": refused.stage, "error": _lines(message), "locs": []}
    finally:
        _reset_env({})
    return {"verdict": "accepted", "stage": "", "error": "", "locs": []}


def _lines(text: str) -> str:
    """The message on one line (the HF mismatch error names the keys on its second and later lines)."""
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())[:500]


def main() -> None:
    axolotl_judge.serve(judge)


if __name__ == "__main__":
    main()
