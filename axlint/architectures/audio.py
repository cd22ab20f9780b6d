"""Audio encoders laid out beside a vision tower: the conformers of Gemma 4 and Gemma 3n (``AUDIO_TOWERS``, keyed by
the audio_config's model_type), which a projector row with an ``audio`` part names (``vision.Projector``).

Their layout (two feed-forward halves around attention with relative positions and a light convolution) is not the
transformer layer a ``vision.Tower`` row describes, so each is one function of its audio_config, checked against a
model built on the meta device (tests/test_vision.py, tests/test_coverage_gemma.py, tests/test_coverage_gemma3n.py).
An audio encoder that is a model's only tower and is a transformer (Voxtral's Whisper encoder) is a ``Tower`` row
instead (``vision.TOWERS["voxtral_encoder"]``).
"""
from __future__ import annotations

from typing import Any, Mapping

from axlint.architectures.linear import VisionLinear


def gemma4_audio_tower(ac: Mapping[str, Any]) -> tuple[tuple[VisionLinear, ...], int]:
    """The Gemma 4 audio encoder (models/gemma4/modeling_gemma4.py, transformers 5.24, Gemma4AudioModel at
    model.audio_tower), sized from audio_config with Gemma4AudioConfig's defaults: its Linears and the count of its
    other parameters. H = hidden_size, n heads of d = H / n, channels (c0, c1), kernel k.

    - subsample_conv_projection: layer0 / layer1 a bias-free 3 x 3 Conv2d (1 -> c0, c0 -> c1) and a LayerNorm
      without bias (c0, c1); input_proj_linear (c0 / 4)·c1 -> H, no bias
    - each layer: feed_forward1 / feed_forward2 (ffw_layer_1 H -> 4H, ffw_layer_2 4H -> H, pre / post RMSNorms);
      self_attn q / k / v_proj H -> n·d, post H -> H (inside Gemma4ClippableLinear: ``.linear``, bounds are buffers),
      relative_k_proj H -> n·d (a plain Linear), per_dim_scale d; lconv1d linear_start H -> 2H, linear_end H -> H,
      a depthwise causal Conv1d H·k, pre_layer_norm and conv_norm; norm_pre_attn, norm_post_attn, norm_out: 9H + d
      + H·k besides the Linears
    - output_proj H -> output_proj_dims with a bias; rel_pos_enc holds a buffer only."""
    h, layers, heads = int(ac.get("hidden_size", 1024)), int(ac.get("num_hidden_layers", 12)), \
        int(ac.get("num_attention_heads", 8))
    c0, c1 = (int(c) for c in ac.get("subsampling_conv_channels") or (128, 32))
    kernel, out = int(ac.get("conv_kernel_size", 5)), int(ac.get("output_proj_dims", 1536))
    d, root = h // heads, "model.audio_tower"
    linears = [VisionLinear(f"{root}.subsample_conv_projection.input_proj_linear", (c0 // 4) * c1, h, False)]
    for i in range(layers):
        layer = f"{root}.layers.{i}"
        for ffw in ("feed_forward1", "feed_forward2"):
            linears += [VisionLinear(f"{layer}.{ffw}.ffw_layer_1.linear", h, 4 * h, False),
                        VisionLinear(f"{layer}.{ffw}.ffw_layer_2.linear", 4 * h, h, False)]
        linears += [VisionLinear(f"{layer}.self_attn.{n}.linear", h, heads * d, False) for n in ("q_proj", "k_proj",
                                                                                               "v_proj")]
        linears += [VisionLinear(f"{layer}.self_attn.post.linear", h, h, False),
                    VisionLinear(f"{layer}.self_attn.relative_k_proj", h, heads * d, False),
                    VisionLinear(f"{layer}.lconv1d.linear_start.linear", h, 2 * h, False),
                    VisionLinear(f"{layer}.lconv1d.linear_end.linear", h, h, False)]
    linears.append(VisionLinear(f"{root}.output_proj", h, out, True))
    others = c0 * 9 + c0 + c1 * c0 * 9 + c1 + layers * (9 * h + d + h * kernel)
    return tuple(linears), others


def gemma3n_audio_tower(ac: Mapping[str, Any]) -> tuple[tuple[VisionLinear, ...], int]:
    """The Gemma 3n audio encoder (models/gemma3n/modeling_gemma3n.py, transformers 5.24, Gemma3nAudioEncoder at
    model.audio_tower), sized from audio_config with Gemma3nAudioConfig's defaults: its Linears and the count of its
    other parameters. H = hidden_size, n = conf_num_attention_heads of d = H // n, channels (c0, c1), kernels
    (kh_i, kw_i) and strides (sh_i, sw_i) of the two subsampling convolutions, conformer kernel k.

    - subsample_conv_projection: conv_0 / conv_1, each a bias-free Conv2d (1 -> c0, c0 -> c1; kh_i x kw_i) and a
      cumulative group norm of its channels (weight only); input_proj_linear (c1 x F) -> H, no bias, F the frequency
      bins left after both convolutions: F_0 = input_feat_size, F_i+1 = (F_i + 2 - kw_i) // sw_i + 1 (one bin of
      padding each side)
    - each conformer.N: ffw_layer_start / ffw_layer_end (ffw_layer_1 H -> 4H, ffw_layer_2 4H -> H, pre / post
      RMSNorms); attention.attn q / k / v_proj H -> n·d and relative_position_embedding.pos_proj H -> n·d,
      per_dim_scale d, attention.post H -> H, pre_attn_norm and post_norm; lconv1d linear_start H -> 2H, linear_end
      H -> H, a depthwise Conv1d H·k without bias, pre_layer_norm and conv_norm; the block's norm: 9H + d + H·k
      besides the Linears, all Linears bias-free."""
    h, layers = int(ac.get("hidden_size", 1536)), int(ac.get("conf_num_hidden_layers", 12))
    heads, kernel = int(ac.get("conf_num_attention_heads", 8)), int(ac.get("conf_conv_kernel_size", 5))
    c0, c1 = (int(c) for c in ac.get("sscp_conv_channel_size") or (128, 32))
    kernels = ac.get("sscp_conv_kernel_size") or ((3, 3), (3, 3))
    strides = ac.get("sscp_conv_stride_size") or ((2, 2), (2, 2))
    bins = int(ac.get("input_feat_size", 128))
    for (_, kw), (_, sw) in zip(kernels, strides):
        bins = (bins + 2 - int(kw)) // int(sw) + 1
    d, root = h // heads, "model.audio_tower"
    linears = [VisionLinear(f"{root}.subsample_conv_projection.input_proj_linear", c1 * bins, h, False)]
    for i in range(layers):
        layer = f"{root}.conformer.{i}"
        for ffw in ("ffw_layer_start", "ffw_layer_end"):
            linears += [VisionLinear(f"{layer}.{ffw}.ffw_layer_1", h, 4 * h, False),
                        VisionLinear(f"{layer}.{ffw}.ffw_layer_2", 4 * h, h, False)]
        linears += [VisionLinear(f"{layer}.attention.attn.{n}", h, heads * d, False)
                    for n in ("relative_position_embedding.pos_proj", "q_proj", "k_proj", "v_proj")]
        linears += [VisionLinear(f"{layer}.attention.post", h, h, False),
                    VisionLinear(f"{layer}.lconv1d.linear_start", h, 2 * h, False),
                    VisionLinear(f"{layer}.lconv1d.linear_end", h, h, False)]
    (kh0, kw0), (kh1, kw1) = ((int(a), int(b)) for a, b in kernels)
    others = c0 * kh0 * kw0 + c0 + c1 * c0 * kh1 * kw1 + c1 + layers * (9 * h + d + h * kernel)
    return tuple(linears), others


AUDIO_TOWERS = {"gemma4_audio": gemma4_audio_tower, "gemma3n_audio": gemma3n_audio_tower}
"""Audio encoders by audio model_type: audio_config -> (its Linears at their module paths, its other parameters)."""
