"""The values that flow out of the engine: spans, severities, diagnostics."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from axlint.fixes import Fix


class Span(NamedTuple):
    """A region of a file: 1-based line/col (end exclusive col), 0-based character offsets. A named tuple: a
    document makes one per node, and a tuple is made in a third of a frozen dataclass's time."""

    line: int
    col: int
    end_line: int
    end_col: int
    start: int
    end: int

    @classmethod
    def file_start(cls) -> "Span":
        return cls(1, 1, 1, 1, 0, 0)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


@dataclass
class Diagnostic:
    """One finding, located in one file."""

    path: Path
    span: Span
    code: str
    name: str
    severity: Severity
    message: str
    category: str = ""
    fix: "Fix | None" = None
    extra: dict[str, Any] = field(default_factory=dict)

    def sort_key(self) -> tuple:
        return (str(self.path), self.span.line, self.span.col, self.code)
