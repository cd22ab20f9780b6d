"""AX239 held to the real stack: each catalogued model type built as Axolotl 0.18.0 loads it (transformers 5.14.1, on
the meta device), the names Axolotl's ``find_all_linear_names`` collects for ``lora_target_linear: true`` handed to PEFT
0.19.1's ``get_peft_model``, and what PEFT raised (tests/oracle/lora_targets_judge.py). axlint's names
(``params.linear_names``) must be Axolotl's, and axlint must predict exactly the types PEFT stops on, with the error
PEFT raises. Small models of the MoE families, trained for one step, show the routers PEFT wraps but cannot run. The
LoRA settings of AX239's, AX245's, AX246's and MEM011's own cases (a target string, no target, modules to save that hold
every target or end an adapted Linear's name, layer indexes, initializations, expressions that do not compile, rank and
alpha keys) go to PEFT on a small Llama through Axolotl's own ``_build_peft_lora_config``, AX247's (DoRA or
fan_in_fan_out on parameter targets) on a small Qwen3-MoE, and so do modules to save that take some targets and rank
keys, whose trainable parameters axlint must count as PEFT does."""
from __future__ import annotations

import re
from typing import Any, Callable

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


TARGET_KEYS = ("lora_target_modules", "lora_target_linear", "lora_target_parameters", "lora_modules_to_save",
               "lora_model_dir")
"""What tells PEFT what to adapt (or loads an adapter that says it)."""
LORA_KEYS = (*TARGET_KEYS, "peft_layers_to_transform", "peft_layers_pattern", "peft_init_lora_weights", "lora_r",
             "peft", "lora_rank_pattern", "lora_alpha_pattern", "peft_use_dora", "lora_fan_in_fan_out",
             "peft_trainable_token_indices")
"""The LoRA settings of a rule case that the judge hands Axolotl's ``_build_peft_lora_config``."""


def _on_a_small_model(tmp_path, code: str, keep: Callable[[dict], bool],
                      model_type: str = "llama") -> list[tuple[dict, dict, list]]:
    """(case, PEFT's answer, the rule's findings) for each case of rule `code` whose config `keep` selects: its LoRA
    settings given to PEFT 0.19.1 on a small model of `model_type` (a Llama, or one of `SMALL_MOE`) through Axolotl
    0.18.0's own `_build_peft_lora_config` (lora_targets_judge.py ``written_targets``), and the case linted as the
    rule's tests lint it."""
    import yaml

    from axlint.packs import load_rules
    from tests.rule_cases import findings_for, lint_case, write_case

    rules = load_rules()
    rule = next(r for r in rules if r.code == code)
    cases = [c for c in rule.tests if keep(yaml.safe_load(c["config"]))]
    items = [{"id": str(i), "model_type": model_type, "small": SMALL_MOE.get(model_type, SMALL),
              "lora": {k: v for k, v in yaml.safe_load(c["config"]).items() if k in LORA_KEYS}}
             for i, c in enumerate(cases)]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    judged = []
    for i, case in enumerate(cases):
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        judged.append((case, answers[str(i)], findings_for(write_case(folder, case),
                                                           lint_case(folder, rule, rules, case), code)))
    return judged


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def test_axlint_predicts_which_target_strings_stop_the_wrap(tmp_path) -> None:
    """AX239's cases that write `lora_target_modules` as a string `re` cannot compile: PEFT raises `re.error` exactly
    where AX239 fires (not beside `lora_target_linear`), with the error AX239 prints."""
    judged = _on_a_small_model(tmp_path, "AX239", lambda w: isinstance(w.get("lora_target_modules"), str)
                               and not _compiles(w["lora_target_modules"]))
    assert len(judged) >= 3
    for case, answer, found in judged:
        error = answer["error"]
        assert bool(found) == (case["expect"] == "fail") == bool(error), (case["name"], error)
        if found:
            assert error.startswith("re.error: ") and f"`{error}`" in found[0].message, (error, found[0].message)


