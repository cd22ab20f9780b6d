"""Hybrid decoders: which token mixer each layer runs, and the shape of the mixers that are not softmax attention.

Most decoders run the same layer everywhere: the family's softmax attention, then a dense or MoE MLP. Hybrid models
mix other token mixers in (linear attention, state-space layers), some layers without an MLP or without a mixer.
A family row that names a ``layer_plan`` (``families.Family.layer_plan``) has its layers read from config.json by
the reader of that name in ``LAYER_PLANS``; every mixer a plan names other than "attention" is built by its
``MIXERS`` entry from the decoder config.json and the layer index. ``Architecture`` (model.py) lays a layer out from
its plan: parameters, module paths, LoRA targets and the activation model (memory/activations.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Literal, Mapping

from axlint.architectures.linear import Linear

MlpKind = Literal["dense", "moe"]

ATTENTION = "attention"
"""The family's usual softmax attention (``Family.attention_module``), laid out by ``Architecture``."""


@dataclass(frozen=True)
class LayerPlan:
    """One decoder layer: ``mixers``, its token mixers in module order ("attention" or a key of ``MIXERS``; empty for
    a layer without one), and ``mlp``: "dense", "moe" or None (a layer without an MLP)."""

    mixers: tuple[str, ...] = (ATTENTION,)
    mlp: MlpKind | None = "dense"

    @cached_property
    def has_attention(self) -> bool:
        return ATTENTION in self.mixers

    @cached_property
    def other_mixers(self) -> tuple[str, ...]:
        """The mixers ``MIXERS`` builds (every one but the family's attention)."""
        return tuple(m for m in self.mixers if m != ATTENTION)


@dataclass(frozen=True)
class MixerShape:
    """A token mixer of one layer, as its modelling code builds it.

    ``module``: its module name inside the decoder layer; ``linears``: its ``nn.Linear`` modules, named relative to
    ``module``; ``others``: every other parameter tensor as (name relative to ``module``, numel). Activations, in
    bytes per token of bf16 training: ``saved_per_token``, what it keeps for backward beyond the inputs of its
    Linears (those are counted once per input tensor by ``memory.activations.input_groups``, by ``d_in``);
    ``backward_per_token``, the gradient temporaries of its backward beyond what is saved. ``inner_linears``: the
    names of its Linears that read a tensor the mixer computes (its output projection); the others read the layer's
    normed input. ``trained_per_token``: what it keeps more when the base weights train (a norm's input to its
    weight's gradient). ``no_grad``: its forward runs under ``torch.no_grad`` (GLM-5's DSA indexer), so none of its
    Linears keeps its input for backward. ``layer_others``: parameter tensors the mixer adds to its layer outside its
    module, as (name relative to the layer, numel) (Mllama's tanh gates)."""

    module: str
    linears: tuple[Linear, ...]
    others: tuple[tuple[str, int], ...] = ()
    saved_per_token: float = 0.0
    backward_per_token: float = 0.0
    inner_linears: tuple[str, ...] = ()
    trained_per_token: float = 0.0
    no_grad: bool = False
    layer_others: tuple[tuple[str, int], ...] = ()

    @property
    def params(self) -> int:
        return (sum(lin.params for lin in self.linears) + sum(n for _, n in self.others)
                + sum(n for _, n in self.layer_others))

    @property
    def input_linears(self) -> tuple[Linear, ...]:
        """The Linears that read the layer's normed input."""
        return tuple(lin for lin in self.linears if lin.name not in self.inner_linears)

    @property
    def own_linears(self) -> tuple[Linear, ...]:
        """The Linears that read a tensor of the mixer's own (``inner_linears``)."""
        return tuple(lin for lin in self.linears if lin.name in self.inner_linears)


MixerBuilder = Callable[[Mapping[str, Any], int], MixerShape]
"""(decoder config.json, layer index) -> the mixer of that layer."""

PlanReader = Callable[[Mapping[str, Any], int], "tuple[LayerPlan, ...]"]
"""(decoder config.json, number of layers) -> one ``LayerPlan`` per layer."""

MIXERS: dict[str, MixerBuilder] = {}
"""Mixer kind -> its builder."""

LAYER_PLANS: dict[str, PlanReader] = {}
"""Name a ``Family`` row gives in ``layer_plan`` -> its reader of config.json."""

MIXER_NOTES: dict[str, str] = {}
"""Mixer kind -> the estimate's note on what its activation formula assumes (the kernels it models)."""

