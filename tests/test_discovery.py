"""Discovery (folders, globs, .gitignore, exclude settings, --force-exclude) and content classification (Axolotl,
DeepSpeed, or neither: skipped without a finding)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.discovery import DiscoveryError, Excludes, discover
from axlint.kind import ConfigKind, classify_data, classify_text
from axlint.schemas.validator import default_choice
from tests.corpus import CORPUS

CONFIG = "base_model: meta-llama/Llama-3.2-1B\nlearning_rate: 0.0002\nlr: 1\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def rel(root: Path, paths: list[Path]) -> list[str]:
    return sorted(p.resolve().relative_to(root.resolve()).as_posix() for p in paths)


# ---------------------------------------------------------------------------------------------- classification

@pytest.mark.parametrize("data, kind", [
    ({"base_model": "x"}, ConfigKind.AXOLOTL),
    ({"learning_rate": 1e-4, "micro_batch_size": 2}, ConfigKind.AXOLOTL),  # half-written, no base_model
    ({"zero_optimization": {"stage": 3}}, ConfigKind.DEEPSPEED),
    ({"bf16": {"enabled": "auto"}, "gradient_clipping": "auto"}, ConfigKind.DEEPSPEED),
    ({"repos": []}, ConfigKind.OTHER),  # .pre-commit-config.yaml
    ({"name": "ci", True: {"push": None}, "jobs": {}}, ConfigKind.OTHER),  # a workflow: `on` reads as True
    ({"name": "web", "version": "1.0.0", "scripts": {}}, ConfigKind.OTHER),  # package.json
    ({"cells": [], "metadata": {}, "nbformat": 4}, ConfigKind.OTHER),  # a notebook
    ({"services": {}}, ConfigKind.OTHER),  # docker-compose
    ({"root": True, "plugins": [], "rules": {}, "extends": []}, ConfigKind.OTHER),  # an ESLint config
    ({"seed": 1}, ConfigKind.OTHER),  # one Axolotl key alone is not a config
    (None, ConfigKind.OTHER),
    (["a", "b"], ConfigKind.OTHER),
])
def test_classify_data(data, kind):
    assert classify_data(data).kind is kind


def test_axolotl_cloud_launcher_configs_are_not_training_configs():
    for name in ("baseten.yaml", "modal.yaml"):
        import yaml

        verdict = classify_data(yaml.safe_load((CORPUS / "examples" / "cloud" / name).read_text()))
        assert verdict.kind is ConfigKind.OTHER and "`gpu`" in verdict.reason


def test_every_corpus_training_config_and_deepspeed_file_is_recognised():
    import yaml

    for path in [*CORPUS.glob("examples/**/*.y*ml"), *CORPUS.glob("deepspeed_configs/*.json")]:
        if path.parent.name == "cloud":
            continue
        want = ConfigKind.DEEPSPEED if path.suffix == ".json" else ConfigKind.AXOLOTL
        assert classify_data(yaml.safe_load(path.read_text(encoding="utf-8"))).kind is want, path


def test_unparsable_text_is_judged_by_the_keys_it_writes():
    assert classify_text("base_model: x\n  bad: [\n").kind is ConfigKind.AXOLOTL
    assert classify_text('{\n  // comment\n  "editor.tabSize": 2,\n}\n').kind is ConfigKind.OTHER


# ---------------------------------------------------------------------------------------------------- discovery

def test_a_folder_is_walked_recursively_for_yaml_and_json(tmp_path):
    write(tmp_path, {"a.yml": CONFIG, "sub/b.yaml": CONFIG, "sub/deeper/c.json": "{}", "notes.txt": "x",
                     ".venv/lib/x.yml": CONFIG, "node_modules/p/package.json": "{}"})
    assert rel(tmp_path, discover([tmp_path])) == ["a.yml", "sub/b.yaml", "sub/deeper/c.json"]


def test_gitignore_is_honoured_with_negation_and_nested_files(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, {".gitignore": "outputs/\n*.json\n!keep.json\n", "outputs/run.yml": CONFIG, "a.yml": CONFIG,
                     "x.json": "{}", "keep.json": "{}", "sub/.gitignore": "local.yml\n", "sub/local.yml": CONFIG,
                     "sub/shared.yml": CONFIG, ".git/info/exclude": "private.yml\n", "private.yml": CONFIG})
    assert rel(tmp_path, discover([tmp_path])) == ["a.yml", "keep.json", "sub/shared.yml"]
    no_git = Excludes(base=tmp_path, respect_gitignore=False)
    assert "outputs/run.yml" in rel(tmp_path, discover([tmp_path], no_git))


def test_exclude_patterns_and_force_exclude(tmp_path):
    write(tmp_path, {"configs/a.yml": CONFIG, "configs/old/b.yml": CONFIG, "legacy.yml": CONFIG})
    excludes = Excludes(("old/", "legacy.yml"), tmp_path)
    assert rel(tmp_path, discover([tmp_path], excludes)) == ["configs/a.yml"]
    named = [tmp_path / "legacy.yml"]
    assert discover(named, excludes) == named  # a file named on the command line is read...
    assert discover(named, excludes, force_exclude=True) == []  # ...unless --force-exclude (hooks)


def test_name_patterns_exclude_what_pathspec_excludes(tmp_path):
    """Patterns that are names only (the defaults) are matched without pathspec, by the names in the path; the
    answer is pathspec's gitignore answer for every file and folder, at any depth, named or walked."""
    import pathspec

    patterns = ("old", "legacy.yml", ".venv")
    files = {"configs/a.yml": CONFIG, "configs/old/b.yml": CONFIG, "legacy.yml": CONFIG, "x/legacy.yml/c.yml": CONFIG,
             "older/d.yml": CONFIG, "x/.venv/e.yml": CONFIG, "old.yml": CONFIG}
    write(tmp_path, files)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    excludes = Excludes(patterns, tmp_path)
    assert rel(tmp_path, discover([tmp_path], excludes)) == sorted(f for f in files if not spec.match_file(f))
    for name in files:
        assert discover([tmp_path / name], excludes, force_exclude=True) == (
            [] if spec.match_file(name) else [tmp_path / name]), name