def test_a_target_string_beside_lora_target_linear_is_a_name(tmp_path) -> None:
    """MEM011's cases with a string beside `lora_target_linear: true`: PEFT adapts every Linear whatever the string
    says (an expression selects nothing, as MEM011 reports; a name is one of them), so the string never narrows
    the targets."""
    judged = _on_a_small_model(tmp_path, "MEM011", lambda w: bool(w.get("lora_target_linear"))
                               and isinstance(w.get("lora_target_modules"), str))
    assert [case["expect"] for case, _, _ in judged] == ["fail", "pass"]
    every = ["down_proj", "gate_proj", "k_proj", "o_proj", "q_proj", "up_proj", "v_proj"]
    for case, answer, found in judged:
        assert (answer["error"], answer["adapted"]) == ("", every), answer
        assert bool(found) == (case["expect"] == "fail"), case["name"]


def test_a_lora_without_targets_stops_the_wrap(tmp_path) -> None:
    """AX239's cases of a LoRA with no target and no adapter to load: PEFT finds nothing to adapt and raises the
    error AX239 prints."""
    judged = _on_a_small_model(tmp_path, "AX239", lambda w: bool(w.get("adapter"))
                               and not any(w.get(k) for k in TARGET_KEYS))
    assert len(judged) == 2 and all(case["expect"] == "fail" for case, _, _ in judged)
    for case, answer, found in judged:
        error = answer["error"]
        assert error.startswith("builtins.ValueError: No `target_modules` passed"), error
        assert len(found) == 1 and error.removeprefix("builtins.").startswith(
            found[0].message.split("with `", 1)[1].split("`. ", 1)[0]), (error, found[0].message)


def test_axlint_predicts_when_the_modules_to_save_leave_nothing_to_adapt(tmp_path) -> None:
    """AX239's cases with `lora_modules_to_save` (written for a Llama): PEFT stops the wrap exactly where AX239
    fires, with the error AX239 prints."""
    judged = _on_a_small_model(tmp_path, "AX239", lambda w: "lora_modules_to_save" in w and "Llama" in w["base_model"]
                               and not _ends_names(w))
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail", "fail", "pass", "pass"]
    for case, answer, found in judged:
        error = answer["error"]
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:
            assert error.startswith("builtins.ValueError: No modules were targeted for adaptation"), error
            assert "`ValueError: No modules were targeted for adaptation`" in found[0].message


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
            assert (answers[name]["error"], answers[name]["adapted"]) == ("", ["q_proj"]), answers[name]
        else:
            assert answers[name]["error"].startswith("builtins.ValueError: Target modules"), answers[name]


def test_axlint_predicts_when_a_module_to_save_meets_a_lora_layer(tmp_path) -> None:
    """AX239's cases with a `lora_modules_to_save` entry that is no whole module name: PEFT adapts the Linears it
    ends, then refuses to copy one of their LoRA layers exactly where AX239 fires, with the error AX239 prints (the
    small Llama is not quantized, so its LoRA layer is `lora.layer.Linear`)."""
    judged = _on_a_small_model(tmp_path, "AX239", _ends_names)
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail", "fail", "pass"]
    refusal = "TypeError: modules_to_save cannot be applied to modules of type"
    for case, answer, found in judged:
        error = answer["error"].removeprefix("builtins.")
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:
            assert error.startswith(refusal) and refusal in found[0].message, (error, found[0].message)


def _ends_names(written: dict) -> bool:
    """A case whose `lora_modules_to_save` has an entry that ends Linear names (`proj`, `_proj`, `_head`)."""
    return any(isinstance(e, str) and e.startswith(("proj", "_")) for e in written.get("lora_modules_to_save") or ())


SMALL_LORA_RUN = {"base_model": "test/model", "adapter": "lora", "lora_r": 4, "lora_alpha": 8, "sequence_len": 512,
                  "micro_batch_size": 1, "gradient_accumulation_steps": 1, "learning_rate": 2e-4, "bf16": True}
