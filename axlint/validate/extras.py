"""The `validate` extra: torch, deepspeed, transformers and peft must import."""
from __future__ import annotations

import importlib

VALIDATE_MODULES = ("torch", "deepspeed", "transformers", "peft")
MESSAGE = "axlint validate needs the 'validate' extra: pip install 'axlint[validate]'"


class MissingExtraError(RuntimeError):
    """A feature's optional dependencies are not installed (the CLI exits 2)."""


def require_validate_extras() -> None:
    """Raise MissingExtraError naming the install command when a module of the extra does not import."""
    for name in VALIDATE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise MissingExtraError(f"{MESSAGE} ({name}: {exc})") from None
