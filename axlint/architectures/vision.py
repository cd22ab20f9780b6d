"""Vision and audio towers of multimodal models and their projectors: one row per layout, sized from config.json.

A multimodal config.json holds a decoder (``text_config``, or the decoder fields at the top level for Qwen2-VL's
flat configs) and a tower's config: ``vision_config``, or ``audio_config`` for a speech model whose projector row
says so (``Projector.tower_key``: Voxtral). The decoder is laid out by ``families.FAMILIES``; this module lays out
the rest: the tower (``TOWERS``, keyed by the tower's ``model_type``) and the projector that maps its output into
the decoder's width (``PROJECTORS``, keyed by the multimodal ``model_type``). A tower or projector without a row is
a part axlint cannot size (``Architecture.unsized_vision``), and the memory verdict is then unknown.

Each row was read from the ``__init__`` of the family's modules in transformers 5.24 and is checked against a
model built on the meta device in tests/test_vision.py (parameter totals, and the Linears' module paths):

- ``siglip_vision_model``: models/siglip/modeling_siglip.py (embeddings, encoder layer, post-norm, pooling head)
- ``clip_vision_model``: models/clip/modeling_clip.py (class token, pre-norm ``pre_layrnorm``, post-norm)
- ``pixtral``: models/pixtral/modeling_pixtral.py (no position table: 2-D rotary positions)
- ``qwen2_vl`` / ``qwen2_5_vl``: models/qwen2_vl/modeling_qwen2_vl.py, models/qwen2_5_vl/modeling_qwen2_5_vl.py
  (3-D patch convolution over ``temporal_patch_size`` frames, fused qkv, the ``merger`` inside the tower)
- ``smolvlm_vision`` / ``idefics3_vision``: models/smolvlm/modeling_smolvlm.py, models/idefics3/modeling_idefics3.py
- ``llama4_vision_model``: models/llama4/modeling_llama4.py (patch Linear, class token, pixel-shuffle adapter)
- ``qwen3_5_vision`` / ``qwen3_5_moe_vision``: models/qwen3_5/modeling_qwen3_5.py, models/qwen3_5_moe (learned
  position table of ``num_position_embeddings`` rows, the merger inside the tower); ``qwen3_vl`` / ``qwen3_vl_moe``
  (models/qwen3_vl, models/qwen3_vl_moe): the same tower, with deepstack mergers beside the merger
- ``siglip2_vision_model``: models/siglip2/modeling_siglip2.py (a patch Linear, a position table of num_patches)
- ``mllama_vision_model``: models/mllama/modeling_mllama.py (tiled position tables, a gated global stack)
- ``internvl_vision``: models/internvl/modeling_internvl.py (class token, split biased q/k/v, layer scales)
- ``glm4v``: models/glm4v/modeling_glm4v.py (3-D patch convolution, a position table, fused qkv, a gated MLP)
- ``paddleocr_vl_vision``: models/paddleocr_vl/modeling_paddleocr_vl.py (SigLIP's tower without its head)
- ``gemma4_vision``: models/gemma4/modeling_gemma4.py (patch Linear, x / y position tables, Linears wrapped in
  ``Gemma4ClippableLinear``, head-wise q/k norms, four norms per layer)
- ``voxtral_encoder`` (audio): models/voxtral/modeling_voxtral.py (Whisper's encoder: two 1-D convolutions over the
  log-mel frames, a position table, k_proj without a bias)
- projectors: models/gemma3/modeling_gemma3.py, models/llava/modeling_llava.py, models/mistral3/modeling_mistral3.py
  (RMSNorm, patch merger, two-layer MLP), the Qwen merger above, models/smolvlm (pixel-shuffle connector),
  models/llama4/modeling_llama4.py (one Linear), models/gemma4/modeling_gemma4.py (``embed_vision``: a norm without
  weight, then one Linear), models/voxtral/modeling_voxtral.py (two bias-free Linears), models/paddleocr_vl (a
  LayerNorm and two Linears over merged patches), models/glm4v (downsample convolution and a gated merger),
  models/internvl and models/lfm2_vl (a LayerNorm and two Linears over pixel-shuffled patches), models/mllama (one
  Linear).
- ``gemma4_unified_vision``: models/gemma4_unified/modeling_gemma4_unified.py (an encoder-free embedder: LayerNorms, a
  patch Linear over merged patches, x / y position tables; the model's audio embedder is one Linear)
- ``gemma3n_vision``: models/gemma3n/modeling_gemma3n.py builds it through models/timm_wrapper (TimmWrapperModel):
  timm's MobileNet-V5 encoder, counted whole by its architecture name (``Tower.timm_params``)
- audio encoders beside the vision tower, named by a projector row with an ``audio`` part: the conformers of
  ``audio.AUDIO_TOWERS`` (``gemma4_audio``, ``gemma3n_audio``)
- the Gemma 3n embedders: models/gemma3n/modeling_gemma3n.py (Gemma3nMultimodalEmbedder: embed_vision, embed_audio)

Besides the parameters, a row says how many tokens an image becomes inside the tower (``Tower.resolution``,
``Vision.image_tokens``), which the memory estimate sizes the tower's activations by (``memory.tower``). A run that
feeds audio to an audio tower is left unknown (``memory.facts.not_modelled``), and so is one that feeds images to a
tower whose tokens per image nothing bounds (no ``resolution``, or a dynamic one without an image size) or whose row
says what of that work the memory model leaves out (``Tower.image_work``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from math import prod
from typing import Any, Literal, Mapping

from axlint.architectures.audio import AUDIO_TOWERS
from axlint.architectures.linear import VisionLinear

Resolution = Literal["square", "tiles", "longest_edge", "smart_resize", "soft_tokens"]


@dataclass(frozen=True)
class Piece:
    """One module of a projector at ``name`` (below the projector's path): a "linear" (``nn.Linear``, a bias per
    ``bias``: True, False, or a top-level config.json key and its default), a "conv1d" (``nn.Conv1d``: d_out x d_in
    x ``taps`` weights, a bias per ``bias``), a bare "matrix" parameter, an "embedding" (``nn.Embedding``: a
    ``d_in`` x ``d_out`` table, sized and read as a matrix), a "conv" (a convolution: a ``d_in`` x
    ``d_out`` weight, the kernel's positions counted in ``d_in``, and a bias when ``bias`` is True; not an
    ``nn.Linear``), or a norm ("rmsnorm": weight; "layernorm": weight and bias) of width ``d_in``. Widths are products
    of ``Projector`` factors. ``when``: a top-level config.json key (and its default) without which the module is not
    built (LFM2-VL's projector_use_layernorm; ``audio_config``, a section, for an audio embedder). ``copies``: the
    module is built once per element of a list (where: "config" or "vision", key, the length of its default), at
    ``name`` with ``{i}`` the copy's index (Qwen3-VL's deepstack mergers, one per deepstack_visual_indexes entry)."""

    name: str
    kind: Literal["linear", "conv1d", "matrix", "embedding", "conv", "rmsnorm", "layernorm"]
    d_in: tuple[str, ...]
    d_out: tuple[str, ...] = ()
    bias: bool | tuple[str, bool] = False
    taps: int = 1
    when: tuple[str, bool] | None = None
    copies: tuple[str, str, int] | None = None


@dataclass(frozen=True)
class Tower:
    """The layout of one tower (vision, or audio: Voxtral's Whisper encoder).

    ``sizes``: where config.json's tower config (``vision_config``, ``audio_config``) holds each size, with the
    config class's default (transformers 5.24) for a key the published file leaves out; ``mlp_ratio`` stands in for
    an intermediate size that is ``hidden × ratio``. Module paths: the tower sits at ``path`` of the multimodal
    model (a projector row may name another), its layers at ``layer_path``; each layer holds the Linears
    ``attention_names`` (fused: one qkv Linear of width 3h, then the output) inside ``attention_module`` and
    ``mlp_names`` (gated: gate, up, down; plain: in, out) inside ``mlp_module`` (at the layer itself when None), and
    ``norms_per_layer`` norms of kind ``norm``. The attention Linears carry a bias per ``attention_bias``, but those
    named in ``unbiased`` never (Whisper's k_proj). Attention widths are h, or heads x head_dim (q, o) and kv_heads
    x head_dim (k, v) when the row reads a "head_dim" size; ``qk_norm``: a q_norm and a k_norm of head_dim weights
    in each attention. Outside the layers: the patch convolution when the row reads a "patch" size (with a bias per
    ``patch_bias``, over ``temporal`` frames when that size is read, over 3 channels when the row reads none), a
    learned position table (``positions``: "grid", one row per patch, plus one for a class token with
    ``class_token``; "table", the "positions" size's rows; "axial", one table of the "positions" size for x and one
    for y, 2 x positions x h; None without one), ``pre_norm`` / ``post_norm`` when named, and the attention-pooling
    ``head`` when ``head_key`` is true (SigLIP's ``vision_use_head``). ``patch_linear``: the patch embedding is an
    ``nn.Linear`` at this path (over channels x patch² inputs, x pool² when the row reads a "pool" size: patches
    merged before the Linear) instead of a convolution. A row without a "layers" size has no layers (an encoder-free
    embedder). ``pieces``: further modules of the tower below its path (Llama 4's pixel-shuffle adapter, Voxtral's
    convolutions), sized as a projector's are, with the tower's ``sizes`` as factors too.
    ``bias_key``: a vision_config key (and its default) that sets the q/k/v biases instead of ``attention_bias``,
    the output projection then biased by ``out_bias``. ``layer_scales``: learned per-channel scales of width h in
    each layer (InternViT's lambda_1 / lambda_2). ``global_stack``: a second stack of the same layers after the
    first (Mllama's ``global_transformer``): its layer path, the size of its layer count, and the number of scalar
    gates each of its layers adds. ``positions`` "tiled" (Mllama's precomputed embeddings): a gated table of
    (image / patch)² + 1 rows, the class token's included, a gated tile table of R rows of tiles x those rows x h,
    and the gated pre- and post-tile tables of R rows of tiles x h, R = len(``aspect_ratios``' list) + 1 (the key
    and the length of its default). ``lays_out``: vision_config values the row lays out (a key absent
    from the file reads as the value given); a file that sets another leaves the tower unsized
    (``unsized_part``). A size published as a list (an [h, w] pair) is read as its first element: square images
    and patches. ``timm_params``: the parameters of a timm backbone that transformers builds by name (TimmWrapperModel:
    ``timm.create_model(architecture, num_classes=0, **model_args)``), counted whole; the row's ``lays_out`` pins the
    architecture and ``model_args`` it was counted for. ``image_work``: what a run that feeds images to this tower
    does that the memory model does not size (``memory.facts.feeds_images``); None where nothing is said.
    ``resolution``: how an image becomes the tower's tokens (``Vision.image_tokens``); None where the processor's
    tiling, which config.json does not give, decides it. ``checkpointed``: the tower's layers are
    ``GradientCheckpointingLayer``s, which gradient checkpointing recomputes (transformers 5.24: every row but
    Mllama's, whose ``MllamaVisionEncoderLayer`` is a plain ``nn.Module``). ``hidden_act``: the config class's
    default of the vision_config's ``hidden_act`` (``Vision.activation``). ``patch_conv``: the patch convolution's
    module path below the tower where its name is also a Linear's (the Qwen and GLM towers' ``patch_embed.proj``, and
    their attention's ``proj``): PEFT's LoRA wraps an ``nn.Conv2d`` / ``Conv3d`` a target name reaches.
    ``frozen_positions``: the "table" positions are built with requires_grad False (Whisper's ``embed_positions``).
    """

    sizes: Mapping[str, tuple[str, int]]
    path: str = "model.vision_tower"
    layer_path: str = "encoder.layers.{layer}"
    attention: Literal["split", "fused_qkv"] = "split"
    attention_module: str = "self_attn"
    attention_names: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "out_proj")
    attention_bias: bool = True
    unbiased: tuple[str, ...] = ()
    mlp: Literal["plain", "gated"] = "plain"
    mlp_module: str | None = "mlp"
    mlp_names: tuple[str, ...] = ("fc1", "fc2")
    mlp_bias: bool = True
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    norms_per_layer: int = 2
    qk_norm: bool = False
    patch_bias: bool = True
    patch_conv: str | None = None
    frozen_positions: bool = False
    positions: Literal["grid", "table", "axial", "tiled"] | None = "grid"
    class_token: bool = False
    pre_norm: str | None = None
    post_norm: str | None = "post_layernorm"
    head_key: tuple[str, bool] | None = None
    patch_linear: str | None = None
    pieces: tuple[Piece, ...] = ()
    bias_key: tuple[str, bool] | None = None
    out_bias: bool = True
    layer_scales: int = 0
    global_stack: tuple[str, str, int] | None = None
    aspect_ratios: tuple[str, int] | None = None
    lays_out: Mapping[str, Any] = field(default_factory=dict)
    timm_params: int = 0
    image_work: str | None = None
    resolution: Resolution | None = None
    checkpointed: bool = True
    hidden_act: str = "gelu"


VIT = {"hidden": ("hidden_size", 768), "layers": ("num_hidden_layers", 12), "intermediate": ("intermediate_size", 3072),
       "channels": ("num_channels", 3)}
FUSED_BLOCKS: dict[str, Any] = {"path": "model.visual", "layer_path": "blocks.{layer}", "attention": "fused_qkv",
                                "attention_module": "attn", "attention_names": ("qkv", "proj"),
                                "resolution": "smart_resize", "patch_conv": "patch_embed.proj"}
"""What the towers at model.visual (Qwen2-VL, Qwen2.5-VL, Qwen3.5, GLM-4.1V) share: blocks.N of a fused qkv and a
proj inside attn, the patch convolution (a Conv3d) at patch_embed.proj, and smart-resized images."""

TOWERS: dict[str, Tower] = {
    "siglip_vision_model": Tower({**VIT, "patch": ("patch_size", 16), "image": ("image_size", 224)},
                                 head_key=("vision_use_head", True), resolution="square"),
    "clip_vision_model": Tower({**VIT, "patch": ("patch_size", 32), "image": ("image_size", 224)}, patch_bias=False,
                               class_token=True, pre_norm="pre_layrnorm", resolution="square", hidden_act="quick_gelu"),
    "pixtral": Tower({"hidden": ("hidden_size", 1024), "layers": ("num_hidden_layers", 24),
                      "intermediate": ("intermediate_size", 4096), "channels": ("num_channels", 3),
                      "patch": ("patch_size", 16), "image": ("image_size", 1024)},
                     layer_path="transformer.layers.{layer}", attention_module="attention",
                     attention_names=("q_proj", "k_proj", "v_proj", "o_proj"), attention_bias=False, mlp="gated",
                     mlp_module="feed_forward", mlp_names=("gate_proj", "up_proj", "down_proj"), mlp_bias=False,
                     norm="rmsnorm", patch_bias=False, positions=None, pre_norm="ln_pre", post_norm=None,
                     resolution="longest_edge"),
    "qwen2_vl": Tower({"hidden": ("embed_dim", 1280), "layers": ("depth", 32), "intermediate": ("mlp_ratio", 4),
                       "channels": ("in_channels", 3), "patch": ("patch_size", 14),
                       "temporal": ("temporal_patch_size", 2)},
                      **FUSED_BLOCKS, patch_bias=False, positions=None, post_norm=None, hidden_act="quick_gelu"),
    "qwen2_5_vl": Tower({"hidden": ("hidden_size", 3584), "layers": ("depth", 32),
                         "intermediate": ("intermediate_size", 3420), "channels": ("in_channels", 3),
                         "patch": ("patch_size", 14), "temporal": ("temporal_patch_size", 2)},
                        **FUSED_BLOCKS, mlp="gated", mlp_names=("gate_proj", "up_proj", "down_proj"), norm="rmsnorm",
                        patch_bias=False, positions=None, post_norm=None),
    "smolvlm_vision": Tower({"hidden": ("hidden_size", 1152), "layers": ("num_hidden_layers", 12),
                             "intermediate": ("intermediate_size", 3072), "channels": ("num_channels", 3),
                             "patch": ("patch_size", 32), "image": ("image_size", 224)}, path="model.vision_model"),
    # models/llama4/modeling_llama4.py (Llama4VisionModel): the patch embedding an unfold + bias-free Linear, a class
    # token and a position table of (image / patch)² + 1 rows, LayerNorms layernorm_pre / layernorm_post, the
    # layers at model.layers.N (biased q/k/v/o_proj, fc1 / fc2), and after them the pixel-shuffle adapter
    # vision_adapter.mlp: fc1 intermediate_size -> projector_input_dim, fc2 projector_output_dim square, no biases.
    "llama4_vision_model": Tower({**VIT, "hidden": ("hidden_size", 768), "layers": ("num_hidden_layers", 34),
                                  "intermediate": ("intermediate_size", 5632), "patch": ("patch_size", 14),
                                  "image": ("image_size", 448), "vision_out": ("vision_output_dim", 7680),
                                  "adapter_in": ("projector_input_dim", 4096),
                                  "adapter_out": ("projector_output_dim", 4096)},
                                 path="vision_model", layer_path="model.layers.{layer}",
                                 attention_names=("q_proj", "k_proj", "v_proj", "o_proj"), patch_bias=False,
                                 class_token=True, pre_norm="layernorm_pre", post_norm="layernorm_post",
                                 patch_linear="patch_embedding.linear",
                                 pieces=(Piece("vision_adapter.mlp.fc1", "linear", ("intermediate",), ("adapter_in",)),
                                         Piece("vision_adapter.mlp.fc2", "linear", ("adapter_out",),
                                               ("adapter_out",)))),
    # models/gemma4/modeling_gemma4.py (transformers 5.24, Gemma4VisionModel): patch_embedder.input_proj a bias-free
    # Linear over 3 x patch² pixels, position_embedding_table 2 x position_embedding_size x h (x and y), the layers at
    # encoder.layers.N: every Linear bias-free inside a Gemma4ClippableLinear (q_proj.linear ...; its clipping bounds
    # are buffers), heads x head_dim wide, q_norm / k_norm over head_dim (v_norm has no weight), a gated MLP and four
    # RMSNorms; the pooler and the standardize std_bias / std_scale hold no parameters (buffers).
    "gemma4_vision": Tower({"hidden": ("hidden_size", 768), "layers": ("num_hidden_layers", 16),
                            "intermediate": ("intermediate_size", 3072), "patch": ("patch_size", 16),
                            "heads": ("num_attention_heads", 12), "kv_heads": ("num_key_value_heads", 12),
                            "head_dim": ("head_dim", 64), "positions": ("position_embedding_size", 10240),
                            "pooling": ("pooling_kernel_size", 3)},
                           attention_names=("q_proj.linear", "k_proj.linear", "v_proj.linear", "o_proj.linear"),
                           attention_bias=False, mlp="gated",
                           mlp_names=("gate_proj.linear", "up_proj.linear", "down_proj.linear"), mlp_bias=False,
                           norm="rmsnorm", norms_per_layer=4, qk_norm=True, patch_bias=False, positions="axial",
                           post_norm=None, patch_linear="patch_embedder.input_proj", resolution="soft_tokens"),
    # models/qwen3_5/modeling_qwen3_5.py (Qwen3_5VisionModel, transformers 5.24): a biased 3-D patch convolution,
    # a learned position table of num_position_embeddings rows (resampled to each image's grid), blocks of fused
    # biased qkv + proj and a plain linear_fc1 / linear_fc2 MLP with biases, LayerNorms norm1 / norm2; the merger
    # (PROJECTORS) inside the tower. Qwen3.5-MoE's tower (models/qwen3_5_moe) is the same, and so is Qwen3-VL's
    # (models/qwen3_vl, Qwen3VLVisionModel), whose deepstack mergers are its projector row's.
    "qwen3_5_vision": Tower({"hidden": ("hidden_size", 1152), "layers": ("depth", 27),
                             "intermediate": ("intermediate_size", 4304), "channels": ("in_channels", 3),
                             "patch": ("patch_size", 16), "temporal": ("temporal_patch_size", 2),
                             "positions": ("num_position_embeddings", 2304)},
                            **FUSED_BLOCKS, mlp_names=("linear_fc1", "linear_fc2"), positions="table",
                            post_norm=None, hidden_act="gelu_pytorch_tanh"),
    # models/paddleocr_vl/modeling_paddleocr_vl.py (transformers 5.24, PaddleOCRVisionModel): SigLIP's embeddings (a
    # biased patch convolution, a position table of (image / patch)² rows resampled to each image's grid), encoder
    # and post_layernorm at model.visual.vision_model, without the pooling head; its rotary positions are buffers.
    "paddleocr_vl_vision": Tower({**VIT, "hidden": ("hidden_size", 1152), "layers": ("num_hidden_layers", 27),
                                  "intermediate": ("intermediate_size", 4304), "patch": ("patch_size", 14),
                                  "image": ("image_size", 384)}, path="model.visual.vision_model",
                                 resolution="smart_resize"),
    # models/glm4v/modeling_glm4v.py (transformers 5.24, Glm4vVisionModel): a biased 3-D patch convolution, a
    # position table of (image / patch)² rows (resampled to each image's grid), blocks of a fused qkv biased by
    # attention_bias (published false) and a bias-free proj, a bias-free gated MLP out_hidden_size wide
    # (Glm4VisionMlp reads out_hidden_size, not intermediate_size), RMSNorms norm1 / norm2, post_layernorm; the
    # downsample convolution, post_conv_layernorm and the merger are the projector row's (PROJECTORS["glm4v"]).
    "glm4v": Tower({"hidden": ("hidden_size", 1536), "layers": ("depth", 24), "intermediate": ("out_hidden_size", 4096),
                    "channels": ("in_channels", 3), "patch": ("patch_size", 14), "temporal": ("temporal_patch_size", 2),
                    "image": ("image_size", 336), "context": ("intermediate_size", 13696)},
                   **FUSED_BLOCKS, bias_key=("attention_bias", False), out_bias=False, mlp="gated",
                   mlp_names=("gate_proj", "up_proj", "down_proj"), mlp_bias=False, norm="rmsnorm"),
    # models/internvl/modeling_internvl.py (transformers 5.24, InternVLVisionModel, InternViT): a class token, a
    # biased patch convolution and a position table of (image / patch)² + 1 rows; layers at encoder.layer.N with
    # q/k/v biased by attention_bias, a biased projection_layer, a plain biased fc1 / fc2 MLP, layernorm_before /
    # layernorm_after and the layer scales lambda_1 / lambda_2; no final norm under use_mean_pooling. The row lays
    # out the InternViT-300M form (LayerNorms, no qk-norm, no mask token, absolute positions, mean pooling).
    "internvl_vision": Tower({**VIT, "hidden": ("hidden_size", 1024), "layers": ("num_hidden_layers", 24),
                              "intermediate": ("intermediate_size", 4096), "patch": ("patch_size", 14),
                              "image": ("image_size", 448)},
                             layer_path="encoder.layer.{layer}", attention_module="attention",
                             attention_names=("q_proj", "k_proj", "v_proj", "projection_layer"),
                             bias_key=("attention_bias", False), class_token=True, post_norm=None, layer_scales=2,
                             lays_out={"norm_type": "layer_norm", "use_qk_norm": False, "use_mask_token": False,
                                       "use_absolute_position_embeddings": True, "use_mean_pooling": True},
                             resolution="square"),
    # models/mllama/modeling_mllama.py (transformers 5.24, MllamaVisionModel): a bias-free patch convolution, a
    # class token, the tiled position tables ("tiled"), LayerNorms layernorm_pre / layernorm_post, the layers at
    # transformer.layers.N (bias-free q/k/v/o_proj, biased fc1 / fc2, LayerNorms) and then num_global_layers more at
    # global_transformer.layers.N, each with the scalar gates gate_attn and gate_ffn.
    "mllama_vision_model": Tower({**VIT, "hidden": ("hidden_size", 1280), "layers": ("num_hidden_layers", 32),
                                  "intermediate": ("intermediate_size", 5120), "patch": ("patch_size", 14),
                                  "image": ("image_size", 448), "global_layers": ("num_global_layers", 8),
                                  "tiles": ("max_num_tiles", 4), "vision_out": ("vision_output_dim", 7680)},
                                 path="model.vision_model", layer_path="transformer.layers.{layer}",
                                 attention_names=("q_proj", "k_proj", "v_proj", "o_proj"), attention_bias=False,
                                 patch_bias=False, positions="tiled", class_token=True, pre_norm="layernorm_pre",
                                 post_norm="layernorm_post",
                                 global_stack=("global_transformer.layers.{layer}", "global_layers", 2),
                                 aspect_ratios=("supported_aspect_ratios", 8), resolution="tiles", checkpointed=False),
    # models/siglip2/modeling_siglip2.py (transformers 5.24, Siglip2VisionModel, as models/lfm2_vl builds it at
    # model.vision_tower): a biased patch Linear over 3 x patch² pixels, a position table of num_patches rows
    # (resized to each image), SigLIP's encoder layers, post_layernorm and, with vision_use_head, the pooling head.
    "siglip2_vision_model": Tower({**VIT, "patch": ("patch_size", 16), "positions": ("num_patches", 256)},
                                  positions="table", patch_linear="embeddings.patch_embedding",
                                  head_key=("vision_use_head", True)),
    # models/gemma4_unified/modeling_gemma4_unified.py (transformers 5.24, Gemma4UnifiedVisionEmbedder): no layers;
    # patch_ln1 (a LayerNorm over the 3 x (patch x pooling_kernel)² pixels of a merged patch), patch_dense (a biased
    # Linear to mm_embed_dim), patch_ln2, pos_embedding (mm_posemb_size x 2 x mm_embed_dim: x and y), pos_norm.
    "gemma4_unified_vision": Tower({"hidden": ("mm_embed_dim", 3840), "patch": ("patch_size", 16),
                                    "pool": ("pooling_kernel_size", 3), "positions": ("mm_posemb_size", 1120)},
                                   path="model.embed_vision", positions="axial", pre_norm="patch_ln2",
                                   post_norm="pos_norm", patch_linear="patch_dense",
                                   pieces=(Piece("patch_ln1", "layernorm", ("pixels",)),), resolution="soft_tokens"),
}
# models/voxtral/modeling_voxtral.py (VoxtralEncoder, transformers 5.24; Whisper's encoder): conv1 (num_mel_bins ->
# h) and conv2 (h -> h, stride 2), both nn.Conv1d of kernel 3 with a bias; embed_positions, a max_source_positions x h
# table (frozen, a parameter all the same); layers at layers.N: self_attn q_proj / v_proj / out_proj biased, k_proj
# not, self_attn_layer_norm, fc1 / fc2 (biased) at the layer itself, final_layer_norm; the last LayerNorm layer_norm.
TOWERS["voxtral_encoder"] = Tower({"hidden": ("hidden_size", 1280), "layers": ("num_hidden_layers", 32),
                                   "intermediate": ("intermediate_size", 5120), "mel": ("num_mel_bins", 128),
                                   "positions": ("max_source_positions", 1500)},
                                  path="model.audio_tower", layer_path="layers.{layer}", unbiased=("k_proj",),
                                  mlp_module=None, positions="table", post_norm="layer_norm", frozen_positions=True,
                                  pieces=(Piece("conv1", "conv1d", ("mel",), ("hidden",), True, taps=3),
                                          Piece("conv2", "conv1d", ("hidden",), ("hidden",), True, taps=3)))
# models/gemma3n/modeling_gemma3n.py (Gemma3nModel, transformers 5.24): vision_tower = AutoModel.from_config(
# vision_config), a TimmWrapperModel (models/timm_wrapper/modeling_timm_wrapper.py) whose timm_model is
# timm.create_model(architecture, num_classes=0, **model_args). timm 1.0.31's mobilenetv5_300m_enc (timm/models/
# mobilenetv5.py: a convolutional stem, inverted-residual and multi-query-attention blocks, the multi-scale fusion
# adapter; RMS norms, no nn.Linear) holds 294,126,912 parameters, measured by building it (tests/
# test_coverage_gemma3n.py). Its width hidden_size (2048) and vocab_size (128) size the embedder (PROJECTORS).
TOWERS["gemma3n_vision"] = Tower(
    {"hidden": ("hidden_size", 2048), "vocab": ("vocab_size", 128)}, positions=None, post_norm=None,
    lays_out={"architecture": "mobilenetv5_300m_enc", "model_args": None}, timm_params=294_126_912,
    image_work="feeds images to timm's MobileNet-V5 tower (768 x 768 pixels each): the activations of its "
               "convolutions over each image, which axlint does not size")
TOWERS["qwen3_5_moe_vision"] = TOWERS["qwen3_5_vision"]
TOWERS["qwen3_vl"] = TOWERS["qwen3_vl_moe"] = TOWERS["qwen3_5_vision"]
TOWERS["idefics3_vision"] = TOWERS["smolvlm_vision"]
TOWER_ALIASES = {"qwen2_vl_vision": "qwen2_vl", "qwen2_5_vl_vision": "qwen2_5_vl", "glm4v_vision": "glm4v",
                 "qwen3_vl_vision": "qwen3_vl", "qwen3_vl_moe_vision": "qwen3_vl_moe"}
"""transformers 5's names for the Qwen and GLM-4.1V towers (published configs say ``qwen2_vl`` / ``qwen2_5_vl`` /
``glm4v`` / ``qwen3_vl`` / ``qwen3_vl_moe``)."""


@dataclass(frozen=True)
class Projector:
    """The projector of one multimodal ``model_type`` and where the model keeps its parts.

    Factors of the ``pieces``' widths: "vision" (the tower's hidden size), "text" (the decoder's), "features"
    (how many tower layers are concatenated: the length of a list ``vision_feature_layer``, else 1), "merge" (the
    square of ``merge``'s size: patches merged into one token), "pixels" (the inputs of one patch), "audio"
    (``audio``'s size) and the named ``factors`` (a merger's output width "out", Gemma 3n's audio vocabulary).
    ``merge`` / ``audio`` / each factor: (where: "config", "vision" or "audio", key, default). ``merge_inverse``: the
    ``merge`` key holds a downsample ratio whose inverse is the merge size (InternVL's downsample_ratio 0.5: 2).

    A row with ``audio`` lays out the model's audio part: the embedder in its pieces (those ``when``
    ``audio_config``) and, with ``audio_tower`` (the audio model_type when audio_config names none), the audio
    encoder of ``audio.AUDIO_TOWERS``; without it an ``audio_config`` leaves the model unsized, and so does an audio
    model_type other than the row's. ``audio_built``: the model builds its audio part from the audio config class's
    defaults when config.json has no ``audio_config`` (Gemma 3n's sub_configs_defaults); otherwise a missing
    ``audio_config`` means no audio part.

    ``tower``: the tower's model_type when its config names none; ``tower_key``: the config.json key of the tower's
    config (``vision_config``, or ``audio_config`` for a speech model whose only encoder is the audio one);
    ``tower_path``: where the tower sits, when not the row's own; ``decoder_path``: where the decoder sits;
    ``text_type``: the decoder's model_type when config.json is flat (the decoder fields at the top level, as
    Qwen2-VL's are published and transformers 5 reads them as ``text_config``); ``registered_last``: the model
    registers the row's pieces after the decoder and the towers, so that with a tied output embedding the last
    piece holds the model's last parameter (Gemma 3n's and Gemma 4's embedders)."""

    path: str
    pieces: tuple[Piece, ...]
    tower: str
    merge: tuple[str, str, float] | None = None
    audio: tuple[str, str, int] | None = None
    audio_tower: str | None = None
    tower_path: str | None = None
    decoder_path: str = "model.language_model"
    text_type: str | None = None
    tower_key: str = "vision_config"
    merge_inverse: bool = False
    factors: Mapping[str, tuple[str, str, float]] = field(default_factory=dict)
    audio_built: bool = False
    registered_last: bool = False


LLAVA_MLP = (Piece("linear_1", "linear", ("vision", "features"), ("text",), ("multimodal_projector_bias", True)),
             Piece("linear_2", "linear", ("text",), ("text",), ("multimodal_projector_bias", True)))
QWEN_MERGER = (Piece("mlp.0", "linear", ("vision", "merge"), ("vision", "merge"), True),
               Piece("mlp.2", "linear", ("vision", "merge"), ("out",), True))

PROJECTORS: dict[str, Projector] = {
    "gemma3": Projector("model.multi_modal_projector", (Piece("mm_soft_emb_norm", "rmsnorm", ("vision",)),
                                                        Piece("mm_input_projection_weight", "matrix", ("vision",),
                                                              ("text",))), tower="siglip_vision_model"),
    "llava": Projector("model.multi_modal_projector", LLAVA_MLP, tower="clip_vision_model"),
    "mistral3": Projector("model.multi_modal_projector",
                          (Piece("norm", "rmsnorm", ("vision",)),
                           Piece("patch_merger.merging_layer", "linear", ("vision", "merge"), ("vision",)),
                           Piece("linear_1", "linear", ("vision", "features"), ("text",),
                                 ("multimodal_projector_bias", False)),
                           Piece("linear_2", "linear", ("text",), ("text",), ("multimodal_projector_bias", False))),
                          tower="pixtral", merge=("config", "spatial_merge_size", 2)),
    "qwen2_vl": Projector("model.visual.merger", (Piece("ln_q", "layernorm", ("vision",)), *QWEN_MERGER),
                          tower="qwen2_vl", merge=("vision", "spatial_merge_size", 2),
                          factors={"out": ("vision", "hidden_size", 3584)}, text_type="qwen2_vl_text"),
    "qwen2_5_vl": Projector("model.visual.merger", (Piece("ln_q", "rmsnorm", ("vision",)), *QWEN_MERGER),
                            tower="qwen2_5_vl", merge=("vision", "spatial_merge_size", 2),
                            factors={"out": ("vision", "out_hidden_size", 3584)}, text_type="qwen2_5_vl_text"),
    "smolvlm": Projector("model.connector", (Piece("modality_projection.proj", "linear", ("vision", "merge"),
                                                   ("text",)),),
                         tower="smolvlm_vision", merge=("config", "scale_factor", 2), decoder_path="model.text_model"),
}
# models/llama4/modeling_llama4.py (Llama4ForConditionalGeneration): vision_model, multi_modal_projector (one
# bias-free Linear vision_output_dim -> text hidden) and language_model (a Llama4ForCausalLM: its decoder at
# language_model.model, its output at language_model.lm_head), all at the top level.
PROJECTORS["llama4"] = Projector("multi_modal_projector", (Piece("linear_1", "linear", ("vision_out",), ("text",)),),
                                 tower="llama4_vision_model", decoder_path="language_model.model")
# models/qwen3_5/modeling_qwen3_5.py (Qwen3_5VisionPatchMerger): a LayerNorm over the tower's width, then
# linear_fc1 over the merge² patches of a token (square) and linear_fc2 to out_hidden_size, both biased.
_QWEN3_5_MERGER = (Piece("norm", "layernorm", ("vision",)),
                   Piece("linear_fc1", "linear", ("vision", "merge"), ("vision", "merge"), True),
                   Piece("linear_fc2", "linear", ("vision", "merge"), ("out",), True))
PROJECTORS["qwen3_5"] = Projector("model.visual.merger", _QWEN3_5_MERGER, tower="qwen3_5_vision",
                                  merge=("vision", "spatial_merge_size", 2),
                                  factors={"out": ("vision", "out_hidden_size", 3584)})
PROJECTORS["qwen3_5_moe"] = replace(PROJECTORS["qwen3_5"], tower="qwen3_5_moe_vision")
# models/qwen3_vl/modeling_qwen3_vl.py (Qwen3VLVisionModel): Qwen3.5's merger, and one deepstack merger per
# deepstack_visual_indexes entry (deepstack_merger_list.i: the same Linears, its LayerNorm over the merge² patches of
# a token, use_postshuffle_norm), whose outputs are added to the first decoder layers' hidden states.
PROJECTORS["qwen3_vl"] = Projector(
    "model.visual",
    (*(replace(p, name=f"merger.{p.name}") for p in _QWEN3_5_MERGER),
     *(replace(p, name=f"deepstack_merger_list.{{i}}.{p.name}", copies=("vision", "deepstack_visual_indexes", 3))
       for p in (Piece("norm", "layernorm", ("vision", "merge")), *_QWEN3_5_MERGER[1:]))),
    tower="qwen3_vl", merge=("vision", "spatial_merge_size", 2),
    factors={"out": ("vision", "out_hidden_size", 3584)})
PROJECTORS["qwen3_vl_moe"] = replace(PROJECTORS["qwen3_vl"], tower="qwen3_vl_moe")
# models/paddleocr_vl/modeling_paddleocr_vl.py (PaddleOCRProjector): a LayerNorm over the tower's width, then
# linear_1 over the merge² patches of a token (square) and linear_2 to the decoder's width, both biased.
PROJECTORS["paddleocr_vl"] = Projector("model.projector",
                                       (Piece("pre_norm", "layernorm", ("vision",)),
                                        Piece("linear_1", "linear", ("vision", "merge"), ("vision", "merge"), True),
                                        Piece("linear_2", "linear", ("vision", "merge"), ("text",), True)),
                                       tower="paddleocr_vl_vision", merge=("vision", "spatial_merge_size", 2))
# models/glm4v/modeling_glm4v.py (Glm4vVisionModel, after its blocks): post_conv_layernorm (RMSNorm), downsample (a
# biased Conv2d over spatial_merge_size² patches, hidden -> out_hidden_size), then the merger: a bias-free proj
# (out square), a LayerNorm, and a bias-free gated MLP intermediate_size wide. GLM-4.6V (models/glm46v) reuses the
# GLM-4.1V tower, decoder and module paths.
PROJECTORS["glm4v"] = Projector("model.visual",
                                (Piece("post_conv_layernorm", "rmsnorm", ("vision",)),
                                 Piece("downsample", "conv", ("vision", "merge"), ("out",), True),
                                 Piece("merger.proj", "linear", ("out",), ("out",)),
                                 Piece("merger.post_projection_norm", "layernorm", ("out",)),
                                 Piece("merger.gate_proj", "linear", ("out",), ("context",)),
                                 Piece("merger.up_proj", "linear", ("out",), ("context",)),
                                 Piece("merger.down_proj", "linear", ("context",), ("out",))),
                                tower="glm4v", merge=("vision", "spatial_merge_size", 2),
                                factors={"out": ("vision", "out_hidden_size", 4096)})
PROJECTORS["glm46v"] = PROJECTORS["glm4v"]
# models/internvl/modeling_internvl.py (InternVLMultiModalProjector): a LayerNorm over the merge² patches of a token
# (1 / downsample_ratio per side), then linear_1 to the decoder's width and linear_2 square, both biased.
PROJECTORS["internvl"] = Projector("model.multi_modal_projector",
                                   (Piece("layer_norm", "layernorm", ("vision", "merge")),
                                    Piece("linear_1", "linear", ("vision", "merge"), ("text",), True),
                                    Piece("linear_2", "linear", ("text",), ("text",), True)),
                                   tower="internvl_vision", merge=("config", "downsample_ratio", 0.5),
                                   merge_inverse=True)
# models/mllama/modeling_mllama.py (MllamaModel): multi_modal_projector is one biased Linear, vision_output_dim (the
# last layer's output with the intermediate_layers_indices outputs beside it) -> the decoder's width.
PROJECTORS["mllama"] = Projector("model", (Piece("multi_modal_projector", "linear", ("vision_out",), ("text",), True),),
                                 tower="mllama_vision_model")
# models/lfm2_vl/modeling_lfm2_vl.py (Lfm2VlMultiModalProjector): over downsample_factor² pixel-unshuffled patches
# a LayerNorm (with projector_use_layernorm), linear_1 to projector_hidden_size and linear_2 to the decoder's width,
# biased by projector_bias. The published LFM2-VL configs say "lfm2-vl" and map to the repositories' own
# modeling_lfm2_vl.py (trust_remote_code), which builds the same modules at the same paths (its Siglip2VisionModel
# is transformers', its projector keeps the LayerNorm unconditionally).
PROJECTORS["lfm2_vl"] = Projector("model.multi_modal_projector",
                                  (Piece("layer_norm", "layernorm", ("vision", "merge"),
                                         when=("projector_use_layernorm", True)),
                                   Piece("linear_1", "linear", ("vision", "merge"), ("out",), ("projector_bias", True)),
                                   Piece("linear_2", "linear", ("out",), ("text",), ("projector_bias", True))),
                                  tower="siglip2_vision_model", merge=("config", "downsample_factor", 2),
                                  factors={"out": ("config", "projector_hidden_size", 2560)})
PROJECTOR_ALIASES = {"lfm2-vl": "lfm2_vl"}
"""Published model_types that transformers 5.24 has no class for, and the row whose modules their own modelling code
builds (``PROJECTORS`` comments)."""
PROJECTORS["idefics3"] = replace(PROJECTORS["smolvlm"], tower="idefics3_vision")
# models/gemma4/modeling_gemma4.py (Gemma4MultimodalEmbedder): embed_vision.embedding_pre_projection_norm holds no
# weight (with_scale=False), embedding_projection is one bias-free Linear, vision hidden -> text hidden; with an
# audio_config (E2B / E4B) the audio_tower and embed_audio, the same embedder from the tower's output_proj_dims.
PROJECTORS["gemma4"] = Projector("model",
                                 (Piece("embed_vision.embedding_projection", "linear", ("vision",), ("text",)),
                                  Piece("embed_audio.embedding_projection", "linear", ("audio",), ("text",),
                                        when=("audio_config", False))),
                                 tower="gemma4_vision", audio=("audio", "output_proj_dims", 1536),
                                 audio_tower="gemma4_audio", registered_last=True)

# models/voxtral/modeling_voxtral.py (VoxtralMultiModalProjector): the tower's output regrouped four frames to a token
# (audio_config.intermediate_size wide: transformers reshapes to that width), linear_1 to the text width, linear_2
# square, neither biased.
PROJECTORS["voxtral"] = Projector("model.multi_modal_projector",
                                  (Piece("linear_1", "linear", ("intermediate",), ("text",)),
                                   Piece("linear_2", "linear", ("text",), ("text",))),
                                  tower="voxtral_encoder", tower_key="audio_config")

# models/gemma4_unified/modeling_gemma4_unified.py (Gemma4UnifiedModel): encoder-free; the vision embedder ends in
# multimodal_embedder (a norm without weight, then embedding_projection, a bias-free Linear output_proj_dims -> text
# hidden), and with an audio_config embed_audio is the same embedder over audio_embed_dim raw samples per token.
PROJECTORS["gemma4_unified"] = Projector(
    "model", (Piece("embed_vision.multimodal_embedder.embedding_projection", "linear", ("out",), ("text",)),
              Piece("embed_audio.embedding_projection", "linear", ("audio",), ("text",), when=("audio_config", False))),
    tower="gemma4_unified_vision", factors={"out": ("vision", "output_proj_dims", 3840)},
    audio=("audio", "audio_embed_dim", 640), registered_last=True)

# models/gemma3n/modeling_gemma3n.py (Gemma3nMultimodalEmbedder, transformers 5.24): embed_vision and embed_audio each
# hold an embedding table (vocab_size x the tower's width, for hard tokens), hard_embedding_norm and
# soft_embedding_norm (RMSNorms of that width), embedding_projection (a bias-free Linear to the decoder's width) and a
# post-projection norm without weight. Gemma3nModel builds the audio_tower and embed_audio from the config class's
# defaults when config.json has no audio_config.
_GEMMA3N_EMBEDDERS = tuple(
    piece for part, width, vocab in (("embed_vision", "vision", "vocab"), ("embed_audio", "audio", "audio_vocab"))
    for piece in (Piece(f"{part}.embedding", "embedding", (vocab,), (width,)),
                  Piece(f"{part}.hard_embedding_norm", "rmsnorm", (width,)),
                  Piece(f"{part}.soft_embedding_norm", "rmsnorm", (width,)),
                  Piece(f"{part}.embedding_projection", "linear", (width,), ("text",))))
PROJECTORS["gemma3n"] = Projector("model", _GEMMA3N_EMBEDDERS, tower="gemma3n_vision",
                                  audio=("audio", "hidden_size", 1536), audio_tower="gemma3n_audio",
                                  factors={"audio_vocab": ("audio", "vocab_size", 128)}, audio_built=True,
                                  registered_last=True)


def projector_of(config: Mapping[str, Any]) -> Projector | None:
    """The projector row of a multimodal config.json (a ``PROJECTOR_ALIASES`` name reads as its row); None for
    another model type."""
    kind = str(config.get("model_type"))
    return PROJECTORS.get(PROJECTOR_ALIASES.get(kind, kind))


def tower_key(config: Mapping[str, Any]) -> str:
    """The config.json key of the tower's config: its projector row's ``tower_key``, else ``vision_config``."""
    row = projector_of(config)
    return row.tower_key if row else "vision_config"


def is_multimodal(config: Mapping[str, Any]) -> bool:
    """A config with a tower beside its decoder: a nested ``text_config`` and the tower's config (``tower_key``),
    or a flat config of a type whose row names its decoder type."""
    if not isinstance(config.get(tower_key(config)), Mapping):
        return False
    row = projector_of(config)
    return isinstance(config.get("text_config"), Mapping) or bool(row and row.text_type)


def hears_audio(config: Mapping[str, Any]) -> bool:
    """Whether the laid-out tower of a multimodal config is an audio encoder (its row reads ``audio_config``)."""
    return is_multimodal(config) and tower_key(config) == "audio_config"


def decoder_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The decoder's config: ``text_config``, or a flat multimodal config's top-level fields under the decoder type
    its row names."""
    text = config.get("text_config")
    if isinstance(text, Mapping):
        return dict(text)
    row = projector_of(config)
    if row and row.text_type and isinstance(config.get(row.tower_key), Mapping):
        return {**{k: v for k, v in config.items() if k != row.tower_key}, "model_type": row.text_type}
    return dict(config)


def tower_type(config: Mapping[str, Any]) -> str:
    """The tower's model_type of a multimodal config (its row's default when the tower's config names none)."""
    vc, row = config.get(tower_key(config)) or {}, projector_of(config)
    kind = str(vc.get("model_type") or (row.tower if row else "unnamed"))
    return TOWER_ALIASES.get(kind, kind)


def _unsized_audio(config: Mapping[str, Any], row: Projector | None) -> bool:
    """Whether config.json has an ``audio_config`` beside the laid-out tower that its row does not lay out: the row
    has no ``audio`` part, or the audio_config names another model_type than the row's ``audio_tower``."""
    audio = config.get("audio_config")
    if not isinstance(audio, Mapping) or tower_key(config) == "audio_config":
        return False
    if row is None or row.audio is None:
        return True
    return row.audio_tower is not None and bool(audio.get("model_type")) and audio["model_type"] != row.audio_tower


def unsized_part(config: Mapping[str, Any]) -> str | None:
    """What of a multimodal config axlint cannot lay out: an audio tower beside the laid-out one ("<model_type>
    audio tower"), the tower's model_type, or "<model_type> projector"; None when both have rows (or the config is
    not multimodal)."""
    if not is_multimodal(config):
        return None
    row = projector_of(config)
    if _unsized_audio(config, row):
        return f"{config.get('model_type')} audio tower"
    kind = tower_type(config)
    if kind not in TOWERS:
        return kind
    vc = config.get("vision_config") or {}
    if any(vc.get(key, value) != value for key, value in TOWERS[kind].lays_out.items()):
        return kind
    return None if row else f"{config.get('model_type')} projector"


class Vision:
    """The tower (vision or audio) and projector of one multimodal config.json, with the decoder's hidden size
    ``text_hidden``."""

    def __init__(self, config: Mapping[str, Any], text_hidden: int) -> None:
        self.config, self.vc = config, dict(config.get(tower_key(config)) or {})
        self.row = projector_of(config)
        self.tower = TOWERS[tower_type(config)]
        self.text_hidden = text_hidden

    def size(self, name: str) -> int:
        key, default = self.tower.sizes[name]
        value = self.vc.get(key)
        value = default if value is None else value
        value = int(value[0] if isinstance(value, (list, tuple)) else value)
        return self.size("hidden") * value if name == "intermediate" and key == "mlp_ratio" else value

    def _read(self, spec: tuple[str, str, float] | None) -> float:
        if spec is None:
            return 1
        where, key, default = spec
        section = {"vision": self.vc, "audio": self.config.get("audio_config") or {}}.get(where, self.config)
        value = section.get(key)
        return default if value is None else value

    def _factor(self, name: str) -> int:
        if name == "vision":
            return self.size("hidden")
        if name == "text":
            return self.text_hidden
        if name == "merge":
            side = self._read(self.row.merge)
            return int(1 / side if self.row.merge_inverse else side) ** 2
        if name == "audio":
            return int(self._read(self.row.audio))
        if name in self.row.factors:
            return int(self._read(self.row.factors[name]))
        if name == "pixels":
            return self._patch_inputs()
        if name in self.tower.sizes:
            return self.size(name)
        layers = self.config.get("vision_feature_layer")
        return len(layers) if isinstance(layers, list) else 1  # "features"

    @property
    def layers(self) -> int:
        """The tower's layer count; 0 for a row without a "layers" size (an embedder without layers)."""
        return self.size("layers") if "layers" in self.tower.sizes else 0

    @property
    def tower_path(self) -> str:
        return self.row.tower_path or self.tower.path

    def layer_linears(self, layer: int, layer_path: str | None = None) -> tuple[VisionLinear, ...]:
        """The Linears of one tower layer, at their module paths (``layer_path``: a ``global_stack``'s)."""
        t, h, i = self.tower, self.size("hidden"), self.size("intermediate")
        prefix = f"{self.tower_path}.{(layer_path or t.layer_path).format(layer=layer)}"
        att, mlp = f"{prefix}.{t.attention_module}", f"{prefix}.{t.mlp_module}" if t.mlp_module else prefix
        qkv_bias, o_bias = self._attention_biases()
        if t.attention == "fused_qkv":
            out = [VisionLinear(f"{att}.{t.attention_names[0]}", h, 3 * h, qkv_bias),
                   VisionLinear(f"{att}.{t.attention_names[1]}", h, h, o_bias)]
        else:
            q, kv = self._attention_widths()
            q_name, k_name, v_name, o_name = t.attention_names
            out = [VisionLinear(f"{att}.{name}", d_in, d_out, bias and name not in t.unbiased)
                   for name, d_in, d_out, bias in ((q_name, h, q, qkv_bias), (k_name, h, kv, qkv_bias),
                                                   (v_name, h, kv, qkv_bias), (o_name, q, h, o_bias))]
        ins = t.mlp_names[:-1]
        out += [VisionLinear(f"{mlp}.{n}", h, i, t.mlp_bias) for n in ins]
        out.append(VisionLinear(f"{mlp}.{t.mlp_names[-1]}", i, h, t.mlp_bias))
        return tuple(out)

    def _attention_biases(self) -> tuple[bool, bool]:
        """(q/k/v, output) biases: ``attention_bias`` for both, or the vision_config's ``bias_key`` and ``out_bias``."""
        t = self.tower
        if t.bias_key is None:
            return t.attention_bias, t.attention_bias
        return bool(self.vc.get(t.bias_key[0], t.bias_key[1])), t.out_bias

    def _attention_widths(self) -> tuple[int, int]:
        """(q, kv) widths of split attention: heads x head_dim and kv_heads x head_dim when the row reads a head_dim,
        else the hidden size for both."""
        if "head_dim" not in self.tower.sizes:
            return self.size("hidden"), self.size("hidden")
        return self.size("heads") * self.size("head_dim"), self.size("kv_heads") * self.size("head_dim")

    def image_dims(self, image_size: int | tuple[int, int] | None) -> tuple[int, int] | None:
        """(width, height) of an image as Axolotl hands it to the processor: its ``image_size`` (an int pads the image
        to that square, keeping its aspect; a [width, height] pair resizes it to that), else the vision_config's
        ``image_size``, which Axolotl takes when its own is unset (0.18 ``loaders/utils.py``,
        ``processing_strategies.py``: it resizes the images of a sample's images / image column, not those inside
        the messages); None without either (the image keeps its own size)."""
        if image_size is None:
            image_size = self.vc.get("image_size")
        if isinstance(image_size, (list, tuple)) and len(image_size) == 2:
            return int(image_size[0]), int(image_size[1])
        return (int(image_size), int(image_size)) if isinstance(image_size, (int, float)) and image_size > 0 else None

    def image_tokens(self, dims: tuple[int, int] | None) -> int | None:
        """Tokens one image becomes inside the tower (the sequence each of its layers runs over), from the image's
        (width, height) ``dims`` (``image_dims``) where the processor keeps its size, p the patch size, S the
        vision_config's image_size:

          square        (S / p)² + 1 with a class token: the processor resizes every image to S x S (SigLIP, CLIP;
                        InternVL: a square image takes the 1 x 1 tile grid, so one tile and no thumbnail)
          tiles         max_num_tiles x ((S / p)² + 1, padded to a multiple of 8): Mllama's processor pads every
                        image to max_num_tiles tiles and the tower pads each tile (models/mllama MllamaVisionModel)
          soft_tokens   vision_soft_tokens_per_image x pooling_kernel_size²: Gemma 4's tower runs over up to that
                        many patches and pools them (models/gemma4 ``output_length``); the encoder-free embedder of
                        Gemma 4 Unified over the soft tokens themselves. The published config.json's
                        vision_soft_tokens_per_image (Gemma 4 Unified: vision_config's num_soft_tokens; the
                        processor's max_soft_tokens, 280 by default) is the bound; a config.json without it leaves
                        the tokens unbounded
          longest_edge  ⌈w' / p⌉ x ⌈h' / p⌉, the image scaled down until its longest edge is at most S
                        (models/pixtral/image_processing_pixtral.py ``get_resize_output_image_size``)
          smart_resize  (h' / p) x (w' / p), h' = max(f, round(h / f) x f), f = p x spatial_merge_size
                        (``smart_resize`` of models/qwen2_vl, glm4v, paddleocr_vl image processors; their min / max
                        pixel bounds, processor settings, taken to be met)

        None where nothing bounds it: no ``resolution``, or a dynamic one (longest_edge, smart_resize) without
        ``dims``."""
        t = self.tower
        if t.resolution == "square":
            return (self.size("image") // self.size("patch")) ** 2 + int(t.class_token)
        if t.resolution == "tiles":
            per_tile = (self.size("image") // self.size("patch")) ** 2 + 1
            return self.size("tiles") * (per_tile + -per_tile % 8)
        if t.resolution == "soft_tokens":
            soft = self.config.get("vision_soft_tokens_per_image") or self.vc.get("num_soft_tokens")
            pooling = self.size("pooling") if "pooling" in t.sizes else 1
            return int(soft) * pooling ** 2 if isinstance(soft, int) and soft > 0 else None
        if dims is None or t.resolution is None:
            return None
        (w, h), p = dims, self.size("patch")
        if t.resolution == "longest_edge":
            ratio = max(w / self.size("image"), h / self.size("image"))
            if ratio > 1:
                w, h = int(w / ratio), int(h / ratio)
            return -(-w // p) * -(-h // p)
        f = p * int(self.vc.get("spatial_merge_size") or 2)
        return (max(f, round(w / f) * f) // p) * (max(f, round(h / f) * f) // p)

    @property
    def activation(self) -> str:
        """The MLP's activation: vision_config's ``hidden_act``, else the row's ``hidden_act`` default."""
        return str(self.vc.get("hidden_act") or self.tower.hidden_act)

    @property
    def heads(self) -> int:
        """The tower's attention heads: its row's "heads" size, else vision_config's num_attention_heads / num_heads
        (16 when it has neither)."""
        if "heads" in self.tower.sizes:
            return self.size("heads")
        return int(self.vc.get("num_attention_heads") or self.vc.get("num_heads") or 16)

    def head(self) -> bool:
        key = self.tower.head_key
        return bool(key and self.vc.get(key[0], key[1]))

    def linears(self) -> tuple[VisionLinear, ...]:
        """Every ``nn.Linear`` of the tower (all layers, SigLIP's pooling head), of the projector and of the audio
        encoder."""
        out = [lin for layer in range(self.layers) for lin in self.layer_linears(layer)]
        if self.tower.global_stack:
            path, count, _ = self.tower.global_stack
            out += [lin for layer in range(self.size(count)) for lin in self.layer_linears(layer, path)]
        if self.head():  # MultiheadAttentionPoolingHead: its attention's out_proj is a Linear, in_proj a matrix
            h, i, head = self.size("hidden"), self.size("intermediate"), f"{self.tower_path}.head"
            out += [VisionLinear(f"{head}.attention.out_proj", h, h, True, subclass=True),
                    VisionLinear(f"{head}.mlp.fc1", h, i, True), VisionLinear(f"{head}.mlp.fc2", i, h, True)]
        if self.tower.patch_linear:
            out.insert(0, VisionLinear(f"{self.tower_path}.{self.tower.patch_linear}", self._patch_inputs(),
                                       self.size("hidden"), self.tower.patch_bias))
        for path, p in self._pieces():
            if p.kind == "linear":
                out.append(VisionLinear(f"{path}.{p.name}", self._width(p.d_in), self._width(p.d_out), self._bias(p)))
        return tuple(out) + self._audio_tower[0]

    def named_parameters(self) -> tuple[tuple[str, int], ...]:
        """(parameter name, numel) of what axlint lays out at its module path: each ``nn.Linear``'s weight and bias
        (``linears``: the tower's, the projector's, the audio encoder's) and each other piece's tensors
        (``_piece_tensors``). The tower's own norms, patch embedding and position table, and the audio encoder's
        other parameters, have no name here (``partly_named_roots``)."""
        out = [(f"{lin.path}.{tensor}", numel) for lin in self.linears()
               for tensor, numel in (("weight", lin.d_in * lin.d_out), ("bias", lin.d_out if lin.bias else 0))
               if numel]
        out += [(f"{path}.{piece.name}{suffix}", numel) for path, piece in self._pieces() if piece.kind != "linear"
                for suffix, numel in self._piece_tensors(piece)]
        return tuple(out)

    def partly_named_roots(self) -> tuple[str, ...]:
        """The module paths under which ``named_parameters`` lists only some parameters: the vision tower's and the
        audio encoder's (the first two parts of its Linears' paths)."""
        audio = {".".join(lin.path.split(".")[:2]) for lin in self._audio_tower[0]}
        return (self.tower_path, *sorted(audio - {self.tower_path}))

    def last_linear(self) -> str | None:
        """The path of the Linear that holds the model's last parameter when the output embedding is tied (and so
        has no weight of its own): the row's last Linear piece where the row is registered last
        (``Projector.registered_last``); None otherwise. transformers' quantizers keep that module unconverted
        (5.24 ``quantizers/base.py``, ``get_keys_to_not_convert``: the last module)."""
        if not self.row.registered_last:
            return None
        return next((f"{path}.{p.name}" for path, p in reversed(self._pieces()) if p.kind == "linear"), None)

    @cached_property
    def _audio_tower(self) -> tuple[tuple[VisionLinear, ...], int]:
        """The audio encoder's Linears and other parameters (the row's ``audio_tower`` in ``AUDIO_TOWERS``; an
        audio_config of another model_type leaves the model unsized, ``unsized_part``); none without one."""
        audio = self.config.get("audio_config")
        audio = {} if audio is None and self.row.audio_built else audio
        if not isinstance(audio, Mapping) or not self.row.audio_tower:
            return (), 0
        return AUDIO_TOWERS[self.row.audio_tower](audio)

    def _bias(self, piece: Piece) -> bool:
        """Whether a piece carries a bias (``Piece.bias``: fixed, or a top-level config.json key and its default)."""
        bias = piece.bias
        return bias if isinstance(bias, bool) else bool(self.config.get(bias[0], bias[1]))

    def _tiled_positions(self) -> int:
        """``positions`` "tiled": rows·h + R·tiles·rows·h + 2·R·tiles·h + 3 gates, rows = (image / patch)² + 1
        (``Tower``)."""
        h, tiles = self.size("hidden"), self.size("tiles")
        rows = (self.size("image") // self.size("patch")) ** 2 + 1
        key, default = self.tower.aspect_ratios or ("", 0)
        listed = self.vc.get(key)
        ratios = (len(listed) if isinstance(listed, list) else default) + 1
        return rows * h + ratios * tiles * rows * h + 2 * ratios * tiles * h + 3

    def _pieces(self) -> list[tuple[str, Piece]]:
        """The tower's extra modules and the projector's that the config builds (``Piece.when``), each with the
        path it sits below."""
        return [(self.tower_path, p) for p in self._built_pieces(self.tower.pieces)] + \
            [(self.row.path, p) for p in self._built_pieces(self.row.pieces)]

    def _built_pieces(self, pieces: tuple[Piece, ...]) -> list[Piece]:
        """The pieces the config builds (``Piece.when``), each ``Piece.copies`` piece once per element of its list,
        named by its index."""
        out = []
        for p in pieces:
            if not self._built(p):
                continue
            if p.copies is None:
                out.append(p)
                continue
            where, key, default = p.copies
            listed = (self.vc if where == "vision" else self.config).get(key)
            count = len(listed) if isinstance(listed, (list, tuple)) else default
            out += [replace(p, name=p.name.format(i=i), copies=None) for i in range(count)]
        return out

    def _built(self, piece: Piece) -> bool:
        """Whether the config builds a piece: always without ``Piece.when``, else per its top-level key."""
        return piece.when is None or bool(self.config.get(piece.when[0], piece.when[1]))

    def _patch_inputs(self) -> int:
        """Inputs of one patch: channels x patch² (x frames for a 3-D patch, x pool² for merged patches)."""
        frames = self.size("temporal") if "temporal" in self.tower.sizes else 1
        channels = self.size("channels") if "channels" in self.tower.sizes else 3
        pool = self.size("pool") if "pool" in self.tower.sizes else 1
        return channels * (self.size("patch") * pool) ** 2 * frames

    def projector_inputs(self) -> tuple[tuple[str, int, bool], ...]:
        """(module path, input width, whether an ``nn.Linear``) of the projector's weighted pieces that the config
        builds (Linears, matrices, convolutions; an audio embedder's excepted), which read the tower's output at one
        row per ``merge_factor`` patches."""
        return tuple((f"{self.row.path}.{p.name}", self._width(p.d_in), p.kind == "linear")
                     for p in self._built_pieces(self.row.pieces)
                     if p.kind in ("linear", "matrix", "embedding", "conv") and "audio" not in p.d_in)

    @property
    def merge_factor(self) -> int:
        """Patches merged into one projector row: the square of the row's ``merge`` size (1 without one)."""
        return self._factor("merge") if self.row.merge else 1

    @property
    def patch_linear_inputs(self) -> int:
        """Inputs per token of a patch embedding that is an ``nn.Linear`` (``Tower.patch_linear``); 0 for a patch
        convolution, which keeps its pixels only when they need a gradient (they never do)."""
        return self._patch_inputs() if self.tower.patch_linear else 0

    def _width(self, factors: tuple[str, ...]) -> int:
        return prod(self._factor(f) for f in factors)

    @property
    def params(self) -> int:
        """Tower + projector (+ audio encoder) parameters."""
        t, h = self.tower, self.size("hidden")
        norm = 2 * h if t.norm == "layernorm" else h
        # a patch Linear is among linears(); a patch convolution is counted here (none without a "patch" size)
        total = 0 if t.patch_linear or "patch" not in t.sizes else h * self._patch_inputs() + (h if t.patch_bias else 0)
        if t.positions == "grid":
            total += ((self.size("image") // self.size("patch")) ** 2 + int(t.class_token)) * h
        elif t.positions == "table":
            total += self.size("positions") * h
        elif t.positions == "axial":
            total += 2 * self.size("positions") * h
        elif t.positions == "tiled":
            total += self._tiled_positions()
        total += h if t.class_token else 0
        layers = self.layers
        if t.global_stack:
            _, count, gates = t.global_stack
            layers += self.size(count)
            total += gates * self.size(count)
        total += norm * (t.norms_per_layer * layers + bool(t.pre_norm) + bool(t.post_norm))
        if t.qk_norm:
            total += 2 * self.size("head_dim") * self.layers
        total += t.layer_scales * h * self.layers
        if self.head():  # probe, the attention's fused in-projection (3h x h + 3h), its LayerNorm
            total += h + 3 * h * h + 3 * h + 2 * h
        total += sum(self._piece_params(p) for _, p in self._pieces() if p.kind != "linear")
        return total + t.timm_params + self._audio_tower[1] + sum(lin.params for lin in self.linears())

    @property
    def fixed_params(self) -> int:
        """Parameters the model builds with requires_grad False, which never train: a frozen position table
        (``Tower.frozen_positions``)."""
        return self.size("positions") * self.size("hidden") if self.tower.frozen_positions else 0

    def patch_conv(self) -> tuple[str, int, int] | None:
        """(module path, inputs per patch, outputs) of the patch convolution ``Tower.patch_conv`` names; None where
        the row names none."""
        if not self.tower.patch_conv:
            return None
        return f"{self.tower_path}.{self.tower.patch_conv}", self._patch_inputs(), self.size("hidden")

    def projector_parts(self) -> tuple[tuple[str, int], ...]:
        """(module path, parameters) of every projector piece the config builds."""
        return tuple((f"{self.row.path}.{p.name}", self._piece_params(p)) for p in self._built_pieces(self.row.pieces))

    def _piece_params(self, p: Piece) -> int:
        """The parameters of one piece (``_piece_tensors``)."""
        return sum(numel for _, numel in self._piece_tensors(p))

    def _piece_tensors(self, p: Piece) -> tuple[tuple[str, int], ...]:
        """(name suffix, numel) of one piece's tensors: a norm's ``.weight`` (and a LayerNorm's ``.bias``), a bare
        matrix (no suffix), an embedding's ``.weight``, a Linear's, convolution's or Conv1d's ``.weight`` and
        ``.bias``."""
        d_in = self._width(p.d_in)
        if p.kind in ("rmsnorm", "layernorm"):
            return ((".weight", d_in),) + (((".bias", d_in),) if p.kind == "layernorm" else ())
        d_out = self._width(p.d_out)
        if p.kind in ("matrix", "embedding", "conv"):
            weight, bias = d_in * d_out, d_out if p.bias is True else 0
        else:  # linear (taps 1), conv1d
            weight, bias = d_in * d_out * p.taps, d_out if self._bias(p) else 0
        return (("" if p.kind == "matrix" else ".weight", weight),) + (((".bias", bias),) if bias else ())


def vision_of(config: Mapping[str, Any], text_hidden: int) -> Vision | None:
    """The laid-out tower and projector of a multimodal config.json; None when it has none or axlint cannot size
    it."""
    if not is_multimodal(config) or unsized_part(config):
        return None
    return Vision(config, text_hidden)

