"""Model types the loss/kernel plugins patch (Axolotl dispatches on the top-level ``config.model_type``).

``LIGER_MODEL_TYPES``: the keys of ``liger_kernel.transformers.monkey_patch.MODEL_TYPE_TO_APPLY_LIGER_FN`` in
liger-kernel 0.8.5 (tests/test_memory_liger_sync.py keeps this in sync with the installed file, parsed with ``ast``).
Axolotl excludes ``qwen3_5`` / ``qwen3_5_moe`` from that table but patches them itself, and adds ``jamba``
and ``granitemoe`` branches (Axolotl 0.18.0 ``integrations/liger/plugin.py``).
``CCE_MODEL_TYPES``: the 78 types of Axolotl's Cut Cross-Entropy fork README (Axolotl 0.18.0
``integrations/cut_cross_entropy/README.md``).
"""

LIGER_KERNEL_VERSION = "0.8.5"

LIGER_MODEL_TYPES = frozenset({
    "deepseek_v2", "deepseek_v3", "deepseek_v4", "exaone4", "falcon_h1", "gemma", "gemma2", "gemma3", "gemma3_text",
    "gemma4", "gemma4_text", "glm4", "glm4v", "glm4v_moe", "gpt_oss", "granite", "hunyuan_v1_dense", "hunyuan_v1_moe",
    "internvl", "llama", "llama4", "llama4_text", "llava", "ministral", "mistral", "mixtral", "mllama",
    "mllama_text_model", "muse_glimmer", "nemotron", "olmo2", "olmo3", "paligemma", "phi3", "pixtral", "qwen2",
    "qwen2_5_vl", "qwen2_5_vl_text", "qwen2_vl", "qwen2_vl_text", "qwen3", "qwen3_5", "qwen3_5_moe",
    "qwen3_5_moe_text", "qwen3_5_text", "qwen3_moe", "qwen3_next", "qwen3_vl", "qwen3_vl_moe", "qwen3_vl_moe_text",
    "qwen3_vl_text", "smollm3", "smolvlm",
})

# Axolotl-specific Liger branches on top of liger-kernel's table
AXOLOTL_LIGER_EXTRA_TYPES = frozenset({"jamba", "granitemoe"})

CCE_MODEL_TYPES = frozenset({
    "afmoe", "apertus", "arcee", "cohere", "cohere2", "cohere2_moe", "deepseek_v2", "deepseek_v3", "deepseek_v4",
    "exaone4", "exaone4_5", "exaone_moe", "gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text",
    "gemma4", "gemma4_text", "gemma4_unified", "gemma4_unified_text", "glm", "glm4", "glm4_moe", "glm4_moe_lite",
    "glm46v", "glm4v", "glm4v_moe", "glm_image", "glm_moe_dsa", "gpt_oss", "granite", "granitemoe",
    "granitemoehybrid", "granitemoeshared", "hunyuan_v1_dense", "hunyuan_v1_moe", "internvl", "kimi_linear", "lfm2",
    "lfm2_moe", "lfm2_vl", "llama", "llama4", "llama4_text", "llava", "minimax", "minimax_m2", "ministral",
    "ministral3", "mistral", "mistral3", "mistral4", "mixtral", "mllama", "nemotron_h", "olmo", "olmo2", "olmo3",
    "olmoe", "phi", "phi3", "phi4_multimodal", "qwen2", "qwen2_5_vl", "qwen2_moe", "qwen2_vl", "qwen3", "qwen3_5",
    "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_moe", "qwen3_next", "qwen3_vl", "qwen3_vl_moe",
    "seed_oss", "smollm3", "step3p5", "step3p7", "voxtral",
})


def liger_supports(model_type: str) -> bool:
    """Liger's RMSNorm / GLU / RoPE / FLCE patches apply to this model type."""
    return model_type in LIGER_MODEL_TYPES or model_type in AXOLOTL_LIGER_EXTRA_TYPES


def cce_supports(model_type: str) -> bool:
    return model_type in CCE_MODEL_TYPES
