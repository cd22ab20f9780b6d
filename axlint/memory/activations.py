"""Activation memory kept for backward, in bytes (bf16 activations; ×2 for fp32 training).

Per token per decoder layer (memory-model.md §1.2, derived from the HF modelling code and checked against Stas
Bekman's per-layer measurements to within ≈5 %), with h hidden, hq = heads·head_dim, hkv = kv_heads·head_dim,
I intermediate, a heads, s sequence length:

  A = norms·c_norm·h                          c_norm: HF RMSNorm 8, Gemma 10, Liger 4, frozen base 6
    + attention  sdpa (repeat_kv) 10·hq | flash 4·hq + 4·hkv + 4·a | eager 10·hq + 6·a·s
    + qk-norm    8·(hq + hkv)
    + MLP        gated 8·I (Liger GLU 6·I, frozen MLP 6·I) | plain 4·I | MoE k·8·I_moe + k·2h + 8·E (+ shared)
    + LoRA dropout 3·Σ d_in of the adapted Linears

Stored over the micro batch of T tokens:
  no checkpointing:        T·Σ_layers A
  gradient checkpointing:  T·L·2h (layer inputs; 0 when offloaded to CPU) + T·max A (one layer recomputed)
"""
from __future__ import annotations

from axlint.architectures import Architecture, Linear
from axlint.memory import constants as C
from axlint.memory.params import lora_targets
from axlint.memory.setup import TrainSetup

_MLP_NAMES = ("gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc1", "fc2", "dense_h_to_4h", "dense_4h_to_h")


def norm_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """c_norm·h per norm: HF RMSNorm 8h (fp32 input 4h + normalised 2h + output 2h), Gemma 10h, Liger 4h,
    frozen norms under LoRA 6h (fp32 input + output)."""
    if setup.liger_rms_norm and arch.norm_type in ("rmsnorm", "gemma_rmsnorm"):
        coef = C.NORM_BYTES["liger"]
    elif setup.adapter:
        coef = min(C.NORM_BYTES_FROZEN, C.NORM_BYTES[arch.norm_type])
    else:
        coef = C.NORM_BYTES[arch.norm_type]
    return coef * arch.hidden_size


def attention_bytes(arch: Architecture, setup: TrainSetup, o_proj_trained: bool = True) -> float:
    """Per token: sdpa 10·hq (8·hq when o_proj is frozen), flash 4·hq + 4·hkv + 4·a, eager adds 6·a·s;
    qk-norm adds 8·(hq + hkv)."""
    hq, hkv, a = arch.q_dim, arch.kv_dim, arch.num_heads
    if setup.attention == "flash":
        out = C.ATTN_FLASH_Q * hq + C.ATTN_FLASH_KV * hkv + C.ATTN_LSE_PER_HEAD * a
    else:
        out = (C.ATTN_SDPA_Q if o_proj_trained else C.ATTN_SDPA_Q_FROZEN) * hq
        if setup.attention == "eager":
            out += C.EAGER_SCORES_BYTES * a * setup.sequence_len
    if arch.qk_norm:
        out += C.QK_NORM_BYTES * (hq + hkv)
    return out


def mlp_bytes(arch: Architecture, setup: TrainSetup, layer: int, mlp_trained: bool = True) -> float:
    """Per token: gated 8·I (Liger GLU 6·I, frozen 6·I), plain 4·I; MoE: top-k experts at I_moe plus the
    gathered copies k·2h, fp32 router logits 8·E and the shared experts."""
    gated = C.MLP_GATED_LIGER if setup.liger_glu else C.MLP_GATED if mlp_trained else C.MLP_GATED_FROZEN
    if not arch.gated_mlp:
        return C.MLP_PLAIN * arch.intermediate_size
    if not arch.is_moe_layer(layer):
        return gated * arch.intermediate_size
    k = arch.experts_per_token
    return (k * gated * arch.moe_intermediate_size + k * C.MOE_GATHER_BYTES * arch.hidden_size
            + C.ROUTER_BYTES_PER_EXPERT * arch.num_experts + gated * arch.shared_expert_intermediate_size)


def layer_bytes_per_token(arch: Architecture, setup: TrainSetup, layer: int, adapted: tuple[Linear, ...] = ()) -> float:
    """A for one decoder layer (see module docstring). ``adapted``: the LoRA-adapted Linears of this layer."""
    if setup.adapter:
        names = {lin.name for lin in adapted}
        o_trained = bool(names & {"o_proj", "dense"})
        mlp_trained = bool(names & set(_MLP_NAMES))
    else:
        o_trained = mlp_trained = True
    out = (arch.norms_per_layer * norm_bytes(arch, setup) + attention_bytes(arch, setup, o_trained)
           + mlp_bytes(arch, setup, layer, mlp_trained))
    if setup.adapter and setup.lora_dropout > 0:
        out += C.LORA_DROPOUT_BYTES * sum(lin.d_in * min(lin.count, max(arch.experts_per_token, 1))
                                          for lin in adapted)
    return out * setup.param_bytes / C.BF16


def per_layer_bytes_per_token(arch: Architecture, setup: TrainSetup) -> list[float]:
    """A of every layer; layers of the same kind (dense / MoE) with the same adapters are computed once."""
    adapted = lora_targets(arch, setup) if setup.adapter else {}
    memo: dict[tuple, float] = {}
    out = []
    for i in range(arch.num_layers):
        key = (arch.is_moe_layer(i), adapted.get(i, ()))
        if key not in memo:
            memo[key] = layer_bytes_per_token(arch, setup, i, key[1])
        out.append(memo[key])
    return out


def stored_activation_bytes(arch: Architecture, setup: TrainSetup, tokens: int) -> float:
    """Activations live at the end of forward: T·Σ A without checkpointing; T·(L·2h + max A) with it (the L·2h
    layer inputs go to CPU with offloaded checkpointing). Plus the final norm (c_norm·h per token)."""
    layers = per_layer_bytes_per_token(arch, setup)
    final_norm = norm_bytes(arch, setup) * setup.param_bytes / C.BF16
    if not setup.gradient_checkpointing:
        return tokens * (sum(layers) + final_norm)
    checkpoints = 0 if setup.offload_checkpoints else arch.num_layers * C.CHECKPOINT_BYTES * arch.hidden_size
    return tokens * (checkpoints * setup.param_bytes / C.BF16 + max(layers) + final_norm)


def eval_activation_bytes(arch: Architecture, setup: TrainSetup, tokens: int) -> float:
    """Forward under no_grad keeps nothing for backward: at most one layer's temporaries, T·max A."""
    return tokens * max(per_layer_bytes_per_token(arch, setup))
