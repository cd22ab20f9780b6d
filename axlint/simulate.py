"""Simulation tier: the real HF model code at full size on fake tensors (no weights, no GPU).

The model is built under `FakeTensorMode` (shapes and dtypes only), wrapped as the config says (LoRA, gradient
checkpointing, attention implementation; sdpa/eager since fake tensors live on the CPU), and trained for a few
steps with torch AdamW (a stateless SGD for 8-bit and other optimizers whose states are added by size, see below)
while `MemTracker` attributes every live tensor to a category. The step is the one the HF
Trainer runs under Axolotl:
- bf16/fp16 without DeepSpeed: the forward runs under `torch.autocast` (accelerate `Accelerator.prepare_model`
  wraps `model.forward` when `native_amp`, which is every half-precision run that is not DeepSpeed), so fp32
  LoRA adapters compute in the half dtype;
- DeepSpeed bf16/fp16: the engine casts every parameter to the half dtype (`DeepSpeedEngine.
  _configure_distributed_model`), LoRA adapters included, and no autocast;
- one unpacked sequence per row: transformers cannot read fake `position_ids`, so its packed-sequence check
  (`masking_utils.find_packed_sequence_indices`) would assume packing and build an explicit s×s mask, which also
  makes sdpa repeat K/V; the check is answered as it is for real unpacked ids (no packing), so sdpa runs with
  `is_causal` and GQA as on a GPU;
- a run configured with flash attention runs sdpa without a mask, as flash takes none (transformers would build
  one for a sliding window as long as the sequence or shorter);
- dropout runs the fused `native_dropout` kernel (output + 1-byte mask) that `aten::dropout` picks on CUDA, not
  the CPU composite that keeps a noise tensor in the input's dtype;
- in a 4/8-bit run under autocast whose MLP activation or LayerNorm CUDA's autocast runs in fp32 (ReLU², xIELU's
  Python form, `nn.LayerNorm`), that operation runs in fp32 and the 4/8-bit layers return their input's dtype, as on
  CUDA with bitsandbytes (`_cuda_fp32_ops`).
The per-GPU numbers then apply what one process cannot show:
- DeepSpeed mixed precision keeps fp32 optimizer states and an fp32 master copy of the trainable weights, and
  its ZeRO optimizer builds an fp32 copy of the gradient partition at the step (`deepspeed_step`);
- each state's share on one GPU is the analytic model's (`axlint.memory.sharding`): ZeRO / FSDP divide optimizer
  states and master weights (stage ≥ 1), gradients (≥ 2) and parameters (3) by the ranks that shard them, and a
  CPU-offloaded state (optimizer, its gradients, offloaded parameters) leaves the GPU; the buffers sharding adds
  (gathered units, reduce buckets, DDP's gradient buckets: `sharding.buffer_bytes`) are added as
  "sharding_buffers", since one process cannot show them, and so is the 4-bit weights' quantization state that
  FSDP1 leaves whole on every GPU (`sharding.replicated_quant_state_bytes`), to the parameters;
- QLoRA stores the frozen linears (a vision or audio tower's too) in NF4 with double quantization (≈ 4.127 bits per
  weight), and its LoRA layers keep their input in the half dtype under autocast, as PEFT's bitsandbytes layers do;
- routed experts quantized on load (Axolotl's ``quantize_moe_experts``) are counted in NF4 / int8 and read through a
  stand-in of their dequantizing parametrization, which allocates every read's copy as bitsandbytes does
  (``_dequantized_expert_reads``); a LoRA on such experts is refused (``NotSimulated``): what it costs depends on
  the PEFT release, and this process runs the installed one, not necessarily Axolotl's;
- 8-bit (and other non-torch) optimizer states, their number × bytes per trainable weight, are live at every moment
  after the first step, so they are added to the peak the stateless step found; a paged optimizer's states are
  CUDA managed memory outside PyTorch's allocator and are left out, as the estimate's allocated peak leaves them.
torch, transformers and peft are imported inside functions only.
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping
from unittest import mock

from axlint.facts import FP32_AUTOCAST_NORM, RunFacts, Sharding, ShardingKind
from axlint.memory import constants as C
from axlint.memory.setup import TrainSetup, read_setup
from axlint.memory.params import linear_names, target_parameter_lora_params
from axlint.memory.params import trainable as trainable_counts
from axlint.memory.sharding import (
    buffer_bytes,
    gradient_share,
    gradients_offloaded,
    mixed_share,
    optimizer_share,
    replicated_quant_state_bytes,
    step_buffer_bytes,
    step_temp_bytes,
    weight_share,
)
from axlint.memory.states import expert_trainable_fraction, expert_weight_fraction, optimizer_spec
from axlint.training.kernel_standins import STOOD_IN_LORA_KERNELS, kernel_standins
from axlint.training.model import (
    build_model,
    count_parameters,
    effective_attention,
    prepare_for_training,
)
from axlint.training.spec import TrainSpec, train_spec

CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_states", "master_weights", "activations",
              "temporaries", "other")
_TRACKER_NAMES = {"Parameter": "parameters", "Buffer": "buffers", "Gradient": "gradients", "Activation": "activations",
                  "Temp": "temporaries", "Optstate": "optimizer_states", "Other": "other"}
QUANTIZED_BYTES = {"nf4": C.NF4_DOUBLE_QUANT_BYTES, "int8": C.INT8}
"""Bytes per frozen decoder weight as Axolotl's loader quantizes them: QLoRA's NF4 with double quantization
(`bnb_4bit_use_double_quant`), `load_in_8bit`'s int8."""
QUANTIZED_NAMES = {"nf4": "NF4 with double quantization", "int8": "int8 (load_in_8bit)"}


