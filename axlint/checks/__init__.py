"""Python checks that rule packs name with `check:`; each module registers its functions on import
(`axlint.rule.register_check`, which also states what each check supplies)."""
from __future__ import annotations

import importlib

from axlint.rule import CHECKS, Check

MODULES = ("axolotl", "conflicts", "ddp", "deepspeed", "lora", "memory", "prerequisites", "schema", "startup", "syntax",
           "targets")
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

