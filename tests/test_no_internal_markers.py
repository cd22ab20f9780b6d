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

from axlint.engine import builtin_rules_dir, load_rules

ROOT = Path(__file__).resolve().parents[1]
NOTES = "shar" + "ed"  # the notes folder beside the checkout, spelled apart (tests/test_self_contained.py)
MARKERS = re.compile(r"§|\(#\d+\)|\.\.\/" + NOTES + "|" + NOTES + r"\/reference"
                     r"|\b(?:deepspeed|axolotl|memory-model|model-archs)\.md\b")

NOT_YET_CLEANED: set[str] = set()
"""Files other work in progress owns (the DeepSpeed pack and its checks, the run model, the bundled schemas and
their sources, the GPU validation spec); their owners replace the markers there, and the lead empties this set
once those branches are merged. docs/rules.md is checked except for the sections generated from these packs."""

NOT_YET_CLEANED_PACKS = {Path(p).stem for p in NOT_YET_CLEANED if p.startswith("rules/")}


def _files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(builtin_rules_dir().glob("*.yaml")),
             *sorted((ROOT / "tools").glob("*.py"))]
    for pattern in ("*.py", "*.json"):
        files += sorted((ROOT / "axlint").rglob(pattern))
    return [f for f in files if f.relative_to(ROOT).as_posix() not in NOT_YET_CLEANED]


def _text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path == ROOT / "docs" / "rules.md":
        packs = {r.code.lower(): r.pack for r in load_rules()}
        sections = re.split(r'(?=<a id=")', text)
        text = "".join(s for s in sections
                       if packs.get(s[len('<a id="'):].split('"', 1)[0]) not in NOT_YET_CLEANED_PACKS)
    return text


FILES = _files()


@pytest.mark.parametrize("path", FILES, ids=[f.relative_to(ROOT).as_posix() for f in FILES])
def test_no_internal_reference_markers(path):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
            for n, line in enumerate(_text(path).splitlines(), 1) if MARKERS.search(line)]
    assert not hits, "internal reference markers (cite the upstream file and version instead):\n" + "\n".join(hits)


def test_rule_messages_and_docs_have_no_markers():
    for rule in load_rules():
        if rule.pack in NOT_YET_CLEANED_PACKS:
            continue
        for field, text in [("message", rule.message), *rule.docs.items()]:
            assert not MARKERS.search(str(text)), f"{rule.code} {field}: {text}"


def test_the_exceptions_still_exist():
    """An exception whose file is gone (or already clean) must leave the list."""
    for name in NOT_YET_CLEANED:
        path = ROOT / name
        assert path.is_file(), f"{name} no longer exists; remove it from NOT_YET_CLEANED"
        assert MARKERS.search(path.read_text(encoding="utf-8")), f"{name} is clean now; remove it from NOT_YET_CLEANED"
