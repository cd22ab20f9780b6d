"""Model states per GPU before sharding: weights, gradients, optimizer states, fp32 master weights.

Bytes per trainable parameter (mixed-precision AdamW as counted in the ZeRO paper, Rajbhandari et al. 2020):
  pure bf16 (HF Trainer on a bf16-loaded model, Axolotl's default): W 2, G 2, AdamW states 2×2 = 8 B
  DeepSpeed mixed precision: W 2, G 2, fp32 master 4, AdamW states 2×4 = 16 B
  LoRA adapters (PEFT autocast_adapter_dtype, fp32): W 4, G 4, AdamW 2×4 = 16 B; PEFT before 0.12 cast them to a
  half-precision base's dtype (``TrainSetup.adapter_bytes``): 8 B
  FSDP1 full fine-tune with bf16/fp16 on: W 4, G 4, AdamW 2×4 = 16 B (accelerate upcasts the flat params to fp32,
  see ``trainable_base_bytes``)
  Axolotl's fp32 embeddings (``TrainSetup.embeddings_fp32``): the embedding and untied lm_head at 4 B in W, and in G
  and in states kept in the parameter's dtype where they train (``params.upcast_params``, ``upcast_trained``);
  measured on an H100 (torch 2.11): Llama-3.2-1B's 0.49 GiB tied embedding adds 1.47 GiB to W + torch AdamW's states
"""
from __future__ import annotations

from dataclasses import dataclass

from axlint.architectures import Architecture, Linear
from axlint.facts import ShardingKind
from axlint.memory import constants as C
from axlint.memory.params import Trainable, layer_modules, upcast_params, upcast_trained
from axlint.memory.prequantized import Prequantized, tensor_bytes
from axlint.memory.setup import TrainSetup


@dataclass(frozen=True)
class OptimizerSpec:
    """``states`` state tensors per param of ``state_bytes`` each (None: the param's dtype); ``foreach_temp``:
    the step makes a state-sized temporary; ``fused_backward``: the update runs inside backward (LOMO,
    *_layerwise), so gradients never exist for the whole model."""

    states: float
    state_bytes: float | None
    foreach_temp: bool = False
    fused_backward: bool = False
    paged: bool = False


