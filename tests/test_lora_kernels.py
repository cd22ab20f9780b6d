"""Axolotl's fused LoRA kernels: which ones a config gets (``RunFacts.lora_kernels``; held to the real Axolotl in
tests/test_oracle_lora_kernels.py) and what the estimate says of them."""
from __future__ import annotations

import pytest

from axlint.architectures import resolve_architecture
from axlint.facts import resolve_facts
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from tests.resolved import facts

ALL = ("mlp", "qkv", "o", "embedding")
KERNELS = "scattermoe"


@pytest.mark.parametrize("config, gpus, kernels", [
    ({"adapter": "qlora", "load_in_4bit": True}, 1, ALL),
    ({"adapter": "lora"}, 8, ALL),
    ({"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}}, 8, ()),
    ({"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}}, 1, ALL),
    ({"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}, "fsdp_version": 2}, 8, ALL),
    ({"adapter": "lora", "load_in_8bit": True}, 1, ()),
    ({"adapter": "qlora", "load_in_8bit": True}, 1, ALL),
    ({"adapter": "lora", "trust_remote_code": True}, 1, ()),
    ({"adapter": "lora", "rl": "dpo"}, 1, ()),
    ({"adapter": "lora", "use_ray": True}, 1, ()),
    ({"adapter": "lora", "nvfp4_merge_aware": True}, 1, ()),
    ({"adapter": "lora", "lora_mlp_kernel": False}, 1, ()),
    ({"adapter": "lora", "lora_qkv_kernel": True, "lora_o_kernel": "false"}, 1, ("qkv",)),
    ({"lora_mlp_kernel": True}, 1, ("mlp",)),  # written flags stand; Axolotl refuses them without an adapter
    ({}, 1, ()),
    ({"adapter": "lora", "plugins": ["axolotl.integrations.kernels.KernelsPlugin"], "use_scattermoe": True,
      "use_dsv4_kernels": True}, 1, ("qkv", "o", "embedding")),
    ({"adapter": "lora", "use_scattermoe": True, "use_dsv4_kernels": True}, 1, ALL),  # without the plugin
])
def test_the_kernels_a_config_gets(config, gpus, kernels) -> None:
    assert resolve_facts(config, world_size=gpus).lora_kernels == kernels


L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
H100 = parse_hardware("1xH100")
BASE = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 2048, "micro_batch_size": 1, "bf16": True,
        "gradient_checkpointing": True}


def _notes(config: dict) -> list[str]:
    e = estimate_memory(facts({**BASE, **config}, None, L8B, H100), L8B, H100)
    return [note for note in e.assumptions if "fused LoRA kernels" in note]


def test_the_estimate_says_it_counts_peft_s_layers_where_axolotl_runs_its_kernels() -> None:
    (note,) = _notes({"adapter": "qlora", "load_in_4bit": True})
    assert note.startswith("Axolotl turns on its fused LoRA kernels (lora_mlp_kernel, lora_qkv_kernel, "
                           "lora_o_kernel; on by default")
    assert "2.5 tokens × intermediate × 4 bytes where PEFT's layers keep 6.1" in note
    assert _notes({"adapter": "lora", "lora_qkv_kernel": True})[0].startswith(
        "Axolotl turns on its fused LoRA kernels (lora_qkv_kernel;")
    assert _notes({"adapter": "lora", "load_in_8bit": True}) == []
    assert _notes({"adapter": "lora", "lora_embedding_kernel": True, "lora_mlp_kernel": False}) == []
    assert _notes({}) == []
