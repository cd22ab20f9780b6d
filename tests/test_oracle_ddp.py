"""The multimodal parameters that get no gradient in a text-only step (``params.idle_split``), and AX240 /
AX241, held to the real stack (tests/oracle/ddp_judge.py): a small model of every multimodal type in
tests/test_vision.py, built as Axolotl 0.18.0 loads it (transformers 5.14.1), full or under PEFT 0.19.1's LoRA on
the names of ``lora_target_linear``, with and without Axolotl's own ``freeze_mm_modules``, trained one text-only
step; and two processes of transformers' Trainer under DDP (gloo) with the arguments Axolotl gives it."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest


from axlint.architectures import Architecture
from axlint.commands.common import parse_hardware_option
from axlint.hardware import parse_hardware
from axlint.lint import LintOptions, lint_text
from axlint.memory.params import idle_split
from axlint.memory.setup import read_setup
from axlint.packs import load_rules
from tests.catalog_models import meta_model
from tests.oracle.venv import judge, oracle_python
from tests.resolved import facts
from tests.test_vision import CASES, TEXT

H100 = parse_hardware("1xH100")
MROPE = {"rope_parameters": {"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 10000.0}}
"""Multimodal rotary sections that fit TEXT's 16-wide heads, for the types whose text forward reads them."""
MROPE_TYPES = ("qwen2_vl", "qwen2_5_vl", "glm4v", "glm46v", "paddleocr_vl")
NOT_BUILT = {"gemma3n": "its vision tower is timm's MobileNet, and the oracle venv has no timm"}
"""Types the judge cannot run, and why."""
PEFT_REFUSES = {"qwen2_vl", "qwen2_5_vl", "llama4"}
"""Types whose ``lora_target_linear`` names PEFT refuses or cannot run (AX239): no LoRA step to judge."""


def _cases() -> dict[str, dict[str, Any]]:
    """The first tiny config of each multimodal type, with MROPE where the text forward needs it."""
    out = {}
    for model_type, variants in CASES.items():
        fields = copy.deepcopy(variants[0])
        if model_type in MROPE_TYPES:
            fields["text_config"] = {**{k: v for k, v in fields["text_config"].items() if k != "rope_scaling"},
                                     **MROPE}
        out[model_type] = fields
    return out


def _items() -> list[dict[str, Any]]:
    return [{"id": f"{t}|{lora}|{freeze}", "model_type": t, "config": {"model_type": t, **fields}, "lora": lora,
             "freeze": freeze}
            for t, fields in _cases().items() if t not in NOT_BUILT
            for lora in (False, True) if not (lora and t in PEFT_REFUSES) for freeze in (False, True)]


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> dict[str, dict]:
    return judge(oracle_python(), _items(), tmp_path_factory.mktemp("ddp"), script="ddp_judge.py")


def _split(model_type: str, lora: bool, freeze: bool):
    config = meta_model({"model_type": model_type, **_cases()[model_type]}).config.to_dict()
    arch = Architecture.from_config("test/model", "catalog", config)
    raw = {"base_model": "test/model", "freeze_mm_modules": freeze,
           **({"adapter": "lora", "lora_r": 4, "lora_target_linear": True} if lora else {})}
    return idle_split(arch, read_setup(facts(raw, None, arch, H100), arch))


@pytest.mark.parametrize("item", _items(), ids=lambda item: item["id"])
def test_axlint_knows_which_parameters_get_no_gradient(item: dict[str, Any], judged: dict[str, dict]) -> None:
    answer = judged[item["id"]]
    assert answer["error"] == "", answer["error"]
    split = _split(item["model_type"], item["lora"], item["freeze"])
    assert (split.frozen_base, split.frozen_adapter, split.idle_base, split.idle_adapter) == (
        answer["frozen_base"], answer["frozen_adapter"], answer["idle_base"], answer["idle_adapter"])


def test_every_multimodal_type_is_judged_or_said_why() -> None:
    assert set(NOT_BUILT) <= set(CASES)
    assert len({item["model_type"] for item in _items()}) == len(CASES) - len(NOT_BUILT)


LLAMA = {"model_type": "llama", **TEXT}
LLAVA_LORA = {"model_type": "llava", "config": {"model_type": "llava", **_cases()["llava"]}, "lora": True,
              "freeze": False, "find_unused": False, "reentrant": True}
