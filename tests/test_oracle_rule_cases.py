"""The real stack as the judge of the rules' own cases: every case of a rule that says Axolotl stops at config
validation is written onto a config Axolotl 0.18.0 accepts (`BASE`, the case's keys over it) and judged by the
oracle (tests/oracle: `load_cfg`'s steps in the pinned venv, with the capabilities of 8×H100). A case that expects
the rule to fire must be one Axolotl refuses, and a passing case one it accepts, unless `EXCEPTIONS` says why the
two cannot agree. So a rule's cases cannot drift from the validator they mirror.
"""
from __future__ import annotations

import json

import pytest
import yaml

from axlint.packs import load_rules
from tests.corpus import CORPUS
from tests.oracle.venv import judge, oracle_python
from tests.test_oracle import CAPABILITIES

HARDWARE = "8xH100"
"""The GPUs CAPABILITIES describe (tests/test_oracle.py): a case written for them is judged too."""
BASE = {"base_model": "HuggingFaceTB/SmolLM2-135M",
        "datasets": [{"path": "mhenrichsen/alpaca_2k_test", "type": "alpaca"}],
        "micro_batch_size": 2, "gradient_accumulation_steps": 1, "num_epochs": 1, "learning_rate": 0.0001,
        "output_dir": "./out", "sequence_len": 512}
"""A config Axolotl 0.18.0 accepts; each case's keys replace or join these."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("AX100", "deepspeed and fsdp_config"): "accepted by design: Axolotl takes the FSDP path and ignores the "
                                            "DeepSpeed file, the silent failure AX100 names",
    ("AX115", "the CCE plugin's default with Liger FLCE"): "accepted by design: both plugins patch the loss at "
                                                           "load, the silent failure AX115 names",
    ("AX113", "batch_size with micro batch only"): "the case is about a config without gradient_accumulation_steps, "
                                                   "which the base sets",
    ("AX200", "only micro_batch_size"): "the case is about a missing batch key, which the base sets",
    ("AX200", "batch_size and micro batch"): "the case leaves gradient_accumulation_steps out, which the base sets",
    ("AX214", "no learning rate"): "the case is about a missing learning_rate, which the base sets",
    ("AX214", "no datasets"): "the case is about missing datasets, which the base sets",
    ("AX214", "pretraining dataset instead"): "the case needs max_steps for its streamed dataset, which a base "
                                              "that trains on `datasets` does not set",
    ("AX219", "zero split"): "the case needs max_steps for its streamed dataset, which the base does not set",
    ("AX223", "a third-party plugin may register it"): "axlint stays silent because a plugin it cannot see may "
                                                       "register the adapter; the oracle has no such plugin",
}
"""(rule code, case name) -> why the case and Axolotl's verdict differ. Every entry must still be a case."""


def _cases() -> list[tuple[str, dict]]:
    """(code, case) of every rule whose docs say Axolotl stops at config validation; cases that need other
    GPUs than `HARDWARE`, a DeepSpeed file or extra files are judged by their own suites."""
    found = []
    for rule in load_rules():
        if "config validation" not in (rule.docs.get("launch_failure") or ""):
            continue
        found += [(rule.code, case) for case in rule.tests
                  if case.get("hardware", HARDWARE) == HARDWARE and not (case.get("deepspeed") or case.get("files"))]
    return found


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, tuple[str, dict, dict]]:
    root = tmp_path_factory.mktemp("rule-cases")
    written = {}
    for i, (code, case) in enumerate(_cases()):
        config = yaml.safe_load(case["config"])
        if not isinstance(config, dict):
            continue
        if config.get("base_model") == "x":  # the packs' placeholder; a real name is kept (some checks read it)
            del config["base_model"]
        name = f"{code}-{i:03d}.yml"
        (root / name).write_text(yaml.safe_dump({**BASE, **config}, sort_keys=False), encoding="utf-8")
        written[name] = (code, case)
    (root / "deepspeed_configs").symlink_to(CORPUS / "deepspeed_configs", target_is_directory=True)
    judged = judge(oracle_python(), [{"id": name, "capabilities": CAPABILITIES} for name in written], root)
    return {name: (code, case, judged[name]) for name, (code, case) in written.items()}


def test_the_base_is_a_config_axolotl_accepts(tmp_path):
    (tmp_path / "base.yml").write_text(yaml.safe_dump(BASE), encoding="utf-8")
    assert judge(oracle_python(), [{"id": "base.yml", "capabilities": CAPABILITIES}], tmp_path)["base.yml"][
        "verdict"] == "accepted"


def test_every_case_agrees_with_axolotl(verdicts):
    assert len(verdicts) > 150
    wrong = [f"{code} {case['name']!r}: expects {case['expect']}, Axolotl {verdict['verdict']} "
             f"{json.dumps(verdict['error'])}" for code, case, verdict in verdicts.values()
             if (case["expect"] == "fail") != (verdict["verdict"] == "refused")
             and (code, case["name"]) not in EXCEPTIONS]
    assert not wrong, "\n".join(wrong)


def test_every_exception_is_still_a_case_that_disagrees(verdicts):
    disagree = {(code, case["name"]) for code, case, verdict in verdicts.values()
                if (case["expect"] == "fail") != (verdict["verdict"] == "refused")}
    assert set(EXCEPTIONS) <= disagree, set(EXCEPTIONS) - disagree
