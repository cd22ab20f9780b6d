"""A lint of many files in forked processes (`LintOptions.jobs`, `axlint check -j`) finds exactly what one process
finds, in the same order, with the same sources, run scopes and skipped files."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.lint import MIN_FILES_PER_JOB, LintOptions, job_count, lint_paths
from axlint.packs import load_rules, select_rules

ROOT = Path(__file__).resolve().parents[1]
RULES = select_rules(load_rules())
CORPUS = sorted((ROOT / "fixtures" / "axolotl" / "examples").rglob("*.y*ml"))

SHARED_DS = '{"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": false}, ' \
            '"train_micro_batch_size_per_gpu": 4, "bf16": {"enabled": true}}\n'
CONFIG = """\
base_model: meta-llama/Llama-3.1-8B
deepspeed: ds.json
micro_batch_size: {mbs}
gradient_accumulation_steps: 1
sequence_len: 4096
bf16: true
fp16: true
datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """60 of the corpus's configs spread over it, then files of our own among them: two configs that share a
    DeepSpeed file (its findings are reported once, or once per config where they differ), the DeepSpeed file
    itself, a YAML that is no config (skipped) and one that does not parse."""
    tmp = tmp_path_factory.mktemp("many")
    picked = CORPUS[:: max(1, len(CORPUS) // 60)][:60]
    out = []
    for i, src in enumerate(picked):
        out.append(tmp / f"{i:03d}-{src.name}")
        shutil.copyfile(src, out[-1])
    (tmp / "ds.json").write_text(SHARED_DS)
    for mbs in (2, 8):
        (tmp / f"mbs{mbs}.yml").write_text(CONFIG.format(mbs=mbs))
    (tmp / "workflow.yml").write_text("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    (tmp / "broken.yml").write_text("base_model: x\nmicro_batch_size: [1,\n")
    extra = [tmp / n for n in ("mbs2.yml", "ds.json", "workflow.yml", "broken.yml", "mbs8.yml")]
    return out[:20] + extra[:2] + out[20:45] + extra[2:] + out[45:]


def _lint(files: list[Path], jobs: int):
    return lint_paths(files, LintOptions(RULES, jobs=jobs))


def test_the_files_are_enough_for_two_processes(files: list[Path]) -> None:
    assert job_count(2, len(files)) == 2  # Linux, where CI runs: the comparison below is a parallel lint's


def test_a_parallel_lint_finds_what_one_process_finds(files: list[Path]) -> None:
    alone, forked = _lint(files, 1), _lint(files, 2)
    assert forked.diagnostics == alone.diagnostics
    assert list(forked.sources) == list(alone.sources)
    assert [s.text for s in forked.sources.values()] == [s.text for s in alone.sources.values()]
    assert forked.scopes == alone.scopes
    assert forked.skipped == alone.skipped
    assert forked.runs == alone.runs == []
    codes = {(d.path.name, d.code) for d in alone.diagnostics}
    assert {("mbs2.yml", "AX101"), ("mbs8.yml", "AX101"), ("broken.yml", "AX000")} <= codes
    assert [s.path.name for s in alone.skipped] == ["workflow.yml"]
    ds = [d for d in alone.diagnostics if d.path.name == "ds.json"]
    assert [d.code for d in ds].count("DS112") == 1  # the same in both configs: once
    assert [d.code for d in ds].count("DS101") == 2  # the micro batch each config writes: once per config
    assert len({d.path for d in alone.diagnostics}) > 40


def test_job_count_follows_the_request_the_files_and_the_cpus() -> None:
    enough = 3 * MIN_FILES_PER_JOB + 1
    assert job_count(1, 500) == 1  # -j 1: this process only
    assert job_count(0, 2 * MIN_FILES_PER_JOB) == 1  # too few files for two processes
    assert job_count(8, 2 * MIN_FILES_PER_JOB + 1) == 2
    assert job_count(8, enough) == 3  # at most one process per MIN_FILES_PER_JOB files after the first
    assert job_count(2, enough) == 2
    assert job_count(0, 100 * MIN_FILES_PER_JOB) == len(os.sched_getaffinity(0))  # 0: one per CPU


def test_check_prints_the_same_report_whatever_the_jobs(files: list[Path]) -> None:
    runner = CliRunner()
    args = ["check", "--output-format", "concise", "--exit-zero", *map(str, files)]
    one, two = (runner.invoke(cli, [*args, "-j", jobs]) for jobs in ("1", "2"))
    assert one.exit_code == two.exit_code == 0, one.output + two.output
    assert two.output == one.output
    assert "mbs8.yml:7:1: AX101" in one.output


def test_jobs_must_be_a_count() -> None:
    result = CliRunner().invoke(cli, ["check", "-j", "-1", str(CORPUS[0])])
    assert result.exit_code == 2
    assert "-j" in result.output and "-1" in result.output


def test_a_process_that_dies_is_exit_2_with_a_message(files: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked process killed mid-lint (the OOM killer) fails the check instead of hanging it."""
    import axlint.lint

    parent, real = os.getpid(), axlint.lint.lint_text

    def dies_in_a_worker(*args, **kwargs):
        if os.getpid() != parent:
            os._exit(9)
        return real(*args, **kwargs)

    monkeypatch.setattr(axlint.lint, "lint_text", dies_in_a_worker)
    result = CliRunner().invoke(cli, ["check", "-j", "2", *map(str, files)])
    assert result.exit_code == 2
    assert f"a process checking {len(files)} files in parallel stopped before it finished" in result.output
    assert "-j 1" in result.output
    assert "Traceback" not in result.output
