"""One rank of `axlint validate`: build, wrap, train a few steps, measure, write `rank-<N>.json`.

Run as `python -m axlint.validate.worker JOB.json` by a launcher (torchrun, `deepspeed`, or directly with the
RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT variables set). JOB.json holds `model_type`, `model_config`
(the HF config fields), `axolotl` (the config as written), `ds_raw` (the DeepSpeed config as written, or null),
`world_size`, `steps`,
`device` ("cuda" | "cpu") and `out_dir`. An out-of-memory error is a result (step and phase), not a traceback.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from axlint.training.model import (
    build_model,
    count_parameters,
    effective_attention,
    preload,
    prepare_for_training,
    unwrapped,
)
from axlint.architectures import Architecture
from axlint.memory.params import linear_names
from axlint.training.spec import LIGER_KEYS, TrainSpec, job_facts, train_spec
from axlint.validate.measure import Meter, device_name
from axlint.validate.quantize import quantize_experts, quantize_linears


class OutOfMemory(Exception):
    """Raised inside the step loop with the phase in which CUDA ran out of memory."""

    def __init__(self, step: int, phase: str, message: str) -> None:
        super().__init__(message)
        self.step, self.phase, self.message = step, phase, message


def rank_env() -> tuple[int, int, int]:
    """(rank, local_rank, world_size) from the launcher's environment."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("LOCAL_RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def main(argv: list[str] | None = None) -> int:
    job = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    rank, _, _ = rank_env()
    result = run_rank(job)
    out = Path(job["out_dir"]) / f"rank-{rank}.json"
    out.write_text(json.dumps(result, indent=1))
    return 0


def run_rank(job: dict[str, Any]) -> dict[str, Any]:
    """Train `job["steps"]` steps after one warm-up step on this rank and return the measurements."""
    import torch

    rank, local_rank, world = rank_env()
    on_cuda = job["device"] == "cuda"
    facts = job_facts(job)
    arch = Architecture.from_config(job["model_type"], "local", {**job["model_config"], "model_type": job["model_type"]})
    spec = train_spec(facts, linear_names(arch))
    result: dict[str, Any] = {"rank": rank, "world_size": world, "device": job["device"], "status": "ok",
                              "notes": [], "steps_completed": 0, "losses": [], "step_seconds": []}
    if on_cuda:
        torch.cuda.set_device(local_rank)
    ds = dict(facts.ds) if facts.ds is not None else None
    _init_distributed(ds, world, on_cuda)
    attn, note = effective_attention(spec, on_cuda)
    result["notes"] += [note] if note else []
    if (spec.embeddings_fp32 or spec.experts_fp32) and not on_cuda:
        kept = " and ".join(part for part, on in (("embeddings", spec.embeddings_fp32),
                                                  ("routed experts", spec.experts_fp32)) if on)
        spec = dataclasses.replace(spec, embeddings_fp32=False, experts_fp32=False)
        result["notes"].append(f"the {kept} Axolotl keeps in fp32 were left in the load dtype: on CPU the step runs "
                               "without autocast, and fp32 and half-precision tensors cannot meet in a matmul")
    result["environment"] = device_name(on_cuda)
    meter = Meter(on_cuda)
    zero3 = ds is not None and facts.zero_stage.value == 3
    if zero3:
        preload(job["model_type"], job["model_config"])
    # Weights are created where they will live, on the GPU (a CPU takes minutes to initialise an 8B model), except
    # under ZeRO-3, where zero.Init places the shards.
    on_gpu = on_cuda and not zero3
    result["notes"] += _apply_cce(job["model_type"], spec, on_cuda)
    with _zero3_init(ds) if zero3 else contextlib.nullcontext():
        model = build_model(job["model_type"], job["model_config"], spec, attn=attn,
                            device=torch.device("cuda", local_rank) if on_gpu else None)
    if zero3:
        _init_partitioned(model)
    if spec.quantized:
        quantize_linears(model, spec.quantization)
    model = prepare_for_training(model, spec, job["model_type"])
    if spec.quantized and spec.quantize_experts:
        # after PEFT: its ParamWrappers then wrap the experts module that holds the parametrized weights, which is
        # what Axolotl's load (quantize, then its own PEFT injection for parametrized weights) leaves
        count = quantize_experts(model, spec.quantization)
        result["notes"].append(f"{count} routed expert weights stored quantized ({spec.quantization}), "
                               "dequantized on each read as Axolotl's quantize_moe_experts does")
    result["notes"] += _apply_liger(model, job["model_type"], spec, on_cuda)
    result["parameters"], result["trainable_parameters"] = count_parameters(model)
    engine, step_fn = _wrap(model, spec, ds, world, on_cuda, local_rank, result["notes"])
    vocab = int(model.config.get_text_config().vocab_size)
    meter.reset_peaks()
    history = os.environ.get(HISTORY_ENV) if on_cuda else None
    if history:
        _record_history(result)
    try:
        _train(engine, step_fn, spec, vocab, job["steps"], on_cuda, meter, result)
    except OutOfMemory as oom:
        result.update(status="oom", oom={"step": oom.step, "phase": oom.phase, "message": oom.message[:500]})
    if history:
        _dump_history(Path(history) / f"memory-rank{rank}.pickle")
    result["memory"] = {**meter.peaks(), "model_states_bytes": result.pop("_model_states", None)}
    return result


