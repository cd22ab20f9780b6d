"""File-system questions that never raise: a path from a config may be too long, hold a NUL byte, loop through
symlinks or sit where HOME is unset; each of these is an answer ("no such file"), never an exception."""
from __future__ import annotations

import os
import stat
from pathlib import Path


def is_file(path: Path) -> bool:
    """A regular file (through symlinks); False for every OS or value error (ENAMETOOLONG, ELOOP, NUL byte...)."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """A folder (through symlinks); False for every OS or value error."""
    try:
        return stat.S_ISDIR(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def home() -> Path | None:
    """The user's home folder, or None where it cannot be determined (HOME unset and no passwd entry)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError, OSError):
        return None


def expand_user(path: str) -> Path:
    """`~` expanded where a home folder is known; the path as written otherwise."""
    try:
        return Path(os.path.expanduser(path))
    except (RuntimeError, KeyError, OSError, ValueError):
        return Path(path)
