"""AX999: a check that raises becomes one located finding that names its rule; the other rules still run."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from axlint import checks
from axlint.packs import load_rules, select_rules
from axlint.lint import LintOptions, lint_text

CONFIG = "base_model: x\nmicro_batch_size: 2\nmicro_batch_size: 4\n"


@pytest.fixture
def crashing_duplicate_check(monkeypatch):
    def crash(run, rule):  # noqa: ANN001, ANN202 - a check's signature
        raise KeyError("boom")

    checks.load_builtin_checks()
    monkeypatch.setitem(checks.CHECKS, "duplicate_keys", replace(checks.CHECKS["duplicate_keys"], run=crash))


def test_a_crashing_check_is_an_ax999_finding_at_the_file_start(crashing_duplicate_check):
    rules = select_rules(load_rules(), ["AX001", "AX999", "AX010"])
    found = lint_text(Path("c.yml"), CONFIG + "learnign_rate: 1\n", LintOptions(rules)).diagnostics
    internal = [d for d in found if d.code == "AX999"]
    assert [(d.span.line, d.span.col) for d in internal] == [(1, 1)]
    assert "AX001 (duplicate-key)" in internal[0].message and "--ignore AX001" in internal[0].message
    assert "KeyError" in internal[0].message
    assert [d.code for d in found if d.code != "AX999"] == ["AX010"]  # the other rules ran


def test_ax999_is_silent_when_nothing_crashes():
    rules = select_rules(load_rules(), ["AX001", "AX999"])
    found = lint_text(Path("c.yml"), CONFIG, LintOptions(rules)).diagnostics
    assert [d.code for d in found] == ["AX001"]


def test_ignoring_ax999_hides_the_crash_finding(crashing_duplicate_check):
    rules = select_rules(load_rules(), ["AX001"])
    assert lint_text(Path("c.yml"), CONFIG, LintOptions(rules)).diagnostics == []
