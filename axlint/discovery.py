"""Which files a command reads: paths, directories and globs expanded the way ruff does it.

- A file named on the command line is read whatever its suffix (with `--force-exclude`, the exclude patterns
  apply to it too, so a pre-commit hook honours them).
- A directory is walked recursively for `*.yml`, `*.yaml` and `*.json`, skipping the usual tool and environment
  folders (`.git`, `.venv`, `node_modules`, ...), what `exclude` / `extend-exclude` name, and what the
  repository's `.gitignore` files and `.git/info/exclude` ignore (gitignore semantics, pathspec's implementation).
- A path with `*`, `?` or `[` that is not a file is a glob (`**` recursive), matched from the current folder.
- A path that does not exist, a glob that matches nothing and an unreadable file are usage errors (exit 2).

Whether a file found this way is a config is decided later, by its content (axlint.kind).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from axlint.paths import is_dir, is_file

SUFFIXES = (".yml", ".yaml", ".json")
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__",
    "_build", "buck-out", "dist", "node_modules", "site-packages", "venv",
)
"""Folders never walked into unless named (ruff's default `exclude`)."""


class DiscoveryError(Exception):
    """A path the user named cannot be read: a usage error (exit 2) that no rule selection hides."""


@dataclass(frozen=True)
class Excludes:
    """Exclude patterns (gitignore syntax) relative to `base`, and whether .gitignore files count."""

    patterns: tuple[str, ...] = DEFAULT_EXCLUDE
    base: Path = field(default_factory=Path.cwd)
    respect_gitignore: bool = True

    def spec(self) -> Any:
        import pathspec  # only when a directory is walked or --force-exclude applies

        return pathspec.GitIgnoreSpec.from_lines(self.patterns)


def _has_magic(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def discover(paths: Iterable[Path], excludes: Excludes | None = None, *, force_exclude: bool = False) -> list[Path]:
    """The files to read, in the order given (directories and globs sorted), each once."""
    excludes = excludes or Excludes()
    found: list[Path] = []
    ignore = _Ignore(excludes)
    for path in paths:
        text = str(path)
        if is_dir(path):
            found += sorted(_walk(path, ignore))
        elif os.path.lexists(path):  # a broken symlink too; False for a name the OS refuses
            _check_readable(path)
            if not (force_exclude and ignore.excluded(path, is_dir=False)):
                found.append(path)
        elif _has_magic(text):
            import glob

            matches = sorted(Path(m) for m in glob.glob(text, recursive=True))
            files = [m for m in matches if m.is_file()] + [f for m in matches if m.is_dir() for f in sorted(_walk(m, ignore))]
            if not matches:
                raise DiscoveryError(f"{text}: no file matches this pattern")
            found += [f for f in files if not ignore.excluded(f, is_dir=False)]
        else:
            raise DiscoveryError(f"{text}: no such file or directory")
    unique: dict[str, Path] = {}
    for f in found:
        unique.setdefault(os.path.abspath(f), f)
    return list(unique.values())


def _check_readable(path: Path) -> None:
    if not is_file(path):
        if path.is_symlink() and not path.exists():
            raise DiscoveryError(f"{path}: broken symbolic link")
        raise DiscoveryError(f"{path}: not a regular file")
    if not os.access(path, os.R_OK):
        raise DiscoveryError(f"{path}: permission denied")


def _walk(root: Path, ignore: "_Ignore") -> Iterable[Path]:
    for folder, dirs, files in os.walk(root, onerror=_raise):
        dirs[:] = sorted(d for d in dirs if not ignore.excluded(os.path.join(folder, d), is_dir=True))
        for name in files:
            candidate = os.path.join(folder, name)
            if os.path.splitext(name)[1].lower() in SUFFIXES and not ignore.excluded(candidate, is_dir=False):
                yield Path(candidate)


def _raise(error: OSError) -> None:
    raise DiscoveryError(f"{error.filename}: cannot read the folder: {error.strerror}")


class _Ignore:
    """Exclude patterns and .gitignore files; gitignore specs are read once per folder, and the folders with one
    between a folder and its repository's top are found once per folder. Paths are handled as absolute strings
    (``os.path``): a walk asks this for every file and folder it meets."""

    def __init__(self, excludes: Excludes) -> None:
        self.excludes = excludes
        self._exclude_spec: Any = None
        self._base = ""
        self._git: dict[Path, Any] = {}
        self._chains: dict[str, tuple[tuple[str, Any], ...]] = {}

    def excluded(self, path: Path | str, *, is_dir: bool) -> bool:
        absolute = os.path.abspath(path)
        if self._matches_exclude(absolute, is_dir):
            return True
        return self.excludes.respect_gitignore and self._git_ignored(absolute, is_dir)

    def _matches_exclude(self, path: str, is_dir: bool) -> bool:
        if is_dir and os.path.basename(path) in self.excludes.patterns:  # the common case, without pathspec
            return True
        if self._exclude_spec is None:
            self._base = os.path.abspath(self.excludes.base)
            plain = all(p and not set(p) & set("/*?[]!\\# ") for p in self.excludes.patterns)
            self._exclude_spec = frozenset(self.excludes.patterns) if plain else self.excludes.spec()
        rel = _relative(path, self._base) if _under(path, self._base) else os.path.basename(path)
        if isinstance(self._exclude_spec, frozenset):  # names only: one excludes whatever it names at any depth
            return any(part in self._exclude_spec for part in rel.split("/"))
        return bool(self._exclude_spec.match_file(rel + ("/" if is_dir else "")))

    def _git_ignored(self, path: str, is_dir: bool) -> bool:
        """gitignore semantics: the deepest .gitignore with a matching pattern decides (negations included)."""
        suffix = "/" if is_dir else ""
        for folder, spec in self._chain(os.path.dirname(path)):
            result = spec.check_file(_relative(path, folder) + suffix)
            if result.include is not None:
                return bool(result.include)
        return False

    def _chain(self, folder: str) -> tuple[tuple[str, Any], ...]:
        """(folder, spec) for `folder` and each folder above it up to its repository's top that has ignore
        patterns, deepest first; empty outside a repository."""
        chain = self._chains.get(folder)
        if chain is None:
            top = git_root(Path(folder))
            folders: list[Path] = []
            if top is not None:
                here = Path(folder)
                folders = [here, *here.parents]
                folders = folders[:folders.index(top) + 1]
            chain = self._chains[folder] = tuple(
                (str(f), spec) for f in folders if (spec := self._spec_for(f, top)) is not None)
        return chain

    def _spec_for(self, folder: Path, top: Path | None) -> Any:
        if folder not in self._git:
            lines = _read_lines(folder / ".gitignore")
            if folder == top:
                lines += _read_lines(top / ".git" / "info" / "exclude")
            if lines:
                import pathspec

                self._git[folder] = pathspec.GitIgnoreSpec.from_lines(lines)
            else:
                self._git[folder] = None
        return self._git[folder]


def _under(path: str, folder: str) -> bool:
    """Whether absolute `path` is `folder` or inside it."""
    return path == folder or path.startswith(folder if folder.endswith(os.sep) else folder + os.sep)


def _relative(path: str, folder: str) -> str:
    """`path` relative to `folder` (which holds it), in gitignore's form: "/" between parts, "." for the folder."""
    if path == folder:
        return "."
    rel = path[len(folder if folder.endswith(os.sep) else folder + os.sep):]
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


@lru_cache(maxsize=4096)
def git_root(folder: Path) -> Path | None:
    """The nearest folder at or above `folder` that holds `.git` (None outside a repository)."""
    if (folder / ".git").exists():
        return folder
    return None if folder.parent == folder else git_root(folder.parent)
