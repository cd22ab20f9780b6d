"""Settings: `[tool.axlint]` in pyproject.toml or `.axlint.toml`, the closest file wins, unknown keys are errors."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.settings import Settings, SettingsError, find_settings_file, load_settings

CONFIG = """\
base_model: x
deepspeed: missing.json
micro_batch_size: 2
micro_batch_size: 4
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def check(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["check", "--output-format", "concise", "-q", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def reported(out: str) -> set[str]:
    return {line.split(": ", 2)[1].split()[0] for line in out.splitlines()}


@pytest.fixture()
def tree(tmp_path, monkeypatch) -> Path:
    """tmp/pyproject.toml (select DS000), tmp/sub/.axlint.toml (select AX001), a config in each folder."""
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.axlint]\nselect = ["DS000"]\n')
    write(tmp_path / "sub" / ".axlint.toml", 'select = ["AX001"]\n')
    write(tmp_path / "top.yml", CONFIG)
    write(tmp_path / "sub" / "inner.yml", CONFIG)
    write(tmp_path / "sub" / "deeper" / "leaf.yml", CONFIG)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pyproject_tool_axlint_is_read(tree):
    assert reported(check("top.yml")[1]) == {"DS000"}


def test_closest_settings_file_wins(tree):
    assert reported(check("sub/inner.yml")[1]) == {"AX001"}
    assert reported(check("sub/deeper/leaf.yml")[1]) == {"AX001"}


def test_axlint_toml_beats_pyproject_in_the_same_folder(tree):
    write(tree / ".axlint.toml", 'select = ["AX002"]\n')
    assert find_settings_file(tree / "top.yml") == tree / ".axlint.toml"


def test_pyproject_without_a_tool_axlint_table_is_skipped(tree):
    write(tree / "sub" / "deeper" / "pyproject.toml", '[project]\nname = "y"\n')
    assert find_settings_file(tree / "sub" / "deeper" / "leaf.yml") == tree / "sub" / ".axlint.toml"


def test_no_settings_file_means_defaults(tmp_path):
    write(tmp_path / "c.yml", CONFIG)
    assert find_settings_file(tmp_path / "c.yml") is None
    assert load_settings(None) == Settings()


def test_explicit_settings_path_overrides_discovery(tree):
    other = write(tree / "elsewhere.toml", 'select = ["AX001", "DS000"]\n')
    assert reported(check("top.yml", "--settings", str(other))[1]) == {"AX001", "DS000"}


def test_cli_select_replaces_settings_select(tree):
    assert reported(check("top.yml", "--select", "AX001")[1]) == {"AX001"}


def test_cli_extend_select_adds_to_settings_select(tree):
    assert reported(check("top.yml", "--extend-select", "AX001")[1]) == {"AX001", "DS000"}


def test_settings_ignore_and_extend_select(tmp_path, monkeypatch):
    write(tmp_path / ".axlint.toml", 'select = ["AX001"]\nextend-select = ["DS000"]\nignore = ["duplicate-key"]\n')
    write(tmp_path / "c.yml", CONFIG)
    monkeypatch.chdir(tmp_path)
    assert reported(check("c.yml")[1]) == {"DS000"}
    assert reported(check("c.yml", "--ignore", "DS000")[1]) == set()


def test_output_format_from_settings(tmp_path, monkeypatch):
    write(tmp_path / ".axlint.toml", 'output-format = "github"\nselect = ["AX001"]\n')
    write(tmp_path / "c.yml", CONFIG)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["check", "c.yml"])
    assert result.stdout.startswith("::error title=axlint (AX001),file=c.yml,line=4,col=1,")
    result = CliRunner().invoke(cli, ["check", "c.yml", "--output-format", "concise", "-q"])
    assert result.stdout.startswith("c.yml:4:1: AX001 ")


def test_rules_dirs_are_relative_to_the_settings_file(tmp_path, monkeypatch):
    pack = ('pack: team\nrules:\n  - {code: TEAM001, name: no-lora, severity: error, category: policy, '
            'summary: No LoRA here., message: "no LoRA", when: {key: "raw:adapter", exists: true}, '
            'report: "raw:adapter", docs: {why: Policy.}, tests: []}\n')
    write(tmp_path / "project" / "team-rules" / "team.yaml", pack)
    write(tmp_path / "project" / ".axlint.toml", 'rules-dirs = ["team-rules"]\nselect = ["TEAM001"]\n')
    write(tmp_path / "project" / "c.yml", "base_model: x\nadapter: lora\n")
    monkeypatch.chdir(tmp_path)
    assert check("project/c.yml") == (1, "project/c.yml:2:1: TEAM001 [error] no LoRA\n", "")


def test_hardware_from_settings_is_validated(tmp_path, monkeypatch):
    write(tmp_path / ".axlint.toml", 'hardware = "8xNOPE"\n')
    write(tmp_path / "c.yml", CONFIG)
    monkeypatch.chdir(tmp_path)
    code, _, err = check("c.yml")
    assert code == 2 and "unknown GPU 'NOPE'" in err


@pytest.mark.parametrize(("name", "text", "message"), [
    (".axlint.toml", 'selct = ["AX001"]\n', "unknown setting `selct`"),
    ("pyproject.toml", '[tool.axlint]\nfail_on = "error"\n', "unknown setting `fail_on`"),
    (".axlint.toml", 'select = "AX001"\n', "setting `select` must be a list of strings"),
    (".axlint.toml", "select = [1, 2]\n", "setting `select` must be a list of strings"),
    (".axlint.toml", "hardware = 8\n", "setting `hardware` must be a string"),
    (".axlint.toml", 'output-format = "xml"\n', "output-format must be one of"),
    (".axlint.toml", "select = [\n", "invalid TOML"),
    (".axlint.toml", 'select = ["NOPE999"]\n', "unknown rule selector(s): NOPE999"),
])
def test_bad_settings_exit_2_naming_the_file(tmp_path, monkeypatch, name, text, message):
    settings_file = write(tmp_path / name, text)
    write(tmp_path / "c.yml", CONFIG)
    monkeypatch.chdir(tmp_path)
    code, out, err = check("c.yml")
    assert (code, out) == (2, "")
    assert message in err, err
    if "selector" not in message:
        assert str(settings_file) in err


@pytest.mark.parametrize("text", ["[tool]\naxlint = 3\n", "tool = 3\n"])
def test_tool_axlint_that_is_not_a_table(tmp_path, monkeypatch, text):
    write(tmp_path / "pyproject.toml", text)
    write(tmp_path / "c.yml", CONFIG)
    monkeypatch.chdir(tmp_path)
    code, _, err = check("c.yml", "--settings", "pyproject.toml")
    assert code == 2 and "pyproject.toml: [tool.axlint] must be a table" in err, err


def test_load_settings_reads_every_key(tmp_path):
    path = write(tmp_path / ".axlint.toml", 'select = ["AX"]\nignore = ["AX002"]\nextend-select = ["DS"]\n'
                                           'rules-dirs = ["r"]\nhardware = "8xH100"\noutput-format = "json"\n'
                                           'model-config = "m/config.json"\n')
    s = load_settings(path)
    assert (s.select, s.ignore, s.extend_select, s.rules_dirs, s.hardware, s.output_format, s.model_config) == (
        ["AX"], ["AX002"], ["DS"], ["r"], "8xH100", "json", "m/config.json")
    assert s.resolve("m/config.json") == (tmp_path / "m" / "config.json").resolve()


def test_unreadable_settings_file_is_a_settings_error(tmp_path):
    with pytest.raises(SettingsError, match="cannot read settings"):
        load_settings(tmp_path / "missing.toml")