@dataclass(frozen=True)
class SimulationResult:
    """Peak memory by category: `process_bytes` for the one simulated process, `per_gpu_bytes` after sharding."""

    model_type: str
    parameters: int
    trainable_parameters: int
    tokens: int
    attn_implementation: str
    zero_stage: int
    world_size: int
    process_bytes: dict[str, int]
    per_gpu_bytes: dict[str, int]
    seconds: float
    notes: list[str] = field(default_factory=list)
    setup: TrainSetup | None = None  # the memory view of the run that was simulated (``simulated_setup``)

    @property
    def peak_allocated_bytes(self) -> int:
        return sum(self.per_gpu_bytes.values())

    def to_json(self) -> dict[str, Any]:
        gib = 2**30
        return {
            "model_type": self.model_type, "parameters": self.parameters,
            "trainable_parameters": self.trainable_parameters, "tokens": self.tokens,
            "attn_implementation": self.attn_implementation, "zero_stage": self.zero_stage,
            "world_size": self.world_size, "seconds": round(self.seconds, 2), "notes": self.notes,
            "per_gpu": {"components_gib": {k: round(v / gib, 3) for k, v in self.per_gpu_bytes.items()},
                        "peak_allocated_gib": round(self.peak_allocated_bytes / gib, 3)},
            "process_components_gib": {k: round(v / gib, 3) for k, v in self.process_bytes.items()},
        }


def per_gpu(process: Mapping[str, int], sharding: Sharding, expert_weights: float = 0.0,
            expert_trainable: float = 0.0) -> dict[str, int]:
    """What one GPU keeps of the one process's states: parameters × ``weight_share``, gradients ×
    ``gradient_share``, optimizer states and fp32 master weights × ``optimizer_share`` (axlint.memory.sharding: ÷ the
    ranks that shard them, 0 when offloaded to CPU RAM), each through ``mixed_share`` as the estimate does: of the
    routed experts (``expert_weights`` of the parameters, ``expert_trainable`` of the trained ones) a GPU keeps its
    expert-parallel slice; activations and buffers stay whole."""
    s = sharding
    shares = {"parameters": mixed_share(s, weight_share(s), expert_weights),
              "gradients": mixed_share(s, gradient_share(s), expert_trainable),
              "optimizer_states": mixed_share(s, optimizer_share(s), expert_trainable),
              "master_weights": mixed_share(s, optimizer_share(s), expert_trainable)}
    return {key: math.ceil(value * shares[key]) if key in shares else value for key, value in process.items()}


