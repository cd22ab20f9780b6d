"""AX239 held to the real stack: each catalogued model type built as Axolotl 0.18.0 loads it (transformers 5.14.1, on
the meta device), the names Axolotl's ``find_all_linear_names`` collects for ``lora_target_linear: true`` handed to
PEFT 0.19.1's ``get_peft_model``, and what PEFT raised (tests/oracle/lora_targets_judge.py). axlint's names
(``params.linear_names``) must be Axolotl's, and axlint must predict exactly the types PEFT stops on, with the
error PEFT raises. Small models of the MoE families, trained for one step, show the routers PEFT wraps but cannot
run."""
from __future__ import annotations

import pytest

from axlint.architectures import Architecture
from axlint.memory.params import linear_names, refused_lora_targets
from tests.catalog_models import one_config_per_model_type
from tests.oracle.venv import judge, oracle_python

ROUTER_DRIFT = {"jamba": {"router"}}
"""Jamba's router is an ``nn.Linear`` in transformers 5.14.1 (Axolotl 0.18.0's pin), which Axolotl's list picks up,
and a ``JambaTopKRouter`` module in transformers 5.24, whose layout axlint follows."""
ERRORS = {
    "empty": "ValueError: No `target_modules` passed but also no `target_parameters` found",
    "mamba": "ValueError: [PEFT:PeftType.LORA] Module 'out_proj' is incompatible with Mamba-based models",
    "router": "AttributeError: 'tuple' object has no attribute 'dtype'",
}
"""The start of what PEFT raises for each kind of refusal; every other kind is ``NOT_SUPPORTED``."""
NOT_SUPPORTED = "ValueError: Target module "


@pytest.fixture(scope="module")
def configs() -> dict[str, dict]:
    return one_config_per_model_type()


@pytest.fixture(scope="module")
def built(configs: dict[str, dict], tmp_path_factory) -> dict[str, dict]:
    """Axolotl's names and PEFT's answer for every catalogued type that transformers builds from its config alone."""
    items = [{"id": model_type, "config": config} for model_type, config in configs.items()]
    judged = judge(oracle_python(), items, tmp_path_factory.mktemp("targets"), script="lora_targets_judge.py")
    return {t: v for t, v in judged.items() if v["error"] not in ("build", "remote code")}


def _arch(configs: dict[str, dict], model_type: str) -> Architecture:
    return Architecture.from_config("test/model", "catalog", configs[model_type])


def test_most_catalogued_types_are_built(built: dict[str, dict]) -> None:
    assert len(built) > 55


def test_axlint_collects_axolotls_linear_names(configs: dict[str, dict], built: dict[str, dict]) -> None:
    for model_type, answer in sorted(built.items()):
        names = set(linear_names(_arch(configs, model_type))) | ROUTER_DRIFT.get(model_type, set())
        assert names == set(answer["names"]), model_type


def test_axlint_predicts_the_types_peft_stops_on(configs: dict[str, dict], built: dict[str, dict]) -> None:
    stopped = set()
    for model_type, answer in sorted(built.items()):
        arch = _arch(configs, model_type)
        names = linear_names(arch)
        refused = refused_lora_targets(arch, names)
        kind = "empty" if not names else refused[0][2] if refused else None
        if kind in (None, "router"):  # a router PEFT wraps and fails on later: the small models' test
            assert answer["error"] == "", model_type
        else:
            assert answer["error"].startswith(ERRORS.get(kind, NOT_SUPPORTED)), (model_type, answer["error"])
            stopped.add(model_type)
    assert stopped == {"falcon_h1", "gpt2", "mamba", "qwen2_5_vl", "qwen2_vl"}


SMALL = {"hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "pad_token_id": 0, "bos_token_id": 1,
         "eos_token_id": 2}
