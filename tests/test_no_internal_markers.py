"""What users read carries no internal reference markers: no section signs, no bare "(#90)" note numbers, no
pointers into notes that ship nowhere (deepspeed.md, axolotl.md, memory-model.md, the reference folder beside the
checkout). Where such a marker carried meaning, the text cites the upstream file and version instead.

Scanned: every rule pack (messages and docs), README.md, docs/*.md, and the text of every axlint/**/*.py,
axlint/**/*.json and tools/*.py file (docstrings, strings and comments alike).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from axlint.packs import builtin_rules_dir, load_rules

ROOT = Path(__file__).resolve().parents[1]
NOTES = "shar" + "ed"  # the notes folder beside the checkout, spelled apart (tests/test_self_contained.py)
MARKERS = re.compile(r"§|\(#\d+\)|\.\.\/" + NOTES + "|" + NOTES + r"\/reference"
                     r"|\b(?:deepspeed|axolotl|memory-model|model-archs)\.md\b")


def _files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(builtin_rules_dir().glob("*.yaml")),
             *sorted((ROOT / "tools").glob("*.py"))]
    for pattern in ("*.py", "*.json"):
        files += sorted((ROOT / "axlint").rglob(pattern))
    return files


FILES = _files()


@pytest.mark.parametrize("path", FILES, ids=[f.relative_to(ROOT).as_posix() for f in FILES])
def test_no_internal_reference_markers(path):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if MARKERS.search(line)]
    assert not hits, "internal reference markers (cite the upstream file and version instead):\n" + "\n".join(hits)


def test_rule_messages_and_docs_have_no_markers():
    for rule in load_rules():
        for field, text in [("message", rule.message), *rule.docs.items()]:
            assert not MARKERS.search(str(text)), f"{rule.code} {field}: {text}"