MIXER_UNSIZED: dict[str, str] = {}
"""Mixer kind -> why axlint does not size the activations of a model that runs it: the part is unsized and the
memory verdict unknown (DeepSeek-V4's attention, ``dsv4.py``)."""


# ---- Gated DeltaNet (Qwen3-Next, Qwen3.5) ---------------------------------------------------------------------------
FLA_CHUNK = 64
"""Chunk length of flash-linear-attention's chunked gated delta rule (``chunk_size=64``)."""

GATED_DELTANET_PATH = ("Gated DeltaNet layers: the activations of flash-linear-attention's chunk_gated_delta_rule "
                       "(Axolotl installs it) and of the causal convolution in PyTorch (Axolotl's Qwen3-Next and "
                       "Qwen3.5 examples uninstall causal-conv1d); without flash-linear-attention the PyTorch fallback "
                       "keeps more, and Axolotl's README says packed sequences then fail")
"""The estimate's note for a model with Gated DeltaNet layers: the path the activation formula models. Axolotl 0.18
depends on flash-linear-attention 0.4.1 (pyproject.toml) and its examples/qwen3-next and examples/qwen3.5 READMEs say
`uv pip uninstall causal-conv1d && uv pip install flash-linear-attention==0.4.1`; transformers 5.24 then runs fla's
``chunk_gated_delta_rule`` and, without the causal_conv1d package, its own PyTorch ``causal_conv1d_fn``
(``use_kernel_func_from_hub_with_fallback``)."""


@dataclass(frozen=True)
class DeltaNetSizes:
    """The sizes of a Gated DeltaNet layer from config.json (defaults: transformers 5.24 ``Qwen3NextConfig`` /
    ``Qwen3_5TextConfig``): ``key_heads`` Hk and ``value_heads`` Hv of ``key_dim`` dk / ``value_dim`` dv, the causal
    convolution's ``kernel`` width."""

    hidden: int
    key_heads: int
    value_heads: int
    key_head_dim: int
    value_head_dim: int
    kernel: int

    @classmethod
    def read(cls, config: Mapping[str, Any]) -> "DeltaNetSizes":
        def get(key: str, default: int) -> int:
            return int(config.get(key) or default)
        return cls(int(config["hidden_size"]), get("linear_num_key_heads", 16), get("linear_num_value_heads", 32),
                   get("linear_key_head_dim", 128), get("linear_value_head_dim", 128),
                   get("linear_conv_kernel_dim", 4))

    @property
    def keys(self) -> int:
        """K = Hk·dk, the width of q and of k."""
        return self.key_heads * self.key_head_dim

    @property
    def values(self) -> int:
        """Vd = Hv·dv, the width of v, of the output gate z and of the core output."""
        return self.value_heads * self.value_head_dim

    @property
    def conv(self) -> int:
        """C = 2K + Vd: the channels of the causal convolution (q, k and v)."""
        return 2 * self.keys + self.values


def gated_deltanet_saved(s: DeltaNetSizes) -> float:
    """Bytes per token a Gated DeltaNet layer keeps for backward beyond its Linears' inputs, on the path of
    ``GATED_DELTANET_PATH``: 12K + 20Vd + 8Hk + 146Hv, the sum of

    - the causal convolution in PyTorch (transformers 5.24 ``causal_conv1d_fn`` without the causal_conv1d package:
      ``F.conv1d`` then SiLU): the convolution's input, the in-projection's q|k|v output, and its padded output,
      which SiLU keeps, 2C each, 4C = 8K + 4Vd (causal-conv1d's fused kernel would keep the input only, 2C; checked
      on a CPU with real tensors, tests/test_mixers.py);
    - flash-linear-attention (fla-org/flash-linear-attention ``fla/ops/gated_delta_rule/chunk.py``,
      ``ChunkGatedDeltaRuleFunction.forward`` saves q, q_rstd, k, k_rstd, v, g, beta, A): the l2-normalised q and k
      2K each, their fp32 rstd 4Hk each, v 2Vd, the chunk-local cumsum of g in fp32 4Hv, beta 2Hv (the sigmoid's
      own saved output), the bf16 WY matrix A of ``FLA_CHUNK`` columns per value head 128Hv;
    - the decay g = -exp(A_log)·softplus(a + dt_bias) in PyTorch (transformers 5.24
      ``Qwen3_5GatedDeltaNet.forward``): softplus' fp32 input and output 4Hv each;
    - the gated RMSNorm in PyTorch (``Qwen3_5RMSNormGated``, not replaced by a kernel): the fp32 core output 4Vd
      (pow and the rsqrt product), its fp32 rsqrt 4Hv, the weighted bf16 norm 2Vd and the fp32 silu(z) 4Vd (the
      gate product), the fp32 z 4Vd (silu); its normalised bf16 input to the weight, 2Vd, only when the weight
      trains (``gated_deltanet_trained``).

    K = Hk·dk, Vd = Hv·dv, C = 2K + Vd (``DeltaNetSizes``)."""
    k, v, hk, hv = s.keys, s.values, s.key_heads, s.value_heads
    conv = 2 * s.conv + 2 * s.conv  # the convolution's input and its padded output
    fla = 2 * k + 2 * k + 4 * hk + 4 * hk + 2 * v + 4 * hv + 2 * hv + 2 * FLA_CHUNK * hv
    decay = 4 * hv + 4 * hv
    gated_norm = 4 * v + 4 * hv + 2 * v + 4 * v + 4 * v
    return float(conv + fla + decay + gated_norm)


