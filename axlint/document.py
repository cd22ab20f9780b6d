"""Parsed configuration files with exact spans for every key and value.

YAML is read with YAML 1.1 semantics exactly as Axolotl reads it (`yaml.safe_load`): the node tree comes from
`yaml.compose` with the safe loader and the Python value from the same loader's constructor, so `yes` is a bool
and `2e-4` a string, just as in the training run. JSON (DeepSpeed) is read by a small span-keeping parser whose
scalars are decoded by `json.loads`, so values equal what DeepSpeed's `json.load` sees.
"""
from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml

from axlint.diagnostics import Span
from axlint.lazypattern import LazyPattern

KeyPath = tuple[str | int, ...]

UTF8_BOM = b"\xef\xbb\xbf"
MAX_FILE_BYTES = 5 * 1024 * 1024
"""Axolotl and DeepSpeed configs are a few KiB; anything above 5 MiB is refused, not parsed."""
MAX_EXPANDED_NODES = 200_000
"""Alias expansion budget: a YAML 'billion laughs' document is rejected once its expanded tree passes this."""
MAX_NESTING = 200
"""Deepest collection nesting accepted (real configs nest < 10 levels); libyaml's composer recurses in C and
crashes the interpreter on nesting in the tens of thousands, so deeper YAML is refused before composing."""

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""What `yaml.safe_load` reads with, libyaml's loader where PyYAML has it (the same values, parsed in C)."""
SCALAR_TAGS_KEPT = 4096
"""Distinct scalars whose resolved tag is kept (the 252 configs of Axolotl's examples write about 1,000)."""


