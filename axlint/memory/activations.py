"""Activation memory kept for backward, in bytes (bf16 activations; ×2 for fp32 training).

What one decoder layer saves for backward, per token, read from the autograd graph of the HF modelling code
(transformers 5.x, PEFT 0.2x, torch 2.x) and checked op by op on fake tensors (tests/test_simulate_vs_analytic.py).
h hidden, hq = heads·head_dim, hkv = kv_heads·head_dim, I intermediate, a heads, s sequence length, E experts,
k experts per token, r LoRA rank, d the width of a Linear's input:

  norms       fp32 input 4h, + normalised 2h when the weight trains (Gemma 4h); Liger RMSNorm / LayerNorm 2h
  attention   sdpa, flash: q 2hq, k and v 2hkv each, output 2hq (also the o_proj input), fp32 lse 4a (sdpa
              as transformers calls it without a mask: is_causal + enable_gqa; an explicit packing/padding mask
              makes it repeat K/V and keep the mask, which is not modelled)
              eager: q, repeated K and V 6hq + fp32 and bf16 softmax 6·a·s; its output copy is an o_proj input
  qk-norm     norm internals (above) over hq + hkv; rotary embedding keeps only cos/sin
  MLP         gated 6I (gate output, activation output, up output; Liger GLU 4I); plain 2I (fc1 output)
              MoE: router 4E + 38 per choice; per choice gate|up 4I, activation 2I, down output 2h; trained experts
              add the gathered input 2h and the product 2I per choice; fp32 experts (``expert_scale``) keep these
              per-choice tensors in fp32, twice the bytes
  inputs      a Linear input tensor of width d (norm output, product, eager attention output) is kept once, 2d,
              when a consumer needs it: a trained weight, an 8-bit bitsandbytes base layer (MatMul8bitLt keeps its
              input; the 4-bit MatMul4Bit keeps only the packed weight since bitsandbytes 0.43.2, 0.50.2
              autograd/_functions.py: measured on an H200, Llama-3.1-8B QLoRA at 2k tokens without checkpointing
              allocates 24.6 GiB, as a fake-tensor run of the same code does), a LoRA adapter in the activation
              dtype (DeepSpeed casts adapters to bf16; QLoRA skips PEFT's cast under autocast)
  LoRA        fp32 adapters under autocast (every non-DeepSpeed bf16/fp16 run: accelerate wraps the forward):
              PEFT casts x to fp32 and autocast casts it back for lora_A, so every adapted Linear keeps its own
              2d copy; dropout (p > 0) adds a 1d mask (and a 2d dropped copy where the input is shared);
              lora_A output 2r per adapted Linear; autocast's bf16 copies of the adapter weights 2·Θ_lora, once
  LoRA kernels Axolotl's fused LoRA kernels (``lora_kernel_linears``) replace PEFT's layers of q, k, v / o / a gated
              MLP: each keeps its input (with dropout one dropped copy 2d and mask 1d per kernel), no per-adapter
              copies or lora_A outputs; the MLP kernel keeps gate and up 4I, not the activation or the product
  DoRA        per output element of each adapted Linear: PEFT's layers keep 4 (base and adapter outputs), the
              kernels 2 (their sum: ``dora_output_bytes``), whose backward allocates 2 more
              (``dora_kernel_backward_bytes``); PEFT's weight norm is a transient of up to a few full weights
              (``dora_norm_bytes``)

Stored over a micro batch of T tokens at the start of backward:
  no checkpointing:        T·(Σ_layers A + final norm)
  gradient checkpointing:  T·(L·2h + final norm)   (the layer inputs; 0 when offloaded to CPU)
Backward of one layer adds its gradient temporaries T·(2h + 6I) and, with checkpointing, its recomputed T·A.

An fp32 residual stream (``TrainSetup.residual_fp32``: fp32 embeddings, or an MLP activation or LayerNorm that CUDA's
autocast makes fp32 in a 4/8-bit run, ``TrainSetup.mlp_fp32``, whose MLP then keeps and differentiates fp32
tensors, ``plain_mlp_bytes`` and ``gated_mlp_scale``) in a half-precision model (each add of a bf16 sublayer output to it stays fp32): the layer
inputs kept by checkpointing are 4h, the output gradient between layers 4h, a residual norm keeps a 4-byte input
and normalised product, and every Linear reading a norm's fp32 output keeps its own half-precision copy (autocast
casts per call; a half-precision output is shared).
Measured on an H100 (torch 2.11, transformers 5.17): Llama-3.2-1B full fine-tune, sdpa, 2×2048 tokens without
checkpointing allocates 3.8 GiB more than with bf16 embeddings (1.96 GiB states, 0.49 GiB lm_head copy, 1.3 GiB
activations: 10h per token per layer); at 2×4096 with checkpointing 3.0 GiB more. Arcee AFM-4.5B QLoRA (ReLU²), on
an H200 at 2×2048 tokens with checkpointing: 6.93 GiB allocated, its layer inputs at 4 bytes; Axolotl's StarCoder2-3B
QLoRA (LayerNorm, a GELU MLP) at 2×8192: 17.04 GiB.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from axlint.architectures import Architecture, Linear
from axlint.memory import constants as C
from axlint.memory.params import (
    adapted_expert_parameters,
    adapted_router,
    expert_parameters,
    layer_groups,
    layer_ranks,
    lora_targets,
    outside_lora_linears,
    skipped_layers,
    token_layers,
)
from axlint.memory.setup import TrainSetup

_O_NAMES = ("o_proj", "dense")


def base_trains(setup: TrainSetup) -> bool:
    """The base weights (norms, Linears) get gradients: a full fine-tune or unfrozen_parameters, not an adapter."""
    return not setup.adapter


_QKV_NAMES = ("q_proj", "k_proj", "v_proj")
_MLP_NAMES = ("gate_proj", "up_proj", "down_proj")


def lora_kernel_linears(arch: Architecture, setup: TrainSetup, layer: int,
                        adapted: tuple[Linear, ...]) -> dict[Linear, str]:
    """The adapted Linears of ``layer`` that Axolotl's fused LoRA kernels (``TrainSetup.lora_kernels``) run in place
    of PEFT's layers, each with its kernel: "qkv" (q, k and v when all of them are adapted, on a ``self_attn``
    module with q_proj, k_proj and o_proj), "o" (o_proj), "mlp" and "mlp_down" (gate, up and down of a dense
    gated MLP at ``mlp`` with a SiLU or GELU activation, all three adapted; in a MoE layer only the dense MLP that
    Gemma 4 keeps beside its experts). Axolotl 0.18.0
    monkeypatch/lora_kernels.py ``apply_lora_kernel_patches``: ``find_self_attn_in_layer``, ``find_mlp_in_layer``,
    ``SUPPORTED_ACTIVATIONS``. Not modelled: the MLP kernel on Llama 4's shared and linearized experts, and the
    linear-attention projections of Qwen3.5's GatedDeltaNet (PEFT's layers are counted there)."""
    if not setup.lora_kernels or not adapted:
        return {}
    memo = arch.memos.setdefault("lora_kernel_linears", {})  # a layer kind's modules decide it
    key = (setup.lora_kernels, arch.layer_kinds[layer], adapted)
    if key not in memo:
        memo[key] = _kernel_linears(arch, setup.lora_kernels, layer, adapted)
    return memo[key]


def _kernel_linears(arch: Architecture, kernels: tuple[str, ...], layer: int,
                    adapted: tuple[Linear, ...]) -> dict[Linear, str]:
    out: dict[Linear, str] = {}
    layout = arch.layout
    attention = {lin.name: lin for lin in arch.attention_linears(layer)}
    if layout.attention_module == "self_attn" and not arch.is_mla and {"q_proj", "k_proj", "o_proj"} <= set(attention):
        qkv = [attention[name] for name in _QKV_NAMES if name in attention]
        if "qkv" in kernels and all(lin in adapted for lin in qkv):
            out.update(dict.fromkeys(qkv, "qkv"))
        if "o" in kernels and attention["o_proj"] in adapted:
            out[attention["o_proj"]] = "o"
    if ("mlp" in kernels and layout.mlp_module == "mlp" and layout.mlp == "gated"
            and (layout.moe_beside_mlp or not arch.is_moe_layer(layer)) and _kernel_activation(arch)):
        mlp = {lin.name: lin for lin in arch.mlp_linears(layer) if not lin.expert}
        if all(name in mlp and mlp[name] in adapted for name in _MLP_NAMES):
            out.update({mlp["gate_proj"]: "mlp", mlp["up_proj"]: "mlp", mlp["down_proj"]: "mlp_down"})
    return out


def _kernel_activation(arch: Architecture) -> bool:
    """The model's MLP activation is one Axolotl's LoRA MLP kernel runs: SiLU (SwiGLU) or any GELU (GeGLU)."""
    act = str(arch.config.get("hidden_act") or arch.config.get("hidden_activation") or "silu")
    return act == "silu" or "gelu" in act


def fused_mlp(arch: Architecture, setup: TrainSetup, layer: int) -> bool:
    """Axolotl's LoRA MLP kernel runs the layer's MLP (``lora_kernel_linears``)."""
    if "mlp" not in setup.lora_kernels or not setup.adapter:
        return False
    return "mlp" in lora_kernel_linears(arch, setup, layer, lora_targets(arch, setup).get(layer, ())).values()


def adapter_input_copies(setup: TrainSetup) -> bool:
    """Every LoRA Linear keeps its own half-precision copy of its input.

    PEFT keeps adapters in fp32 (autocast_adapter_dtype) and casts x to the adapter dtype before lora_A
    (peft/tuners/lora/layer.py Linear.forward, ``_cast_input_dtype``); under autocast lora_A casts it back to bf16
    and saves that copy. Not so under DeepSpeed (the engine casts adapters to bf16: no cast, x is shared), with a
    bitsandbytes base (peft/tuners/lora/bnb.py skips the cast when autocast is on), in fp32 training, or with adapters
    an older PEFT cast to the base's dtype (``TrainSetup.adapters_in_load_dtype``: x is already in it)."""
    return (bool(setup.adapter) and setup.quantization is None and setup.sharding.kind != "deepspeed"
            and setup.param_bytes == C.BF16 and not setup.adapters_in_load_dtype)


