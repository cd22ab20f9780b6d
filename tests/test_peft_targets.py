"""LoRA targets on transformers 5 MoE models as PEFT rewrites them (axlint/memory/peft_targets.py), against the
installed PEFT and transformers: the table of converted model types, the rewrite itself, the trainable count of a
real PEFT model built on the meta device, and the memory of the merged weights."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture
from axlint.architectures.families import FAMILIES
from axlint.hardware import parse_hardware
from axlint.memory.activations import merged_weight_bytes
from axlint.memory.params import trainable, unmatched_lora_targets
from axlint.memory.peft_targets import CONVERTED_MODEL_TYPES, FUSED, TARGET_MAP, convert_targets
from axlint.memory.setup import read_setup
from tests.resolved import facts
from tests.test_families import _hf_config, _meta_model

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
conversion = pytest.importorskip("peft.utils.transformers_weight_conversion")

H100 = parse_hardware("1xH100")
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "head_dim": 16}
DEEPSEEK = {"kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 4,
            "num_experts_per_tok": 2, "n_shared_experts": 1, "moe_intermediate_size": 32, "first_k_dense_replace": 1,
            "n_group": 1, "topk_group": 1}
QWEN3_NEXT = {**MOE, "shared_expert_intermediate_size": 48, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
              "linear_key_head_dim": 8, "linear_value_head_dim": 8, "layer_types": ["linear_attention", "full_attention"]}


def test_the_converted_model_types_are_peft_and_transformers_own():
    """For every MoE family axlint lays out, PEFT converts exactly when the table says, with the same pattern."""
    for model_type in [*FAMILIES, "qwen2_moe", "mixtral"]:
        pattern = conversion._MODEL_TO_CONVERSION_PATTERN.get(model_type)
        converts = (conversion.get_checkpoint_conversion_mapping(model_type) is not None
                    and pattern in conversion._MOE_TARGET_MODULE_MAPPING)
        assert CONVERTED_MODEL_TYPES.get(model_type) == (pattern if converts else None), model_type
    assert TARGET_MAP == conversion._MOE_TARGET_MODULE_MAPPING
    assert {k: tuple(v["gate_up_proj"]) for k, v in conversion._MOE_FUSED_TARGETS.items()} == FUSED


def test_the_rewrite():
    got = convert_targets("qwen3_moe", ["q_proj", "gate_proj", "up_proj", "down_proj"])
    assert (got.modules, got.parameters, got.doubled, got.half_pair) == (
        ("q_proj",), ("gate_up_proj", "down_proj"), ("gate_up_proj",), None)
    assert convert_targets("qwen2_moe", ["gate_proj", "up_proj"]).parameters == ()  # qwen2_moe itself is not
    assert convert_targets("mixtral", ["w2", "gate"]).parameters == ("down_proj", "gate.weight")
    assert convert_targets("qwen3_next", ["shared_expert.up_proj", "shared_expert.gate_proj"]).moved == (
        "shared_expert.up_proj", "shared_expert.gate_proj")  # a suffix is enough


def _peft_lora_numel(model_type: str, fields: dict[str, Any], targets: list[str]) -> int:
    model = _meta_model(_hf_config(model_type, fields))
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=targets))
    return sum(p.numel() for name, p in wrapped.named_parameters() if "lora_" in name)


def _axlint_lora_numel(model_type: str, fields: dict[str, Any], targets: list[str]) -> int:
    arch = Architecture.from_config("t", "model-config", _hf_config(model_type, fields).to_dict())
    run = {"base_model": "t", "adapter": "lora", "lora_r": 4, "lora_target_modules": targets}
    return trainable(arch, read_setup(facts(run, None, arch, H100), arch)).adapter


@pytest.mark.parametrize("model_type, fields, targets", [
    ("qwen3_moe", MOE, ["q_proj", "gate_proj", "up_proj", "down_proj"]),
    ("qwen3_moe", MOE, ["q_proj", "down_proj", "gate"]),       # the router as a parameter
    ("mixtral", {"num_local_experts": 4, "num_experts_per_tok": 2}, ["q_proj", "w1", "w2", "w3"]),
    ("deepseek_v3", DEEPSEEK, ["q_proj", "gate_proj", "up_proj", "down_proj"]),  # the dense layer's MLP loses its
    ("qwen3_next", QWEN3_NEXT, ["q_proj", "shared_expert.up_proj", "shared_expert.gate_proj",
                                "shared_expert.down_proj"]),  # the shared expert is not adapted, the experts are
    ("qwen2_moe", {**MOE, "shared_expert_intermediate_size": 48}, ["q_proj", "gate_proj", "up_proj", "down_proj"]),
    ("gpt_oss", {"num_local_experts": 4, "num_experts_per_tok": 2}, ["q_proj", "o_proj"]),
])
def test_the_trainable_count_is_peft_s(model_type, fields, targets):
    assert _axlint_lora_numel(model_type, fields, targets) == _peft_lora_numel(model_type, fields, targets)


def test_half_a_fused_pair_is_what_peft_refuses():
    got = convert_targets("qwen3_moe", ["q_proj", "gate_proj"]).half_pair
    with pytest.raises(ValueError) as refused:
        _peft_lora_numel("qwen3_moe", MOE, ["q_proj", "gate_proj"])
    assert got == str(refused.value)


def test_converted_names_match_the_experts_and_other_expert_names_match_nothing():
    qwen = Architecture.from_config("t", "model-config", _hf_config("qwen3_moe", MOE).to_dict())
    assert unmatched_lora_targets(qwen, ("gate_proj", "up_proj", "down_proj", "w1")) == ["w1"]
    oss = Architecture.from_config("t", "model-config", _hf_config(
        "gpt_oss", {"num_local_experts": 4, "num_experts_per_tok": 2}).to_dict())
    assert unmatched_lora_targets(oss, ("q_proj", "gate_proj")) == ["gate_proj"]  # no conversion for gpt_oss


def test_merged_weights_are_kept_per_layer_without_checkpointing():
    """Qwen3-MoE of 2 layers, 4 experts: gate_up 4 x 64 x 64 and down 4 x 32 x 64 per layer = 24,576 elements;
    bf16: 2 x 24,576 x 2 layers kept without checkpointing; a layer's moment both ΔW and the merged copies, 2 + 2
    bytes each (experts stored in bf16 have no dequantized copy)."""
    arch = Architecture.from_config("t", "model-config", _hf_config("qwen3_moe", MOE).to_dict())
    run = {"base_model": "t", "adapter": "lora", "lora_r": 4, "bf16": True,
           "lora_target_modules": ["gate_proj", "up_proj", "down_proj"]}
    n = 4 * 64 * 64 + 4 * 32 * 64
    setup = read_setup(facts(run, None, arch, H100), arch)
    assert merged_weight_bytes(arch, setup) == (2 * n * 2, 4 * n)
    checkpointed = read_setup(facts({**run, "gradient_checkpointing": True}, None, arch, H100), arch)
    assert merged_weight_bytes(arch, checkpointed) == (0.0, 4 * n)


def test_a_regex_is_resolved_to_the_names_it_reaches_then_converted():
    """PEFT 0.20 (Axolotl 0.19.0's pin) resolves a regex first: q_proj and v_proj alone stay modules; a regex that
    spells out the old expert paths reaches the experts (compared with the installed PEFT's count)."""
    assert _axlint_lora_numel("qwen3_moe", MOE, r"model\.layers\.\d+\.self_attn\.(q|v)_proj") == _peft_lora_numel(
        "qwen3_moe", MOE, r"model\.layers\.\d+\.self_attn\.(q|v)_proj")
    experts = r".*\.(q_proj|experts\.(gate|up|down)_proj)"
    assert _axlint_lora_numel("qwen3_moe", MOE, experts) == _peft_lora_numel("qwen3_moe", MOE, experts)
