"""Every rule's inline cases: failing configs fire it, passing ones do not, fixes give the expected text."""
from __future__ import annotations

import pytest

from axlint.packs import load_rules
from axlint.rule import FixAvailability
from tests.corpus import ROOT
from tests.rule_cases import CONFIG, DEEPSPEED, findings_for, fix_once, lint_case, position, write_case

RULES = load_rules()
CASES = [(rule, case) for rule in RULES for case in rule.tests]


def test_packs_have_no_duplicate_keys():
    """PyYAML would keep the last of two equal keys in a pack silently; axlint's own checker finds them."""
    from axlint.document import duplicate_keys, load_document
    from axlint.packs import builtin_rules_dir

    for pack in sorted(builtin_rules_dir().glob("*.yaml")):
        doc = load_document(pack)
        assert [p for p, _, _ in duplicate_keys(doc.root)] == [], pack.name


ENGINE_ONLY = {"AX999": "tests/test_internal_error.py"}
"""Rules no config can fire on purpose (a check must crash): their failing and passing cases live in Python tests."""


def test_every_rule_has_failing_and_passing_cases():
    for rule in RULES:
        if rule.code in ENGINE_ONLY:
            assert (ROOT / ENGINE_ONLY[rule.code]).is_file()
            continue
        expects = {case["expect"] for case in rule.tests}
        assert expects >= {"fail", "pass"}, f"{rule.code} needs cases that fail and pass (has {sorted(expects)})"


def test_every_fixable_rule_has_a_fixed_case():
    for rule in RULES:
        if rule.fixable is not FixAvailability.NEVER:
            assert any("fixed" in c or "fixed_deepspeed" in c for c in rule.tests), f"{rule.code} has a fix but no fixed case"


def test_fix_availability_is_stated_in_the_pack_and_agrees_with_the_fix_docs():
    """One source: the pack's `fixable` (held to the check's declaration when packs load); the prose that explains
    fix safety says "No fix" exactly for the rules that never fix."""
    for rule in RULES:
        prose = rule.docs.get("fix_safety", "").lower()
        assert prose.startswith("no fix") == (rule.fixable is FixAvailability.NEVER), rule.code


def test_every_failing_case_pins_where_its_finding_lands():
    for rule, case in CASES:
        assert case["expect"] == "pass" or "at" in case, f"{rule.code} {case['name']!r}: give `at: LINE:COLUMN`"


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.code}-{c['name']}" for r, c in CASES])
def test_rule_case(rule, case, tmp_path):
    path = write_case(tmp_path, case)
    options = lint_case(tmp_path, rule, RULES, case)
    found = findings_for(path, options, rule.code)
    if case["expect"] == "fail":
        assert found, f"{rule.code} should fire on {case['name']!r}"
        assert position(found[0]) == case["at"], f"{rule.code} {case['name']!r}: first finding at {position(found[0])}"
    else:
        assert not found, f"{rule.code} should not fire on {case['name']!r}"
    if "fixed" not in case and "fixed_deepspeed" not in case:
        assert fix_once(path, options, rule.code) == {}, "a case without `fixed:` must not be fixed"
    else:
        changed = fix_once(path, options, rule.code)
        if "fixed" in case:
            assert changed.get(CONFIG, path.read_text()) == case["fixed"]
        if "fixed_deepspeed" in case:
            assert changed.get(DEEPSPEED, (tmp_path / DEEPSPEED).read_text()) == case["fixed_deepspeed"]
        assert not findings_for(path, options, rule.code), "the fixed config must lint clean for this rule"
        assert fix_once(path, options, rule.code) == {}, "fixing twice must change nothing"


def test_builtin_packs_validate_against_the_pack_schema():
    import json

    import jsonschema
    import yaml

    from axlint.packs import builtin_rules_dir

    schema = json.loads((builtin_rules_dir().parent / "axlint" / "schemas" / "rulepack.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for pack in sorted(builtin_rules_dir().glob("*.yaml")):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(pack.read_text())))
        assert not errors, f"{pack.name}: {errors[0].message} at {list(errors[0].absolute_path)}"
