"""`axlint fix`: diff output, exit codes, --write (atomic, idempotent), --unsafe-fixes, --show-fixes, stdin.

The rules come from a test pack (`--select TST`) so that these tests do not move when built-in rules change;
two Python checks registered here make fixes that break the file or oscillate.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.rule import FixAvailability, Hit, register_check
from axlint.cli import cli
from axlint.diagnostics import Span
from axlint.document import load_document
from axlint.packs import load_rules, select_rules
from axlint import fixer
from axlint.fixer import fix_paths, write_changed
from axlint.edits import Edit
from axlint.fixes import Applicability, Fix
from axlint.lint import LintOptions

ROOT = Path(__file__).resolve().parent.parent

PACK = """\
pack: test
rules:
  - code: TST001
    name: micro-batch-over-two
    severity: warning
    category: test
    summary: Micro batch over 2.
    message: "micro batch {value}"
    when: {key: "raw:micro_batch_size", greater_than: 2}
    report: "raw:micro_batch_size"
    fix: {action: set, key: "raw:micro_batch_size", value: 2, applicability: unsafe, title: "micro batch 2"}
  - code: TST002
    name: short-lr-key
    severity: warning
    category: test
    summary: lr is spelled learning_rate.
    message: "`lr` is `learning_rate`"
    when: {key: "raw:lr", exists: true}
    report: "raw:lr"
    fix: {action: rename, key: "raw:lr", to: learning_rate, title: "rename `lr` to `learning_rate`"}
  - code: TST003
    name: zero-two
    severity: warning
    category: test
    summary: ZeRO stage 2.
    message: "stage 2"
    when: {key: "ds_raw:zero_optimization.stage", equals: 2}
    report: "ds_raw:zero_optimization.stage"
    fix: {action: set, key: "ds_raw:zero_optimization.stage", value: 3}
  - code: TST004
    name: no-base-model
    severity: error
    category: test
    summary: No base model.
    message: "no base_model"
    when: {key: "raw:base_model", exists: false}
  - code: TST005
    name: breaks-yaml
    severity: warning
    category: test
    summary: A fix that breaks the file.
    message: "broken fix"
    check: test_breaks_yaml
  - code: TST006
    name: flip-flop
    severity: warning
    category: test
    summary: A fix that undoes itself.
    message: "flip"
    check: test_flip_flop
