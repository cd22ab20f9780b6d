"""Generate axlint/schemas/axolotl.schema.json from the field tables in axlint/schemas/source/.

Inputs: `axolotl_fields_core.json` (the 388 top-level fields of `AxolotlInputConfig`),
`axolotl_fields_plugins.json` (plugin argument models by plugin dir) and `axolotl_refinements.json` (plugin class
paths, enum values, deprecations: facts the tables lack). Each Python annotation is parsed with `ast` and mapped to
a JSON Schema (draft 2020-12) fragment. Run `python tools/gen_axolotl_schema.py` to rewrite the schema;
`--check` exits 1 when the file on disk differs from what would be written.
"""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "axlint" / "schemas" / "source"
TARGET = ROOT / "axlint" / "schemas" / "axolotl.schema.json"

_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
            "PositiveInt": "integer", "dict": "object", "Dict": "object", "list": "array", "List": "array"}
_TYPE_ORDER = ["object", "array", "string", "number", "integer", "boolean", "null"]


class _Mapper:
    """Turns annotation strings into schema fragments, collecting the sub-models and enums they reference."""

    def __init__(self, models: set[str], enums: dict[str, list[Any]], sub_models: dict[str, dict | None]) -> None:
        self.models = models
        self.enums = enums
        self.sub_models = sub_models
        self.defs: dict[str, dict] = {}

    def __call__(self, annotation: str) -> dict:
        return self._node(ast.parse(annotation, mode="eval").body)

    def _node(self, node: ast.expr) -> dict:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union([self._node(node.left), self._node(node.right)])
        if isinstance(node, ast.Constant) and node.value is None:
            return {"type": "null"}
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            return self._generic(node.value.id, args)
        raise ValueError(f"unsupported annotation: {ast.unparse(node)}")

    def _name(self, name: str) -> dict:
        if name in _SCALARS:
            return {"type": _SCALARS[name]}
        if name == "Any":
            return {}
        if name in self.enums:
            self.defs.setdefault(name, {"description": f"enum {name}", "enum": self.enums[name]})
        elif name in self.sub_models:
            self.defs.setdefault(name, _sub_model(name, self.sub_models[name]))
        elif name not in self.models:
            # A pydantic model or enum whose fields/values the source tables do not list: accept any value.
            self.defs.setdefault(name, {"description": f"{name}: contents not listed in the source tables"})
        return {"$ref": f"#/$defs/{name}"}

    def _generic(self, name: str, args: list[ast.expr]) -> dict:
        if name == "Optional":
            return _union([self._node(args[0]), {"type": "null"}])
        if name == "Union":
            return _union([self._node(a) for a in args])
        if name == "Annotated":
            return self._node(args[0])
        if name == "Literal":
            return {"enum": [ast.literal_eval(a) for a in args]}
        if name in ("list", "List", "tuple"):
            items = _union([self._node(a) for a in args if not isinstance(a, ast.Constant) or a.value is not ...])
            return {"type": "array", "items": items} if items else {"type": "array"}
        if name in ("dict", "Dict"):
            values = self._node(args[1])
            return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
        raise ValueError(f"unsupported generic: {name}")


def _union(parts: list[dict]) -> dict:
    """Merge alternatives: plain types into one `type` list, literals into one `enum`, the rest as anyOf branches."""
    flat: list[dict] = []
    for part in parts:
        flat.extend(part["anyOf"] if set(part) == {"anyOf"} else [part])
    if any(not part for part in flat):
        return {}
    types: list[str] = []
    enum: list[Any] = []
    branches: list[dict] = []
    for part in flat:
        if set(part) == {"type"}:
            named = [part["type"]] if isinstance(part["type"], str) else part["type"]
            types.extend(t for t in named if t not in types)
        elif set(part) == {"enum"}:
            enum.extend(v for v in part["enum"] if v not in enum)
        elif part not in branches:
            branches.append(part)
    out: list[dict] = []
    if types:
        ordered = sorted(types, key=_TYPE_ORDER.index)
        out.append({"type": ordered[0] if len(ordered) == 1 else ordered})
    if enum:
        out.append({"enum": enum})
    out.extend(branches)
    return out[0] if len(out) == 1 else {"anyOf": out}


def _sub_model(name: str, spec: dict | None) -> dict:
    """A core pydantic sub-model: any mapping when its fields are not listed, else a closed object."""
    if spec is None:
        return {"type": "object", "description": f"{name}: fields not listed in the source tables"}
    properties = {key: {**schema, "description": f"{name}.{key}"} for key, schema in spec["fields"].items()}
    for alias, target in spec["aliases"].items():
        properties[alias] = {**spec["fields"][target], "description": f"alias of {name}.{target}"}
    prefix = spec["deprecated_prefix"]
    for key, schema in spec["fields"].items():
        if not key.startswith(prefix):
            properties[prefix + key] = {**schema, "description": f"prefixed spelling of {name}.{key}",
                                        "x-axlint-deprecated": {"replacement": key, "note": spec["ref"]}}
    return _object(properties, f"{name}: {spec['ref']}")


def _default(text: str, annotation: str) -> tuple[bool, Any]:
    """(has_default, value) for a default as written in the source; factories and expressions have none."""
    if text == "(required)":
        field_default = _field_kwarg(annotation, "default")
        return (True, field_default) if field_default is not None else (False, None)
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False, None


