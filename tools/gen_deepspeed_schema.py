"""Generate axlint/schemas/deepspeed/<version>.schema.json from DeepSpeed's pydantic config models.

Inputs: the DeepSpeed releases of VERSIONS, installed with `--no-deps` into the throwaway venv of
tools/schemagen.py (CPU only: DS_BUILD_OPS=0, DS_ACCELERATOR=cpu), whose `DeepSpeedZeroConfig` (with its offload
models) and fp16/bf16 precision models tools/dump_pydantic_schema.py prints; and tools/deepspeed_base.json, the
hand-written top-level keys of a DeepSpeed JSON config as the HF Trainer reads it. Every field of a pydantic block
also accepts "auto" (DeepSpeed drops "auto" values before validation, the HF integration fills them). Outputs: one
schema per release and `axlint/schemas/deepspeed/versions.json`.

`python tools/gen_deepspeed_schema.py` rewrites the files; `--check` exits 1 when a file on disk differs from what
would be written. Both need the package index (network); tests read the committed files only.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import schemagen  # noqa: E402

sys.path.insert(0, str(schemagen.ROOT))
from axlint.schemas.validator import version_key  # noqa: E402

TARGET = schemagen.ROOT / "axlint" / "schemas" / "deepspeed"
BASE = Path(__file__).resolve().parent / "deepspeed_base.json"
VERSIONS = ["0.18.9", "0.19.8"]
"""The newest 0.18.x (what Axolotl 0.15 to 0.19 allow) and the newest 0.19.x."""
PINS = ["hjson", "py-cpuinfo", "msgpack", "einops", "ninja", "pydantic==2.12.5", "pydantic-core==2.41.5",
        "typing-extensions==4.15.0", "typing-inspection", "annotated-types", "packaging", "numpy", "psutil", "tqdm"]
"""What DeepSpeed's config modules import besides torch."""
AUTO = {"$ref": "#/$defs/auto"}


def _with_auto(schema: dict) -> dict:
    """Every field of a pydantic block also takes "auto"; nested blocks keep their own fields."""
    for model in _models(schema):
        model["properties"] = {key: {"anyOf": [value, AUTO]} if not _is_block(value) else value
                               for key, value in model["properties"].items()}
    return schema


def _models(node: object) -> list[dict]:
    """The objects with properties under `node`, outermost first."""
    found = []
    if isinstance(node, dict):
        if "properties" in node:
            found.append(node)
        for value in node.values():
            found += _models(value)
    elif isinstance(node, list):
        for value in node:
            found += _models(value)
    return found


def _refs(node: object) -> set[str]:
    """Every `$ref` under `node`."""
    if isinstance(node, dict):
        return ({node["$ref"]} if "$ref" in node else set()).union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _is_block(node: dict) -> bool:
    """A nested config block (a `$ref` to a model); a `$ref` to one of DeepSpeed's enums (`OffloadDeviceEnum`,
    `ZeroStageEnum`, ...) is a value, which "auto" may replace like any other."""
    refs = [node.get("$ref"), *(b.get("$ref") for b in node.get("anyOf", []))]
    return any(ref and not ref.endswith("Enum") for ref in refs)


def _mark_deprecated(node: object, version: str) -> None:
    """pydantic `deprecated` fields become `x-axlint-deprecated`, with DeepSpeed's `new_param` as replacement."""
    for model in _models(node):
        for prop in model["properties"].values():
            if prop.get("deprecated"):
                prop["x-axlint-deprecated"] = {"replacement": prop.get("new_param") or None,
                                               "note": f"deprecated in DeepSpeed {version}"}


def build(raw: dict, base: dict) -> dict:
    """Base keys plus the release's pydantic blocks as $defs (zero_optimization, fp16, bf16 and nested models)."""
    version = raw["version"]
    schema = json.loads(json.dumps(base))
    defs = schema["$defs"]
    _mark_deprecated(raw["models"], version)
    for key, model in raw["models"].items():
        own = model["schema"]
        nested = own.pop("$defs", {})
        defs[key] = _with_auto(schemagen.reduce_schema(own, nested))
        for name, sub in nested.items():
            defs.setdefault(name, _with_auto(schemagen.reduce_schema(sub, nested)))
    if version_key(version) < version_key(defs["removed"].pop("x-since")):
        for key, value in list(schema["properties"].items()):
            if value.get("$ref") == "#/$defs/removed":
                schema["properties"][key] = {}
        del defs["removed"]
    used = _refs(schema)
    schema["$defs"] = {name: value for name, value in defs.items() if f"#/$defs/{name}" in used}
    schema["$id"] = f"https://axlint.invalid/schemas/deepspeed/{version}.schema.json"
    schema["title"] = f"DeepSpeed {version} config"
    extras = ", ".join(sorted({m["schema"].get("x-extra", "ignore") for m in raw["models"].values()}))
    schema["description"] = (f"DeepSpeed {version} JSON config as the HF Trainer reads it; the zero_optimization, "
                             f"fp16 and bf16 blocks come from DeepSpeed's pydantic models (their extra keys: {extras}). "
                             "Generated by tools/gen_deepspeed_schema.py; do not edit.")
    return schema


def main(argv: list[str]) -> int:
    """Write (or with --check compare) every release's schema and the index; 1 when --check finds a difference."""
    check = "--check" in argv
    base = json.loads(BASE.read_text(encoding="utf-8"))
    return schemagen.write_releases(TARGET, "deepspeed", (release(version, base) for version in VERSIONS), check)


def release(version: str, base: dict) -> tuple[dict, dict]:
    """(schema, index entry) of one DeepSpeed release, read from the package installed in a throwaway venv."""
    python = schemagen.install(PINS + [f"deepspeed=={version}"])
    raw = schemagen.dump(python, "deepspeed")
    entry = {"version": version, "file": f"{version}.schema.json", "models": {
        key: model["class"] for key, model in raw["models"].items()}}
    return build(raw, base), entry

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