class _Loader(SAFE_LOADER):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader (libyaml's where PyYAML has it), whose implicit tag of a plain scalar is resolved once
    per distinct text. The resolver calls Python once per node and tries the regular expressions of the value's
    first character (bool, int, float, null, timestamp...): a fifth of a YAML load. The tag depends on the text and
    the style flags only (the safe loader has no path resolvers), so it is memoised."""

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            return _scalar_tag(value, implicit)
        return super().resolve(kind, value, implicit)


_RESOLVER = yaml.resolver.Resolver()


@lru_cache(maxsize=SCALAR_TAGS_KEPT)
def _scalar_tag(value: str, implicit: tuple[bool, bool]) -> str:
    """`yaml.resolver.Resolver.resolve` of a scalar node: the tag safe_load gives `value` written with `implicit`
    ((plain, quoted) style flags)."""
    return yaml.resolver.Resolver.resolve(_RESOLVER, yaml.ScalarNode, value, implicit)


class DocumentError(Exception):
    """The file cannot be read as a config; carries the location of the problem (reported as AX000)."""

    def __init__(self, message: str, span: Span | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span or Span.file_start()


@dataclass(slots=True)
class Node:
    """A mapping, sequence or scalar with its span; maps keep every pair in file order (duplicates too)."""

    kind: str
    span: Span
    value: Any = None
    pairs: Sequence["Pair"] = ()  # a list in a map (a scalar or list shares the empty tuple: most nodes are scalars)
    items: Sequence["Node"] = ()  # a list in a sequence
    style: str = ""
    tag: str = ""
    _index: tuple[int, dict[Any, list[int]]] | None = field(default=None, repr=False, compare=False)

    def positions(self, key: Any) -> list[int]:
        """Indexes into `pairs` of every pair with this key, in file order. A map keeps an index by key, built on
        first use (and again if pairs were added), so that looking keys up in a mapping of N keys costs O(1), not
        O(N): fixing N findings in one mapping stays linear."""
        if self.kind != "map":
            return []
        try:
            hash(key)
        except TypeError:  # a list or mapping used as a key (`? [a, b]`): compared one by one
            return [i for i, pair in enumerate(self.pairs) if pair.key.value == key]
        if self._index is None or self._index[0] != len(self.pairs):
            index: dict[Any, list[int]] = {}
            for i, pair in enumerate(self.pairs):
                try:
                    index.setdefault(pair.key.value, []).append(i)
                except TypeError:
                    continue
            self._index = (len(self.pairs), index)
        return self._index[1].get(key, [])

    def get(self, key: str | int) -> "Pair | None":
        """The last pair with this key (the one the loader keeps); None for a list or scalar."""
        found = self.positions(key)
        return self.pairs[found[-1]] if found else None

    def child(self, key: str | int) -> "Node | None":
        if self.kind == "map":
            pair = self.get(key)
            return pair.value if pair else None
        if self.kind == "seq" and isinstance(key, int) and -len(self.items) <= key < len(self.items):
            return self.items[key]
        return None


@dataclass(slots=True)
class Pair:
    """One entry of a mapping: its key node and its value node, each with its span."""

    key: Node
    value: Node


def _line_text(text: str, line: int) -> str:
    """Line `line` (1-based) of `text`, without its line break; empty past the end."""
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


@dataclass(frozen=True)
class Source:
    """A linted file's path and text: what a report shows of a finding's line once the file's document is no longer
    needed (a lint of many files keeps this, not every file's node tree)."""

    path: Path
    text: str

    def line_text(self, line: int) -> str:
        return _line_text(self.text, line)


@dataclass
class Document:
    """A loaded config file: its path and text, "yaml" or "json", the span-keeping node tree and the plain data."""

    path: Path
    text: str
    format: str
    root: Node
    data: Any

    def node(self, path: KeyPath) -> Node | None:
        node: Node | None = self.root
        for part in path:
            if node is None:
                return None
            node = node.child(part)
        return node

    def key_node(self, path: KeyPath) -> Node | None:
        if not path:
            return None
        parent = self.node(path[:-1])
        if parent is None or parent.kind != "map":
            return None
        pair = parent.get(path[-1])
        return pair.key if pair else None

    def span(self, path: KeyPath, part: str = "key") -> Span:
        """Span of the key (or value) at `path`, else of the closest existing ancestor's key, else line 1."""
        for depth in range(len(path), 0, -1):
            sub = path[:depth]
            node = self.key_node(sub) if part == "key" or depth < len(path) else self.node(sub)
            if node is None:  # the value itself: a list item has no key
                node = self.node(sub)
            if node is not None:
                return node.span
        return Span.file_start()

    def line_text(self, line: int) -> str:
        return _line_text(self.text, line)

    @property
    def source(self) -> Source:
        return Source(self.path, self.text)


def _span_from_offsets(text: str, line_starts: list[int], start: int, end: int) -> Span:
    import bisect

    sl = bisect.bisect_right(line_starts, start) - 1
    el = bisect.bisect_right(line_starts, max(end, start)) - 1
    return Span(sl + 1, start - line_starts[sl] + 1, el + 1, end - line_starts[el] + 1, start, end)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in re.finditer("\n", text))
    return starts


# ---------------------------------------------------------------------------------------------------- reading


def read_text(path: Path) -> str:
    """Read a config file as text: only a regular file, at most MAX_FILE_BYTES, never binary data.

    The type is checked before opening (a FIFO would block the open, a device such as /dev/zero never ends) and the
    read stops one byte past the limit, so no input can hang the run or fill the memory."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise DocumentError("is a directory, not a config file")
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError("not a regular file (a device, FIFO or socket); only files and stdin are read")
        if info.st_size > MAX_FILE_BYTES:
            raise DocumentError(f"file is {info.st_size / 2**20:.1f} MiB; a config over {MAX_FILE_BYTES >> 20} MiB is refused")
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise DocumentError("file not found") from None
    except PermissionError:
        raise DocumentError("permission denied") from None
    except OSError as exc:
        raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the name
        raise DocumentError("cannot read: the file name holds a NUL byte") from None
    return decode_bytes(raw)


BOM_IN_JSON = ("starts with a UTF-8 byte order mark: launch reads the DeepSpeed file with json.load, which raises "
               "\"Unexpected UTF-8 BOM\"; save it without the mark")


def starts_with_bom(path: Path) -> bool:
    """The regular file at `path` begins with the UTF-8 byte order mark (False when it cannot be read)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return False
        with path.open("rb") as fh:
            return fh.read(len(UTF8_BOM)) == UTF8_BOM
    except (OSError, ValueError):
        return False


def decode_bytes(raw: bytes) -> str:
    if len(raw) > MAX_FILE_BYTES:
        raise DocumentError(f"input is {len(raw) / 2**20:.1f} MiB; a config over {MAX_FILE_BYTES >> 20} MiB is refused")
    if b"\x00" in raw[:8192]:
        raise DocumentError("binary data (NUL bytes), not a text config")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        body = raw[len(UTF8_BOM):] if raw.startswith(UTF8_BOM) else raw  # utf-8-sig counts after the BOM
        before = body[:exc.start]
        line, col = before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1
        raise DocumentError(f"not UTF-8 text (invalid byte 0x{body[exc.start]:02x})",
                            Span(line, col, line, col + 1, exc.start, exc.start + 1)) from None
    return text


def load_document(path: Path, text: str | None = None, *, json_only: bool = False) -> Document:
    """Parse a YAML or JSON config (by suffix; a `.json` file or stdin text starting with `{` is JSON). With
    `json_only` the text is JSON whatever the name says: a DeepSpeed file is read with `json.load`."""
    if text is None:
        text = read_text(path)
    is_json = json_only or path.suffix.lower() == ".json" or (path.suffix == "" and text.lstrip().startswith("{"))
    if not text.strip():
        raise DocumentError("empty file: expected a mapping of config keys")
    doc = _load_json(path, text) if is_json else _load_yaml(path, text)
    if doc.root.kind != "map":
        raise DocumentError(f"the top level is a {_kind_word(doc.root)}, expected a mapping of config keys", doc.root.span)
    return doc


def _kind_word(node: Node) -> str:
    return {"seq": "list", "scalar": "scalar value"}.get(node.kind, node.kind)


# ---------------------------------------------------------------------------------------------------- YAML


def _mark_span(node: yaml.Node | yaml.Event) -> Span:
    s, e = node.start_mark, node.end_mark
    return Span(s.line + 1, s.column + 1, e.line + 1, e.column + 1, s.index, e.index)


def _check_nesting(text: str) -> None:
    """Refuse YAML nested deeper than MAX_NESTING, scanning parser events (iterative, no recursion).

    Every nesting level needs one of `[{-:?`, so text with fewer of them is skipped without parsing."""
    if sum(text.count(ch) for ch in "[{-:?") <= MAX_NESTING:
        return
    scanner, depth = _Loader(text), 0
    try:
        while (event := scanner.get_event()) is not None:
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_NESTING:
                    raise DocumentError(f"YAML nested deeper than {MAX_NESTING} levels", _mark_span(event))
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    finally:
        scanner.dispose()


def _load_yaml(path: Path, text: str) -> Document:
    if text.startswith("\ufeff"):  # a second byte order mark: the first was taken off when decoding
        raise DocumentError("the file starts with two byte order marks (U+FEFF): Axolotl's YAML reader drops one and "
                            "reads the other as part of the first key, which is then ignored; remove the extra mark")
    loader = _Loader(text)
    try:
        _check_nesting(text)
        root = loader.get_single_node()
        if root is None:
            raise DocumentError("empty document: expected a mapping of config keys")
        if "*" in text:  # no alias indicator, no alias to expand
            _expanded_size(root, {}, set())
        tree = _convert_yaml(root, loader)
        data = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = Span(mark.line + 1, mark.column + 1, mark.line + 1, mark.column + 1, mark.index, mark.index) if mark else None
        problem = ", ".join(filter(None, (exc.context, exc.problem))) or str(exc)
        if isinstance(exc, yaml.constructor.ConstructorError) and "could not determine a constructor" in problem:
            problem = f"unsafe or unknown tag {problem.split('tag', 1)[-1].strip()}; axlint never constructs tagged objects"
        raise DocumentError(f"invalid YAML: {problem}", span) from None
    except yaml.YAMLError as exc:
        raise DocumentError(f"invalid YAML: {exc}") from None
    except RecursionError:
        raise DocumentError("YAML nested too deeply") from None
    finally:
        loader.dispose()
    return Document(path, text, "yaml", tree, data)


_STYLE = {None: "", "'": "'", '"': '"', "|": "|", ">": ">"}
_ScalarNode, _MappingNode = yaml.ScalarNode, yaml.MappingNode
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _expanded_size(node: yaml.Node, sizes: dict[int, int], active: set[int]) -> int:
    """Nodes in the tree once aliases are expanded, memoised per node, so a "billion laughs" document costs only
    its written size to reject. Raises at the first node (innermost first) that expands past the budget."""
    if id(node) in sizes:
        return sizes[id(node)]
    if id(node) in active:
        raise DocumentError("recursive YAML alias", _mark_span(node))
    active.add(id(node))
    total = 1 + sum(_expanded_size(child, sizes, active) for child in _children(node))
    active.discard(id(node))
    if total > MAX_EXPANDED_NODES:
        raise DocumentError(f"YAML aliases expand to over {MAX_EXPANDED_NODES} nodes (an alias bomb?)", _mark_span(node))
    sizes[id(node)] = total
    return total


def _convert_yaml(node: yaml.Node, loader: Any) -> Node:
    span = _mark_span(node)
    if isinstance(node, _ScalarNode):  # most nodes: tested first
        # the scalar exactly as safe_load constructs it; a merge key `<<` has no constructor of its own
        tag = node.tag
        if tag == _STR_TAG:  # SafeConstructor's str is the scalar's text: kept for construct_document to reuse
            value = loader.constructed_objects[node] = node.value
        else:
            value = "<<" if tag == _MERGE_TAG else loader.construct_object(node)
        return Node("scalar", span, value=value, style=_STYLE.get(node.style, ""), tag=tag)
    if isinstance(node, _MappingNode):
        pairs = [Pair(_convert_yaml(k, loader), _convert_yaml(v, loader)) for k, v in node.value]
        return Node("map", span, pairs=pairs, tag=node.tag)
    return Node("seq", span, items=[_convert_yaml(v, loader) for v in node.value], tag=node.tag)


# ---------------------------------------------------------------------------------------------------- JSON


_WS = LazyPattern(r"[ \t\n\r]*")
_NUMBER = LazyPattern(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = LazyPattern(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_LITERALS = {"true": True, "false": False, "null": None}


class _JsonParser:
    """Recursive-descent JSON parser (RFC 8259) that records spans and keeps duplicate keys."""

    def __init__(self, text: str) -> None:
        import json  # imported where JSON is read or written: its import compiles regexes, ~2 ms of a YAML check

        self.decode = json.loads
        self.text = text
        self.pos = 0
        self.line_starts = _line_starts(text)
        self.depth = 0

    def span(self, start: int, end: int) -> Span:
        return _span_from_offsets(self.text, self.line_starts, start, end)

    def fail(self, message: str, at: int | None = None) -> DocumentError:
        at = self.pos if at is None else at
        return DocumentError(f"invalid JSON: {message}", self.span(at, at))

    def skip(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def parse(self) -> Node:
        self.skip()
        node = self.value()
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("extra data after the top-level value")
        return node

    def value(self) -> Node:
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of file")
        ch = self.text[self.pos]
        if ch == "{":
            return self.container("}", self.obj_member, "map")
        if ch == "[":
            return self.container("]", self.array_item, "seq")
        if ch == '"':
            return self.string()
        m = _NUMBER.match(self.text, self.pos)
        if m and m.end() > self.pos:
            self.pos = m.end()
            return Node("scalar", self.span(m.start(), m.end()), value=self.decode(m.group()))
        for word, val in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                start, self.pos = self.pos, self.pos + len(word)
                return Node("scalar", self.span(start, self.pos), value=val)
        raise self.fail(f"unexpected character {ch!r}")

    def string(self) -> Node:
        m = _STRING.match(self.text, self.pos)
        if not m:
            raise self.fail("malformed string")
        self.pos = m.end()
        return Node("scalar", self.span(m.start(), m.end()), value=self.decode(m.group()), style='"')

    def container(self, close: str, member, kind: str) -> Node:
        start = self.pos
        self.pos += 1
        self.depth += 1
        if self.depth > 200:
            raise self.fail("nested too deeply")
        node = Node(kind, self.span(start, start), pairs=[] if kind == "map" else (),
                    items=[] if kind == "seq" else ())
        self.skip()
        if self.text.startswith(close, self.pos):
            self.pos += 1
        else:
            while True:
                member(node)
                self.skip()
                if self.text.startswith(",", self.pos):
                    self.pos += 1
                    self.skip()
                    continue
                if self.text.startswith(close, self.pos):
                    self.pos += 1
                    break
                raise self.fail(f"expected ',' or '{close}'")
        self.depth -= 1
        node.span = self.span(start, self.pos)
        return node

    def obj_member(self, node: Node) -> None:
        if not self.text.startswith('"', self.pos):
            raise self.fail("expected a double-quoted key")
        key = self.string()
        self.skip()
        if not self.text.startswith(":", self.pos):
            raise self.fail("expected ':' after the key")
        self.pos += 1
        self.skip()
        node.pairs.append(Pair(key, self.value()))

    def array_item(self, node: Node) -> None:
        node.items.append(self.value())


def _load_json(path: Path, text: str) -> Document:
    root = _JsonParser(text).parse()
    return Document(path, text, "json", root, _json_data(root))


def _json_data(node: Node) -> Any:
    if node.kind == "map":
        return {p.key.value: _json_data(p.value) for p in node.pairs}
    if node.kind == "seq":
        return [_json_data(i) for i in node.items]
    return node.value


# ---------------------------------------------------------------------------------------------------- walking


def iter_pairs(node: Node, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Pair]]:
    """Every mapping pair under `node`, depth first, with its key path."""
    if node.kind == "map":
        for pair in node.pairs:
            path = prefix + (pair.key.value,)
            yield path, pair
            yield from iter_pairs(pair.value, path)
    elif node.kind == "seq":
        for i, item in enumerate(node.items):
            yield from iter_pairs(item, prefix + (i,))


def duplicate_keys(node: Node, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Pair, Pair]]:
    """(path, first, repeated) for every key given twice in one mapping."""
    if node.kind == "map":
        seen: dict[Any, Pair] = {}
        for pair in node.pairs:
            key = pair.key.value
            if pair.key.kind == "scalar" and key != "<<":
                try:
                    if key in seen:
                        yield prefix + (key,), seen[key], pair
                    else:
                        seen[key] = pair
                except TypeError:
                    pass
            yield from duplicate_keys(pair.value, prefix + (key,))
    elif node.kind == "seq":
        for i, item in enumerate(node.items):
            yield from duplicate_keys(item, prefix + (i,))
