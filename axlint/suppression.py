"""Suppression comments: `# axlint: ignore[CODE,...]` (this line and the next) and
`# axlint: file-ignore[CODE,...]`, and the AX002 finding for a suppression that matched nothing."""
from __future__ import annotations

from dataclasses import dataclass, field

from axlint.diagnostics import Diagnostic, Span
from axlint.document import Document
from axlint.lazypattern import LazyPattern
from axlint.rule import Rule, emit

_SUPPRESS = LazyPattern(r"#\s*axlint:\s*(ignore|file-ignore)\[([^\]]*)\]")


@dataclass
class Suppression:
    """One `# axlint: ignore[...]` or `file-ignore[...]` comment, and the codes it has silenced so far (`used`)."""

    kind: str
    selectors: list[str]
    line: int
    span: Span
    used: set[str] = field(default_factory=set)


def suppressions(doc: Document) -> list[Suppression]:
    """`# axlint: ignore[CODE,...]` (this line and the next) and `# axlint: file-ignore[CODE,...]` comments."""
    if doc.format != "yaml" or "axlint:" not in doc.text:
        return []
    found, offset = [], 0
    for number, line in enumerate(doc.text.splitlines(keepends=True), start=1):
        for m in _SUPPRESS.finditer(line):
            if _in_comment(line, m.start()):
                selectors = [s.strip() for s in m.group(2).split(",") if s.strip()]
                span = Span(number, m.start() + 1, number, m.end() + 1, offset + m.start(), offset + m.end())
                found.append(Suppression(m.group(1), selectors, number, span))
        offset += len(line)
    return found


def _in_comment(line: str, pos: int) -> bool:
    """The `#` at `pos` is inside a YAML comment: it starts one (line start or after whitespace, outside quotes)
    or follows the `#` of an earlier comment, as in `# why # axlint: ignore[...]`. A quote opens a quoted scalar
    only where a scalar can start, so the apostrophe of `it's` in a plain value is just a character."""
    quote, escaped = None, False
    for i, ch in enumerate(line[:pos]):
        if escaped:
            escaped = False
        elif quote == '"' and ch == "\\":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"" and (i == 0 or line[i - 1] in " \t[{,"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return True
    return quote is None and (pos == 0 or line[pos - 1].isspace())


def _selector_hits(selector: str, diag: Diagnostic) -> bool:
    return selector == "ALL" or selector == diag.name or diag.code.startswith(selector)


def apply_suppressions(diags: list[Diagnostic], docs: list[Document], unused_rule: Rule | None) -> list[Diagnostic]:
    """Drop suppressed diagnostics; report suppressions that matched nothing when `unused_rule` is selected."""
    by_path = {doc.path: (doc, suppressions(doc)) for doc in docs}
    kept = []
    for diag in diags:
        _, sups = by_path.get(diag.path, (None, []))
        hit = None
        for sup in sups:
            in_range = sup.kind == "file-ignore" or diag.span.line in (sup.line, sup.line + 1)
            if in_range:
                hit = next((s for s in sup.selectors if _selector_hits(s, diag)), None)
                if hit:
                    sup.used.add(hit)
                    break
        if not hit:
            kept.append(diag)
    if unused_rule is not None:
        for doc, sups in by_path.values():
            for sup in sups:
                unused = [s for s in sup.selectors if s not in sup.used]
                if unused:
                    kept.append(emit(unused_rule, doc.path, sup.span, codes=", ".join(unused)))
    return kept