def norm_bytes(arch: Architecture, setup: TrainSetup, width: int, trains: bool, residual: bool = False) -> float:
    """What one norm over ``width`` keeps besides its output: fp32 input 4w (+ normalised 2w when the weight
    trains, Gemma's fp32 (1 + w) product 4w); Liger RMSNorm and LayerNorm keep their input 2w. A norm on an fp32
    residual stream (``residual`` with ``TrainSetup.residual_fp32``) keeps both at 4 bytes."""
    kind = "liger" if setup.liger_rms_norm and arch.norm_type in ("rmsnorm", "gemma_rmsnorm") else arch.norm_type
    weight_grad = C.NORM_WEIGHT_GRAD_BYTES.get(kind, 0) if trains else 0
    kept = C.NORM_INPUT_BYTES[kind]
    if residual and setup.residual_fp32:
        kept, weight_grad = max(kept, C.FP32), max(weight_grad, C.FP32) if weight_grad else 0
    return (kept + weight_grad) * width


def attention_bytes(arch: Architecture, setup: TrainSetup, layer: int = 0) -> float:
    """sdpa / flash: 4hq + 4hkv + 4a (q, k, v, output, fp32 lse); eager: 6hq + 6·a·s; qk-norm: norm internals over
    hq + hkv; an output gate (``Family.attention_gate``, Qwen3-Next / Qwen3.5: o_proj reads output × sigmoid(gate))
    its sigmoid 2hq. Linear inputs are counted by ``input_bytes``. hq and hkv are the layer's (Gemma 4's
    full-attention layers have wider heads)."""
    hq, hkv, a = arch.layer_q_dim(layer), arch.layer_kv_dim(layer), arch.num_heads
    if setup.attention == "eager":
        out = C.ATTN_EAGER_Q * hq + C.EAGER_SCORES_BYTES * a * setup.sequence_len
    else:
        out = C.ATTN_FLASH_Q * hq + C.ATTN_FLASH_KV * hkv + C.ATTN_LSE_PER_HEAD * a
    if arch.qk_norm:
        out += norm_bytes(arch, setup, hq + hkv, base_trains(setup))
    if arch.layout.attention_gate:  # sigmoid(gate), kept by the sigmoid and by the product with the output
        out += C.BF16 * hq
    return out