"""The run around each LoRA setting of `_judged_with_estimates`: rank 4, as the judge's own default."""


def _judged_with_estimates(tmp_path, settings: dict[str, dict]) -> list[tuple[str, dict, dict, Any]]:
    """(name, LoRA settings, PEFT's answer, axlint's estimate) for each of `settings` on the small Llama: PEFT
    0.19.1 given them through Axolotl's own `_build_peft_lora_config` (lora_targets_judge.py ``written_targets``),
    and axlint's estimate of `SMALL_LORA_RUN` with them (``_estimated``)."""
    items = [{"id": name, "model_type": "llama", "small": SMALL, "lora": lora} for name, lora in settings.items()]
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    return [(name, lora, answers[name], _estimated(lora)) for name, lora in settings.items()]


def _estimated(lora: dict) -> Any:
    """axlint's estimate of `SMALL_LORA_RUN` with `lora` on the small Llama, on 1×H100."""
    from axlint.hardware import parse_hardware
    from axlint.memory import estimate_memory
    from tests.resolved import facts

    arch = Architecture.from_config("test/model", "model-config", {**SMALL, "model_type": "llama"})
    hw = parse_hardware("1xH100")
    return estimate_memory(facts({**SMALL_LORA_RUN, **lora}, None, arch, hw), arch, hw)


SAVED_SETTINGS = {
    "targets only": {"lora_target_modules": ["q_proj", "v_proj"]},
    "a target saved": {"lora_target_modules": ["q_proj", "v_proj"], "lora_modules_to_save": ["q_proj"]},
    "one layer's target saved": {"lora_target_modules": ["q_proj", "v_proj"],
                                 "lora_modules_to_save": ["layers.0.self_attn.q_proj"]},
    "the MLPs saved": {"lora_target_linear": True, "lora_modules_to_save": ["mlp"]},
    "embeddings and head saved": {"lora_target_linear": True, "lora_modules_to_save": ["embed_tokens", "lm_head"]},
    "a module no target reaches saved": {"lora_target_modules": ["v_proj"], "lora_modules_to_save": ["o_proj"]},
}
"""LoRA settings whose modules to save take some of the targets, all of them or none."""


def test_axlint_counts_the_parameters_peft_trains(tmp_path) -> None:
    """`SAVED_SETTINGS` on a small Llama through Axolotl's own `_build_peft_lora_config`: PEFT trains the adapters
    of the targets no module to save takes and a full copy of each module to save (`params.kept_whole`,
    `modules_to_save_params`); axlint's trainable count is PEFT's, and AX244 names the entries that take targets."""
    from axlint.memory.params import saved_targets

    for name, lora, answer, estimate in _judged_with_estimates(tmp_path, SAVED_SETTINGS):
        assert answer["error"] == "", answer
        assert estimate.trainable_params == answer["trainable"], name
        taken = [entry for entry, _, _ in saved_targets(estimate.arch, estimate.setup)]
        assert taken == (lora["lora_modules_to_save"] if name in ("a target saved", "one layer's target saved",
                                                                   "the MLPs saved") else []), name


RANK_SETTINGS = {
    "a name": {"lora_target_modules": ["q_proj", "v_proj"], "lora_rank_pattern": {"q_proj": 8}},
    "one layer's module": {"lora_target_modules": ["q_proj", "v_proj"],
                           "lora_rank_pattern": {"layers.0.self_attn.q_proj": 8}},
    "a key that is no whole name, and an expression": {"lora_target_linear": True,
                                                       "lora_rank_pattern": {"elf_attn.q_proj": 8, r"mlp\..*": 2}},
    "the first key that matches": {"lora_target_linear": True,
                                   "lora_rank_pattern": {r"layers\.1\..*": 2, ".*proj": 7}},
    "a rank for a module to save": {"lora_target_modules": ["q_proj", "v_proj"], "lora_modules_to_save": ["q_proj"],
                                    "lora_rank_pattern": {"q_proj": 8, "v_proj": 2}},
}
"""`lora_rank_pattern`s that give some adapters, of some layers, other ranks than `lora_r`."""


