"""Output formats for diagnostics: full, concise, json, sarif, github."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable

from axlint.diagnostics import Diagnostic
from axlint.document import Document
from axlint.engine import Rule
from axlint.report.machine import render_github, render_json, render_sarif

FORMATS = ("full", "concise", "json", "sarif", "github")


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def render_concise(diags: list[Diagnostic], documents: dict[Path, Document], rules: list[Rule]) -> str:
    return "".join(f"{display_path(d.path)}:{d.span.line}:{d.span.col}: {d.code} [{d.severity.value}] {d.message}"
                   f"{' [*]' if d.fix else ''}\n" for d in diags)


def render_full(diags: list[Diagnostic], documents: dict[Path, Document], rules: list[Rule]) -> str:
    """ruff-style: location, code and message, the source line with a caret under the span, and the fix title."""
    out = []
    for d in diags:
        out.append(f"{display_path(d.path)}:{d.span.line}:{d.span.col}: {d.code} [{d.severity.value}] {d.message}")
        doc = documents.get(d.path)
        line = doc.line_text(d.span.line) if doc else ""
        if line.strip():
            width = max(1, (d.span.end_col - d.span.col) if d.span.end_line == d.span.line else len(line) - d.span.col + 1)
            gutter = f"{d.span.line:>4} | "
            out.append(f"{gutter}{line.rstrip()}")
            out.append(" " * (len(gutter) - 2) + "| " + " " * (d.span.col - 1) + "^" * width + f" {d.name}")
        if d.fix:
            out.append(f"     = fix ({d.fix.applicability.value}): {d.fix.title}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def summary_line(diags: list[Diagnostic], files: int) -> str:
    if not diags:
        return f"All checks passed ({files} file{'s' if files != 1 else ''})."
    sev = Counter(d.severity.value for d in diags)
    fixable = sum(1 for d in diags if d.fix and d.fix.applicability.value == "safe")
    parts = ", ".join(f"{sev[s]} {s}{'s' if sev[s] != 1 and s != 'info' else ''}" for s in ("error", "warning", "info") if sev[s])
    line = f"Found {len(diags)} problem{'s' if len(diags) != 1 else ''} ({parts}) in {files} file{'s' if files != 1 else ''}."
    if fixable:
        line += f"\n[*] {fixable} fixable with `axlint fix --write`."
    return line


def render_statistics(diags: list[Diagnostic]) -> str:
    counts = Counter((d.code, d.name) for d in diags)
    fixable = Counter((d.code, d.name) for d in diags if d.fix)
    return "".join(f"{n:>5}  {code:<7} {'[*]' if fixable[(code, name)] else '   '} {name}\n"
                   for (code, name), n in counts.most_common())


RENDERERS: dict[str, Callable[[list[Diagnostic], dict[Path, Document], list[Rule]], str]] = {
    "full": render_full, "concise": render_concise, "json": render_json, "sarif": render_sarif,
    "github": render_github,
}