def mixer_bytes(arch: Architecture, setup: TrainSetup, layer: int) -> float:
    """The token mixers of a layer: the family's attention (``attention_bytes``) where the layer has it, plus each
    other mixer's ``saved_per_token`` (``mixers.MixerShape``), and its ``trained_per_token`` when the base weights
    train."""
    attention = attention_bytes(arch, setup, layer) if arch.has_attention(layer) else 0.0
    trains = base_trains(setup)
    return attention + sum(shape.saved_per_token + (shape.trained_per_token if trains else 0.0)
                           for shape in arch.mixer_shapes(layer))


def expert_scale(setup: TrainSetup) -> float:
    """How much larger the routed experts' activations are than the model's: 2 when PEFT's kbit preparation leaves
    the experts fp32 in a half-precision run (``TrainSetup.experts_fp32``), else 1. transformers 5's grouped_mm path
    casts the gathered tokens to the weight's dtype (``integrations/moe.py`` ``_grouped_mm``), so the gate|up output,
    the activation and the down output are fp32; PyTorch accepts fp32 in ``_grouped_mm`` and runs it through its
    per-expert loop (``GroupedBlas.cpp`` ``_grouped_mm_fallback``; the bf16 grouped kernel takes bf16 only). Checked
    on a CPU with real tensors (tests/test_simulate_vs_analytic.py): a Qwen3-MoE block keeps 2672 bytes per token
    with bf16 experts and 5232 with fp32 ones at h 256, I 128, 8 experts, top-2."""
    return setup.unquantized_bytes / setup.param_bytes


def gated_mlp_scale(setup: TrainSetup) -> float:
    """How much larger a gated MLP's tensors are than in the model's half precision: 2 when CUDA's autocast and the
    4/8-bit layers make the MLP fp32 (``TrainSetup.mlp_fp32``): the gate and up projections read the fp32 stream and
    return fp32, so the activation, the product and their gradients are fp32 too; else 1."""
    return C.FP32 / setup.param_bytes if setup.mlp_fp32 else 1


def plain_mlp_bytes(arch: Architecture, setup: TrainSetup, backward: bool = False) -> float:
    """Bytes per intermediate unit a gate-less MLP keeps (the up projection's output 2, or xIELU's Python form 7, 9
    when its alphas train, ``base_trains``) or, ``backward``, holds while its backward runs (4; xIELU 9, or 7).
    The XIELU CUDA package's kernel (``setup.xielu_cuda``) saves only its input and allocates only its input's
    gradient (nickjbrowning/XIELU ``XIELUAutograd``), as a plain activation does. When CUDA's autocast makes the
    MLP fp32 (``TrainSetup.mlp_fp32``) what it keeps is twice as large and its backward holds
    ``BACKWARD_MLP_PLAIN_FP32``, fitted to ReLU² and used for the GELU of a LayerNorm model too (xIELU's Python form:
    twice its bf16 figures)."""
    trained = base_trains(setup)
    scale = C.FP32 / setup.param_bytes if setup.mlp_fp32 else 1  # autocast's fp32 activation (``mlp_fp32``)
    if arch.config.get("hidden_act") != "xielu" or setup.xielu_cuda:
        if backward:
            return C.BACKWARD_MLP_PLAIN_FP32 if setup.mlp_fp32 else C.BACKWARD_MLP_PLAIN
        return C.MLP_PLAIN * scale
    if backward:
        return (C.BACKWARD_MLP_XIELU_TRAINED_ALPHAS if trained else C.BACKWARD_MLP_XIELU) * scale
    return (C.MLP_PLAIN_XIELU + (C.MLP_XIELU_TRAINED_ALPHAS if trained else 0)) * scale


def mlp_bytes(arch: Architecture, setup: TrainSetup, layer: int) -> float:
    """Gated 6I (Liger GLU 4I; Axolotl's LoRA MLP kernel 4I, ``fused_mlp``; each × ``gated_mlp_scale``), plain 2I (xIELU 7I or 9I, ``plain_mlp_bytes``); MoE: router 4E + per choice 38 + (4I + 2I + 2h)·``expert_scale``, trained
    experts + (2h + 2I)·``expert_scale`` (so are experts under a ``lora_target_parameters`` adapter: PEFT's
    ParamWrapper runs them on W + BA, a weight that needs a gradient, so the grouped matmuls keep their inputs), plus
    the shared experts as a gated MLP (Qwen2-MoE's sigmoid gate keeps the shared output 2h); 0 in a layer without an
    MLP."""
    gated = C.MLP_GATED_LIGER if setup.liger_glu else C.MLP_GATED
    if arch.layer_plan(layer).mlp is None:
        return 0.0
    if not arch.gated_mlp:
        return plain_mlp_bytes(arch, setup) * arch.layer_intermediate_size(layer)
    dense = C.MLP_GATED_LORA_KERNEL if fused_mlp(arch, setup, layer) else gated  # the layer's dense MLP at ``mlp``
    gated, dense = gated * gated_mlp_scale(setup), dense * gated_mlp_scale(setup)
    if not arch.is_moe_layer(layer):
        return dense * arch.layer_intermediate_size(layer)
    h, i, k = arch.hidden_size, arch.moe_intermediate_size, arch.experts_per_token
    experts = (C.MOE_GATE_UP_BYTES + C.MOE_ACT_BYTES) * i + C.MOE_DOWN_OUT_BYTES * h
    if base_trains(setup) or adapted_expert_parameters(arch, setup, layer):
        experts += C.LINEAR_INPUT_BYTES * (h + i)
    per_choice = C.ROUTING_BYTES_PER_CHOICE + experts * expert_scale(setup)
    shared = gated * arch.shared_expert_intermediate_size
    if arch.layout.moe_beside_mlp:  # Gemma 4: the dense MLP runs beside the experts, Axolotl's kernel on it too
        shared += dense * arch.layer_intermediate_size(layer)
    if arch.config.get("shared_expert_intermediate_size"):
        shared += C.LINEAR_INPUT_BYTES * h
    return C.ROUTER_BYTES_PER_EXPERT * arch.num_experts + k * per_choice + shared