SMALL_MOE = {
    "phimoe": {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2, "rope_scaling": None},
    "llama4_text": {**SMALL, "intermediate_size_mlp": 96, "num_local_experts": 4, "num_experts_per_tok": 1},
    "mixtral": {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen3_moe": {**SMALL, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32},
    "gpt_oss": {**SMALL, "num_local_experts": 4, "num_experts_per_tok": 2},
}
"""Small models of MoE families whose routers differ: an nn.Linear subclass returning a tuple (Phi-3.5-MoE, Llama 4),
a plain nn.Linear (Mixtral), a router module (Qwen3-MoE, gpt-oss)."""


def test_axlint_predicts_which_routers_stop_the_first_step(tmp_path) -> None:
    items = [{"id": t, "model_type": t, "small": config} for t, config in SMALL_MOE.items()]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    stopped = set()
    for model_type, config in SMALL_MOE.items():
        arch = Architecture.from_config("test/model", "model-config", {**config, "model_type": model_type})
        refused = refused_lora_targets(arch, linear_names(arch))
        error = answers[model_type]["error"]
        if refused:
            assert refused[0][2] == "router" and error.startswith(ERRORS["router"]), (model_type, error)
            stopped.add(model_type)
        else:
            assert error == "", (model_type, error)
    assert stopped == {"phimoe", "llama4_text"}


def test_axlint_predicts_which_target_strings_stop_the_wrap(tmp_path) -> None:
    """AX239's own cases that write `lora_target_modules` as a string `re` cannot compile, on a small Llama: PEFT
    raises `re.error` exactly where AX239 fires (not beside `lora_target_linear`), with the error AX239 prints."""
    import re

    import yaml

    from axlint.packs import load_rules
    from tests.rule_cases import findings_for, lint_case, write_case

    rules = load_rules()
    rule = next(r for r in rules if r.code == "AX239")
    def compiles(pattern: str) -> bool:
        try:
            re.compile(pattern)
        except re.error:
            return False
        return True

    cases = [c for c in rule.tests if isinstance(target := yaml.safe_load(c["config"]).get("lora_target_modules"), str)
             and not compiles(target)]
    assert len(cases) >= 3
    items = []
    for i, case in enumerate(cases):
        written = yaml.safe_load(case["config"])
        lora = {k: written[k] for k in ("lora_target_modules", "lora_target_linear") if k in written}
        items.append({"id": str(i), "model_type": "llama", "small": SMALL, "lora": lora})
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    for i, case in enumerate(cases):
        error = answers[str(i)]["error"]
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        found = findings_for(write_case(folder, case), lint_case(folder, rule, rules, case), "AX239")
        assert bool(found) == (case["expect"] == "fail") == bool(error), (case["name"], error)
        if found:
            assert error.startswith("re.error: ") and f"`{error}`" in found[0].message, (error, found[0].message)


def test_a_target_string_beside_lora_target_linear_is_a_name(tmp_path) -> None:
    """MEM011's cases with a string beside `lora_target_linear: true`, on a small Llama through Axolotl's own
    `_build_peft_lora_config`: PEFT adapts every Linear whatever the string says (an expression selects nothing,
    as MEM011 reports; a name is one of them), so the string never narrows the targets."""
    import yaml

    from axlint.packs import load_rules
    from tests.rule_cases import findings_for, lint_case, write_case

    rules = load_rules()
    rule = next(r for r in rules if r.code == "MEM011")
    cases = [c for c in rule.tests if (w := yaml.safe_load(c["config"])).get("lora_target_linear")
             and isinstance(w.get("lora_target_modules"), str)]
    assert [c["expect"] for c in cases] == ["fail", "pass"]
    items = [{"id": str(i), "model_type": "llama", "small": SMALL,
              "lora": {k: yaml.safe_load(c["config"])[k] for k in ("lora_target_modules", "lora_target_linear")}}
             for i, c in enumerate(cases)]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    every = ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    for i, case in enumerate(cases):
        assert answers[str(i)] == {"id": str(i), "error": "", "adapted": every}, answers[str(i)]
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        found = findings_for(write_case(folder, case), lint_case(folder, rule, rules, case), "MEM011")
        assert bool(found) == (case["expect"] == "fail"), case["name"]


def test_a_lora_without_targets_stops_the_wrap(tmp_path) -> None:
    """AX239's cases of a LoRA with no target and no adapter to load, on a small Llama through Axolotl's own
    `_build_peft_lora_config`: PEFT finds nothing to adapt and raises the error AX239 prints."""
    import yaml

    from axlint.packs import load_rules
    from tests.rule_cases import findings_for, lint_case, write_case

    rules = load_rules()
    rule = next(r for r in rules if r.code == "AX239")
    keys = ("lora_target_modules", "lora_target_linear", "lora_target_parameters", "lora_model_dir")
    cases = [c for c in rule.tests if not any((w := yaml.safe_load(c["config"])).get(k) for k in keys)
             and w.get("adapter")]
    assert len(cases) == 2 and all(c["expect"] == "fail" for c in cases)
    items = [{"id": str(i), "model_type": "llama", "small": SMALL,
              "lora": {k: v for k, v in yaml.safe_load(c["config"]).items() if k in keys}} for i, c in enumerate(cases)]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    for i, case in enumerate(cases):
        error = answers[str(i)]["error"]
        assert error.startswith("builtins.ValueError: No `target_modules` passed"), error
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        found = findings_for(write_case(folder, case), lint_case(folder, rule, rules, case), "AX239")
        assert len(found) == 1 and error.removeprefix("builtins.").startswith(
            found[0].message.split("with `", 1)[1].split("`. ", 1)[0]), (error, found[0].message)


def test_axlint_reads_the_layer_indexes_peft_reads(tmp_path) -> None:
    """`peft_layers_to_transform` on a small Llama through Axolotl's own `_build_peft_lora_config`: PEFT adapts the
    listed layers that exist, ignores an index past the last layer, and stops the wrap when none exists; axlint's
    reading of the indexes off the module paths (`params.peft_layer_indexes`) says the same."""
    from axlint.memory.params import peft_layer_indexes

    arch = Architecture.from_config("test/model", "model-config", {**SMALL, "model_type": "llama"})
    present = peft_layer_indexes(arch)
    asks = {"last": [1], "past": [1, 5], "none": [5, 6]}
    items = [{"id": name, "model_type": "llama", "small": SMALL,
              "lora": {"lora_target_modules": ["q_proj"], "peft_layers_to_transform": indexes}}
             for name, indexes in asks.items()]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    assert present == {0, 1}
    for name, indexes in asks.items():
        kept = [i for i in indexes if i in present]
        if kept:
            assert answers[name] == {"id": name, "error": "", "adapted": ["q_proj"]}, answers[name]
        else:
            assert answers[name]["error"].startswith("builtins.ValueError: Target modules"), answers[name]


def test_axlint_predicts_when_the_modules_to_save_leave_nothing_to_adapt(tmp_path) -> None:
    """AX239's cases with `lora_modules_to_save` (written for a Llama), on a small Llama through Axolotl's own
    `_build_peft_lora_config`: PEFT stops the wrap exactly where AX239 fires, with the error AX239 prints."""
    import yaml

    from axlint.packs import load_rules
    from tests.rule_cases import findings_for, lint_case, write_case

    rules = load_rules()
    rule = next(r for r in rules if r.code == "AX239")
    keys = ("lora_target_modules", "lora_target_linear", "lora_modules_to_save")
    cases = [c for c in rule.tests if "lora_modules_to_save" in (w := yaml.safe_load(c["config"]))
             and "Llama" in w["base_model"]]
    assert sorted(c["expect"] for c in cases) == ["fail", "fail", "pass", "pass"]
    items = [{"id": str(i), "model_type": "llama", "small": SMALL,
              "lora": {k: v for k, v in yaml.safe_load(c["config"]).items() if k in keys}} for i, c in enumerate(cases)]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    for i, case in enumerate(cases):
        error = answers[str(i)]["error"]
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        found = findings_for(write_case(folder, case), lint_case(folder, rule, rules, case), "AX239")
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:
            assert error.startswith("builtins.ValueError: No modules were targeted for adaptation"), error
            assert "`ValueError: No modules were targeted for adaptation`" in found[0].message
