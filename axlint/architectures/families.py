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

from dataclasses import dataclass, replace
from typing import Any, Literal, Mapping, Tuple, Union

NormType = Literal["rmsnorm", "gemma_rmsnorm", "layernorm", "layernorm_nobias", "nonparametric"]
Attention = Literal["split", "fused_qkv", "mla"]
Mlp = Literal["gated", "fused_gated", "plain"]
Flag = Union[bool, Tuple[str, bool]]
"""A bias that is always there (True), never (False), or set by a config.json key with its default."""

LEARNED_ACTIVATIONS: dict[str, tuple[str, ...]] = {"xielu": ("alpha_p", "alpha_n")}
"""``hidden_act`` values whose activation module holds parameters (one scalar each, in the MLP's ``act_fn``):
transformers' ``XIELUActivation`` (activations.py, 5.24), built for any family that names it in config.json."""

NORM_NAMES = ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")


@dataclass(frozen=True)
class MtpLayers:
    """Multi-token-prediction layers that a checkpoint's own modelling code builds beside the decoder, at
    ``<root>.<module>.N``, as many as config.json's ``count_key``: each the family's decoder layer (its attention, MLP
    and two norms), a bias-free ``proj_name`` Linear (2h -> h) over the concatenated hidden state and token embedding,
    and the norms ``norm_names``. They are loaded and held with the model, but the causal LM's forward does not run
    them: they hold no activations and get no gradient."""

    count_key: str
    module: str
    proj_name: str
    norm_names: tuple[str, ...]