def input_groups(arch: Architecture, layer: int) -> tuple[tuple[int, tuple[Linear, ...]], ...]:
    """The Linears of a layer grouped by the tensor they read, with its width: the attention norm output (shared
    with the MLP in parallel-attention layers; every mixer's Linears of width h read it), the attention output, the
    MLP norm output, and one group per other Linear (down projections, MLA's low-rank up projections, a mixer's
    output projection). Routed experts are in ``mlp_bytes``; a mixer that runs without gradients
    (``MixerShape.no_grad``) reads nothing for backward. Built once per layer kind (``Architecture.layer_kinds``:
    the layers of one kind have the same Linears)."""
    if not 0 <= layer < arch.num_layers:
        return _input_groups(arch, layer)
    memo = arch.memos.setdefault("input_groups", {})
    kind = arch.layer_kinds[layer]
    if kind not in memo:
        memo[kind] = _input_groups(arch, layer)
    return memo[kind]


def _input_groups(arch: Architecture, layer: int) -> tuple[tuple[int, tuple[Linear, ...]], ...]:
    h = arch.hidden_size
    attention = arch.attention_linears(layer)
    shapes = tuple(shape for shape in arch.mixer_shapes(layer) if not shape.no_grad)
    attn_in = tuple(lin for lin in attention if lin.d_in == h and lin.name not in _O_NAMES)
    attn_in += tuple(lin for shape in shapes for lin in shape.input_linears)
    mlp = tuple(lin for lin in arch.mlp_linears(layer) if not lin.expert)
    mlp_in = tuple(lin for lin in mlp if lin.d_in == h)
    groups = [(h, attn_in + mlp_in)] if arch.norms_per_layer == 1 else [(h, attn_in), (h, mlp_in)]
    groups += [(lin.d_in, (lin,)) for lin in attention if lin.d_in != h or lin.name in _O_NAMES]
    groups += [(lin.d_in, (lin,)) for shape in shapes for lin in shape.own_linears]
    groups += [(lin.d_in, (lin,)) for lin in mlp if lin.d_in != h]
    groups += [(lin.d_in, (lin,)) for lin in arch.per_layer_input_linears]  # the layer output, the gated product
    return tuple(groups)


def group_bytes(width: int, consumers: tuple[Linear, ...], adapted: tuple[Linear, ...], kept: bool,
                setup: TrainSetup, trains: bool, base_kept: bool, fp32_input: bool = False,
                fused: dict[Linear, str] | None = None, ranks: Mapping[Linear, int] | None = None) -> float:
    """One input tensor: kept once (2·width) when a trained weight (``trains``), a bitsandbytes base layer that keeps
    its input (``base_kept``: ``TrainSetup.base_keeps_input``), an adapter in the activation dtype or a fused LoRA
    kernel reads it (``kept``: the attention kernel keeps it anyway), once per such reader when the tensor is fp32
    (``fp32_input``: autocast makes each its own half copy); per adapted PEFT reader its own copy 2·width (fp32 adapters
    under autocast) or, with dropout, a dropped copy 2·width + a mask 1·width, and its lora_A output 2r (r: ``ranks``,
    else ``lora_r``). Readers in ``fused`` (``lora_kernel_linears``) run in Axolotl's kernels, which save the input
    itself and, with dropout, one dropped copy and mask per kernel (``apply_lora_qkv`` drops once for q, k and v); the
    down projection's input of the fused MLP exists only inside the kernel. With DoRA, ``dora_output_bytes`` of the
    adapted readers."""
    fused = fused or {}
    kernels = {fused[lin] for lin in consumers if lin in fused}
    mine = [lin for lin in consumers if lin in adapted and lin not in fused]
    dora = dora_output_bytes(mine, [lin for lin in consumers if lin in fused], setup) if setup.dora else 0.0
    if kernels == {"mlp_down"}:
        return dora
    copies, dropout = adapter_input_copies(setup), setup.lora_dropout > 0
    dropped = (C.LORA_DROPPED_COPY_BYTES + C.LORA_DROPOUT_MASK_BYTES) * width if dropout else 0
    shared_reader = trains or base_kept or (mine and not copies and not dropout) or kernels
    # an fp32 norm output comes with a full fine-tune (no adapter): each of its readers keeps its own half copy
    readers = len(consumers) if fp32_input else 1
    once = 0 if kept or not shared_reader else C.LINEAR_INPUT_BYTES * width * readers
    per_reader = (C.LORA_DROPPED_COPY_BYTES if copies or dropout else 0) + (C.LORA_DROPOUT_MASK_BYTES if dropout else 0)
    rank = sum(ranks.get(lin, setup.lora_r) for lin in mine) if ranks else len(mine) * setup.lora_r
    return once + len(mine) * per_reader * width + C.BF16 * rank + len(kernels) * dropped + dora


def dora_output_bytes(peft: Sequence[Linear], fused: Sequence[Linear], setup: TrainSetup) -> float:
    """What DoRA (``TrainSetup.dora``) keeps per token beside plain LoRA, for adapted Linears run by PEFT's layers
    (``peft``) and by Axolotl's fused kernels (``fused``): per output element 4 bytes (PEFT keeps the base and the
    adapter outputs for the magnitude's gradient) or 2 (the kernels keep their sum)."""
    return (C.DORA_PEFT_OUTPUT_BYTES * sum(lin.d_out for lin in peft)
            + C.DORA_KERNEL_OUTPUT_BYTES * sum(lin.d_out for lin in fused))


