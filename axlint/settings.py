"""Settings from `[tool.axlint]` in pyproject.toml or `.axlint.toml`, the closest one to the files checked.

Strict: an unknown key or a value of the wrong type is a usage error (exit 2), reported with the file.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from axlint.paths import is_dir, is_file


class SettingsError(Exception):
    pass


@dataclass
class Settings:
    """The settings read from `source` (`.axlint.toml`, or `[tool.axlint]` in pyproject.toml); a key not written
    keeps its default."""

    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    rules_dirs: list[str] = field(default_factory=list)
    hardware: str | None = None
    host_memory: str | None = None
    output_format: str | None = None
    model_config: str | None = None
    axolotl_version: str | None = None
    deepspeed_version: str | None = None
    exclude: list[str] | None = None
    extend_exclude: list[str] = field(default_factory=list)
    respect_gitignore: bool = True
    axolotl_validators: bool = False
    source: Path | None = None

    def resolve(self, value: str) -> Path:
        """A path written in the settings file is relative to that file."""
        base = self.source.parent if self.source else Path.cwd()
        return (base / value).resolve()


_TYPES = {"select": list, "ignore": list, "extend-select": list, "rules-dirs": list, "hardware": str,
          "host-memory": str,
          "output-format": str, "model-config": str,
          "axolotl-version": str, "deepspeed-version": str, "exclude": list, "extend-exclude": list,
          "respect-gitignore": bool, "axolotl-validators": bool}
_FORMATS = ("full", "concise", "json", "sarif", "github")


def find_settings_file(start: Path) -> Path | None:
    """The closest `.axlint.toml`, or `pyproject.toml` with a [tool.axlint] table, from `start` upwards."""
    folder = start if is_dir(start) else start.parent
    try:
        folders = [folder.resolve(), *folder.resolve().parents]
    except (OSError, RuntimeError, ValueError):  # a name too long, a symlink loop
        return None
    for d in folders:
        own = d / ".axlint.toml"
        if is_file(own):
            return own
        py = d / "pyproject.toml"
        if is_file(py) and "[tool.axlint" in _read(py):
            return py
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def load_settings(path: Path | None) -> Settings:
    if path is None:
        return Settings()
    if sys.version_info >= (3, 11):  # imported here: most runs have no settings file
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read settings: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: invalid TOML: {exc}") from None
    tool = data.get("tool", {}) if path.name == "pyproject.toml" else {"axlint": data}
    table = tool.get("axlint", {}) if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.axlint] must be a table")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _TYPES:
            known = ", ".join(sorted(_TYPES))
            raise SettingsError(f"{path}: unknown setting `{key}` (known: {known})")
        want = _TYPES[key]
        if not isinstance(value, want) or (want is list and not all(isinstance(v, str) for v in value)):
            kind = {list: "list of strings", str: "string", bool: "boolean"}[want]
            raise SettingsError(f"{path}: setting `{key}` must be a {kind}")
        if key == "output-format" and value not in _FORMATS:
            raise SettingsError(f"{path}: output-format must be one of {', '.join(_FORMATS)}")
        values[key.replace("-", "_")] = value
    names = {f.name for f in fields(Settings)}
    return Settings(**{k: v for k, v in values.items() if k in names}, source=path)
