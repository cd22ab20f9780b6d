"""Suppression comments: `# axlint: ignore[...]` on the line or the line above, `# axlint: file-ignore[...]`,
and AX002 for a suppression that matches nothing."""
from __future__ import annotations

from pathlib import Path

import pytest

from axlint.document import load_document
from axlint.packs import load_rules, select_rules
from axlint.suppression import suppressions
from axlint.lint import LintOptions, lint_text

RULES = load_rules()
CORE = ["AX001", "AX002", "DS000"]


def lint(tmp_path: Path, text: str, select: list[str] = CORE) -> list[tuple[int, int, str, str]]:
    """(line, col, code, message) of every finding in `text`, linted as tmp/c.yml."""
    path = tmp_path / "c.yml"
    path.write_text(text, encoding="utf-8")
    diags = lint_text(path, None, LintOptions(select_rules(RULES, select))).diagnostics
    return sorted((d.span.line, d.span.col, d.code, d.message) for d in diags)


def found(tmp_path: Path, text: str, select: list[str] = CORE) -> list[tuple[int, str]]:
    return [(line, code) for line, _, code, _ in lint(tmp_path, text, select)]


DUP = "base_model: x\nmicro_batch_size: 2\nmicro_batch_size: 4{comment}\n"


def test_unsuppressed_finding(tmp_path):
    assert found(tmp_path, DUP.format(comment="")) == [(3, "AX001")]


@pytest.mark.parametrize("comment", [
    "  # axlint: ignore[AX001]",
    "  # axlint: ignore[duplicate-key]",
    "  # axlint: ignore[AX]",
    "  # axlint: ignore[ALL]",
    "  # axlint: ignore[DS000, AX001]",
    "  #axlint:ignore[AX001]",
    "  # a note first # axlint: ignore[AX001]",
])
def test_ignore_on_the_line(tmp_path, comment):
    assert found(tmp_path, DUP.format(comment=comment), ["AX001"]) == []


@pytest.mark.parametrize("value", ["it's fine", '"say \\"hi\\" # not a comment"', "'it''s'", "[a, 'b']"])
def test_quotes_in_values_do_not_hide_a_trailing_suppression(tmp_path, value):
    assert found(tmp_path, f"base_model: x\nnote: a\nnote: {value}  # axlint: ignore[AX001]\n") == []


def test_ignore_on_the_line_above(tmp_path):
    text = "base_model: x\nmicro_batch_size: 2\n# axlint: ignore[AX001]\nmicro_batch_size: 4\n"
    assert found(tmp_path, text) == []


def test_ignore_two_lines_above_does_not_reach(tmp_path):
    text = "base_model: x\nmicro_batch_size: 2\n# axlint: ignore[AX001]\n\nmicro_batch_size: 4\n"
    assert found(tmp_path, text) == [(3, "AX002"), (5, "AX001")]


def test_ignore_of_another_code_does_not_suppress(tmp_path):
    assert found(tmp_path, DUP.format(comment="  # axlint: ignore[DS000]")) == [(3, "AX001"), (3, "AX002")]


@pytest.mark.parametrize("where", ["first", "last", "middle"])
def test_file_ignore_anywhere_in_the_file(tmp_path, where):
    lines = ["base_model: x", "deepspeed: missing.json", "micro_batch_size: 2", "micro_batch_size: 4"]
    at = {"first": 0, "last": len(lines), "middle": 2}[where]
    lines.insert(at, "# axlint: file-ignore[AX001, DS000]")
    assert found(tmp_path, "\n".join(lines) + "\n") == []


def test_file_ignore_leaves_other_codes(tmp_path):
    text = "# axlint: file-ignore[AX001]\nbase_model: x\ndeepspeed: missing.json\na: 1\na: 2\n"
    assert found(tmp_path, text) == [(3, "DS000")]


def test_unused_suppression_is_reported_at_the_comment(tmp_path):
    text = "base_model: x  # axlint: ignore[AX001]\n"
    assert lint(tmp_path, text) == [(1, 16, "AX002", "suppression of AX001 matches no finding here; remove it")]


def test_partly_used_suppression_names_only_the_unused_code(tmp_path):
    text = DUP.format(comment="  # axlint: ignore[AX001, DS000]")
    assert lint(tmp_path, text) == [(3, 22, "AX002", "suppression of DS000 matches no finding here; remove it")]


def test_unused_file_ignore_is_reported(tmp_path):
    assert found(tmp_path, "# axlint: file-ignore[DS000]\nbase_model: x\n") == [(1, "AX002")]


def test_unused_suppression_is_not_reported_when_ax002_is_not_selected(tmp_path):
    assert found(tmp_path, "base_model: x  # axlint: ignore[AX001]\n", ["AX001"]) == []


@pytest.mark.parametrize("text", [
    "base_model: 'x # axlint: ignore[AX001]'\nbase_model: y\n",
    'base_model: "x # axlint: ignore[AX001]"\nbase_model: y\n',
    "base_model: x#axlint:ignore[AX001]\nbase_model: y\n",
])
def test_text_inside_values_is_not_a_suppression(tmp_path, text):
    assert found(tmp_path, text) == [(2, "AX001")]


def test_deepspeed_finding_in_the_yaml_is_suppressible(tmp_path):
    text = "base_model: x\ndeepspeed: missing.json  # axlint: ignore[DS000]\n"
    assert found(tmp_path, text) == []


def test_findings_in_the_deepspeed_json_are_not_suppressed_by_yaml_comments(tmp_path):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 1, "stage": 2}}', encoding="utf-8")
    text = "# axlint: file-ignore[AX001]\nbase_model: x\ndeepspeed: ds.json\n"
    assert [(Path(p).name, code) for p, code in _paths(tmp_path, text)] == [("c.yml", "AX002"), ("ds.json", "AX001")]


def _paths(tmp_path: Path, text: str) -> list[tuple[str, str]]:
    path = tmp_path / "c.yml"
    path.write_text(text, encoding="utf-8")
    diags = lint_text(path, None, LintOptions(select_rules(RULES, CORE))).diagnostics
    return sorted((str(d.path), d.code) for d in diags)


def test_suppressions_parses_kind_selectors_and_span(tmp_path):
    path = tmp_path / "c.yml"
    path.write_text("a: 1  # axlint: ignore[AX001 , DS000]\n# axlint: file-ignore[MEM]\n", encoding="utf-8")
    sups = suppressions(load_document(path))
    assert [(s.kind, s.selectors, s.line, s.span.col) for s in sups] == [
        ("ignore", ["AX001", "DS000"], 1, 7), ("file-ignore", ["MEM"], 2, 1)]
