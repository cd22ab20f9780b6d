"""Fast structural check of a document's node tree against axlint's JSON Schemas (no jsonschema import).

Supports the subset the schemas in axlint/schemas use: type, enum, const, pattern, properties,
additionalProperties, items, anyOf/oneOf and `$ref` to `#/$defs/...`, plus the annotations `x-axlint-deprecated`, `x-axlint-plugin`,
`x-axlint-extra` and `x-axlint-items-by` (the items of a list are one model chosen by a top-level key's value, as
Axolotl builds `datasets` entries by `rl`). `x-axlint-adapters` records the adapters a release takes (built in,
and per bundled plugin). Problems come back in document order; spans are left to the caller
(`Document.span(problem.path, problem.span_part)`).

The schemas are bundled per release: `schemas/axolotl/<version>.schema.json` and
`schemas/deepspeed/<version>.schema.json`, each folder with a `versions.json` index. `choose_versions` picks the
release to check against (asked for, else installed, else the newest bundled) without importing either package.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from axlint import datacache
from axlint.document import Document, KeyPath, Node
from axlint.lazypattern import LazyPattern

if TYPE_CHECKING:
    from axlint.run import TrainingRun

SCHEMA_DIR = Path(__file__).resolve().parent
SUGGEST_CUTOFF = 0.75
PACKAGES = {"axolotl": "Axolotl", "deepspeed": "DeepSpeed"}
"""The packages with bundled schemas, by folder name, and how the output names them."""

FAILURES = frozenset({"unknown-key", "wrong-type", "bad-enum"})
"""Kinds that make a value invalid."""
COERCED = frozenset({"coerced-string", "coerced-value"})
"""Values the JSON type rejects but pydantic's lax mode converts (Axolotl and DeepSpeed validate with pydantic)."""
_NOT_AS_IS = FAILURES | COERCED

_YAML_NAMES = {"object": "map", "array": "list", "string": "str", "integer": "int", "number": "float",
               "boolean": "bool", "null": "null"}
_TRUE_STRINGS = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE_STRINGS = frozenset({"0", "off", "f", "false", "n", "no"})
_LISTED = 12
"""At most this many accepted values are spelled out in a message."""
_INT_STRING = LazyPattern(r"[+-]?[0-9](?:_?[0-9])*(?:\.0*)?", re.ASCII)


@dataclass(frozen=True)
class SchemaProblem:
    """One finding: `kind` is unknown-key, wrong-type, coerced-string, coerced-value, bad-enum (a value outside an
    enum or not matching a pattern), deprecated-key (logged or mapped), removed-key (a deprecated key the release
    refuses at start-up, set to a value it refuses) or
    plugin-key-without-plugin; `span_part` says whether the key or the value is at fault."""

    kind: str
    path: KeyPath
    span_part: str
    message_args: dict[str, Any] = field(default_factory=dict)
    suggestion: str | None = None


def _shown(node: Node) -> Any:
    """What a message quotes of a value: a scalar as it is, a mapping by its first keys, a list by its length."""
    if node.kind == "map":
        keys = [str(p.key.value) for p in node.pairs]
        return "{" + ", ".join(f"{k}: ..." for k in keys[:3]) + (", ..." if len(keys) > 3 else "") + "}"
    if node.kind == "seq":
        return f"[{len(node.items)} item{'s' if len(node.items) != 1 else ''}]"
    return node.value


def _is_null(node: Node) -> bool:
    """`key:` or `key: null` (Axolotl's removal validators let None through)."""
    return node.kind == "scalar" and node.value is None


def _truthy(node: Node) -> bool:
    """The node's value as Python truthiness sees it (Axolotl's removal validators test `if value:`)."""
    return bool(node.items or node.pairs) if node.kind in ("seq", "map") else bool(node.value)


def close_match(word: str, candidates: list[str], n: int, cutoff: float) -> list[str]:
    """difflib's did-you-mean, imported only when a suggestion is needed (10 ms at start-up otherwise)."""
    return list(_close_match_cached(word, tuple(candidates), n, cutoff))


@lru_cache(maxsize=4096)
def _close_match_cached(word: str, candidates: tuple[str, ...], n: int, cutoff: float) -> tuple[str, ...]:
    """The same unknown key recurs across the configs of one run; difflib's ratio is the costly part."""
    import difflib

    return tuple(difflib.get_close_matches(word, candidates, n=n, cutoff=cutoff))