def simulate(facts: RunFacts, arch: Any, hw: Any = None, *, steps: int = 2,
             setup: TrainSetup | None = None) -> SimulationResult:
    """Simulate `steps` training steps of `arch` (an Architecture: `.model_type`, `.build_config`) for the resolved
    run `facts` (axlint.facts); `setup`: the memory view of the run whose kernels and shares apply (default
    `read_setup(facts, arch)`; another one simulates the run on another stack)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    start = time.perf_counter()
    spec = train_spec(facts, linear_names(arch))
    wanted = setup or read_setup(facts, arch)
    setup = simulated_setup(wanted)
    if setup.experts_parametrized and target_parameter_lora_params(arch, setup):
        raise NotSimulated(
            "LoRA on routed experts stored quantized (quantize_moe_experts with lora_target_parameters, or module "
            "targets PEFT converts to expert weights) is not simulated: its memory depends on how the installed PEFT "
            "wraps a parametrized weight (Axolotl's PEFT 0.19 trains only the last expert weight; 0.21 stops at the "
            f"first forward), and this process runs PEFT {importlib.metadata.version('peft')}; the analytic "
            "estimate models PEFT 0.19")
    if spec.lora_use_dora and wanted.lora_kernels:
        raise NotSimulated(
            f"DoRA inside Axolotl's fused LoRA kernels ({', '.join(wanted.lora_kernels)}, on for this run) is not "
            "simulated: the simulation's stand-ins for them run plain LoRA, and PEFT's own DoRA layers keep other "
            "tensors; with `lora_mlp_kernel`, `lora_qkv_kernel` and `lora_o_kernel` false the run uses PEFT's DoRA "
            "layers, which the simulation runs")
    attn, note = effective_attention(spec, on_cuda=False)
    notes = [note] if note else []
    if setup is not wanted:
        notes.append("Axolotl's LoRA QKV / O kernels are not simulated: PEFT's q, k, v and o layers ran, and the "
                     "estimate to compare with is that run's")
    world = int(getattr(hw, "count", 1) or 1)
    deepspeed = facts.sharding.kind is ShardingKind.DEEPSPEED
    sharded = facts.sharding.kind in (ShardingKind.DEEPSPEED, ShardingKind.FSDP)
    stage = facts.sharding.stage if sharded else 0
    with torch.device("meta"):
        built = build_model(arch.model_type, arch.build_config, spec, attn=attn)
        last = _last_module(built)
        model = prepare_for_training(built, spec, arch.model_type)
    if deepspeed and spec.dtype != "float32":
        cast_parameters(model, getattr(torch, spec.dtype))
    autocast = not deepspeed and spec.dtype != "float32"
    flash = spec.attn_implementation.startswith("flash_attention") and attn == "sdpa"
    with FakeTensorMode(allow_non_fake_inputs=True), _unpacked_sequences(), fused_dropout(), _fp32_grouped_mm(), \
            _no_mask(flash), _bnb_adapter_inputs(model, autocast and spec.quantization in QUANTIZED_BYTES), \
            _cuda_fp32_ops(model, last, setup.fp32_source if autocast and setup.mlp_fp32 else None), \
            kernel_standins(model, arch.model_type, setup) as stood_in, _dora_collect(model):
        notes += stood_in
        materialize_fake(model)
        expert_savings = 0
        if spec.quantization in QUANTIZED_BYTES and setup.experts_parametrized:
            expert_savings = _dequantized_expert_reads(model, spec.quantization)
            notes.append(f"routed experts counted in {QUANTIZED_NAMES[spec.quantization]} and read through a "
                         "stand-in of their dequantizing parametrization, which allocates each read's "
                         f"{'fp32' if spec.quantization == 'int8' else spec.dtype} copy as bitsandbytes does")
        params = [p for p in model.parameters() if p.requires_grad]
        kind = None if deepspeed else optimizer_spec(spec.optimizer)
        if kind is not None and kind.state_bytes is not None:
            # states of another size than torch's are added below as a constant: a stateless step keeps the peak
            # moment the one those states would give (torch AdamW's fp32 states would move it to the step)
            optimizer = torch.optim.SGD(params, lr=spec.learning_rate, foreach=False)
        else:
            optimizer = torch.optim.AdamW(params, lr=spec.learning_rate, **adamw_flavour(spec.optimizer))
        tracker = peak_tracker_class()()
        tracker.track_external(model, optimizer)
        vocab = int(model.config.get_text_config().vocab_size)
        with tracker:
            for _ in range(steps):
                _train_step(model, optimizer, spec, vocab, autocast, tracker.reset_mod_stats)
        snapshot = tracker.get_tracker_snapshot("peak")
    total, trainable = count_parameters(model)
    process = _categories(snapshot)
    if deepspeed and spec.dtype != "float32":
        _deepspeed_mixed_precision(process, params)
        notes.append("DeepSpeed mixed precision: fp32 optimizer states and fp32 master weights of trainable parameters")
    elif kind is not None and kind.paged:
        notes.append(f"{spec.optimizer}: paged states live outside PyTorch's allocator and are not counted (the step "
                     "ran a stateless SGD)")
    elif kind is not None and kind.state_bytes is not None:
        process["optimizer_states"] += int(kind.states * kind.state_bytes * trainable)
        notes.append(f"{spec.optimizer}: {kind.states:g} states of {kind.state_bytes:g} byte per trainable parameter "
                     "added to every moment (its kernels are CUDA-only; the step ran a stateless SGD)")
    if spec.quantization in QUANTIZED_BYTES:
        process["parameters"] -= _quantization_savings(model, QUANTIZED_BYTES[spec.quantization], last) + expert_savings
        notes.append(f"frozen linears counted in {QUANTIZED_NAMES[spec.quantization]} "
                     "(bitsandbytes is CUDA-only)")
    counts = trainable_counts(arch, setup)
    gpu = per_gpu(process, facts.sharding, expert_weight_fraction(arch, setup, counts),
                  expert_trainable_fraction(arch, setup))
    gpu["parameters"] += math.ceil(replicated_quant_state_bytes(arch, setup))
    gpu["sharding_buffers"] = int(buffer_bytes(arch, setup, gpu["gradients"]))
    notes += sharding_notes(facts.sharding, gpu["sharding_buffers"])
    if deepspeed:
        gradients = math.ceil(sum(p.numel() * p.element_size() for p in params)
                              * mixed_share(facts.sharding, gradient_share(facts.sharding),
                                            expert_trainable_fraction(arch, setup)))
        step = deepspeed_step(gpu, gradients, step_temp_bytes(setup, counts.total, arch.largest_module_params),
                              step_buffer_bytes(arch, setup, gpu["sharding_buffers"]))
        if step is not None:
            gpu = step
            notes.append("DeepSpeed's optimizer step, the peak: its fp32 gradient partition from the analytic model")
    return SimulationResult(
        model_type=arch.model_type, parameters=total, trainable_parameters=trainable, tokens=spec.tokens,
        attn_implementation=attn, zero_stage=stage, world_size=world, process_bytes=process,
        per_gpu_bytes=gpu, seconds=time.perf_counter() - start, notes=notes, setup=setup)


def simulated_setup(setup: TrainSetup) -> TrainSetup:
    """The run as the simulation runs it: of Axolotl's fused LoRA kernels only those it stands in for
    (``kernel_standins.STOOD_IN_LORA_KERNELS``); PEFT's layers run where the others would. Compare the simulation
    with the analytic estimate of this setup."""
    kept = tuple(kernel for kernel in setup.lora_kernels if kernel in STOOD_IN_LORA_KERNELS)
    return setup if kept == setup.lora_kernels else setup.with_changes(lora_kernels=kept)


def deepspeed_step(gpu: Mapping[str, int], gradients: int, temp: float, buffers: float) -> dict[str, int] | None:
    """The per-GPU bytes at DeepSpeed's optimizer step when it is above the simulated peak ``gpu``: the states the
    simulation holds then, the trainable parameters' ``gradients`` (their share on this GPU) and what the ZeRO
    optimizer builds for the step (``temp``: ``sharding.step_temp_bytes``, ZeRO-1/2's flat and fp32 gradient
    partition) beside the ``buffers`` still allocated (``sharding.step_buffer_bytes``), which the process running
    torch's optimizer cannot show; None when the step is not the peak."""
    step = {key: 0 for key in gpu} | {
        "parameters": gpu["parameters"], "buffers": gpu["buffers"], "optimizer_states": gpu["optimizer_states"],
        "master_weights": gpu["master_weights"], "gradients": gradients + math.ceil(temp),
        "sharding_buffers": math.ceil(buffers)}
    return step if sum(step.values()) > sum(gpu.values()) else None


