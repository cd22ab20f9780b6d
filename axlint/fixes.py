"""A fix: text edits of one file (never a re-dump), how safe they are, and a title that names what changes."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from axlint import edits
from axlint.document import Document, KeyPath
from axlint.edits import Edit


class Applicability(str, Enum):
    SAFE = "safe"  # the run trains the same
    UNSAFE = "unsafe"  # changes training behaviour (e.g. micro batch 8 -> 2 with gradient accumulation x4)
    DISPLAY_ONLY = "display-only"  # shown, never applied


@dataclass(frozen=True)
class Fix:
    """The edits of one file that make one fix, how safe they are to apply, and their title."""

    path: Path
    edits: tuple[Edit, ...]
    applicability: Applicability
    title: str

    def applies(self, unsafe: bool) -> bool:
        if self.applicability is Applicability.SAFE:
            return True
        return unsafe and self.applicability is Applicability.UNSAFE


def key_fix(doc: Document, keys: KeyPath, action: str, value: Any, applicability: Applicability,
            title: str) -> Fix | None:
    """A fix of one key of `doc`: `set` it to `value`, `delete` it, or `rename` it to `value`; None when the
    document already reads that way (no edit)."""
    if action == "set":
        changes = edits.set_value(doc, keys, value)
    elif action == "delete":
        changes = edits.delete_key(doc, keys)
    elif action == "rename":
        changes = edits.rename_key(doc, keys, value)
    else:
        raise ValueError(f"unknown fix action {action!r}")
    return Fix(doc.path, tuple(changes), applicability, title) if changes else None