_8BIT = 1.0
_SPECS: dict[str, OptimizerSpec] = {
    # AdamW family, states in the param dtype
    "adamw_torch": OptimizerSpec(2, None, foreach_temp=True),
    "adamw_hf": OptimizerSpec(2, None, foreach_temp=True),
    "adamw_torch_xla": OptimizerSpec(2, None, foreach_temp=True),
    "adamw_torch_fused": OptimizerSpec(2, None),
    "adamw_torch_npu_fused": OptimizerSpec(2, None),
    "adamw_apex_fused": OptimizerSpec(2, None),
    "adamw_anyprecision": OptimizerSpec(2, None),
    "stable_adamw": OptimizerSpec(2, None),
    "grokadamw": OptimizerSpec(2, None, foreach_temp=True),
    "optimi_adamw": OptimizerSpec(2, None),
    "adopt_adamw": OptimizerSpec(2, None, foreach_temp=True),
    "flash_adamw": OptimizerSpec(2, None),
    "flash_adam": OptimizerSpec(2, None),
    "schedule_free_adamw": OptimizerSpec(2, None),
    "schedule_free_radam": OptimizerSpec(2, None),
    # bitsandbytes / torchao quantized states
    "adamw_bnb_8bit": OptimizerSpec(2, _8BIT),
    "adamw_8bit": OptimizerSpec(2, _8BIT),
    "paged_adamw_8bit": OptimizerSpec(2, _8BIT, paged=True),
    "adamw_torch_8bit": OptimizerSpec(2, _8BIT),
    "ao_adamw_8bit": OptimizerSpec(2, _8BIT),
    "ao_adamw_fp8": OptimizerSpec(2, _8BIT),
    "adamw_torch_4bit": OptimizerSpec(2, 0.5),
    "ao_adamw_4bit": OptimizerSpec(2, 0.5),
    "ademamix_8bit": OptimizerSpec(3, _8BIT),
    "paged_ademamix_8bit": OptimizerSpec(3, _8BIT, paged=True),
    "lion_8bit": OptimizerSpec(1, _8BIT),
    "paged_lion_8bit": OptimizerSpec(1, _8BIT, paged=True),
    "rmsprop_bnb_8bit": OptimizerSpec(1, _8BIT),
    # bitsandbytes 32-bit: fp32 states whatever the param dtype
    "paged_adamw_32bit": OptimizerSpec(2, C.FP32, paged=True),
    "ademamix": OptimizerSpec(3, C.FP32),
    "paged_ademamix_32bit": OptimizerSpec(3, C.FP32, paged=True),
    "lion_32bit": OptimizerSpec(1, C.FP32),
    "paged_lion_32bit": OptimizerSpec(1, C.FP32, paged=True),
    "rmsprop_bnb": OptimizerSpec(1, C.FP32),
    "rmsprop_bnb_32bit": OptimizerSpec(1, C.FP32),
    # one state
    "rmsprop": OptimizerSpec(1, None),
    "adagrad": OptimizerSpec(1, None),
    "schedule_free_sgd": OptimizerSpec(1, None),
    "flash_sgd": OptimizerSpec(1, None),
    "flash_sgdw": OptimizerSpec(1, None),
    "flash_lion": OptimizerSpec(1, None),
    "muon": OptimizerSpec(1, None),       # momentum for matrices; AdamW for embeddings/norms [INF]
    "dion": OptimizerSpec(1, None),       # rank fraction 1.0 by default
    "came_pytorch": OptimizerSpec(1, None),  # momentum + factored second moment
    "sinkgd": OptimizerSpec(1, None),
    # no per-parameter state
    "sgd": OptimizerSpec(0, None),        # HF default momentum 0
    "adafactor": OptimizerSpec(0, None),  # factored second moment only (rows + cols)
    "lomo": OptimizerSpec(0, None, fused_backward=True),
    "adalomo": OptimizerSpec(0, None, fused_backward=True),
    # low-rank projections
    "galore_adamw": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, None),
    "galore_adamw_8bit": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, _8BIT),
    "galore_adafactor": OptimizerSpec(0, None),
    "galore_adamw_layerwise": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, None, fused_backward=True),
    "galore_adamw_8bit_layerwise": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, _8BIT, fused_backward=True),
    "galore_adafactor_layerwise": OptimizerSpec(0, None, fused_backward=True),
    "apollo_adamw": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, None),
    "apollo_adamw_layerwise": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, None, fused_backward=True),
    "q_galore_adamw8bit": OptimizerSpec(2 * C.LOW_RANK_STATE_FRACTION, _8BIT),
}
UNKNOWN_OPTIMIZER = OptimizerSpec(2, None, foreach_temp=True)


def optimizer_spec(name: str) -> OptimizerSpec | None:
    """The spec of an Axolotl / HF ``optimizer`` name; None when unknown (callers assume AdamW)."""
    return _SPECS.get(name.lower())


def known_optimizers() -> tuple[str, ...]:
    return tuple(_SPECS)


def _quantized_bytes(setup: TrainSetup) -> float:
    if setup.quantization == "nf4":
        return C.NF4_DOUBLE_QUANT_BYTES if setup.double_quant else C.NF4_BYTES
    return C.INT8


def fsdp1_upcasts(setup: TrainSetup) -> bool:
    """accelerate's FSDP1 path upcasts every trainable, non-fp32 FlatParameter to fp32 when mixed precision is on
    ("Upcasted low precision parameters in ... because mixed precision turned on in FSDP"), to mimic DeepSpeed's
    fp32 partitions [SRC huggingface/accelerate src/accelerate/accelerator.py, Accelerator.prepare_model, FSDP1
    branch: ``param.data = param.data.to(torch.float32)``]. Axolotl's bf16/fp16 reach accelerate as its
    mixed_precision (TrainingArguments). The sharded param, its gradient and torch AdamW's states
    (``zeros_like(param)``) are then fp32; the gathered compute copy stays bf16 (MixedPrecision.param_dtype).
    Counted for full fine-tunes only: how FSDP1 groups frozen base weights with LoRA adapters in one FlatParameter
    (use_orig_params) was not checked, so adapter runs keep the load dtype."""
    s = setup.sharding
    return (s.kind is ShardingKind.FSDP and s.fsdp_version == 1 and s.world > 1 and setup.param_bytes < C.FP32
            and not setup.quantization and not setup.adapter)


def trainable_base_bytes(setup: TrainSetup) -> int:
    """Bytes per element of the trainable base params as stored (and of their gradients): fp32 after the FSDP1
    upcast, else the load dtype."""
    return C.FP32 if fsdp1_upcasts(setup) else setup.param_bytes


