"""Hostile and broken input: every case is a located finding (file:line:col) or a usage error, never a traceback.

The CLI runs in a subprocess, so a crash of the interpreter itself (deep nesting in libyaml) fails the test
instead of the test run.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.document import MAX_FILE_BYTES
from axlint.packs import load_rules, select_rules
from axlint.lint import LintOptions, lint_paths

ROOT = Path(__file__).resolve().parents[1]
MARKER = "axlint-was-here"
DS_REFERENCE = b"base_model: x\ndeepspeed: ds.json\n"

BILLION_LAUGHS = b"base_model: x\nlol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + b"".join(
    b"lol%d: &l%d [%s]\n" % (i, i, b", ".join([b"*l%d" % (i - 1)] * 9)) for i in range(1, 10))


def axlint(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "axlint", *args], cwd=cwd, input=stdin, capture_output=True,
                          timeout=120, env=env)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())


def assert_no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert done.returncode in (0, 1, 2), f"exit {done.returncode}: {done.stderr}"


def assert_reported(done: subprocess.CompletedProcess, where: str, code: str) -> None:
    """A finding `code` at `where` (file:line:col; file:line: when any column on that line will do), exit 1, no
    traceback and no internal error."""
    assert_no_traceback(done)
    assert re.search(re.escape(where) + (r"\d+" if where.endswith(":") else "") + f": {code} ", done.stdout), \
        done.stdout + done.stderr
    assert "AX999" not in done.stdout
    assert done.returncode == 1


# name, files to write, file to check, where the finding is, its code
CASES = [
    ("malformed-yaml", {"c.yml": b"base_model: x\nlora_target_modules: [q_proj, v_proj\n"}, "c.yml", "c.yml:3:1", "AX000"),
    ("tab-indentation", {"c.yml": b"base_model: x\ndatasets:\n\t- path: a\n"}, "c.yml", "c.yml:3:1", "AX000"),
    ("malformed-json", {"ds.json": b'{"zero_optimization": {"stage": 3},}'}, "ds.json", "ds.json:1:36", "AX000"),
    ("root-list", {"c.yml": b"- base_model: x\n- adapter: lora\n"}, "c.yml", "c.yml:1:1", "AX000"),
    ("two-documents", {"c.yml": b"base_model: x\n---\nadapter: lora\n"}, "c.yml", "c.yml:2:1", "AX000"),
    ("binary-nul", {"c.yml": bytes(range(256)) * 8}, "c.yml", "c.yml:1:1", "AX000"),
    ("invalid-utf8", {"c.yml": b"base_model: x\nadapter: lor\xe9\n"}, "c.yml", "c.yml:2:13", "AX000"),
    ("billion-laughs", {"c.yml": BILLION_LAUGHS}, "c.yml", "c.yml:7:7", "AX000"),
    ("recursive-alias", {"c.yml": b"base_model: x\nloop: &a [*a]\n"}, "c.yml", "c.yml:2:7", "AX000"),
    ("unhashable-key", {"c.yml": b"base_model: x\n{a: 1}: 2\n"}, "c.yml", "c.yml:2:1", "AX000"),
    ("custom-tag", {"c.yml": b"base_model: !include other.yml\n"}, "c.yml", "c.yml:1:13", "AX000"),
    # refused by axlint at level 201, or earlier by a PyYAML (6.0.4) whose scanner reads ahead and stops at its
    # own limit: either way a located AX000 on line 1
    ("deep-flow-nesting", {"c.yml": b"base_model: " + b"[" * 100_000 + b"]" * 100_000 + b"\n"}, "c.yml", "c.yml:1:",
     "AX000"),
    ("deep-block-nesting", {"c.yml": b"base_model: x\nlayers:\n  " + b"- " * 50_000 + b"x\n"}, "c.yml", "c.yml:3:401",
     "AX000"),
    ("missing-deepspeed-file", {"c.yml": DS_REFERENCE}, "c.yml", "c.yml:2:12", "DS000"),
    ("malformed-deepspeed-file", {"c.yml": DS_REFERENCE, "ds.json": b'{"zero_optimization": }'}, "c.yml",
     "ds.json:1:23", "AX000"),
    ("deepspeed-reference-is-a-directory", {"c.yml": b"base_model: x\ndeepspeed: sub\n", "sub/x": b""}, "c.yml",
     "c.yml:2:12", "DS000"),
]


# Files that are not configs at all: skipped without a finding (counted in the summary), exit 0.
NOT_CONFIGS = [
    ("json-root-list", {"ds.json": b"[1, 2]"}, "ds.json", "the top level is a list, expected a mapping"),
    ("empty-file", {"c.yml": b""}, "c.yml", "empty file"),
    ("whitespace-only", {"c.yml": b"  \n\t\n\n"}, "c.yml", "empty file"),
    ("comments-only", {"c.yml": b"# nothing here\n"}, "c.yml", "empty document"),
    ("root-scalar", {"c.yml": b"just a sentence\n"}, "c.yml", "the top level is a scalar value"),
    ("deep-json-nesting", {"ds.json": b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"}, "ds.json",
     "nested too deeply"),
]


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


@pytest.mark.parametrize(("files", "target", "where", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_a_located_finding(tmp_path, files, target, where, code):
    write_files(tmp_path, files)
    assert_reported(axlint(["check", target], tmp_path), where, code)


@pytest.mark.parametrize(("files", "target", "why"), [c[1:] for c in NOT_CONFIGS], ids=[c[0] for c in NOT_CONFIGS])
def test_a_file_that_is_no_config_is_skipped_and_says_why(tmp_path, files, target, why):
    write_files(tmp_path, files)
    done = axlint(["check", target, "--show-skipped"], tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 0
    assert done.stdout == "All checks passed (0 files; 1 file skipped: not Axolotl or DeepSpeed configs " \
                          "(--show-skipped lists them)).\n"
    assert done.stderr.startswith(f"{target}: skipped: ") and why in done.stderr, done.stderr
    assert done.stderr.rstrip().endswith("(and it writes no Axolotl or DeepSpeed key)")


@pytest.mark.parametrize(("args", "message"), [
    (["check", "nope.yml"], "nope.yml: no such file or directory"),
    (["check", "nope.yml", "--ignore", "AX000"], "nope.yml: no such file or directory"),
    (["fix", "nope.yml"], "nope.yml: no such file or directory"),
    (["check", "dangling.yml"], "dangling.yml: broken symbolic link"),
    (["check", "nothing/*.yml"], "nothing/*.yml: no file matches this pattern"),
])
def test_a_path_that_cannot_be_read_is_a_usage_error(tmp_path, args, message):
    (tmp_path / "dangling.yml").symlink_to(tmp_path / "gone.yml")
    done = axlint(args, tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_a_folder_without_configs_checks_nothing(tmp_path):
    write_files(tmp_path, {"sub/x": b"", "sub/readme.md": b"# hi\n"})
    done = axlint(["check", "sub"], tmp_path)
    assert (done.returncode, done.stdout) == (0, "All checks passed (0 files).\n")


def test_malformed_deepspeed_file_is_also_reported_at_the_reference(tmp_path):
    write_files(tmp_path, {"c.yml": DS_REFERENCE, "ds.json": b'{"zero_optimization": }'})
    assert_reported(axlint(["check", "c.yml"], tmp_path), "c.yml:2:12", "DS000")


@pytest.mark.parametrize("fmt", ["concise", "json", "sarif", "github"])
def test_every_bad_file_at_once_in_every_format(tmp_path, fmt):
    for name, files, *_ in CASES:
        write_files(tmp_path / name, files)
    targets = [f"{name}/{target}" for name, _, target, *_ in CASES]
    done = axlint(["check", "--output-format", fmt, *targets], tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 1
    if fmt in ("json", "sarif"):
        json.loads(done.stdout)
    for target in targets:
        assert target in done.stdout, f"{target} is not reported"


@pytest.mark.parametrize("tag", [
    f'!!python/object/apply:os.system ["touch {MARKER}"]',
    f"!!python/object/apply:subprocess.check_call [[touch, {MARKER}]]",
    f'!!python/object/new:os.system ["touch {MARKER}"]',
    f"!!python/object/apply:builtins.open [{MARKER}, w]",
    "!!python/name:os.system",
    "!!python/object:os.PathLike {}",
    "!!python/module:os",
])
def test_python_tags_are_refused_and_never_executed(tmp_path, tag):
    (tmp_path / "c.yml").write_text(f"base_model: x\nadapter: {tag}\n", encoding="utf-8")
    assert_reported(axlint(["check", "c.yml"], tmp_path), "c.yml:2:10", "AX000")
    assert not (tmp_path / MARKER).exists()


def test_a_50_mib_file_is_refused_quickly(tmp_path):
    with (tmp_path / "big.yml").open("wb") as f:
        f.write(b"base_model: x\nnotes: ")
        f.write(b"x" * (50 * 2**20))
    start = time.perf_counter()
    done = axlint(["check", "big.yml"], tmp_path)
    assert_reported(done, "big.yml:1:1", "AX000")
    assert "MiB" in done.stdout
    assert time.perf_counter() - start < 10


def test_a_file_just_under_the_limit_is_linted(tmp_path):
    (tmp_path / "c.yml").write_text("base_model: x\nnotes: " + "x" * (MAX_FILE_BYTES - 100) + "\n", encoding="utf-8")
    done = axlint(["check", "c.yml", "--select", "AX000"], tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 0


@pytest.mark.parametrize("prefix", [b"\xef\xbb\xbf", b""], ids=["bom", "no-bom"])
@pytest.mark.parametrize("newline", [b"\r\n", b"\n"], ids=["crlf", "lf"])
def test_bom_and_crlf_keep_lines_and_columns(tmp_path, prefix, newline):
    lines = [b"base_model: x", b"micro_batch_size: 1", b"micro_batch_size: 2", b""]
    (tmp_path / "c.yml").write_bytes(prefix + newline.join(lines))
    done = axlint(["check", "c.yml", "--select", "AX001"], tmp_path)
    assert_reported(done, "c.yml:3:1", "AX001")
    assert "\r" not in done.stdout
    assert "   3 | micro_batch_size: 2\n" in done.stdout


def test_bom_in_deepspeed_json_is_a_launch_failure(tmp_path):
    """Axolotl 0.18.0 (`normalize_config`) and accelerate open the DeepSpeed file as UTF-8 and call json.load, which
    raises "Unexpected UTF-8 BOM"; the file is reported where it starts and at the reference."""
    write_files(tmp_path, {"c.yml": DS_REFERENCE, "ds.json": b'\xef\xbb\xbf{"zero_optimization": {"stage": 3}}'})
    done = axlint(["check", "c.yml", "ds.json", "--select", "AX000,DS000", "--output-format", "concise"], tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 1, done.stdout
    assert "ds.json:1:1: AX000 [error] starts with a UTF-8 byte order mark" in done.stdout
    assert "c.yml:2:12: DS000 [error]" in done.stdout and "Unexpected UTF-8 BOM" in done.stdout


def test_two_byte_order_marks_are_refused_where_axolotl_would_misread_the_first_key(tmp_path):
    (tmp_path / "c.yml").write_bytes(b"\xef\xbb\xbf\xef\xbb\xbfbase_model: x\nevaluation_strategy: steps\n")
    done = axlint(["check", "c.yml", "--output-format", "concise"], tmp_path)
    assert_no_traceback(done)
    assert "c.yml:1:1: AX000 [error] the file starts with two byte order marks" in done.stdout
    fixed = axlint(["fix", "--write", "c.yml"], tmp_path)
    assert_no_traceback(fixed)
    assert (tmp_path / "c.yml").read_bytes().startswith(b"\xef\xbb\xbf\xef\xbb\xbfbase_model: x\nevaluation_strategy")


@pytest.mark.parametrize(("data", "where"), [
    (b"base_model: x\x00\n", "x.yml:1:1"),
    (b"base_model: x\nadapter: \xff\n", "x.yml:2:10"),
    (b"- base_model: a\n", "x.yml:1:1"),
])
def test_bad_stdin_is_a_finding_under_the_stdin_filename(tmp_path, data, where):
    done = axlint(["check", "-", "--stdin-filename", "x.yml"], tmp_path, stdin=data)
    assert_reported(done, where, "AX000")


@pytest.mark.parametrize(("args", "message"), [
    ([], "no files given"),
    (["c.yml", "--select", "NOPE123"], "unknown rule selector"),
    (["c.yml", "--output-format", "xml"], "Invalid value"),
    (["c.yml", "--no-such-flag"], "No such option"),
    (["c.yml", "--rules-dir", "missing-folder"], "rules directory not found"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    (tmp_path / "c.yml").write_text("base_model: x\n")
    done = axlint(["check", *args], tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2
    assert message in done.stderr


# ---------------------------------------------------------------------------------------- unreadable files
# Tests may run as root, for whom chmod 000 changes nothing: the read itself is made to fail the way it fails
# for an ordinary user, so the handling of PermissionError is what is tested either way.


@pytest.fixture()
def unreadable_ds(tmp_path, monkeypatch):
    write_files(tmp_path, {"c.yml": DS_REFERENCE, "ds.json": b'{"zero_optimization": {"stage": 3}}'})
    ds = tmp_path / "ds.json"
    ds.chmod(0)
    real_open = Path.open

    def open_(self: Path, *args, **kwargs):  # noqa: ANN002, ANN003 - Path.open's own signature
        if self.name == ds.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.chdir(tmp_path)
    yield ds
    ds.chmod(0o644)


def test_unreadable_deepspeed_file_via_library(unreadable_ds):
    rules = select_rules(load_rules(), ["AX000", "DS000"])
    diags = lint_paths([Path("c.yml")], LintOptions(rules)).diagnostics
    found = {(str(d.path), d.span.line, d.span.col, d.code) for d in diags}
    assert ("ds.json", 1, 1, "AX000") in found
    assert ("c.yml", 2, 12, "DS000") in found
    assert any("permission denied" in d.message for d in diags)


def test_unreadable_deepspeed_file_via_cli(unreadable_ds):
    result = CliRunner().invoke(cli, ["check", "c.yml", "--output-format", "concise"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "c.yml:2:12: DS000 [error] ds.json: permission denied" in result.output