def gated_deltanet_trained(s: DeltaNetSizes) -> float:
    """Bytes per token more when the gated RMSNorm's weight trains: its bf16 normalised input, 2Vd."""
    return float(2 * s.values)


def gated_deltanet_backward(s: DeltaNetSizes) -> float:
    """Gradient temporaries per token of a Gated DeltaNet layer's backward, the tensors fla's
    ``chunk_gated_delta_rule_bwd`` allocates and holds until it returns, with the gated RMSNorm's fp32 gradients and
    the convolution's input gradient: Hv·dk·dv/16 + 4Hv·dk + 18Vd + 6K + 2C. That is: the chunk states h and their
    gradient dh, bf16 [Hv, dk, dv] per ``FLA_CHUNK`` tokens (``k.new_empty(B, NT, H, K, V)``) 2·2·Hv·dk·dv/64; the
    recomputed w and its gradient dw 2Hv·dk each; u, v_new and three value gradients 2Vd each; dq, dk and dk2 2K
    each; the norm's fp32 gradients of x and of the gate 8Vd; the convolution's dx 2C."""
    states = s.value_heads * s.key_head_dim * s.value_head_dim * 4 // FLA_CHUNK
    return float(states + 4 * s.value_heads * s.key_head_dim + 10 * s.values + 6 * s.keys + 8 * s.values
                 + 2 * s.conv)


def _gated_deltanet(config: Mapping[str, Any], projections: tuple[Linear, ...]) -> MixerShape:
    """A Gated DeltaNet layer at ``linear_attn`` with its in-projections ``projections``: the depthwise causal
    convolution ``conv1d`` (C x 1 x kernel, no bias), ``dt_bias`` and ``A_log`` (Hv each), the gated RMSNorm
    ``norm`` (dv) and ``out_proj`` (Vd -> h, no bias)."""
    s = DeltaNetSizes.read(config)
    others = (("conv1d.weight", s.conv * s.kernel), ("dt_bias", s.value_heads), ("A_log", s.value_heads),
              ("norm.weight", s.value_head_dim))
    return MixerShape("linear_attn", projections + (Linear("out_proj", s.values, s.hidden),), others,
                      gated_deltanet_saved(s), gated_deltanet_backward(s), inner_linears=("out_proj",),
                      trained_per_token=gated_deltanet_trained(s))


def gated_deltanet_fused(config: Mapping[str, Any], layer: int) -> MixerShape:
    """Qwen3-Next (transformers 5.24 ``models/qwen3_next/modeling_qwen3_next.py``, ``Qwen3NextGatedDeltaNet``): two
    in-projections, ``in_proj_qkvz`` (h -> 2K + 2Vd) and ``in_proj_ba`` (h -> 2Hv), no biases."""
    s = DeltaNetSizes.read(config)
    return _gated_deltanet(config, (Linear("in_proj_qkvz", s.hidden, 2 * s.keys + 2 * s.values),
                                    Linear("in_proj_ba", s.hidden, 2 * s.value_heads)))


