"""Every tower (vision or audio) and projector row against transformers 5.24: a tiny full multimodal model of each
family is built on the meta device (no memory, no weights), and axlint's total from the same config.json (decoder +
``extra_parameters``) must equal its ``numel`` sum; every Linear axlint lays out for the tower and projector (what
LoRA targets are matched against) must be an ``nn.Linear`` at that path in the real model, and every
``nn.Linear`` of the real tower and projector must be among them."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture
from axlint.architectures.vision import PROJECTORS, TOWER_ALIASES, TOWERS
from tests.catalog_models import meta_model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from transformers.quantizers.base import HfQuantizer  # noqa: E402
from transformers.quantizers.quantizers_utils import should_convert_module  # noqa: E402

TEXT = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 128, "head_dim": 16,
        "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
VIT = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3, "num_attention_heads": 2,
       "image_size": 32, "patch_size": 8}

LLAMA4_TEXT = {**TEXT, "model_type": "llama4_text", "intermediate_size": 32, "intermediate_size_mlp": 96,
               "num_local_experts": 4, "num_experts_per_tok": 1}
LLAMA4_VISION = {"model_type": "llama4_vision_model", "vision_output_dim": 40, "projector_input_dim": 24,
                 "projector_output_dim": 40, "pixel_shuffle_ratio": 0.5}

QWEN3_5_TEXT = {**TEXT, "layer_types": ["full_attention", "linear_attention"], "linear_num_key_heads": 2,
                "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 16}
"""A Qwen3.5 decoder whose first layer is full attention (the module paths checked below), the second Gated DeltaNet."""
QWEN3_5_VISION = {"model_type": "qwen3_5_vision", "depth": 2, "hidden_size": 32, "intermediate_size": 48,
                  "num_heads": 2, "patch_size": 8, "out_hidden_size": 64, "num_position_embeddings": 16}
GEMMA4_TEXT = {**TEXT, "model_type": "gemma4_text", "global_head_dim": 32, "hidden_size_per_layer_input": 0,
               "layer_types": ["sliding_attention", "full_attention"]}
GEMMA4_VISION = {**VIT, "model_type": "gemma4_vision", "head_dim": 16, "num_key_value_heads": 2,
                 "position_embedding_size": 24}
GEMMA4_UNIFIED_TEXT = {**TEXT, "model_type": "gemma4_unified_text", "global_head_dim": 32,
                       "layer_types": ["sliding_attention", "full_attention"]}
GEMMA4_UNIFIED_VISION = {"model_type": "gemma4_unified_vision", "mm_embed_dim": 40, "mm_posemb_size": 12,
                         "patch_size": 2, "pooling_kernel_size": 3, "output_proj_dims": 40}
"""Gemma 4 12B (encoder-free): the vision embedder's width apart from the decoder's; the second variant merges 2 x 2
patches of 4 pixels and adds the audio embedder (raw samples -> text width)."""
GEMMA4_AUDIO = {"model_type": "gemma4_audio", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
                "subsampling_conv_channels": [8, 4], "output_proj_dims": 48}
"""Gemma 4: the variants flip heads x head_dim against the width (32 = 2 x 16, then 4 x 16 with 2 kv heads), the
clipped Linears' buffers and the standardize buffers, and the MoE decoder (the 26B-A4B); with an audio encoder (the
E2B / E4B) its width apart from the decoder's and the embedder's, its channels, heads and kernel."""
VOXTRAL_AUDIO = {"model_type": "voxtral_encoder", "hidden_size": 32, "intermediate_size": 128, "num_hidden_layers": 3,
                 "num_attention_heads": 2, "num_mel_bins": 16, "max_source_positions": 30}
"""Voxtral's Whisper encoder (audio_config); its projector reads intermediate_size (4 frames x 32 here)."""
GLM4V_VISION = {"depth": 2, "hidden_size": 32, "intermediate_size": 40, "num_heads": 2, "out_hidden_size": 64,
                "image_size": 32, "patch_size": 8}
"""GLM-4.1V / 4.6V: the blocks' MLP is out_hidden_size wide, the merger's intermediate_size."""
MLLAMA_TEXT = {**TEXT, "model_type": "mllama_text_model", "cross_attention_layers": [1]}
MLLAMA_VISION = {"model_type": "mllama_vision_model", "hidden_size": 32, "intermediate_size": 48,
                 "num_hidden_layers": 2, "num_global_layers": 1, "attention_heads": 2, "image_size": 56,
                 "patch_size": 14, "vision_output_dim": 96, "intermediate_layers_indices": [0, 1]}
