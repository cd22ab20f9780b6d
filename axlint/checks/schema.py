"""Schema checks over both files of a run: unknown keys (with and without a value), wrong types, bad enum values,
deprecated and removed keys, plugin keys without their plugin, and values pydantic has to coerce. The schema walk
runs once per document, against the releases the run was asked to be checked with."""
from __future__ import annotations

from collections import Counter
from typing import Iterator

from axlint import edits
from axlint.document import Document, KeyPath
from axlint.fixes import Applicability, Fix
from axlint.rule import FixAvailability, Hit, Rule, format_value, register_check
from axlint.run import TrainingRun
from axlint.schemas.validator import SchemaProblem


def _hits(run: TrainingRun, kinds: set[str]) -> Iterator[tuple[Document, SchemaProblem, Hit]]:
    for doc, problem in run.schema_problems:
        if problem.kind in kinds:
            args = {k: format_value(v) for k, v in problem.message_args.items()}
            yield doc, problem, Hit(doc, doc.span(problem.path, problem.span_part), args)


def _sibling_exists(doc: Document, path: KeyPath, key: str) -> bool:
    parent = doc.node(path[:-1])
    return parent is not None and parent.get(key) is not None


def _fix(doc: Document, changes: list, applicability: Applicability, title: str) -> Fix | None:
    return Fix(doc.path, tuple(changes), applicability, title) if changes else None


def _rename_fix(doc: Document, path: KeyPath, new: str, applicability: Applicability) -> Fix | None:
    """Rename the key at `path` to `new`, unless a sibling already has that name (that would duplicate it)."""
    if _sibling_exists(doc, path, new):
        return None
    return _fix(doc, edits.rename_key(doc, path, new), applicability, f"rename `{path[-1]}` to `{new}`")


def _sets_nothing(doc: Document, problem: SchemaProblem) -> bool:
    """An unknown key with no value (`key:` or `key: null`) in a model that drops unknown keys: it changes nothing."""
    node = doc.node(problem.path)
    return (problem.message_args.get("effect") == "ignore" and node is not None and node.kind == "scalar"
            and node.value is None)


