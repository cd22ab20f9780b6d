"""Reward-model and process-reward-model runs (``reward_model`` / ``process_reward_model``): the decoder under a
``score`` head (AutoModelForSequenceClassification, num_labels 1 / AutoModelForTokenClassification, num_labels 2),
no vocabulary logits, and for the reward model TRL RewardTrainer's chosen + rejected pair in one forward."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

from axlint.architectures import Architecture, resolve_architecture
from axlint.document import load_document
from axlint.hardware import parse_hardware
from axlint.memory import constants as C
from axlint.memory import estimate_memory
from axlint.memory.activations import per_layer_bytes_per_token, stored_activation_bytes
from axlint.memory.facts import modelled_facts, not_modelled
from axlint.memory.params import named_parameters, names_checked
from axlint.run import build_run
from tests.resolved import facts
from tests.test_families import CONFIGS, _hf_config

H100 = parse_hardware("1xH100")
QWEN = resolve_architecture("Qwen/Qwen2.5-0.5B")
BASE = {"base_model": "Qwen/Qwen2.5-0.5B", "sequence_len": 2048, "micro_batch_size": 2, "bf16": True,
        "pad_to_sequence_len": True, "optimizer": "adamw_torch_fused", "flash_attention": True,
        "gradient_checkpointing": True}
EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures/axolotl/examples"


def est(config: dict[str, Any], arch: Architecture = QWEN):
    return estimate_memory(facts({**BASE, **config}, None, arch, H100), arch, H100)


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "qwen3", "gemma2"])
@pytest.mark.parametrize("auto, num_labels, bias", [("AutoModelForSequenceClassification", 1, False),
                                                    ("AutoModelForTokenClassification", 2, True)])
def test_score_head_model_matches_transformers(model_type: str, auto: str, num_labels: int, bias: bool) -> None:
    """Parameter count (and names) of the decoder under a score head = transformers' model on the meta device."""
    for fields in CONFIGS[model_type]:
        config = _hf_config(model_type, fields)
        config.num_labels = num_labels
        with torch.device("meta"):
            model = getattr(transformers, auto).from_config(config)
        real = {name: p.numel() for name, p in model.named_parameters()}
        arch = Architecture.from_config("test/model", "model-config", config.to_dict()).with_score_head(num_labels, bias)
        assert arch.total_params == sum(real.values())
        assert arch.lm_head_params == num_labels * arch.hidden_size + (num_labels if bias else 0)
        assert not arch.tie_word_embeddings
        if names_checked(arch):
            assert dict(named_parameters(arch)) == real


def test_reward_model_has_no_vocab_logits_and_counts_the_pair() -> None:
    rm = est({"reward_model": True})
    lm = est({})
    lm_pair = est({"micro_batch_size": 4})  # the pair: 2 × micro_batch_size sequences in one forward
    assert rm.setup.tokens == 2 * 2 * 2048 == lm_pair.setup.tokens
    # logits + loss: 14 bytes per token and label (bf16 logits, fp32 upcast, log-softmax, grads) with 1 label
    assert rm.components["logits"] in (0.0, C.LOGITS_HF * 1 * rm.setup.tokens)
    assert lm.components["logits"] == C.LOGITS_HF * QWEN.vocab_size * lm.setup.tokens
    # the stored activations of the pair are those of a causal LM run of 2 × micro_batch_size (its final norm
    # output too, read by the score head); with no vocab logits to free first, the first layer's backward adds on top
    def stored(e):
        return stored_activation_bytes(e.arch, e.setup, e.setup.tokens, per_layer_bytes_per_token(e.arch, e.setup), 0)
    assert stored(rm) == stored(lm_pair) > 0
    assert rm.components["activations"] > stored(rm)
    # the score head replaces the tied lm_head: + h weights, no vocab × h
    assert rm.arch.total_params == QWEN.total_params + QWEN.hidden_size
    assert any("RewardTrainer" in a for a in rm.assumptions)
    assert rm.required < lm_pair.required


def test_reward_model_pads_to_sequence_len_by_default() -> None:
    """Axolotl's validator sets pad_to_sequence_len when unset, so the pair's tokens are exact."""
    config = {k: v for k, v in BASE.items() if k != "pad_to_sequence_len"}
    rm = estimate_memory(facts({**config, "reward_model": True}, None, QWEN, H100), QWEN, H100)
    assert rm.setup.packed_or_padded


def test_process_reward_model_is_one_forward_with_a_token_head() -> None:
    prm = est({"process_reward_model": True})
    assert prm.setup.tokens == 2 * 2048 and prm.setup.num_labels == 2
    assert prm.arch.lm_head_params == 2 * QWEN.hidden_size + 2
    assert prm.components["logits"] in (0.0, C.LOGITS_HF * 2 * prm.setup.tokens)


def test_lora_reward_model_trains_the_score_head() -> None:
    """PEFT's SEQ_CLS task adds ``score`` to modules_to_save: the head trains in full beside the adapter."""
    lora = {"adapter": "lora", "lora_r": 16, "lora_target_linear": True}
    assert est({**lora, "reward_model": True}).trainable_params == est(lora).trainable_params + QWEN.hidden_size


@pytest.mark.parametrize("example", ["qwen2/reward-model.yaml", "qwen2/prm.yaml", "gemma2/reward-model.yaml"])
def test_corpus_reward_examples_get_a_verdict(example: str) -> None:
    run = build_run(load_document(EXAMPLES / example))
    assert not not_modelled(run.config, run.facts.sharding, run.arch)
    assert modelled_facts(run) is not None