"""


@register_check("test_breaks_yaml", fix=FixAvailability.SOMETIMES)
def _breaks_yaml(run, rule):
    doc = run.axolotl
    if doc is not None and "break_me" in doc.data:
        yield Hit(doc, Span.file_start(), {}, Fix(doc.path, (Edit(0, 0, "[unclosed\n"),), Applicability.SAFE, "break"))


@register_check("test_flip_flop", fix=FixAvailability.SOMETIMES)
def _flip_flop(run, rule):
    doc = run.axolotl
    node = doc.node(("mode",)) if doc is not None else None
    if node is not None:
        new = "b" if node.value == "a" else "a"
        yield Hit(doc, node.span, {}, Fix(doc.path, (Edit(node.span.start, node.span.end, new),), Applicability.SAFE, "flip"))


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "test.yaml").write_text(PACK)
    return tmp_path


def axlint(*args: str, stdin: str | bytes | None = None):
    return CliRunner().invoke(cli, ["fix", "--rules-dir", "rules", "--select", "TST", *args], input=stdin)


CONFIG = "base_model: x  # model\nlr: 0.0002   # keep\nmicro_batch_size: 4\n"


def test_diff_shows_safe_fixes_and_exits_1_without_touching_the_file(work):
    (work / "c.yml").write_text(CONFIG)
    done = axlint("c.yml")
    assert done.exit_code == 1
    assert done.stdout == ("--- c.yml\n+++ c.yml\n@@ -1,3 +1,3 @@\n base_model: x  # model\n-lr: 0.0002   # keep\n"
                           "+learning_rate: 0.0002   # keep\n micro_batch_size: 4\n")
    assert "c.yml:3:1: TST001" in done.stderr  # the unsafe one is still a finding
    assert "Would fix 1 finding in 1 file, 1 remaining. 1 more fixable with --unsafe-fixes." in done.stderr
    assert (work / "c.yml").read_text() == CONFIG


def test_nothing_to_fix_exits_0_with_no_diff(work):
    (work / "c.yml").write_text("base_model: x\n")
    done = axlint("c.yml")
    assert (done.exit_code, done.stdout) == (0, "")


def test_unfixable_findings_are_listed_on_stderr(work):
    (work / "c.yml").write_text("lr: 1\nmicro_batch_size: 1\nsequence_len: 512\n")
    done = axlint("c.yml")
    assert done.exit_code == 1 and "+learning_rate: 1" in done.stdout
    assert "c.yml:1:1: TST004 [error] no base_model" in done.stderr
    assert axlint("--write", "c.yml").exit_code == 1  # TST004 remains after writing
    assert axlint("--write", "--fail-on", "error", "c.yml").exit_code == 1
    assert axlint("c.yml").exit_code == 0  # nothing left that would change


def test_write_applies_safe_fixes_and_is_idempotent(work):
    (work / "c.yml").write_text(CONFIG)
    done = axlint("--write", "c.yml")
    assert done.exit_code == 1, done.stderr  # TST001 (unsafe) remains
    assert done.stdout == ""
    assert (work / "c.yml").read_text() == CONFIG.replace("lr:", "learning_rate:")
    again = axlint("--write", "c.yml")
    assert (work / "c.yml").read_text() == CONFIG.replace("lr:", "learning_rate:")
    assert "Fixed 0 findings" in again.stderr
    assert [p.name for p in work.iterdir() if p.name.endswith(".tmp")] == []


def test_unsafe_fixes_and_show_fixes(work):
    (work / "c.yml").write_text(CONFIG)
    done = axlint("--write", "--unsafe-fixes", "--show-fixes", "c.yml")
    assert done.exit_code == 0, done.stderr
    assert (work / "c.yml").read_text() == "base_model: x  # model\nlearning_rate: 0.0002   # keep\nmicro_batch_size: 2\n"
    assert "Fixed 2 findings:\n- c.yml:\n    1 × TST001 (micro-batch-over-two)\n    1 × TST002 (short-lr-key)\n" in done.stderr
    assert "Fixed 2 findings in 1 file, 0 remaining." in done.stderr


def test_one_run_fixes_the_config_and_its_deepspeed_file(work):
    (work / "c.yml").write_text(CONFIG + "deepspeed: ds/z.json\n")
    (work / "ds").mkdir()
    ds_text = '{\n  "zero_optimization": {\n    "stage": 2\n  },\n  "bf16": {"enabled": true}\n}\n'
    (work / "ds" / "z.json").write_text(ds_text)
    done = axlint("c.yml")
    assert done.exit_code == 1
    assert '--- ds/z.json\n+++ ds/z.json\n' in done.stdout and '+    "stage": 3\n' in done.stdout
    assert axlint("--write", "--unsafe-fixes", "c.yml").exit_code == 0
    assert (work / "ds" / "z.json").read_text() == ds_text.replace('"stage": 2', '"stage": 3')
    assert axlint("c.yml").exit_code == 0


def test_deepspeed_file_shared_by_two_configs_is_fixed_once(work):
    for name in ("a.yml", "b.yml"):
        (work / name).write_text("base_model: x\ndeepspeed: z.json\n")
    (work / "z.json").write_text('{"zero_optimization": {"stage": 2}}')
    done = axlint("--write", "--show-fixes", "a.yml", "b.yml")
    assert done.exit_code == 0, done.stderr
    assert (work / "z.json").read_text() == '{"zero_optimization": {"stage": 3}}'
    assert "1 × TST003" in done.stderr


def test_stdin_prints_the_fixed_text(work):
    done = axlint("-", "--stdin-filename", "c.yml", stdin="base_model: x\nlr: 1  # c\n")
    assert done.exit_code == 0, done.stderr
    assert done.stdout == "base_model: x\nlearning_rate: 1  # c\n"
    assert not (work / "c.yml").exists()


def test_stdin_never_writes_other_files(work):
    (work / "z.json").write_text('{"zero_optimization": {"stage": 2}}')
    done = axlint("-", "--write", stdin="base_model: x\ndeepspeed: z.json\n")
    assert done.stdout == "base_model: x\ndeepspeed: z.json\n"
    assert done.exit_code == 1 and "TST003" in done.stderr
    assert (work / "z.json").read_text() == '{"zero_optimization": {"stage": 2}}'


def test_stdin_that_is_not_text_comes_back_unchanged(work):
    done = axlint("-", "--select", "AX000", stdin=b"base_model: \xff\n")
    assert done.stdout_bytes == b"base_model: \xff\n"
    assert done.exit_code == 1 and "AX000" in done.stderr


def test_stdin_keeps_a_bom(work):
    done = axlint("-", stdin=b"\xef\xbb\xbfbase_model: x\r\nlr: 1\r\n")
    assert done.stdout_bytes == b"\xef\xbb\xbfbase_model: x\r\nlearning_rate: 1\r\n"


def test_stdin_cannot_be_mixed_with_paths(work):
    (work / "c.yml").write_text(CONFIG)
    assert axlint("-", "c.yml", stdin="").exit_code == 2


def test_write_keeps_mode_bom_crlf_and_missing_final_newline(work):
    path = work / "c.yml"
    path.write_bytes(b"\xef\xbb\xbfbase_model: x\r\nlr: 0.0002")
    os.chmod(path, 0o640)
    assert axlint("--write", "c.yml").exit_code == 0
    assert path.read_bytes() == b"\xef\xbb\xbfbase_model: x\r\nlearning_rate: 0.0002"
    assert path.stat().st_mode & 0o777 == 0o640


def test_write_follows_a_symlink(work):
    (work / "real.yml").write_text("base_model: x\nlr: 1\n")
    (work / "link.yml").symlink_to("real.yml")
    assert axlint("--write", "link.yml").exit_code == 0
    assert (work / "link.yml").is_symlink()
    assert (work / "real.yml").read_text() == "base_model: x\nlearning_rate: 1\n"


def test_unchanged_files_are_not_touched(work):
    (work / "c.yml").write_text(CONFIG + "deepspeed: z.json\n")
    (work / "clean.yml").write_text("base_model: y\n")
    (work / "z.json").write_text('{"zero_optimization": {"stage": 3}}')
    for name in ("clean.yml", "z.json"):
        os.utime(work / name, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = {name: (work / name).stat() for name in ("clean.yml", "z.json")}
    assert axlint("--write", "c.yml", "clean.yml").exit_code == 1
    for name, st in before.items():
        after = (work / name).stat()
        assert (after.st_mtime_ns, after.st_ino) == (st.st_mtime_ns, st.st_ino), name
    assert "learning_rate" in (work / "c.yml").read_text()


def test_a_fix_that_breaks_the_file_is_not_applied(work):
    text = "base_model: x\nbreak_me: 1\nlr: 1\n"
    (work / "c.yml").write_text(text)
    done = axlint("--write", "c.yml")
    assert "TST005 fix (break) would make the file unparsable; not applied" in done.stderr
    assert (work / "c.yml").read_text() == text.replace("lr:", "learning_rate:")  # the good fix still applies
    load_document(work / "c.yml")


def test_oscillating_fixes_stop_and_are_reported(work):
    (work / "c.yml").write_text("base_model: x\nmode: a\n")
    done = axlint("--write", "c.yml")
    assert "fixes oscillate" in done.stderr
    assert done.exit_code == 1
    assert load_document(work / "c.yml").data["mode"] in ("a", "b")


def test_file_changed_on_disk_meanwhile_is_not_overwritten(work):
    (work / "c.yml").write_text("base_model: x\nlr: 1\n")
    options = LintOptions(select_rules(load_rules([work / "rules"]), ["TST002"]))
    report = fix_paths([work / "c.yml"], options)
    (work / "c.yml").write_text("base_model: x\nlr: 2\n")
    assert write_changed(report) == [f"{work / 'c.yml'}: changed on disk while fixing; not written"]
    assert (work / "c.yml").read_text() == "base_model: x\nlr: 2\n"


def test_an_editor_save_while_staging_is_kept(work, monkeypatch):
    """The file is saved by someone else after axlint staged its new text: nothing is moved over it."""
    (work / "c.yml").write_text("base_model: x\nlr: 1\n")
    options = LintOptions(select_rules(load_rules([work / "rules"]), ["TST002"]))
    report = fix_paths([work / "c.yml"], options)
    real_stage = fixer._stage

    def stage_then_editor_saves(path, text, *, bom):
        staged = real_stage(path, text, bom=bom)
        path.write_text("base_model: x\nlr: 3\n")
        return staged

    monkeypatch.setattr(fixer, "_stage", stage_then_editor_saves)
    assert write_changed(report) == [f"{work / 'c.yml'}: changed on disk while fixing; not written"]
    assert (work / "c.yml").read_text() == "base_model: x\nlr: 3\n"
    assert not list(work.glob(".*.axlint.tmp"))


def test_a_two_file_fix_is_written_whole_or_not_at_all(work, monkeypatch):
    """When one file of a fix cannot be written (here: the second stage fails as on a full disk), neither is."""
    (work / "a.yml").write_text("base_model: x\nlr: 1\n")
    (work / "b.yml").write_text("base_model: y\nlr: 2\n")
    options = LintOptions(select_rules(load_rules([work / "rules"]), ["TST002"]))
    report = fix_paths([work / "a.yml", work / "b.yml"], options)
    real_stage = fixer._stage

    def stage(path, text, *, bom):
        if path.name == "b.yml":
            raise OSError(28, "No space left on device")
        return real_stage(path, text, bom=bom)

    monkeypatch.setattr(fixer, "_stage", stage)
    problems = write_changed(report)
    assert problems[0] == f"{work / 'b.yml'}: cannot write: No space left on device"
    assert problems[1].startswith("nothing written: 1 other file(s) left as they were")
    assert (work / "a.yml").read_text() == "base_model: x\nlr: 1\n"
    assert not list(work.glob(".*.axlint.tmp"))


def test_a_read_only_file_is_not_written(work):
    """Mode 0444 is refused even for root, who could write it (the fix command exits 1 and says why)."""
    path = work / "c.yml"
    path.write_text("base_model: x\nlr: 1\n")
    os.chmod(path, 0o444)
    done = axlint("--write", "c.yml")
    assert done.exit_code == 1 and "cannot write: read-only (mode 0444)" in done.stderr
    assert "Would fix 1 finding in 1 file" in done.stderr and "Fixed" not in done.stderr
    assert path.read_text() == "base_model: x\nlr: 1\n"


def test_a_hard_linked_file_stays_linked(work):
    path = work / "c.yml"
    path.write_text("base_model: x\nlr: 1\n")
    os.link(path, work / "twin.yml")
    assert axlint("--write", "c.yml").exit_code == 0
    assert (work / "twin.yml").read_text() == "base_model: x\nlearning_rate: 1\n"
    assert path.stat().st_ino == (work / "twin.yml").stat().st_ino


def test_the_owner_of_a_written_file_is_kept(work):
    """Run as root, a file of another user stays that user's (the staged copy is chowned before the rename)."""
    path = work / "c.yml"
    path.write_text("base_model: x\nlr: 1\n")
    if os.getuid() == 0:
        os.chown(path, 1234, 1234)
    owner = (path.stat().st_uid, path.stat().st_gid)
    assert axlint("--write", "c.yml").exit_code == 0
    assert (path.stat().st_uid, path.stat().st_gid) == owner