def kept_by_attention(arch: Architecture, setup: TrainSetup, consumers: tuple[Linear, ...]) -> bool:
    """The input group is the attention output, which sdpa / flash keep for their own backward (not eager's, nor
    the gated output of an ``attention_gate`` family, a product of its own)."""
    return (setup.attention != "eager" and not arch.layout.attention_gate and bool(consumers)
            and consumers[0].name in _O_NAMES)


def input_bytes(arch: Architecture, setup: TrainSetup, layer: int, adapted: tuple[Linear, ...] = (),
                only: frozenset[Linear] | None = None) -> float:
    """Σ over the layer's input groups (see ``group_bytes``), or over those read by the Linears of ``only`` alone;
    the attention output of sdpa / flash is kept by the kernel itself (not so the gated output of an
    ``attention_gate`` family, a product of its own). The norm outputs (the first one or two groups of
    ``input_groups``) are fp32 on an fp32 residual stream (``TrainSetup.residual_fp32``)."""
    from_norm = 1 if arch.norms_per_layer == 1 else 2
    fused = lora_kernel_linears(arch, setup, layer, adapted)
    ranks = layer_ranks(arch, setup, layer) if adapted else None
    return sum(group_bytes(width, consumers, adapted, kept_by_attention(arch, setup, consumers), setup,
                           base_trains(setup), setup.base_keeps_input,
                           fp32_input=setup.residual_fp32 and index < from_norm, fused=fused, ranks=ranks)
               for index, (width, consumers) in enumerate(input_groups(arch, layer))
               if consumers and (only is None or set(consumers) <= only))


def mlp_part_bytes(arch: Architecture, setup: TrainSetup, layer: int, adapted: tuple[Linear, ...] = ()) -> float:
    """What the MLP alone keeps per token: its internals (``mlp_bytes``) and the input groups read by its Linears
    only (the down projection's, and its norm output's unless it is shared with the attention)."""
    mlp = frozenset(lin for lin in arch.mlp_linears(layer) if not lin.expert)
    return mlp_bytes(arch, setup, layer) + input_bytes(arch, setup, layer, adapted, only=mlp)


def tiled(arch: Architecture, setup: TrainSetup, layer: int) -> bool:
    """The layer's MLP runs in sequence tiles (Axolotl's ``tiled_mlp``: a custom autograd Function that saves only
    the MLP input and runs each tile without a graph in forward, Axolotl 0.18 monkeypatch/tiled_mlp/base.py)."""
    return setup.mlp_tiles > 1 and arch.layer_plan(layer).mlp is not None


def layer_bytes_per_token(arch: Architecture, setup: TrainSetup, layer: int, adapted: tuple[Linear, ...] = ()) -> float:
    """A for one decoder layer (module docstring); ``adapted``: the LoRA-adapted Linears of this layer. A tiled MLP
    keeps its input 2h instead of ``mlp_part_bytes``."""
    out = (len(arch.layer_norm_names(layer)) * norm_bytes(arch, setup, arch.hidden_size, base_trains(setup), True)
           + mixer_bytes(arch, setup, layer) + mlp_bytes(arch, setup, layer)
           + C.PER_LAYER_INPUT_BYTES * arch.per_layer_input_size + input_bytes(arch, setup, layer, adapted))
    if tiled(arch, setup, layer):
        out += C.LINEAR_INPUT_BYTES * arch.hidden_size - mlp_part_bytes(arch, setup, layer, adapted)
    return out * setup.param_bytes / C.BF16


def per_layer_bytes_per_token(arch: Architecture, setup: TrainSetup) -> list[float]:
    """A of every layer, computed once per ``params.layer_groups`` group (layers of one kind with the same
    adapters); 0 for a layer the step skips (``params.skipped_layers``)."""
    adapted = lora_targets(arch, setup) if setup.adapter else {}
    out = [0.0] * arch.num_layers
    for layers in layer_groups(arch, setup):
        value = layer_bytes_per_token(arch, setup, layers[0], adapted.get(layers[0], ()))
        for layer in layers:
            out[layer] = value
    for layer in skipped_layers(arch, setup):
        out[layer] = 0.0
    return out


def final_norm_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """Per token: the final norm's internals, + its output 2h when lm_head trains and reads it (not with Liger FLCE
    or CCE, whose kernels keep what they need in the logits term)."""
    out = norm_bytes(arch, setup, arch.hidden_size, base_trains(setup), True)
    if base_trains(setup) and setup.loss not in ("liger_flce", "cce"):
        out += C.LINEAR_INPUT_BYTES * arch.hidden_size
    return out * setup.param_bytes / C.BF16


def adapter_weight_copies(setup: TrainSetup, adapter_params: int) -> float:
    """autocast casts each fp32 adapter weight to bf16 once per forward and the Linear keeps the copy for backward:
    2·Θ_lora while the graph lives (without checkpointing; with it only one layer's, negligible)."""
    if not adapter_input_copies(setup) or setup.gradient_checkpointing:
        return 0.0
    return C.BF16 * adapter_params


def stored_activation_bytes(arch: Architecture, setup: TrainSetup, tokens: int, layers: Sequence[float],
                            adapter_params: int) -> float:
    """Activations live at the start of backward, from ``layers`` (A of every layer): T·(Σ A + final norm) + the
    adapter weight copies without checkpointing; T·(L·2h + final norm) with it (the L·2h layer inputs go to CPU
    when offloaded; L·2·n·h with Gemma 3n's n residual streams); with per-layer inputs (Gemma 4) also their packed
    tensor T·2·L·p, which every layer reads. L counts the layers the step runs (``params.skipped_layers``)."""
    final = tokens * (final_norm_bytes(arch, setup)
                      + C.BF16 * arch.num_layers * arch.per_layer_input_size * setup.param_bytes / C.BF16)
    if not setup.gradient_checkpointing:
        return tokens * sum(layers) + final + adapter_weight_copies(setup, adapter_params)
    run = arch.num_layers - len(skipped_layers(arch, setup))
    checkpoints = 0 if setup.offload_checkpoints else (run * C.CHECKPOINT_BYTES * arch.hidden_size
                                                       * arch.residual_streams)
    return tokens * checkpoints * setup.residual_bytes / C.BF16 + final


