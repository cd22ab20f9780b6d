"""The hybrid-layer plumbing (``mixers.py``): a family whose layer plan mixes a non-attention mixer, an MLP-only
layer and a mixer-only layer is laid out from its plan everywhere (parameters, names, LoRA targets, activations).
The plan and mixer here are registered for the test; the real ones are proven against transformers in
tests/test_families.py."""
from __future__ import annotations

from typing import Any, Mapping

import pytest

from axlint.architectures import Architecture, Linear
from axlint.architectures import families, mixers
from axlint.architectures.mixers import LayerPlan, MixerShape
from axlint.memory import activations
from axlint.memory.params import lora_targets, module_paths, named_parameters
from axlint.hardware import parse_hardware
from axlint.memory.setup import TrainSetup, read_setup
from tests.resolved import facts

H, I, V = 64, 128, 256


def _toy_mixer(config: Mapping[str, Any], layer: int) -> MixerShape:
    h = int(config["hidden_size"])
    return MixerShape("toy", (Linear("in_proj", h, 3 * h), Linear("out_proj", h, h)), (("conv.weight", 4 * h),),
                      saved_per_token=10.0 * h, backward_per_token=20.0 * h, inner_linears=("out_proj",))


def _toy_plan(config: Mapping[str, Any], layers: int) -> tuple[LayerPlan, ...]:
    return (LayerPlan(("toy",), None), LayerPlan((), "dense"), LayerPlan(("attention",), "dense"))[:layers]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Architecture:
    monkeypatch.setitem(mixers.MIXERS, "toy", _toy_mixer)
    monkeypatch.setitem(mixers.LAYER_PLANS, "toy", _toy_plan)
    monkeypatch.setitem(families.FAMILIES, "toy_hybrid", families.Family(layer_plan="toy"))
    config = {"model_type": "toy_hybrid", "hidden_size": H, "intermediate_size": I, "num_hidden_layers": 3,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": V, "tie_word_embeddings": False}
    return Architecture.from_config("t/toy", "model-config", config)


def test_layers_are_laid_out_from_the_plan(toy: Architecture) -> None:
    mixer = 3 * H * H + H * H + 4 * H
    mlp = 3 * H * I
    attention = 2 * H * H + 2 * H * 32
    norms = 2 * H
    assert toy.layers_params == (mixer + norms, mlp + norms, attention + mlp + norms)
    assert toy.total_params == 2 * V * H + sum(toy.layers_params) + H
    names = dict(named_parameters(toy))
    assert names["model.layers.0.toy.in_proj.weight"] == 3 * H * H
    assert names["model.layers.0.toy.conv.weight"] == 4 * H
    assert not any(n.startswith(("model.layers.0.mlp", "model.layers.0.self_attn", "model.layers.1.self_attn",
                                 "model.layers.1.toy")) for n in names)
    assert sum(names.values()) == toy.total_params
    assert "model.layers.0.toy.out_proj" in module_paths(toy)
    assert toy.layer_kind(0) != toy.layer_kind(1) != toy.layer_kind(2)


def _setup(arch: Architecture, **config: Any) -> TrainSetup:
    run = {"base_model": "t/toy", "sequence_len": 512, "micro_batch_size": 1, "bf16": True, "flash_attention": True,
           "sample_packing": True, **config}
    return read_setup(facts(run, None, arch, parse_hardware("1xH100")), arch)


def test_lora_reaches_a_mixer_by_name(toy: Architecture) -> None:
    setup = _setup(toy, adapter="lora", lora_r=8, lora_target_modules=["out_proj", "up_proj"])
    targets = lora_targets(toy, setup)
    assert [[lin.name for lin in targets[i]] for i in range(3)] == [["out_proj"], ["up_proj"], ["up_proj"]]


def test_activations_follow_the_plan(toy: Architecture) -> None:
    """Full fine-tune, bf16, flash: every layer keeps its two norms' fp32 inputs and normalised outputs (6h each).
    Layer 0: the toy mixer's 10h, its in_proj input 2h (the norm output) and out_proj input 2h, no MLP.
    Layer 1: no mixer; the MLP's 6I and its two inputs (norm output 2h, down_proj input 2I).
    Backward temporaries: 2h output grad, + the mixer's 20h (layer 0), + the gated MLP's 6I (layer 1)."""
    setup = _setup(toy)
    layer0 = 2 * 6 * H + 10 * H + 2 * H + 2 * H
    layer1 = 2 * 6 * H + 6 * I + 2 * H + 2 * I
    assert activations.layer_bytes_per_token(toy, setup, 0) == layer0
    assert activations.layer_bytes_per_token(toy, setup, 1) == layer1
    assert activations.backward_temp_bytes_per_token(toy, setup, 0) == 2 * H + 20 * H
    assert activations.backward_temp_bytes_per_token(toy, setup, 1) == 2 * H + 6 * I


SMALL_GDN = {"model_type": "qwen3_5_text", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
             "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
             "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4}
"""Hk = 2, Hv = 4, dk = dv = 16: K = 32, Vd = 64, C = 2K + Vd = 128."""


def test_gated_deltanet_activation_formula_by_hand() -> None:
    """saved 12K + 20Vd + 8Hk + 146Hv = 384 + 1280 + 16 + 584 = 2264 bytes per token;
    backward Hv·dk·dv/16 + 4Hv·dk + 18Vd + 6K + 2C = 64 + 256 + 1152 + 192 + 256 = 1920;
    when the norm's weight trains 2Vd = 128 more."""
    shape = mixers.MIXERS["gated_deltanet_split"](SMALL_GDN, 0)
    assert shape.saved_per_token == 2264
    assert shape.backward_per_token == 1920
    assert shape.trained_per_token == 128
    assert [lin.name for lin in shape.input_linears] == ["in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a"]
    assert [(lin.d_in, lin.d_out) for lin in shape.own_linears] == [(64, 64)]


def test_pytorch_causal_convolution_keeps_its_input_and_its_output() -> None:
    """Without the causal_conv1d package (Axolotl's Qwen3-Next and Qwen3.5 examples uninstall it) transformers runs
    Qwen3.5's causal convolution in PyTorch: autograd keeps the convolution's input and its padded output (SiLU's
    input), 2C bytes a token each, the 4C of the formula's conv term; measured on real CPU tensors, frozen or trained
    convolution weight alike."""
    import torch
    from transformers.models.qwen3_5 import modeling_qwen3_5

    channels, tokens, kernel = 128, 256, 4
    for trains in (False, True):
        weight = torch.randn(channels, kernel, dtype=torch.bfloat16).requires_grad_(trains)
        hidden = torch.randn(1, tokens, channels, dtype=torch.bfloat16, requires_grad=True)
        qkv = (hidden * 1).transpose(1, 2)  # the in-projection's output, as the layer hands it over
        kept: dict[int, int] = {}

        def keep(t: torch.Tensor) -> torch.Tensor:
            if t.untyped_storage().data_ptr() != weight.untyped_storage().data_ptr():
                kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
            out = modeling_qwen3_5.causal_conv1d_fn(qkv, weight, None, activation="silu")
        out.float().sum().backward()
        padded = 2 * channels * (kernel - 1)  # the output's kernel - 1 extra positions, cut off after the conv
        assert sum(kept.values()) == 4 * channels * tokens + padded


def test_gated_deltanet_layers_and_the_estimate_note() -> None:
    """Layers 0-2 are Gated DeltaNet, layer 3 full attention (full_attention_interval 4); a full fine-tune keeps the
    mixer's saved + trained bytes in mixer_bytes, and the estimate says which kernels it assumes."""
    arch = Architecture.from_config("t/qwen3.5", "model-config", SMALL_GDN)
    assert [arch.has_attention(i) for i in range(4)] == [False, False, False, True]
    setup = _setup(arch)
    assert activations.mixer_bytes(arch, setup, 0) == 2264 + 128
    assert activations.mixer_bytes(arch, _setup(arch, adapter="lora", lora_r=8, lora_target_linear=True), 0) == 2264
    assert arch.mixer_kinds == ("gated_deltanet_split",)
    from axlint.memory import estimate_memory
    hw = parse_hardware("1xH100")
    run = {"base_model": "t/qwen3.5", "sequence_len": 512, "micro_batch_size": 1, "bf16": True,
           "flash_attention": True, "sample_packing": True}
    notes = estimate_memory(facts(run, None, arch, hw), arch, hw).assumptions
    assert mixers.GATED_DELTANET_PATH in notes


SMALL_KDA = {"model_type": "kimi_linear", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
             "num_attention_heads": 4, "vocab_size": 256, "kv_lora_rank": 32, "qk_nope_head_dim": 16,
             "qk_rope_head_dim": 8, "v_head_dim": 16, "num_experts": 4, "num_experts_per_token": 2,
             "moe_intermediate_size": 32, "linear_attn_config": {"num_heads": 2, "head_dim": 16,
                                                                 "short_conv_kernel_size": 4, "full_attn_layers": [4]}}
"""H = 2, d = 16: D = 32; the fourth layer MLA (1-based full_attn_layers), the others KDA."""


def test_kda_activation_formula_by_hand() -> None:
    """saved 45D + 398H = 1440 + 796 = 2236 bytes per token; backward H·d²/16 + 42D = 32 + 1344 = 1376; when the
    gated norm's weight trains 4D = 128 more. Its Linears: q/k/v, f_a, b, g_a read the layer's normed input; f_b,
    g_b (d -> D) and o_proj (D -> h) a tensor of the mixer's own."""
    shape = mixers.MIXERS["kda"](SMALL_KDA, 0)
    assert (shape.saved_per_token, shape.backward_per_token, shape.trained_per_token) == (2236, 1376, 128)
    assert [lin.name for lin in shape.input_linears] == ["q_proj", "k_proj", "v_proj", "forget_gate.f_a_proj",
                                                         "b_proj", "g_a_proj"]
    assert [(lin.d_in, lin.d_out) for lin in shape.own_linears] == [(16, 32), (16, 32), (32, 64)]


def test_kimi_linear_layers_and_the_estimate_note() -> None:
    """Layers 0-2 KDA, layer 3 MLA; the first layer dense (first_k_dense_replace defaults to 1), the others MoE; the
    estimate names the kernels its KDA formula assumes."""
    arch = Architecture.from_config("t/kimi", "model-config", SMALL_KDA)
    assert [arch.has_attention(i) for i in range(4)] == [False, False, False, True]
    assert [arch.is_moe_layer(i) for i in range(4)] == [False, True, True, True]
    assert activations.mixer_bytes(arch, _setup(arch), 0) == 2236 + 128
    from axlint.memory import estimate_memory
    hw = parse_hardware("1xH100")
    run = {"base_model": "t/kimi", "sequence_len": 512, "micro_batch_size": 1, "bf16": True, "flash_attention": True,
           "sample_packing": True}
    assert mixers.KDA_PATH in estimate_memory(facts(run, None, arch, hw), arch, hw).assumptions


@pytest.mark.parametrize("remote, quantized", [(True, True), (False, False)])
def test_kimi_remote_code_quantizes_its_linear_experts(remote: bool, quantized: bool) -> None:
    """Under trust_remote_code Moonshot's modeling_kimi.py runs (the entry's auto_map): its experts are nn.Linear
    modules, which an 8-bit load quantizes; transformers' own KimiLinearExperts are 3-D parameters it leaves in bf16."""
    from axlint.architectures import resolve_architecture
    arch = resolve_architecture("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    setup = _setup(arch, adapter="lora", load_in_8bit=True, lora_r=16, trust_remote_code=remote)
    assert setup.quantize_experts is quantized