def _train(engine: Any, step_fn: Any, spec: TrainSpec, vocab: int, steps: int, on_cuda: bool, meter: Meter,
           result: dict[str, Any]) -> None:
    """Step 0 warms up (optimizer states appear); then `steps` timed steps. Fills losses, timings, tokens/s."""
    import torch

    device = torch.device("cuda", torch.cuda.current_device()) if on_cuda else torch.device("cpu")
    for step in range(steps + 1):
        start = time.perf_counter()
        loss = step_fn(engine, spec, vocab, device, step, meter)
        if on_cuda:
            torch.cuda.synchronize()
        if step == 0:
            result["_model_states"] = meter.current()
            continue
        result["step_seconds"].append(time.perf_counter() - start)
        result["losses"].append(loss)
        result["steps_completed"] = step
    mean = sum(result["step_seconds"]) / max(1, len(result["step_seconds"]))
    tokens = spec.tokens * spec.gradient_accumulation_steps
    result["tokens_per_second"] = tokens / mean if mean > 0 else 0.0
    result["loss_finite"] = all(math.isfinite(x) for x in result["losses"])


HISTORY_ENV = "AXLINT_MEMORY_HISTORY"
"""A folder: record every CUDA allocation of the training steps (PyTorch's memory history, Python stacks) and write
`memory-rank<N>.pickle` there for `benchmarks/memory/peak_breakdown.py`. Slows the steps; for diagnosis only."""


def _record_history(result: dict[str, Any]) -> None:
    """Start PyTorch's allocation history; what is allocated already (weights, adapters) is noted as the base."""
    import torch

    result["history_base_bytes"] = int(torch.cuda.memory_allocated())
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=2_000_000)


def _dump_history(path: Path) -> None:
    import torch

    torch.cuda.memory._dump_snapshot(str(path))
    torch.cuda.memory._record_memory_history(enabled=None)


@contextlib.contextmanager
def _phase(step: int, name: str) -> Iterator[None]:
    """Turn a CUDA OOM inside this block into `OutOfMemory(step, phase)`."""
    import torch

    try:
        yield
    except torch.cuda.OutOfMemoryError as exc:
        raise OutOfMemory(step, name, str(exc)) from None


def _batch(spec: TrainSpec, vocab: int, device: Any) -> Any:
    """Random token ids, micro_batch_size × sequence_len (a fully packed batch)."""
    import torch

    return torch.randint(0, vocab, (spec.micro_batch_size, spec.sequence_len), device=device)


def deepspeed_step(engine: Any, spec: TrainSpec, vocab: int, device: Any, step: int, meter: Meter) -> float:
    """One optimizer step through a DeepSpeed engine (it accumulates over `gradient_accumulation_steps`)."""
    losses = []
    for _ in range(spec.gradient_accumulation_steps):
        ids = _batch(spec, vocab, device)
        with _phase(step, "forward"):
            loss = engine(input_ids=ids, labels=ids).loss
        meter.sample()
        with _phase(step, "backward"):
            engine.backward(loss)
        meter.sample()
        with _phase(step, "optimizer"):
            engine.step()
        losses.append(float(loss.detach()))
    meter.sample()
    return sum(losses) / len(losses)


def torch_step(engine: Any, spec: TrainSpec, vocab: int, device: Any, step: int, meter: Meter) -> float:
    """One optimizer step of a plain (or DDP-wrapped) model; `engine` is (model, optimizer)."""
    model, optimizer = engine
    losses = []
    for _ in range(spec.gradient_accumulation_steps):
        ids = _batch(spec, vocab, device)
        with _phase(step, "forward"), _autocast(spec, device):
            loss = model(input_ids=ids, labels=ids).loss / spec.gradient_accumulation_steps
        meter.sample()
        with _phase(step, "backward"):
            loss.backward()
        meter.sample()
        losses.append(float(loss.detach()) * spec.gradient_accumulation_steps)
    with _phase(step, "optimizer"):
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    meter.sample()
    return sum(losses) / len(losses)


def _autocast(spec: TrainSpec, device: Any) -> Any:
    """The forward's autocast as the HF Trainer runs it without DeepSpeed: Accelerate wraps the model's forward in
    `torch.autocast` for bf16 / fp16 mixed precision (accelerate 1.15 `Accelerator.prepare_model`, `native_amp`),
    so PEFT's fp32 adapters compute in half precision and keep half-precision inputs for backward. Under DeepSpeed
    Accelerate leaves precision to the engine (no autocast). CUDA only: the CPU run checks the plumbing."""
    import torch

    if device.type != "cuda" or spec.dtype not in ("bfloat16", "float16"):
        return contextlib.nullcontext()
    return torch.autocast("cuda", dtype=getattr(torch, spec.dtype))