"""Llama 3.2 Vision: a cross-attention layer among self-attention ones, the tiled position tables, the global stack;
the variant moves the cross-attention layers and shrinks the tiles and aspect ratios."""
GEMMA3N_TEXT = {**TEXT, "model_type": "gemma3n_text", "num_kv_shared_layers": 0, "hidden_size_per_layer_input": 8,
                "vocab_size_per_layer_input": 200, "laurel_rank": 4,
                "layer_types": ["sliding_attention", "full_attention"]}
GEMMA3N_AUDIO = {"model_type": "gemma3n_audio", "hidden_size": 32, "conf_num_hidden_layers": 2,
                 "conf_num_attention_heads": 4, "sscp_conv_channel_size": [8, 4], "input_feat_size": 16,
                 "vocab_size": 24}
"""Gemma 3n: timm's MobileNet-V5 as transformers builds it by name (the 300M encoder, on the meta device), a width of
the embedder apart from it, a small conformer (its own width, channels, mel bins, hard-token vocabulary); the
variant leaves audio_config out (the model builds the default encoder) and flips the audio kernels and strides."""
LFM2_TEXT = {**TEXT, "model_type": "lfm2", "full_attn_idxs": [0]}
SIGLIP2_VISION = {**VIT, "model_type": "siglip2_vision_model", "num_patches": 16, "vision_use_head": False}
"""LFM2-VL: an LFM2 decoder whose first layer is attention; the variant turns the SigLIP2 head, the projector's
LayerNorm and its biases over."""

