"""Every rule's inline cases: failing configs fire it, passing ones do not, fixes give the expected text."""
from __future__ import annotations

import pytest

from axlint.engine import load_rules
from tests.corpus import ROOT
from tests.rule_cases import CONFIG, DEEPSPEED, codes_for, fix_once, lint_case, write_case

RULES = load_rules()
CASES = [(rule, case) for rule in RULES for case in rule.tests]


def test_packs_have_no_duplicate_keys():
    """PyYAML would keep the last of two equal keys in a pack silently; axlint's own checker finds them."""
    from axlint.document import duplicate_keys, load_document
    from axlint.engine import builtin_rules_dir

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
        if rule.fix or rule.docs.get("fix_safety", "").lower().startswith(("safe", "unsafe")):
            assert any("fixed" in c or "fixed_deepspeed" in c for c in rule.tests), f"{rule.code} has a fix but no fixed case"


@pytest.mark.parametrize(("rule", "case"), CASES, ids=[f"{r.code}-{c['name']}" for r, c in CASES])
def test_rule_case(rule, case, tmp_path):
    path = write_case(tmp_path, case)
    options = lint_case(tmp_path, rule, RULES, case)
    codes = codes_for(path, options)
    if case["expect"] == "fail":
        assert rule.code in codes, f"{rule.code} should fire on {case['name']!r}; got {codes}"
    else:
        assert rule.code not in codes, f"{rule.code} should not fire on {case['name']!r}"
    if "fixed" in case or "fixed_deepspeed" in case:
        changed = fix_once(path, options, rule.code)
        if "fixed" in case:
            assert changed.get(CONFIG, path.read_text()) == case["fixed"]
        if "fixed_deepspeed" in case:
            assert changed.get(DEEPSPEED, (tmp_path / DEEPSPEED).read_text()) == case["fixed_deepspeed"]
        assert rule.code not in codes_for(path, options), "the fixed config must lint clean for this rule"
        assert fix_once(path, options, rule.code) == {}, "fixing twice must change nothing"


def test_builtin_packs_validate_against_the_pack_schema():
    import json

    import jsonschema
    import yaml

    from axlint.engine import builtin_rules_dir

    schema = json.loads((builtin_rules_dir().parent / "axlint" / "schemas" / "rulepack.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for pack in sorted(builtin_rules_dir().glob("*.yaml")):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(pack.read_text())))
        assert not errors, f"{pack.name}: {errors[0].message} at {list(errors[0].absolute_path)}"