def sharding_notes(sharding: Sharding, buffers: int) -> list[str]:
    """What the per-GPU figures take from the analytic model rather than from the simulated process."""
    s, notes = sharding, []
    if s.stage and s.world > 1:
        how = f"ZeRO-{s.stage}" if s.kind is ShardingKind.DEEPSPEED \
            else {3: "FSDP full-shard", 2: "FSDP shard-grad-op"}.get(s.stage, "FSDP")
        notes.append(f"{how} sharding over {s.state_ranks} ranks applied analytically")
    moved = [name for name, gone in (("optimizer states", s.offload_optimizer), ("gradients", gradients_offloaded(s)),
                                     ("parameters", weight_share(s) == 0)) if gone]
    if moved:
        notes.append(f"CPU offload: the {', '.join(moved)} live in CPU RAM and are left out of the GPU figures")
    if buffers:
        notes.append(f"sharding buffers added from the analytic model: {buffers / 2**30:.2f} GiB")
    return notes


def adamw_flavour(optimizer: str) -> dict[str, bool]:
    """torch AdamW implementation flags for an Axolotl optimizer name: fused for `*_fused`, else foreach."""
    return {"fused": True} if "fused" in optimizer else {"foreach": True}


class _NoHook:
    """Stands in for a hook handle on a frozen parameter (nothing to remove)."""

    def remove(self) -> None:
        return None


