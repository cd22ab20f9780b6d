"""A check-backed rule is held to what its check declares: the message fields it supplies, the options it reads
and whether it fixes, when packs load; the fields of every hit, when the check runs. Fix availability has one
source, the same in `rules --format json`, `rule CODE`, SARIF and the docs."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.diagnostics import Span
from axlint.lint import LintOptions, lint_text
from axlint.packs import PackError, load_rules, select_rules
from axlint.rule import FixAvailability, Hit, register_check


@register_check("test_contract_says_hello", args=("name",))
def _says_hello(run, rule):  # noqa: ANN001, ANN202 - a check's signature
    if run.axolotl is not None and "hello" in run.raw:
        yield Hit(run.axolotl, Span.file_start(), {"name": run.raw["hello"]})


@register_check("test_contract_forgets_its_field", args=("name",))
def _forgets(run, rule):  # noqa: ANN001, ANN202 - a check's signature
    if run.axolotl is not None and "hello" in run.raw:
        yield Hit(run.axolotl, Span.file_start(), {})


@register_check("test_contract_reads_an_option", options=("limit",))
def _reads_option(run, rule):  # noqa: ANN001, ANN202 - a check's signature
    if run.axolotl is not None and run.raw.get("hello", 0) > rule.options["limit"]:
        yield Hit(run.axolotl, Span.file_start(), {})


def pack(tmp_path: Path, **fields: object) -> Path:
    rule = {"code": "TST100", "name": "says-hello", "severity": "warning", "category": "test",
            "summary": "Says hello.", "message": "hello {name}", "check": "test_contract_says_hello", **fields}
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    (folder / "test.yaml").write_text(json.dumps({"rules": [rule]}), encoding="utf-8")
    return folder


def test_a_pack_that_keeps_the_contract_loads(tmp_path):
    rules = load_rules([pack(tmp_path)])
    rule = next(r for r in rules if r.code == "TST100")
    assert rule.fixable is FixAvailability.NEVER
    found = lint_text(Path("c.yml"), "base_model: x\nhello: world\n", LintOptions([rule])).diagnostics
    assert [d.message for d in found] == ["hello world"]


def test_a_message_field_the_check_does_not_supply_is_a_pack_error(tmp_path):
    with pytest.raises(PackError, match=r"message uses greeting, which check 'test_contract_says_hello' does not supply"):
        load_rules([pack(tmp_path, message="{greeting} {name}")])


def test_a_fix_availability_the_check_does_not_declare_is_a_pack_error(tmp_path):
    with pytest.raises(PackError, match=r"`fixable: sometimes`, but check 'test_contract_says_hello' fixes never"):
        load_rules([pack(tmp_path, fixable="sometimes")])


def test_an_option_the_check_reads_must_be_in_the_pack(tmp_path):
    with pytest.raises(PackError, match=r"reads options limit, which the pack does not give"):
        load_rules([pack(tmp_path, message="too much", check="test_contract_reads_an_option")])
    rules = load_rules([pack(tmp_path, message="too much", check="test_contract_reads_an_option",
                             options={"limit": 2})])
    rule = next(r for r in rules if r.code == "TST100")
    assert len(lint_text(Path("c.yml"), "base_model: x\nhello: 3\n", LintOptions([rule])).diagnostics) == 1


def test_a_hit_without_a_declared_field_is_an_internal_error_not_the_word_unset(tmp_path):
    rules = load_rules([pack(tmp_path, check="test_contract_forgets_its_field")])
    chosen = select_rules(rules, ["TST100", "AX999"])
    found = lint_text(Path("c.yml"), "base_model: x\nhello: world\n", LintOptions(chosen)).diagnostics
    assert [d.code for d in found] == ["AX999"]
    assert "did not supply name" in found[0].message
    assert not any("unset" in d.message for d in found)


def test_a_condition_rule_with_a_fix_block_is_fixable_sometimes(tmp_path):
    folder = tmp_path / "rules"
    folder.mkdir()
    rule = {"code": "TST200", "name": "drop-it", "severity": "warning", "category": "test", "summary": "Drop it.",
            "message": "drop it", "when": {"key": "raw:drop_me", "exists": True},
            "fix": {"action": "delete", "key": "raw:drop_me"}}
    (folder / "test.yaml").write_text(json.dumps({"rules": [rule]}), encoding="utf-8")
    assert next(r for r in load_rules([folder]) if r.code == "TST200").fixable is FixAvailability.SOMETIMES
    (folder / "test.yaml").write_text(json.dumps({"rules": [{**rule, "fixable": "never"}]}), encoding="utf-8")
    with pytest.raises(PackError, match="with a `fix:` block is `fixable: sometimes`"):
        load_rules([folder])


def test_fix_availability_reads_the_same_everywhere():
    runner = CliRunner()
    listed = {r["code"]: r["fix"] for r in json.loads(runner.invoke(cli, ["rules", "--format", "json"]).stdout)}
    rules = load_rules()
    assert listed == {r.code: r.fixable.value for r in rules}
    for code in ("MEM005", "DS100", "AX013", "AX001"):
        doc = runner.invoke(cli, ["rule", code]).stdout
        assert re.search(r"fix: (\w+)", doc).group(1) == listed[code]
    assert listed["MEM005"] == "sometimes" and listed["AX001"] == "never"
    assert sum(1 for fix in listed.values() if fix != "never") == 47


def test_sarif_descriptors_carry_fix_availability(tmp_path):
    (tmp_path / "c.yml").write_text("base_model: x\nmicro_batch_size: 2\nmicro_batch_size: 4\n", encoding="utf-8")
    done = CliRunner().invoke(cli, ["check", "--output-format", "sarif", "--select", "AX001,DS100",
                                    str(tmp_path / "c.yml")])
    descriptors = json.loads(done.stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert {d["id"]: d["properties"]["fixable"] for d in descriptors} == {"AX001": "never", "DS100": "sometimes"}
