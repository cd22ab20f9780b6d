"""Fixes as text edits on the original file (never a re-dump): Edit, Fix, and applying edits to a text."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path


class Applicability(str, Enum):
    SAFE = "safe"  # the run trains the same
    UNSAFE = "unsafe"  # changes training behaviour (e.g. micro batch 8 -> 2 with gradient accumulation x4)
    DISPLAY_ONLY = "display-only"  # shown, never applied


@dataclass(frozen=True, order=True)
class Edit:
    """Replace text[start:end] (0-based character offsets) with `text`; start == end inserts."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    path: Path
    edits: tuple[Edit, ...]
    applicability: Applicability
    title: str

    def applies(self, unsafe: bool) -> bool:
        if self.applicability is Applicability.SAFE:
            return True
        return unsafe and self.applicability is Applicability.UNSAFE


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, list[Edit]]:
    """Apply non-overlapping edits in offset order; returns the new text and the edits skipped for overlap."""
    out, pos, skipped, last_end = [], 0, [], -1
    for edit in sorted(set(edits)):
        if edit.start < last_end:
            skipped.append(edit)
            continue
        out.append(text[pos:edit.start])
        out.append(edit.text)
        pos = last_end = edit.end
    out.append(text[pos:])
    return "".join(out), skipped

