"""The `validate` extra: torch, deepspeed, transformers and peft must be installed."""
from __future__ import annotations

import importlib.util

VALIDATE_MODULES = ("torch", "deepspeed", "transformers", "peft")
MESSAGE = "axlint validate needs the 'validate' extra: pip install 'axlint[validate]'"


class MissingExtraError(RuntimeError):
    """A feature's optional dependencies are not installed (the CLI exits 2)."""


def missing_modules() -> list[str]:
    """The modules of the extra that are not installed. Found without importing them: only the rank processes
    import torch and deepspeed, so the launching process stays light (importing all four costs seconds)."""
    return [name for name in VALIDATE_MODULES if importlib.util.find_spec(name) is None]


def require_validate_extras() -> None:
    """Raise MissingExtraError naming the install command when a module of the extra is not installed."""
    missing = missing_modules()
    if missing:
        raise MissingExtraError(f"{MESSAGE} (not installed: {', '.join(missing)})")
