"""Shared parts of the schema generators: the throwaway venv and the reduction of pydantic's JSON Schema.

The venv lives in `build/schema-venv` (ignored by git): CPU torch from the local wheel, then every other package
with `--no-deps` at the pins a generator asks for, so one venv serves every release (only the pins that differ
are reinstalled). `tools/dump_pydantic_schema.py` runs inside it and prints the raw schemas; `reduce_schema`
turns them into the subset `axlint/schemas/validator.py` reads.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "build" / "schema-venv"
DUMPER = Path(__file__).resolve().parent / "dump_pydantic_schema.py"
TORCH = "torch==2.13.0"

_KEEP = ("type", "enum", "const", "pattern", "default", "x-axlint-required", "x-axlint-adapters", "x-axlint-plugin", "x-axlint-deprecated",
         "x-axlint-extra")
_DESCRIPTION_CHARS = 120


def venv_python() -> Path:
    """The venv's python, creating the venv with CPU torch on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        # The CPU wheel in the local wheel folder satisfies the pin; no CUDA build is pulled.
        _pip(python, [TORCH])
    return python


def _pip(python: Path, args: list[str]) -> None:
    """`pip install -q args` in the venv; pip's complaints are shown only when it fails."""
    result = subprocess.run([str(python), "-m", "pip", "install", "-q", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"pip install {' '.join(args)} failed:\n{result.stderr[-4000:]}")


def install(pins: list[str]) -> Path:
    """Install `pins` (requirement strings) with --no-deps into the venv; returns its python."""
    python = venv_python()
    installed = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    have = {line.lower().replace("_", "-") for line in installed.stdout.split()}
    missing = [p for p in pins if p.lower().replace("_", "-") not in have]
    if missing:
        _pip(python, ["--no-deps", *missing])
    return python


def requirements_of(python: Path, dist: str, names: set[str]) -> list[str]:
    """The requirement strings the installed `dist` declares for `names` (markers and extras left out)."""
    code = f"import importlib.metadata as m; print('\\n'.join(m.requires({dist!r}) or []))"
    lines = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    wanted = []
    for line in lines:
        name = re.match(r"[A-Za-z0-9_.-]+", line).group().lower().replace("_", "-")
        if name in names and ";" not in line:
            wanted.append(line.strip())
    return wanted


def install_file(python: Path, path: Path) -> None:
    """Install the wheel or sdist at `path` with --no-deps, replacing any other version of it (an sdist is built
    with the venv's own setuptools and torch)."""
    _pip(python, ["--no-deps", "--no-build-isolation", "--force-reinstall", str(path)])


def dump(python: Path, what: str) -> dict:
    """Run the dumper for `what` ("axolotl" or "deepspeed") in the venv and return its JSON."""
    env = {"DS_BUILD_OPS": "0", "DS_ACCELERATOR": "cpu", "PATH": "/usr/bin:/bin", "HOME": str(VENV)}
    result = subprocess.run([str(python), str(DUMPER), what], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"dumping {what} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout)


def short(text: str | None) -> str | None:
    """The first sentence of a description, at most 120 characters."""
    if not text:
        return None
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0].strip()
    return first if len(first) <= _DESCRIPTION_CHARS else first[:_DESCRIPTION_CHARS - 1].rstrip() + "…"


def _is_model_ref(node: Any, defs: dict) -> bool:
    """Whether `node` leads (directly or through anyOf/items) to an object model of `defs`."""
    if isinstance(node, dict):
        if "$ref" in node:
            return "properties" in defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        return any(_is_model_ref(v, defs) for k, v in node.items() if k in ("anyOf", "oneOf", "items"))
    if isinstance(node, list):
        return any(_is_model_ref(v, defs) for v in node)
    return False


def _merge_types(branches: list[dict]) -> list[dict]:
    """Branches that only name a type become one branch with a list of types (`int or null` in messages)."""
    plain = [b for b in branches if set(b) == {"type"} and isinstance(b["type"], str)]
    if len(plain) < 2:
        return branches
    merged = {"type": [b["type"] for b in plain]}
    return [merged] + [b for b in branches if b not in plain]


def reduce_schema(node: Any, defs: dict) -> Any:
    """pydantic's JSON Schema cut down to what axlint's checker reads.

    Kept: type, enum, const, pattern, properties, additionalProperties, items, anyOf/oneOf, `$ref`, defaults that are
    JSON, a short description and the x-axlint-* annotations. A model's `extra` setting becomes
    `additionalProperties: false` plus `x-axlint-extra` ("ignore" or "forbid"); `extra: allow` stays open.
    Other spellings a model accepts (aliases, field names) become properties of their own. A field whose input
    a validator converts before the declared type is checked accepts any value, unless it leads to a model
    (its keys are still checked). Tuples become arrays of the union of their item types; union branches that
    only name a type are merged into one.
    """
    if isinstance(node, list):
        return [reduce_schema(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-validator") and "properties" not in node and not _is_model_ref(node, defs):
        out: dict[str, Any] = {}
    else:
        out = {key: node[key] for key in _KEEP if key in node}
        if "const" in out:
            out.pop("type", None)
        for key in ("anyOf", "oneOf"):
            if key in node:
                out[key] = _merge_types([reduce_schema(branch, defs) for branch in node[key]])
        if "$ref" in node:
            out["$ref"] = node["$ref"]
        if "items" in node:
            out["items"] = reduce_schema(node["items"], defs)
        elif "prefixItems" in node:
            out["items"] = {"anyOf": reduce_schema(node["prefixItems"], defs)}
        if isinstance(node.get("additionalProperties"), dict):
            out["additionalProperties"] = reduce_schema(node["additionalProperties"], defs)
        if "properties" in node:
            properties = {key: reduce_schema(value, defs) for key, value in node["properties"].items()}
            for other, key in node.get("x-spellings", {}).items():
                properties.setdefault(other, properties[key])
            out["properties"] = properties
            extra = node.get("x-extra", "ignore")
            if extra in ("ignore", "forbid") or node.get("additionalProperties") is False:
                out["additionalProperties"] = False
                out["x-axlint-extra"] = "forbid" if node.get("additionalProperties") is False else extra
            for key in node.get("required", ()):
                properties[key] = {**properties[key], "x-axlint-required": True}
    description = short(node.get("description"))
    if description:
        out["description"] = description
    return out


def write_if_changed(path: Path, data: dict, check: bool) -> bool:
    """Write `data` as JSON to `path` (or, with `check`, only compare); returns whether the file was current."""
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    current = path.exists() and path.read_text(encoding="utf-8") == text
    if not check and not current:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return current


def write_releases(target: Path, package: str, releases: Iterable[tuple[dict, dict]], check: bool) -> int:
    """Write (or with `check` compare) each release's schema and the `versions.json` index under `target`.

    `releases` yields (schema, index entry); an entry names its `version` and `file`. Returns 1 when `check`
    finds a file out of date, else 0."""
    stale, index = [], []
    for schema, entry in releases:
        index.append(entry)
        if not write_if_changed(target / entry["file"], schema, check):
            stale.append(entry["file"])
        print(f"{entry['version']}: {len(schema['properties'])} keys, {len(schema['$defs'])} definitions")
    if not write_if_changed(target / "versions.json", {package: index}, check):
        stale.append("versions.json")
    if check:
        print("in sync" if not stale else f"stale: {', '.join(stale)}; run tools/gen_{package}_schema.py")
        return 1 if stale else 0
    return 0
