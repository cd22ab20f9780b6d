"""What a bitsandbytes 4/8-bit load converts, and what PEFT's k-bit preparation then leaves in fp32, held to the real
stack (tests/oracle/quantized_load_judge.py: transformers 5.14.1, bitsandbytes 0.49.1 and PEFT 0.19.1 on the CPU):
a small Falcon, whose layers are all ``FalconLinear``, and a small Llama, whose layers are ``nn.Linear``. axlint's
counts of the weights each load converts (``states.quantized_params``) and leaves in 16 bits
(``Architecture.unconverted_linear_params``, fp32 after the preparation) must equal what the load did, and MEM012
must speak exactly for the load that converts nothing."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axlint.architectures import Architecture
from axlint.commands.common import parse_hardware_option
from axlint.hardware import parse_hardware
from axlint.lint import LintOptions, lint_text
from axlint.memory.setup import read_setup
from axlint.memory.states import quantized_params
from axlint.packs import load_rules
from tests.oracle.venv import judge, oracle_python
from tests.resolved import facts
from tests.test_vision import TEXT

SMALL = {
    "falcon": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_kv_heads": 1, "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False,
               "bias": False, "vocab_size": 256, "tie_word_embeddings": True, "max_position_embeddings": 128},
    "llama": {"model_type": "llama", **TEXT},
}
"""Falcon-7B's layout (multi-query, parallel attention) and a Llama, at toy sizes."""
CATALOGUED = {"falcon": "tiiuae/falcon-7b", "llama": "meta-llama/Llama-3.1-8B"}
"""A catalogued model of each type, for the rule's side."""
LOADS = {"qlora": ("load_in_4bit", 4), "lora": ("load_in_8bit", 8)}
"""Axolotl's adapter -> the quantized load it takes and its bits."""


def _items() -> list[dict[str, Any]]:
    return [{"id": f"{model_type}|{adapter}", "model_type": model_type, "config": config, "bits": bits}
            for model_type, config in SMALL.items() for adapter, (_, bits) in LOADS.items()]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> dict[str, dict]:
    return judge(oracle_python(), _items(), tmp_path_factory.mktemp("bnb"), script="quantized_load_judge.py")


def _setup(model_type: str, adapter: str):
    arch = Architecture.from_config("test/model", "model-config", SMALL[model_type])
    key, _ = LOADS[adapter]
    raw = {"base_model": "test/model", "adapter": adapter, key: True, "lora_target_linear": True, "bf16": True}
    return arch, read_setup(facts(raw, None, arch, parse_hardware("1xH100")), arch)


@pytest.mark.parametrize("item", _items(), ids=lambda item: item["id"])
def test_axlint_counts_what_the_load_converts_and_what_it_leaves(item: dict[str, Any], loaded: dict) -> None:
    answer = loaded[item["id"]]
    model_type, adapter = item["id"].split("|")
    arch, setup = _setup(model_type, adapter)
    converted = "Linear4bit" if item["bits"] == 4 else "Linear8bitLt"
    if model_type == "falcon":
        assert set(answer["linear_types"]) == {"FalconLinear"}
        assert answer["loaded"] == {"bfloat16": arch.unconverted_linear_params}
    else:
        assert set(answer["linear_types"]) == {converted}
        assert "bfloat16" not in answer["loaded"]
    assert answer["prepared"].get("float32", 0) == arch.unconverted_linear_params
    assert setup.experts_fp32  # the preparation runs for this LoRA on one GPU, as the judge ran it
    layer_weights = sum(count * (2 if item["bits"] == 4 else 1) for dtype, count in answer["loaded"].items()
                        if dtype in ("uint8", "int8"))  # a 4-bit weight packs two values in a byte
    assert quantized_params(arch, setup) == layer_weights


@pytest.mark.parametrize("model_type", list(SMALL))
@pytest.mark.parametrize("adapter", list(LOADS))
def test_mem012_speaks_for_the_load_that_converts_nothing(model_type: str, adapter: str) -> None:
    key, _ = LOADS[adapter]
    yaml = f"base_model: {CATALOGUED[model_type]}\nadapter: {adapter}\n{key}: true\nlora_target_linear: true\n"
    options = LintOptions(load_rules(), parse_hardware_option("1xH100"))
    found = [d for d in lint_text(Path("config.yml"), yaml, options).diagnostics if d.code == "MEM012"]
    assert [(d.span.line, d.span.col) for d in found] == ([(3, 1)] if model_type == "falcon" else [])


@pytest.mark.parametrize("fsdp", [False, True], ids=["one GPU", "FSDP"])
def test_a_falcon_layer_is_held_and_gathered_as_it_loads(fsdp: bool) -> None:
    """What one layer weighs on the GPU (FSDP gathers it so) follows the load above: Falcon's Linears in bf16 under
    FSDP, which skips the k-bit preparation for QLoRA, and in fp32 on one GPU, where it runs; the layer's norms stay
    bf16 (Axolotl casts them back)."""
    from axlint.architectures import resolve_architecture
    from axlint.memory.states import layer_weight_bytes

    arch = resolve_architecture(CATALOGUED["falcon"])
    raw = {"base_model": CATALOGUED["falcon"], "adapter": "qlora", "load_in_4bit": True, "lora_target_linear": True,
           "bf16": True, **({"fsdp_version": 2, "fsdp_config": {"auto_wrap_policy": "TRANSFORMER_BASED_WRAP"}}
                            if fsdp else {})}
    setup = read_setup(facts(raw, None, arch, parse_hardware("2xH100" if fsdp else "1xH100")), arch)
    linears = arch.unconverted_linear_params // arch.num_layers
    norms = sum(arch.small_params_per_layer(0))
    assert layer_weight_bytes(arch, setup, 0) == (0.0, linears * (2 if fsdp else 4) + norms * 2)