def stored_checkpoint(setup: TrainSetup) -> Prequantized | None:
    """The checkpoint's own quantization when it sets the stored bytes (a bitsandbytes checkpoint is sized as the
    bnb load it is, ``setup.quantization``)."""
    q = setup.prequantized
    return q if q is not None and not q.bnb and not q.unsized else None


def prequantized_bytes(arch: Architecture, setup: TrainSetup, q: Prequantized) -> tuple[float, float]:
    """(all weights, the routed experts' part) of a quantized checkpoint as kept on the GPU: every decoder Linear
    weight in its format (``prequantized.tensor_bytes``: NVFP4 0.5625 B, FP8 1 B + block scales) unless a skip
    pattern keeps its module in the load dtype; routers that are not ``nn.Linear`` (``Linear.router``), biases,
    norms, embeddings and the vision tower in the load dtype; lm_head converted only when ``q.lm_head`` and no
    pattern keeps it. Computed once per (architecture, format, load dtype)."""
    memo = arch.memos.setdefault("prequantized_bytes", {})
    key = (q, setup.param_bytes)
    if key in memo:
        return memo[key]
    lp = setup.param_bytes
    weights = experts = 0.0
    for layer in range(arch.num_layers):
        for path, lin in layer_modules(arch, layer):
            size = _linear_bytes(setup, q, path, lin)
            weights += size
            experts += size if lin.expert else 0.0
    rest = (arch.total_params - arch.quantizable_params - arch.unconverted_linear_params - arch.expert_params) * lp
    head = arch.layout.lm_head_name
    if q.lm_head and q.linears and not arch.tie_word_embeddings and not arch.num_labels and not q.keeps(head):
        head_params = arch.vocab_size * arch.hidden_size
        rest += tensor_bytes(q.linears, arch.vocab_size, arch.hidden_size, q, lp) - head_params * lp
    memo[key] = (weights + rest, experts)
    return memo[key]


def _linear_bytes(setup: TrainSetup, stored: Prequantized | None, path: str, lin: Linear,
                  converted: bool = True) -> float:
    """The weight of the Linear at ``path`` (all ``lin.count`` of it) as the GPU keeps it: in the format of the
    checkpoint's own quantization ``stored`` (``prequantized_bytes``; a router that is not an ``nn.Linear`` and the
    modules a skip pattern keeps in the load dtype); under a 4/8-bit load at the bitsandbytes bytes (every decoder
    Linear the load ``converted``, as ``weight_bytes`` counts them; the routed experts with ``quantize_experts``), and
    what it leaves as ``weight_bytes`` counts it (``TrainSetup.unquantized_bytes``); else in the load dtype."""
    if stored is not None:
        fmt = None if lin.router or stored.keeps(_skip_probe(path, lin, stored)) else \
            stored.experts if lin.expert else stored.linears
        return lin.count * tensor_bytes(fmt, lin.d_out, lin.d_in, stored, setup.param_bytes)
    numel = lin.count * lin.d_in * lin.d_out
    if setup.quantization and converted and (setup.quantize_experts or not lin.expert):
        return numel * _quantized_bytes(setup)
    left = lin.expert or (setup.quantization and not converted)
    return numel * (setup.unquantized_bytes if left else setup.param_bytes)


def layer_weight_bytes(arch: Architecture, setup: TrainSetup, layer: int) -> tuple[float, float]:
    """(the routed experts, the rest) of one decoder layer's parameters as the GPU keeps them: the Linears' weights
    (``_linear_bytes``), their biases and the layer's small tensors (``Architecture.small_params_per_layer``) in the
    load dtype. Unquantized, the two sum to ``Architecture.layer_params`` x the load dtype's bytes."""
    stored, lp = stored_checkpoint(setup), setup.param_bytes
    experts, rest = 0.0, sum(arch.small_params_per_layer(layer)) * lp
    converted = not arch.layout.linear_subclass
    for path, lin in layer_modules(arch, layer):
        size = _linear_bytes(setup, stored, path, lin, converted)
        experts += size if lin.expert else 0.0
        rest += (0.0 if lin.expert else size) + (lin.count * lin.d_out * lp if lin.bias else 0.0)
    return experts, rest