def gated_deltanet_split(config: Mapping[str, Any], layer: int) -> MixerShape:
    """Qwen3.5 (transformers 5.24 ``models/qwen3_5/modeling_qwen3_5.py`` ``Qwen3_5GatedDeltaNet``, and the same
    layer in ``models/qwen3_5_moe``): four in-projections, ``in_proj_qkv`` (h -> C), ``in_proj_z`` (h -> Vd),
    ``in_proj_b`` and ``in_proj_a`` (h -> Hv each), no biases."""
    s = DeltaNetSizes.read(config)
    return _gated_deltanet(config, (Linear("in_proj_qkv", s.hidden, s.conv), Linear("in_proj_z", s.hidden, s.values),
                                    Linear("in_proj_b", s.hidden, s.value_heads),
                                    Linear("in_proj_a", s.hidden, s.value_heads)))


def qwen_sparse_layer(config: Mapping[str, Any], layer: int) -> bool:
    """The Qwen-MoE rule (transformers 5.24 ``Qwen3NextDecoderLayer``): a MoE block when config.json has experts,
    ``layer`` is not in ``mlp_only_layers`` and ``(layer + 1) % decoder_sparse_step == 0``."""
    return (bool(config.get("num_experts")) and layer not in (config.get("mlp_only_layers") or [])
            and (layer + 1) % int(config.get("decoder_sparse_step") or 1) == 0)


def _layer_types(config: Mapping[str, Any], layers: int) -> list[str]:
    """config.json's ``layer_types``; without it the config classes' default: every ``full_attention_interval``-th
    layer (default 4) full attention, the others linear attention."""
    types = config.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return [str(t) for t in types]
    interval = int(config.get("full_attention_interval") or 4)
    return ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(layers)]


def _qwen_hybrid_plan(mixer: str) -> PlanReader:
    """The plan of a Qwen hybrid decoder whose linear-attention layers run ``mixer``: "linear_attention" layers
    that mixer, "full_attention" layers the family's attention; every layer an MLP, MoE by ``qwen_sparse_layer``
    (Qwen3.5-MoE's configs name experts and neither key, so every layer is MoE, as ``Qwen3_5MoeDecoderLayer``
    builds it; a Qwen3.5 dense config names no experts)."""
    def plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
        return tuple(LayerPlan((mixer if kind == "linear_attention" else ATTENTION,),
                               "moe" if qwen_sparse_layer(config, i) else "dense")
                     for i, kind in enumerate(_layer_types(config, layers)))
    return plan


MIXER_NOTES.update({"gated_deltanet": GATED_DELTANET_PATH, "gated_deltanet_split": GATED_DELTANET_PATH})
MIXERS.update({"gated_deltanet": gated_deltanet_fused, "gated_deltanet_split": gated_deltanet_split})
LAYER_PLANS.update({"qwen3_next": _qwen_hybrid_plan("gated_deltanet"),
                    "qwen3_5": _qwen_hybrid_plan("gated_deltanet_split")})


# ---- Kimi Delta Attention (Kimi Linear) -----------------------------------------------------------------------------
KDA_PATH = ("Kimi Delta Attention layers: the activations of flash-linear-attention's chunk_kda and causal-conv1d's "
            "kernel, which transformers runs when both are installed; without them the PyTorch fallback keeps more")
"""The estimate's note for a model with KDA layers: the kernel path the activation formula models."""


@dataclass(frozen=True)
class KdaSizes:
    """The sizes of a KDA layer: ``heads`` H of ``head_dim`` d (q, k and v alike), the short convolution's
    ``kernel``; read from config.json's ``linear_attn_config`` (num_heads, head_dim, short_conv_kernel_size: the
    published files), else the top-level linear_num_heads / linear_head_dim / linear_conv_kernel_dim that transformers
    5.24's ``KimiLinearConfig`` writes, else its defaults 32 / 128 / 4."""

    hidden: int
    heads: int
    head_dim: int
    kernel: int

    @classmethod
    def read(cls, config: Mapping[str, Any]) -> "KdaSizes":
        nested = config.get("linear_attn_config")
        nested = nested if isinstance(nested, Mapping) else {}

        def get(key: str, top: str, default: int) -> int:
            return int(nested.get(key) or config.get(top) or default)
        return cls(int(config["hidden_size"]), get("num_heads", "linear_num_heads", 32),
                   get("head_dim", "linear_head_dim", 128), get("short_conv_kernel_size", "linear_conv_kernel_dim", 4))

    @property
    def width(self) -> int:
        """D = H·d, the width of q, k, v, the decay g, the output gate and the core output."""
        return self.heads * self.head_dim


