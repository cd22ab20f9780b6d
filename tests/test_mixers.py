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
