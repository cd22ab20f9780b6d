"""Which model types' attention Axolotl cannot rewrite for its fused LoRA QKV / O kernels
(``facts.LORA_ATTENTION_REWRITE_FAILS``, rule AX233), held to Axolotl 0.18.0's own ``patch_self_attn_lora`` on
transformers 5.14.1 (the oracle venv of tests/oracle) for the config.json of every model type in axlint's catalog."""
from __future__ import annotations

import pytest

from axlint.architectures.resolve import load_catalog
from axlint.facts import LORA_ATTENTION_REWRITE_FAILS, LORA_KERNELS_UNSUPPORTED
from tests.oracle.venv import judge, oracle_python


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, str]:
    """model type -> Axolotl's error ("" when the rewrite applies, "remote code" when transformers lacks the type)."""
    configs: dict[str, dict] = {}
    for entry in load_catalog():
        configs.setdefault(str(entry["config"].get("model_type")), entry["config"])
    items = [{"id": model_type, "config": config} for model_type, config in configs.items()]
    judged = judge(oracle_python(), items, tmp_path_factory.mktemp("attention"), script="attention_judge.py")
    return {model_type: judged[model_type]["error"] for model_type in configs}


def test_every_catalogued_type_is_judged(answers: dict[str, str]) -> None:
    assert len(answers) > 50
    assert set(LORA_ATTENTION_REWRITE_FAILS) <= set(answers)


def test_the_table_is_axolotls_answer(answers: dict[str, str]) -> None:
    """A type is in the table exactly when Axolotl's rewrite raises for it, with the error it raises; types that
    Axolotl's model support turns the kernels off for, and remote-code types, never reach the rewrite."""
    for model_type, error in sorted(answers.items()):
        expected = LORA_ATTENTION_REWRITE_FAILS.get(model_type)
        if error in ("", "remote code") or model_type in LORA_KERNELS_UNSUPPORTED:
            assert expected is None, (model_type, error)
        else:
            assert expected is not None, (model_type, error)
            assert error.startswith(expected.format(model_type=model_type)), (model_type, error)


def test_the_rewrite_applies_to_llama_and_qwen(answers: dict[str, str]) -> None:
    assert answers["llama"] == answers["qwen2"] == answers["qwen3"] == ""
    assert answers["olmo3"] == "AssertionError: Original QKV code not found"