def backward_temp_bytes_per_token(arch: Architecture, setup: TrainSetup, layer: int) -> float:
    """Gradient temporaries of one layer's backward: output grad 2h + at its MLP gated 6I (Liger GLU 2I: its kernel
    writes the gate and up gradients over the saved inputs; Axolotl's LoRA MLP kernel 2I; each × ``gated_mlp_scale``;
    plain 4I, xIELU 9I or 7I, ``plain_mlp_bytes``; MoE per
    choice (6·I_moe + 2h)·``expert_scale``, + the shared experts' gated 6I / 2I; none without an MLP) + its other
    mixers' ``backward_per_token``. A tiled
    MLP (``tiled``) recomputes one tile at a time: its temporaries and ``mlp_part_bytes`` ÷ tiles, beside the
    gradient of its whole input 2h."""
    h = arch.hidden_size
    mixers = sum(shape.backward_per_token for shape in arch.mixer_shapes(layer))
    gated = C.BACKWARD_MLP_GATED_LIGER if setup.liger_glu else C.BACKWARD_MLP_GATED
    dense = C.BACKWARD_MLP_GATED_LORA_KERNEL if fused_mlp(arch, setup, layer) else gated  # the dense MLP at ``mlp``
    gated, dense = gated * gated_mlp_scale(setup), dense * gated_mlp_scale(setup)
    if arch.layer_plan(layer).mlp is None:
        mlp = 0.0
    elif not arch.gated_mlp:
        mlp = plain_mlp_bytes(arch, setup, backward=True) * arch.layer_intermediate_size(layer)
    elif arch.is_moe_layer(layer):
        mlp = (arch.experts_per_token * (C.BACKWARD_MLP_GATED * arch.moe_intermediate_size + C.BF16 * h)
               * expert_scale(setup) + gated * arch.shared_expert_intermediate_size)
        if arch.layout.moe_beside_mlp:  # Gemma 4's dense MLP beside the experts
            mlp += dense * arch.layer_intermediate_size(layer)
    else:
        mlp = dense * arch.layer_intermediate_size(layer)
    if tiled(arch, setup, layer):
        adapted = lora_targets(arch, setup).get(layer, ()) if setup.adapter else ()
        mlp = (mlp + mlp_part_bytes(arch, setup, layer, adapted)) / setup.mlp_tiles + C.BF16 * h
    out_grad = C.BACKWARD_OUTPUT_GRAD_BYTES * h * setup.residual_bytes / setup.param_bytes
    return (out_grad + mlp + mixers + dora_kernel_backward_bytes(arch, setup, layer)) * setup.param_bytes / C.BF16


def dora_kernel_backward_bytes(arch: Architecture, setup: TrainSetup, layer: int) -> float:
    """What DoRA adds to the backward of Axolotl's fused kernels (``lora_kernel_linears``), per token: each kernel
    allocates 2 bytes per output element of its Linears more than without DoRA (the gradient scaled by the magnitude,
    the products for the magnitude's gradient: ``LoRA_MLP.backward`` and its QKV / O siblings); the kernels of a
    layer run one after the other, so the largest one's. 0 without DoRA."""
    if not setup.dora or not setup.lora_kernels or not setup.adapter:
        return 0.0
    fused = lora_kernel_linears(arch, setup, layer, lora_targets(arch, setup).get(layer, ()))
    outputs: dict[str, int] = {}
    for lin, kernel in fused.items():
        part = kernel.split("_", 1)[0]  # the MLP kernel runs its down projection too ("mlp_down")
        outputs[part] = outputs.get(part, 0) + lin.d_out
    return C.DORA_KERNEL_BACKWARD_BYTES * max(outputs.values(), default=0)


def adapter_transient_bytes_per_token(arch: Architecture, setup: TrainSetup, layer: int) -> float:
    """What the layer's widest moment in an adapted Linear holds beyond its saved activations, with fp32 adapters
    under autocast (``adapter_input_copies``; 0 otherwise): PEFT's LoRA Linear computes the base output 2·d_out,
    casts its input to fp32 4·d_in and, with dropout, writes an fp32 dropped copy 4·d_in before lora_A's autocast
    makes the half-precision copy it keeps (peft 0.21 tuners/lora/layer.py ``Linear.forward``); the input itself
    2·d_in is live too when nothing keeps it for backward. It happens in the forward and again in the recompute of a
    checkpointed layer. Measured on an H200 (torch 2.11, PEFT 0.21): Llama-3.1-8B LoRA with Liger at 8k tokens and
    Llama-3.2-3B at 16k peak inside down_proj's adapter during the recompute, 0.94 and 1.07 GiB above the layer's
    saved activations and gradient temporaries. Only PEFT's layers: not those Axolotl's LoRA kernels run
    (``lora_kernel_linears``), which cast nothing to fp32."""
    if not adapter_input_copies(setup):
        return 0.0
    targets = lora_targets(arch, setup).get(layer, ())
    adapted = set(targets) - set(lora_kernel_linears(arch, setup, layer, targets))  # PEFT's layers only
    dropped = C.FP32 if setup.lora_dropout > 0 else 0
    return max((C.BF16 * lin.d_out + (C.FP32 + dropped) * width
                + (0 if kept_by_attention(arch, setup, consumers) else C.LINEAR_INPUT_BYTES * width)
                for width, consumers in input_groups(arch, layer) for lin in consumers if lin in adapted),
               default=0.0) * setup.param_bytes / C.BF16


