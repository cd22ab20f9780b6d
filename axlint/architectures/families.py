"""One row per decoder family: the layer layout that config.json does not spell out.

A family is the ``model_type`` of a decoder (the ``text_config`` of a multimodal model). Its row names the Linear
modules of one decoder layer and where they sit, the norm and how many per layer, and the few traits that change
parameter counts (biases, qk-norm, a tied output embedding by default). Sizes come from config.json
(``Architecture``); a model type without a row is a decoder axlint cannot size, and the memory verdict for it is
"unknown" instead of a llama-shaped guess.

Each row was read from the family's modelling code in transformers 5 (``models/<type>/modeling_<type>.py``:
the ``__init__`` of its Attention, MLP and DecoderLayer) and its parameter total checked against a published
checkpoint in ``tests/test_architectures.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Tuple, Union

NormType = Literal["rmsnorm", "gemma_rmsnorm", "layernorm", "layernorm_nobias", "nonparametric"]
Attention = Literal["split", "fused_qkv", "mla"]
Mlp = Literal["gated", "fused_gated", "plain"]
Flag = Union[bool, Tuple[str, bool]]
"""A bias that is always there (True), never (False), or set by a config.json key with its default."""

NORM_NAMES = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")


@dataclass(frozen=True)
class Family:
    """The layout of one decoder layer and the names of its modules.

    ``attention``: "split" (q, k, v, o), "fused_qkv" (one Linear of width q + 2·kv, then o) or "mla" (DeepSeek's
    low-rank attention, laid out by ``Architecture``); ``attention_names`` in that order. ``mlp``: "gated" (gate,
    up, down), "fused_gated" (gate_up of width 2I, down) or "plain" (up, down); ``expert_names`` of routed experts.
    ``qkv_bias`` / ``o_bias`` / ``mlp_bias``: see ``Flag``. The norms of one layer, of kind ``norm``, are
    ``norm_names`` (``extra_norm_names`` when ``extra_norm_key`` is set in config.json); ``qk_norm``: None,
    "head" (over head_dim) or "full" (over all heads). Module paths (transformers 5): ``root`` holds ``embed_name``,
    ``layer_path`` (with ``attention_module`` and ``mlp_module`` inside) and ``final_norm_name``; the output
    projection is ``lm_head_name``, tied to the embedding when config.json says so (default ``tied_default``).
    """

    attention: Attention = "split"
    attention_names: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    qkv_bias: Flag = ("attention_bias", False)
    o_bias: Flag = ("attention_bias", False)
    mlp: Mlp = "gated"
    mlp_names: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
    mlp_bias: Flag = ("mlp_bias", False)
    expert_names: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
    norm: NormType = "rmsnorm"
    norm_names: tuple[str, ...] = NORM_NAMES[:2]
    extra_norm_key: str | None = None
    extra_norm_names: tuple[str, ...] = ()
    qk_norm: Literal["head", "full"] | None = None
    tied_default: bool = False
    lm_head_bias: bool = False
    root: str = "model"
    embed_name: str = "embed_tokens"
    layer_path: str = "layers.{layer}"
    attention_module: str = "self_attn"
    mlp_module: str = "mlp"
    final_norm_name: str = "norm"
    lm_head_name: str = "lm_head"


def flag(value: Flag, config: Mapping[str, Any]) -> bool:
    """A ``Flag`` read from config.json."""
    if isinstance(value, bool):
        return value
    key, default = value
    return bool(config[key]) if config.get(key) is not None else default


_LLAMA = Family()
_GEMMA = Family(norm="gemma_rmsnorm", tied_default=True)
_GEMMA_2 = Family(norm="gemma_rmsnorm", norm_names=NORM_NAMES, tied_default=True)
_GEMMA_3 = Family(norm="gemma_rmsnorm", norm_names=NORM_NAMES, qk_norm="head", tied_default=True)
_OLMO_2 = Family(qk_norm="full", norm_names=("post_attention_layernorm", "post_feedforward_layernorm"))
_COHERE = Family(norm="layernorm_nobias", norm_names=NORM_NAMES[:1], tied_default=True)
_FUSED_QKV = ("query_key_value", "dense")

FAMILIES: dict[str, Family] = {
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "granite": _LLAMA,
    "mixtral": Family(expert_names=("w1", "w3", "w2")),
    "qwen2": Family(qkv_bias=True, o_bias=False),
    "qwen2_moe": Family(qkv_bias=True, o_bias=False),
    "qwen2_vl_text": Family(qkv_bias=True, o_bias=False),
    "qwen2_5_vl_text": Family(qkv_bias=True, o_bias=False),
    "qwen3": Family(qk_norm="head"),
    "qwen3_moe": Family(qk_norm="head"),
    "phi3": Family(attention="fused_qkv", attention_names=("qkv_proj", "o_proj"), mlp="fused_gated",
                   mlp_names=("gate_up_proj", "down_proj")),
    "phi": Family(attention_names=("q_proj", "k_proj", "v_proj", "dense"), qkv_bias=True, o_bias=True, mlp="plain",
                  mlp_names=("fc1", "fc2"), mlp_bias=True, norm="layernorm",
                  norm_names=NORM_NAMES[:1], lm_head_bias=True, final_norm_name="final_layernorm"),
    "falcon": Family(attention="fused_qkv", attention_names=_FUSED_QKV, qkv_bias=("bias", False),
                     o_bias=("bias", False), mlp="plain", mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
                     mlp_bias=("bias", False), norm="layernorm", norm_names=NORM_NAMES[:1],
                     extra_norm_key="new_decoder_architecture", extra_norm_names=("ln_attn", "ln_mlp"),
                     root="transformer", embed_name="word_embeddings",
                     layer_path="h.{layer}", attention_module="self_attention", final_norm_name="ln_f"),
    "gpt_neox": Family(attention="fused_qkv", attention_names=_FUSED_QKV, qkv_bias=("attention_bias", True),
                       o_bias=("attention_bias", True), mlp="plain", mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
                       mlp_bias=True, norm="layernorm", root="gpt_neox", embed_name="embed_in",
                       attention_module="attention", final_norm_name="final_layer_norm"),
    "starcoder2": Family(qkv_bias=("use_bias", True), o_bias=("use_bias", True), mlp="plain",
                         mlp_names=("c_fc", "c_proj"), mlp_bias=("use_bias", True), norm="layernorm",
                         tied_default=True),
    "stablelm": Family(qkv_bias=("use_qkv_bias", False), o_bias=False, norm="layernorm"),
    "olmo": Family(norm="nonparametric"),
    "olmo2": _OLMO_2,
    "olmo3": _OLMO_2,
    "cohere": _COHERE,
    "cohere2": _COHERE,
    "gemma": _GEMMA,
    "gemma2": _GEMMA_2,
    "gemma3": _GEMMA_3,
    "gemma3_text": _GEMMA_3,
    "deepseek_v2": Family(attention="mla", qkv_bias=False, o_bias=False),
}
"""``model_type`` -> layout. A new family whose layer is built from these parts is one row here."""


def family_of(model_type: str) -> Family | None:
    """The layout row of a decoder ``model_type``; None for a family axlint cannot size."""
    return FAMILIES.get(model_type)
