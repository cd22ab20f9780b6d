"""A regular expression compiled on first use, left in `re`'s cache before a library compiles it at import.

PyYAML's pure-Python reader compiles `yaml.reader.Reader.NON_PRINTABLE`, a class of every printable Unicode
character, when `yaml` is imported: about 5 ms, the largest single item of a check's start-up (an eighth of the
instructions it runs). axlint reads YAML with libyaml (`CSafeLoader`), whose reader is C and never uses it. The
console script leaves a `LazyPattern` for it in `re`'s cache, under the key `re.compile` looks up (the pattern's
type, the pattern, the flags), so that `yaml` gets the stand-in; the pure-Python loader (where libyaml is missing)
compiles the pattern the first time it reads. Should PyYAML change the pattern or `re` its cache, the stand-in is
never found and `yaml` compiles the pattern at import as before.
"""
from __future__ import annotations

import re
from typing import Any

YAML_NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
"""The pattern of `yaml.reader.Reader.NON_PRINTABLE` (PyYAML 5.1 to 6.0)."""


class LazyPattern:
    """Stands for `re.compile(pattern)`: the first attribute other than `pattern` compiles it and is taken from the
    compiled pattern, as is every later one. It compiles `(?:pattern)`, which matches exactly what `pattern` does,
    because `re.compile(pattern)` would find this stand-in in the cache again."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(f"(?:{self.pattern})")
        return getattr(self._compiled, name)


def defer(pattern: str) -> None:
    """Leave a `LazyPattern` for `pattern` (no flags) where `re.compile(pattern)` looks first."""
    cache = getattr(re, "_cache", None)
    if isinstance(cache, dict):
        cache.setdefault((str, pattern, 0), LazyPattern(pattern))