def test_axlint_follows_the_ranks_peft_gives(tmp_path) -> None:
    """`RANK_SETTINGS` on a small Llama through Axolotl's own `_build_peft_lora_config`: PEFT gives each adapted
    module the rank of the first key that ends its path (`params.adapter_rank`); axlint's trainable count is PEFT's,
    differs from the same LoRA at `lora_r` everywhere, and the estimate is no longer short of a verdict."""
    from axlint.memory.facts import not_modelled

    for name, lora, answer, estimate in _judged_with_estimates(tmp_path, RANK_SETTINGS):
        assert answer["error"] == "", answer
        assert estimate.trainable_params == answer["trainable"], name
        plain = {k: v for k, v in lora.items() if k != "lora_rank_pattern"}
        assert _estimated(plain).trainable_params != answer["trainable"], name
        assert "lora_rank_pattern" not in not_modelled({"adapter": "lora", **lora}, estimate.setup.sharding,
                                                       estimate.arch), name


def test_axlint_predicts_which_layer_settings_stop_the_wrap(tmp_path) -> None:
    """AX239's cases with `peft_layers_to_transform` or `peft_layers_pattern`: PEFT refuses layer indexes beside a
    target string, and raises `re.error` on a pattern name it reaches that does not compile, exactly where AX239
    fires, with the error AX239 prints."""
    judged = _on_a_small_model(tmp_path, "AX239", lambda w: "peft_layers_to_transform" in w)
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail", "fail", "fail", "pass", "pass"]
    for case, answer, found in judged:
        error = answer["error"].removeprefix("builtins.")
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:
            assert error.rstrip(".") in found[0].message, (error, found[0].message)


def test_a_layers_pattern_that_names_no_layer_list_adapts_nothing(tmp_path) -> None:
    """MEM011's cases with `peft_layers_pattern`: a name no targeted module's path has before its index gives PEFT
    no layer index, so alone it leaves nothing to adapt (PEFT stops, as MEM011 says) and beside the model's own it
    is ignored."""
    judged = _on_a_small_model(tmp_path, "MEM011", lambda w: "peft_layers_pattern" in w)
    assert [case["expect"] for case, _, _ in judged] == ["fail", "fail", "pass"]
    for case, answer, found in judged:
        stops = bool(found) and "stops the launch" in found[0].message
        assert bool(found) == (case["expect"] == "fail"), case["name"]
        assert answer["error"].startswith("builtins.ValueError: Target modules") == stops, (case["name"], answer)
        assert answer["adapted"] == ([] if stops else ["q_proj", "v_proj"]), (case["name"], answer)


LEFT_OUT_SETTINGS = {
    "peft_use_dora: true": {"lora_target_modules": ["q_proj", "v_proj"], "peft_use_dora": True},  # counted
    "peft_layer_replication: [[0, 2], [1, 2]]": {"lora_target_modules": ["q_proj", "v_proj"],
                                                 "peft_layer_replication": [[0, 2], [1, 2]]},
    "peft_trainable_token_indices": {"lora_target_modules": ["q_proj", "v_proj"],  # counted
                                     "peft_trainable_token_indices": [3, 4, 5]},
    "peft_trainable_token_indices: embedding and head": {"lora_target_modules": ["q_proj", "v_proj"],  # counted
                                                         "peft_trainable_token_indices": {"embed_tokens": [3, 4],
                                                                                          "lm_head": [7]}},
}
"""LoRA variants by the key MEM010 names when the estimate leaves their work out (`memory.facts.lora_variants`)."""