CASES: dict[str, list[dict[str, Any]]] = {
    "gemma3": [dict(text_config={**TEXT, "model_type": "gemma3_text"}, mm_tokens_per_image=4,
                    vision_config={**VIT, "model_type": "siglip_vision_model", "vision_use_head": False}),
               dict(text_config={**TEXT, "model_type": "gemma3_text"}, mm_tokens_per_image=4,
                    vision_config={**VIT, "model_type": "siglip_vision_model", "vision_use_head": True})],
    "llava": [dict(text_config={**TEXT, "model_type": "llama"}, vision_config={**VIT, "model_type": "clip_vision_model"}),
              dict(text_config={**TEXT, "model_type": "llama"}, vision_feature_layer=[-2, -1],
                   multimodal_projector_bias=False, vision_config={**VIT, "model_type": "clip_vision_model"}),
              dict(text_config={**TEXT, "model_type": "mistral"}, vision_feature_layer=-1,
                   vision_config={**VIT, "model_type": "pixtral", "head_dim": 16})],
    "mistral3": [dict(text_config={**TEXT, "model_type": "mistral"}, tie_word_embeddings=False,
                      vision_config={**VIT, "model_type": "pixtral", "head_dim": 16}),
                 dict(text_config={**TEXT, "model_type": "mistral"}, tie_word_embeddings=False,
                      multimodal_projector_bias=True, spatial_merge_size=3,
                      vision_config={**VIT, "model_type": "pixtral", "head_dim": 16}),
                 dict(text_config={**TEXT, "model_type": "ministral3"}, tie_word_embeddings=False,
                      vision_config={**VIT, "model_type": "pixtral", "head_dim": 16})],
    "qwen2_vl": [dict(text_config={**TEXT, "model_type": "qwen2_vl_text"},
                      vision_config={"depth": 2, "embed_dim": 32, "hidden_size": 64, "mlp_ratio": 3, "num_heads": 2})],
    "qwen2_5_vl": [dict(text_config={**TEXT, "model_type": "qwen2_5_vl_text"},
                        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2,
                                       "out_hidden_size": 64, "fullatt_block_indexes": [1]})],
    "smolvlm": [dict(text_config={**TEXT, "model_type": "llama"}, vision_config={**VIT, "model_type": "smolvlm_vision"})],
    "idefics3": [dict(text_config={**TEXT, "model_type": "llama"},
                      vision_config={**VIT, "model_type": "idefics3_vision"})],
    "llama4": [dict(text_config=LLAMA4_TEXT, vision_config={**VIT, **LLAMA4_VISION}),
               dict(text_config={**LLAMA4_TEXT, "interleave_moe_layer_step": 2},
                    vision_config={**VIT, **LLAMA4_VISION, "patch_size": 16, "projector_input_dim": 20,
                                   "projector_output_dim": 36, "vision_output_dim": 36})],
    "qwen3_5": [dict(text_config={**QWEN3_5_TEXT, "model_type": "qwen3_5_text"}, vision_config=QWEN3_5_VISION),
                dict(text_config={**QWEN3_5_TEXT, "model_type": "qwen3_5_text"},
                     vision_config={**QWEN3_5_VISION, "spatial_merge_size": 1, "num_position_embeddings": 9})],
    "qwen3_vl": [dict(text_config={**TEXT, "model_type": "qwen3_vl_text"},
                      vision_config={**QWEN3_5_VISION, "model_type": "qwen3_vl_vision"}),
                 dict(text_config={**TEXT, "model_type": "qwen3_vl_text"},
                      vision_config={**QWEN3_5_VISION, "model_type": "qwen3_vl", "deepstack_visual_indexes": [0]})],
    "qwen3_vl_moe": [dict(text_config={**TEXT, "model_type": "qwen3_vl_moe_text", "num_experts": 4,
                                       "num_experts_per_tok": 2, "moe_intermediate_size": 32},
                          vision_config={**QWEN3_5_VISION, "model_type": "qwen3_vl_moe_vision"})],
    "qwen3_5_moe": [dict(text_config={**QWEN3_5_TEXT, "model_type": "qwen3_5_moe_text", "num_experts": 4,
                                      "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                      "shared_expert_intermediate_size": 48},
                         vision_config={**QWEN3_5_VISION, "model_type": "qwen3_5_moe_vision"})],
    "gemma4": [dict(text_config=GEMMA4_TEXT, vision_config=GEMMA4_VISION),
               dict(text_config={**GEMMA4_TEXT, "enable_moe_block": True, "num_experts": 4, "top_k_experts": 2,
                                 "moe_intermediate_size": 32, "attention_k_eq_v": True,
                                 "num_global_key_value_heads": 1},
                    vision_config={**GEMMA4_VISION, "num_attention_heads": 4, "use_clipped_linears": True,
                                   "standardize": True}),
               dict(text_config=GEMMA4_TEXT, vision_config=GEMMA4_VISION, audio_config=GEMMA4_AUDIO),
               dict(text_config=GEMMA4_TEXT, vision_config=GEMMA4_VISION,
                    audio_config={**GEMMA4_AUDIO, "use_clipped_linears": False, "num_attention_heads": 2,
                                  "subsampling_conv_channels": [16, 12], "conv_kernel_size": 3})],
    "gemma4_unified": [dict(text_config=GEMMA4_UNIFIED_TEXT, vision_config=GEMMA4_UNIFIED_VISION),
                       dict(text_config=GEMMA4_UNIFIED_TEXT, audio_config={"audio_embed_dim": 24},
                            vision_config={**GEMMA4_UNIFIED_VISION, "patch_size": 4, "pooling_kernel_size": 2,
                                           "output_proj_dims": 40})],
    "voxtral": [dict(text_config={**TEXT, "model_type": "llama"}, audio_config=VOXTRAL_AUDIO),
                dict(text_config={**TEXT, "model_type": "llama"},
                     audio_config={**VOXTRAL_AUDIO, "intermediate_size": 96, "num_mel_bins": 8})],
    "glm4v": [dict(text_config={**TEXT, "model_type": "glm4v_text"}, vision_config=GLM4V_VISION),
              dict(text_config={**TEXT, "model_type": "glm4v_text", "num_key_value_heads": 4},
                   vision_config={**GLM4V_VISION, "spatial_merge_size": 1, "out_hidden_size": 48, "image_size": 48,
                                  "attention_bias": True})],
    "glm46v": [dict(text_config={**TEXT, "model_type": "glm4v_text"},
                    vision_config={**GLM4V_VISION, "model_type": "glm4v_vision"})],
    "internvl": [dict(text_config={**TEXT, "model_type": "qwen3"}, tie_word_embeddings=False,
                      vision_config={**VIT, "model_type": "internvl_vision", "attention_bias": True}),
                 dict(text_config={**TEXT, "model_type": "qwen2"}, downsample_ratio=0.25,
                      vision_config={**VIT, "model_type": "internvl_vision", "image_size": [32, 32],
                                     "patch_size": [8, 8]})],
    "mllama": [dict(text_config=MLLAMA_TEXT, vision_config=MLLAMA_VISION),
               dict(text_config={**MLLAMA_TEXT, "cross_attention_layers": [1, 2], "num_hidden_layers": 3},
                    vision_config={**MLLAMA_VISION, "image_size": 42, "max_num_tiles": 2, "num_global_layers": 2,
                                   "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]})],
    "lfm2_vl": [dict(text_config=LFM2_TEXT, vision_config=SIGLIP2_VISION, projector_hidden_size=40),
                dict(text_config=LFM2_TEXT, projector_hidden_size=24, projector_bias=False, downsample_factor=1,
                     projector_use_layernorm=False,
                     vision_config={**SIGLIP2_VISION, "vision_use_head": True, "num_patches": 9})],
    "gemma3n": [dict(text_config=GEMMA3N_TEXT, vision_config={"model_type": "gemma3n_vision", "hidden_size": 48},
                     audio_config=GEMMA3N_AUDIO),
                dict(text_config=GEMMA3N_TEXT, vision_config={"model_type": "gemma3n_vision", "vocab_size": 16}),
                dict(text_config=GEMMA3N_TEXT, vision_config={"model_type": "gemma3n_vision"},
                     audio_config={**GEMMA3N_AUDIO, "conf_conv_kernel_size": 3, "input_feat_size": 20,
                                   "sscp_conv_kernel_size": [[3, 3], [3, 5]],
                                   "sscp_conv_stride_size": [[2, 2], [1, 3]]})],
    "paddleocr_vl": [dict(text_config={**TEXT, "model_type": "paddleocr_vl_text"},
                          vision_config={**VIT, "model_type": "paddleocr_vl_vision"}),
                     dict(text_config={**TEXT, "model_type": "paddleocr_vl_text", "use_bias": True,
                                       "tie_word_embeddings": False}, tie_word_embeddings=False,
                          vision_config={**VIT, "model_type": "paddleocr_vl_vision", "spatial_merge_size": 1}),
                     dict(text_config={**TEXT, "model_type": "paddleocr_vl_text", "tie_word_embeddings": False},
                          tie_word_embeddings=True, vision_config={**VIT, "model_type": "paddleocr_vl_vision"})],
}
"""Per multimodal model_type: tiny configs, one model each (the variants flip what a row reads; the last PaddleOCR-VL
one ties the output by the multimodal config's flag against its text_config's, as transformers 5.24 does)."""

VISION_ROOTS = ("model.vision_tower", "model.visual", "model.vision_model", "model.multi_modal_projector",
                "model.connector", "vision_model.", "multi_modal_projector.", "model.embed_vision",
                "model.embed_audio", "model.audio_tower", "model.projector")


def _build(model_type: str, fields: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The multimodal model of ``fields`` on the meta device, and its config as save_pretrained writes it."""
    model = meta_model({"model_type": model_type, **fields})
    return model, model.config.to_dict()


def _cases() -> list[tuple[str, dict[str, Any]]]:
    return [(t, f) for t, variants in CASES.items() for f in variants]


def _tower_config(model_type: str, fields: dict[str, Any]) -> dict[str, Any]:
    return fields[PROJECTORS[model_type].tower_key]


def test_every_row_has_a_model_built_here():
    kinds = {_tower_config(t, f).get("model_type", t) for t, f in _cases()}
    built_towers = {TOWER_ALIASES.get(kind, kind) for kind in kinds}
    assert set(CASES) == set(PROJECTORS)
    assert built_towers == set(TOWERS)


@pytest.mark.parametrize("model_type, fields", _cases(),
                         ids=[f"{t}-{i}" for t, variants in CASES.items() for i in range(len(variants))])
def test_vision_rows_match_transformers(model_type: str, fields: dict[str, Any]) -> None:
    model, written = _build(model_type, fields)
    arch = Architecture.from_config("test/model", "model-config", written)
    assert arch.unsized_vision is None and arch.unsized_decoder is None
    real = sum(p.numel() for p in model.parameters())
    assert arch.total_params == real
    modules = dict(model.named_modules())
    laid_out = {lin.path: lin for lin in arch.vision_linears()}
    for path, lin in laid_out.items():
        module = modules.get(path)
        assert isinstance(module, torch.nn.Linear), path
        assert (module.in_features, module.out_features, module.bias is not None) == (lin.d_in, lin.d_out, lin.bias)
    real_linears = {p for p, m in modules.items() if isinstance(m, torch.nn.Linear) and p.startswith(VISION_ROOTS)}
    assert real_linears == set(laid_out)
    assert f"{arch.decoder_path}.layers.0.self_attn.q_proj" in modules
    # the names unfrozen_parameters patterns are matched against: real, and the parameters left unnamed lie under a
    # root that says so
    real_params = {name: p.numel() for name, p in model.named_parameters()}
    named = dict(arch.vision_part.named_parameters())
    assert {name: real_params.get(name) for name in named} == named
    roots = tuple(f"{root}." for root in arch.vision_part.partly_named_roots())
    unnamed = [n for n in real_params if n.startswith(VISION_ROOTS) and n not in named and not n.startswith(roots)]
    assert not unnamed
    # A bitsandbytes 4/8-bit load replaces every nn.Linear that its quantizer does not spare, the tower's included:
    # the estimate stores exactly the tower weights transformers' quantizer would convert.
    spared = HfQuantizer.get_modules_to_not_convert(model, None, model._keep_in_fp32_modules)
    converted = [p for p in real_linears if type(modules[p]) is torch.nn.Linear and should_convert_module(p, spared)]
    assert arch.tower_linear_params == sum(modules[p].weight.numel() for p in converted) > 0


@pytest.mark.parametrize("model_type", ["qwen2_vl", "qwen2_5_vl"])
def test_flat_qwen_configs_read_as_transformers_reads_them(model_type: str) -> None:
    """Qwen2-VL's published config.json is flat (the decoder's fields at the top level); transformers 5 takes them
    as its text_config, and so does axlint: the same total as the nested form, and as the model built from it."""
    fields = CASES[model_type][0]
    flat = {**fields["text_config"], "model_type": model_type, "vision_config": fields["vision_config"]}
    config = transformers.AutoConfig.for_model(model_type, **{k: v for k, v in flat.items() if k != "model_type"})
    assert config.text_config.model_type == f"{model_type}_text"
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    arch = Architecture.from_config("test/model", "model-config", flat)
    assert arch.decoder_type == f"{model_type}_text" and arch.multimodal
    assert arch.total_params == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("tower", sorted(TOWERS))
def test_tower_defaults_are_the_config_class_defaults(tower: str) -> None:
    """A published vision_config leaves out the keys at their default: the row's defaults are transformers'."""
    kind = {v: k for k, v in TOWER_ALIASES.items()}.get(tower, tower)
    defaults = transformers.AutoConfig.for_model(kind).to_dict()
    for key, default in TOWERS[tower].sizes.values():
        value = defaults[key]
        assert (value[0] if isinstance(value, list) else value) == default, (tower, key)  # [h, w]: square
    for key, value in TOWERS[tower].lays_out.items():
        assert defaults[key] == value, (tower, key)


@pytest.mark.parametrize("setting", [{"norm_type": "rms_norm"}, {"use_qk_norm": True}, {"use_mask_token": True},
                                     {"use_mean_pooling": False}])
def test_an_internvl_tower_the_row_does_not_lay_out_is_unsized(setting: dict[str, Any]) -> None:
    """The internvl_vision row lays out InternViT-300M (LayerNorms, no qk-norm, no mask token, mean pooling); a
    vision_config that sets another form is unsized, not counted as that one."""
    fields = CASES["internvl"][0]
    config = {"model_type": "internvl", **fields, "vision_config": {**fields["vision_config"], **setting}}
    assert Architecture.from_config("test/model", "model-config", config).unsized_vision == "internvl_vision"


def test_an_audio_tower_without_a_layout_is_unsized() -> None:
    """An audio encoder axlint does not lay out (an audio_config of another model_type than the row's
    ``AUDIO_TOWERS`` entry, or beside a projector row without an audio part) leaves the model unsized rather than
    counted without it."""
    fields = CASES["gemma4"][0]
    config = {"model_type": "gemma4", **fields, "audio_config": {"model_type": "gemma3n_audio"}}
    arch = Architecture.from_config("test/model", "model-config", config)
    assert arch.unsized_vision == "gemma4 audio tower"
    gemma3 = {"model_type": "gemma3", **CASES["gemma3"][0], "audio_config": {"model_type": "gemma4_audio"}}
    assert Architecture.from_config("test/model", "model-config", gemma3).unsized_vision == "gemma3 audio tower"
    without = Architecture.from_config("test/model", "model-config", {**config, "audio_config": None})
    assert without.unsized_vision is None