@dataclass(frozen=True)
class SchemaChoice:
    """The bundled schema versions a run is checked against, and plain notes on how they were chosen."""

    axolotl: str
    deepspeed: str
    axolotl_source: str = "set"
    deepspeed_source: str = "set"
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, str]:
        return {"axolotl": self.axolotl, "deepspeed": self.deepspeed, "axolotl_source": self.axolotl_source,
                "deepspeed_source": self.deepspeed_source}

    def label(self) -> str:
        """"Axolotl 0.19.0 (newest bundled), DeepSpeed 0.18.9 (allowed by Axolotl 0.19.0)"."""
        return (f"Axolotl {self.axolotl} ({self.axolotl_source}), "
                f"DeepSpeed {self.deepspeed} ({self.deepspeed_source})")


@lru_cache(maxsize=None)
def version_key(version: str) -> tuple[int, ...]:
    """(0, 18, 9) for "0.18.9"; parts after the leading numbers ("rc1", "+cu121") are ignored."""
    parts = []
    for piece in version.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.end() != len(piece):
            break
    return tuple(parts)


@lru_cache(maxsize=None)
def bundled(package: str) -> tuple[dict, ...]:
    """The index entries of `package`'s bundled schemas, oldest first."""
    entries = datacache.load_json(SCHEMA_DIR / package / "versions.json", f"schema-{package}-versions")[package]
    return tuple(sorted(entries, key=lambda e: version_key(e["version"])))


def installed_versions(packages: Iterable[str]) -> dict[str, str]:
    """The installed version of each of `packages` that is installed, read from the name of its `.dist-info` folder
    on `sys.path` as importlib.metadata finds it (first match wins). One pass over `sys.path` answers every package;
    none is imported, nor is importlib.metadata (whose import alone costs about 20 ms at start-up)."""
    wanted = {_normalized(package): package for package in packages}
    initials = {name[0] for name in wanted}
    found: dict[str, str] = {}
    for entry in sys.path:
        if len(found) == len(wanted):
            break
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name[:1].lower() in initials and name.endswith(".dist-info"):
                dist, _, version = name[:-len(".dist-info")].partition("-")
                package = wanted.get(_normalized(dist))
                if package is not None and version and package not in found:
                    found[package] = version
    return found