def _field_kwarg(annotation: str, name: str) -> Any:
    """A keyword of a `Field(...)` inside `Annotated[...]`, or None."""
    for node in ast.walk(ast.parse(annotation, mode="eval")):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Field":
            for kw in node.keywords:
                if kw.arg == name:
                    return ast.literal_eval(kw.value)
    return None


def _property(mapper: _Mapper, field: dict, where: str) -> dict:
    prop = dict(mapper(field["type"]))
    description = _field_kwarg(field["type"], "description")
    prop["description"] = f"{description.rstrip('.')}. " if description else ""
    prop["description"] += f"Defined in {where}; Python type `{field['type']}`."
    has_default, value = _default(field["default"], field["type"])
    if has_default:
        prop["default"] = value
    elif field["default"] == "(required)":
        prop["x-axlint-required"] = True
    else:
        prop["description"] += f" Default: `{field['default']}`."
    return prop


def _object(properties: dict[str, dict], description: str) -> dict:
    return {"type": "object", "description": description, "additionalProperties": False,
            "x-axlint-extra": "ignore", "properties": properties}


def _plugin_properties(mapper: _Mapper, plugin_dir: str, fields: list[dict], plugin: str) -> dict[str, dict]:
    """Top-level keys of one plugin; fields of its nested sub-models become $defs."""
    nested = {cls for f in fields for cls in mapper.models if cls in f["type"] and cls != f["cls"]}
    where = f"axolotl/integrations/{plugin_dir}/args.py"
    by_cls: dict[str, dict[str, dict]] = {}
    for field in fields:
        props = by_cls.setdefault(field["cls"], {})
        props.setdefault(field["name"], _property(mapper, field, f"{field['cls']} ({where})"))
    for cls in nested:
        mapper.defs[cls] = _object(by_cls[cls], f"{cls} ({where})")
    top: dict[str, dict] = {}
    for cls, props in by_cls.items():
        if cls not in nested:
            for name, prop in props.items():
                top.setdefault(name, {**prop, "x-axlint-plugin": plugin})
    return top


def build_schema(core: list[dict], plugins: dict[str, list[dict]], refinements: dict) -> dict:
    """The Axolotl config schema: core fields (and their aliases), plugin fields, deprecations."""
    models = {f["cls"] for fields in plugins.values() for f in fields}
    enums = {name: spec["values"] for name, spec in refinements["enums"].items()}
    sub_models = {k: v for k, v in refinements["sub_models"].items() if not k.startswith("_")}
    mapper = _Mapper(models, enums, sub_models)
    properties: dict[str, dict] = {}
    for field in core:
        prop = _property(mapper, field, f"{field['cls']} (axolotl/utils/schemas/{field['file']})")
        properties[field["name"]] = prop
        if field["alias"]:
            properties[field["alias"]] = {**prop, "description": f"YAML alias of `{field['name']}`. "
                                          + prop["description"]}
            prop["description"] = f"Field name of the YAML alias `{field['alias']}`. " + prop["description"]
    for name, spec in refinements["value_sets"].items():
        properties[name] = {**_union([{"enum": spec["values"]}, {"type": "null"}]),
                            **{k: v for k, v in properties[name].items() if k not in ("type", "enum", "anyOf")}}
        properties[name]["description"] += f" Accepted values: {spec['ref']}."
    classes = refinements["plugin_classes"]
    for plugin_dir, fields in plugins.items():
        plugin = classes.get(plugin_dir, f"axolotl.integrations.{plugin_dir}")
        for name, prop in _plugin_properties(mapper, plugin_dir, fields, plugin).items():
            properties.setdefault(name, prop)
    for name, spec in refinements["removed_keys"].items():
        if not name.startswith("_"):
            properties[name] = {"description": "Not an Axolotl field; listed because Axolotl rejects it."}
            refinements["deprecated"].setdefault(name, spec)
    for field in core:
        if field["deprecated"] and field["name"] not in refinements["deprecated"]:
            raise ValueError(f"deprecated field {field['name']} lacks a replacement entry in the refinements")
    for name, spec in refinements["deprecated"].items():
        properties[name]["x-axlint-deprecated"] = {"replacement": spec["replacement"], "note": spec["note"]}
    source = refinements["source"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://axlint.invalid/schemas/axolotl.schema.json",
        "title": "Axolotl training config",
        "description": (f"AxolotlInputConfig of {source['repository']} {source['version']} ({source['commit'][:12]}) "
                        "plus plugin arguments. Generated by tools/gen_axolotl_schema.py; do not edit."),
        "type": "object",
        "additionalProperties": False,
        "x-axlint-extra": "ignore",
        "properties": properties,
        "$defs": dict(sorted(mapper.defs.items())),
    }


def render(source: Path = SOURCE) -> str:
    """The schema file's exact text, generated from the data files under `source`."""
    core = json.loads((source / "axolotl_fields_core.json").read_text())
    plugins = json.loads((source / "axolotl_fields_plugins.json").read_text())
    refinements = json.loads((source / "axolotl_refinements.json").read_text())
    return json.dumps(build_schema(core, plugins, refinements), indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        same = TARGET.exists() and TARGET.read_text() == text
        print("in sync" if same else f"{TARGET} is stale; run tools/gen_axolotl_schema.py")
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(json.loads(text)['properties'])} keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