def kda_saved(s: KdaSizes) -> float:
    """Bytes per token a KDA layer keeps for backward beyond its Linears' inputs, on the kernel path (``KDA_PATH``):
    45D + 398H, the sum of

    - causal-conv1d (Dao-AILab/causal-conv1d ``CausalConv1dFn.forward`` saves x): the concatenated q|k|v
      projections, 2·3D;
    - flash-linear-attention (fla-org/flash-linear-attention ``fla/ops/kda/chunk.py``, ``ChunkKDAFunction.forward``
      saves q, q_rstd, k, k_rstd, v, g_cumsum, g, beta, Aqk, Akk; w, u, qg, kg, v_new and h are None without
      ``disable_recompute``, ``chunk_kda_fwd`` in ``chunk_fwd.py``): the l2-normalised bf16 q and k 4D, their fp32
      rstd 8H, v 2D, the chunk-local cumsum of g in fp32 4D and g itself, the forget gate's fp32 output, 4D; beta,
      the sigmoid's bf16 output, 2H; Aqk in fp32 and Akk in bf16 (``chunk_kda_fwd_intra`` in ``chunk_intra.py``),
      ``FLA_CHUNK`` columns per head, 256H + 128H;
    - the forget gate in PyTorch (transformers 5.24 ``KimiLinearForgetGate.forward``, -exp(A_log)·softplus(g +
      dt_bias) in fp32): exp's output 4D, log's input 4D, where's mask 1D and the softplus the product keeps 4D;
    - the gated RMSNorm in PyTorch (``KimiLinearRMSNormGated``, fp32 throughout): its fp32 input 4D, rsqrt 4H, the
      weighted norm 4D and sigmoid(gate) 4D; the normalised input to the weight, 4D, only when the weight trains
      (``kda_trained``).

    D = H·d (``KdaSizes``)."""
    d, h = s.width, s.heads
    conv = 2 * 3 * d
    fla = 4 * d + 8 * h + 2 * d + 4 * d + 4 * d + 2 * h + 4 * FLA_CHUNK * h + 2 * FLA_CHUNK * h
    forget_gate = 4 * d + 4 * d + d + 4 * d
    gated_norm = 4 * d + 4 * h + 4 * d + 4 * d
    return float(conv + fla + forget_gate + gated_norm)


def kda_trained(s: KdaSizes) -> float:
    """Bytes per token more when the gated RMSNorm's weight trains: its fp32 normalised input, 4D."""
    return float(4 * s.width)


def kda_backward(s: KdaSizes) -> float:
    """Gradient temporaries per token of a KDA layer's backward (fla ``chunk_kda_bwd``, recomputing what the forward
    dropped), with the gated RMSNorm's fp32 gradients and the convolution's input gradient: H·d²/16 + 42D. That is:
    the chunk states h and their gradient dh, bf16 [H, d, d] per ``FLA_CHUNK`` tokens, 2·2·H·d²/64; the recomputed w,
    u, qg, kg and v_new 2D each; dq, dk, dv 2D each and the intra-chunk dq2, dk2 2D each; the fp32 gate gradients dg
    and dg2 4D each; the norm's fp32 gradients of its input and its gate 8D; the convolution's dx 2·3D."""
    d = s.width
    states = s.heads * s.head_dim * s.head_dim * 4 // FLA_CHUNK
    return float(states + 10 * d + 6 * d + 4 * d + 8 * d + 8 * d + 6 * d)


def kda(config: Mapping[str, Any], layer: int) -> MixerShape:
    """A KDA layer at ``self_attn`` (transformers 5.24 ``models/kimi_linear/modeling_kimi_linear.py``,
    ``KimiLinearDeltaAttention``): q_proj, k_proj, v_proj (h -> D), the depthwise ``conv1d`` over q|k|v (3D x 1 x
    kernel, no bias), ``forget_gate`` (f_a_proj h -> d, f_b_proj d -> D, dt_bias D, A_log H), ``b_proj`` (h -> H),
    g_a_proj (h -> d) and g_b_proj (d -> D) making the output gate, the gated RMSNorm ``o_norm`` (d) and ``o_proj``
    (D -> h); no biases."""
    s = KdaSizes.read(config)
    h, d, dk = s.hidden, s.width, s.head_dim
    linears = (Linear("q_proj", h, d), Linear("k_proj", h, d), Linear("v_proj", h, d),
               Linear("forget_gate.f_a_proj", h, dk), Linear("forget_gate.f_b_proj", dk, d),
               Linear("b_proj", h, s.heads), Linear("g_a_proj", h, dk), Linear("g_b_proj", dk, d),
               Linear("o_proj", d, h))
    others = (("conv1d.weight", 3 * d * s.kernel), ("forget_gate.dt_bias", d), ("forget_gate.A_log", s.heads),
              ("o_norm.weight", dk))
    return MixerShape("self_attn", linears, others, kda_saved(s), kda_backward(s),
                      inner_linears=("forget_gate.f_b_proj", "g_b_proj", "o_proj"), trained_per_token=kda_trained(s))


