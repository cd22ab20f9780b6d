"""`axlint check` from the command line: exit codes, rule selection, --exit-zero/--fail-on, stdin, team packs.

Most tests run the click command in-process; a few run the real console entry point in a subprocess to pin the
exit status a shell sees.
"""
from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from axlint import __version__, datacache, packs
from axlint.cli import cli
from axlint.packs import builtin_rules_dir, load_rules, read_pack_data

ROOT = Path(__file__).resolve().parents[1]
CORE = {"AX000", "AX001", "AX002", "DS000"}

MIXED = """\
base_model: x
deepspeed: missing.json
micro_batch_size: 2
micro_batch_size: 4
learning_rate: 0.0002  # axlint: ignore[AX001]
"""
WARN_ONLY = "base_model: x  # axlint: ignore[AX001]\n"


def _pack(code: str = "TEAM001", severity: str = "warning", **overrides: object) -> str:
    """A one-rule team pack (as YAML; JSON values are YAML too). An override of None drops the field."""
    rule = {"code": code, "name": f"team-rule-{code.lower()}", "severity": severity, "category": "policy",
            "summary": "Team policy: keep the learning rate at or below 0.001.",
            "message": "learning_rate {value} is above 0.001",
            "when": {"key": "raw:learning_rate", "greater_than": 0.001}, "report": "raw:learning_rate",
            "docs": {"why": "Higher rates diverged.", "example": "learning_rate: 0.01",
                     "instead": "learning_rate: 0.0002", "fix_safety": "No fix."},
            "tests": [{"name": "high", "config": "learning_rate: 0.01\n", "expect": "fail"},
                      {"name": "low", "config": "learning_rate: 0.0001\n", "expect": "pass"}]}
    rule.update(overrides)
    return json.dumps({"pack": "team", "rules": [{k: v for k, v in rule.items() if v is not None}]}, indent=2)


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "mixed.yml").write_text(MIXED, encoding="utf-8")
    (tmp_path / "warn.yml").write_text(WARN_ONLY, encoding="utf-8")
    (tmp_path / "high-lr.yml").write_text("base_model: x\nlearning_rate: 0.01\n", encoding="utf-8")
    for name in ("llama3-8b-lora.yml", "llama3-8b-fft-zero3.yml", "ds_zero3.json"):
        shutil.copy2(ROOT / "fixtures" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def codes(*args: str) -> set[str]:
    """The codes `check --output-format concise -q` reports."""
    code, out, err = invoke("check", "--output-format", "concise", "-q", *args)
    assert code in (0, 1), err
    return {line.split(": ", 2)[1].split()[0] for line in out.splitlines()}


# ---------------------------------------------------------------------------------------------------- exit codes


def test_clean_config_exits_0_with_every_rule(project):
    code, out, _ = invoke("check", "llama3-8b-lora.yml", "--output-format", "concise")
    assert code == 0, out
    assert "[error]" not in out and "[warning]" not in out


def test_config_with_findings_exits_1(project):
    code, out, _ = invoke("check", "llama3-8b-fft-zero3.yml")
    assert code == 1
    assert "llama3-8b-fft-zero3.yml:22:1: AX010" in out  # the `warmup_ratoi` typo


@pytest.mark.parametrize(("args", "message"), [
    ((), "no files given"),
    (("mixed.yml", "--select", "NOPE999"), "unknown rule selector(s): NOPE999"),
    (("mixed.yml", "--ignore", "AX001,not-a-rule"), "unknown rule selector(s): not-a-rule"),
    (("mixed.yml", "--extend-select", "ZZ"), "unknown rule selector(s): ZZ"),
    (("mixed.yml", "--hardware", "8xNOPE"), "unknown GPU 'NOPE'"),
    (("mixed.yml", "--hardware", "0xH100"), "at least 1"),
    (("mixed.yml", "--rules-dir", "no-such-folder"), "rules directory not found"),
    (("mixed.yml", "--output-format", "yaml"), "Invalid value for '--output-format'"),
    (("mixed.yml", "--fail-on", "fatal"), "Invalid value for '--fail-on'"),
])
def test_usage_errors_exit_2(project, args, message):
    code, _, err = invoke("check", *args)
    assert code == 2
    assert message in err


def test_exit_zero_hides_findings_from_the_exit_code_only(project):
    code, out, _ = invoke("check", "mixed.yml", "--exit-zero", "--output-format", "concise")
    assert code == 0
    assert "mixed.yml:4:1: AX001" in out


def test_exit_zero_does_not_hide_usage_errors(project):
    assert invoke("check", "mixed.yml", "--exit-zero", "--select", "NOPE999")[0] == 2


@pytest.mark.parametrize(("fail_on", "expected"), [("error", 0), ("warning", 1), ("info", 1)])
def test_fail_on_with_a_warning(project, fail_on, expected):
    code, out, _ = invoke("check", "warn.yml", "--select", "AX001,AX002", "--fail-on", fail_on, "-q",
                          "--output-format", "concise")
    assert (code, out) == (expected, "warn.yml:1:16: AX002 [warning] suppression of AX001 matches no finding here; "
                                     "remove it\n")


@pytest.mark.parametrize(("fail_on", "expected"), [("error", 0), ("warning", 0), ("info", 1)])
def test_fail_on_with_an_info(project, fail_on, expected):
    (project / "packs").mkdir()
    (project / "packs" / "team.yaml").write_text(_pack(severity="info"), encoding="utf-8")
    code, out, _ = invoke("check", "high-lr.yml", "--rules-dir", "packs", "--select", "TEAM001", "--fail-on", fail_on)
    assert code == expected
    assert "high-lr.yml:2:1: TEAM001 [info] learning_rate 0.01 is above 0.001" in out


def test_default_fail_on_is_warning(project):
    assert invoke("check", "warn.yml", "--select", "AX001,AX002")[0] == 1


@pytest.mark.parametrize(("args", "expected"), [
    (("mixed.yml",), 1),
    (("mixed.yml", "--select", "AX002", "--fail-on", "error"), 0),
    (("mixed.yml", "--select", "NOPE999"), 2),
])
def test_exit_status_seen_by_a_shell(project, args, expected):
    done = subprocess.run([sys.executable, "-m", "axlint", "check", *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == expected, done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("args", [
    ("check", ".", "--output-format", "json", "--hardware", "1xH100"),  # printed by click, line by line
    ("fix", "--unsafe-fixes", "typo.yml"),  # the diff, written to sys.stdout in one piece
])
def test_the_console_script_ends_with_its_output_whole(project, args):
    """The console script ends the process without the interpreter's shutdown: what it printed into a pipe is all
    there, as the in-process command writes it, and so is the exit status."""
    for n in range(40):
        (project / f"copy{n}.yml").write_text(MIXED, encoding="utf-8")
    (project / "typo.yml").write_text("base_model: x\nlearnin_rate: 0.0002\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # block-buffered, as in a user's shell
    done = subprocess.run([sys.executable, "-m", "axlint", *args], capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": str(ROOT)})
    code, out, _ = invoke(*args)
    assert (done.returncode, done.stdout) == (code, out)
    assert out.count("\n") > 20 if args[0] == "check" else "+learning_rate: 0.0002\n" in out


# ---------------------------------------------------------------------------------------------------- selection


def test_default_selection_is_all(project):
    assert codes("mixed.yml") == codes("mixed.yml", "--select", "ALL")
    assert codes("mixed.yml") >= {"AX001", "AX002", "DS000"}


@pytest.mark.parametrize(("args", "expected"), [
    (("--select", "AX001"), {"AX001"}),
    (("--select", "duplicate-key"), {"AX001"}),
    (("--select", "AX001,DS000"), {"AX001", "DS000"}),
    (("--select", "AX001", "--select", "DS000"), {"AX001", "DS000"}),
    (("--select", "AX001", "--extend-select", "deepspeed-config-unreadable"), {"AX001", "DS000"}),
    (("--select", "AX00"), {"AX001", "AX002"}),
    (("--select", "ALL", "--ignore", "AX001"), {"AX002", "DS000"}),
    (("--select", "AX001,AX002,DS000", "--ignore", "duplicate-key"), {"AX002", "DS000"}),
    (("--select", "AX001,AX002,DS000", "--ignore", "AX"), {"DS000"}),
    (("--select", "ALL", "--ignore", "ALL"), set()),
])
def test_select_ignore_extend_by_code_prefix_name_and_all(project, args, expected):
    assert codes("mixed.yml", *args) & CORE == expected


def test_prefix_selects_a_whole_family(project):
    found = codes("mixed.yml", "llama3-8b-fft-zero3.yml", "--select", "DS")
    assert "DS000" in found
    assert all(c.startswith("DS") for c in found)


def test_ignore_wins_over_select_and_extend_select(project):
    assert "AX001" not in codes("mixed.yml", "--select", "AX001", "--extend-select", "AX001", "--ignore", "AX001")


def test_an_unselected_suppression_rule_reports_nothing(project):
    assert codes("warn.yml", "--select", "AX001") == set()


# ---------------------------------------------------------------------------------------------------- stdin


def test_stdin_with_stdin_filename(project):
    (project / "sub").mkdir()
    shutil.copy2(project / "ds_zero3.json", project / "sub" / "ds.json")
    config = b"base_model: x\ndeepspeed: ds.json\nmicro_batch_size: 1\nmicro_batch_size: 2\n"
    code, out, _ = invoke("check", "-", "--stdin-filename", "sub/cfg.yml", "--select", "AX001,DS000", "-q",
                          "--output-format", "concise", stdin=config)
    assert code == 1
    # the DeepSpeed reference resolves next to the stdin filename: no DS000
    assert out == ("sub/cfg.yml:4:1: AX001 [error] `micro_batch_size` is given twice (first at line 3); "
                   "the loader keeps only this last one\n")


def test_stdin_without_a_filename_is_named_stdin(project):
    code, out, _ = invoke("check", "-", "--select", "AX001", "--output-format", "concise", "-q",
                          stdin=b"base_model: a\nbase_model: b\n")
    assert (code, out.split(":")[0]) == (1, "stdin.yml")


def test_stdin_json_is_read_as_deepspeed(project):
    code, out, _ = invoke("check", "-", "--stdin-filename", "ds.json", "--select", "AX001", "-q",
                          "--output-format", "concise", stdin=b'{"zero_optimization": {"stage": 1, "stage": 2}}')
    assert code == 1
    assert out.startswith("ds.json:1:36: AX001 ")


def test_stdin_and_files_together(project):
    code, out, _ = invoke("check", "-", "mixed.yml", "--select", "AX001", "--output-format", "concise",
                          stdin=b"base_model: a\nbase_model: b\n")
    assert code == 1
    assert "stdin.yml:2:1: AX001" in out and "mixed.yml:4:1: AX001" in out
    assert out.endswith("Found 2 problems (2 errors) in 2 files.\n")


def test_clean_stdin_exits_0(project):
    assert invoke("check", "-", "--select", "AX001", stdin=b"base_model: x\n")[:2] == (
        0, "All checks passed (1 file).\n")


# ---------------------------------------------------------------------------------------------------- files


def test_a_deepspeed_file_shared_by_two_configs_is_reported_once(project):
    (project / "ds.json").write_text('{"zero_optimization": {"stage": 3}, "zero_optimization": {}}')
    for name in ("a.yml", "b.yml"):
        (project / name).write_text("base_model: x\ndeepspeed: ds.json\n")
    code, out, _ = invoke("check", "a.yml", "b.yml", "--select", "AX001", "--output-format", "concise")
    assert code == 1
    assert out.count("ds.json:1:37: AX001") == 1
    assert out.endswith("in 2 files.\n")


def test_a_deepspeed_file_reached_by_two_paths_is_reported_once(project):
    """`deepspeed: ds.json` in sub/c.yml resolves through the working folder (an absolute path), and ds.json is
    also given on the command line (a relative one): one file, so one finding."""
    (project / "ds.json").write_text('{"zero_optimization": {"stage": 1, "stage": 2}}')
    (project / "sub").mkdir()
    (project / "sub" / "c.yml").write_text("base_model: x\ndeepspeed: ds.json\n")
    code, out, _ = invoke("check", "sub/c.yml", "ds.json", "--select", "AX001", "--output-format", "concise", "-q")
    assert (code, out.count("ds.json:1:36: AX001")) == (1, 1), out


def test_findings_of_one_config_at_one_place_name_no_config(project):
    """One rule's several findings on one key (one per target a regex brings) differ in their message: they are
    the config's own, not a shared file's findings for two configs, and are printed as they are."""
    (project / "glm.yml").write_text("base_model: Mapika/GLM-5.2-NVFP4\nadapter: lora\n"
                                     "lora_target_modules: 'model.layers.[\\d]+.mlp.(gate_proj|up_proj|down_proj)'\n")
    code, out, _ = invoke("check", "glm.yml", "--select", "AX226", "--output-format", "concise", "-q")
    lines = out.splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["glm.yml:3:22:"] * 3, out
    assert ["`down_proj`" in lines[0], "`gate_proj`" in lines[1], "`up_proj`" in lines[2]] == [True] * 3
    assert "(for " not in out


def test_a_shared_deepspeed_finding_that_differs_names_each_config(project):
    (project / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 4}')
    for name, mbs in (("a.yml", 2), ("b.yml", 8)):
        (project / name).write_text(f"base_model: x\ndeepspeed: ds.json\nmicro_batch_size: {mbs}\n")
    code, out, _ = invoke("check", "a.yml", "b.yml", "--select", "DS101", "--output-format", "concise", "-q")
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.startswith("ds.json:1:36: DS101") for line in lines), out
    assert "(for a.yml) [*]" in lines[0] and "(for b.yml) [*]" in lines[1]


def test_deepspeed_json_checked_on_its_own(project):
    code, out, _ = invoke("check", "ds_zero3.json", "--select", "DS", "--output-format", "json")
    assert code in (0, 1)
    assert all(d["path"] == "ds_zero3.json" for d in json.loads(out))


def test_paths_outside_the_working_folder_are_shown_absolute(project, tmp_path_factory):
    other = tmp_path_factory.mktemp("other") / "dup.yml"
    other.write_text("base_model: a\nbase_model: b\n")
    code, out, _ = invoke("check", str(other), "--select", "AX001", "--output-format", "concise", "-q")
    assert out.startswith(f"{other}:2:1: AX001 ")


# ---------------------------------------------------------------------------------------------------- team packs


def test_team_pack_rule_fires(project):
    (project / "packs").mkdir()
    (project / "packs" / "team.yaml").write_text(_pack(report_part="value"), encoding="utf-8")
    code, out, _ = invoke("check", "high-lr.yml", "--rules-dir", "packs", "--select", "TEAM001", "-q",
                          "--output-format", "concise")
    assert (code, out) == (1, "high-lr.yml:2:16: TEAM001 [warning] learning_rate 0.01 is above 0.001\n")
    assert codes("llama3-8b-lora.yml", "--rules-dir", "packs", "--select", "TEAM001") == set()


def test_team_pack_rules_are_listed_and_documented(project):
    (project / "packs").mkdir()
    (project / "packs" / "team.yaml").write_text(_pack(), encoding="utf-8")
    code, out, _ = invoke("rules", "--rules-dir", "packs", "--format", "json")
    listed = [r["code"] for r in json.loads(out)]
    assert code == 0 and listed == [r.code for r in load_rules()] + ["TEAM001"]
    code, out, _ = invoke("rule", "TEAM001", "--rules-dir", "packs")
    assert code == 0 and out.startswith("# TEAM001 team-rule-team001\n")


@pytest.mark.parametrize(("pack", "message"), [
    ("rules: [\n", "invalid YAML in rule pack"),
    ("pack: team\nrules: {}\n", "invalid rule pack"),
    (_pack(summary=""), "missing summary"),
    (_pack(code="AX001"), "AX001 is already defined"),
    (_pack(severity="fatal"), "invalid rule pack"),
    (_pack(when=None, check="no_such_check"), "unknown check 'no_such_check'"),
])
def test_bad_team_pack_is_a_usage_error_naming_the_file(project, pack, message):
    (project / "packs").mkdir()
    (project / "packs" / "team.yaml").write_text(pack, encoding="utf-8")
    code, _, err = invoke("check", "mixed.yml", "--rules-dir", "packs")
    assert code == 2
    assert "team.yaml" in err and message in err, err


# ---------------------------------------------------------------------------------------------------- pack cache


def test_builtin_packs_are_cached_and_an_edited_pack_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "cache"))
    pack = tmp_path / "rules" / "core.yaml"
    pack.parent.mkdir()
    pack.write_text(_pack(), encoding="utf-8")
    assert read_pack_data(pack, cached=True)["rules"][0]["code"] == "TEAM001"
    entry = datacache.cache_file("pack-core")
    assert entry is not None and entry.parent == tmp_path / "cache" / "data"
    assert marshal.loads(entry.read_bytes())[1]["rules"][0]["code"] == "TEAM001"
    pack.write_text(_pack(code="TEAM002"), encoding="utf-8")
    assert read_pack_data(pack, cached=True)["rules"][0]["code"] == "TEAM002"


def test_linting_reads_the_packs_without_docs_and_tests_and_a_rule_reads_them_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "cache"))
    packs._pack_entries.cache_clear()
    core = [rule for rule in load_rules() if rule.source.stem == "core"]
    stored = marshal.loads(datacache.cache_file("pack-core-rules").read_bytes())[1]["rules"]
    assert [entry["code"] for entry in stored] == [rule.code for rule in core]
    assert not any("docs" in entry or "tests" in entry for entry in stored)
    assert not datacache.cache_file("pack-core").exists()
    written = yaml.safe_load((builtin_rules_dir() / "core.yaml").read_text(encoding="utf-8"))["rules"]
    assert [(rule.docs, rule.tests) for rule in core] == [
        (e.get("docs", {}), tuple(e.get("tests", ()))) for e in written]
    assert any(rule.docs for rule in core) and any(rule.tests for rule in core)
    assert datacache.cache_file("pack-core").exists()


