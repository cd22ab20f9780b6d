"""DeepSeek sparse attention (DSA) as GLM-5 / GLM-5.2 run it: MLA attention with a Lightning Indexer beside it.

transformers 5.24 ``models/glm_moe_dsa/modeling_glm_moe_dsa.py``: every layer's ``GlmMoeDsaAttention`` is DeepSeek's
MLA (laid out by ``Architecture``); the layers whose ``indexer_types`` entry is "full" also own a
``GlmMoeDsaIndexer`` at ``self_attn.indexer``, the "shared" ones reuse the top-k of the last full layer and have
none. The indexer scores every key for every query and keeps the top ``index_topk`` for the attention's mask; its
``forward`` runs under ``torch.no_grad``, so it keeps nothing for backward and its weights get no gradient.
"""
from __future__ import annotations

from typing import Any, Mapping

from axlint.architectures.linear import Linear
from axlint.architectures.mixers import ATTENTION, LAYER_PLANS, MIXER_NOTES, MIXERS, LayerPlan, MixerShape

DSA_INDEXER = "dsa_indexer"
"""The mixer kind of a full layer's Lightning Indexer."""

INDEXER_NOTE = ("DSA Lightning Indexer (glm_moe_dsa): it runs without gradients and keeps nothing for backward; its "
                "forward scores every key for every query (index_n_heads fp32 scores per query and key) and the "
                "sdpa / eager path masks the attention with a sequence x sequence top-k mask, transients axlint "
                "does not count (Axolotl's use_glm_dsa_kernels replaces both with fused kernels)")
"""The estimate's note for a model with DSA indexers: what the activation formula leaves out."""


def indexer_types(config: Mapping[str, Any], layers: int) -> list[str]:
    """Each layer's indexer mode, "full" or "shared", as ``GlmMoeDsaConfig.__post_init__`` (5.24) derives it:
    config.json's ``indexer_types``; else ``index_topk_pattern`` (a string of F / S, or a list); else layer i is
    full when max(i - offset + 1, 0) is a multiple of the frequency (``index_topk_freq``, default 1;
    ``index_skip_topk_offset``, default 2): GLM-5.2's 4 and 3 make layers 0, 1, 2, 6, 10, ... full."""
    listed = config.get("indexer_types")
    if isinstance(listed, list) and len(listed) == layers:
        return [str(t) for t in listed]
    pattern = config.get("index_topk_pattern")
    if isinstance(pattern, str):
        return [{"F": "full", "S": "shared"}[c] for c in pattern[:layers]]
    if isinstance(pattern, list):
        return [str(t) for t in pattern[:layers]]
    freq = max(int(config.get("index_topk_freq") or 1), 1)
    offset = int(config.get("index_skip_topk_offset", 2))
    return ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(layers)]


def glm_moe_dsa_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """GLM-5 (``GlmMoeDsaDecoderLayer``): MLA attention in every layer, with the indexer in the "full" ones
    (``indexer_types``); the MLP MoE by config.json's ``mlp_layer_types`` ("sparse"), else from layer
    ``first_k_dense_replace`` (default 3) on, as ``GlmMoeDsaConfig`` builds that list."""
    kinds = config.get("mlp_layer_types")
    if not (isinstance(kinds, list) and len(kinds) == layers):
        dense = int(config.get("first_k_dense_replace", 3) or 0)
        kinds = ["dense" if i < dense else "sparse" for i in range(layers)]
    return tuple(LayerPlan((ATTENTION, DSA_INDEXER) if kind == "full" else (ATTENTION,),
                           "moe" if mlp == "sparse" else "dense")
                 for kind, mlp in zip(indexer_types(config, layers), kinds))


def dsa_indexer(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``GlmMoeDsaIndexer`` (5.24) at ``self_attn.indexer``: ``wq_b`` (q_lora_rank -> H·d, reading the attention's
    normed low-rank query), ``wk`` (h -> d), ``weights_proj`` (h -> H), no biases, and the LayerNorm ``k_norm`` over
    d (weight and bias); H = index_n_heads (default 32), d = index_head_dim (128). Without gradients: nothing
    saved, no backward (``MixerShape.no_grad``)."""
    h, rank = int(config["hidden_size"]), int(config.get("q_lora_rank") or 2048)
    heads, dim = int(config.get("index_n_heads") or 32), int(config.get("index_head_dim") or 128)
    linears = (Linear("wq_b", rank, heads * dim), Linear("wk", h, dim), Linear("weights_proj", h, heads))
    return MixerShape("self_attn.indexer", linears, (("k_norm.weight", dim), ("k_norm.bias", dim)), no_grad=True)


MIXERS[DSA_INDEXER] = dsa_indexer
MIXER_NOTES[DSA_INDEXER] = INDEXER_NOTE
LAYER_PLANS["glm_moe_dsa"] = glm_moe_dsa_plan
