"""The simulation tier: the real HF model code on fake tensors, memory by category."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from axlint.simulate import shard, simulate

TINY = {"hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "vocab_size": 4096, "max_position_embeddings": 4096, "tie_word_embeddings": False}
ARCH = SimpleNamespace(model_type="llama", config=TINY)


def run(**overrides: Any) -> Any:
    config = {"micro_batch_size": 2, "sequence_len": 1024, "bf16": True, "gradient_checkpointing": False,
              "attn_implementation": "sdpa", "optimizer": "adamw_torch_fused", **overrides}
    return simulate(config, None, ARCH, None)


def test_full_finetune_categories_are_positive() -> None:
    result = run()
    for key in ("parameters", "optimizer_states", "activations"):
        assert result.process_bytes[key] > 0, key
    params = result.parameters
    assert result.process_bytes["parameters"] == 2 * params  # bf16
    assert result.process_bytes["optimizer_states"] == pytest.approx(2 * 2 * params, rel=1e-3)  # two bf16 moments
    assert result.peak_allocated_bytes == sum(result.per_gpu_bytes.values())
    assert result.to_json()["per_gpu"]["peak_allocated_gib"] > 0


def test_checkpointing_lowers_the_activation_peak() -> None:
    assert run(gradient_checkpointing=True).process_bytes["activations"] < run().process_bytes["activations"]


def test_lora_lowers_optimizer_states() -> None:
    lora = run(adapter="lora", lora_r=8, lora_target_linear=True)
    full = run()
    assert 0 < lora.process_bytes["optimizer_states"] < full.process_bytes["optimizer_states"] / 10
    assert lora.trainable_parameters < full.trainable_parameters


def test_flash_attention_is_simulated_with_sdpa() -> None:
    result = run(flash_attention=True, attn_implementation=None)
    assert result.attn_implementation == "sdpa"
    assert any("flash_attention_2" in n for n in result.notes)


def test_zero_sharding_divides_model_states() -> None:
    process = {"parameters": 800, "gradients": 800, "optimizer_states": 1600, "master_weights": 800,
               "activations": 100}
    assert shard(process, 3, 8) == {"parameters": 100, "gradients": 100, "optimizer_states": 200,
                                    "master_weights": 100, "activations": 100}
    assert shard(process, 2, 8)["parameters"] == 800 and shard(process, 1, 8)["gradients"] == 800


def test_deepspeed_mixed_precision_and_zero3() -> None:
    ds = {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}
    config = {"micro_batch_size": 1, "sequence_len": 256, "bf16": True, "optimizer": "adamw_torch_fused"}
    result = simulate(config, ds, ARCH, SimpleNamespace(count=4))
    n = result.parameters
    assert result.process_bytes["master_weights"] == 4 * n
    assert result.process_bytes["optimizer_states"] == pytest.approx(8 * n, rel=1e-3)
    assert result.per_gpu_bytes["parameters"] == result.process_bytes["parameters"] // 4