def layer_backward_bytes(arch: Architecture, setup: TrainSetup, tokens: int, layers: Sequence[float],
                         recompute: bool) -> float:
    """What backpropagating one layer adds to the stored activations: T·max(temporaries), and with ``recompute``
    (gradient checkpointing, or the layer's own activations at the end of backward) its A from ``layers`` too.
    The temporaries are the larger of the gradient temporaries (``backward_temp_bytes_per_token``) and an adapter's
    moment (``adapter_transient_bytes_per_token``; in a recompute beside the layer's output gradient 2h)."""
    out_grad = C.BACKWARD_OUTPUT_GRAD_BYTES * arch.hidden_size * setup.residual_bytes / C.BF16 if recompute else 0.0
    skipped = skipped_layers(arch, setup)
    temps = [max(backward_temp_bytes_per_token(arch, setup, kind[0]),
                 adapter_transient_bytes_per_token(arch, setup, kind[0]) + out_grad)
             if not set(kind) <= set(skipped) else 0.0
             for kind in arch.kind_layers]  # per layer kind; none for a kind whose every layer is skipped
    if not recompute:
        return tokens * max([0.0, *temps])
    return tokens * max([0.0, *(a + temps[kind] for a, kind in set(zip(layers, arch.layer_kinds)))])


def merged_weight_bytes(arch: Architecture, setup: TrainSetup) -> tuple[float, float]:
    """LoRA on a parameter (PEFT's ``ParamWrapper``: ``lora_target_parameters``, or old expert names PEFT converts):
    before the experts run, each wrapper computes ΔW = B·A (autocast's bmm gives it in the half dtype) and casts it to
    the dtype the module reads W in; the module then reads each weight once (the parametrization cache) as W + ΔW, a
    full copy that autograd keeps for the matmul's backward, and a quantized weight is first dequantized into a copy
    of its own (PEFT 0.18.1 / 0.19.1 tuners/lora/layer.py ``ParamWrapper._activate_lora``, ``get_delta_weight``,
    ``_LoraParameterProxy``; transformers 5 experts read gate_up_proj before down_proj).
    For n adapted elements in a layer whose weights reach the module in b bytes (``merged_weight_dtype_bytes``):
    stored = Σ over layers b·n without gradient checkpointing, 0 with it; the layer's moment, when the last weight
    read (n_last elements, down_proj) is merged, = both ΔW b·n + the merged copies b·n + its dequantized copy
    b·n_last: b·(2n + n_last) for experts stored quantized, 2b·n for experts stored in b. Measured on CPU with
    PEFT 0.19.1 and transformers 5.14.1, Axolotl 0.18.0's pins (``benchmarks/memory/merged_weight_probe.py``, run
    against this formula by tests/test_oracle_merged_weight.py): 4.21 n (bf16), 8.28 n (fp32), 4.84 n (nf4, read in
    bf16), 9.53 n (int8, read in fp32) against 4.0, 8.0, 4.67 and 9.33 n; the rest is the block's own activations,
    counted with them. Not counted when the KernelsPlugin's ScatterMoE / SonicMoE runs the experts with their own
    LoRA path. Quantized experts that no adapter wraps are read through ``dequantized_expert_bytes``."""
    if setup.expert_kernels:
        return 0.0, 0.0
    if not setup.adapter or not setup.lora_target_parameters:
        return dequantized_expert_bytes(arch, setup)
    per_group = []  # (adapted elements in a layer of a params.layer_groups group, of its last-read weight, layers)
    for layers in layer_groups(arch, setup):
        weights = [lin.count * lin.d_in * lin.d_out for lin in adapted_expert_parameters(arch, setup, layers[0])]
        router = adapted_router(arch, setup, layers[0])
        n = sum(weights) + (router.d_in * router.d_out if router else 0)
        per_group.append((n, weights[-1] if weights else 0, len(layers)))
    if not any(n for n, _, _ in per_group):
        return dequantized_expert_bytes(arch, setup)
    b = merged_weight_dtype_bytes(setup)
    dequantized = setup.quantize_experts
    moment = max((b * (2 * n + (last if dequantized else 0)) for n, last, _ in per_group), default=0)
    stored = 0.0 if setup.gradient_checkpointing else b * sum(n * count for n, _, count in per_group)
    return stored, moment


def dequantized_expert_bytes(arch: Architecture, setup: TrainSetup) -> tuple[float, float]:
    """Routed experts stored quantized by Axolotl's ``quantize_moe_experts`` as 3-D parameters
    (``TrainSetup.experts_parametrized``) and wrapped by no adapter: the experts
    module reads each weight once per forward through its dequantizing parametrization, which caches the result
    until the module's forward ends, and the expert matmuls keep it for their backward (Axolotl 0.18.0
    ``monkeypatch/moe_quant.py``; bitsandbytes 0.50 ``nn/parametrize.py``). 4-bit weights dequantize to the load
    dtype in one output (``dequantize_4bit``); 8-bit ones to fp32 through two (``int8_vectorwise_dequant`` computes
    A·stats, then ·1/127). For a layer whose weights n_1, n_2, … are read in that order (gate_up_proj, then
    down_proj) in b bytes (``merged_weight_dtype_bytes``) with t outputs per read: moment = b·max_i(Σ_{j<i} n_j +
    t·n_i); stored = b·Σ n_i per layer without gradient checkpointing, 0 with it. Measured on an H100 with the
    GLM-4.7-Flash examples (2 × 2048 tokens, gradient checkpointing): 1.17 GiB above the estimate without it for
    4-bit experts (b·n = 1.13 GiB), 3.17 GiB for 8-bit ones (3.0 GiB)."""
    if not setup.experts_parametrized or setup.quantization is None:
        return 0.0, 0.0
    b = merged_weight_dtype_bytes(setup)
    outputs = 2 if setup.quantization == "int8" else 1
    moment = stored = 0.0
    for layers in layer_groups(arch, setup):
        reads = [lin.count * lin.d_in * lin.d_out for _, lin in expert_parameters(arch, layers[0])]
        moment = max([moment, *(b * (sum(reads[:i]) + outputs * n) for i, n in enumerate(reads))])
        stored += b * sum(reads) * len(layers)
    return (0.0 if setup.gradient_checkpointing else stored), moment


