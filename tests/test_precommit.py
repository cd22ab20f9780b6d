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
