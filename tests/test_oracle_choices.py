"""The value lists axlint's start-up checks copy from Axolotl's validators, held to the real Axolotl 0.18.0 (the
oracle venv of tests/oracle): every value a list allows must be a config Axolotl accepts, and a value outside it one
Axolotl refuses. A list that drifts from its validator fails here, in either direction.
"""
from __future__ import annotations

import pytest
import yaml

from axlint.checks.conflicts import (
    AO_DTYPES,
    CAUSAL_LM_METRICS,
    IMAGE_RESIZE,
    INDUCTOR_OPTIONS,
    KERNEL_CHOICES,
    LARGE_HEAD_ATTENTION,
    SWANLAB_MODES,
)
from axlint.checks.prerequisites import VARLEN_ATTENTION
from axlint.facts import KERNELS_PLUGIN, SWANLAB_PLUGIN
from tests.oracle.venv import judge, oracle_python
from tests.test_oracle import CAPABILITIES
from tests.test_oracle_rule_cases import BASE

NOT_A_CHOICE = "no-such-choice"


def _settings() -> dict[str, tuple[dict, bool]]:
    """name -> (the keys written over BASE, whether Axolotl must accept them)."""
    cases: dict[str, tuple[dict, bool]] = {}

    def add(key: str, values, extra: dict | None = None, wrap=lambda v: v) -> None:
        for value in [*values, NOT_A_CHOICE]:
            cases[f"{key}={value}"] = ({**(extra or {}), key: wrap(value)}, value != NOT_A_CHOICE)

    add("large_head_attention", LARGE_HEAD_ATTENTION)
    add("image_resize_algorithm", IMAGE_RESIZE)
    add("eval_causal_lm_metrics", CAUSAL_LM_METRICS, wrap=lambda v: [v])
    add("qat", AO_DTYPES, wrap=lambda v: {"weight_dtype": v})
    add("torch_compile_options", sorted(INDUCTOR_OPTIONS), {"torch_compile": True}, wrap=lambda v: {v: True})
    for key, values in KERNEL_CHOICES.items():
        add(key, values, {"plugins": [KERNELS_PLUGIN]})
    add("swanlab_mode", SWANLAB_MODES, {"plugins": [SWANLAB_PLUGIN], "swanlab_project": "runs"})
    for attention in sorted(VARLEN_ATTENTION):
        cases[f"batch_flattening with {attention}"] = ({"batch_flattening": True, "attn_implementation": attention},
                                                      True)
    cases["batch_flattening with sdpa"] = ({"batch_flattening": True, "attn_implementation": "sdpa"}, False)
    return cases


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, tuple[bool, dict]]:
    root = tmp_path_factory.mktemp("choices")
    settings = _settings()
    names = {}
    for i, (name, (keys, _)) in enumerate(settings.items()):
        names[f"c{i:03d}.yml"] = name
        (root / f"c{i:03d}.yml").write_text(yaml.safe_dump({**BASE, **keys}, sort_keys=False), encoding="utf-8")
    judged = judge(oracle_python(), [{"id": f, "capabilities": CAPABILITIES} for f in names], root)
    return {name: (settings[name][1], judged[f]) for f, name in names.items()}


def test_every_listed_value_is_accepted_and_an_unlisted_one_refused(verdicts):
    wrong = [f"{name}: axlint takes it {'in' if accept else 'out'} of the list, Axolotl {verdict['verdict']} it "
             f"{verdict['error'][:160]}" for name, (accept, verdict) in verdicts.items()
             if (verdict["verdict"] == "accepted") != accept]
    assert not wrong, "\n".join(wrong)
