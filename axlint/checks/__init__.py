"""Python checks that rule packs name with `check:`; each module registers its functions on import."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:
    from axlint.diagnostics import Span
    from axlint.document import Document
    from axlint.engine import Rule
    from axlint.fixes import Fix
    from axlint.run import TrainingRun


@dataclass
class Hit:
    """One place where a rule fires; the engine turns it into a Diagnostic with `rule.message` formatted."""

    doc: "Document"
    span: "Span"
    args: dict[str, Any] = field(default_factory=dict)
    fix: "Fix | None" = None


Check = Callable[["TrainingRun", "Rule"], Iterable[Hit]]
CHECKS: dict[str, Check] = {}


def register_check(name: str) -> Callable[[Check], Check]:
    def deco(fn: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"check {name!r} registered twice")
        CHECKS[name] = fn
        return fn

    return deco


MODULES = ("axolotl", "deepspeed", "memory", "schema", "startup", "syntax", "targets")
"""The modules of this package (a test keeps the list equal to the files: listing them is faster at start-up than
scanning the folder)."""
_loaded = False


def load_builtin_checks() -> dict[str, Check]:
    """Import every module of this package once (each registers its checks)."""
    global _loaded
    if not _loaded:
        for name in MODULES:
            importlib.import_module(f"{__name__}.{name}")
        _loaded = True
    return CHECKS
