"""DeepSeek-V4 (V4-Flash, V4-Pro): its attention with compressors, and the hyper-connections around each block.

transformers 5.24 ``models/deepseek_v4/modeling_deepseek_v4.py``. Every ``DeepseekV4DecoderLayer`` holds

- ``self_attn`` (``DeepseekV4Attention``): shared-KV multi-query attention with one KV head of ``head_dim`` D that is
  both key and value, a low-rank query (``q_a_proj`` h -> q_lora_rank, ``q_a_norm``, ``q_b_proj`` -> H·D, an
  unweighted ``q_b_norm``), ``kv_proj`` (h -> D) and ``kv_norm``, a learned sink logit per head (``sinks``) and the
  grouped output projection: ``o_a_proj`` (``DeepseekV4GroupedLinear``, an ``nn.Linear`` of weight
  o_groups·o_lora_rank x H·D/o_groups applied per group of heads) then ``o_b_proj`` (o_groups·o_lora_rank -> h); no
  biases. Its ``layer_types`` entry adds a compressor at ``self_attn.compressor``: "compressed_sparse_attention"
  (CSA, ``DeepseekV4CSACompressor``, rate m = 4) ``kv_proj`` / ``gate_proj`` h -> 2D, ``position_bias`` m x 2D,
  ``kv_norm`` D and the Lightning ``indexer`` (``kv_proj`` / ``gate_proj`` h -> 2d, ``position_bias`` m x 2d,
  ``kv_norm`` d, ``q_b_proj`` q_lora_rank -> Hi·d, ``scorer.weights_proj`` h -> Hi; Hi = index_n_heads, d =
  index_head_dim); "heavily_compressed_attention" (HCA, ``DeepseekV4HCACompressor``, m' = 128) ``kv_proj`` /
  ``gate_proj`` h -> D, ``position_bias`` m' x D, ``kv_norm`` D; "sliding_attention" none.
- ``attn_hc`` and ``ffn_hc`` (``DeepseekV4HyperConnection``, mHC): ``fn`` ((2 + n)·n x n·h), ``base`` ((2 + n)·n) and
  ``scale`` (3) for n = hc_mult residual streams, which the layers carry as [B, S, n, h] (``Family.streams_key``);
  the model's ``hc_head`` (``DeepseekV4HyperHead``: ``hc_fn`` n x n·h, ``hc_base`` n, ``hc_scale`` 1) collapses them
  before the final norm (``Family.stream_head_name``).
- ``mlp`` (``DeepseekV4SparseMoeBlock``) in every layer: a router ``gate`` (E x h; the first ``num_hash_layers``
  layers route by a frozen ``tid2eid`` buffer, vocab x top-k int64, the others keep ``e_score_correction_bias``, a
  buffer), fused experts ``gate_up_proj`` / ``down_proj`` moe_intermediate_size wide and one shared expert
  ``shared_experts`` of the same width (``DeepseekV4MLP`` reads ``intermediate_size``, which the config maps onto
  moe_intermediate_size).

The multi-token-prediction layer the checkpoints ship (``mtp.*``) is not built: transformers ignores it on load
(``_keys_to_ignore_on_load_unexpected``). transformers keeps the mHC tensors, sinks, position biases and norms in
fp32 (``_keep_in_fp32_modules_strict``); axlint counts the parameters outside the Linears in the load dtype (V4-Flash:
some 34 M parameters, about 70 MB under).

Activations: the attention has no sdpa / flash path in transformers (``_supports_sdpa`` and
``_supports_flash_attn`` are off: head_dim 512 and the sinks) and runs eager over the sliding keys concatenated with
the compressed entries, fp32 logits of H x S x (S + S/m) per layer, a term in the sequence length that a per-token
figure cannot hold; Axolotl's ``use_dsv4_kernels`` replaces the attention, RoPE and mHC with its own Triton kernels.
axlint does not model either path, so the memory verdict of a DeepSeek-V4 model is unknown
(``ATTENTION_UNSIZED``); its parameters, weights and optimizer states are sized.
"""
from __future__ import annotations

from typing import Any, Mapping

from axlint.architectures.linear import Linear
from axlint.architectures.mixers import LAYER_PLANS, MIXER_UNSIZED, MIXERS, LayerPlan, MixerShape

DSV4_ATTENTION = "dsv4_attention"
"""The mixer kind of a layer's attention with its compressor."""
ATTN_HC, FFN_HC = "dsv4_attn_hc", "dsv4_ffn_hc"
"""The mixer kinds of the hyper-connections around the attention and around the MLP."""

ATTENTION_UNSIZED = ("DeepSeek-V4's compressed attention, whose activations axlint does not model: transformers runs "
                     "it eager only, with fp32 scores over the sliding and compressed keys, and Axolotl's "
                     "use_dsv4_kernels replaces it with fused Triton kernels")
"""Why the activations of a DeepSeek-V4 model are not sized (``mixers.MIXER_UNSIZED``)."""

_RATIO_TYPES = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
"""``compress_ratios`` entries of a published config.json -> layer types (``_COMPRESS_RATIO_TO_LAYER_TYPE``)."""
_DEFAULT_RATES = {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128}