def _normalized(name: str) -> str:
    """A distribution name as importlib.metadata compares it: runs of `-`, `_` and `.` are one `_`, lower case."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _satisfies(version: str, requirement: str) -> bool:
    """Whether `version` meets a comma-separated requirement such as ">=0.18.6,<0.19.0" (numeric parts only)."""
    key = version_key(version)
    for clause in filter(None, (c.strip() for c in requirement.split(","))):
        op, bound = re.match(r"(==|!=|>=|<=|~=|<|>)?\s*(.+)", clause).groups()
        other = version_key(bound)
        ok = {"==": key[:len(other)] == other, "!=": key[:len(other)] != other, ">=": key >= other,
              "<=": key <= other, ">": key > other, "<": key < other,
              "~=": key >= other and key[:len(other) - 1] == other[:-1]}[op or "=="]
        if not ok:
            return False
    return True


def pick_version(package: str, wanted: str | None, source: str) -> tuple[str, str | None]:
    """(bundled version, note) for `wanted` of `package`: the newest bundled release not newer than it, else the
    oldest; the note says so when that is not `wanted` itself. No `wanted`: the newest bundled release."""
    versions = [e["version"] for e in bundled(package)]
    name = PACKAGES[package]
    if wanted is None:
        return versions[-1], None
    key = version_key(wanted)
    older = [v for v in versions if version_key(v) <= key]
    if older and version_key(older[-1]) == key:
        return older[-1], None
    if older:
        return older[-1], (f"{name} {wanted} ({source}) has no bundled schema: checked with {older[-1]}, "
                           "the newest bundled release before it")
    return versions[0], f"{name} {wanted} ({source}) is older than every bundled schema: checked with {versions[0]}"


def choose_versions(axolotl: str | None = None, deepspeed: str | None = None) -> SchemaChoice:
    """The schemas to check with. Axolotl: `axolotl` (the setting or flag), else the installed release, else the
    newest bundled. DeepSpeed: `deepspeed`, else the installed release, else the newest bundled release the chosen
    Axolotl release allows."""
    notes = []
    asked = {"axolotl": axolotl, "deepspeed": deepspeed}
    installed = installed_versions(name for name, given in asked.items() if not given)
    ax_source = "set" if axolotl else "installed"
    axolotl = axolotl or installed.get("axolotl")
    ax, note = pick_version("axolotl", axolotl, ax_source)
    notes += [note] if note else []
    ax_source = ax_source if axolotl else "newest bundled"
    ds_source = "set" if deepspeed else "installed"
    deepspeed = deepspeed or installed.get("deepspeed")
    if deepspeed is None:
        entry = next(e for e in bundled("axolotl") if e["version"] == ax)
        allowed = [e["version"] for e in bundled("deepspeed")
                   if _satisfies(e["version"], entry.get("deepspeed_requirement") or "")]
        ds = (allowed or [e["version"] for e in bundled("deepspeed")])[-1]
        ds_source = f"allowed by Axolotl {ax}" if allowed else "newest bundled"
    else:
        ds, note = pick_version("deepspeed", deepspeed, ds_source)
        notes += [note] if note else []
    return SchemaChoice(ax, ds, ax_source, ds_source, tuple(notes))


@lru_cache(maxsize=None)
def default_choice() -> SchemaChoice:
    """The choice when nothing was asked for (installed packages, else bundled defaults), made once per process."""
    return choose_versions()


@lru_cache(maxsize=None)
def load_schema(name: str, version: str | None = None) -> dict:
    """The schema of `name` ("axolotl" or "deepspeed") at a bundled `version` (default: `default_choice()`),
    read once per process (and parsed once per change of the file: `axlint.datacache`)."""
    version = version or getattr(default_choice(), name)
    return datacache.load_json(SCHEMA_DIR / name / f"{version}.schema.json", f"schema-{name}-{version}")


def check_document(doc: Document, schema_name: str, version: str | None = None) -> list[SchemaProblem]:
    """Check a loaded document against one of axlint's schemas."""
    return check_node(doc.root, load_schema(schema_name, version), plugins=listed_plugins(doc.root))


def check_node(node: Node, schema: dict, *, plugins: Iterable[str] = ()) -> list[SchemaProblem]:
    """Check `node` against `schema` (its own root for `$ref`); `plugins` are the config's `plugins:` entries."""
    return _Checker(schema, tuple(plugins), node).check(node, schema, ())


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
        if "pattern" in schema:
            words.append(f"a string matching `{schema['pattern']}`")
        if "pattern" in schema or "enum" in schema or "const" in schema:
            allowed = ()  # the values say it
        for name in (allowed,) if isinstance(allowed, str) else allowed:
            words.append(_YAML_NAMES[name])
        values = _values(schema)
        words.extend("null" if v is None else repr(v) for v in values)
    unique = sorted(dict.fromkeys(words), key=lambda w: w.startswith("a string matching"), reverse=True)
    if len(unique) > _LISTED:  # optimizer names: a few, then how many more
        return ", ".join(unique[:_LISTED - 2]) + f" or {len(unique) - _LISTED + 2} other values"
    return unique[0] if len(unique) == 1 else ", ".join(unique[:-1]) + " or " + unique[-1]