def _skip_probe(path: str, lin: Linear, q: Prequantized) -> str:
    """The module path a skip pattern is matched against: a Linear's own; for routed experts one expert's projection
    (``...experts.0.gate_proj``, as ModelOpt names the checkpoint's modules in ``ignore``) or, for transformers'
    patterns, the ``...experts`` module that ``replace_with_fp8_linear`` swaps whole."""
    if not lin.expert:
        return path
    module = path.rsplit(".", 1)[0]
    return f"{module}.0.{lin.name}" if q.skip_glob else module


def weight_bytes(arch: Architecture, setup: TrainSetup, t: Trainable) -> float:
    """W = quantized linears (the decoder's and a tower's: ``Architecture.tower_linear_params``) × (0.516 NF4+DQ |
    0.5625 NF4 | 1 int8) + the rest (embeddings, lm_head, norms, biases, a tower's convolutions and position
    embeddings, routed experts unless ``quantize_moe_experts``) × load dtype, + LoRA adapters × 4 (fp32)
    + modules_to_save copies × load dtype, + the fp32 embeddings' extra (4 − b)·U (``params.upcast_params``) and the
    routed experts' and the unconverted Linears' (Falcon's: ``Architecture.unconverted_linear_params``) after PEFT's
    kbit preparation (4 − b)·E (``TrainSetup.experts_fp32``); a quantized checkpoint's weights as it keeps them
    (``prequantized_bytes``).
    Axolotl casts embeddings/norms back to the load dtype after PEFT's fp32 upcast (Axolotl 0.18.0
    `loaders/model.py`, `_convert_embedding_modules_dtype`)."""
    stored = stored_checkpoint(setup)
    if stored is not None:
        base = prequantized_bytes(arch, setup, stored)[0]
    elif setup.quantization:
        q = quantized_params(arch, setup)
        base = q * _quantized_bytes(setup) + (arch.total_params - q) * setup.param_bytes
    else:
        base = arch.total_params * setup.param_bytes
    copies = t.base * setup.param_bytes if setup.adapter else 0
    upcast = t.base * (C.FP32 - setup.param_bytes) if fsdp1_upcasts(setup) else 0
    embeddings = upcast_params(arch, setup) * (C.FP32 - setup.param_bytes)
    experts = arch.expert_params * (setup.unquantized_bytes - setup.param_bytes)
    unconverted = arch.unconverted_linear_params * (setup.unquantized_bytes - setup.param_bytes) \
        if setup.quantization and stored is None else 0
    return base + t.adapter * setup.adapter_bytes + copies + upcast + embeddings + experts + unconverted


def quantized_params(arch: Architecture, setup: TrainSetup) -> int:
    """The weights a 4/8-bit load quantizes: the decoder's and a tower's Linears, and the routed experts with
    ``quantize_moe_experts``."""
    return arch.quantizable_params + arch.tower_linear_params + (arch.expert_params if setup.quantize_experts else 0)


def quant_state_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """bitsandbytes' quantization state of the 4-bit weights, the part of W beyond the packed 4 bits: per 64-value
    block an fp32 absmax, or with double quant an 8-bit absmax and an fp32 one per 256 blocks (``NF4_BYTES`` /
    ``NF4_DOUBLE_QUANT_BYTES`` − ``NF4_PACKED_BYTES``). 0 without a 4-bit load of axlint's own, and for a checkpoint
    stored quantized."""
    if setup.quantization != "nf4" or stored_checkpoint(setup) is not None:
        return 0.0
    return quantized_params(arch, setup) * (_quantized_bytes(setup) - C.NF4_PACKED_BYTES)


def expert_weight_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """The routed experts' part of W: their weights in the load dtype (fp32 after PEFT's kbit preparation:
    ``TrainSetup.experts_fp32``), quantized only with ``quantize_moe_experts``, or as a quantized checkpoint keeps
    them."""
    stored = stored_checkpoint(setup)
    if stored is not None:
        return prequantized_bytes(arch, setup, stored)[1]
    quantized = setup.quantization and setup.quantize_experts
    return arch.expert_params * (_quantized_bytes(setup) if quantized else setup.unquantized_bytes)


def expert_weight_fraction(arch: Architecture, setup: TrainSetup, t: Trainable) -> float:
    """The routed experts' part of W (``expert_weight_bytes`` / ``weight_bytes``); 0 for a model without weights."""
    w = weight_bytes(arch, setup, t)
    return expert_weight_bytes(arch, setup) / w if w else 0.0