def layer_types(config: Mapping[str, Any], layers: int) -> list[str]:
    """Each layer's attention type, as ``DeepseekV4Config.__post_init__`` (5.24) derives it: config.json's
    ``layer_types``; else the published ``compress_ratios`` (0 / 4 / 128 per layer; the list may run past the layers,
    its tail the MTP layer's; another value, which the config class refuses, is not read); else two HCA layers, then
    CSA and HCA alternating."""
    listed = config.get("layer_types")
    if isinstance(listed, list) and len(listed) >= layers:
        return [str(t) for t in listed[:layers]]
    ratios = config.get("compress_ratios")
    ratios = ratios[:layers] if isinstance(ratios, list) else []
    if len(ratios) == layers and all(isinstance(r, int) and r in _RATIO_TYPES for r in ratios):
        return [_RATIO_TYPES[r] for r in ratios]
    interleave = ["compressed_sparse_attention" if i % 2 else "heavily_compressed_attention"
                  for i in range(max(layers - 2, 0))]
    return (["heavily_compressed_attention"] * min(layers, 2) + interleave)[:layers]


def compress_rate(config: Mapping[str, Any], layer_type: str) -> int:
    """The compression rate of a layer type: ``compress_rates`` (written by transformers), else the legacy
    ``compress_rate_csa`` / ``compress_rate_hca``, else 4 (CSA) and 128 (HCA)."""
    rates = config.get("compress_rates")
    if isinstance(rates, Mapping) and rates.get(layer_type):
        return int(rates[layer_type])
    legacy = {"compressed_sparse_attention": "compress_rate_csa", "heavily_compressed_attention": "compress_rate_hca"}
    return int(config.get(legacy[layer_type]) or _DEFAULT_RATES[layer_type])


def _get(config: Mapping[str, Any], key: str, default: int) -> int:
    return int(config.get(key) or default)


def _compressor(config: Mapping[str, Any], layer_type: str) -> tuple[tuple[Linear, ...], tuple[tuple[str, int], ...]]:
    """The compressor of a CSA or HCA layer (module docstring), its Linears and other tensors named relative to the
    attention; none for a sliding layer."""
    if layer_type == "sliding_attention":
        return (), ()
    h, dim, rate = int(config["hidden_size"]), _get(config, "head_dim", 512), compress_rate(config, layer_type)
    width = 2 * dim if layer_type == "compressed_sparse_attention" else dim  # CSA: the overlapping Ca | Cb series
    linears = (Linear("compressor.kv_proj", h, width), Linear("compressor.gate_proj", h, width))
    others = (("compressor.position_bias", rate * width), ("compressor.kv_norm.weight", dim))
    if layer_type != "compressed_sparse_attention":
        return linears, others
    heads, idim = _get(config, "index_n_heads", 64), _get(config, "index_head_dim", 128)
    rank = _get(config, "q_lora_rank", 1024)
    linears += (Linear("compressor.indexer.kv_proj", h, 2 * idim), Linear("compressor.indexer.gate_proj", h, 2 * idim),
                Linear("compressor.indexer.q_b_proj", rank, heads * idim),
                Linear("compressor.indexer.scorer.weights_proj", h, heads))
    others += (("compressor.indexer.position_bias", rate * 2 * idim), ("compressor.indexer.kv_norm.weight", idim))
    return linears, others


def dsv4_attention(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``DeepseekV4Attention`` at ``self_attn`` with its layer type's compressor (module docstring). The query's
    up-projections (``q_b_proj``, the indexer's ``q_b_proj``) read the normed low-rank query and the output
    projections the attention output: ``inner_linears``. Its activations are not modelled (``ATTENTION_UNSIZED``)."""
    h, heads, dim = int(config["hidden_size"]), int(config["num_attention_heads"]), _get(config, "head_dim", 512)
    rank, groups = _get(config, "q_lora_rank", 1024), _get(config, "o_groups", 8)
    o_rank, layers = _get(config, "o_lora_rank", 1024), int(config["num_hidden_layers"])
    comp_linears, comp_others = _compressor(config, layer_types(config, layers)[layer])
    linears = (Linear("q_a_proj", h, rank), Linear("q_b_proj", rank, heads * dim), Linear("kv_proj", h, dim),
               Linear("o_a_proj", heads * dim // groups, groups * o_rank), Linear("o_b_proj", groups * o_rank, h))
    others = (("q_a_norm.weight", rank), ("kv_norm.weight", dim), ("sinks", heads)) + comp_others
    inner = ("q_b_proj", "o_a_proj", "o_b_proj", "compressor.indexer.q_b_proj")
    return MixerShape("self_attn", linears + comp_linears, others, inner_linears=inner)


def hyper_connection_params(config: Mapping[str, Any]) -> tuple[int, int, int]:
    """(fn, base, scale) numels of one ``DeepseekV4HyperConnection``: (2 + n)·n x n·h, (2 + n)·n, 3; n = hc_mult
    (default 4)."""
    n, h = _get(config, "hc_mult", 4), int(config["hidden_size"])
    mixes = (2 + n) * n
    return mixes * n * h, mixes, 3


def _hyper_connection(module: str):
    def build(config: Mapping[str, Any], layer: int) -> MixerShape:
        """A ``DeepseekV4HyperConnection`` (``hyper_connection_params``); its fn is an ``nn.Parameter`` applied
        with ``F.linear``, not an ``nn.Linear``."""
        fn, base, scale = hyper_connection_params(config)
        return MixerShape(module, (), (("fn", fn), ("base", base), ("scale", scale)))
    return build


def deepseek_v4_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """``DeepseekV4DecoderLayer``: the attention, the two hyper-connections and a MoE block in every layer."""
    return (LayerPlan((DSV4_ATTENTION, ATTN_HC, FFN_HC), "moe"),) * layers


MIXER_UNSIZED[DSV4_ATTENTION] = ATTENTION_UNSIZED
MIXERS.update({DSV4_ATTENTION: dsv4_attention, ATTN_HC: _hyper_connection("attn_hc"),
               FFN_HC: _hyper_connection("ffn_hc")})
LAYER_PLANS["deepseek_v4"] = deepseek_v4_plan
