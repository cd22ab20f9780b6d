"""Compiled code of the methods `dataclasses` generates, kept between runs of the console script.

`dataclasses` writes the source of every method it generates (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``,
``__setattr__``...) and runs it with ``exec``; on Python 3.10 to 3.12 that is one compile per method, about 300 for
the ~60 dataclasses `axlint check` builds, and the largest single part of its start-up. The code object depends only
on that text, so the console script keeps the compiled objects in one ``marshal`` file in the cache folder, named
for the interpreter's bytecode magic number as ``__pycache__`` files are, and later runs execute them instead of
compiling the text again. Only ``exec`` as the ``dataclasses`` module calls it is replaced, and only in the console
script's process: a program that imports axlint keeps the standard library as it is. Like ``__pycache__``, nothing is
written under ``PYTHONDONTWRITEBYTECODE`` (``sys.dont_write_bytecode``); a cache already there is still read.
"""
from __future__ import annotations

import builtins
import marshal
import os
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

from axlint.paths import cache_dir


KEEP_UNUSED_UP_TO = 1.0
"""A run that writes the cache keeps the entries it did not use while they are at most this many times the ones
it used (the methods of commands and models other runs need); past that they are dropped. Entries accumulate with
every change to a dataclass (an upgrade of axlint, an edit of a checkout): without a bound the file, read whole by
every run, only grows."""


class CodeCache:
    """Source text -> code object, loaded from ``path`` and written back (``write``) when a run compiled something
    new."""

    def __init__(self, path: Path | None, *, write: bool = True) -> None:
        self.path, self.write = path, write
        self.codes: dict[str, CodeType] = _read(path) if path is not None else {}
        self.used: set[str] = set()
        self.added = 0

    def exec(self, source: Any, scope: dict[str, Any] | None = None, names: dict[str, Any] | None = None) -> None:
        """``exec(source, globals, locals)`` for ``dataclasses``: source text is compiled once and taken from the
        cache after that."""
        if isinstance(source, str):
            code = self.codes.get(source)
            if code is None:
                code = self.codes[source] = compile(source, "<string>", "exec")
                self.added += 1
            self.used.add(source)
            source = code
        builtins.exec(source, scope, names)

    def save(self) -> None:
        """Write the cache when this run added to it (atomically; a folder that cannot be written is skipped),
        without the entries it did not use when they outnumber the ones it used (`KEEP_UNUSED_UP_TO`)."""
        if not self.added or self.path is None or not self.write:
            return
        codes = self.codes
        if len(codes) - len(self.used) > KEEP_UNUSED_UP_TO * len(self.used):
            codes = {source: codes[source] for source in self.used}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps(codes))
            os.replace(tmp, self.path)
        except OSError:
            pass


def _read(path: Path) -> dict[str, CodeType]:
    """The cached code objects, or none when the file is missing, unreadable or not a cache of this interpreter."""
    try:
        codes = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict) or not all(isinstance(k, str) and isinstance(v, CodeType) for k, v in codes.items()):
        return {}
    return codes


def cache_file() -> Path | None:
    """``dataclass-code-<magic>.marshal`` in the cache folder: one file per bytecode format."""
    folder = cache_dir()
    return folder / f"dataclass-code-{MAGIC_NUMBER.hex()}.marshal" if folder is not None else None


def install() -> CodeCache:
    """Route the ``dataclasses`` module's ``exec`` through a cache read from ``cache_file()``; the caller saves it."""
    import dataclasses
    import sys

    cache = CodeCache(cache_file(), write=not sys.dont_write_bytecode)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]  # the module's globals come before builtins
    return cache