def test_globs_are_recursive_and_a_glob_without_match_is_an_error(tmp_path, monkeypatch):
    write(tmp_path, {"configs/a.yml": CONFIG, "configs/x/b.yml": CONFIG, "configs/c.json": "{}"})
    monkeypatch.chdir(tmp_path)
    assert rel(tmp_path, discover([Path("configs/**/*.yml")])) == ["configs/a.yml", "configs/x/b.yml"]
    with pytest.raises(DiscoveryError, match="no file matches"):
        discover([Path("nothing/*.yml")])


def test_missing_and_unreadable_paths_are_errors(tmp_path):
    with pytest.raises(DiscoveryError, match="no such file or directory"):
        discover([tmp_path / "nope.yml"])
    (tmp_path / "link.yml").symlink_to(tmp_path / "gone.yml")
    with pytest.raises(DiscoveryError, match="broken symbolic link"):
        discover([tmp_path / "link.yml"])


def test_each_file_is_read_once(tmp_path):
    write(tmp_path, {"a.yml": CONFIG})
    assert len(discover([tmp_path, tmp_path / "a.yml"])) == 1


# ---------------------------------------------------------------------------------------------------------- CLI

def cli_run(args: list[str], cwd: Path, stdin: str | None = None) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        done = CliRunner().invoke(cli, args, input=stdin)
    finally:
        os.chdir(old)
    return done.exit_code, done.stdout, done.stderr


def test_check_a_folder_skips_what_is_not_a_config_and_counts_it(tmp_path):
    write(tmp_path, {"configs/a.yml": CONFIG, ".pre-commit-config.yaml": "repos: []\n",
                     "package.json": '{"name": "x", "version": "1"}\n', "compose.yaml": "services: {}\n"})
    code, out, err = cli_run(["check", ".", "--select", "AX010", "--output-format", "concise", "--show-skipped"],
                             tmp_path)
    assert code == 1
    assert out.splitlines() == [
        "configs/a.yml:3:1: AX010 [error] unknown key `lr` in top level: it is silently ignored",
        f"Found 1 problem (1 error) in 1 file; schemas of {default_choice().label()}; 3 files skipped: not Axolotl "
        "or DeepSpeed configs (--show-skipped lists them)."]
    assert ".pre-commit-config.yaml: skipped: top-level keys `repos` are not those of an Axolotl or DeepSpeed " \
           "config" in err


def test_a_missing_path_is_a_usage_error_that_ignore_cannot_hide(tmp_path):
    for args in (["check", "nope.yml"], ["check", "nope.yml", "--ignore", "AX000"], ["fix", "nope.yml"],
                 ["fix", "--write", "nope.yml"]):
        code, out, err = cli_run(args, tmp_path)
        assert code == 2 and "nope.yml: no such file or directory" in err, (args, err)


def test_stdin_findings_are_sorted_with_the_files(tmp_path):
    write(tmp_path, {"b.yml": CONFIG})
    stdin = "base_model: x\nzzz: 1\naaa: 2\n"
    code, out, _ = cli_run(["check", "b.yml", "-", "--stdin-filename", "a.yml", "--select", "AX010",
                            "--output-format", "concise"], tmp_path, stdin)
    lines = [line.split(": AX010")[0] for line in out.splitlines() if ": AX010" in line]
    assert lines == ["a.yml:2:1", "a.yml:3:1", "b.yml:3:1"]


def test_the_summary_and_machine_outputs_say_what_hardware_was_assumed(tmp_path):
    write(tmp_path, {"a.yml": "base_model: meta-llama/Llama-3.2-1B\nsequence_len: 1024\nmicro_batch_size: 1\n"
                              "gradient_accumulation_steps: 1\nlearning_rate: 0.0001\n"
                              "datasets:\n  - path: x\n    type: alpaca\n"})
    _, out, _ = cli_run(["check", "a.yml"], tmp_path)
    assert out.strip().endswith("memory judged for an assumed 1×H100-80GB: set `hardware`).")
    _, out, _ = cli_run(["check", "a.yml", "--hardware", "2xA100-40GB"], tmp_path)
    assert "assumed" not in out
    _, out, _ = cli_run(["check", "a.yml", "--select", "AX"], tmp_path)  # no memory rule ran: nothing to say
    assert "assumed" not in out


def test_json_and_sarif_findings_carry_the_hardware_of_memory_verdicts():
    from tests.corpus import ROOT

    code, out, _ = cli_run(["check", "fixtures/llama3-8b-fft-zero3.yml", "--output-format", "json"], ROOT)
    memory = [f for f in json.loads(out) if f["code"].startswith(("MEM", "PERF"))]
    assert memory and all(f["hardware"] == {"gpu": "H100-80GB", "count": 8, "memory_gib": 79.2, "assumed": True}
                          for f in memory)
    assert all("hardware" not in f for f in json.loads(out) if f["code"].startswith("AX0"))
    code, out, _ = cli_run(["check", "fixtures/llama3-8b-fft-zero3.yml", "--output-format", "sarif",
                            "--hardware", "8xH100"], ROOT)
    results = json.loads(out)["runs"][0]["results"]
    assert {r["properties"]["hardware"]["assumed"] for r in results if r["ruleId"].startswith("MEM")} == {False}
