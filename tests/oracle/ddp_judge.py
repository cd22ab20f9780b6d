"""Run inside the oracle venv: which parameters of a multimodal model get no gradient in a text-only step, and what
DDP does with them.

Reads one JSON object per line on stdin and writes one per line on stdout:

- {"id", "model_type", "config", "lora": bool, "freeze": bool}: a small model of that config (random weights, on
  the CPU) built with the class Axolotl 0.18.0 loads a multimodal type with (kernel_patch_judge
  ``build_as_axolotl_loads``); under ``lora`` wrapped by PEFT 0.19.1 (r 4) with the names Axolotl's
  ``find_all_linear_names`` collects, after Axolotl's patch for Gemma 4's clippable Linears; under ``freeze``
  Axolotl's own ``freeze_mm_modules``; then one text-only forward and backward. Answers {"frozen_base",
  "frozen_adapter"} (parameters freeze_mm_modules set to requires_grad False), {"idle_base", "idle_adapter"}
  (trainable parameters whose .grad stayed None; adapters are the ``lora_`` tensors), "error" ("" or what raised).
- {"id", "ddp": {"model_type", "config", "lora", "freeze", "find_unused", "reentrant"}}: the same model trained for
  four steps by two processes of transformers' Trainer (gloo, ``torchrun``) with the arguments Axolotl's builder
  gives it: ``ddp_find_unused_parameters`` as Axolotl passes it (``core/builders/causal.py``) and gradient
  checkpointing with ``use_reentrant`` as ``normalize_config`` writes it. Answers {"error": the first
  ``RuntimeError`` line a rank printed, or "", "steps": the steps both ranks finished, "log": the end of the
  launcher's output}.
  - With "deepspeed" (a DeepSpeed config) the Trainer gets it as Axolotl passes a DeepSpeed file
    (``TrainingArguments.deepspeed``), and DeepSpeed 0.18.9 runs on its CPU accelerator. Its ZeRO-1/2 step
    all-gathers the updated partitions with autograd on, and gloo's CPU ``all_gather_into_tensor`` writes into
    split views, which autograd refuses on any model; the judge runs that all-gather under ``no_grad``, which
    changes no value.
  - With "fsdp2" (the layer classes to wrap), the ranks shard the model as accelerate 1.13's
    ``fsdp2_prepare_model`` does (``fully_shard`` on each such layer, then on the root) and train it with AdamW,
    without the Trainer: accelerate takes the FSDP path on GPUs only.

Axolotl's loaders import its telemetry module, which imports ``posthog``; the oracle venv leaves that package out,
and the judge gives it an empty stand-in (no telemetry is sent either way).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

from judge import _first_line, serve  # the sibling judge: same environment

sys.modules.setdefault("posthog", mock.MagicMock())
TOKENS = [1, 5, 7, 9, 11, 13]
REDUCER = "Expected to"
"""How DDP's reducer errors begin; any other RuntimeError (gloo's rendezvous) is the machine's, and tried again."""


def small_model(model_type: str, config: dict, lora: bool, freeze: bool):
    """The model of ``config`` on the CPU as Axolotl loads and prepares it; and what ``freeze_mm_modules`` froze."""
    import torch
    from axolotl.loaders import adapter
    from axolotl.utils.freeze import freeze_mm_modules
    from peft import LoraConfig, get_peft_model

    from kernel_patch_judge import build_as_axolotl_loads

    torch.manual_seed(0)
    model = build_as_axolotl_loads(model_type, config, device="cpu")
    if lora:
        adapter._patch_peft_clippable_linear()
        names = sorted(adapter.find_all_linear_names(model))
        model = get_peft_model(model, LoraConfig(r=4, target_modules=names, task_type="CAUSAL_LM"))
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    if freeze:
        freeze_mm_modules(model)
    frozen = {name: p.numel() for name, p in model.named_parameters() if name in trainable and not p.requires_grad}
    return model, frozen


def _split(sizes: dict[str, int], key: str) -> dict[str, int]:
    return {f"{key}_adapter": sum(n for name, n in sizes.items() if ".lora_" in name),
            f"{key}_base": sum(n for name, n in sizes.items() if ".lora_" not in name)}


