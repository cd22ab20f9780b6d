"""The Mamba-2, Mamba-1 and short-conv mixers and the hybrid layer plans (axlint/architectures/ssm.py) against
transformers 5.24's modelling code: each mixer module is built on the meta device from a small config and its
parameter names and sizes must be the ones the builder writes out; each plan reader must name, per layer, the
mixers and the MLP the real model builds. The activation formulas are checked on small configs by hand."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axlint.architectures import ssm
from axlint.lint import LintOptions, lint_text
from axlint.packs import load_rules, select_rules
from axlint.architectures.mixers import MixerShape

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from transformers.models.falcon_h1.modeling_falcon_h1 import FalconH1Mixer  # noqa: E402
from transformers.models.granitemoehybrid.modeling_granitemoehybrid import GraniteMoeHybridMambaLayer  # noqa: E402
from transformers.models.jamba.modeling_jamba import JambaMambaMixer  # noqa: E402
from transformers.models.lfm2.modeling_lfm2 import Lfm2ShortConv  # noqa: E402
from transformers.models.lfm2_moe.modeling_lfm2_moe import Lfm2MoeShortConv  # noqa: E402
from transformers.models.mamba.modeling_mamba import MambaMixer  # noqa: E402
from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer  # noqa: E402

BASE = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 256}

MIXER_CASES: list[tuple[str, Any, str, dict[str, Any]]] = [
    ("falcon_h1", FalconH1Mixer, "mamba2", {"mamba_d_ssm": 96, "mamba_n_heads": 4, "mamba_d_state": 16}),
    ("falcon_h1", FalconH1Mixer, "mamba2", {"mamba_d_ssm": None, "mamba_expand": 2, "mamba_n_heads": 8,
                                            "mamba_n_groups": 2, "mamba_d_state": 8, "mamba_rms_norm": True,
                                            "mamba_conv_bias": False, "mamba_proj_bias": True,
                                            "projectors_bias": True, "mamba_d_conv": 3}),
    ("nemotron_h", NemotronHMamba2Mixer, "mamba2", {"mamba_num_heads": 4, "mamba_head_dim": 16, "n_groups": 2,
                                                    "ssm_state_size": 16, "layers_block_type": ["mamba", "moe"]}),
    ("nemotron_h", NemotronHMamba2Mixer, "mamba2", {"mamba_num_heads": 8, "mamba_head_dim": 8, "mamba_n_groups": 4,
                                                    "ssm_state_size": 8, "use_bias": True, "mamba_conv_bias": False,
                                                    "mamba_d_conv": 2, "hybrid_override_pattern": "M*"}),
    ("granitemoehybrid", GraniteMoeHybridMambaLayer, "mamba2", {"mamba_n_heads": 4, "mamba_d_state": 16}),
    ("granitemoehybrid", GraniteMoeHybridMambaLayer, "mamba2", {"mamba_n_heads": 8, "mamba_n_groups": 2,
                                                                "mamba_d_state": 8, "mamba_expand": 1,
                                                                "mamba_proj_bias": True, "mamba_conv_bias": False}),
    ("jamba", JambaMambaMixer, "mamba", {"mamba_d_state": 8}),
    ("jamba", JambaMambaMixer, "mamba", {"mamba_d_state": 4, "mamba_dt_rank": 6, "mamba_expand": 3,
                                         "mamba_conv_bias": False, "mamba_proj_bias": True, "mamba_d_conv": 2}),
    ("mamba", MambaMixer, "mamba", {"state_size": 8}),
    ("mamba", MambaMixer, "mamba", {"state_size": 4, "time_step_rank": 5, "intermediate_size": 192, "use_bias": True,
                                    "use_conv_bias": False, "conv_kernel": 2}),
    ("lfm2", Lfm2ShortConv, "short_conv", {"full_attn_idxs": [1]}),
    ("lfm2", Lfm2ShortConv, "short_conv", {"full_attn_idxs": [1], "conv_bias": True, "conv_L_cache": 4}),
    ("lfm2_moe", Lfm2MoeShortConv, "short_conv", {"layer_types": ["conv", "full_attention"], "conv_bias": True,
                                                  "num_experts": 4, "num_experts_per_tok": 2,
                                                  "moe_intermediate_size": 32}),
]
"""(model type, the mixer class, mixer kind, config fields beside BASE): the variants flip biases, groups, the
inner width's source, the kernel width, the time-step rank and Falcon-H1's optional norm."""


def _config(model_type: str, fields: dict[str, Any]) -> Any:
    base = {k: v for k, v in BASE.items() if not (model_type == "mamba" and k == "intermediate_size")}
    return transformers.AutoConfig.for_model(model_type, **{**base, **fields})


def _expected(shape: MixerShape) -> dict[str, int]:
    out = dict(shape.others)
    for lin in shape.linears:
        out[f"{lin.name}.weight"] = lin.d_in * lin.d_out
        if lin.bias:
            out[f"{lin.name}.bias"] = lin.d_out
    return out


@pytest.mark.parametrize("model_type, cls, kind, fields", MIXER_CASES,
                         ids=[f"{c[0]}-{c[2]}-{i}" for i, c in enumerate(MIXER_CASES)])
def test_mixer_parameters_match_transformers(model_type: str, cls: Any, kind: str, fields: dict[str, Any]) -> None:
    config = _config(model_type, fields)
    with torch.device("meta"):
        module = cls(config, layer_idx=0)
    real = {name: p.numel() for name, p in module.named_parameters()}
    shape = ssm.SSM_MIXERS[kind](config.to_dict(), 0)
    assert _expected(shape) == real
    assert all(lin.name in real or f"{lin.name}.weight" in real for lin in shape.linears)


def _layer_kind(layer: Any) -> tuple[tuple[str, ...], str | None]:
    """The mixers (in module order) and the MLP kind the real decoder layer holds, from its modules' classes."""
    mixers, mlp = [], None
    for _, child in layer.named_children():
        name = type(child).__name__
        if name.endswith(("Attention",)):
            mixers.append("attention")
        elif name.endswith(("Mixer", "MambaLayer")):
            mixers.append("mamba2" if name in ("FalconH1Mixer", "NemotronHMamba2Mixer", "GraniteMoeHybridMambaLayer")
                          else "mamba")
        elif name.endswith("ShortConv"):
            mixers.append("short_conv")
        elif name.endswith(("MoE", "MoeBlock")) or "Sparse" in name:
            mlp = "moe"
        elif name.endswith("MLP") and mlp is None:
            mlp = "dense"
    return tuple(mixers), mlp


