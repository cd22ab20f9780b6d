"""The condition language of simple rules: `{key: PATH, OP: VALUE}` with OP in exists, equals, not_equals, in,
not_in, greater_than, less_than, truthy, matches, contains; combined with all / any / not. A VALUE may be
`{key: OTHER_PATH}` to compare two keys.

PATH prefixes: none = the Axolotl config with defaults, `raw:` = as written, `ds:` = DeepSpeed with "auto"
resolved, `ds_raw:` = as written, `run:` = attributes of the run (world_size, world_size_assumed), `facts:` = a
resolved fact of `axlint.facts.RunFacts` as Axolotl and DeepSpeed read it (`facts:sample_packing` is true for
`sample_packing: "yes"`).
"""
from __future__ import annotations

import re
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from axlint.diagnostics import Span
from axlint.document import Document, KeyPath
from axlint.facts import Fact
from axlint.lax import as_number
from axlint.packs import PackError
from axlint.rule import MISSING, Hit, Rule, format_value
from axlint.run import TrainingRun


@lru_cache(maxsize=None)
def _parts(rest: str) -> tuple[str, ...]:
    """The keys of a dotted path; the packs name a few hundred paths, each looked up for every config."""
    return tuple(rest.split("."))


def lookup(run: TrainingRun, path: str) -> Any:
    """The value at a prefixed key path (see module docstring), or MISSING."""
    prefix, _, rest = path.rpartition(":")
    if prefix == "run":
        return getattr(run, rest, MISSING)
    if prefix == "facts":
        value = getattr(run.facts, rest, MISSING)
        value = value.value if isinstance(value, Fact) else value
        return value.value if isinstance(value, Enum) else value
    data: Any = _SOURCES[prefix](run) if prefix in _SOURCES else MISSING
    for part in _parts(rest):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return MISSING
    return data


_SOURCES = {"": lambda run: run.config, "raw": lambda run: run.raw, "ds": lambda run: run.ds,
            "ds_raw": lambda run: run.ds_raw}
"""The mapping each key-path prefix reads; only the one named is computed (`ds_raw` walks the DeepSpeed file)."""


def _operand(run: TrainingRun, value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"key"}:
        return lookup(run, value["key"])
    return value


def _leaf(run: TrainingRun, cond: dict[str, Any]) -> bool:
    value = lookup(run, cond["key"])
    for op, raw in cond.items():
        if op == "key":
            continue
        arg = _operand(run, raw)
        if op == "exists":
            ok = (value is not MISSING and value is not None) == bool(arg)
        elif value is MISSING or arg is MISSING:
            return False
        elif op == "equals":
            ok = value == arg and isinstance(value, bool) == isinstance(arg, bool)
        elif op == "not_equals":
            ok = value != arg
        elif op == "in":
            ok = value in arg
        elif op == "not_in":
            ok = value not in arg
        elif op in ("greater_than", "less_than"):
            a, b = as_number(value), as_number(arg)
            ok = a is not None and b is not None and (a > b if op == "greater_than" else a < b)
        elif op == "truthy":
            ok = bool(value) == bool(arg)
        elif op == "matches":
            ok = isinstance(value, str) and re.search(arg, value) is not None
        elif op == "contains":
            ok = isinstance(value, (list, tuple, str)) and arg in value
        else:
            raise PackError(f"unknown operator {op!r} in condition {cond}")
        if not ok:
            return False
    return True


def evaluate(run: TrainingRun, cond: Any) -> bool:
    if isinstance(cond, list):
        return all(evaluate(run, c) for c in cond)
    if not isinstance(cond, dict):
        raise PackError(f"a condition is a mapping or a list, got {cond!r}")
    if "all" in cond:
        return all(evaluate(run, c) for c in cond["all"])
    if "any" in cond:
        return any(evaluate(run, c) for c in cond["any"])
    if "not" in cond:
        return not evaluate(run, cond["not"])
    return _leaf(run, cond)


def condition_keys(cond: Any) -> Iterator[str]:
    if isinstance(cond, list):
        for c in cond:
            yield from condition_keys(c)
    elif isinstance(cond, dict):
        for k in ("all", "any"):
            for c in cond.get(k, []):
                yield from condition_keys(c)
        if "not" in cond:
            yield from condition_keys(cond["not"])
        if "key" in cond:
            yield cond["key"]


_CONDITION_PREFIXES: dict[tuple[str, Path], tuple[str, ...]] = {}


def scope_ok(run: TrainingRun, rule: Rule) -> bool:
    """A condition rule over Axolotl keys needs the YAML; one over DeepSpeed keys needs a DeepSpeed config."""
    ident = (rule.code, rule.source)
    if ident not in _CONDITION_PREFIXES:  # a rule's condition never changes: walk it once per process
        _CONDITION_PREFIXES[ident] = tuple(key.rpartition(":")[0] for key in condition_keys(rule.when))
    for prefix in _CONDITION_PREFIXES[ident]:
        if prefix in ("", "raw") and run.axolotl is None:
            return False
        if prefix in ("ds", "ds_raw") and run.ds is None:
            return False
    return True


def locate(run: TrainingRun, path: str, part: str = "key") -> tuple[Document, Span] | None:
    """Where a prefixed key path is written, or None if it is not written anywhere."""
    prefix = path.rpartition(":")[0]
    keys = keys_of(path)
    if prefix in ("ds", "ds_raw"):
        if run.ds_raw is None:
            return None
        doc, span = run.ds_span(keys, part)
        return doc, span
    if prefix in ("", "raw") and run.axolotl is not None and run.axolotl.node(keys) is not None:
        return run.axolotl, run.axolotl.span(keys, part)
    return None


def condition_hit(run: TrainingRun, rule: Rule) -> Hit:
    """Point at the first `report` key (or condition key) that is written; else the DeepSpeed reference or line 1."""
    for path in (*rule.report, *condition_keys(rule.when)):
        found = locate(run, path, rule.report_part)
        if found and (found[0].node(keys_of(path)) is not None or path.startswith("ds")):
            doc, span = found
            return Hit(doc, span, {"value": format_value(lookup(run, path))})
    doc = run.axolotl or run.deepspeed
    assert doc is not None
    return Hit(doc, Span.file_start(), {})


def keys_of(path: str) -> KeyPath:
    """The key path of a prefixed path (`ds:zero_optimization.stage` -> ("zero_optimization", "stage"))."""
    rest = path.rpartition(":")[2]
    return tuple(int(p) if p.isdigit() else p for p in rest.split("."))