def idle(item: dict) -> dict:
    import torch

    try:
        model, frozen = small_model(item["model_type"], item["config"], item["lora"], item["freeze"])
        tokens = torch.tensor([TOKENS])
        model(input_ids=tokens, labels=tokens).loss.backward()
    except Exception as exc:  # the failure is the answer
        return {"error": _first_line(f"{type(exc).__name__}: {exc}")}
    unused = {name: p.numel() for name, p in model.named_parameters() if p.requires_grad and p.grad is None}
    return {"error": "", **_split(frozen, "frozen"), **_split(unused, "idle")}


def ddp(item: dict, tries: int = 2, timeout: int = 300) -> dict:
    """Two ranks of the Trainer on ``item["ddp"]``; the ranks run this file with ``--rank``. A launch that neither
    finished nor stopped in DDP's reducer within ``timeout`` seconds (the rendezvous of two processes on a busy
    machine) is tried again; "log" keeps the end of the last launch's output for the test's message."""
    errors: list[str] = []
    steps: list[int] = []
    log = ""
    for _ in range(tries):
        with tempfile.TemporaryDirectory() as tmp:
            spec = Path(tmp) / "run.json"
            spec.write_text(json.dumps(item["ddp"]))
            torchrun = Path(sys.executable).with_name("torchrun")
            env = {**os.environ, "OMP_NUM_THREADS": "1", "OUTPUT": tmp}
            try:
                done = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", __file__, "--rank",
                                       str(spec)], capture_output=True, text=True, env=env, timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                log = f"no answer in {timeout} s: {exc.stderr!r}"[-1500:]
                continue
        errors = [line.split("RuntimeError: ", 1)[1] for line in done.stderr.splitlines() if "RuntimeError: " in line]
        steps = [int(line.split()[-1]) for line in done.stdout.splitlines() if line.startswith("FINISHED ")]
        log = done.stderr[-1500:]
        if len(steps) == 2 or any(REDUCER in error for error in errors):
            break
    return {"error": _first_line(errors[0]) if errors else "", "steps": min(steps) if len(steps) == 2 else 0,
            "log": log}


def _gather_without_autograd() -> None:
    """DeepSpeed's ZeRO-1/2 all-gather of the updated partitions, run under ``no_grad`` (see the module's doc)."""
    import torch
    from deepspeed.runtime.zero import stage_1_and_2

    gather = stage_1_and_2.all_gather_dp_groups

    def no_grad_gather(*args, **kwargs):
        with torch.no_grad():
            return gather(*args, **kwargs)

    stage_1_and_2.all_gather_dp_groups = no_grad_gather


def rank(spec_path: str) -> None:
    """One rank: the Trainer as Axolotl's builder configures it, four steps of text; or the FSDP2 loop."""
    import torch
    from transformers import Trainer, TrainingArguments

    spec = json.loads(Path(spec_path).read_text())
    model, _ = small_model(spec["model_type"], spec["config"], spec["lora"], spec["freeze"])
    if "fsdp2" in spec:
        fsdp2_steps(model, spec)
        return
    if "deepspeed" in spec:
        _gather_without_autograd()
    data = [{"input_ids": torch.tensor(TOKENS), "labels": torch.tensor(TOKENS)}] * 16
    args = TrainingArguments(output_dir=os.environ["OUTPUT"], per_device_train_batch_size=1, max_steps=4,
                             use_cpu=True, ddp_backend="gloo", report_to=[], save_strategy="no",
                             gradient_checkpointing=True,
                             gradient_checkpointing_kwargs={"use_reentrant": spec["reentrant"]},
                             ddp_find_unused_parameters=spec["find_unused"], dataloader_num_workers=0,
                             disable_tqdm=True, deepspeed=spec.get("deepspeed"))
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    print(f"FINISHED {trainer.state.global_step}", flush=True)


def fsdp2_steps(model, spec: dict) -> None:
    """Four AdamW steps of ``model`` sharded over the two ranks as accelerate's ``fsdp2_prepare_model`` shards it."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": spec["reentrant"]})
    for module in [m for m in model.modules() if type(m).__name__ in spec["fsdp2"]]:
        fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    tokens = torch.tensor([TOKENS])
    for _ in range(4):
        model(input_ids=tokens, labels=tokens).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    print("FINISHED 4", flush=True)
    dist.destroy_process_group()


def main() -> None:
    if sys.argv[1:2] == ["--rank"]:
        rank(sys.argv[2])
        return
    serve(lambda item: ddp(item) if "ddp" in item else idle(item))


if __name__ == "__main__":
    main()
