"""Text-edit builders over a Document: set, insert, rename, delete keys and append list items.

Every builder returns `list[Edit]` against `doc.text` (0-based character offsets) and never re-dumps the file:
comments, blank lines, quotes, indentation, key order and line endings survive. New text follows the file's own
conventions: its line ending (`\\n`, `\\r\\n` or a lone `\\r`: YAML reads all three as line breaks), its
indentation unit, how its block lists are indented, and for JSON the indentation of neighbouring members. Values
are rendered so that they load back as the same Python value: YAML 1.1 scalars exactly as `yaml.safe_load` reads
them (strings that any YAML reader could take for a bool, number or null are quoted), JSON through `json.dumps`.

A builder returns `[]` when the document already says what was asked (or, for `rename_key`, when the new key
is already taken), and raises `EditError` when the request does not fit the document's shape: a parent that is
a list or a scalar, a key that exists only through a YAML merge key (`<<: *base`) and would hide the merged
mapping if written. Inside `unfit_marked()` (how the engine builds fixes) a builder returns `[UNFIT]` instead, and
a fix holding UNFIT is dropped while its finding stays.
"""
from __future__ import annotations

import contextvars
import functools
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import yaml

from axlint.document import SAFE_LOADER, Document, KeyPath, Node, Pair
from axlint.lazypattern import LazyPattern


@dataclass(frozen=True, order=True)
class Edit:
    """Replace text[start:end] (0-based character offsets) with `text`; start == end inserts."""

    start: int
    end: int
    text: str


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, list[Edit]]:
    """Apply non-overlapping edits in offset order; returns the new text and the edits skipped for overlap."""
    out, pos, skipped, last_end = [], 0, [], -1
    for edit in sorted(set(edits)):
        if edit.start < last_end:
            skipped.append(edit)
            continue
        out.append(text[pos:edit.start])
        out.append(edit.text)
        pos = last_end = edit.end
    out.append(text[pos:])
    return "".join(out), skipped


class EditError(ValueError):
    """The requested change does not fit the document's shape."""


UNFIT = Edit(-1, -1, "")
"""The edit a builder returns under `unfit_marked()` for a change it cannot make."""

_MARK_UNFIT = contextvars.ContextVar("axlint_mark_unfit", default=False)


@contextmanager
def unfit_marked() -> Iterator[None]:
    """Builders return `[UNFIT]` instead of raising EditError (a fix is then dropped, its finding kept)."""
    token = _MARK_UNFIT.set(True)
    try:
        yield
    finally:
        _MARK_UNFIT.reset(token)


def _builder(function: Callable[..., list[Edit]]) -> Callable[..., list[Edit]]:
    @functools.wraps(function)
    def build(*args: Any, **kwargs: Any) -> list[Edit]:
        try:
            return function(*args, **kwargs)
        except EditError:
            if _MARK_UNFIT.get():
                return [UNFIT]
            raise

    return build


# ---------------------------------------------------------------------------------------------------- rendering

