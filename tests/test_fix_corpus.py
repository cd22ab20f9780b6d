"""`fix --unsafe-fixes` over real configs: files still parse, only the keys the fixes named change, a second run
changes nothing, and no fixable finding is left.

Source: the vendored Axolotl corpus, fixtures/axolotl (250 example configs and their DeepSpeed files). It is copied
to a temporary folder and fixed there, with that folder as the working directory (examples name `deepspeed_configs/...` from the root).
The checks are generic over whatever rules have fixes, so they grow with the rule packs.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from click.testing import CliRunner

from axlint.cli import cli
from axlint.document import iter_pairs, load_document
from axlint.packs import load_rules
from axlint.fixer import FixReport, fix_paths, write_changed
from axlint.lint import LintOptions, lint_paths
from tests.corpus import CORPUS

OPTIONS = LintOptions(load_rules())


def config_files(root: Path) -> list[Path]:
    """Axolotl YAML configs anywhere under `root`, DeepSpeed JSON under deepspeed_configs/ (relative paths)."""
    found = [*root.glob("**/*.yml"), *root.glob("**/*.yaml"), *root.glob("deepspeed_configs/*.json")]
    return sorted(p.relative_to(root) for p in found)


def text_of(path: Path) -> str:
    """The text exactly as stored (no newline translation)."""
    return path.read_bytes().decode("utf-8-sig")


def changed_paths(old: Any, new: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Key paths where two loaded configs differ (types count: 1 and 1.0 differ)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old.keys() | new.keys():
            if key not in old or key not in new:
                yield prefix + (key,)
            else:
                yield from changed_paths(old[key], new[key], prefix + (key,))
    elif isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            if i >= len(old) or i >= len(new):
                yield prefix + (i,)
            else:
                yield from changed_paths(old[i], new[i], prefix + (i,))
    elif type(old) is not type(new) or old != new:
        yield prefix


def located_path(path: Path, text: str, offset: int) -> tuple:
    """The key path of the innermost pair whose key or value holds `offset` in `text` (() if none does)."""
    doc = load_document(path, text)
    inside = [p for p, pair in iter_pairs(doc.root) if pair.key.span.start <= offset <= max(pair.key.span.end,
                                                                                             pair.value.span.end)]
    return max(inside, key=len, default=())


def named(report: FixReport, path: Path) -> tuple[set[str], list[tuple]]:
    """What the fixes applied to `path` name: the words of the finding's message, of the fix's title and of the text
    the fix writes (key names appear plainly or in backticks, dotted or not), and the key path each finding points
    at."""
    words: set[str] = set()
    paths: list[tuple] = []
    for applied in report.file(path).applied:
        diag = applied.diagnostic
        written = " ".join(edit.text for edit in diag.fix.edits)
        words.update(re.findall(r"\w+", f"{diag.message} {diag.fix.title} {written}"))
        if diag.path.resolve() == diag.fix.path.resolve():
            paths.append(located_path(path, applied.text, diag.span.start))
    return words, [p for p in paths if p]


def explained(changed: tuple, words: set[str], paths: list[tuple]) -> bool:
    """A changed key path is one the fixes named: a named word in it, or it lies on a named path (either way)."""
    return any(str(part) in words for part in changed) or any(
        changed[:len(p)] == p or p[:len(changed)] == changed for p in paths)


@pytest.fixture(scope="module")
def fixed(tmp_path_factory) -> Iterator[tuple[Path, dict[Path, str], FixReport]]:
    """A copy of one source, fixed once with --unsafe-fixes; yields (root, original texts, report)."""
    root = tmp_path_factory.mktemp("corpus") / "copy"
    shutil.copytree(CORPUS, root, copy_function=shutil.copyfile)  # a writable scratch copy: the checkout may be 0444
    files = config_files(root)
    originals = {p: text_of(root / p) for p in files}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        report = fix_paths(files, OPTIONS, unsafe=True)
        assert write_changed(report) == []
        yield root, originals, report


def test_fixes_raise_no_problem(fixed):
    _, _, report = fixed
    assert report.problems == []


def test_every_file_still_parses_and_only_named_keys_change(fixed):
    root, originals, report = fixed
    for path, before in originals.items():
        after = text_of(root / path)
        doc = load_document(path, after)
        if after == before:
            continue
        old, new = (yaml.safe_load(before), yaml.safe_load(after)) if doc.format == "yaml" else (
            load_document(path, before).data, doc.data)
        words, paths = named(report, path)
        stray = [p for p in changed_paths(old, new) if not explained(p, words, paths)]
        assert stray == [], f"{path}: {stray} changed, but the fixes named only {sorted(words)} and {paths}"


def test_a_second_run_changes_nothing(fixed):
    root, originals, _ = fixed
    done = CliRunner().invoke(cli, ["fix", "--unsafe-fixes", *map(str, originals)])
    assert done.exit_code == 0 and done.stdout == "", done.stdout[:2000]


def test_no_fixable_finding_is_left(fixed):
    _, originals, _ = fixed
    left = [d for d in lint_paths(list(originals), OPTIONS).diagnostics if d.fix and d.fix.applies(unsafe=True)]
    assert left == [], [f"{d.path}:{d.span.line}: {d.code} {d.message}" for d in left]