"""LoRA on every Linear of a small LLaVA, trained on text with Axolotl's DDP defaults: the tower's adapters idle."""
LLAVA_YAML = ("base_model: llava-hf/llava-1.5-7b-hf\nadapter: lora\nlora_r: 4\nlora_target_linear: true\n"
              "gradient_checkpointing: true\n")
DEEPSPEED = Path(__file__).resolve().parent.parent / "fixtures" / "axolotl" / "deepspeed_configs"


def _deepspeed(name: str, offload: bool = True) -> dict[str, Any]:
    """Axolotl's DeepSpeed file ``name``; without ``offload``, less its optimizer offload (DeepSpeed's CPU Adam is
    a C++ op the oracle venv does not build; where the optimizer states live does not change which gradients
    the reduction waits for)."""
    config = json.loads((DEEPSPEED / name).read_text())
    if not offload:
        config["zero_optimization"].pop("offload_optimizer")
    return config


RUNS = {
    "idle adapters, Axolotl's defaults": (
        LLAVA_LORA, LLAVA_YAML, "Expected to have finished reduction in the prior iteration", {"AX240"}),
    "idle adapters, freeze_mm_modules": (
        {**LLAVA_LORA, "freeze": True}, LLAVA_YAML + "freeze_mm_modules: true\n",
        "", set()),
    "idle adapters, find_unused with non-reentrant checkpointing": (
        {**LLAVA_LORA, "find_unused": True, "reentrant": False},
        LLAVA_YAML + "ddp_find_unused_parameters: true\ngradient_checkpointing_kwargs:\n  use_reentrant: false\n",
        "", set()),
    "idle adapters, DeepSpeed ZeRO-1": (
        {**LLAVA_LORA, "deepspeed": _deepspeed("zero1.json")},
        LLAVA_YAML + "deepspeed: deepspeed_configs/zero1.json\n", "", set()),
    "idle adapters, DeepSpeed ZeRO-2": (
        {**LLAVA_LORA, "deepspeed": _deepspeed("zero2.json", offload=False)},
        LLAVA_YAML + "deepspeed: deepspeed_configs/zero2.json\n", "", set()),
    "idle adapters, DeepSpeed ZeRO-3": (
        {**LLAVA_LORA, "deepspeed": _deepspeed("zero3.json")},
        LLAVA_YAML + "deepspeed: deepspeed_configs/zero3.json\n", "", set()),
    "idle adapters, FSDP2": (
        {**LLAVA_LORA, "fsdp2": ["LlamaDecoderLayer"]},
        LLAVA_YAML + "fsdp_version: 2\nfsdp_config:\n  auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
        "  transformer_layer_cls_to_wrap: LlamaDecoderLayer\n", "", set()),
    "a text model, find_unused with Axolotl's reentrant checkpointing": (
        {"model_type": "llama", "config": LLAMA, "lora": False, "freeze": False, "find_unused": True,
         "reentrant": True},
        "base_model: meta-llama/Llama-3.1-8B\ngradient_checkpointing: true\nddp_find_unused_parameters: true\n",
        "Expected to mark a variable ready only once", {"AX241"}),
}
"""Two-process runs: (the judge's run, the YAML of that run for a catalogued model of the same type, the start of
the RuntimeError the ranks raise or "" when all four steps ran, the DDP rules axlint raises on 2 GPUs)."""


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, dict]:
    items = [{"id": name, "ddp": run} for name, (run, *_) in RUNS.items()]
    return judge(oracle_python(), items, tmp_path_factory.mktemp("ddp-runs"), script="ddp_judge.py")


@pytest.mark.parametrize("name", list(RUNS))
def test_ddp_rules_fire_exactly_on_the_runs_that_stop(name: str, trained: dict[str, dict]) -> None:
    _, yaml, error, codes = RUNS[name]
    answer = trained[name]
    if error:
        assert answer["error"].startswith(error), answer["log"]
    else:
        assert (answer["error"], answer["steps"]) == ("", 4), answer["log"]
    options = LintOptions(load_rules(), parse_hardware_option("2xH100"))
    fired = {d.code for d in lint_text(Path("config.yml"), yaml, options).diagnostics} & {"AX240", "AX241"}
    assert fired == codes