# ---------------------------------------------------------------------------------------------------- comments


def comments(text: str) -> list[str]:
    """Every comment as written: a whole comment line with its indentation, or a trailing `# ...` part."""
    found = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            found.append(line)
        elif m := re.search(r"\s(#.*)$", line):
            found.append(m.group(1))
    return found


def pair_lines(text: str, data: dict) -> set[int]:
    """Line numbers (1-based) of every pair whose key path is gone from `data` (its lines may go with it)."""
    from axlint.document import iter_pairs

    doc = load_document(Path("c.yml"), text)
    gone: set[int] = set()
    for path, pair in iter_pairs(doc.root):
        node: object = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else (node[part] if isinstance(node, list) and
                                                                  isinstance(part, int) and part < len(node) else None)
        if node is None:
            gone.update(range(pair.key.span.line, pair.value.span.end_line + 1))
    return gone


def test_fix_keeps_every_comment_of_a_comment_heavy_config(work):
    shutil.copy2(ROOT / "fixtures" / "comments-heavy.yml", work / "comments-heavy.yml")
    (work / "fix").mkdir()
    shutil.copy2(ROOT / "fixtures" / "fix" / "comments-heavy-zero3.json", work / "fix" / "comments-heavy-zero3.json")
    before = (work / "comments-heavy.yml").read_text()
    ds_before = (work / "fix" / "comments-heavy-zero3.json").read_text()
    done = CliRunner().invoke(cli, ["fix", "--write", "--unsafe-fixes", "comments-heavy.yml"])
    assert done.exit_code in (0, 1), done.output
    after = (work / "comments-heavy.yml").read_text()
    assert after != before and (work / "fix" / "comments-heavy-zero3.json").read_text() != ds_before
    new_data = load_document(work / "comments-heavy.yml").data
    gone = pair_lines(before, new_data)
    required = [c for n, line in enumerate(before.splitlines(), 1) for c in comments(line) if n not in gone]
    remaining = iter(comments(after))
    assert all(any(c == r for r in remaining) for c in required), "a comment was lost or moved out of order"
    assert "dataset_num_proc: 16          # tokenizer workers (old spelling)\n" in after
    assert "  - axolotl.integrations.spectrum.SpectrumPlugin  # layer selection\n" in after
    ds = json.loads((work / "fix" / "comments-heavy-zero3.json").read_text())
    assert "stage3_prefetch_bucket_size" in ds["zero_optimization"]
    assert CliRunner().invoke(cli, ["fix", "--unsafe-fixes", "comments-heavy.yml"]).stdout == ""