PLAN_CASES: list[tuple[str, dict[str, Any]]] = [
    ("falcon_h1", {"mamba_d_ssm": 64, "mamba_n_heads": 4, "mamba_d_state": 8}),
    ("nemotron_h", {"hybrid_override_pattern": "ME*-M", "mamba_num_heads": 4, "mamba_head_dim": 16,
                    "n_groups": 2, "ssm_state_size": 8, "n_routed_experts": 4, "num_experts_per_tok": 2,
                    "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 32}),
    ("nemotron_h", {"layers_block_type": ["moe", "linear_attention", "full_attention"], "mamba_num_heads": 4,
                    "mamba_head_dim": 16, "n_groups": 2, "ssm_state_size": 8, "n_routed_experts": 4,
                    "num_experts_per_tok": 2, "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 32}),
    ("jamba", {"num_hidden_layers": 5, "attn_layer_period": 3, "attn_layer_offset": 1, "expert_layer_period": 2,
               "expert_layer_offset": 1, "num_experts": 4, "mamba_d_state": 8}),
    ("jamba", {"num_hidden_layers": 3, "attn_layer_period": 2, "attn_layer_offset": 0, "num_experts": 1,
               "mamba_d_state": 8}),
    ("granitemoehybrid", {"num_hidden_layers": 3, "layer_types": ["mamba", "attention", "mamba"],
                          "mamba_n_heads": 4, "mamba_d_state": 8, "num_local_experts": 4, "shared_intermediate_size": 32}),
    ("granitemoehybrid", {"mamba_n_heads": 4, "mamba_d_state": 8, "num_local_experts": 0}),
    ("lfm2", {"num_hidden_layers": 4, "full_attn_idxs": [1, 3]}),
    ("lfm2", {"num_hidden_layers": 3, "layer_types": ["conv", "conv", "full_attention"]}),
    ("lfm2_moe", {"num_hidden_layers": 4, "layer_types": ["conv", "full_attention", "conv", "conv"],
                  "num_dense_layers": 1, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}),
    ("mamba", {"state_size": 8}),
]
"""Per family, a small model whose layers mix the kinds the plan reader tells apart."""


@pytest.mark.parametrize("model_type, fields", PLAN_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(PLAN_CASES)])
def test_layer_plan_matches_the_model_transformers_builds(model_type: str, fields: dict[str, Any]) -> None:
    config = _config(model_type, fields)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    layers = model.get_decoder().layers
    published = {**config.to_dict(), **fields}  # a published config.json keeps hybrid_override_pattern / full_attn_idxs
    plan = ssm.SSM_PLANS[model_type](published, len(layers))
    assert [(p.mixers, p.mlp) for p in plan] == [_layer_kind(layer) for layer in layers]


# ---- activation formulas, by hand ------------------------------------------------------------------------------
NEMOTRON_SMALL = {"model_type": "nemotron_h", "hidden_size": 64, "mamba_num_heads": 4, "mamba_head_dim": 32,
                  "n_groups": 2, "ssm_state_size": 16, "chunk_size": 32}


def test_mamba2_activations_by_hand() -> None:
    """d = 128, g = 2, n = 16, H = 4, Q = 32: zxbcdt 2·(256 + 64 + 4) = 648, rstd 4·2 = 8 kept; backward: dzxbcdt
    648, conv output and its gradient 2·2·192 = 768, three d-wide tensors 3·256 = 768, fp32 states and gradient
    2·4·128·16/32 = 512. Falcon-H1 without its norm keeps no rstd, and its scaled input copy 2·64 when in_proj
    trains."""
    shape = ssm.mamba2_mixer(NEMOTRON_SMALL, 0)
    assert shape.saved_per_token == 648 + 8 and shape.trained_per_token == 0
    assert shape.backward_per_token == 648 + 768 + 768 + 512
    falcon = ssm.mamba2_mixer({"model_type": "falcon_h1", "hidden_size": 64, "mamba_d_ssm": 128, "mamba_n_heads": 4,
                               "mamba_n_groups": 2, "mamba_d_state": 16, "mamba_chunk_size": 32}, 0)
    assert falcon.saved_per_token == 648 and falcon.trained_per_token == 128


def test_mamba1_activations_by_hand() -> None:
    """h = 64, d = 128, n = 16, r = ceil(64/16) = 4. Fused (mamba): 2·128 + 8·16 + scan 4·2·16·128/2048 = 8 ->
    392; Jamba: 8·128 + 4·4 + 12·16 + 8 = 1240, and its norms' normalised inputs 2·(4 + 32) = 72 when they train;
    backward 14·128 = 1792 for both."""
    fused = ssm.mamba1_mixer({"model_type": "mamba", "hidden_size": 64, "state_size": 16}, 0)
    jamba = ssm.mamba1_mixer({"model_type": "jamba", "hidden_size": 64, "mamba_d_state": 16}, 0)
    assert fused.saved_per_token == 256 + 128 + 8 and fused.trained_per_token == 0
    assert jamba.saved_per_token == 1024 + 16 + 192 + 8 and jamba.trained_per_token == 72
    assert fused.backward_per_token == jamba.backward_per_token == 1792


def test_short_conv_activations_by_hand() -> None:
    """h = 64: BCx 2·192 + B·x 2·64 + conv output 2·64 = 640 kept; gradients 2·(192 + 64 + 64) = 640."""
    shape = ssm.short_conv_mixer({"model_type": "lfm2", "hidden_size": 64}, 3)
    assert shape.saved_per_token == 640 and shape.backward_per_token == 640
    assert shape.inner_linears == ("out_proj",)


def test_eager_attention_check_passes_a_decoder_without_attention() -> None:
    """AX108 sizes eager attention by the heads of the model; a Mamba decoder has none (no num_attention_heads),
    so it has nothing to report and must not fail (AX999)."""
    config = "base_model: state-spaces/mamba-2.8b\nsequence_len: 16384\nattn_implementation: eager\n"
    rules = select_rules(load_rules(), ["AX108", "AX999"])
    assert lint_text(Path("c.yml"), config, LintOptions(rules)).diagnostics == []
