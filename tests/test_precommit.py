"""The pre-commit hooks, for real: pre-commit installs axlint from a snapshot of this checkout into a hook
environment and runs `axlint` / `axlint-fix` in a scratch git repository that holds a bad config.

The snapshot is a fresh git repository with every file of the checkout that git does not ignore (try-repo alone
would leave out files that are not committed yet). `pre-commit try-repo` always builds its environment in a
store of its own (about 10 s), so it runs once, for `axlint`; `axlint-fix` runs through a
.pre-commit-config.yaml naming the snapshot, with PRE_COMMIT_HOME shared by the module: built once, reused.
The config's rules come from a pack in the scratch repository (`.axlint.toml`), so the outcome does not depend on
which built-in rules exist.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACK = """\
pack: hooks
rules:
  - code: HOOK001
    name: short-lr-key
    severity: warning
    category: test
    summary: lr is spelled learning_rate.
    message: "`lr` is `learning_rate`"
    when: {key: "raw:lr", exists: true}
    report: "raw:lr"
    fix: {action: rename, key: "raw:lr", to: learning_rate}
"""
BAD = "base_model: x  # model\nlr: 0.0002  # keep this comment\n"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """A committed snapshot of this checkout (tracked and untracked, not ignored files)."""
    src = tmp_path_factory.mktemp("hook-repo")
    for name in git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0"):
        if name and (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    git(src, "init", "-q")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "snapshot")
    return src


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def project(tmp_path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / ".axlint.toml").write_text('rules-dirs = ["rules"]\nselect = ["HOOK"]\n')
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "hooks.yaml").write_text(PACK)
    (tmp_path / "train.yml").write_text(BAD)
    git(tmp_path, "add", "-A")
    return tmp_path


def pre_commit(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([sys.executable, "-m", "pre_commit", *args, "--files", "train.yml"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)


def test_axlint_hook_fails_on_a_bad_config(project, hook_repo, pre_commit_home):
    done = pre_commit(project, pre_commit_home, "try-repo", str(hook_repo), "axlint")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed" in done.stdout and "train.yml:2:1: HOOK001" in done.stdout, done.stdout
    assert (project / "train.yml").read_text() == BAD


def test_axlint_fix_hook_fixes_the_file_and_fails_once(project, hook_repo, pre_commit_home):
    rev = git(hook_repo, "rev-parse", "HEAD").strip()
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: axlint-fix\n")
    done = pre_commit(project, pre_commit_home, "run", "axlint-fix")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "files were modified by this hook" in done.stdout
    assert (project / "train.yml").read_text() == BAD.replace("lr:", "learning_rate:")
    again = pre_commit(project, pre_commit_home, "run", "axlint-fix")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout


# ------------------------------------------------------------------------------------ a realistic repository

WORKFLOW = """\
name: ci
on:
  push:
    branches: [main]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
"""
PACKAGE_JSON = '{\n  "name": "web",\n  "version": "1.0.0",\n  "scripts": {"build": "vite build"}\n}\n'
NOTEBOOK = '{\n "cells": [],\n "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n'
COMPOSE = "services:\n  app:\n    image: python:3.11\n    command: python -m http.server\n"
CONFIG = """\
base_model: meta-llama/Llama-3.2-1B
datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
sequence_len: 2048
sample_packing: true
micro_batch_size: 2
gradient_accumulation_steps: 4
learning_rate: 0.0002
num_epochs: 1
optimizer: adamw_torch_fused
bf16: true
attn_implementation: flash_attention_2
gradient_checkpointing: true
plugins:
  - axolotl.integrations.liger.LigerPlugin
liger_fused_linear_cross_entropy: true
deepspeed: deepspeed_configs/zero2.json
"""


@pytest.fixture
def repository(tmp_path, hook_repo) -> Path:
    """An ML repository: CI workflow, pre-commit config with both hooks and no `files:` filter, package.json, a
    notebook, docker-compose, Axolotl's cloud launcher YAML, and two training configs sharing one DeepSpeed JSON
    (one with a deprecated key that the safe fix renames)."""
    rev = git(hook_repo, "rev-parse", "HEAD").strip()
    files = {
        ".github/workflows/ci.yml": WORKFLOW,
        ".pre-commit-config.yaml": f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n"
                                   "      - id: axlint\n      - id: axlint-fix\n",
        "web/package.json": PACKAGE_JSON,
        "notebooks/explore.ipynb": NOTEBOOK,
        "docker-compose.yaml": COMPOSE,
        "cloud/modal.yaml": (ROOT / "fixtures/axolotl/examples/cloud/modal.yaml").read_text(),
        "deepspeed_configs/zero2.json": (ROOT / "fixtures/axolotl/deepspeed_configs/zero2.json").read_text(),
        "configs/lora-1b.yml": CONFIG,
        "configs/lora-1b-long.yml": CONFIG.replace("sequence_len: 2048", "sequence_len: 4096")
                                          + "dataset_processes: 8\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    return tmp_path


def test_hooks_on_a_realistic_repository_lint_only_the_training_configs(repository, pre_commit_home):
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(pre_commit_home), "PRE_COMMIT_COLOR": "never"}
    run = functools.partial(subprocess.run, [sys.executable, "-m", "pre_commit", "run", "--all-files"],
                            cwd=repository, env=env, capture_output=True, text=True, timeout=600)
    first = run()
    out = first.stdout
    assert first.returncode == 1, out + first.stderr
    # the fix hook renamed the deprecated key and changed nothing else
    fixed = (repository / "configs/lora-1b-long.yml").read_text()
    assert fixed.endswith("dataset_num_proc: 8\n") and "dataset_processes" not in fixed
    for name in (".github/workflows/ci.yml", ".pre-commit-config.yaml", "web/package.json", "notebooks/explore.ipynb",
                 "docker-compose.yaml", "cloud/modal.yaml"):
        assert name not in out, f"{name} was reported:\n{out}"
    assert "unknown key" not in out, out
    assert "skipped: not Axolotl or DeepSpeed configs" in out, out
    second = run()
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.count("Passed") == 2, second.stdout