def merged_weight_dtype_bytes(setup: TrainSetup) -> int:
    """Bytes per element of a LoRA-targeted expert weight as the module reads it: Axolotl's ``quantize_moe_experts``
    dequantizes 8-bit experts with bitsandbytes' ``int8_vectorwise_dequant``, which returns fp32 (bitsandbytes
    0.50.1 functional.py; Axolotl 0.18.0 monkeypatch/moe_quant.py ``Bnb8bitParametrization``), and 4-bit ones to
    their original dtype (``Bnb4bitParametrization``, nn/parametrize.py); unquantized experts are read in their own
    dtype (``TrainSetup.unquantized_bytes``: fp32 after PEFT's kbit preparation)."""
    if setup.quantize_experts and setup.quantization == "int8":
        return C.FP32
    return setup.param_bytes if setup.quantize_experts else setup.unquantized_bytes


def dequantized_weight_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """A bitsandbytes 4/8-bit Linear computes its input's gradient from a full copy of its weight in the compute
    dtype, made for that matmul and freed after it: ``MatMul4Bit.backward`` runs ``F.dequantize_4bit(B, ...)
    .to(grad_output.dtype)`` (bitsandbytes 0.49 also in the forward; 0.50 forwards through the fused ``gemm_4bit``),
    ``MatMul8bitLt.backward`` ``CB.to(ctx.dtype_A)`` [bitsandbytes 0.49.2 / 0.50.1 autograd/_functions.py]. One
    Linear at a time, so backward holds at most the largest quantized one: 2·N·K bytes (bf16) over the decoder's
    quantized Linears (routed experts, which transformers 5 keeps as 3-D parameters, excluded)."""
    if setup.quantization is None:
        return 0.0
    largest = max((lin.d_in * lin.d_out for layers in layer_groups(arch, setup)
                   for lin in arch.linears(layers[0]) if not lin.expert), default=0)
    return setup.param_bytes * largest


def dora_norm_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """The largest transient of DoRA's weight norm over the adapted Linears that PEFT's layers run (the decoder's
    but those of Axolotl's fused kernels, ``lora_kernel_linears``, and those outside the decoder layers,
    ``params.outside_lora_linears``): 0 without DoRA (``TrainSetup.dora``). PEFT 0.19.1 ``DoraLinearLayer.forward``
    (tuners/lora/dora.py) computes, at every training forward and recompute, ‖W + s·BA‖ of each row, with
    BA = lora_B(lora_A(I)) from an identity of d_in² in the adapters' dtype. For a Linear d_in -> d_out, with a the
    adapters' bytes as the forward reads them (``adapter_forward_bytes``), c the compute dtype's and x those of the
    layer's input (a where PEFT casts it to the adapters' dtype, c at a bitsandbytes base under autocast):
      while BA is made:  a·d_in² (the identity) + c·d_in² (autocast's copy, when a ≠ c) + c·d_in·d_out
      while the norm is: c·d_in² (lora_A keeps the identity's copy until the forward ends)
                         + d_in·d_out·(x (BA) + x (W, when the base is quantized or x ≠ c) + 2x (s·BA, the sum))
    Measured on PEFT's layer on the CPU, under autocast and as DeepSpeed runs it (tests/test_dora_memory.py: every
    allocation traced, as the GPU's allocator would see it). Axolotl's kernels
    take the norm with a Triton kernel that reads W in place (a 4/8-bit one dequantized, as its matmul is), and keep
    it until the adapters change (kernels/lora.py ``_compute_dora_scale``): nothing beyond the dequantized copy."""
    if not setup.dora or not setup.adapter:
        return 0.0
    adapted = lora_targets(arch, setup)
    shapes = {(lin.d_in, lin.d_out) for layers in layer_groups(arch, setup) for lin in adapted[layers[0]]
              if lin not in lora_kernel_linears(arch, setup, layers[0], adapted[layers[0]])}
    shapes |= {(lin.d_in, lin.d_out) for _, lin in outside_lora_linears(arch, setup)}
    return max((dora_norm_transient(d_in, d_out, setup) for d_in, d_out in shapes), default=0.0)


def dora_norm_transient(d_in: int, d_out: int, setup: TrainSetup) -> float:
    """DoRA's weight-norm transient in PEFT's layer of one Linear d_in -> d_out (``dora_norm_bytes``)."""
    a, c = adapter_forward_bytes(setup), setup.param_bytes
    x = c if setup.quantization else a
    weight = x if setup.quantization or x != c else 0
    making = a * d_in * d_in + (c * d_in * d_in if a != c else 0) + c * d_in * d_out
    norming = c * d_in * d_in + d_in * d_out * (3 * x + weight)
    return float(max(making, norming))


def token_copy_bytes(arch: Architecture, setup: TrainSetup) -> tuple[float, float]:
    """(kept, embedding backward): PEFT's trainable tokens (``params.token_layers``) write the trained rows into a
    full copy of each layer's weight at every forward (``TrainableTokensLayer.get_merged_weights``). The output
    projection's copy is the weight of its matmul, which keeps it for the backward pass: V·h in the weight's dtype
    from the forward to the head's backward. The embedding's is freed after the lookup, but its backward now runs
    and makes a dense gradient of the whole matrix, V·h again, before the trained rows are picked from it. (0, 0)
    without trainable tokens."""
    wrapped = (token_layers(arch, setup.trainable_tokens) or {}) if setup.adapter in ("lora", "qlora") else {}
    copy = float(arch.vocab_size * arch.hidden_size * setup.embedding_bytes)
    return (copy if "output" in wrapped else 0.0), (copy if "embedding" in wrapped else 0.0)


def adapter_forward_bytes(setup: TrainSetup) -> int:
    """Bytes per element of the LoRA adapters as the forward reads them: DeepSpeed's engine casts the model, the
    adapters with it, to the half dtype; elsewhere they stay as ``TrainSetup.adapter_bytes`` keeps them."""
    return setup.param_bytes if setup.sharding.kind == "deepspeed" else setup.adapter_bytes


def eval_activation_bytes(tokens: int, layers: Sequence[float]) -> float:
    """Forward under no_grad keeps nothing for backward: at most one layer's temporaries, T·max A."""
    return tokens * max(layers)