def peak_tracker_class() -> type:
    """`MemTracker` that accepts frozen parameters and keeps only the global peak.

    Stock `MemTracker` registers gradient hooks on every parameter (an error for frozen ones) and updates the
    peak of every module after every op, which is quadratic in depth (minutes for a 32-layer model).
    """
    from copy import deepcopy

    from torch.distributed._tools.mem_tracker import _TOTAL_KEY, MemTracker

    class FrozenAwareMemTracker(MemTracker):
        def _track_module_params_and_buffers(self, module: Any, install_grad_hooks: bool = True) -> tuple[int, int]:
            for p in module.parameters():
                if not p.requires_grad:
                    self._param_to_grad_hook_handles.setdefault(p, (_NoHook(), _NoHook()))
            return super()._track_module_params_and_buffers(module, install_grad_hooks)

        def _update_peak_stats(self, peak_state: Any) -> None:
            for dev, snap in self._curr_mem_snap.items():
                if self._peak_mem.get(dev, 0) < snap[_TOTAL_KEY]:
                    self._peak_mem[dev] = snap[_TOTAL_KEY]
                    self._peak_mem_snap[dev] = deepcopy(snap)

    return FrozenAwareMemTracker


def materialize_fake(model: Any) -> None:
    """Replace every meta parameter and buffer by an empty CPU tensor of the active fake mode (tied ones stay tied)."""
    import torch

    made: dict[int, Any] = {}
    for module in model.modules():
        for store in (module._parameters, module._buffers):
            for name, t in store.items():
                if t is None:
                    continue
                if id(t) not in made:
                    fake = torch.empty(t.shape, dtype=t.dtype, device="cpu")
                    made[id(t)] = torch.nn.Parameter(fake, t.requires_grad) if isinstance(t, torch.nn.Parameter) else fake
                store[name] = made[id(t)]


def cast_parameters(model: Any, dtype: Any) -> None:
    """Cast every floating-point parameter to ``dtype``, buffers untouched: what the DeepSpeed engine does to the
    model in bf16/fp16 mode (`_cast_module_mixed_precision`), fp32 LoRA adapters included."""
    for p in model.parameters():
        if p.is_floating_point() and p.dtype != dtype:
            p.data = p.data.to(dtype)


