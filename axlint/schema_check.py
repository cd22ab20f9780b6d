"""Fast structural check of a document's node tree against axlint's JSON Schemas (no jsonschema import).

Supports the subset the schemas in axlint/schemas use: type, enum, const, properties, additionalProperties,
items, anyOf/oneOf and `$ref` to `#/$defs/...`, plus three annotations: `x-axlint-deprecated`,
`x-axlint-plugin` and `x-axlint-extra`. Problems come back in document order; spans are left to the caller
(`Document.span(problem.path, problem.span_part)`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from axlint.document import Document, KeyPath, Node

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
SUGGEST_CUTOFF = 0.75

FAILURES = frozenset({"unknown-key", "wrong-type", "bad-enum"})
"""Kinds that make a value invalid."""
COERCED = frozenset({"coerced-string", "coerced-value"})
"""Values the JSON type rejects but pydantic's lax mode converts (Axolotl and DeepSpeed validate with pydantic)."""

_YAML_NAMES = {"object": "map", "array": "list", "string": "str", "integer": "int", "number": "float",
               "boolean": "bool", "null": "null"}
_TRUE_STRINGS = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE_STRINGS = frozenset({"0", "off", "f", "false", "n", "no"})
_INT_STRING = re.compile(r"[+-]?[0-9](?:_?[0-9])*(?:\.0*)?", re.ASCII)


@dataclass(frozen=True)
class SchemaProblem:
    """One finding: `kind` is unknown-key, wrong-type, coerced-string, coerced-value, bad-enum, deprecated-key or
    plugin-key-without-plugin; `span_part` says whether the key or the value is at fault."""

    kind: str
    path: KeyPath
    span_part: str
    message_args: dict[str, Any] = field(default_factory=dict)
    suggestion: str | None = None


def _close_match(word: str, candidates: list[str], n: int, cutoff: float) -> list[str]:
    """difflib's did-you-mean, imported only when a suggestion is needed (10 ms at start-up otherwise)."""
    return list(_close_match_cached(word, tuple(candidates), n, cutoff))


@lru_cache(maxsize=4096)
def _close_match_cached(word: str, candidates: tuple[str, ...], n: int, cutoff: float) -> tuple[str, ...]:
    """The same unknown key recurs across the configs of one run; difflib's ratio is the costly part."""
    import difflib

    return tuple(difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff))


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """The schema `axlint/schemas/<name>.schema.json` ("axolotl" or "deepspeed"), read once per process."""
    with open(SCHEMA_DIR / f"{name}.schema.json", encoding="utf-8") as fh:
        return json.load(fh)


def check_document(doc: Document, schema_name: str) -> list[SchemaProblem]:
    """Check a loaded document against one of axlint's schemas."""
    return check_node(doc.root, load_schema(schema_name), plugins=listed_plugins(doc.root))


def check_node(node: Node, schema: dict, *, plugins: Iterable[str] = ()) -> list[SchemaProblem]:
    """Check `node` against `schema` (its own root for `$ref`); `plugins` are the config's `plugins:` entries."""
    return _Checker(schema, tuple(plugins)).check(node, schema, ())


def listed_plugins(root: Node) -> tuple[str, ...]:
    """The string entries of a top-level `plugins:` list (a single string counts as one entry)."""
    pair = root.get("plugins") if root.kind == "map" else None
    if pair is None:
        return ()
    if pair.value.kind == "scalar":
        return (pair.value.value,) if isinstance(pair.value.value, str) else ()
    return tuple(item.value for item in pair.value.items if item.kind == "scalar" and isinstance(item.value, str))


def json_type(node: Node) -> str:
    """The JSON Schema type name of a node's value ("other" for YAML-only scalars such as dates)."""
    if node.kind == "map":
        return "object"
    if node.kind == "seq":
        return "array"
    value = node.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "other"


def yaml_type(node: Node) -> str:
    """How the value reads in YAML terms: map, list, str, int, float, bool, null (or the Python type name)."""
    kind = json_type(node)
    return _YAML_NAMES.get(kind) or type(node.value).__name__


def _type_matches(kind: str, node: Node, allowed: str | list[str]) -> bool:
    names = (allowed,) if isinstance(allowed, str) else allowed
    if kind in names:
        return True
    if kind == "integer":
        return "number" in names
    return kind == "number" and "integer" in names and float(node.value).is_integer()


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans never equal numbers."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _lax_accepts(node: Node, kind: str, allowed: str | list[str]) -> str | None:
    """The coercion kind when pydantic's lax mode accepts a value the JSON type rejects, else None.

    Strings: "true"/"no"/"1"... for bool, "3"/"+3"/"1_000"/"3.0" for int, anything `float()` reads for float.
    Other values: bool for int/float (True -> 1), and 0/1 for bool.
    """
    names = (allowed,) if isinstance(allowed, str) else allowed
    value = node.value
    if kind == "string":
        text = value.strip()
        if "boolean" in names and value.lower() in _TRUE_STRINGS | _FALSE_STRINGS:
            return "coerced-string"
        if "integer" in names and _INT_STRING.fullmatch(text):
            return "coerced-string"
        if "number" in names and value.isascii():
            try:
                float(text)
            except ValueError:
                return None
            return "coerced-string"
        return None
    if kind == "boolean" and ("integer" in names or "number" in names):
        return "coerced-value"
    if kind in ("integer", "number") and "boolean" in names and value in (0, 1):
        return "coerced-value"
    return None


