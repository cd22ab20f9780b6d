"""Regular expressions compiled on first use: axlint's own that most checks never need, and PyYAML's that axlint
never uses, left in `re`'s cache before `yaml` compiles them at import.

Compiling a pattern runs `re`'s parser and compiler in Python, 0.1 to 0.4 ms each here; a module-level
`re.compile` pays that at import, on every run. axlint's patterns that only some inputs need (the JSON parser's,
`--hardware` sizes, the key scan of a file that does not parse) are `LazyPattern`s instead.

PyYAML's pure-Python reader compiles `yaml.reader.Reader.NON_PRINTABLE`, a class of every printable Unicode
character, when `yaml` is imported: about 5 ms, the largest single item of a check's start-up (an eighth of the
instructions it runs), and `SafeConstructor.timestamp_regexp`, which only a timestamp scalar (`2024-01-01`) uses.
axlint reads YAML with libyaml (`CSafeLoader`), whose reader is C and never uses the first. The console script
leaves a `LazyPattern` for each in `re`'s cache, under the key `re.compile` looks up (the pattern's type, the
pattern, the flags), so that `yaml` gets the stand-in; the pure-Python loader (where libyaml is missing) compiles the
reader's pattern the first time it reads, a timestamp compiles the other. Should PyYAML change a pattern or `re`
its cache, the stand-in is never found and `yaml` compiles the pattern at import as before.
"""
from __future__ import annotations

import re
from typing import Any

YAML_NON_PRINTABLE = "[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]"
"""The pattern of `yaml.reader.Reader.NON_PRINTABLE` (PyYAML 5.1 to 6.0)."""
YAML_TIMESTAMP = (r'''^(?P<year>[0-9][0-9][0-9][0-9])
                -(?P<month>[0-9][0-9]?)
                -(?P<day>[0-9][0-9]?)
                (?:(?:[Tt]|[ \t]+)
                (?P<hour>[0-9][0-9]?)
                :(?P<minute>[0-9][0-9])
                :(?P<second>[0-9][0-9])
                (?:\.(?P<fraction>[0-9]*))?
                (?:[ \t]*(?P<tz>Z|(?P<tz_sign>[-+])(?P<tz_hour>[0-9][0-9]?)
                (?::(?P<tz_minute>[0-9][0-9]))?))?)?$''', re.X)
"""The pattern and flags of `yaml.constructor.SafeConstructor.timestamp_regexp` (PyYAML 6.0), character for character:
its verbose-mode layout is part of the key `re` caches it under."""


class LazyPattern:
    """Stands for `re.compile(pattern, flags)`: the first attribute other than `pattern` compiles it and is taken
    from the compiled pattern, as is every later one (kept on the instance, so later reads cost what a compiled
    pattern's do). It compiles `(?:pattern)`, which matches exactly what `pattern` does, because
    `re.compile(pattern, flags)` could find this stand-in in the cache again."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(f"(?:{self.pattern})", self._flags)
        value = getattr(self._compiled, name)
        self.__dict__[name] = value
        return value


def defer(pattern: str, flags: int = 0) -> None:
    """Leave a `LazyPattern` for `pattern` where `re.compile(pattern, flags)` looks first."""
    cache = getattr(re, "_cache", None)
    if isinstance(cache, dict):
        cache.setdefault((str, pattern, flags), LazyPattern(pattern, flags))