_YAML12_NOT_STR = LazyPattern(
    r"~|null|Null|NULL|true|True|TRUE|false|False|FALSE|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
"""Plain scalars a YAML 1.2 reader takes for something other than a string: quoted even where 1.1 would not."""


def _loads(text: str) -> Any:
    try:
        return yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError:
        return None


def _plain_ok(s: str, context: str) -> bool:
    """`s` can be written unquoted as a block value, flow item or key and loads back as this string."""
    if not s or s != s.strip() or any(c in s for c in "\n\r\t") or _YAML12_NOT_STR.fullmatch(s):
        return False
    probe = {"value": (f"k: {s}\n", {"k": s}), "flow": (f"[{s}]\n", [s]), "key": (f"{s}: 0\n", {s: 0}),
             "flow-key": (f"{{{s}: 0}}\n", {s: 0})}[context]
    return _loads(probe[0]) == probe[1]


def yaml_float(value: float) -> str:
    """A float as YAML 1.1 reads it back: `1e-05` is a string there, `1.0e-05` a float."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent if exponent[0] in '+-' else '+' + exponent}"
    return text if "." in text else text + ".0"


def yaml_scalar(value: Any, context: str = "value", quote: str = "") -> str:
    """A scalar as YAML 1.1 text; `quote` (`'` or `"`) is the style to keep for a string where it fits."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return yaml_float(value)
    if not isinstance(value, str):
        raise EditError(f"cannot write a {type(value).__name__} as a YAML scalar")
    single_ok = value.isprintable()
    if quote == "'" and single_ok:
        return "'" + value.replace("'", "''") + "'"
    if quote != '"' and _plain_ok(value, context):
        return value
    import json  # imported where JSON is read or written: its import compiles regexes, ~2 ms of a YAML check

    return json.dumps(value, ensure_ascii=False)


def yaml_flow(value: Any, context: str = "flow") -> str:
    """A value in YAML flow style: `[a, b]`, `{k: v}`, or a scalar."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_scalar(k, 'flow-key')}: {yaml_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_flow(v) for v in value) + "]"
    return yaml_scalar(value, context)


def _yaml_entry(key: Any, value: Any, indent: str, style: "_Style") -> list[str]:
    """Lines of `key: value` in block style at `indent`."""
    head = f"{indent}{yaml_scalar(key, 'key')}:"
    if isinstance(value, dict) and value:
        return [head] + [line for k, v in value.items() for line in _yaml_entry(k, v, indent + style.unit, style)]
    if isinstance(value, (list, tuple)) and value:
        return [head] + [line for v in value for line in _yaml_item(v, indent + style.dash, style)]
    return [f"{head} {yaml_flow(value, 'value')}"]


def _yaml_item(value: Any, indent: str, style: "_Style") -> list[str]:
    """Lines of one block list item `- value` whose dash is at `indent`."""
    if isinstance(value, dict) and value:
        inner = indent + "  "
        lines = [line for k, v in value.items() for line in _yaml_entry(k, v, inner, style)]
        return [f"{indent}- {lines[0][len(inner):]}"] + lines[1:]
    return [f"{indent}- {yaml_flow(value, 'value')}"]


def json_value(value: Any, indent: str, unit: str | None, eol: str) -> str:
    """`json.dumps` of a value whose first line continues a line indented by `indent` (unit None: one line)."""
    import json

    if unit is None:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=unit)
    return text.replace("\n", eol + indent)


# ---------------------------------------------------------------------------------------------------- file style


class _Style:
    """How a file writes things: line ending, indentation unit, block-list dash offset (YAML)."""

    def __init__(self, doc: Document) -> None:
        self.eol = "\r\n" if "\r\n" in doc.text else "\r" if "\r" in doc.text else "\n"
        self.unit, self.dash = _yaml_indents(doc) if doc.format == "yaml" else ("", "")
        self.json_unit = _json_unit(doc) if doc.format == "json" else None


def _yaml_indents(doc: Document) -> tuple[str, str]:
    """(mapping indentation unit, dash offset of block lists under a key), from the first examples found."""
    unit = dash = None
    stack = [doc.root]
    while stack and (unit is None or dash is None):
        node = stack.pop()
        for pair in node.pairs:
            child = pair.value
            if _is_block(doc, child) and child.span.start > pair.key.span.end:
                offset = _col(doc.text, child.span.start) - _col(doc.text, pair.key.span.start)
                if child.kind == "map" and unit is None and offset > 0:
                    unit = offset
                elif child.kind == "seq" and dash is None:
                    dash = offset
        stack.extend(reversed([*(p.value for p in node.pairs), *node.items]))
    unit = unit or 2
    return " " * unit, " " * (unit if dash is None else dash)


def _json_unit(doc: Document) -> str | None:
    """The indentation unit of a JSON file, or None when its root members share the braces' line."""
    if not doc.root.pairs:
        return "    "
    key = doc.root.pairs[0].key
    if not _begins_line(doc.text, key.span.start):
        return None
    return _indent_of(doc.text, key.span.start)[len(_indent_of(doc.text, doc.root.span.start)):] or "    "


# ---------------------------------------------------------------------------------------------------- positions


_BREAK = LazyPattern(r"\r\n|\r|\n")


def _line_start(text: str, pos: int) -> int:
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def _next_line(text: str, pos: int) -> int:
    """Offset just past the line break of the line holding `pos` (the text's end on a last line without one)."""
    found = _BREAK.search(text, pos)
    return len(text) if found is None else found.end()


def _col(text: str, pos: int) -> int:
    return pos - _line_start(text, pos)


def _indent_of(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _begins_line(text: str, pos: int) -> bool:
    return not text[_line_start(text, pos):pos].strip()


def _is_block(doc: Document, node: Node) -> bool:
    return node.kind in ("map", "seq") and doc.format == "yaml" and doc.text[node.span.start] not in "[{"


_ALIAS = LazyPattern(r"[\s:,\-\[]*(\*[^\s,\[\]{}]+)")


def _written_at(doc: Document, node: Node, after: int) -> tuple[int, int] | None:
    """Where an alias (`*name`) written after `after` stands, when `node` is one (its span is the anchor's)."""
    if node.span.start >= after:
        return None
    m = _ALIAS.match(doc.text, after)
    return (m.start(1), m.end(1)) if m else None


def _end(doc: Document, node: Node, after: int) -> int:
    """End of the last character that belongs to `node` as written after `after` (no trailing comments/blanks)."""
    alias = _written_at(doc, node, after)
    if alias:
        return alias[1]
    if node.kind == "scalar" or not _is_block(doc, node):
        return node.span.start + len(doc.text[node.span.start:node.span.end].rstrip())
    if node.kind == "map":
        last = node.pairs[-1]
        return _end(doc, last.value, last.key.span.end)
    prev = node.items[-2] if len(node.items) > 1 else None
    return _end(doc, node.items[-1], _end(doc, prev, node.span.start) if prev else node.span.start)


def _pair_end(doc: Document, pair: Pair) -> int:
    return _end(doc, pair.value, pair.key.span.end)


def _value_start(doc: Document, pair: Pair) -> int:
    alias = _written_at(doc, pair.value, pair.key.span.end)
    return alias[0] if alias else pair.value.span.start


def _colon_end(doc: Document, pair: Pair) -> int:
    """Offset just past the `:` that follows a key."""
    return doc.text.index(":", pair.key.span.end) + 1


def _insert_lines(text: str, pos: int, lines: list[str], eol: str) -> Edit:
    """Insert whole lines at a line start `pos`; at the end of a file without a final newline, keep it so."""
    body = eol.join(lines)
    if pos == len(text) and text and not text.endswith(("\n", "\r")):
        return Edit(pos, pos, eol + body)
    return Edit(pos, pos, body + eol)


def _refuse_shared(doc: Document, path: KeyPath) -> None:
    """Raise when a mapping or list on `path` (the last part included) is reached through an alias: its text is the
    anchor's (`&name`), so editing it would also change every other place that writes `*name`."""
    node = doc.root
    for part in path:
        child = node.child(part)
        if child is None:
            return
        pair = node.get(part) if node.kind == "map" else None
        written_after = pair.key.span.end if pair is not None else node.span.start
        if child.span.start < written_after:
            raise EditError(f"{'.'.join(map(str, path))} is shared through a YAML anchor; editing it would change "
                            "every place that uses the anchor")
        node = child


def _parent(doc: Document, path: KeyPath) -> Node:
    if not path:
        raise EditError("an empty key path names the whole document")
    parent = doc.node(path[:-1])
    if parent is None:
        raise EditError(f"no {'.'.join(map(str, path[:-1]))} in {doc.path}")
    return parent


# ---------------------------------------------------------------------------------------------------- builders


@_builder
def set_value(doc: Document, path: KeyPath, value: Any) -> list[Edit]:
    """Set the value at `path`; a missing key is inserted next to its siblings (missing parents created)."""
    _refuse_shared(doc, path[:-1])
    node = doc.node(path)
    if node is None:
        owner = doc.node(path[:-1])
        if owner is not None and owner.kind == "seq":
            raise EditError(f"no item {path[-1]} in the list at {'.'.join(map(str, path[:-1]))}")
        return insert_key(doc, path[:-1], path[-1], value)
    if _same(_data(doc, path), value):
        return []
    parent = _parent(doc, path)
    pair = parent.get(path[-1]) if parent.kind == "map" else None
    after = pair.key.span.end if pair else _item_after(doc, parent, node)
    style = _Style(doc)
    if doc.format == "json":
        start, end = node.span.start, node.span.end
        return [Edit(start, end, json_value(value, _indent_of(doc.text, start), style.json_unit, style.eol))]
    alias = _written_at(doc, node, after)
    start, end = alias if alias else (_anchor_end(doc.text, node.span.start), _end(doc, node, after))
    container = isinstance(value, (dict, list, tuple)) and bool(value)
    flow = _is_flow_context(doc, parent)
    if pair is not None and not flow and (_is_block(doc, node) or (container and node.value is None)):
        return _replace_block_value(doc, pair, start, end, value, style)
    context = "flow" if flow else "value"
    quote = node.style if node.style in ("'", '"') else ""
    text = yaml_scalar(value, context, quote) if isinstance(value, str) else yaml_flow(value, context)
    if start == end and doc.text[start - 1:start] == ":":
        text = " " + text
    return [Edit(start, end, text)]


_ABSENT = object()


def _data(doc: Document, path: KeyPath) -> Any:
    """The loaded value at `path` (absent for a node the loader drops, such as a merge key)."""
    data = doc.data
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return _ABSENT
    return data


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (`1 == True` and `1 == 1.0` are not the same here)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _anchor_end(text: str, start: int) -> int:
    """Skip an anchor (`&name `) and a tag (`!!str `) written before a value: the anchor stays, a tag goes."""
    m = re.match(r"&\S+\s+", text[start:])
    return start + m.end() if m else start


def _item_after(doc: Document, seq: Node, item: Node) -> int:
    index = next(i for i, n in enumerate(seq.items) if n is item)
    return seq.span.start if index == 0 else _end(doc, seq.items[index - 1], seq.span.start)


def _is_flow_context(doc: Document, container: Node) -> bool:
    return doc.format == "json" or doc.text[container.span.start] in "[{"


def _replace_block_value(doc: Document, pair: Pair, start: int, end: int, value: Any, style: "_Style") -> list[Edit]:
    """Replace a value in a block mapping; a non-empty list or dict goes on the lines under the key."""
    colon = _colon_end(doc, pair)
    if not (isinstance(value, (dict, list, tuple)) and value):
        return [Edit(colon, end, " " + yaml_flow(value, "value"))]
    key_indent = " " * _col(doc.text, pair.key.span.start)
    lines = _yaml_entry("k", value, key_indent, style)[1:]
    if start == end or _BREAK.search(doc.text, colon, end) is None:  # the old value sits on the key's line
        line_end = _next_line(doc.text, end)
        return [e for e in (Edit(colon, end, "") if end > colon else None,
                            _insert_lines(doc.text, line_end, lines, style.eol)) if e]
    return [Edit(colon, end, style.eol + style.eol.join(lines))]


@_builder
def insert_key(doc: Document, parent_path: KeyPath, key: str, value: Any, after: str | None = None) -> list[Edit]:
    """Insert `key: value` into the mapping at `parent_path`, after the sibling `after` (default: the last one).

    A missing parent is created (with its own missing parents); a null parent becomes a mapping; an existing
    key is set instead.
    """
    _refuse_shared(doc, parent_path)
    parent = doc.node(parent_path)
    if parent is None:
        depth = max(d for d in range(len(parent_path)) if doc.node(parent_path[:d]) is not None)
        nested: Any = {key: value}
        for part in reversed(parent_path[depth + 1:]):
            nested = {part: nested}
        return insert_key(doc, parent_path[:depth], parent_path[depth], nested)
    if parent.kind == "scalar" and parent.value is None:
        return set_value(doc, parent_path, {key: value})
    if parent.kind != "map":
        raise EditError(f"{'.'.join(map(str, parent_path)) or 'the document'} is not a mapping")
    if parent.get(key) is not None:
        return set_value(doc, parent_path + (key,), value)
    if isinstance(value, dict) and _data(doc, parent_path + (key,)) is not _ABSENT:
        raise EditError(f"{key} comes from a YAML merge key; writing it would hide the merged mapping")
    style = _Style(doc)
    anchor = parent.get(after) if after is not None else None
    anchor = anchor or (parent.pairs[-1] if parent.pairs else None)
    if doc.format == "json":
        import json

        return [_json_insert(doc, parent, anchor, json.dumps(key, ensure_ascii=False) + ": ", value, style)]
    if _is_flow_context(doc, parent):
        entry = f"{yaml_scalar(key, 'flow-key')}: {yaml_flow(value)}"
        return [_flow_insert(doc, parent, anchor, entry)]
    indent = " " * _col(doc.text, parent.pairs[0].key.span.start)
    pos = _next_line(doc.text, _pair_end(doc, anchor))
    return [_insert_lines(doc.text, pos, _yaml_entry(key, value, indent, style), style.eol)]


def _flow_insert(doc: Document, container: Node, anchor: Pair | Node | None, entry: str) -> Edit:
    """Insert a member into a one-line YAML flow collection, after `anchor` (None: the collection is empty)."""
    if anchor is None:
        return Edit(container.span.start + 1, container.span.end - 1, entry)
    end = _member_end(doc, container, anchor)
    return Edit(end, end, ", " + entry)


def _json_insert(doc: Document, container: Node, anchor: Pair | Node | None, head: str, value: Any,
                 style: "_Style") -> Edit:
    """Insert `head + value` into a JSON object or array after `anchor`, one per line if the file does so."""
    text = doc.text
    if anchor is None:
        if style.json_unit is None:
            return Edit(container.span.start + 1, container.span.end - 1, head + json_value(value, "", None, style.eol))
        outer = _indent_of(text, container.span.start)
        inner = outer + style.json_unit
        body = head + json_value(value, inner, style.json_unit, style.eol)
        return Edit(container.span.start + 1, container.span.end - 1, f"{style.eol}{inner}{body}{style.eol}{outer}")
    start = anchor.key.span.start if isinstance(anchor, Pair) else anchor.span.start
    end = _member_end(doc, container, anchor)
    if _begins_line(text, start) and style.json_unit is not None:
        indent = _indent_of(text, start)
        return Edit(end, end, f",{style.eol}{indent}{head}{json_value(value, indent, style.json_unit, style.eol)}")
    return Edit(end, end, ", " + head + json_value(value, "", None, style.eol))


def _member_end(doc: Document, container: Node, member: Pair | Node) -> int:
    if isinstance(member, Pair):
        return _pair_end(doc, member)
    return _end(doc, member, _item_after(doc, container, member))


@_builder
def append_item(doc: Document, path: KeyPath, value: Any) -> list[Edit]:
    """Append `value` to the list at `path` (block `- x` or flow `[a, b]`); a missing or null list is created."""
    _refuse_shared(doc, path)
    node = doc.node(path)
    if node is None or (node.kind == "scalar" and node.value is None):
        return set_value(doc, path, [value])
    if node.kind != "seq":
        raise EditError(f"{'.'.join(map(str, path))} is not a list")
    style = _Style(doc)
    last = node.items[-1] if node.items else None
    if doc.format == "json":
        return [_json_insert(doc, node, last, "", value, style)]
    if not _is_block(doc, node):
        return [_flow_insert(doc, node, last, yaml_flow(value))]
    assert last is not None  # a block list has at least one item
    pos = _next_line(doc.text, _member_end(doc, node, last))
    return [_insert_lines(doc.text, pos, _yaml_item(value, " " * _col(doc.text, node.span.start), style), style.eol)]


@_builder
def rename_key(doc: Document, path: KeyPath, new_key: str) -> list[Edit]:
    """Rename the key at `path`, keeping its quote style; `[]` if it is missing or `new_key` is already taken."""
    _refuse_shared(doc, path[:-1])
    key = doc.key_node(path)
    parent = doc.node(path[:-1])
    if key is None or parent is None or key.value == new_key or parent.get(new_key) is not None:
        return []
    if doc.format == "json":
        import json

        text = json.dumps(new_key, ensure_ascii=False)
    else:
        text = yaml_scalar(new_key, "flow-key" if _is_flow_context(doc, parent) else "key", key.style)
    return [Edit(key.span.start, key.span.end, text)]


@_builder
def delete_key(doc: Document, path: KeyPath) -> list[Edit]:
    """Delete the key at `path` (every duplicate of it) with its whole lines: nested block and own comment."""
    _refuse_shared(doc, path[:-1])
    parent = doc.node(path[:-1]) if path else None
    if parent is None or parent.kind != "map":
        return []
    doomed = parent.positions(path[-1])
    runs: list[list[int]] = []
    for i in doomed:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    delete = _delete_flow_run if _is_flow_context(doc, parent) else _delete_block_run
    return [delete(doc, parent, run[0], run[-1]) for run in runs]


def _delete_block_run(doc: Document, mapping: Node, first: int, last: int) -> Edit:
    """Remove pairs first..last of a block mapping, from their first line to the end of their last line."""
    text, pairs = doc.text, mapping.pairs
    start = pairs[first].key.span.start
    if not _begins_line(text, start):  # the first key of a list item, after `- `
        if last + 1 < len(pairs):
            return Edit(start, pairs[last + 1].key.span.start, "")
        return Edit(start, _pair_end(doc, pairs[last]), "{}")
    line_start, end = _line_start(text, start), _next_line(text, _pair_end(doc, pairs[last]))
    end = _inner_comments_end(text, end, _col(text, start))
    if end == len(text) and not text.endswith(("\n", "\r")) and line_start > 0:
        line_start -= 2 if text[line_start - 2:line_start] == "\r\n" else 1  # keep "no final newline"
    return Edit(line_start, end, "")


def _inner_comments_end(text: str, pos: int, key_col: int) -> int:
    """Past the comment lines right after a deleted block that are indented under its key (its commented-out
    children); a blank line or anything at the key's own indentation ends them."""
    while pos < len(text):
        line_end = _next_line(text, pos)
        line = text[pos:line_end]
        stripped = line.lstrip(" ")
        if not stripped.startswith("#") or len(line) - len(stripped) <= key_col:
            break
        pos = line_end
    return pos


def _delete_flow_run(doc: Document, container: Node, first: int, last: int) -> Edit:
    """Remove members first..last of a JSON object or flow mapping with the comma that separated them."""
    text, pairs = doc.text, container.pairs
    if last + 1 < len(pairs):
        start, follow = pairs[first].key.span.start, pairs[last + 1].key.span.start
        if _begins_line(text, start) and _begins_line(text, follow):
            return Edit(_line_start(text, start), _line_start(text, follow), "")
        return Edit(start, follow, "")
    if first > 0:
        return Edit(_pair_end(doc, pairs[first - 1]), _pair_end(doc, pairs[last]), "")
    return Edit(container.span.start + 1, container.span.end - 1, "")
