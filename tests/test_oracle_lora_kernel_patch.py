"""Where Axolotl's fused LoRA kernels cannot patch the model, held to Axolotl 0.18.0's own patching code on
transformers 5.14.1 and PEFT 0.19.1 (the oracle venv of tests/oracle): which model types' attention
``patch_self_attn_lora`` cannot rewrite (``facts.LORA_ATTENTION_REWRITE_FAILS``, rule AX233), for the config.json of
every model type in axlint's catalog; and which PEFT models ``apply_lora_kernel_patches`` refuses (rule AX234)."""
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
    judged = judge(oracle_python(), items, tmp_path_factory.mktemp("attention"), script="kernel_patch_judge.py")
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


def test_the_kernel_patch_refuses_classification_models(tmp_path) -> None:
    """AX234: a reward model (sequence classification) and a process reward model (token classification) come back
    from PEFT as models the kernel patch refuses; a causal LM is patched."""
    items = [{"id": task, "task_type": task} for task in ("CAUSAL_LM", "SEQ_CLS", "TOKEN_CLS")]
    judged = judge(oracle_python(), items, tmp_path, script="kernel_patch_judge.py")
    assert judged["CAUSAL_LM"]["error"] == ""
    for task in ("SEQ_CLS", "TOKEN_CLS"):
        assert judged[task]["error"] == "TypeError: Model must be a PeftModelForCausalLM"
