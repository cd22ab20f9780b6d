"""State-space and short-convolution token mixers, and the layer plans of the hybrid families that run them.

Three mixer kinds (``mixers.MIXERS`` keys), each read from the decoder config.json as transformers 5.24 builds it:

- ``"mamba2"``: Mamba-2 (models/falcon_h1 ``FalconH1Mixer``, models/nemotron_h ``NemotronHMamba2Mixer``,
  models/granitemoehybrid ``GraniteMoeHybridMambaLayer``): ``in_proj`` h -> 2·d + 2·g·n + H (gate z, x, B, C, dt),
  a depthwise ``conv1d`` over the d + 2·g·n channels of x|B|C (kernel k, bias optional), ``dt_bias``, ``A_log``
  and ``D`` of H each, the gated RMSNorm ``norm.weight`` of d (Falcon-H1 only with ``mamba_rms_norm``) and
  ``out_proj`` d -> h. d the inner width, H heads, g groups, n the state size.
- ``"mamba"``: Mamba-1 (models/jamba ``JambaMambaMixer``, models/mamba ``MambaMixer``): ``in_proj`` h -> 2d, a
  depthwise ``conv1d`` over d (kernel k), ``x_proj`` d -> r + 2n (no bias), ``dt_proj`` r -> d (biased),
  ``A_log`` d x n, ``D`` d, ``out_proj`` d -> h; Jamba adds RMSNorm weights on dt, B and C (r, n, n).
  r the time-step rank (``"auto"``: ceil(h / 16)).
- ``"short_conv"``: LFM2's gated short convolution (models/lfm2 ``Lfm2ShortConv``, models/lfm2_moe
  ``Lfm2MoeShortConv``): ``in_proj`` h -> 3h (B, C, x), a depthwise ``conv`` over h (kernel ``conv_L_cache``),
  ``out_proj`` h -> h, all biased with ``conv_bias``.

Activations model the training path that runs when the ``mamba-ssm`` and ``causal-conv1d`` kernels are installed
(transformers 5.24 maps its ``mamba2_split_conv1d_scan_combined``, ``mamba_inner_fn``, ``selective_scan_fn`` and
``causal_conv1d_fn`` to them: ``use_kernel_func_from_hub_with_fallback``). Bytes per token of bf16 training;
what a mixer keeps is counted beyond the inputs of its Linears, which ``memory.activations`` counts by ``d_in``
(2 bytes each). The sources are state-spaces/mamba 2.3 ``mamba_ssm/ops/triton/ssd_combined.py``
(``MambaSplitConv1dScanCombinedFn``), ``mamba_ssm/ops/selective_scan_interface.py`` (``SelectiveScanFn``,
``MambaInnerFn``), ``csrc/selective_scan/selective_scan.cpp`` (the scan's fp32 chunk states), and
Dao-AILab/causal-conv1d ``causal_conv1d/causal_conv1d_interface.py`` (``CausalConv1dFn`` keeps its input).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from axlint.architectures.linear import Linear
from axlint.architectures.mixers import ATTENTION, LAYER_PLANS, MIXER_NOTES, MIXERS, LayerPlan, MixerShape

BF16 = 2
FP32 = 4
SCAN_CHUNK = 2048
"""Tokens per chunk of the Mamba-1 selective-scan kernel (selective_scan.cpp: ``n_chunks = (seqlen + 2047) / 2048``),
which keeps fp32 (state, state-input) pairs, 2n per channel, at every chunk end for backward."""


def _get(config: Mapping[str, Any], keys: tuple[str, ...], default: Any) -> Any:
    """The first of ``keys`` present (and not null) in config.json, else ``default``."""
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return default


# ---- Mamba-2 ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mamba2:
    """The sizes of one Mamba-2 mixer: ``inner`` d, ``heads`` H, ``groups`` g, ``state`` n, ``conv_kernel`` k,
    ``chunk`` the SSD chunk length Q; biases of the conv and the two projections; ``gated_norm``: the RMSNormGated
    weight exists (and the fused kernel normalises per group); ``scaled_input``: in_proj reads its own copy of the
    normed input (Falcon-H1 multiplies it by ``ssm_in_multiplier`` first, beside the attention's own copy)."""

    module: str
    hidden: int
    inner: int
    heads: int
    groups: int
    state: int
    conv_kernel: int
    chunk: int
    conv_bias: bool
    in_bias: bool
    out_bias: bool
    gated_norm: bool = True
    scaled_input: bool = False

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: x, B and C, d + 2·g·n."""
        return self.inner + 2 * self.groups * self.state

    @property
    def projection(self) -> int:
        """in_proj's output zxbcdt: z, x|B|C, dt, 2·d + 2·g·n + H."""
        return self.inner + self.conv_dim + self.heads


def falcon_h1_mamba2(config: Mapping[str, Any]) -> Mamba2:
    """models/falcon_h1 (5.24) ``FalconH1Mixer`` from FalconH1Config's keys and defaults: d = ``mamba_d_ssm``
    (1024 when absent, ``mamba_expand``·h when null), out_proj biased by ``projectors_bias``, the norm weight only
    with ``mamba_rms_norm``; in_proj reads hidden·ssm_in_multiplier (FalconH1Mixer.forward)."""
    h = int(config["hidden_size"])
    ssm = config.get("mamba_d_ssm", 1024)
    inner = int(ssm) if ssm is not None else int(_get(config, ("mamba_expand",), 2) * h)
    return Mamba2("mamba", h, inner, int(_get(config, ("mamba_n_heads",), 128)),
                  int(_get(config, ("mamba_n_groups",), 1)), int(_get(config, ("mamba_d_state",), 256)),
                  int(_get(config, ("mamba_d_conv",), 4)), int(_get(config, ("mamba_chunk_size",), 256)),
                  bool(_get(config, ("mamba_conv_bias",), True)), bool(_get(config, ("mamba_proj_bias",), False)),
                  bool(_get(config, ("projectors_bias",), False)), bool(_get(config, ("mamba_rms_norm",), False)),
                  scaled_input=True)


def nemotron_h_mamba2(config: Mapping[str, Any]) -> Mamba2:
    """models/nemotron_h (5.24) ``NemotronHMamba2Mixer``: d = ``mamba_num_heads``·``mamba_head_dim``, both
    projections biased by ``use_bias``; NemotronHConfig reads the legacy ``mamba_*`` names first when present."""
    heads = int(_get(config, ("mamba_num_heads",), 128))
    return Mamba2("mixer", int(config["hidden_size"]), heads * int(_get(config, ("mamba_head_dim",), 64)), heads,
                  int(_get(config, ("mamba_n_groups", "n_groups"), 8)), int(_get(config, ("ssm_state_size",), 128)),
                  int(_get(config, ("mamba_d_conv", "conv_kernel"), 4)),
                  int(_get(config, ("mamba_chunk_size", "chunk_size"), 128)),
                  bool(_get(config, ("mamba_conv_bias", "use_conv_bias"), True)),
                  bool(_get(config, ("use_bias",), False)), bool(_get(config, ("use_bias",), False)))


def granite_mamba2(config: Mapping[str, Any]) -> Mamba2:
    """models/granitemoehybrid (5.24) ``GraniteMoeHybridMambaLayer``: d = int(``mamba_expand``·h), both
    projections biased by ``mamba_proj_bias``."""
    h = int(config["hidden_size"])
    proj_bias = bool(_get(config, ("mamba_proj_bias",), False))
    return Mamba2("mamba", h, int(_get(config, ("mamba_expand",), 2) * h), int(_get(config, ("mamba_n_heads",), 128)),
                  int(_get(config, ("mamba_n_groups",), 1)), int(_get(config, ("mamba_d_state",), 256)),
                  int(_get(config, ("mamba_d_conv",), 4)), int(_get(config, ("mamba_chunk_size",), 256)),
                  bool(_get(config, ("mamba_conv_bias",), True)), proj_bias, proj_bias)


MAMBA2_SIZES = {"falcon_h1": falcon_h1_mamba2, "nemotron_h": nemotron_h_mamba2, "granitemoehybrid": granite_mamba2}
"""Decoder model_type -> reader of its Mamba-2 sizes."""


MAMBA2_PATH = ("Mamba-2 layers: the activations of mamba-ssm's fused mamba_split_conv1d_scan_combined (with "
               "causal-conv1d), which transformers runs in training when both are installed; without them the "
               "PyTorch fallback keeps more")
"""The estimate's note for a model with Mamba-2 layers: the kernel path ``mamba2_saved_per_token`` models."""
MAMBA1_PATH = ("Mamba layers: the activations of mamba-ssm's selective_scan_fn (Jamba, with causal-conv1d) or "
               "mamba_inner_fn (Mamba), which transformers runs in training when mamba-ssm and causal-conv1d are "
               "installed; without them the PyTorch fallback keeps more")
"""The estimate's note for a model with Mamba-1 layers: the kernel path ``mamba1_saved_per_token`` models."""


def mamba2_saved_per_token(m: Mamba2) -> float:
    """What the fused ``MambaSplitConv1dScanCombinedFn`` keeps (ssd_combined.py ``ctx.save_for_backward``):
    zxbcdt, the in_proj output, 2·(2d + 2gn + H); the scan output before the gated norm ``out_x``, 2d, which the
    fused out_proj reads (it recomputes the normed product in backward), counted here as out_proj's input; the
    norm's fp32 ``rstd``, 4g, when the norm has a weight. The conv output, dt, B and C are recomputed in
    backward."""
    return BF16 * m.projection + (FP32 * m.groups if m.gated_norm else 0)


def mamba2_trained_per_token(m: Mamba2) -> float:
    """Falcon-H1's in_proj reads its own copy of the normed input (× ssm_in_multiplier), beside the attention's
    (× attention_in_multiplier): 2h more when in_proj's weight trains (a LoRA adapter on in_proj keeps it too,
    which is not counted)."""
    return BF16 * m.hidden if m.scaled_input else 0.0


def mamba2_backward_per_token(m: Mamba2) -> float:
    """``MambaSplitConv1dScanCombinedFn.backward``: the zxbcdt gradient 2·(2d + 2gn + H); the recomputed conv
    output and its gradient 2·2·(d + 2gn); the out_proj input gradient, the recomputed norm output and the norm's
    input gradient 3·2d; the chunk states recomputed in fp32 and their gradient, 2·4·d·n/Q (one d x n state per
    head and chunk of Q tokens)."""
    return (BF16 * m.projection + 2 * BF16 * m.conv_dim + 3 * BF16 * m.inner
            + 2 * FP32 * m.inner * m.state / m.chunk)


def mamba2_shape(m: Mamba2) -> MixerShape:
    """The parameters and activations of one Mamba-2 mixer (module docstring)."""
    others = [("conv1d.weight", m.conv_dim * m.conv_kernel)]
    others += [("conv1d.bias", m.conv_dim)] if m.conv_bias else []
    others += [("dt_bias", m.heads), ("A_log", m.heads), ("D", m.heads)]
    others += [("norm.weight", m.inner)] if m.gated_norm else []
    linears = (Linear("in_proj", m.hidden, m.projection, m.in_bias), Linear("out_proj", m.inner, m.hidden, m.out_bias))
    return MixerShape(m.module, linears, tuple(others), mamba2_saved_per_token(m), mamba2_backward_per_token(m),
                      inner_linears=("out_proj",), trained_per_token=mamba2_trained_per_token(m))


def mamba2_mixer(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``MIXERS["mamba2"]``: the Mamba-2 mixer of a falcon_h1, nemotron_h or granitemoehybrid decoder (every one of
    its Mamba layers is the same)."""
    return mamba2_shape(MAMBA2_SIZES[str(config["model_type"])](config))


# ---- Mamba-1 ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mamba1:
    """The sizes of one Mamba-1 mixer: ``inner`` d, ``state`` n, ``conv_kernel`` k, ``rank`` r; ``proj_bias``
    biases in_proj and out_proj; ``bc_norms``: Jamba's RMSNorms on dt, B and C; ``fused``: the training forward is
    the one ``mamba_inner_fn`` (models/mamba), not causal_conv1d_fn + x_proj + selective_scan_fn (models/jamba)."""

    module: str
    hidden: int
    inner: int
    state: int
    conv_kernel: int
    rank: int
    conv_bias: bool
    proj_bias: bool
    bc_norms: bool
    fused: bool


def _rank(value: Any, hidden: int) -> int:
    """A time-step rank from config.json: ``"auto"`` is ceil(h / 16) (JambaConfig, MambaConfig)."""
    return math.ceil(hidden / 16) if value in (None, "auto") else int(value)


def jamba_mamba1(config: Mapping[str, Any]) -> Mamba1:
    """models/jamba (5.24) ``JambaMambaMixer`` from JambaConfig's keys: d = ``mamba_expand``·h."""
    h = int(config["hidden_size"])
    return Mamba1("mamba", h, int(_get(config, ("mamba_expand",), 2)) * h, int(_get(config, ("mamba_d_state",), 16)),
                  int(_get(config, ("mamba_d_conv",), 4)), _rank(config.get("mamba_dt_rank"), h),
                  bool(_get(config, ("mamba_conv_bias",), True)), bool(_get(config, ("mamba_proj_bias",), False)),
                  bc_norms=True, fused=False)


def mamba_mamba1(config: Mapping[str, Any]) -> Mamba1:
    """models/mamba (5.24) ``MambaMixer`` from MambaConfig's keys: d = ``intermediate_size`` when config.json has
    it, else int(``expand``·h) (MambaConfig.__post_init__ writes that, and a given intermediate_size overrides it)."""
    h = int(_get(config, ("hidden_size", "d_model"), 768))
    return Mamba1("mixer", h, int(_get(config, ("intermediate_size",), _get(config, ("expand",), 2) * h)),
                  int(_get(config, ("state_size",), 16)),
                  int(_get(config, ("conv_kernel",), 4)), _rank(config.get("time_step_rank"), h),
                  bool(_get(config, ("use_conv_bias",), True)), bool(_get(config, ("use_bias",), False)),
                  bc_norms=False, fused=True)


MAMBA1_SIZES = {"jamba": jamba_mamba1, "mamba": mamba_mamba1}
"""Decoder model_type -> reader of its Mamba-1 sizes."""


def scan_states_per_token(m: Mamba1) -> float:
    """The selective scan's fp32 chunk states, (2n per channel) x d per 2048 tokens: 4·2n·d / 2048 per token (one
    chunk per sequence below 2048 tokens keeps more per token: the estimate takes full chunks)."""
    return FP32 * 2 * m.state * m.inner / SCAN_CHUNK


def mamba1_saved_per_token(m: Mamba1) -> float:
    """Bytes per token kept for backward beyond the inputs of in_proj, x_proj (d), dt_proj (r) and out_proj (d).

    models/mamba, ``MambaInnerFn`` (checkpoint_lvl 1, the default): it keeps xz, the in_proj output, 2·2d; x_dbl,
    the x_proj output 2(r + 2n), whose first r columns are dt_proj's input; contiguous copies of B and C 2·2n; the
    scan output before the gate 2d, counted as out_proj's input (the gated product is recomputed); the scan chunk
    states (``scan_states_per_token``). The conv output, x_proj's input, is recomputed, not kept, so its 2d, which
    memory.activations counts, is taken off: 4d + 2(r + 2n) + 4n + scan - 2d - 2r = 2d + 8n + scan.

    models/jamba, causal_conv1d_fn + x_proj + selective_scan_fn: ``CausalConv1dFn`` keeps its input, a view of the
    in_proj output, and the scan keeps the gate z, another view: xz 2·2d; the dt/B/C RMSNorms keep their fp32 input
    4(r + 2n) (the normalised input, for their weights' gradient: ``mamba1_trained_per_token``);
    ``SelectiveScanFn`` keeps delta (dt_proj's output) 2d, contiguous B and C 2·2n, its output before the gate 2d
    and the chunk states; u, the conv output, is x_proj's input: 8d + 4r + 12n + scan."""
    if m.fused:
        return BF16 * (m.inner + 4 * m.state) + scan_states_per_token(m)
    return (BF16 * (2 * m.inner + m.inner + m.inner + 2 * m.state) + FP32 * (m.rank + 2 * m.state)
            + scan_states_per_token(m))


def mamba1_trained_per_token(m: Mamba1) -> float:
    """Jamba's dt/B/C RMSNorms keep their normalised input for their weights' gradient, 2(r + 2n), when the base
    weights train (models/jamba ``JambaRMSNorm``: weight · normed)."""
    return BF16 * (m.rank + 2 * m.state) if m.bc_norms else 0.0


def mamba1_backward_per_token(m: Mamba1) -> float:
    """``MambaInnerFn.backward`` (checkpoint_lvl 1): the gradients of xz 2·2d, of delta and of the conv output
    2·2d, and the recomputed conv output, delta and gated scan output 3·2d: 14d (Jamba's unfused backward, with
    nothing recomputed, allocates less: the estimate takes the larger)."""
    return BF16 * 7 * m.inner


def mamba1_shape(m: Mamba1) -> MixerShape:
    """The parameters and activations of one Mamba-1 mixer (module docstring)."""
    others = [("conv1d.weight", m.inner * m.conv_kernel)]
    others += [("conv1d.bias", m.inner)] if m.conv_bias else []
    others += [("A_log", m.inner * m.state), ("D", m.inner)]
    if m.bc_norms:
        others += [("dt_layernorm.weight", m.rank), ("b_layernorm.weight", m.state), ("c_layernorm.weight", m.state)]
    linears = (Linear("in_proj", m.hidden, 2 * m.inner, m.proj_bias), Linear("x_proj", m.inner, m.rank + 2 * m.state),
               Linear("dt_proj", m.rank, m.inner, True), Linear("out_proj", m.inner, m.hidden, m.proj_bias))
    return MixerShape(m.module, linears, tuple(others), mamba1_saved_per_token(m), mamba1_backward_per_token(m),
                      inner_linears=("x_proj", "dt_proj", "out_proj"), trained_per_token=mamba1_trained_per_token(m))


def mamba1_mixer(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``MIXERS["mamba"]``: the Mamba-1 mixer of a jamba or mamba decoder."""
    return mamba1_shape(MAMBA1_SIZES[str(config["model_type"])](config))


# ---- LFM2 short convolution -------------------------------------------------------------------------------------
def short_conv_saved_per_token(hidden: int) -> float:
    """``Lfm2ShortConv.forward``: B·x keeps its two factors, views of the in_proj output BCx, so all of it, 2·3h;
    the conv keeps its input B·x 2h (``CausalConv1dFn``; F.conv1d without the kernel likewise); C·conv keeps the
    conv output 2h (C is in BCx). out_proj's input, the contiguous product, is counted as its input: 10h."""
    return BF16 * (3 * hidden + hidden + hidden)


def short_conv_mixer(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``MIXERS["short_conv"]``: models/lfm2 ``Lfm2ShortConv`` (lfm2_moe's is the same), kernel ``conv_L_cache``
    (default 3), every part biased by ``conv_bias`` (default off). Backward: the gradients of BCx 2·3h, of the conv
    input and output 2·2h."""
    h, bias = int(config["hidden_size"]), bool(config.get("conv_bias", False))
    others = [("conv.weight", h * int(config.get("conv_L_cache", 3)))] + ([("conv.bias", h)] if bias else [])
    return MixerShape("conv", (Linear("in_proj", h, 3 * h, bias), Linear("out_proj", h, h, bias)), tuple(others),
                      short_conv_saved_per_token(h), BF16 * 5 * h, inner_linears=("out_proj",))


# ---- layer plans -------------------------------------------------------------------------------------------------
_NEMOTRON_PATTERN = {"M": LayerPlan(("mamba2",), None), "*": LayerPlan((ATTENTION,), None),
                     "E": LayerPlan((), "moe"), "-": LayerPlan((), "dense")}
"""models/nemotron_h (5.24): one mixer per block (NemotronHBlock: norm + mixer): hybrid_override_pattern's M
Mamba-2, * attention, E MoE, - MLP (NemotronHConfig._pattern_to_list)."""
_NEMOTRON_TYPES = {"linear_attention": "M", "mamba": "M", "full_attention": "*", "attention": "*", "moe": "E",
                   "mlp": "-"}
"""layers_block_type names (and the legacy ones configuration_utils.remap_legacy_layer_types maps) -> pattern."""


def falcon_h1_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """models/falcon_h1 ``FalconH1DecoderLayer``: Mamba-2 and attention side by side, then the MLP, in every layer."""
    return (LayerPlan(("mamba2", ATTENTION), "dense"),) * layers


def nemotron_h_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """One block per character of ``hybrid_override_pattern`` (a published config.json), else per entry of
    ``layers_block_type`` / ``layer_types`` (what transformers 5.24 writes); NemotronHConfig's default
    ["linear_attention", "moe", "full_attention", "mlp"] without either."""
    pattern = config.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        types = config.get("layers_block_type") or config.get("layer_types")
        pattern = "".join(_NEMOTRON_TYPES[t] for t in types) if isinstance(types, list) else "ME*-"
    return tuple(_NEMOTRON_PATTERN[c] for c in pattern)


def jamba_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """JambaConfig: attention where i % attn_layer_period == attn_layer_offset (8, 4), Mamba-1 elsewhere; MoE where
    i % expert_layer_period == expert_layer_offset (2, 1) and num_experts > 1 (``layers_num_experts``)."""
    period, offset = int(_get(config, ("attn_layer_period",), 8)), int(_get(config, ("attn_layer_offset",), 4))
    e_period, e_offset = int(_get(config, ("expert_layer_period",), 2)), int(_get(config, ("expert_layer_offset",), 1))
    moe = int(_get(config, ("num_experts",), 16)) > 1
    return tuple(LayerPlan((ATTENTION,) if i % period == offset else ("mamba",),
                           "moe" if moe and i % e_period == e_offset else "dense") for i in range(layers))


def granite_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """GraniteMoeHybridConfig.layer_types ("mamba" / "attention", or the 5.24 names linear_attention /
    full_attention; every layer Mamba-2 without it); the MLP is MoE (beside the shared MLP) with
    num_local_experts > 0, else the shared MLP alone."""
    types = config.get("layer_types") or config.get("layers_block_type") or ["mamba"] * layers
    mlp = "moe" if int(_get(config, ("num_local_experts",), 8)) > 0 else "dense"
    return tuple(LayerPlan(("mamba2",) if t in ("mamba", "linear_attention") else (ATTENTION,), mlp) for t in types)


def _lfm2_types(config: Mapping[str, Any], layers: int) -> list[str]:
    """Lfm2Config.layer_types, else "full_attention" at full_attn_idxs (every layer without them), "conv" elsewhere."""
    types = config.get("layer_types")
    if isinstance(types, list):
        return types
    full = config.get("full_attn_idxs")
    full = range(layers) if full is None else full
    return ["full_attention" if i in full else "conv" for i in range(layers)]


def lfm2_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """models/lfm2 ``Lfm2DecoderLayer``: the short conv in "conv" layers, attention in the others; a dense MLP."""
    return tuple(LayerPlan(("short_conv",) if t == "conv" else (ATTENTION,), "dense")
                 for t in _lfm2_types(config, layers))


def lfm2_moe_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """models/lfm2_moe ``Lfm2MoeDecoderLayer``: as LFM2, the MLP dense in the first num_dense_layers (2), MoE after."""
    dense = int(_get(config, ("num_dense_layers",), 2))
    return tuple(LayerPlan(("short_conv",) if t == "conv" else (ATTENTION,), "dense" if i < dense else "moe")
                 for i, t in enumerate(_lfm2_types(config, layers)))


def mamba_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """models/mamba ``MambaBlock``: a norm and the Mamba-1 mixer, no attention, no MLP."""
    return (LayerPlan(("mamba",), None),) * layers


SSM_MIXERS = {"mamba2": mamba2_mixer, "mamba": mamba1_mixer, "short_conv": short_conv_mixer}
"""Mixer kind -> builder."""
SSM_PLANS = {"falcon_h1": falcon_h1_plan, "nemotron_h": nemotron_h_plan, "jamba": jamba_plan,
             "granitemoehybrid": granite_plan, "lfm2": lfm2_plan, "lfm2_moe": lfm2_moe_plan, "mamba": mamba_plan}
"""Layer-plan name (a ``Family.layer_plan``) -> reader."""

MIXERS.update(SSM_MIXERS)
MIXER_NOTES.update({"mamba2": MAMBA2_PATH, "mamba": MAMBA1_PATH})
LAYER_PLANS.update(SSM_PLANS)