def test_user_packs_are_not_cached(project, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(project / "cache"))
    (project / "packs").mkdir()
    (project / "packs" / "team.yaml").write_text(_pack(), encoding="utf-8")
    assert codes("high-lr.yml", "--rules-dir", "packs", "--select", "TEAM001") == {"TEAM001"}
    assert not list((project / "cache" / "data").glob("pack-team.*"))


def test_a_corrupt_cache_entry_is_ignored(project, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(project / "cache"))
    assert codes("mixed.yml", "--select", "AX001") == {"AX001"}
    entries = list((project / "cache" / "data").glob("pack-*.marshal"))
    assert len(entries) == len(list(builtin_rules_dir().glob("*.yaml")))
    for entry in entries:
        entry.write_bytes(b'{"digest": [1], "data": \xff')
    assert codes("mixed.yml", "--select", "AX001") == {"AX001"}


def test_an_unusable_cache_folder_is_ignored(project, monkeypatch):
    (project / "not-a-folder").write_text("")
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(project / "not-a-folder"))
    assert codes("mixed.yml", "--select", "AX001") == {"AX001"}


# ---------------------------------------------------------------------------------------------------- other commands


def test_version():
    code, out, _ = invoke("--version")
    assert (code, out) == (0, f"axlint, version {__version__}\n")


def test_rules_lists_every_rule():
    code, out, _ = invoke("rules", "--format", "json")
    assert code == 0
    assert [r["code"] for r in json.loads(out)] == [r.code for r in load_rules()]


@pytest.mark.parametrize("ident", ["AX001", "duplicate-key", "ax001"])
def test_rule_shows_the_docs_by_code_or_name(ident):
    code, out, _ = invoke("rule", ident)
    assert code == 0
    assert out.startswith("# AX001 duplicate-key\n")
    assert "## Why is this bad?" in out


def test_unknown_rule_is_a_usage_error():
    code, _, err = invoke("rule", "NOPE999")
    assert code == 2 and "no rule 'NOPE999'" in err