def _expected(schemas: list[dict]) -> str:
    """'int or null', "'lora', 'qlora' or null": what a set of simple schemas accepts, in YAML terms."""
    words: list[str] = []
    for schema in schemas:
        allowed = schema.get("type", ())
        for name in (allowed,) if isinstance(allowed, str) else allowed:
            words.append(_YAML_NAMES[name])
        values = _values(schema)
        words.extend("null" if v is None else repr(v) for v in values)
    unique = list(dict.fromkeys(words))
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]


def _values(schema: dict) -> list[Any]:
    """The values an `enum` or `const` allows (none when it has neither)."""
    return schema.get("enum", [schema["const"]] if "const" in schema else [])


def _value_type(value: Any) -> str:
    """JSON type name of an enum value; integers and floats are one kind here."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "string" if isinstance(value, str) else "other"


def _key_name(path: KeyPath) -> str:
    return str(path[-1]) if path else "document"


class _Checker:
    def __init__(self, root: dict, plugins: tuple[str, ...]) -> None:
        self.defs = root.get("$defs", {})
        self.plugins = plugins

    def resolve(self, schema: dict) -> dict:
        while "$ref" in schema:
            target = self.defs[schema["$ref"].rsplit("/", 1)[-1]]
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return schema

    def check(self, node: Node, schema: dict, path: KeyPath) -> list[SchemaProblem]:
        schema = self.resolve(schema)
        branches = schema.get("anyOf") or schema.get("oneOf")
        if branches is not None:
            return self.check_union(node, [self.resolve(b) for b in branches], path)
        problem = self.check_scalar(node, schema, path)
        if problem is not None:
            return [problem]
        if node.kind == "map":
            return self.check_map(node, schema, path)
        if node.kind == "seq" and "items" in schema:
            return [p for i, item in enumerate(node.items) for p in self.check(item, schema["items"], path + (i,))]
        return []

    def check_scalar(self, node: Node, schema: dict, path: KeyPath) -> SchemaProblem | None:
        """The type / enum / const verdict on the node itself."""
        kind = json_type(node)
        allowed = schema.get("type")
        if allowed is not None and not _type_matches(kind, node, allowed):
            args = {"key": _key_name(path), "expected": _expected([{"type": allowed}]), "got": yaml_type(node),
                    "value": node.value}
            return SchemaProblem(_lax_accepts(node, kind, allowed) or "wrong-type", path, "value", args)
        values = _values(schema) if "enum" in schema or "const" in schema else None
        if values is not None and (node.kind != "scalar" or not any(_equal(node.value, v) for v in values)):
            return self.enum_problem(node, [schema], path)
        return None

    def enum_problem(self, node: Node, schemas: list[dict], path: KeyPath) -> SchemaProblem:
        """bad-enum for a scalar (with a did-you-mean among string values), wrong-type for a map or list."""
        args = {"key": _key_name(path), "value": node.value, "allowed": _expected(schemas), "got": yaml_type(node)}
        if node.kind != "scalar":
            return SchemaProblem("wrong-type", path, "value", {**args, "expected": args["allowed"]})
        words = [v for s in schemas for v in _values(s) if isinstance(v, str)]
        match = _close_match(str(node.value), words, n=1, cutoff=SUGGEST_CUTOFF)
        return SchemaProblem("bad-enum", path, "value", args, match[0] if match else None)

    def check_union(self, node: Node, branches: list[dict], path: KeyPath) -> list[SchemaProblem]:
        """Valid when one branch is; otherwise descend into the branch of the node's own kind (map / list), or
        report one problem for the value covering every branch."""
        results = [self.check(node, branch, path) for branch in branches]
        for rejected in (FAILURES | COERCED, FAILURES):
            for problems in results:
                if not any(p.kind in rejected for p in problems):
                    return problems
        kind = json_type(node)
        if node.kind != "scalar":
            for branch, problems in zip(branches, results):
                allowed = branch.get("type", ())
                if kind in ((allowed,) if isinstance(allowed, str) else allowed):
                    return problems
        same_kind = (_value_type(node.value) == _value_type(v) for b in branches for v in _values(b))
        if node.kind == "scalar" and any(same_kind):
            return [self.enum_problem(node, branches, path)]
        return [SchemaProblem("wrong-type", path, "value", {"key": _key_name(path), "expected": _expected(branches),
                                                           "got": yaml_type(node), "value": node.value})]

    def check_map(self, node: Node, schema: dict, path: KeyPath) -> list[SchemaProblem]:
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        problems: list[SchemaProblem] = []
        for pair in node.pairs:
            key = pair.key.value
            sub_path = path + (key,)
            sub = properties.get(key) if isinstance(key, str) else None
            if sub is None:
                if extra is False:
                    match = _close_match(str(key), list(properties), n=1, cutoff=SUGGEST_CUTOFF)
                    problems.append(SchemaProblem(
                        "unknown-key", sub_path, "key",
                        {"key": str(key), "parent": ".".join(map(str, path)) or "top level",
                         "effect": schema.get("x-axlint-extra", "forbid")},
                        match[0] if match else None))
                elif isinstance(extra, dict):
                    problems.extend(self.check(pair.value, extra, sub_path))
                continue
            sub = self.resolve(sub)
            deprecated = sub.get("x-axlint-deprecated")
            if deprecated is not None:
                problems.append(SchemaProblem(
                    "deprecated-key", sub_path, "key",
                    {"key": key, "replacement": deprecated["replacement"] or "", "note": deprecated["note"]},
                    deprecated["replacement"]))
            plugin = sub.get("x-axlint-plugin")
            if plugin is not None and not any(p == plugin or p.startswith(plugin + ".") for p in self.plugins):
                problems.append(SchemaProblem("plugin-key-without-plugin", sub_path, "key",
                                              {"key": key, "plugin": plugin}, plugin))
            problems.extend(self.check(pair.value, sub, sub_path))
        return problems