def _init_distributed(ds: dict[str, Any] | None, world: int, on_cuda: bool) -> None:
    """DeepSpeed's process group when there is a DeepSpeed config, torch's for DDP, nothing for one plain process."""
    backend = "nccl" if on_cuda else "gloo"
    if ds is not None:
        import deepspeed

        if not on_cuda:
            # The CPU accelerator JIT-builds a shared-memory all-reduce op used only for inference; skip it.
            sys.modules["deepspeed.comm.torch"].build_shm_op = lambda: None
        deepspeed.init_distributed(dist_backend=backend)
    elif world > 1:
        import torch.distributed as dist

        dist.init_process_group(backend=backend)


def _zero3_init(ds: dict[str, Any]) -> Any:
    """`deepspeed.zero.Init` for ZeRO-3 so parameters are partitioned as they are created."""
    import deepspeed

    return deepspeed.zero.Init(config_dict_or_path=ds)


def _init_partitioned(model: Any) -> None:
    """Re-run the model's own weight init one module at a time with its ZeRO-3 shards gathered (under
    `zero.Init` the HF init ran on empty partitions, leaving torch's default init)."""
    import deepspeed

    for module in model.modules():
        params = list(module.parameters(recurse=False))
        if params:
            with deepspeed.zero.GatheredParameters(params, modifier_rank=0):
                model._init_weights(module)


def _wrap(model: Any, spec: TrainSpec, ds: dict[str, Any] | None, world: int, on_cuda: bool, local_rank: int,
          notes: list[str]) -> tuple[Any, Any]:
    """(engine, step function): `deepspeed.initialize`, DDP, or the bare model with torch AdamW."""
    params = [p for p in model.parameters() if p.requires_grad]
    if ds is not None:
        import deepspeed

        ds = dict(ds)
        optimizer = None
        if "optimizer" in ds:
            if not on_cuda:
                ds["optimizer"] = {**ds["optimizer"], "params": {**ds["optimizer"].get("params", {}), "torch_adam": True}}
                notes.append("CPU: DeepSpeed optimizer built as torch AdamW (torch_adam) to avoid compiling FusedAdam")
        else:
            optimizer = _torch_optimizer(params, spec, on_cuda)
            ds["zero_allow_untested_optimizer"] = True
        engine, *_ = deepspeed.initialize(model=model, model_parameters=params, optimizer=optimizer, config=ds)
        return engine, deepspeed_step
    if on_cuda:
        model.cuda()
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model, device_ids=[local_rank] if on_cuda else None)
    return (model, _torch_optimizer(params, spec, on_cuda)), torch_step


def _torch_optimizer(params: list[Any], spec: TrainSpec, on_cuda: bool) -> Any:
    """torch AdamW as Axolotl builds it (fused for `adamw_torch_fused`); bnb 8-bit names use bitsandbytes on CUDA."""
    import torch

    if "8bit" in spec.optimizer and on_cuda:
        import bitsandbytes as bnb

        return bnb.optim.AdamW8bit(params, lr=spec.learning_rate)
    fused = "fused" in spec.optimizer
    return torch.optim.AdamW(params, lr=spec.learning_rate, fused=fused or None, foreach=None if fused else True)


def _apply_liger(model: Any, model_type: str, spec: TrainSpec, on_cuda: bool) -> list[str]:
    """Patch the model's modules with Liger kernels (CUDA only; they need triton on a GPU)."""
    if not spec.liger:
        return []
    if not on_cuda:
        return [f"Liger kernels ({', '.join(sorted(spec.liger))}) are CUDA-only; not applied on CPU"]
    from liger_kernel.transformers import _apply_liger_kernel_to_instance

    base = unwrapped(model)
    flags = {key.removeprefix("liger_"): bool(spec.liger.get(key)) for key in LIGER_KEYS}
    flags["swiglu"] = flags.pop("glu_activation")
    _apply_liger_kernel_to_instance(model=base, **flags)
    return [f"Liger kernels applied to {model_type}: {', '.join(sorted(spec.liger))}"]


def _apply_cce(model_type: str, spec: TrainSpec, on_cuda: bool) -> list[str]:
    """Cut Cross-Entropy as Axolotl's CCE plugin applies it before the model loads: Axolotl's fork's
    ``cce_patch(model_type)`` replaces the causal-LM class's forward (Axolotl 0.18.0
    ``integrations/cut_cross_entropy/__init__.py``, ``pre_model_load``). CUDA only (triton kernels); the runner
    drops CCE from the job, and says so, where the package is missing."""
    if not spec.cut_cross_entropy:
        return []
    if not on_cuda:
        return ["Cut Cross-Entropy is CUDA-only; not applied on CPU"]
    from cut_cross_entropy.transformers.patch import cce_patch

    cce_patch(model_type)
    return [f"Cut Cross-Entropy applied to {model_type}"]


if __name__ == "__main__":
    raise SystemExit(main())