def test_the_lora_settings_the_estimate_leaves_out_only_add_to_it(tmp_path) -> None:
    """`LEFT_OUT_SETTINGS` on a small Llama through Axolotl's own `_build_peft_lora_config`: each trains more
    parameters than the same LoRA without it. axlint counts DoRA's magnitude vectors (an output width per adapter,
    `params.adapter_params`) and the rest of its work (tests/test_dora_memory.py, tests/test_simulate_vs_analytic.py,
    tests/test_oracle_lora_kernel_memory.py), and trainable tokens' rows (`params.trainable_token_params`) and
    copies (tests/test_simulate_vs_analytic.py); layer replication not at all: it leaves work out of the estimate,
    which is a lower bound, as MEM010 says (`left_out`)."""
    from axlint.memory.facts import left_out

    plain = 2 * 4 * (64 + 64) + 2 * 4 * (64 + 32)  # rank 4 on q_proj (64 -> 64) and v_proj (64 -> 32), 2 layers
    for key, lora, answer, estimate in _judged_with_estimates(tmp_path, LEFT_OUT_SETTINGS):
        assert answer["error"] == "", answer
        counted = estimate.trainable_params
        if key == "peft_use_dora: true":
            assert answer["trainable"] == counted == plain + 2 * (64 + 32), key
            assert left_out({"adapter": "lora", **lora}, estimate.arch) == {}
        elif key.startswith("peft_trainable_token_indices"):
            assert answer["trainable"] == counted == plain + 3 * 64, key  # the small Llama's embedding is untied
            assert left_out({"adapter": "lora", **lora}, estimate.arch) == {}
        else:
            assert answer["trainable"] > counted == plain, key
            assert list(left_out({"adapter": "lora", **lora}, estimate.arch)) == [key]


def test_axlint_predicts_which_initializations_stop_the_wrap(tmp_path) -> None:
    """AX245's cases on a 16-bit load, LoftQ's aside (PEFT asks for scipy first, which the oracle venv lacks): PEFT
    refuses the initialization exactly where AX245 fires, with the error AX245 prints."""
    judged = _on_a_small_model(tmp_path, "AX245", lambda w: w.get("adapter") == "lora"
                               and "loftq" not in str(w.get("peft_init_lora_weights")) and "peft" not in w)
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail"] * 4 + ["pass"] * 3
    for case, answer, found in judged:
        error = answer["error"].removeprefix("builtins.")
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:  # its first sentence (CorDA's goes on with a pointer to PEFT's examples)
            assert error.split(". ")[0].rstrip(".") in found[0].message, (error, found[0].message)


def test_axlint_predicts_which_patterns_stop_the_wrap(tmp_path) -> None:
    """AX246's cases of a LoRA on a Llama that PEFT builds itself (no saved adapter to load): PEFT raises `re.error`
    on a module to save or a rank / alpha key that does not compile exactly where AX246 fires, with the error AX246
    prints, and adapts the targets where it does not."""
    judged = _on_a_small_model(tmp_path, "AX246", lambda w: w.get("adapter") == "lora" and "Llama" in w["base_model"]
                               and "lora_model_dir" not in w)
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail"] * 3 + ["pass"] * 2
    for case, answer, found in judged:
        error = answer["error"]
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:
            assert error.startswith("re.error: ") and f"`{error}`" in found[0].message, (error, found[0].message)
        else:
            assert answer["adapted"] == ["q_proj", "v_proj"], (case["name"], answer)


