"""Where Axolotl's fused LoRA kernels cannot patch the model, held to Axolotl 0.18.0's own patching code on
transformers 5.14.1 and PEFT 0.19.1 (the oracle venv of tests/oracle): which model types' attention
``patch_self_attn_lora`` cannot rewrite (``facts.LORA_ATTENTION_REWRITE_FAILS``, rule AX233), for the config.json of
every model type in axlint's catalog; which models' layers ``apply_lora_kernel_patches`` cannot find
(``facts.LORA_KERNEL_LAYERS_NOT_FOUND``, rule AX235), for the same configs; and which PEFT models it refuses (rule
AX234)."""
from __future__ import annotations

import pytest

from axlint.facts import (
    LORA_ATTENTION_REWRITE_FAILS,
    LORA_KERNEL_LAYERS_NOT_FOUND,
    LORA_KERNELS_UNSUPPORTED,
    lora_kernel_layers_error,
)
from tests.catalog_models import one_config_per_model_type
from tests.oracle.venv import judge, oracle_python
from tests.resolved import facts


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, dict]:
    """Axolotl's answers for every catalogued model type: "<type>" for the attention rewrite, "layers:<type>" for
    the layers the kernel patch looks for; one judge process for both."""
    configs = one_config_per_model_type()
    items = [{"id": model_type, "config": config} for model_type, config in configs.items()]
    items += [{"id": f"layers:{model_type}", "model_type": model_type, "layers_of": config}
              for model_type, config in configs.items()]
    return judge(oracle_python(), items, tmp_path_factory.mktemp("kernels"), script="kernel_patch_judge.py")


@pytest.fixture(scope="module")
def answers(judged: dict[str, dict]) -> dict[str, str]:
    """model type -> Axolotl's error ("" when the rewrite applies, "remote code" when transformers lacks the type)."""
    return {model_type: judged[model_type]["error"] for model_type in one_config_per_model_type()}


@pytest.fixture(scope="module")
def layers(judged: dict[str, dict]) -> dict[str, dict]:
    """model type -> the kernel patch's answer on that model ({"error"}, with "build" and a reason where
    transformers cannot build the model from its config.json alone)."""
    return {model_type: judged[f"layers:{model_type}"] for model_type in one_config_per_model_type()}


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


def test_the_layers_table_is_axolotls_answer(layers: dict[str, dict]) -> None:
    """AX235: a type is in the table exactly when the kernel patch raises for it, with the error the rule quotes;
    every other type that builds is patched."""
    built = {model_type: answer["error"] for model_type, answer in layers.items()
             if answer["error"] not in ("build", "remote code")}
    assert len(built) > 50, layers
    mlp_kernel = facts({"adapter": "lora", "lora_mlp_kernel": True})
    for model_type, error in sorted(built.items()):
        if model_type in LORA_KERNEL_LAYERS_NOT_FOUND:
            assert error == lora_kernel_layers_error(mlp_kernel, model_type), (model_type, error)
        else:
            assert error == "", (model_type, error)
    assert set(LORA_KERNEL_LAYERS_NOT_FOUND) <= set(built)
    assert {"gpt_neox", "falcon", "mpt", "llama4"} <= set(LORA_KERNEL_LAYERS_NOT_FOUND)
    assert built["llama"] == built["qwen3"] == built["qwen2_5_vl"] == ""