@register_check("schema_empty_unknown_key", args=("key", "parent", "hint"), fix=FixAvailability.SOMETIMES)
def empty_unknown_key(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """An unknown key without a value: dead text, removed safely (Axolotl would drop it anyway)."""
    for doc, problem, hit in _hits(run, {"unknown-key"}):
        if not _sets_nothing(doc, problem):
            continue
        hit.args["hint"] = f" (did you mean `{problem.suggestion}`?)" if problem.suggestion else ""
        hit.fix = _fix(doc, edits.delete_key(doc, problem.path), Applicability.SAFE,
                       f"delete `{problem.path[-1]}`")
        yield hit


@register_check("schema_unknown_key", args=("key", "parent", "effect", "hint"), fix=FixAvailability.SOMETIMES)
def unknown_key(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A key the schema does not know: Axolotl drops it silently, DeepSpeed's ZeRO blocks reject it. The rename to
    the suggested key is offered only when no other unknown key of the same mapping suggests it too (two renames to
    one name would write the key twice)."""
    found = [(doc, problem, hit) for doc, problem, hit in _hits(run, {"unknown-key"}) if not _sets_nothing(doc, problem)]
    targets = Counter((doc.path, problem.path[:-1], problem.suggestion) for doc, problem, _ in found)
    for doc, problem, hit in found:
        effect = problem.message_args.get("effect")
        hit.args["effect"] = "it is silently ignored" if effect == "ignore" else "the launch fails on it"
        hit.args["hint"] = f"; did you mean `{problem.suggestion}`?" if problem.suggestion else ""
        if problem.suggestion and targets[(doc.path, problem.path[:-1], problem.suggestion)] == 1:
            hit.fix = _rename_fix(doc, problem.path, problem.suggestion, Applicability.UNSAFE)
        yield hit


@register_check("schema_wrong_type", args=("key", "expected", "got", "value"))
def wrong_type(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    for _, _, hit in _hits(run, {"wrong-type"}):
        yield hit


@register_check("schema_bad_enum", args=("key", "allowed", "value", "hint"), fix=FixAvailability.SOMETIMES)
def bad_enum(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    for doc, problem, hit in _hits(run, {"bad-enum"}):
        hit.args["hint"] = f"; did you mean `{problem.suggestion}`?" if problem.suggestion else ""
        if problem.suggestion:
            hit.fix = _fix(doc, edits.set_value(doc, problem.path, problem.suggestion), Applicability.UNSAFE,
                           f"set `{problem.path[-1]}` to `{problem.suggestion}`")
        yield hit


@register_check("schema_deprecated_key", args=("key", "note", "hint"), fix=FixAvailability.SOMETIMES)
def deprecated_key(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A deprecated key with a direct replacement is renamed (Axolotl maps the old name to the new one: safe)."""
    yield from _old_keys(run, "deprecated-key", Applicability.SAFE)


def _old_keys(run: TrainingRun, kind: str, applicability: Applicability) -> Iterator[Hit]:
    for doc, problem, hit in _hits(run, {kind}):
        node = doc.node(problem.path)
        if node is not None and node.kind == "scalar" and node.value is None:
            continue  # `old_key:` with no value sets nothing
        replacement = problem.suggestion
        hit.args["hint"] = f"; use `{replacement}`" if replacement else ""
        renamable = replacement and "." not in replacement and not isinstance(getattr(node, "value", None), bool)
        if renamable:
            hit.fix = _rename_fix(doc, problem.path, replacement, applicability)
        yield hit


@register_check("schema_removed_key", args=("key", "note", "hint"))
def removed_key(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A key the chosen Axolotl release refuses at start-up (its schema marks the deprecation `refused`)."""
    for _, problem, hit in _hits(run, {"removed-key"}):
        replacement = problem.suggestion
        hit.args["hint"] = f"; use `{replacement}`" if replacement else "; delete it"
        yield hit


@register_check("schema_plugin_key_without_plugin", args=("key", "plugin"), fix=FixAvailability.SOMETIMES)
def plugin_key_without_plugin(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A plugin's key is read only when the plugin is listed in `plugins:`; otherwise it does nothing."""
    for doc, problem, hit in _hits(run, {"plugin-key-without-plugin"}):
        plugin = problem.message_args["plugin"]
        if "." in plugin and plugin.split(".")[-1][:1].isupper():
            hit.fix = _fix(doc, edits.append_item(doc, ("plugins",), plugin), Applicability.UNSAFE,
                           f"add `{plugin}` to `plugins:`")
        yield hit


@register_check("schema_coerced_value", args=("key", "value", "how"), fix=FixAvailability.SOMETIMES)
def coerced_value(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """A string where the schema takes a number or a boolean, which pydantic's lax mode converts: YAML 1.1 reads a
    plain `2e-4` as a string (writing `2.0e-4` says what is meant, the fix), and a quoted value (a JSON string
    among them) is one as written."""
    for doc, problem, hit in _hits(run, {"coerced-string"}):
        node = doc.node(problem.path)
        quoted = node is not None and bool(node.style)
        hit.args["how"] = ("is a quoted string, which pydantic converts; write it without the quotes" if quoted
                           else "is a string under YAML 1.1; write it with a decimal point")
        if quoted and isinstance(node.value, str):
            hit.args["value"] = f'"{node.value}"'
        if node is None or not isinstance(node.value, str) or quoted:
            yield hit
            continue
        try:
            number = float(node.value)
        except ValueError:
            yield hit
            continue
        hit.fix = _fix(doc, edits.set_value(doc, problem.path, number), Applicability.SAFE,
                       f"write `{'.'.join(map(str, problem.path))}: {node.value}` as a YAML 1.1 float")
        yield hit