def _kimi_layer_types(config: Mapping[str, Any], layers: int) -> list[str]:
    """config.json's ``layer_types``; else ``linear_attn_config``'s 1-based ``full_attn_layers`` (the others KDA);
    else ``KimiLinearConfig``'s default: every fourth layer from layer 4 (0-based) full attention."""
    types = config.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return [str(t) for t in types]
    nested = config.get("linear_attn_config")
    full = nested.get("full_attn_layers") if isinstance(nested, Mapping) else None
    if isinstance(full, list):
        return ["full_attention" if i + 1 in full else "linear_attention" for i in range(layers)]
    return ["full_attention" if i and i % 4 == 0 else "linear_attention" for i in range(layers)]


def kimi_linear_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """Kimi Linear (``KimiLinearDecoderLayer``): "full_attention" layers MLA (the family's attention), the others KDA;
    the MLP MoE by config.json's ``mlp_layer_types`` ("sparse"), else from layer ``first_k_dense_replace`` (default
    1) on, as ``KimiLinearConfig`` builds that list."""
    kinds = config.get("mlp_layer_types")
    if not (isinstance(kinds, list) and len(kinds) == layers):
        dense = int(config.get("first_k_dense_replace", 1) or 0)
        kinds = ["dense" if i < dense else "sparse" for i in range(layers)]
    return tuple(LayerPlan((ATTENTION if kind == "full_attention" else "kda",), "moe" if mlp == "sparse" else "dense")
                 for kind, mlp in zip(_kimi_layer_types(config, layers), kinds))


MIXER_NOTES["kda"] = KDA_PATH
MIXERS["kda"] = kda
LAYER_PLANS["kimi_linear"] = kimi_linear_plan


# ---- Gemma 3n's AltUp and LAuReL blocks ------------------------------------------------------------------------------
def altup(config: Mapping[str, Any], layer: int) -> MixerShape:
    """models/gemma3n/modeling_gemma3n.py (transformers 5.24) ``Gemma3nTextAltUp`` at "altup", for n =
    altup_num_inputs (default 4) residual streams of width h: correction_coefs (n -> n), prediction_coefs (n -> n²)
    and modality_router (h -> n), bias-free, each reading a tensor of the block's own; correct_output_scale (h) and
    router_norm (h). Kept per token (read from ``predict`` / ``correct``, bf16): the streams the prediction matmul
    reads and the repeated innovation its correction multiplies, 2·n·h each, and two router norms' fp32 inputs 4h
    each; the coefficient tensors (n², n per token) are left out."""
    h, n = int(config["hidden_size"]), int(config.get("altup_num_inputs") or 4)
    linears = (Linear("correction_coefs", n, n), Linear("prediction_coefs", n, n * n), Linear("modality_router", h, n))
    return MixerShape("altup", linears, (("correct_output_scale", h), ("router_norm.weight", h)),
                      saved_per_token=4.0 * n * h + 8.0 * h, inner_linears=tuple(lin.name for lin in linears))


def laurel(config: Mapping[str, Any], layer: int) -> MixerShape:
    """``Gemma3nTextLaurelBlock`` at "laurel": linear_left (h -> laurel_rank r, default 64) reads the layer's normed
    input, linear_right (r -> h) its output, then post_laurel_norm (h), whose fp32 input 4h it keeps."""
    h, r = int(config["hidden_size"]), int(config.get("laurel_rank") or 64)
    return MixerShape("laurel", (Linear("linear_left", h, r), Linear("linear_right", r, h)),
                      (("post_laurel_norm.weight", h),), saved_per_token=4.0 * h, inner_linears=("linear_right",))


def gemma3n_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    """Gemma 3n (``Gemma3nTextDecoderLayer``): every layer the family's attention, the AltUp and LAuReL blocks and a
    dense MLP."""
    return (LayerPlan((ATTENTION, "altup", "laurel")),) * layers


MIXERS.update({"altup": altup, "laurel": laurel})
LAYER_PLANS["gemma3n"] = gemma3n_plan
