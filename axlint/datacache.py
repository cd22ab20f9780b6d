"""Parsed data files kept between runs in the cache folder, as ``marshal``.

`axlint check` reads the same files on every run: the built-in rule packs (YAML with docs and tests), the bundled
JSON Schema of each release it checks against (and their index, `versions.json`) and the model catalog. Parsing
them was several milliseconds of each start-up; ``marshal`` gives the same dicts and lists back about three times
faster than ``json`` (and a hundred times faster than YAML). Each entry is keyed by the source's length and CRC-32
(``hashlib`` alone costs more to import), so an edited file is parsed again, and named for the interpreter's
bytecode magic number as a ``__pycache__`` file is, so that two Pythons sharing the folder keep one entry each.
Entries are written atomically, only for data that ``marshal`` gives back equal; a cache that cannot be read or
written is skipped.
"""
from __future__ import annotations

import marshal
import os
import zlib
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any, Callable

from axlint.paths import cache_dir


def cache_file(name: str) -> Path | None:
    """``data/<name>.<magic>.marshal`` in the cache folder, or None where there is no cache folder."""
    folder = cache_dir()
    return folder / "data" / f"{name}.{MAGIC_NUMBER.hex()}.marshal" if folder is not None else None


def load(path: Path, name: str, parse: Callable[[bytes], Any]) -> Any:
    """``parse(path.read_bytes())``, from the cache entry ``name`` while the file is unchanged. Errors reading
    ``path`` or parsing it propagate; errors of the cache do not."""
    raw = path.read_bytes()
    cache = cache_file(name)
    if cache is None:
        return parse(raw)
    digest = f"{len(raw)}-{zlib.crc32(raw):08x}"
    try:
        stored, data = marshal.loads(cache.read_bytes())
        if stored == digest:
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    data = parse(raw)
    _write(cache, digest, data)
    return data


def load_json(path: Path, name: str) -> Any:
    """A UTF-8 JSON file, through ``load``."""
    return load(path, name, parse_json)


def parse_json(raw: bytes) -> Any:
    """JSON as `json.load` reads a file opened with `encoding="utf-8"`."""
    import json  # on a cache miss only: importing json compiles its regexes, ~2 ms of a run that needs none

    return json.loads(raw.decode("utf-8"))


def _write(cache: Path, digest: str, data: Any) -> None:
    """Atomic write of one entry (a temporary file, then ``os.replace``)."""
    try:
        blob = marshal.dumps((digest, data))
        if marshal.loads(blob)[1] != data:
            return
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, cache)
    except (OSError, ValueError):
        pass
