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


def cache_dir() -> Path | None:
    """Where axlint caches what it derives (parsed rule packs, compiled dataclass methods): $AXLINT_CACHE_DIR, else
    $XDG_CACHE_HOME/axlint or ~/.cache/axlint; None when there is no home folder to put it in (then nothing is
    cached)."""
    if os.environ.get("AXLINT_CACHE_DIR"):
        return Path(os.environ["AXLINT_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "axlint"
    folder = home()
    return folder / ".cache" / "axlint" if folder is not None else None
