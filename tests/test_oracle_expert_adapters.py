"""Which adapters on routed experts stored quantized train (``params.untrained_expert_adapter_params``, rule
AX232) against Axolotl 0.18.0's own quantization and PEFT injection on its pins, in the oracle venv of tests/oracle
(transformers 5.14.1, PEFT 0.19.1, bitsandbytes 0.49.1): the probe (benchmarks/memory/expert_adapter_probe.py) runs
one forward and backward of a small MoE model and reports which adapters got a gradient and their sizes. The
estimate must leave out of the gradients and optimizer states exactly the adapters that got none, and AX232 must
name exactly those targets."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from axlint.architectures import Architecture
from axlint.hardware import parse_hardware
from axlint.lint import LintOptions
from axlint.memory.params import trainable
from axlint.memory.setup import read_setup
from axlint.packs import load_rules, select_rules
from tests.corpus import ROOT
from tests.oracle.venv import oracle_python
from tests.resolved import facts
from tests.rule_cases import findings_for
from tests.test_families import _hf_config

pytest.importorskip("transformers")
H100 = parse_hardware("1xH100")
BLOCK = {"vocab_size": 256, "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
         "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_experts": 4,
         "num_experts_per_tok": 2, "max_position_embeddings": 128}
TARGET_LISTS = (["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
                ["mlp.experts.down_proj", "mlp.experts.gate_up_proj"],
                ["mlp.experts.gate_up_proj"], ["mlp.experts.down_proj"],
                {"modules": ["gate_proj", "up_proj", "down_proj"]})  # module targets PEFT converts to the experts'


def _probe(*extra: str) -> list[dict]:
    done = subprocess.run([str(oracle_python()), str(ROOT / "benchmarks" / "memory" / "expert_adapter_probe.py"),
                           "qwen3_moe", json.dumps(BLOCK), *map(json.dumps, TARGET_LISTS), *extra],
                          capture_output=True, text=True, check=True, cwd=ROOT, env=dict(os.environ))
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def quantized() -> list[dict]:
    return _probe()


@pytest.fixture(scope="module")
def plain() -> list[dict]:
    return _probe("--plain")


def _config(targets: list[str] | dict) -> dict:
    chosen = ({"lora_target_modules": targets["modules"]} if isinstance(targets, dict)
              else {"lora_target_modules": ["q_proj"], "lora_target_parameters": targets})
    return {"base_model": "t", "bf16": True, "adapter": "qlora", "load_in_4bit": True, "quantize_moe_experts": True,
            "lora_r": 4, "lora_alpha": 8, **chosen}


def _arch() -> Architecture:
    return Architecture.from_config("t", "model-config", _hf_config("qwen3_moe", BLOCK).to_dict())


def test_the_probe_ran_on_axolotls_pins(quantized):
    assert {json.dumps(row["versions"], sort_keys=True) for row in quantized} == {
        json.dumps({"bitsandbytes": "0.49.1", "peft": "0.19.1", "transformers": "5.14.1"}, sort_keys=True)}


def test_only_the_weight_the_module_defines_last_trains_when_the_experts_are_quantized(quantized, plain):
    untrained = [sorted(n for n, a in row["adapters"].items() if not a["trained"]) for row in quantized]
    assert [row["targets"] for row in quantized] == list(TARGET_LISTS)
    assert untrained == [["gate_up_proj"], ["gate_up_proj"], [], [], ["gate_up_proj"]]
    assert all(a["trained"] for row in plain for a in row["adapters"].values())  # unquantized: every adapter trains


@pytest.mark.parametrize("index", range(len(TARGET_LISTS)))
def test_the_estimate_leaves_out_what_gets_no_gradient(index, quantized):
    arch = _arch()
    setup = read_setup(facts(_config(TARGET_LISTS[index]), None, arch, H100), arch)
    row = quantized[index]
    assert trainable(arch, setup).untrained == sum(a["params"] for a in row["adapters"].values() if not a["trained"])
    assert sum(a["params"] for a in row["adapters"].values()) <= trainable(arch, setup).adapter


@pytest.mark.parametrize("index", range(len(TARGET_LISTS)))
def test_ax232_names_the_targets_that_get_no_gradient(index, quantized, tmp_path):
    """Named as written: the lora_target_parameters entry, or each module target PEFT turned into that weight."""
    targets = TARGET_LISTS[index]
    untrained = {n for n, a in quantized[index]["adapters"].items() if not a["trained"]}
    expected = ({m for m in targets["modules"] if m != "down_proj" and untrained} if isinstance(targets, dict)
                else {f"mlp.experts.{n}" for n in untrained})
    config, model_config = tmp_path / "run.yml", tmp_path / "config.json"
    config.write_text(json.dumps(_config(targets)))
    model_config.write_text(json.dumps(_arch().config))
    options = LintOptions(select_rules(load_rules(), ["AX232"]), None, model_config)
    named = {d.message.split("`")[1] for d in findings_for(config, options, "AX232")}  # "`<target>` never trains"
    assert named == expected