def test_axlint_finds_the_rank_and_alpha_keys_that_set_nothing(tmp_path) -> None:
    """MEM011's cases with `lora_rank_pattern` or `lora_alpha_pattern` on a Llama: each key given to PEFT 0.19.1
    through Axolotl's own `_build_peft_lora_config`, with and without it; the adapted modules' ranks and alphas are
    the same without a key exactly when MEM011 fires on it."""
    import yaml

    from axlint.packs import load_rules
    from tests.rule_cases import findings_for, lint_case, write_case

    rules = load_rules()
    rule = next(r for r in rules if r.code == "MEM011")
    settings = ("lora_rank_pattern", "lora_alpha_pattern")
    cases = [c for c in rule.tests
             if "Llama" in c["config"] and any(k in yaml.safe_load(c["config"]) for k in settings)]
    items, flagged = [], {}
    for i, case in enumerate(cases):
        lora = {k: v for k, v in yaml.safe_load(case["config"]).items() if k in LORA_KEYS}
        items.append({"id": f"{i}", "model_type": "llama", "small": SMALL, "lora": lora})
        for setting in settings:
            for key in lora.get(setting, {}):
                less = {**lora, setting: {k: v for k, v in lora[setting].items() if k != key}}
                items.append({"id": f"{i}:{setting}:{key}", "model_type": "llama", "small": SMALL, "lora": less})
        folder = tmp_path / f"case{i}"
        folder.mkdir()
        flagged[i] = {f.message.split("`")[3] for f in findings_for(write_case(folder, case),
                                                                   lint_case(folder, rule, rules, case), "MEM011")}
    answers = judge(oracle_python(), items, tmp_path, script="lora_targets_judge.py")
    assert sorted(c["expect"] for c in cases) == ["fail", "fail", "pass"]
    judged = 0
    for item in items[1:]:
        if ":" not in item["id"]:
            continue
        i, _, key = item["id"].split(":", 2)
        whole, less = answers[i], answers[item["id"]]
        assert whole["error"] == less["error"] == "", item["id"]
        assert (whole["ranks"] == less["ranks"]) == (key in flagged[int(i)]), item["id"]
        judged += 1
    assert judged == 6 and sum(map(len, flagged.values())) == 2


def test_axlint_predicts_which_settings_parameter_targets_refuse(tmp_path) -> None:
    """AX247's cases on a Qwen3-MoE: PEFT refuses DoRA and fan_in_fan_out on parameter targets, written or
    converted from the old expert names, exactly where AX247 fires, with the error AX247 prints."""
    judged = _on_a_small_model(tmp_path, "AX247", lambda w: "Qwen3" in w["base_model"], model_type="qwen3_moe")
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail"] * 3 + ["pass"] * 3
    for case, answer, found in judged:
        error = answer["error"].removeprefix("builtins.")
        assert bool(found) == bool(error) == (case["expect"] == "fail"), (case["name"], error)
        if found:
            assert error.rstrip(".") in found[0].message, (error, found[0].message)


def test_axlint_predicts_which_trainable_token_layers_stop_the_wrap(tmp_path) -> None:
    """AX248's cases on the small Llama, but those with rows past its 256 (the judge builds the model on the meta
    device, which checks no index) and the saved adapter to load: PEFT refuses the wrap exactly where AX248 fires,
    with the error AX248 prints; where it wraps, it trains the rows axlint counts."""
    def small_rows(written: dict) -> bool:
        tokens = written.get("peft_trainable_token_indices")
        rows = tokens if isinstance(tokens, list) else [i for v in (tokens or {}).values() for i in v]
        return all(i < SMALL["vocab_size"] for i in rows) and "lora_model_dir" not in written

    judged = _on_a_small_model(tmp_path, "AX248", small_rows)
    assert sorted(case["expect"] for case, _, _ in judged) == ["fail"] * 5 + ["pass"] * 3
    for case, answer, found in judged:
        assert bool(found) == (case["expect"] == "fail") == bool(answer["error"]), (case["name"], answer)
        if found:
            error = answer["error"].removeprefix("builtins.")
            kind = error.split(":", 1)[0]
            assert f"with `{kind}: " in found[0].message, (case["name"], error, found[0].message)
            if kind != "AttributeError":  # PEFT names the module's class, which axlint does not print
                assert error.startswith(found[0].message.split("with `", 1)[1].split("`", 1)[0]), case["name"]