def _unpacked_sequences() -> Any:
    """Answer transformers' packed-sequence check as it answers for real ids of one sequence per row (None).

    On fake tensors `find_packed_sequence_indices` cannot read `position_ids` and returns a packing mask, so the
    model builds an explicit s×s attention mask: sdpa then repeats K/V to all heads and saves a converted float
    mask per layer, none of which a real unpacked run on a GPU does."""

    from transformers import masking_utils

    return mock.patch.object(masking_utils, "find_packed_sequence_indices", lambda position_ids: None)


def _no_mask(flash: bool) -> Any:
    """For a run configured with flash attention, which the CPU runs as sdpa: no attention mask, as flash attention
    takes none. transformers builds one for sdpa whenever a sliding window is as long as the keys or shorter
    (``masking_utils._ignore_causal_mask_sdpa``: Mistral-7B's 4096-token window at 4096 tokens or more), which the
    flash kernel applies itself; sdpa then runs with ``is_causal``, the memory of a causal flash kernel."""

    from transformers import masking_utils

    if not flash:
        return contextlib.nullcontext()
    return mock.patch.object(masking_utils, "_ignore_causal_mask_sdpa", lambda *args, **kwargs: True)


def _bnb_adapter_inputs(model: Any, active: bool) -> Any:
    """LoRA on a bitsandbytes base layer under autocast, as PEFT runs it: its ``Linear4bit`` / ``Linear8bitLt``
    forward casts the input to the adapter's fp32 only when autocast is off (peft 0.21 tuners/lora/bnb.py,
    ``requires_conversion = not torch.is_autocast_enabled()``), where the plain ``Linear`` always does (layer.py
    ``_cast_input_dtype``). The simulation's base layers are plain Linears (bitsandbytes is CUDA-only), so for a
    4/8-bit run under autocast it turns that cast off (``peft.helpers.disable_input_dtype_casting``)."""
    from peft.helpers import disable_input_dtype_casting

    return disable_input_dtype_casting(model, active=active)


