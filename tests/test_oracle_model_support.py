"""Axolotl 0.18.0's model support registry (the oracle venv of tests/oracle), for rule AX236: the capabilities each
model type's descriptor declares unsupported (``facts.UNSUPPORTED_CAPABILITIES``); the errors the Cut Cross Entropy
and Liger plugins raise for them before the model loads (``facts.capability_error``); the Liger flags that make that
plugin check (``facts.LIGER_FLAGS``)."""
from __future__ import annotations

import pytest

from axlint.facts import (
    CAPABILITY_FEATURES,
    LIGER_FLAGS,
    LORA_KERNELS_UNSUPPORTED,
    UNSUPPORTED_CAPABILITIES,
    capability_error,
)
from tests.oracle.venv import judge, oracle_python

PLUGIN_TYPES = (*UNSUPPORTED_CAPABILITIES, "llama", "qwen3")


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, dict]:
    items = [{"id": "registry"}, {"id": "liger_flags"}]
    items += [{"id": f"{plugin}:{model_type}", "plugin": plugin, "model_type": model_type}
              for plugin in CAPABILITY_FEATURES for model_type in PLUGIN_TYPES]
    return judge(oracle_python(), items, tmp_path_factory.mktemp("support"), script="model_support_judge.py")


def test_the_table_is_axolotls_registry(judged: dict[str, dict]) -> None:
    assert judged["registry"]["unsupported"] == UNSUPPORTED_CAPABILITIES
    assert LORA_KERNELS_UNSUPPORTED == {"paddleocr_vl"}


def test_the_liger_flags_are_the_plugins(judged: dict[str, dict]) -> None:
    assert tuple(judged["liger_flags"]["flags"]) == LIGER_FLAGS


@pytest.mark.parametrize("plugin", list(CAPABILITY_FEATURES))
def test_the_plugins_raise_what_the_rule_quotes(judged: dict[str, dict], plugin: str) -> None:
    """Each plugin refuses exactly the model types whose support declares it unsupported, with the error AX236
    quotes; a model type without a descriptor goes on."""
    refused = [t for t in PLUGIN_TYPES if capability_error(t, plugin)]
    assert refused == ["paddleocr_vl"]
    for model_type in PLUGIN_TYPES:
        assert judged[f"{plugin}:{model_type}"]["error"] == (capability_error(model_type, plugin) or ""), model_type