@dataclass(frozen=True)
class Family:
    """The layout of one decoder layer and the names of its modules.

    ``attention``: "split" (q, k, v, o), "fused_qkv" (one Linear of width q + 2·kv, then o) or "mla" (DeepSeek's
    low-rank attention, laid out by ``Architecture``); ``attention_names`` in that order. ``mlp``: "gated" (gate,
    up, down), "fused_gated" (gate_up of width 2I, down) or "plain" (up, down); ``expert_names`` of routed experts.
    ``qkv_bias`` / ``o_bias`` / ``mlp_bias``: see ``Flag``. The norms of one layer, of kind ``norm``, are
    ``norm_names`` (``extra_norm_names`` when ``extra_norm_key`` is set in config.json); ``qk_norm``: None, "head"
    (over head_dim) or "full" (over all heads), present when ``qk_norm_when`` holds, named ``qk_norm_names`` inside
    the attention module. ``attention_sinks``: one learned logit per query head (``sinks``) in each attention
    module. ``norm_bias``: whether a "layernorm" has its bias (see ``Flag``). ``config_sections``: nested objects of
    config.json whose keys are read as the decoder's (DBRX's ``attn_config`` / ``ffn_config``).
    ``position_embed_name``: a learned absolute position embedding beside ``embed_name`` (max_position_embeddings x
    h), None for rotary / ALiBi models. Routed experts: the router is the Linear ``router_name`` (E x h, a bias with
    ``router_bias``; ``router_linear``: the router module is itself an ``nn.Linear``, which LoRA's
    ``lora_target_linear`` reaches), the experts' projections carry biases with ``expert_bias``. Shared experts sit
    at ``shared_expert_name`` (a gated MLP of n_shared_experts x the expert width; ``shared_experts_default`` of
    them when config.json has no n_shared_experts). ``dense_width_key``: the config.json key holding the width of
    the dense (non-MoE) layers' MLP when it is not intermediate_size (the experts' then is). Module paths
    (transformers 5): ``root`` holds ``embed_name``, ``layer_path`` (with ``attention_module`` and ``mlp_module``
    inside) and ``final_norm_name``; the output projection is ``lm_head_name``, tied to the embedding when
    config.json says so (default ``tied_default``), with a bias per ``lm_head_bias`` (see ``Flag``).

    Per-layer attention (``layer_type_attention``, Gemma 4): the ``full_attention`` layers of config.json's
    ``layer_types`` have heads of ``global_head_dim`` (default 512) and, when ``attention_k_eq_v`` is set,
    ``num_global_key_value_heads`` kv heads and no v_proj (the keys are the values); the other layers are sized by
    head_dim and num_key_value_heads. ``moe_switch``: a config.json key that must be true for the experts to be
    built. ``moe_beside_mlp``: a MoE layer keeps its dense MLP (``mlp_module``) and adds the router and the experts
    at the layer itself (``router_name``, ``experts``), with the norms ``moe_norm_names`` beside the usual ones;
    ``router_scales``: the router holds a learned h-wide input scale and one scale per expert.

    Gemma 4's small models: ``kv_shared_key``, the config.json key counting the last layers that reuse the keys and
    values of an earlier layer of their type (no k_proj / v_proj / k_norm of their own); ``double_wide_key``: a
    key that, when true, makes those layers' dense MLP twice intermediate_size wide. ``per_layer_input``: (the key
    of the per-layer input width p, its default, the default of vocab_size_per_layer_input) of per-layer embeddings:
    beside the token embedding a packed ``per_layer_embed_name`` table (vocab_size_per_layer_input x L·p),
    ``per_layer_projection_name`` (a Linear h -> L·p) and its norm ``per_layer_projection_norm_name`` over p; in each
    layer ``per_layer_input_names`` (a gate h -> p, a projection p -> h) and the norm ``per_layer_norm_name`` (h). A
    width of 0 turns them off. An intermediate_size that is a list gives each layer's MLP width (Gemma 3n).

    Gemma 3n's AltUp: ``streams_key``, the config.json key of the number n of residual streams the layers carry
    (n x h per token between layers), with ``stream_projection_names`` at the decoder's root, each n - 1 bias-free
    h x h Linears (``<name>.<i>``) that make the extra streams and merge them back.

    Hybrid decoders (``mixers.py``): ``layer_plan`` names the reader in ``mixers.LAYER_PLANS`` that gives each
    layer its token mixers (the family's attention, or a ``mixers.MIXERS`` kind) and its MLP (dense, MoE or none);
    None: every layer is the family's attention and an MLP (MoE where ``Architecture.is_moe_layer`` says).
    ``expert_mlp``: "gated" routed experts (gate, up, down) or "plain" ones (``expert_names`` up, down: Nemotron-H),
    whose shared experts are then laid out as the family's dense MLP (``mlp``, ``mlp_names``, ``mlp_bias``).
    ``shared_width_key``: the config.json key of the shared experts' width when it has its own (Nemotron-H's
    moe_shared_expert_intermediate_size). ``moe_latent_key``: a config.json key that, when set, routes the experts
    through a latent width: ``fc1_latent_proj`` h -> latent before them, ``fc2_latent_proj`` latent -> h after,
    the experts latent-wide (Nemotron-H's LatentMoE). ``ff_dim_adjust_key``: a config.json key (default on) that
    makes the dense MLP int(2I/3)·block_ffn_dim_multiplier wide, rounded up to block_multiple_of (LFM2).
    ``config_aliases``: (published key, the key the family's config class stores it as) pairs, the published one
    winning when config.json has it (Lfm2Config: block_ff_dim is intermediate_size, tie_embedding is
    tie_word_embeddings).
    ``attention_gate``: the attention output times sigmoid(gate) is the input of the output projection; the gate is
    made by the query projection, twice the query's width, or by its own bias-free Linear ``gate_linear`` (h ->
    heads x head_dim) inside the attention when the row names one. ``expert_score_bias``: a learned per-expert
    routing bias (E values) registered as a parameter at this name in the MoE block. ``remote_linear_experts``: the
    modelling code the published repository ships (config.json's ``auto_map``, run under ``trust_remote_code``)
    builds the routed experts as per-expert ``nn.Linear`` modules, which a 4/8-bit load quantizes.
    ``embed_extra_rows``: rows the input embedding has beyond vocab_size (Mllama's ``vocab_size + 8``).
    ``conv1d``: the layers' Linears are transformers' ``Conv1D`` (GPT-2: a Linear's parameters, the weight stored
    transposed), not ``nn.Linear``: Axolotl's ``lora_target_linear`` collects none of them.
    ``router_returns_tuple``: the router (``router_name``, with ``router_linear``) is an ``nn.Linear`` subclass whose
    forward returns a tuple (scores, weights, experts): PEFT wraps it like any Linear, and its LoRA layer's forward
    fails on the tuple.
    ``legacy_multi_query``: (the config.json key of a family's newer layout, the key of its older multi-query flag):
    while the first is off, a layer has one kv head when the second holds (by default it does) and one per query
    head otherwise (Falcon's ``new_decoder_architecture`` / ``multi_query``).

    Remote-code families (``remote_code``): transformers has no model of the type; the checkpoint's own modelling
    code (config.json's ``auto_map``, run under ``trust_remote_code``) is the layout, read from the published source
    and proven against the published checkpoint's totals in tests/test_coverage_remote.py. ``mlp_width_divisor``: the
    dense MLP's gate and up projections are config.json's intermediate_size divided by this wide (Qwen (1)'s
    ``QWenMLP``: ``intermediate_size // 2``). ``requires``: (key, value) pairs config.json must hold for the row to
    lay the decoder out (a missing key does not hold); otherwise the decoder is one axlint cannot size (BTLM with
    learned positions instead of ALiBi). ``mtp``: multi-token-prediction layers built beside the decoder
    (``MtpLayers``). ``linear_subclass``: the class of every Linear of the layers when it is a subclass of
    ``nn.Linear`` (Falcon's ``FalconLinear``), which a bitsandbytes 4/8-bit load of transformers 5.5 and later does
    not convert (``replace_with_bnb_linear`` converts modules of type ``nn.Linear`` exactly).
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
    norm_bias: Flag = True
    norm_names: tuple[str, ...] = NORM_NAMES[:2]
    extra_norm_key: str | None = None
    extra_norm_names: tuple[str, ...] = ()
    qk_norm: Literal["head", "full"] | None = None
    qk_norm_when: Flag = True
    qk_norm_names: tuple[str, str] = ("q_norm", "k_norm")
    attention_sinks: bool = False
    router_name: str = "gate"
    router_bias: bool = False
    router_linear: bool = False
    shared_expert_name: str = "shared_experts"
    shared_experts_default: int = 0
    dense_width_key: str | None = None
    expert_bias: bool = False
    tied_default: bool = False
    lm_head_bias: Flag = False
    config_sections: tuple[str, ...] = ()
    root: str = "model"
    embed_name: str = "embed_tokens"
    position_embed_name: str | None = None
    layer_path: str = "layers.{layer}"
    attention_module: str = "self_attn"
    mlp_module: str = "mlp"
    final_norm_name: str = "norm"
    lm_head_name: str = "lm_head"
    layer_type_attention: bool = False
    moe_switch: str | None = None
    moe_beside_mlp: bool = False
    moe_norm_names: tuple[str, ...] = ()
    router_scales: bool = False
    kv_shared_key: str | None = None
    double_wide_key: str | None = None
    per_layer_input: tuple[str, int, int] | None = None
    per_layer_embed_name: str = "embed_tokens_per_layer"
    per_layer_projection_name: str = "per_layer_model_projection"
    per_layer_projection_norm_name: str = "per_layer_projection_norm"
    per_layer_input_names: tuple[str, str] = ("per_layer_input_gate", "per_layer_projection")
    per_layer_norm_name: str = "post_per_layer_input_norm"
    streams_key: str | None = None
    streams_default: int = 1
    stream_projection_names: tuple[str, ...] = ()
    stream_head_name: str | None = None
    legacy_multi_query: tuple[str, str] | None = None
    layer_plan: str | None = None
    expert_mlp: Literal["gated", "plain"] = "gated"
    shared_width_key: str | None = None
    moe_latent_key: str | None = None
    ff_dim_adjust_key: str | None = None
    config_aliases: tuple[tuple[str, str], ...] = ()
    attention_gate: bool = False
    gate_linear: str | None = None
    expert_score_bias: str | None = None
    remote_linear_experts: bool = False
    remote_code: bool = False
    mlp_width_divisor: int = 1
    requires: tuple[tuple[str, Any], ...] = ()
    mtp: MtpLayers | None = None
    embed_extra_rows: int = 0
    conv1d: bool = False
    router_returns_tuple: bool = False
    linear_subclass: str | None = None


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
_MLA = Family(attention="mla", qkv_bias=("attention_bias", False), o_bias=("attention_bias", False))
_FUSED_QKV = ("query_key_value", "dense")
_UP_DOWN = ("up_proj", "down_proj")
_LFM2 = Family(attention_names=("q_proj", "k_proj", "v_proj", "out_proj"), qk_norm="head",
              qk_norm_names=("q_layernorm", "k_layernorm"), mlp_module="feed_forward", mlp_names=("w1", "w3", "w2"),
              norm_names=("operator_norm", "ffn_norm"), final_norm_name="embedding_norm", tied_default=True,
              ff_dim_adjust_key="block_auto_adjust_ff_dim",
              config_aliases=(("block_ff_dim", "intermediate_size"), ("tie_embedding", "tie_word_embeddings")),
              layer_plan="lfm2")
_QWEN_2 = Family(qkv_bias=True, o_bias=False)
_QWEN3_5 = Family(qk_norm="head", norm="gemma_rmsnorm", attention_gate=True, layer_plan="qwen3_5",
                  shared_expert_name="shared_expert")
_GEMMA_4 = Family(norm="gemma_rmsnorm", norm_names=NORM_NAMES, qk_norm="head", tied_default=True,
                  layer_type_attention=True, moe_switch="enable_moe_block", moe_beside_mlp=True,
                  moe_norm_names=("post_feedforward_layernorm_1", "post_feedforward_layernorm_2",
                                  "pre_feedforward_layernorm_2"),
                  router_name="router.proj", router_linear=True, router_scales=True,
                  kv_shared_key="num_kv_shared_layers", double_wide_key="use_double_wide_mlp",
                  per_layer_input=("hidden_size_per_layer_input", 256, 262_144))
_GLM_4 = Family(qkv_bias=("attention_bias", True), o_bias=False, mlp="fused_gated",
                mlp_names=("gate_up_proj", "down_proj"),
                norm_names=("input_layernorm", "post_attention_layernorm", "post_self_attn_layernorm",
                            "post_mlp_layernorm"))

FAMILIES: dict[str, Family] = {
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "granite": _LLAMA,
    # models/smollm3/modeling_smollm3.py: Llama's layer (the RoPE-free layers differ only in the attention's maths),
    # embeddings tied by default.
    "smollm3": Family(tied_default=True),
    "mixtral": Family(expert_names=("w1", "w3", "w2")),
    # models/phimoe/modeling_phimoe.py (Phi-3.5-MoE): q/k/v/o biased by attention_bias, LayerNorms with biases (the
    # final one too), every layer a MoE behind the router "router" (PhimoeTopKRouter, an nn.Linear subclass without
    # a bias), the output projection biased by lm_head_bias.
    "phimoe": Family(qkv_bias=("attention_bias", False), o_bias=("attention_bias", False), norm="layernorm",
                     router_name="router", router_linear=True, router_returns_tuple=True,
                     lm_head_bias=("lm_head_bias", False)),
    "qwen2": _QWEN_2,
    "qwen2_moe": _QWEN_2,
    "qwen2_vl_text": _QWEN_2,
    "qwen2_5_vl_text": _QWEN_2,
    "qwen3": Family(qk_norm="head"),
    "qwen3_moe": Family(qk_norm="head"),
    # models/qwen3_vl/modeling_qwen3_vl.py, models/qwen3_vl_moe: Qwen3's layer (the deepstack features are added to
    # the first layers' hidden states, no parameters); the MoE decoder's experts fused, its router "gate".
    "qwen3_vl_text": Family(qk_norm="head"),
    "qwen3_vl_moe_text": Family(qk_norm="head"),
    "phi3": Family(attention="fused_qkv", attention_names=("qkv_proj", "o_proj"), mlp="fused_gated",
                   mlp_names=("gate_up_proj", "down_proj")),
    "phi": Family(attention_names=("q_proj", "k_proj", "v_proj", "dense"), qkv_bias=True, o_bias=True, mlp="plain",
                  mlp_names=("fc1", "fc2"), mlp_bias=True, norm="layernorm",
                  norm_names=NORM_NAMES[:1], lm_head_bias=True, final_norm_name="final_layernorm"),
    "falcon": Family(attention="fused_qkv", attention_names=_FUSED_QKV, qkv_bias=("bias", False),
                     o_bias=("bias", False), mlp="plain", mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
                     mlp_bias=("bias", False), norm="layernorm", norm_names=NORM_NAMES[:1],
                     extra_norm_key="new_decoder_architecture", extra_norm_names=("ln_attn", "ln_mlp"),
                     legacy_multi_query=("new_decoder_architecture", "multi_query"),
                     root="transformer", embed_name="word_embeddings",
                     layer_path="h.{layer}", attention_module="self_attention", final_norm_name="ln_f",
                     linear_subclass="FalconLinear"),
    "gpt_neox": Family(attention="fused_qkv", attention_names=_FUSED_QKV, qkv_bias=("attention_bias", True),
                       o_bias=("attention_bias", True), mlp="plain", mlp_names=("dense_h_to_4h", "dense_4h_to_h"),
                       mlp_bias=True, norm="layernorm", root="gpt_neox", embed_name="embed_in",
                       attention_module="attention", final_norm_name="final_layer_norm"),
    "starcoder2": Family(qkv_bias=("use_bias", True), o_bias=("use_bias", True), mlp="plain",
                         mlp_names=("c_fc", "c_proj"), mlp_bias=("use_bias", True), norm="layernorm",
                         tied_default=True),
    "stablelm": Family(qkv_bias=("use_qkv_bias", False), o_bias=False, norm="layernorm"),
    "olmo": Family(norm="nonparametric"),
    # models/olmoe/modeling_olmoe.py: OLMo's q/k/v/o with q_norm / k_norm over all heads, the usual two norms, and in
    # every layer a MoE of num_experts (router "gate", no bias; fused experts intermediate_size wide), no shared expert.
    "olmoe": Family(qk_norm="full"),
    "olmo2": _OLMO_2,
    "olmo3": _OLMO_2,
    "cohere": _COHERE,
    "cohere2": _COHERE,
    "gemma": _GEMMA,
    "gemma2": _GEMMA_2,
    "gemma3": _GEMMA_3,
    "gemma3_text": _GEMMA_3,
    # models/deepseek_v2/modeling_deepseek_v2.py: MLA attention (model.py), attention_bias (default off) biases
    # q_a_proj, kv_a_proj_with_mqa and o_proj; routed + shared experts after the first first_k_dense_replace layers.
    "deepseek_v2": _MLA,
    # models/deepseek_v3/modeling_deepseek_v3.py: the same layer; the sigmoid router's e_score_correction_bias is a
    # buffer (not a parameter), so the router is its E x h weight alone.
    "deepseek_v3": _MLA,
    # models/glm4_moe_lite/modeling_glm4_moe_lite.py (GLM-4.7-Flash): DeepSeek-V3's MLA attention and MoE (router
    # weight only, e_score_correction_bias a buffer; shared experts n_shared_experts x moe_intermediate_size); which
    # layers are MoE is config.json's mlp_layer_types ("dense" / "sparse"), by default the first layer dense.
    "glm4_moe_lite": _MLA,
    # models/glm_moe_dsa/modeling_glm_moe_dsa.py (transformers 5.24, GLM-5 / GLM-5.2): DeepSeek-V3's MLA (q_a_proj,
    # q_a_layernorm, q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; attention_bias biases
    # q_a_proj, kv_a_proj_with_mqa and o_proj) with the DSA Lightning Indexer in the "full" layers (dsa.py), and
    # DeepSeek's MoE (router weight E x h, e_score_correction_bias a buffer; n_shared_experts shared) after the first
    # first_k_dense_replace dense layers.
    "glm_moe_dsa": replace(_MLA, layer_plan="glm_moe_dsa"),
    # models/deepseek_v4/modeling_deepseek_v4.py (transformers 5.24, DeepSeek-V4-Flash / -Pro): in every layer the
    # shared-KV attention with its per-layer-type compressor and the two mHC hyper-connections (dsv4.py, layer plan
    # "deepseek_v4"), and a MoE block: router gate (E x h; e_score_correction_bias / tid2eid buffers), fused experts
    # and one shared expert, both moe_intermediate_size wide (DeepseekV4MLP reads intermediate_size, mapped onto
    # moe_intermediate_size); hc_mult residual streams, collapsed by the model's hc_head.
    "deepseek_v4": Family(layer_plan="deepseek_v4", shared_width_key="moe_intermediate_size", streams_key="hc_mult",
                          streams_default=4, stream_head_name="hc_head"),
    # models/gpt_oss/modeling_gpt_oss.py: q/k/v/o all biased by attention_bias (default on), a learned sink logit per
    # head; every layer MoE: a biased router and biased experts (fused gate_up + down, each with a bias).
    "gpt_oss": Family(qkv_bias=("attention_bias", True), o_bias=("attention_bias", True), attention_sinks=True,
                      router_name="router", router_bias=True, expert_bias=True),
    # models/glm4/modeling_glm4.py: q/k/v biased (attention_bias, default on), o not; fused gate_up MLP; four norms
    # per layer (after the attention and after the MLP beside the two usual ones).
    "glm4": _GLM_4,
    # models/glm4_moe/modeling_glm4_moe.py: q/k/v biased by attention_bias (default off), o not; q/k norms only with
    # use_qk_norm; DeepSeek-style MoE (router weight only, its e_score_correction_bias is a buffer; shared experts
    # n_shared_experts x moe_intermediate_size; the first first_k_dense_replace layers dense).
    "glm4_moe": Family(qkv_bias=("attention_bias", False), o_bias=False, qk_norm="head",
                       qk_norm_when=("use_qk_norm", False)),
    # models/minimax_m2/modeling_minimax_m2.py: q/k/v/o without biases, RMSNorm q/k norms over all heads (q_norm
    # heads x head_dim, k_norm kv heads x head_dim); every layer MoE: router weight only (e_score_correction_bias is a
    # buffer), experts intermediate_size wide, no shared expert.
    "minimax_m2": Family(qkv_bias=False, o_bias=False, qk_norm="full"),
    # models/llama4/modeling_llama4.py (transformers 5.24): q/k/v/o biased by attention_bias (default off); the qk
    # L2 norm holds no parameters; the MLP module is feed_forward: in MoE layers (moe_layers, else every
    # interleave_moe_layer_step-th) the router (Llama4Router, an nn.Linear E x h without bias), experts
    # intermediate_size wide and one shared_expert of the same width; dense layers intermediate_size_mlp wide.
    "llama4_text": Family(mlp_module="feed_forward", router_name="router", router_linear=True,
                          router_returns_tuple=True, shared_expert_name="shared_expert", shared_experts_default=1,
                          dense_width_key="intermediate_size_mlp"),
    # models/gemma4/modeling_gemma4.py (transformers 5.24, Gemma4TextAttention / Gemma4TextDecoderLayer): q/k/v/o
    # biased by attention_bias; per layer type head dims and kv heads (global_head_dim, num_global_key_value_heads
    # with attention_k_eq_v, then no v_proj); q_norm / k_norm over the head dim (v_norm has no weight); four norms
    # (Gemma4RMSNorm: x * w in fp32, no 1 + w; the fp32 product is what gemma_rmsnorm models); with enable_moe_block
    # every layer adds Gemma4TextRouter (router.proj E x h, router.scale h, router.per_expert_scale E), experts
    # moe_intermediate_size wide (gate_up_proj fused, down_proj) and three more norms, beside the dense MLP. The
    # E2B / E4B: the last num_kv_shared_layers layers reuse an earlier layer's keys and values (q_proj, q_norm and
    # o_proj only), their MLP doubled with use_double_wide_mlp (Gemma4TextMLP); per-layer embeddings of
    # hidden_size_per_layer_input (256 when absent; Gemma4TextModel: embed_tokens_per_layer,
    # per_layer_model_projection, per_layer_projection_norm; Gemma4TextDecoderLayer: per_layer_input_gate,
    # per_layer_projection, post_per_layer_input_norm).
    "gemma4_text": _GEMMA_4,
    # models/gemma4_unified/modeling_gemma4_unified.py (transformers 5.24, the 12B's Gemma4UnifiedTextModel): Gemma 4's
    # dense layer (per layer type head dims and kv heads, no v_proj under attention_k_eq_v, q/k norms, four norms,
    # kv-shared layers and their double-wide MLP) without MoE blocks or per-layer embeddings.
    "gemma4_unified_text": replace(_GEMMA_4, moe_switch=None, moe_beside_mlp=False, moe_norm_names=(),
                                   router_name="gate", router_linear=False, router_scales=False,
                                   per_layer_input=None),
    # models/gemma3n/modeling_gemma3n.py (transformers 5.24, Gemma3nTextModel / Gemma3nTextDecoderLayer): Gemma 3's
    # attention (q/k/v/o biased by attention_bias, q_norm / k_norm over head_dim, v_norm without weight; the last
    # num_kv_shared_layers layers reuse earlier keys and values: q_proj, q_norm and o_proj only), four norms, a gated
    # MLP whose width intermediate_size gives per layer (a list); in every layer the AltUp block "altup" and LAuReL
    # block "laurel" (mixers.py, layer plan "gemma3n") and Gemma 4's per-layer inputs (Gemma3nTextConfig: width 256,
    # vocab 262144 by default); altup_num_inputs residual streams with altup_projections /
    # altup_unembed_projections at the root. Gemma3nRMSNorm: x * w in fp32, what gemma_rmsnorm models.
    "gemma3n_text": Family(norm="gemma_rmsnorm", norm_names=NORM_NAMES, qk_norm="head", tied_default=True,
                           kv_shared_key="num_kv_shared_layers",
                           per_layer_input=("hidden_size_per_layer_input", 256, 262_144), layer_plan="gemma3n",
                           streams_key="altup_num_inputs",
                           stream_projection_names=("altup_projections", "altup_unembed_projections")),
    # models/seed_oss/modeling_seed_oss.py: q/k/v biased by attention_bias (default on), o by attention_out_bias.
    "seed_oss": Family(qkv_bias=("attention_bias", True), o_bias=("attention_out_bias", False)),
    # models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py: llama layer, head-wise q/k norms named
    # query_layernorm / key_layernorm.
    "hunyuan_v1_dense": Family(qk_norm="head", qk_norm_names=("query_layernorm", "key_layernorm")),
    # models/apertus/modeling_apertus.py: up/down MLP without a gate or biases (its xIELU activation holds two
    # scalars: LEARNED_ACTIVATIONS), head-wise q/k norms, norms named attention_layernorm / feedforward_layernorm.
    "apertus": Family(mlp="plain", mlp_names=_UP_DOWN, mlp_bias=False, qk_norm="head",
                      norm_names=("attention_layernorm", "feedforward_layernorm")),
    # models/arcee/modeling_arcee.py: llama layer with an up/down MLP (no gate).
    "arcee": Family(mlp="plain", mlp_names=_UP_DOWN),
    # models/nemotron/modeling_nemotron.py: up/down MLP (no gate); LayerNorm1P norms (weight and bias; 1 + w is
    # applied in forward only).
    "nemotron": Family(mlp="plain", mlp_names=_UP_DOWN, norm="layernorm"),
    # models/exaone4/modeling_exaone4.py: head-wise q/k norms, norms after the attention and after the MLP only.
    "exaone4": Family(qk_norm="head", norm_names=("post_attention_layernorm", "post_feedforward_layernorm")),
    # models/gpt2/modeling_gpt2.py: Conv1D layers (a Linear's parameters, the weight stored transposed): c_attn
    # (fused q/k/v) and c_proj, MLP c_fc and c_proj, all biased; LayerNorms ln_1 / ln_2; learned positions wpe;
    # the output tied by default.
    "gpt2": Family(attention="fused_qkv", attention_names=("c_attn", "c_proj"), qkv_bias=True, o_bias=True,
                   mlp="plain", mlp_names=("c_fc", "c_proj"), mlp_bias=True, norm="layernorm",
                   norm_names=("ln_1", "ln_2"), tied_default=True, root="transformer", embed_name="wte",
                   position_embed_name="wpe", layer_path="h.{layer}", attention_module="attn",
                   final_norm_name="ln_f", conv1d=True),
    # models/gptj/modeling_gptj.py: q/k/v/out_proj without biases, MLP fc_in / fc_out with biases, one LayerNorm
    # per layer (attention and MLP in parallel), rotary positions; an untied output with a bias.
    "gptj": Family(attention_names=("q_proj", "k_proj", "v_proj", "out_proj"), qkv_bias=False, o_bias=False,
                   mlp="plain", mlp_names=("fc_in", "fc_out"), mlp_bias=True, norm="layernorm",
                   norm_names=("ln_1",), lm_head_bias=True, root="transformer", embed_name="wte",
                   layer_path="h.{layer}", attention_module="attn", final_norm_name="ln_f"),
    # models/mpt/modeling_mpt.py: Wqkv + out_proj and up_proj / down_proj (4h wide: expansion_ratio is not read),
    # no Linear biases and LayerNorms with their bias removed, whatever no_bias says; ALiBi, the output tied.
    "mpt": Family(attention="fused_qkv", attention_names=("Wqkv", "out_proj"), qkv_bias=False, o_bias=False,
                  mlp="plain", mlp_names=_UP_DOWN, mlp_bias=False, norm="layernorm", norm_bias=False,
                  norm_names=("norm_1", "norm_2"), tied_default=True, root="transformer", embed_name="wte",
                  layer_path="blocks.{layer}", attention_module="attn", mlp_module="ffn", final_norm_name="norm_f"),
    # models/dbrx/modeling_dbrx.py: sizes in attn_config / ffn_config; Wqkv + out_proj without biases inside
    # norm_attn_norm, beside two bias-free LayerNorms; every layer MoE: the router an nn.Linear (router.layer), the
    # experts three (E·I x h) parameters w1 / v1 / w2 in experts.mlp; the output untied.
    "dbrx": Family(attention="fused_qkv", attention_names=("Wqkv", "out_proj"), qkv_bias=False, o_bias=False,
                   expert_names=("mlp.w1", "mlp.v1", "mlp.w2"), router_name="router.layer", router_linear=True,
                   norm="layernorm",
                   norm_bias=False, norm_names=("norm_attn_norm.norm_1", "norm_attn_norm.norm_2"),
                   config_sections=("attn_config", "ffn_config"), root="transformer", embed_name="wte",
                   layer_path="blocks.{layer}", attention_module="norm_attn_norm.attn", mlp_module="ffn",
                   final_norm_name="norm_f"),
    # models/ministral3/modeling_ministral3.py (transformers 5.24, the Ministral 3 decoder of the mistral3
    # multimodal models): q/k/v/o and gate/up/down without biases, two RMSNorms per layer: the llama layer (its
    # rope and attention scaling change no parameter); the output untied by default.
    "ministral3": _LLAMA,
    # models/mistral4/modeling_mistral4.py (transformers 5.24, Mistral Small 4): DeepSeek-V3's layer: MLA attention
    # (q_a_proj / q_b_proj or q_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; attention_bias biases
    # q_a_proj, kv_a_proj_with_mqa and o_proj), routed experts (router weight E x h, fused gate_up + down) and
    # n_shared_experts shared ones after the first first_k_dense_replace dense layers.
    "mistral4": _MLA,
    # Hybrid decoders (layer plans and mixers in ssm.py). models/falcon_h1 (5.24) FalconH1DecoderLayer: the Mamba-2
    # mixer ("mamba") and attention side by side on the input norm, then the gated MLP "feed_forward" after
    # pre_ff_layernorm; q/k/v/o biased by attention_bias.
    "falcon_h1": Family(mlp_module="feed_forward", norm_names=("input_layernorm", "pre_ff_layernorm"),
                        final_norm_name="final_layernorm", layer_plan="falcon_h1"),
    # models/nemotron_h NemotronHBlock: a norm and one "mixer" per block (Mamba-2, attention without biases, a
    # relu2 up/down MLP biased by mlp_bias, or NemotronHMoE: fp32 router "gate", up/down experts, shared experts
    # as the MLP moe_shared_expert_intermediate_size wide, the LatentMoE projections with moe_latent_size);
    # embedding "embeddings", final norm "norm_f".
    "nemotron_h": Family(qkv_bias=False, o_bias=False, mlp="plain", mlp_names=_UP_DOWN, expert_mlp="plain",
                         expert_names=_UP_DOWN, shared_width_key="moe_shared_expert_intermediate_size",
                         moe_latent_key="moe_latent_size", norm_names=("norm",), embed_name="embeddings",
                         attention_module="mixer", mlp_module="mixer", final_norm_name="norm_f",
                         layer_plan="nemotron_h"),
    # models/jamba JambaAttentionDecoderLayer / JambaMambaDecoderLayer: attention (no biases) or the Mamba-1 mixer
    # ("mamba"), then "feed_forward": a gated MLP or JambaSparseMoeBlock (router "router", experts
    # intermediate_size wide).
    "jamba": Family(qkv_bias=False, o_bias=False, mlp_module="feed_forward", router_name="router",
                    norm_names=("input_layernorm", "pre_ff_layernorm"), final_norm_name="final_layernorm",
                    layer_plan="jamba"),
    # models/granitemoehybrid GraniteMoeHybridDecoderLayer: attention or the Mamba-2 mixer ("mamba"); the shared
    # MLP "shared_mlp" (input_linear h -> 2·shared_intermediate_size, output_linear) in every layer, with
    # num_local_experts the MoE block_sparse_moe (router weight, experts intermediate_size wide) beside it.
    "granitemoehybrid": Family(mlp="fused_gated", mlp_names=("input_linear", "output_linear"),
                               mlp_module="shared_mlp", dense_width_key="shared_intermediate_size",
                               moe_beside_mlp=True, router_name="block_sparse_moe.router",
                               expert_names=("block_sparse_moe.experts.gate_proj", "block_sparse_moe.experts.up_proj",
                                             "block_sparse_moe.experts.down_proj"),
                               layer_plan="granitemoehybrid"),
    # models/lfm2 Lfm2DecoderLayer: the short conv ("conv") or attention (out_proj; head-wise q_layernorm /
    # k_layernorm), operator_norm and ffn_norm, the gated MLP w1 / w3 / w2 "feed_forward" whose width
    # block_auto_adjust_ff_dim adjusts; the final norm is "embedding_norm"; the output tied by default.
    "lfm2": _LFM2,
    # models/lfm2_moe Lfm2MoeDecoderLayer: LFM2's layer; the first num_dense_layers MLPs dense (intermediate_size,
    # not adjusted), then Lfm2MoeSparseMoeBlock (router "gate", experts moe_intermediate_size wide; its
    # expert_bias is a buffer).
    "lfm2_moe": replace(_LFM2, ff_dim_adjust_key=None, layer_plan="lfm2_moe"),
    # models/mamba MambaBlock: a norm and the Mamba-1 "mixer", nothing else; backbone.embeddings, backbone.norm_f,
    # the output tied by default.
    "mamba": Family(norm_names=("norm",), root="backbone", embed_name="embeddings", final_norm_name="norm_f",
                    tied_default=True, layer_plan="mamba"),
    # models/qwen3_next/modeling_qwen3_next.py (transformers 5.24): layer_types' "linear_attention" layers run a
    # Gated DeltaNet at linear_attn (mixers.gated_deltanet_fused), the "full_attention" ones a gated attention
    # (q_proj 2 x heads x head_dim: query and output gate; q/k/v/o biased by attention_bias; q_norm / k_norm over
    # head_dim); norms of weight w applied as (1 + w) in fp32, Gemma's; Qwen-MoE experts with one shared_expert and
    # its sigmoid shared_expert_gate.
    "qwen3_next": Family(qk_norm="head", norm="gemma_rmsnorm", attention_gate=True, layer_plan="qwen3_next",
                         shared_expert_name="shared_expert"),
    # models/qwen3_5/modeling_qwen3_5.py and models/qwen3_5_moe/modeling_qwen3_5_moe.py (transformers 5.24):
    # Qwen3-Next's layer with the Gated DeltaNet's in-projections split (mixers.gated_deltanet_split); the dense
    # model's MLP in every layer, the MoE model's sparse block in every layer. The decoder is the text_config of the
    # multimodal Qwen3_5(Moe)ForConditionalGeneration (vision.py: the qwen3_5 tower and merger).
    "qwen3_5_text": _QWEN3_5,
    "qwen3_5_moe_text": _QWEN3_5,
    # models/afmoe/modeling_afmoe.py (transformers 5.24, Arcee's Trinity): q/k/v/o biased by attention_bias, q_norm /
    # k_norm over head_dim, a bias-free gate_proj (h -> heads x head_dim) whose sigmoid gates the attention output;
    # four norms per layer; from layer num_dense_layers on, AfmoeSparseMoeBlock: router.gate (an nn.Linear E x h),
    # experts moe_intermediate_size wide (gate_up_proj fused, down_proj), shared_experts num_shared_experts x that
    # width, and expert_bias (E, an nn.Parameter that does not train); before it a dense MLP.
    "afmoe": Family(qk_norm="head", attention_gate=True, gate_linear="gate_proj",
                    norm_names=("input_layernorm", "post_attention_layernorm", "pre_mlp_layernorm",
                                "post_mlp_layernorm"),
                    router_name="router.gate", router_linear=True, expert_score_bias="expert_bias"),
    # models/kimi_linear/modeling_kimi_linear.py (transformers 5.24): the "full_attention" layers run DeepSeek's MLA
    # (q_proj or q_a_proj / q_b_proj, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; attention_bias biases
    # q_a_proj, kv_a_proj_with_mqa and o_proj), the others Kimi Delta Attention (mixers.kda), both at self_attn;
    # MoE layers (mixers.kimi_linear_plan) a router weight E x h (e_score_correction_bias a buffer), experts
    # moe_intermediate_size wide (gate_up_proj fused, down_proj) and num_shared_experts shared ones.
    # Moonshot's own modeling_kimi.py (the checkpoint's auto_map) builds the experts as an nn.ModuleList of
    # KimiBlockSparseMLP (w1 / w2 / w3 nn.Linear): under trust_remote_code a 4/8-bit load quantizes them.
    "kimi_linear": replace(_MLA, layer_plan="kimi_linear", remote_linear_experts=True),
    # Qwen (1) (remote code only): the checkpoint's modeling_qwen.py (Qwen/Qwen-7B, auto_map
    # modeling_qwen.QWenLMHeadModel). transformer.wte; transformer.h.N: ln_1 / ln_2 (RMSNorm), attn.c_attn (h -> 3 x
    # kv_channels x heads, nn.Linear's default bias: always biased), attn.c_proj (a bias unless no_bias), mlp.w1 /
    # mlp.w2 (h -> intermediate_size // 2 each; c_proj(w1(x) * silu(w2(x))): w2 is the gate) and mlp.c_proj (no bias
    # with no_bias); transformer.ln_f; an untied lm_head. Every published Qwen (1) config.json sets no_bias.
    "qwen": Family(attention="fused_qkv", attention_names=("c_attn", "c_proj"), qkv_bias=True, o_bias=False,
                   mlp_names=("w2", "w1", "c_proj"), mlp_bias=False, mlp_width_divisor=2, norm_names=("ln_1", "ln_2"),
                   config_aliases=(("kv_channels", "head_dim"),), root="transformer", embed_name="wte",
                   layer_path="h.{layer}", attention_module="attn", final_norm_name="ln_f", remote_code=True,
                   requires=(("no_bias", True),)),
    # BTLM (remote code only): the checkpoint's modeling_btlm.py (cerebras/btlm-3b-8k-base, auto_map
    # modeling_btlm.BTLMLMHeadModel): GPT-2's block of Conv1D layers, all biased: attn.c_attn (fused q/k/v),
    # attn.c_proj, a SwiGLU MLP c_fc / c_fc2 (n_inner wide; c_fc(x) * silu(c_fc2(x)): c_fc2 is the gate) and c_proj;
    # LayerNorms ln_1 / ln_2 / ln_f; the output tied by default. With position_embedding_type "alibi" there is no wpe;
    # transformer.relative_pe.slopes (one frozen ALiBi slope per head: n_head numbers) is left out of the count.
    # Learned positions (BTLMConfig's default) are not laid out.
    "btlm": Family(attention="fused_qkv", attention_names=("c_attn", "c_proj"), qkv_bias=True, o_bias=True,
                   mlp_names=("c_fc2", "c_fc", "c_proj"), mlp_bias=True, norm="layernorm", norm_names=("ln_1", "ln_2"),
                   tied_default=True, root="transformer", embed_name="wte", layer_path="h.{layer}",
                   attention_module="attn", final_norm_name="ln_f", remote_code=True,
                   requires=(("position_embedding_type", "alibi"),)),
    # MiMo (remote code only): the checkpoint's modeling_mimo.py (XiaomiMiMo/MiMo-7B-RL): MiMoForCausalLM is
    # Qwen2ForCausalLM over MiMoModel, Qwen2Model (q/k/v biased, o not) plus model.mtp_layers, num_nextn_predict_layers
    # MiMoMTPLayers (Qwen2Attention, Qwen2MLP, input_layernorm / post_attention_layernorm, input_proj 2h -> h without
    # bias, token_layernorm, hidden_layernorm, final_layernorm) that only its speculative-decoding helpers run.
    "mimo": replace(_QWEN_2, remote_code=True,
                    mtp=MtpLayers("num_nextn_predict_layers", "mtp_layers", "input_proj",
                                  ("token_layernorm", "hidden_layernorm", "final_layernorm"))),
    # models/glm4v/modeling_glm4v.py (transformers 5.24, Glm4vTextAttention / Glm4vTextDecoderLayer: the decoder of
    # GLM-4.1V and GLM-4.6V): q/k/v always biased, o not; fused gate_up MLP; GLM-4's four norms per layer.
    "glm4v_text": replace(_GLM_4, qkv_bias=True),
    # models/mllama/modeling_mllama.py (transformers 5.24, MllamaTextModel: the decoder of Llama 3.2 Vision): the
    # llama layer, and at cross_attention_layers MllamaCrossAttentionDecoderLayer (cross_attention.py); the input
    # embedding vocab_size + 8 rows, the output vocab_size.
    "mllama_text_model": Family(layer_plan="mllama", embed_extra_rows=8),
    # models/paddleocr_vl/modeling_paddleocr_vl.py (transformers 5.24, PaddleOCRTextModel: ERNIE-4.5-0.3B, the
    # decoder of PaddleOCR-VL): the llama layer, every Linear biased by use_bias (default off); the output tied by
    # default (PaddleOCRTextConfig).
    "paddleocr_vl_text": Family(qkv_bias=("use_bias", False), o_bias=("use_bias", False), mlp_bias=("use_bias", False),
                                tied_default=True),
}
"""``model_type`` -> layout. A new family whose layer is built from these parts is one row here."""


def family_of(model_type: str) -> Family | None:
    """The layout row of a decoder ``model_type``; None for a family axlint cannot size."""
    return FAMILIES.get(model_type)
