"""Every row of the family table against the real modelling code: a small model of each family is built by
transformers on the meta device (no memory, no weights), and axlint's parameter count, from the same config.json,
must equal its ``numel`` sum; for dense families the parameter names must be the ones axlint writes out."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture
from axlint.architectures.families import FAMILIES
from axlint.memory.params import named_parameters, names_checked

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SMALL = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 128, "pad_token_id": 0,
         "bos_token_id": 1, "eos_token_id": 2}
UNREAD = {"falcon": ("intermediate_size",), "gpt_neox": ("num_key_value_heads",),
          "gpt2": ("intermediate_size", "num_key_value_heads"), "gptj": ("intermediate_size", "num_key_value_heads"),
          "mpt": ("intermediate_size", "num_key_value_heads"), "dbrx": ("hidden_size", "intermediate_size", "num_key_value_heads"),
          "mamba": ("intermediate_size", "num_attention_heads", "num_key_value_heads", "max_position_embeddings")}
"""Fields of SMALL a family's config.json does not have (Falcon: ffn_hidden_size, 4h by default; GPT-NeoX, GPT-2,
GPT-J and MPT have no grouped-query attention, GPT-2 / GPT-J an n_inner, 4h by default, MPT a fixed 4h MLP; DBRX
keeps kv heads and the expert width in attn_config / ffn_config, and its width as d_model: DbrxConfig copies d_model
into ffn_config before a hidden_size given by name is mapped onto it; Mamba has no attention, its inner width
comes from expand)."""
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
MLA = {"kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 4,
       "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
       "n_group": 1, "topk_group": 1}
DBRX_FFN = {"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2}
LLAMA4 = {"intermediate_size": 32, "intermediate_size_mlp": 96, "num_local_experts": 4, "num_experts_per_tok": 1,
          "head_dim": 16}
"""Llama 4: experts and the shared expert intermediate_size wide, dense layers intermediate_size_mlp; the variants
pick the MoE layers by interleave_moe_layer_step (every 2nd) and by a moe_layers list, and default (every layer)."""
GEMMA4 = {"head_dim": 16, "global_head_dim": 32, "hidden_size_per_layer_input": 0}
"""Gemma 4 without per-layer embeddings (the 26B-A4B and 31B): full-attention layers 32-wide heads; the variants flip
attention_k_eq_v (then num_global_key_value_heads, no v_proj), attention_bias and the MoE block beside the MLP."""
GEMMA4_SMALL_MODELS = {"head_dim": 16, "global_head_dim": 32, "num_hidden_layers": 5, "num_kv_shared_layers": 2,
                       "use_double_wide_mlp": True, "layer_types": ["sliding_attention", "full_attention",
                                                                    "sliding_attention", "sliding_attention",
                                                                    "full_attention"]}
"""Gemma 4 E2B / E4B: the last layers kv-shared (q_proj, q_norm, o_proj only) with a double-wide MLP, per-layer
embeddings (a packed table, its projection and norm; a gate, a projection and a norm per layer); the variants flip
the per-layer width (8, none, the config class's 256 with its full vocab_size_per_layer_input) and keys as values."""
GEMMA3N = {"head_dim": 16, "num_kv_shared_layers": 1, "hidden_size_per_layer_input": 8,
           "vocab_size_per_layer_input": 200, "laurel_rank": 4,
           "layer_types": ["sliding_attention", "full_attention"]}
"""Gemma 3n: AltUp (4 residual streams by default, 2 in a variant) and LAuReL blocks in every layer, per-layer
embeddings, kv-shared last layers (some or none), a per-layer list of MLP widths; activation sparsity holds no
parameters."""
GEMMA4_MOE = {"enable_moe_block": True, "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 32}
GDN = {"num_hidden_layers": 4, "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
       "linear_key_head_dim": 8, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 3}
"""Gated DeltaNet hybrids (Qwen3-Next, Qwen3.5): four layers, by default three linear-attention layers and one gated
full-attention layer (full_attention_interval 4); twice as many value heads as key heads, as the published models."""
QWEN_MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48}
AFMOE = {"head_dim": 16, "num_hidden_layers": 3, "num_experts": 4, "num_experts_per_tok": 2,
         "moe_intermediate_size": 32, "num_dense_layers": 1, "num_shared_experts": 1}
"""Trinity (afmoe): a dense first layer, then MoE layers with a shared expert and the per-expert routing bias."""
KIMI = {"num_hidden_layers": 4, "num_key_value_heads": 4, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8, "v_head_dim": 16, "num_experts": 4, "num_experts_per_token": 2,
        "moe_intermediate_size": 32, "num_shared_experts": 1,
        "linear_attn_config": {"num_heads": 2, "head_dim": 16, "short_conv_kernel_size": 3, "kda_layers": [1, 2, 4],
                               "full_attn_layers": [3]}}
"""Kimi Linear: KDA layers 0, 1 and 3, MLA layer 2 (1-based lists, as published), the first layer dense."""
GLM_MOE = {"n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 32,
           "first_k_dense_replace": 1, "head_dim": 16}
DSA = {"index_n_heads": 4, "index_head_dim": 16}
"""GLM-5's DSA indexer (glm_moe_dsa): the first variant alternates full and shared indexer layers (index_topk_freq 2),
the second runs the indexer in every layer (the class default)."""
FALCON_H1 = {"mamba_d_ssm": 96, "mamba_n_heads": 4, "mamba_d_state": 16, "mamba_chunk_size": 32}
NEMOTRON_H = {"head_dim": 16, "mamba_num_heads": 4, "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 16,
              "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
              "moe_shared_expert_intermediate_size": 48}
"""Nemotron-H: the variants read the published hybrid_override_pattern and transformers' layers_block_type, flip the
biases and the LatentMoE projections, and drop the experts."""
JAMBA = {"num_experts": 4, "num_experts_per_tok": 2, "mamba_d_state": 8, "expert_layer_period": 2,
         "expert_layer_offset": 1}
GRANITE_HYBRID = {"num_hidden_layers": 3, "layer_types": ["mamba", "attention", "mamba"], "mamba_n_heads": 4,
                  "mamba_d_state": 16, "shared_intermediate_size": 48}
DSV4 = {"num_hidden_layers": 4, "head_dim": 16, "q_lora_rank": 24, "o_groups": 2, "o_lora_rank": 16,
        "index_n_heads": 4, "index_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "moe_intermediate_size": 32, "qk_rope_head_dim": 8}
"""DeepSeek-V4 (dsv4.py): the published compress_ratios (sliding, CSA and HCA layers) with 3 hash-routed layers and
4 streams; the config class's default layer types (two HCA, then CSA / HCA) with 2 streams and other rates."""

CONFIGS: dict[str, list[dict[str, Any]]] = {
    "llama": [{}, {"attention_bias": True, "mlp_bias": True}],
    "mistral": [{}],
    "granite": [{}],
    "smollm3": [{}, {"tie_word_embeddings": False}],
    "mixtral": [{"num_local_experts": 4, "num_experts_per_tok": 2}],
    "phimoe": [{"num_local_experts": 4, "num_experts_per_tok": 2},
               {"num_local_experts": 4, "num_experts_per_tok": 2, "attention_bias": True,
                "lm_head_bias": True}],
    "qwen2": [{}],
    "qwen2_moe": [{**MOE, "shared_expert_intermediate_size": 96}],
    "qwen2_vl_text": [{}],
    "qwen2_5_vl_text": [{}],
    "qwen3": [{"head_dim": 16}],
    "qwen3_moe": [{**MOE, "head_dim": 16}],
    "qwen3_vl_text": [{"head_dim": 16}],
    "qwen3_vl_moe_text": [{**MOE, "head_dim": 16}],
    "phi3": [{}],
    "phi": [{}],
    "falcon": [{"new_decoder_architecture": False, "multi_query": True},
               {"new_decoder_architecture": True, "num_kv_heads": 2}, {"bias": True, "multi_query": True}],
    "gpt_neox": [{}, {"attention_bias": False}],
    "starcoder2": [{}, {"use_bias": False}],
    "stablelm": [{}, {"use_qkv_bias": True}],
    "olmo": [{}],
    "olmo2": [{}],
    "olmoe": [{"num_experts": 4, "num_experts_per_tok": 2}],  # the experts are intermediate_size wide
    "olmo3": [{}],
    "cohere": [{}],
    "cohere2": [{}],
    "gemma": [{"head_dim": 16}],
    "gemma2": [{"head_dim": 16}],
    "gemma3": [{"head_dim": 16}],
    "gemma3_text": [{"head_dim": 16}],
    "deepseek_v2": [{**MLA, "q_lora_rank": None}, {**MLA, "q_lora_rank": 48, "attention_bias": True}],
    "deepseek_v3": [{**MLA, "q_lora_rank": 48}, {**MLA, "q_lora_rank": None, "attention_bias": True,
                                                 "first_k_dense_replace": 0, "n_shared_experts": 2}],
    "glm4_moe_lite": [{**MLA, "q_lora_rank": 48}, {**MLA, "q_lora_rank": None, "attention_bias": True,
                                                   "mlp_layer_types": ["sparse", "dense"], "n_shared_experts": 2}],
    "glm_moe_dsa": [{**MLA, **DSA, "q_lora_rank": 48, "num_hidden_layers": 4, "index_topk_freq": 2,
                     "index_skip_topk_offset": 1},
                    {**MLA, **DSA, "q_lora_rank": 24, "attention_bias": True, "first_k_dense_replace": 0,
                     "n_shared_experts": 2, "index_head_dim": 8}],
    "minimax_m2": [{"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16},
                   {"num_local_experts": 8, "num_experts_per_tok": 2, "head_dim": 8, "num_key_value_heads": 4}],
    "gpt_oss": [{"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16},
                {"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16, "attention_bias": False}],
    "glm4": [{}, {"attention_bias": False}],
    "glm4_moe": [{**GLM_MOE, "use_qk_norm": False}, {**GLM_MOE, "use_qk_norm": True, "attention_bias": True,
                                                     "first_k_dense_replace": 0, "n_shared_experts": 2}],
    "seed_oss": [{"head_dim": 16}, {"head_dim": 16, "attention_bias": False, "attention_out_bias": True,
                                    "mlp_bias": True}],
    "hunyuan_v1_dense": [{"head_dim": 16}, {"head_dim": 16, "attention_bias": True}],
    "apertus": [{}, {"hidden_act": "relu2", "attention_bias": True}],
    "arcee": [{}, {"attention_bias": True, "mlp_bias": True}],
    "nemotron": [{"head_dim": 16}, {"head_dim": 16, "attention_bias": True, "mlp_bias": True}],
    "exaone4": [{}],
    "gpt2": [{}, {"n_inner": 96, "tie_word_embeddings": False}],
    "gptj": [{"rotary_dim": 8}, {"rotary_dim": 8, "n_inner": 96, "tie_word_embeddings": True}],
    "mpt": [{}, {"no_bias": False, "tie_word_embeddings": False}],
    "llama4_text": [{**LLAMA4, "interleave_moe_layer_step": 2},
                    {**LLAMA4, "moe_layers": [0, 2], "num_hidden_layers": 3, "attention_bias": True},
                    {**LLAMA4, "num_local_experts": 3, "use_qk_norm": False}],
    "gemma4_text": [{**GEMMA4, "layer_types": ["sliding_attention", "full_attention"]},
                    {**GEMMA4, "num_hidden_layers": 3, "attention_k_eq_v": True, "num_global_key_value_heads": 1,
                     "attention_bias": True, "layer_types": ["sliding_attention", "full_attention", "full_attention"]},
                    {**GEMMA4, **GEMMA4_MOE, "attention_k_eq_v": True, "num_global_key_value_heads": 1,
                     "layer_types": ["sliding_attention", "full_attention"]},
                    {**GEMMA4, **GEMMA4_MOE, "num_hidden_layers": 3, "tie_word_embeddings": False,
                     "layer_types": ["full_attention", "sliding_attention", "full_attention"]},
                    {**GEMMA4_SMALL_MODELS, "hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 200},
                    {**GEMMA4_SMALL_MODELS, "hidden_size_per_layer_input": 0, "use_double_wide_mlp": False,
                     "num_kv_shared_layers": 3, "attention_k_eq_v": True, "num_global_key_value_heads": 1},
                    {**GEMMA4_SMALL_MODELS}],
    "gemma4_unified_text": [{"head_dim": 16, "global_head_dim": 32, "layer_types": ["sliding_attention",
                                                                                   "full_attention"]},
                            {"head_dim": 16, "global_head_dim": 32, "num_hidden_layers": 3, "attention_k_eq_v": True,
                             "num_global_key_value_heads": 1, "attention_bias": True, "tie_word_embeddings": False,
                             "layer_types": ["sliding_attention", "full_attention", "full_attention"]},
                            {**GEMMA4_SMALL_MODELS, "num_kv_shared_layers": 3}],
    "gemma3n_text": [{**GEMMA3N, "num_hidden_layers": 5, "intermediate_size": [96, 128, 96, 64, 96],
                      "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                                      "full_attention"]},
                     {**GEMMA3N, "altup_num_inputs": 2, "num_kv_shared_layers": 0, "attention_bias": True,
                      "laurel_rank": 8, "tie_word_embeddings": False},
                     {**GEMMA3N, "num_hidden_layers": 4, "num_kv_shared_layers": 2,
                      "activation_sparsity_pattern": [0.95, 0.95, 0.0, 0.0],
                      "layer_types": ["sliding_attention", "full_attention"] * 2}],
    "falcon_h1": [{**FALCON_H1, "head_dim": 16},
                  {**FALCON_H1, "head_dim": 16, "mamba_d_ssm": None, "mamba_n_heads": 8, "mamba_n_groups": 2,
                   "mamba_rms_norm": True, "mamba_proj_bias": True, "projectors_bias": True, "attention_bias": True,
                   "mlp_bias": True, "tie_word_embeddings": True}],
    "nemotron_h": [{**NEMOTRON_H, "hybrid_override_pattern": "ME*-"},
                   {**NEMOTRON_H, "layers_block_type": ["mamba", "moe", "attention", "moe"], "moe_latent_size": 16,
                    "use_bias": True, "mlp_bias": True, "n_groups": 4},
                   {**NEMOTRON_H, "hybrid_override_pattern": "M*-", "n_routed_experts": 0}],
    "jamba": [{**JAMBA, "num_hidden_layers": 4, "attn_layer_period": 2, "attn_layer_offset": 1},
              {**JAMBA, "num_hidden_layers": 3, "num_experts": 1, "mamba_proj_bias": True, "mamba_dt_rank": 6}],
    "granitemoehybrid": [{**GRANITE_HYBRID, "num_local_experts": 4, "num_experts_per_tok": 2},
                         {**GRANITE_HYBRID, "num_local_experts": 0, "attention_bias": True, "mamba_n_groups": 2,
                          "mamba_proj_bias": True}],
    "lfm2": [{"full_attn_idxs": [1]},
             {"layer_types": ["conv", "conv", "full_attention"], "num_hidden_layers": 3, "conv_bias": True,
              "block_ffn_dim_multiplier": 1.5, "block_multiple_of": 32},
             {"full_attn_idxs": [0], "block_auto_adjust_ff_dim": False, "tie_word_embeddings": False}],
    "lfm2_moe": [{"layer_types": ["conv", "full_attention", "conv"], "num_hidden_layers": 3, "num_dense_layers": 1,
                  "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32},
                 {"layer_types": ["full_attention", "conv"], "num_dense_layers": 0, "num_experts": 8,
                  "num_experts_per_tok": 2, "moe_intermediate_size": 16, "conv_bias": True}],
    "mamba": [{"state_size": 8}, {"state_size": 4, "expand": 3, "use_bias": True, "use_conv_bias": False,
                                  "time_step_rank": 6, "tie_word_embeddings": False}],
    "qwen3_next": [{**GDN, **QWEN_MOE}, {**GDN, "num_experts": 0, "attention_bias": True},
                   {**GDN, **QWEN_MOE, "decoder_sparse_step": 2, "mlp_only_layers": [3],
                    "layer_types": ["linear_attention", "full_attention", "linear_attention", "full_attention"]}],
    "qwen3_5_text": [{**GDN}, {**GDN, "tie_word_embeddings": True, "layer_types": ["full_attention",
                                                                                 "linear_attention"] * 2}],
    "qwen3_5_moe_text": [{**GDN, **QWEN_MOE}],
    "dbrx": [{"d_model": 64, "attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0}, "ffn_config": DBRX_FFN},
             {"d_model": 64, "attn_config": {"kv_n_heads": 4, "rope_theta": 10000.0},
              "ffn_config": {**DBRX_FFN, "moe_num_experts": 8, "ffn_hidden_size": 48}}],
    "ministral3": [{"head_dim": 16}, {"head_dim": 8, "tie_word_embeddings": True}],
    "mistral4": [{**MLA, "q_lora_rank": 48, "first_k_dense_replace": 0},
                 {**MLA, "q_lora_rank": None, "attention_bias": True, "n_shared_experts": 2}],
    "afmoe": [{**AFMOE}, {**AFMOE, "attention_bias": True, "num_dense_layers": 0, "num_shared_experts": 2}],
    "kimi_linear": [{**KIMI, "first_k_dense_replace": 1},
                    {**KIMI, "q_lora_rank": 24, "attention_bias": True, "first_k_dense_replace": 2,
                     "num_shared_experts": 2,
                     "linear_attn_config": {"num_heads": 4, "head_dim": 8, "kda_layers": [2, 3, 4],
                                            "full_attn_layers": [1]}}],
    "glm4v_text": [{"head_dim": 16}],
    "mllama_text_model": [{"cross_attention_layers": [1]},
                          {"num_hidden_layers": 3, "cross_attention_layers": [0, 2], "num_key_value_heads": 4}],
    "paddleocr_vl_text": [{"head_dim": 16}, {"head_dim": 8, "use_bias": True, "tie_word_embeddings": False}],
    "deepseek_v4": [{**DSV4, "compress_ratios": [0, 4, 128, 4, 0], "num_hash_layers": 3},
                    {**DSV4, "hc_mult": 2, "compress_rates": {"compressed_sparse_attention": 2,
                                                              "heavily_compressed_attention": 8}}],
}
"""Per family: config.json fields beside SMALL, one model each (the variants flip the fields a row reads)."""


def _hf_config(model_type: str, fields: dict[str, Any]) -> Any:
    small = {k: v for k, v in SMALL.items() if k not in UNREAD.get(model_type, ())}
    if model_type == "gemma3":  # the multimodal config nests the decoder
        return transformers.AutoConfig.for_model("gemma3", text_config={**small, **fields}).text_config
    return transformers.AutoConfig.for_model(model_type, **{**small, **fields})


BARE_DECODERS = {"paddleocr_vl_text": "PaddleOCRTextModel", "mllama_text_model": "MllamaForCausalLM"}
"""Decoders that only exist inside a multimodal model (no Auto class maps their text config): the class to build."""


def _meta_model(config: Any) -> Any:
    """The CausalLM of ``config`` on the meta device; the bare decoder for a text config that has none."""
    with torch.device("meta"):
        if config.model_type in BARE_DECODERS:
            return getattr(transformers, BARE_DECODERS[config.model_type])._from_config(config)
        try:
            return transformers.AutoModelForCausalLM.from_config(config)
        except ValueError:
            return transformers.AutoModel.from_config(config)


def test_every_family_row_has_a_model_built_here():
    """Rows read from a checkpoint's own modelling code (``remote_code``) are proven in test_coverage_remote.py."""
    assert set(CONFIGS) == {t for t, row in FAMILIES.items() if not row.remote_code}


@pytest.mark.parametrize("model_type, fields",
                         [(t, f) for t, variants in CONFIGS.items() for f in variants],
                         ids=[f"{t}-{i}" for t, variants in CONFIGS.items() for i in range(len(variants))])
def test_family_row_matches_transformers(model_type: str, fields: dict[str, Any]) -> None:
    config = _hf_config(model_type, fields)
    model = _meta_model(config)
    real = {name: p.numel() for name, p in model.named_parameters()}
    written = config.to_dict()  # what save_pretrained writes as config.json
    arch = Architecture.from_config("test/model", "model-config", written)
    expected = sum(real.values()) + (0 if any(n.endswith(arch.layout.lm_head_name + ".weight") for n in real)
                                     or arch.tie_word_embeddings else arch.vocab_size * arch.hidden_size)
    assert arch.family is FAMILIES[model_type]
    assert arch.total_params == expected
    if names_checked(arch) and hasattr(model, arch.layout.lm_head_name):
        assert dict(named_parameters(arch)) == real


@pytest.mark.parametrize("fields", CONFIGS["gemma4_text"], ids=lambda f: f"gemma4_text-published-{len(f)}")
def test_gemma4_published_keys_size_the_same_model(fields: dict[str, Any]) -> None:
    """A published Gemma 4 config.json names global_head_dim / num_global_key_value_heads; save_pretrained (5.24)
    writes per_layer_config instead. Both read the same sizes: the model built from the published keys."""
    config = _hf_config("gemma4_text", fields)
    model = _meta_model(config)
    written = {k: v for k, v in config.to_dict().items() if k != "per_layer_config"}
    written.update({k: fields[k] for k in ("global_head_dim", "num_global_key_value_heads") if k in fields})
    arch = Architecture.from_config("test/model", "model-config", written)
    assert arch.total_params == sum(p.numel() for p in model.parameters())


def test_lfm2_published_keys_size_the_same_model() -> None:
    """A published LFM2 config.json names the MLP width block_ff_dim and the tie tie_embedding, which Lfm2Config
    reads as intermediate_size and tie_word_embeddings (the published keys win)."""
    published = {**SMALL, "model_type": "lfm2", "full_attn_idxs": [1], "block_ff_dim": 96, "tie_embedding": False}
    model = _meta_model(_hf_config("lfm2", {k: v for k, v in published.items() if k != "model_type"}))
    arch = Architecture.from_config("test/model", "model-config", published)
    assert arch.intermediate_size == 96 and not arch.tie_word_embeddings
    assert arch.total_params == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("fields", CONFIGS["kimi_linear"], ids=lambda f: f"kimi_linear-published-{len(f)}")
def test_kimi_linear_published_keys_size_the_same_model(fields: dict[str, Any]) -> None:
    """A published Kimi Linear config.json holds the KDA sizes and the layer lists in linear_attn_config and names no
    layer_types / mlp_layer_types; save_pretrained (5.24) writes those lists and linear_head_dim / linear_num_heads
    too. Both read the same model: the one transformers builds."""
    config = _hf_config("kimi_linear", fields)
    model = _meta_model(config)
    written = {k: v for k, v in config.to_dict().items()
               if k not in ("layer_types", "mlp_layer_types", "linear_head_dim", "linear_num_heads",
                            "linear_conv_kernel_dim")}
    arch = Architecture.from_config("test/model", "model-config", {**written, **fields})
    assert arch.mixer_kinds == ("kda",)
    assert arch.total_params == sum(p.numel() for p in model.parameters())
