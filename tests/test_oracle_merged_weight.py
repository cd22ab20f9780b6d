"""The moment of LoRA on 3-D expert weights (``activations.merged_weight_bytes``) against PEFT and transformers as
Axolotl 0.18.0 pins them, in the oracle venv of tests/oracle (PEFT 0.19.1, transformers 5.14.1): the probe
(benchmarks/memory/merged_weight_probe.py) runs one forward and backward of an experts block there on real CPU
tensors, for each way the module reads its weights, and reports its peak per adapted element. The analytic moment of
the same block must stay at or under that peak and within 8 % of it: the rest is the block's own activations, which
the estimate counts apart."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from axlint.architectures import Architecture
from axlint.hardware import parse_hardware
from axlint.memory.activations import merged_weight_bytes
from axlint.memory.setup import read_setup
from benchmarks.memory import merged_weight_probe as probe
from tests.corpus import ROOT
from tests.oracle.venv import oracle_python
from tests.resolved import facts
from tests.test_families import _hf_config

pytest.importorskip("transformers")
H100 = parse_hardware("1xH100")
TARGETS = ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]
CASES = {  # how the module reads its expert weights -> the run that makes it so
    "bf16": {"adapter": "lora"},
    "fp32": {"adapter": "qlora", "load_in_4bit": True},  # PEFT's kbit preparation upcasts the unquantized experts
    "nf4": {"adapter": "qlora", "load_in_4bit": True, "quantize_moe_experts": True},
    "int8": {"adapter": "lora", "load_in_8bit": True, "quantize_moe_experts": True},
}
BLOCK = {"num_experts": probe.EXPERTS, "hidden_size": probe.HIDDEN, "moe_intermediate_size": probe.INTERMEDIATE,
         "num_experts_per_tok": probe.TOP_K, "shared_expert_intermediate_size": 64, "head_dim": 16,
         "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
         "layer_types": ["linear_attention", "full_attention"]}


@pytest.fixture(scope="module")
def measured() -> dict[str, dict]:
    done = subprocess.run([str(oracle_python()), str(ROOT / "benchmarks" / "memory" / "merged_weight_probe.py"),
                           *CASES], capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # the probe imports the checkout's axlint
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {row["case"]: row for row in rows}


def test_the_probe_ran_on_axolotls_pins(measured):
    versions = {(row["versions"]["peft"], row["versions"]["transformers"]) for row in measured.values()}
    assert versions == {("0.19.1", "5.14.1")} and set(measured) == set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_the_merged_weight_moment_is_the_pinned_stack_s(case, measured):
    arch = Architecture.from_config("t", "model-config", _hf_config("qwen3_next", BLOCK).to_dict())
    run = {"base_model": "t", "bf16": True, "lora_r": probe.RANK, "lora_target_modules": ["q_proj"],
           "lora_target_parameters": TARGETS, "gradient_checkpointing": True, **CASES[case]}
    setup = read_setup(facts(run, None, arch, H100), arch)
    row = measured[case]
    assert row["n"] == probe.EXPERTS * 3 * probe.INTERMEDIATE * probe.HIDDEN
    analytic = merged_weight_bytes(arch, setup)[1] / row["n"]
    assert analytic <= row["per_element"] <= 1.08 * analytic, (case, analytic, row["per_element"])