def expert_trainable_fraction(arch: Architecture, setup: TrainSetup) -> float:
    """The routed experts' part of the trainable parameters: their share of the model in a full fine-tune; 0 under
    an adapter (PEFT's LoRA wraps nn.Linear modules, which the experts are not) or unfrozen_parameters (counted as
    dense: an upper bound when experts are among them)."""
    if setup.adapter or setup.unfrozen_parameters or not arch.total_params:
        return 0.0
    return arch.expert_params / arch.total_params


def gradient_bytes(arch: Architecture, setup: TrainSetup, t: Trainable, spec: OptimizerSpec) -> float:
    """G = trainable base params × load dtype + adapters × ``adapter_bytes`` (4), + the trained fp32 embeddings' extra (4 − b)·U_trained
    (``params.upcast_trained``); ≈ 0 when the update is fused into backward."""
    if spec.fused_backward:
        return 0.0
    return (t.trained_base * trainable_base_bytes(setup) + t.trained_adapter * setup.adapter_bytes
            + upcast_trained(arch, setup) * (C.FP32 - setup.param_bytes))


def embedding_gradient_bytes(arch: Architecture, setup: TrainSetup, spec: OptimizerSpec) -> float:
    """The embedding's gradient V·h in the load dtype when the whole base trains (0 otherwise). Backward produces it
    last: before the embedding backward it is missing from G (untied), or it waits in the autograd engine's input
    buffer as lm_head's contribution (tied), and the embedding's own dense gradient and the sum of the two coexist
    with it (3·V·h at once, measured on fake tensors: tests/test_simulate_vs_analytic.py, llama-3.2-1b full ckpt)."""
    if setup.adapter or setup.unfrozen_parameters or spec.fused_backward:
        return 0.0
    return arch.embedding_params * setup.embedding_bytes


def master_weight_bytes(setup: TrainSetup, t: Trainable) -> float:
    """fp32 master copy of 16-bit trainable params: DeepSpeed (any stage) keeps one; HF pure-bf16 does not, nor
    does FSDP1 (its params themselves become fp32: ``fsdp1_upcasts``, counted in the weights) (DeepSpeed 0.19.8
    `runtime/bf16_optimizer.py` / `runtime/zero/stage_1_and_2.py` keep the fp32 partitions)."""
    if setup.sharding.kind != "deepspeed" or setup.param_bytes == C.FP32:
        return 0.0
    return t.base * C.FP32


def optimizer_state_bytes(arch: Architecture, setup: TrainSetup, t: Trainable, spec: OptimizerSpec) -> float:
    """O = states × state bytes × trainable. Unquantized states take the param dtype (bf16 2, adapters 4, trained
    fp32 embeddings 4: ``params.upcast_trained``); under DeepSpeed they live on the fp32 master (4).
    The adapters' take ``TrainSetup.adapter_bytes``."""
    if setup.sharding.kind is ShardingKind.DEEPSPEED and (setup.sharding.ds_optimizer or setup.sharding.offload_optimizer):
        return 2 * C.FP32 * t.trained  # FusedAdam / DeepSpeedCPUAdam (zero_force_ds_cpu_optimizer)
    if spec.state_bytes is not None:
        return spec.states * spec.state_bytes * t.trained
    base_bytes = C.FP32 if setup.sharding.kind is ShardingKind.DEEPSPEED else trainable_base_bytes(setup)
    return spec.states * (base_bytes * t.trained_base + setup.adapter_bytes * t.trained_adapter
                          + _upcast_extra(arch, setup))


def optimizer_temp_bytes(arch: Architecture, setup: TrainSetup, t: Trainable, spec: OptimizerSpec) -> float:
    """Step-time temporaries of a torch foreach optimizer: one state-sized tensor list (sqrt(exp_avg_sq))."""
    if not spec.foreach_temp or setup.sharding.kind is ShardingKind.DEEPSPEED:
        return 0.0
    return C.FOREACH_TEMP_STATES * (trainable_base_bytes(setup) * t.trained_base + setup.adapter_bytes * t.trained_adapter
                                    + _upcast_extra(arch, setup))


def _upcast_extra(arch: Architecture, setup: TrainSetup) -> float:
    """What the trained fp32 embeddings add to a tensor per trained parameter kept in the parameter's dtype."""
    return upcast_trained(arch, setup) * (C.FP32 - setup.param_bytes)
