"""Scale an HF config.json down to a model that trains in seconds on a CPU, keeping its shape class.

Same `model_type`, same GQA ratio (query heads per key/value head), same MoE routing (top-k ≤ experts), same
tie_word_embeddings / activation / norm / rope settings; only sizes shrink. Per-layer lists (e.g. `layer_types`)
are truncated to the new depth. Pure function, no torch.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

_EXPERT_COUNT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "moe_topk", "top_k")
_TOKEN_ID_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")


def scale_down(config: Mapping[str, Any], *, layers: int = 2, hidden: int = 64, vocab: int = 512,
               head_dim: int = 16, experts: int = 4) -> dict[str, Any]:
    """A copy of `config` (HF config.json fields) with `layers` layers, about `hidden` width and `vocab` tokens.

    Heads: keep the kv-head count ≤ 2 and the ratio heads/kv_heads, so heads = kv × ratio; head_dim is `head_dim`
    and hidden_size = heads × head_dim when that exceeds `hidden`. Intermediate sizes keep their ratio to hidden.
    """
    out = copy.deepcopy(dict(config))
    old_layers = int(out.get("num_hidden_layers") or layers)
    old_hidden = int(out.get("hidden_size") or hidden)
    heads = int(out.get("num_attention_heads") or 1)
    kv = int(out.get("num_key_value_heads") or heads)
    ratio = max(1, heads // max(1, kv))
    new_kv = min(kv, 2)
    new_heads = new_kv * ratio
    new_hidden = max(hidden, new_heads * head_dim)
    out.update(num_hidden_layers=layers, hidden_size=new_hidden, num_attention_heads=new_heads,
               num_key_value_heads=new_kv, vocab_size=vocab)
    if "head_dim" in out or new_hidden != new_heads * head_dim:
        out["head_dim"] = head_dim
    for key in ("intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if isinstance(out.get(key), int):
            out[key] = _scaled(out[key], old_hidden, new_hidden)
    for key in _EXPERT_COUNT_KEYS:
        if isinstance(out.get(key), int) and out[key] > 0:
            out[key] = min(out[key], experts)
    for key in _TOP_K_KEYS:
        if isinstance(out.get(key), int) and out[key] > 0:
            out[key] = min(out[key], experts)
    for key in _TOKEN_ID_KEYS:
        out[key] = _token_id(out.get(key), vocab)
    for key, value in list(out.items()):
        if isinstance(value, list) and len(value) == old_layers and old_layers != layers:
            out[key] = value[:layers]
    return out


def _scaled(size: int, old_hidden: int, new_hidden: int) -> int:
    """`size` × new_hidden / old_hidden, rounded up to a multiple of 8 (at least 8)."""
    return max(8, -(-size * new_hidden // old_hidden // 8) * 8)


def _token_id(value: Any, vocab: int) -> Any:
    """A special-token id (or list of ids) mapped into the smaller vocabulary."""
    if isinstance(value, list):
        return [_token_id(v, vocab) for v in value]
    if isinstance(value, int) and value >= vocab:
        return vocab - 1
    return value