def _matches(pattern: str, value: str) -> bool:
    """Whether `value` matches a schema `pattern` as pydantic tests it (a search, not a full match); a pattern
    Python's `re` cannot read accepts everything."""
    try:
        return _compiled(pattern).search(value) is not None
    except re.error:
        return True


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> re.Pattern:
    return re.compile(pattern)


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
    def __init__(self, root: dict, plugins: tuple[str, ...], top: Node) -> None:
        self.defs = root.get("$defs", {})
        self.plugins = plugins
        self.top = top

    def items_schema(self, sub: dict, node: Node) -> dict | None:
        """The model every item of the list `node` is checked against when `sub` chooses it by a top-level key
        (`x-axlint-items-by`) and the document sets that key to one of its cases; else None."""
        select = sub.get("x-axlint-items-by")
        if select is None or node.kind != "seq" or self.top.kind != "map":
            return None
        pair = self.top.get(select["key"])
        value = pair.value.value if pair is not None and pair.value.kind == "scalar" else None
        case = select["cases"].get(value) if isinstance(value, str) else None
        return {"type": "array", "items": {"$ref": case}} if case else None

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
                    "value": _shown(node)}
            return SchemaProblem(_lax_accepts(node, kind, allowed) or "wrong-type", path, "value", args)
        values = _values(schema) if "enum" in schema or "const" in schema else None
        if values is not None and (node.kind != "scalar" or not any(_equal(node.value, v) for v in values)):
            return self.enum_problem(node, [schema], path)
        if "pattern" in schema and kind == "string" and not _matches(schema["pattern"], node.value):
            return self.enum_problem(node, [schema], path)
        return None

    def enum_problem(self, node: Node, schemas: list[dict], path: KeyPath) -> SchemaProblem:
        """bad-enum for a scalar (with a did-you-mean among string values), wrong-type for a map or list."""
        args = {"key": _key_name(path), "value": _shown(node), "allowed": _expected(schemas), "got": yaml_type(node)}
        if node.kind != "scalar":
            return SchemaProblem("wrong-type", path, "value", {**args, "expected": args["allowed"]})
        words = [v for s in schemas for v in _values(s) if isinstance(v, str)]
        match = close_match(str(node.value), words, n=1, cutoff=SUGGEST_CUTOFF)
        return SchemaProblem("bad-enum", path, "value", args, match[0] if match else None)

    def check_union(self, node: Node, branches: list[dict], path: KeyPath) -> list[SchemaProblem]:
        """Valid when one branch is; otherwise descend into the branch of the node's own kind (map / list), or
        report one problem for the value covering every branch."""
        results = []
        for branch in branches:  # the first branch that takes the value as it is decides: later ones are not checked
            problems = self.check(node, branch, path)
            if not any(p.kind in _NOT_AS_IS for p in problems):
                return problems
            results.append(problems)
        for problems in results:  # else the first that takes it once coerced
            if not any(p.kind in FAILURES for p in problems):
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
                                                           "got": yaml_type(node), "value": _shown(node)})]

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
                    match = close_match(str(key), list(properties), n=1, cutoff=SUGGEST_CUTOFF)
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
                refused = deprecated.get("refused") and not _is_null(pair.value) and (
                    deprecated.get("refused_when_empty", True) or _truthy(pair.value))
                problems.append(SchemaProblem(
                    "removed-key" if refused else "deprecated-key", sub_path, "key",
                    {"key": key, "replacement": deprecated["replacement"] or "", "note": deprecated["note"]},
                    deprecated["replacement"]))
            plugin = sub.get("x-axlint-plugin")
            if plugin is not None and not any(p == plugin or p.startswith(plugin + ".") for p in self.plugins):
                problems.append(SchemaProblem("plugin-key-without-plugin", sub_path, "key",
                                              {"key": key, "plugin": plugin}, plugin))
            problems.extend(self.check(pair.value, self.items_schema(sub, pair.value) or sub, sub_path))
        return problems


def run_problems(run: "TrainingRun") -> list[tuple[Document, SchemaProblem]]:
    """Every schema problem of the run's files, against the releases the run is checked with (`run.schemas`, else
    the defaults): the YAML against Axolotl's schema (with the plugins it lists), the DeepSpeed mapping (a file of
    its own or inline) against DeepSpeed's, its paths then starting at the mapping's place in the file."""
    choice = run.schemas or default_choice()
    found: list[tuple[Document, SchemaProblem]] = []
    if run.axolotl is not None:
        doc = run.axolotl
        schema = load_schema("axolotl", choice.axolotl)
        found += [(doc, p) for p in check_node(doc.root, schema, plugins=listed_plugins(doc.root))]
    if run.ds_editable:
        node = run.deepspeed.node(run.ds_prefix)
        if node is not None and node.kind == "map":
            for p in check_node(node, load_schema("deepspeed", choice.deepspeed)):
                found.append((run.deepspeed, SchemaProblem(p.kind, run.ds_prefix + p.path, p.span_part,
                                                           p.message_args, p.suggestion)))
    return found
