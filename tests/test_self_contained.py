"""The tests read only the repository's own files: no absolute paths, nothing beside the checkout (a fresh clone
has no sibling folders), no climbing above the repository root."""
from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from tests.corpus import CORPUS, ROOT, corpus_files

# This file holds such paths as test data for the checker itself, so it is the one file not scanned.
TESTS = sorted(p for p in ROOT.joinpath("tests").rglob("*.py") if p.name != Path(__file__).name)
# Paths a test may name because they mean "nowhere" (or a device no test reads to its end) on every machine.
HERMETIC = {"/nonexistent", "/dev/null", "/dev/zero"}
SIBLING = "sha" "red"  # the folder beside the checkout in this workplace, spelled apart so this file names no path
CLIMB = re.compile(r"parents\[(\d+)\]((?:\.parent)*)|(?:\.parent){3,}")


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def outside_references(path: Path, root: Path = ROOT) -> list[str]:
    """Every place in one test file that names a path outside the checkout, as `file:line: why`."""
    rel = path.relative_to(root)
    found = []
    for line, value in _string_constants(path):
        for word in re.split(r"[\s\"'`=:,()]+", value):
            if word.startswith("/") and len(word) > 1 and word[1].isalpha() and word not in HERMETIC:
                found.append(f"{rel}:{line}: absolute path {word!r}")
            if word.startswith("../") or "/../" in word or "shared/" in word:
                found.append(f"{rel}:{line}: path outside the repository {word!r}")
        if value == SIBLING:  # a path component: Path(...) / <the folder beside the checkout>
            found.append(f"{rel}:{line}: path outside the repository {value!r}")
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for match in CLIMB.finditer(text):
            depth = int(match.group(1)) + (match.group(2) or "").count(".parent") if match.group(1) else 3
            if depth > 1:  # tests/x.py: parents[0] is tests/, parents[1] the root; more climbs out of it
                found.append(f"{rel}:{number}: climbs above the repository root ({match.group(0)})")
    return found


def test_no_test_names_a_path_outside_the_checkout():
    assert TESTS, "no test files found"
    problems = [p for path in TESTS for p in outside_references(path)]
    assert problems == []


def test_the_checker_catches_what_it_is_for(tmp_path):
    bad = tmp_path / "tests" / "test_bad.py"
    bad.parent.mkdir()
    sibling = SIBLING
    bad.write_text('from pathlib import Path\n'
                   f'A = Path("{os.sep}work/{sibling}/corpus")\n'
                   f'B = Path(__file__).parents[1].parent / "{sibling}"\n'
                   f'C = "../{sibling}/reference/x.md"\n'
                   'D = Path(__file__).parent.parent.parent\n'
                   f'E = Path("{os.sep}nonexistent")\n', encoding="utf-8")
    got = outside_references(bad, tmp_path)
    lines = sorted({int(p.split(":")[1]) for p in got})
    assert lines == [2, 3, 4, 5]


def test_the_vendored_corpus_is_complete_and_licensed():
    files = corpus_files()
    assert sum(p.suffix in (".yml", ".yaml") for p in files) == 252
    assert sum(p.suffix == ".json" for p in files) == 8
    assert "Apache License" in (CORPUS / "LICENSE").read_text(encoding="utf-8")
    assert "067b021c8b87a9e5e380b9173c704cf7340e30f5" in (CORPUS / "NOTICE").read_text(encoding="utf-8")
