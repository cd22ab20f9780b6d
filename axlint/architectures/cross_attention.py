"""Gated cross-attention layers: the text decoder of Llama 3.2 Vision (transformers 5.24 ``models/mllama``).

``MllamaTextModel`` builds ``MllamaCrossAttentionDecoderLayer`` at the indices of config.json's
``cross_attention_layers`` (``MllamaTextConfig`` default: 3, 8, ..., 38) and ``MllamaSelfAttentionDecoderLayer``, the
llama layer, everywhere else. A cross-attention layer's token mixer (``"cross_attention"``, a ``mixers.MIXERS`` kind)
is ``MllamaTextCrossAttention`` at ``cross_attn``: q_proj (h -> heads x d), k_proj and v_proj (h -> kv_heads x d),
o_proj (heads x d -> h), no biases, and the RMSNorms q_norm and k_norm over one head (d = h / heads); the layer adds
two scalar tanh gates, ``cross_attn_attn_gate`` and ``cross_attn_mlp_gate``, on the attention's and the MLP's
outputs. Its MLP and its two norms are the llama layer's.

Activations, per text token of bf16 training on the sdpa / flash path: the normed query (q_norm's fp32 input 4hq and
the bf16 output sdpa keeps 2hq), the attention output 2hq, the fp32 log-sum-exp 4 per head, the attention's o_proj
output and the masked MLP output that the gate products keep (2h each, their tanh gates being trained parameters),
and the text-row mask the MLP output is multiplied by (2 per token). The keys and values are computed from the
image tokens (``cross_attention_states``): they, k_norm's internals and the attention mask over them grow with the
images, not with the text, and are not counted (as the vision tower's activations are not).
"""
from __future__ import annotations

from typing import Any, Mapping

from axlint.architectures.linear import Linear
from axlint.architectures.mixers import ATTENTION, LAYER_PLANS, MIXER_NOTES, MIXERS, LayerPlan, MixerShape

BF16 = 2
FP32 = 4
CROSS_ATTENTION_LAYERS = (3, 8, 13, 18, 23, 28, 33, 38)
"""``MllamaTextConfig``'s default ``cross_attention_layers`` (transformers 5.24), used when config.json has none."""
CROSS_ATTENTION_NOTE = ("cross-attention layers: the activations of their text queries; the keys and values over "
                        "the image tokens, and their mask, grow with the images and are not estimated")
"""The estimate's note for a model with cross-attention layers."""


def cross_attention_saved(hidden: int, heads: int, kv_heads: int) -> float:
    """Bytes per text token a cross-attention layer keeps beyond its Linears' inputs (module docstring):
    8hq + 4a + 4h + 2, hq = heads x head_dim (= h here), a heads."""
    q = heads * (hidden // heads)
    return float(FP32 * q + BF16 * q + BF16 * q + FP32 * heads + 2 * BF16 * hidden + BF16)


def cross_attention(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``MllamaTextCrossAttention`` of one layer, with the layer's two tanh gates (``MixerShape.layer_others``)."""
    h, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    d = h // heads
    linears = (Linear("q_proj", h, heads * d), Linear("k_proj", h, kv_heads * d), Linear("v_proj", h, kv_heads * d),
               Linear("o_proj", heads * d, h))
    return MixerShape("cross_attn", linears, (("q_norm.weight", d), ("k_norm.weight", d)),
                      cross_attention_saved(h, heads, kv_heads), inner_linears=("o_proj",),
                      trained_per_token=float(BF16 * heads * d),
                      layer_others=(("cross_attn_attn_gate", 1), ("cross_attn_mlp_gate", 1)))


def mllama_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """Cross-attention at config.json's ``cross_attention_layers`` (else ``CROSS_ATTENTION_LAYERS``), the family's
    self-attention elsewhere; a dense MLP in every layer."""
    listed = config.get("cross_attention_layers")
    cross = set(listed if isinstance(listed, list) else CROSS_ATTENTION_LAYERS)
    return tuple(LayerPlan(("cross_attention",) if i in cross else (ATTENTION,), "dense") for i in range(layers))


MIXERS["cross_attention"] = cross_attention
MIXER_NOTES["cross_attention"] = CROSS_ATTENTION_NOTE
LAYER_PLANS["mllama"] = mllama_plan