@contextlib.contextmanager
def _cuda_fp32_ops(model: Any, last: str, source: str | None) -> Iterator[None]:
    """What CUDA's autocast and bitsandbytes do in a run whose hidden states they make fp32 (``source``:
    ``TrainSetup.fp32_source`` where ``mlp_fp32`` holds, else None), which the CPU's autocast leaves alone: ``pow``
    (``torch.square``), ``softplus`` and ``expm1`` (ReLU², the Python form of xIELU), and for a LayerNorm source
    ``layer_norm`` (its weight and bias too), take fp32 copies of their inputs (PyTorch 2.11
    ``aten/src/ATen/autocast_mode.h``), and each 4/8-bit Linear returns its output in its input's dtype
    (bitsandbytes 0.49.1 ``nn/modules.py`` ``Linear4bit.forward``: ``matmul_4bit(...).to(inp_dtype)``), which
    carries the fp32 into the residual stream."""
    if source is None:
        yield
        return
    import torch

    square, softplus, expm1 = torch.square, torch.nn.functional.softplus, torch.expm1
    layer_norm = torch.nn.functional.layer_norm

    def fp32_layer_norm(x: Any, shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
        return layer_norm(x.float(), shape, None if weight is None else weight.float(),
                          None if bias is None else bias.float(), eps)

    with contextlib.ExitStack() as stack:
        if source == FP32_AUTOCAST_NORM:
            stack.enter_context(mock.patch.object(torch.nn.functional, "layer_norm", fp32_layer_norm))
        stack.enter_context(mock.patch.object(torch, "square", lambda x: square(x.float())))
        stack.enter_context(mock.patch.object(torch, "expm1", lambda x: expm1(x.float())))
        stack.enter_context(mock.patch.object(torch.nn.functional, "softplus",
                                              lambda x, *a, **k: softplus(x.float(), *a, **k)))
        for module in _quantized_linears(model, last):
            stack.enter_context(mock.patch.object(module, "forward",
                                                  lambda x, _forward=module.forward: _forward(x).to(x.dtype)))
        yield


@contextlib.contextmanager
def _dora_collect(model: Any) -> Iterator[None]:
    """A collection of cyclic garbage after each of PEFT's DoRA layers (``DoraLinearLayer``) runs. Under fake
    tensors the temporaries of its weight norm (the identity, the adapter's and the base's full weights) are freed
    only when Python's cycle collector runs (the fake mode's dispatch makes reference cycles), so that those of
    several layers would add up; on a GPU, as in eager PyTorch on the CPU, each layer's are freed before the next
    layer runs (tests/test_dora_memory.py)."""
    import gc

    def collect(*_: Any) -> None:
        gc.collect()

    handles = [module.register_forward_hook(collect) for module in model.modules()
               if type(module).__name__ == "DoraLinearLayer"]
    if handles:
        gc.freeze()  # what exists now is no garbage: each collection then walks only what the steps make
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        if handles:
            gc.unfreeze()


def fused_dropout() -> Any:
    """`F.dropout` as `aten::dropout` runs on CUDA (`is_fused_kernel_acceptable`: training, 0 < p < 1): the
    `native_dropout` kernel, whose backward keeps a bool mask; on CPU the composite keeps a noise tensor in the
    input's dtype."""

    import torch

    composite = torch.nn.functional.dropout

    def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
        if training and 0 < p < 1 and not inplace:
            return torch.native_dropout(input, p, training)[0]
        return composite(input, p, training, inplace)

    return mock.patch.object(torch.nn.functional, "dropout", dropout)


def _fp32_grouped_mm() -> Any:
    """transformers' grouped expert matmul (``integrations/moe.py`` ``_grouped_mm``) for fp32 experts, which PEFT's
    kbit preparation leaves: PyTorch's kernels take fp32 (on CUDA through ``_grouped_mm_fallback``, a loop of
    matmuls, GroupedBlas.cpp), but its meta kernel, which fake tensors run, takes half precision only. The stand-in
    makes the fp32 output and, as the ``_grouped_mm`` derivative does, saves the weight when the tokens need a
    gradient and the tokens when the weight does; half-precision experts run the real op."""

    import torch
    from transformers.integrations import moe

    class GroupedMM(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, tokens: Any, weight: Any, offs: Any) -> Any:
            needs_tokens, needs_weight = ctx.needs_input_grad[:2]
            ctx.save_for_backward(weight if needs_tokens else None, tokens if needs_weight else None)
            ctx.shapes = tokens.shape, weight.shape
            return tokens.new_empty((tokens.shape[0], weight.shape[-1]))

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            weight, tokens = ctx.saved_tensors
            tokens_shape, weight_shape = ctx.shapes
            return (grad.new_empty(tokens_shape) if weight is not None else None,
                    grad.new_empty(weight_shape) if tokens is not None else None, None)

    real = moe._grouped_mm

    def grouped_mm(tokens: Any, weight: Any, offs: Any) -> Any:
        if weight.dtype != torch.float32:
            return real(tokens, weight, offs)
        return GroupedMM.apply(tokens.to(weight.dtype), weight, offs)

    return mock.patch.object(moe, "_grouped_mm", grouped_mm)


def _train_step(model: Any, optimizer: Any, spec: TrainSpec, vocab: int, autocast: bool,
                after_backward: Callable[[], None]) -> None:
    """One optimizer step; with gradient accumulation two micro-batches, so gradients live through a forward.
    ``autocast``: the forward runs under `torch.autocast` in the spec's dtype (accelerate's mixed precision).
    ``after_backward`` runs after each micro-batch's backward (the tracker's per-module stats allow one forward
    per module between resets; its peak snapshot is kept across resets)."""

    import torch

    mixed = torch.autocast("cpu", dtype=getattr(torch, spec.dtype)) if autocast else contextlib.nullcontext()
    for _ in range(min(spec.gradient_accumulation_steps, 2)):
        ids = torch.randint(0, vocab, (spec.micro_batch_size, spec.sequence_len))
        with mixed:
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        after_backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def _categories(snapshot: Mapping[Any, Mapping[str, int]]) -> dict[str, int]:
    """Sum the tracker's peak snapshot over devices into axlint's category names."""
    out = dict.fromkeys(CATEGORIES, 0)
    for per_device in snapshot.values():
        for name, nbytes in per_device.items():
            if name in _TRACKER_NAMES:
                out[_TRACKER_NAMES[name]] += int(nbytes)
    return out


def _deepspeed_mixed_precision(process: dict[str, int], params: list[Any]) -> None:
    """Replace half-precision optimizer states by fp32 ones and add the fp32 master copy (4 B per trainable weight)."""
    half = sum(p.numel() for p in params if p.element_size() == 2)
    process["optimizer_states"] += 2 * half * 2  # two Adam moments, 2 -> 4 bytes each
    process["master_weights"] += 4 * sum(p.numel() for p in params)


def _last_module(model: Any) -> str:
    """The module of the model's last parameter, as transformers' quantizers name it before PEFT wraps anything
    (5.24 ``quantizers/base.py``, ``get_keys_to_not_convert``: the name with ``.weight`` removed, so that a last
    bias names no module)."""
    return list(model.named_parameters())[-1][0].removesuffix(".weight")


class NotSimulated(ValueError):
    """A run the simulation cannot reproduce faithfully with the installed packages; the message says why."""


def _dequantized_expert_reads(model: Any, quantization: str) -> int:
    """Axolotl's ``quantize_moe_experts`` on the simulated model: each routed expert weight (``validate.quantize.
    expert_weights``) gets a parametrization that, like bitsandbytes' dequantization, returns a new tensor on every
    read (4-bit: one in the load dtype, ``dequantize_4bit``; 8-bit: fp32 through two, ``int8_vectorwise_dequant``'s
    A·stats·(1/127)), cached for the module's forward by the hooks bitsandbytes and Axolotl register. PEFT's
    wrappers, already in place, then run on it as they do on the real load (``params.untrained_expert_adapter_params``
    follows). The weights stay in the load dtype; the bytes a quantized store saves are returned."""
    import torch
    import torch.nn.utils.parametrize as P

    from axlint.validate.quantize import cache_parametrizations_per_forward, expert_weights

    int8 = quantization == "int8"

    class DequantizedRead(torch.nn.Module):
        @torch.no_grad()
        def forward(self, stored: Any) -> Any:
            return stored.float() * 1.0 if int8 else stored.clone()

    saved = 0.0
    for module, name in expert_weights(model):
        weight = getattr(module, name)
        saved += weight.numel() * (weight.element_size() - QUANTIZED_BYTES[quantization])
        P.register_parametrization(module, name, DequantizedRead(), unsafe=True)
        cache_parametrizations_per_forward(module)
    return int(saved)


def _quantization_savings(model: Any, bytes_per_weight: float, last: str) -> int:
    """Bytes saved when the frozen linear weights are stored quantized (`bytes_per_weight`) instead of their dtype,
    as the analytic estimate counts them (``states.weight_bytes``): every frozen `nn.Linear` (the decoder's, a vision
    or audio tower's, the projector's; not `nn.MultiheadAttention`'s output projection, a subclass that bitsandbytes
    does not replace) but the output embedding and the module of the model's last parameter (`last`), which
    transformers' quantizer spares; the LoRA adapters are not frozen linears of the model. transformers 5.5 and later
    convert modules of type ``nn.Linear`` exactly, so a subclass (Falcon's FalconLinear) stays in its dtype, fp32
    after PEFT's k-bit preparation (``training.model.upcast_unquantized``), as the analytic estimate counts it."""
    return int(sum(m.weight.numel() * (m.weight.element_size() - bytes_per_weight)
                   for m in _quantized_linears(model, last)))


def _quantized_linears(model: Any, last: str) -> Iterator[Any]:
    """The modules a 4/8-bit load quantizes (``_quantization_savings`` says which)."""
    import torch

    output = model.get_output_embeddings()
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        own = name.removeprefix("base_model.model.").removesuffix(".base_layer")
        if (type(module) is torch.nn.Linear and module is not output and weight is not None
                and not weight.requires_grad and "lora_" not in name and own != last):
            yield module
