"""Routed experts stored quantized on load (Axolotl's ``quantize_moe_experts``): the dequantized copies the experts
module reads (``activations.dequantized_expert_bytes``) and the expert adapters PEFT 0.19 never trains
(``params.untrained_expert_adapter_params``), against Axolotl's GLM-4.7-Flash examples measured on an H100
(benchmarks/memory/results-NVIDIA_H100_80GB_HBM3-2026-11-27.md, 2 × 2048 tokens, gradient checkpointing, one micro
batch per step)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from axlint.architectures import resolve_architecture
from axlint.document import load_document
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.activations import dequantized_expert_bytes, merged_weight_bytes
from axlint.memory.params import trainable, untrained_expert_adapter_params
from axlint.memory.setup import read_setup
from axlint.run import build_run
from benchmarks.memory.old_stack import peft_before_0_19
from tests.corpus import ROOT
from tests.resolved import facts

GIB = 2**30
H100 = parse_hardware("1xH100")
BENCH = ROOT / "benchmarks" / "memory"
GLM = resolve_architecture("zai-org/GLM-4.7-Flash")
EXPERTS = ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
BASE = {"base_model": "zai-org/GLM-4.7-Flash", "bf16": True, "sequence_len": 2048, "sample_packing": True,
        "micro_batch_size": 2, "gradient_checkpointing": True, "lora_r": 32, "lora_alpha": 16,
        "lora_target_modules": ["q_proj", "v_proj", "k_proj", "o_proj"], "quantize_moe_experts": True}
QLORA = {**BASE, "adapter": "qlora", "load_in_4bit": True}
LORA8 = {**BASE, "adapter": "lora", "load_in_8bit": True}


def _setup(config):
    return read_setup(facts(config, None, GLM, H100), GLM)


def _measured() -> dict[str, float]:
    results = json.loads((BENCH / "results-NVIDIA_H100_80GB_HBM3-2026-11-27.json").read_text())["results"]
    return {row["name"]: row["measured"]["allocated_gib"] for row in results}


def _layer_expert_elements() -> tuple[int, int]:
    e, h, i = GLM.config["n_routed_experts"], GLM.hidden_size, GLM.config["moe_intermediate_size"]
    return e * 2 * i * h, e * h * i  # gate_up_proj, down_proj


def test_quantized_experts_are_read_dequantized_whole_once_per_layer():
    """4-bit: b·(n_gate_up + n_down) in bf16; 8-bit: fp32 through two outputs, 4·max(2·n_gu, n_gu + 2·n_down);
    without checkpointing every layer keeps its copies for backward; unquantized experts read none."""
    gate_up, down = _layer_expert_elements()
    assert dequantized_expert_bytes(GLM, _setup(QLORA)) == (0.0, 2 * (gate_up + down))
    assert dequantized_expert_bytes(GLM, _setup(LORA8)) == (0.0, 4 * max(2 * gate_up, gate_up + 2 * down))
    moe_layers = sum(GLM.is_moe_layer(layer) for layer in range(GLM.num_layers))
    stored, _ = dequantized_expert_bytes(GLM, _setup({**QLORA, "gradient_checkpointing": False}))
    assert stored == moe_layers * 2 * (gate_up + down)
    assert dequantized_expert_bytes(GLM, _setup({**QLORA, "quantize_moe_experts": False})) == (0.0, 0.0)
    assert merged_weight_bytes(GLM, _setup(QLORA)) == dequantized_expert_bytes(GLM, _setup(QLORA))


def test_only_down_proj_s_adapter_trains_on_quantized_experts():
    """gate_up_proj's adapter, r·E·(h + 2I) per MoE layer, gets no gradient or optimizer state under PEFT 0.19;
    PEFT 0.18 (``old_stack.peft_before_0_19``) trains it, and so does any run whose experts are not quantized."""
    config = {**QLORA, "lora_target_parameters": EXPERTS}
    e, h, i = GLM.config["n_routed_experts"], GLM.hidden_size, GLM.config["moe_intermediate_size"]
    moe_layers = sum(GLM.is_moe_layer(layer) for layer in range(GLM.num_layers))
    setup = _setup(config)
    assert untrained_expert_adapter_params(GLM, setup) == moe_layers * 32 * e * (h + 2 * i)
    assert trainable(GLM, setup).trained == trainable(GLM, setup).total - moe_layers * 32 * e * (h + 2 * i)
    old = peft_before_0_19(setup, facts(config, None, GLM, H100))
    assert untrained_expert_adapter_params(GLM, old) == 0
    assert untrained_expert_adapter_params(GLM, _setup({**config, "quantize_moe_experts": False})) == 0
    assert untrained_expert_adapter_params(GLM, _setup({**config, "lora_target_parameters": EXPERTS[1:]})) == 0
    one = estimate_memory(facts(config, None, GLM, H100), GLM, H100)
    assert any("get no gradient" in note for note in one.assumptions)


@pytest.mark.parametrize("name", ["glm47-flash-qlora-gc-2k", "glm47-flash-qlora-experts-gc-2k",
                                  "glm47-flash-lora-gc-2k", "glm47-flash-lora-experts-gc-2k"])
def test_the_glm_examples_allocate_what_an_h100_measured(name):
    """Each within 1 % of the measured allocated peak (before these two terms: −6.5, +11.7, −9.5 and +6.1 %)."""
    run = build_run(load_document(BENCH / "configs" / f"{name}.yml"), hardware=H100)
    estimate = estimate_memory(run.facts, run.arch, H100)
    assert estimate.peak_allocated / GIB == pytest.approx(_measured()[name], rel=0.01)
