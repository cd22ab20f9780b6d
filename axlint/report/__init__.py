"""Output formats for diagnostics: full, concise, json, sarif, github."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from axlint.diagnostics import Diagnostic
from axlint.document import Source
from axlint.report.machine import render_github, render_json, render_sarif
from axlint.rule import Rule

if TYPE_CHECKING:
    from axlint.lint import RunScope, Skipped

FORMATS = ("full", "concise", "json", "sarif", "github")


def display_path(path: Path, cwd: Path | None = None) -> str:
    """`path` relative to the working folder when it lies inside it (`cwd`: that folder, resolved), else as given."""
    try:
        return str(path.resolve().relative_to(cwd or Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _display_paths(diags: list[Diagnostic]) -> dict[Path, str]:
    """`display_path` of each file the findings name, resolved once per file (resolving is a system call per
    folder of the path), not once per finding."""
    if not diags:
        return {}
    cwd = Path.cwd().resolve()
    return {path: display_path(path, cwd) for path in dict.fromkeys(d.path for d in diags)}


def render_concise(diags: list[Diagnostic], sources: dict[Path, Source], rules: list[Rule]) -> str:
    shown = _display_paths(diags)
    return "".join(f"{shown[d.path]}:{d.span.line}:{d.span.col}: {d.code} [{d.severity.value}] {d.message}"
                   f"{' [*]' if applicable(d) else ''}\n" for d in diags)


def applicable(d: Diagnostic) -> bool:
    """The finding has a fix that `axlint fix` can write (with --unsafe-fixes for an unsafe one)."""
    return d.fix is not None and d.fix.applicability.value != "display-only"


def render_full(diags: list[Diagnostic], sources: dict[Path, Source], rules: list[Rule]) -> str:
    """ruff-style: location, code and message, the source line with a caret under the span, and the fix title."""
    out = []
    shown = _display_paths(diags)
    for d in diags:
        out.append(f"{shown[d.path]}:{d.span.line}:{d.span.col}: {d.code} [{d.severity.value}] {d.message}")
        source = sources.get(d.path)
        line = source.line_text(d.span.line) if source else ""
        if line.strip():
            width = max(1, (d.span.end_col - d.span.col) if d.span.end_line == d.span.line else len(line) - d.span.col + 1)
            gutter = f"{d.span.line:>4} | "
            out.append(f"{gutter}{line.rstrip()}")
            out.append(" " * (len(gutter) - 2) + "| " + " " * (d.span.col - 1) + "^" * width + f" {d.name}")
        if d.fix:
            out.append(f"     = fix ({d.fix.applicability.value}): {d.fix.title}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def assumed_hardware(scopes: "Iterable[RunScope]", rules: list[Rule]) -> list[str]:
    """Labels of the GPUs assumed (nobody said which) for the configs whose memory was judged; none when no memory
    rule ran."""
    if not any(r.pack == "memory" for r in rules):
        return []
    return sorted({scope.assumed_hardware for scope in scopes if scope.assumed_hardware is not None},
                  key=_by_gpu_count)


def _by_gpu_count(label: str) -> tuple[int, str]:
    """A hardware label ("8×H100-80GB") in the order of its GPU count, then of its name: 2× before 16×."""
    count, _, name = label.partition("×")
    return (int(count), name) if count.isdigit() else (0, label)


def schema_versions(scopes: "Iterable[RunScope]", rules: list[Rule]) -> list[str]:
    """What the schema verdict was checked against ("schemas of Axolotl 0.18.0 (installed), DeepSpeed 0.18.9
    (allowed by Axolotl 0.18.0)"), and a note when a release asked for has no schema of its own; none when no
    schema rule ran."""
    if not any(r.pack == "schema" for r in rules):
        return []
    choices = list(dict.fromkeys(scope.schemas for scope in scopes if scope.schemas is not None))
    return [f"schemas of {c.label()}" for c in choices] + list(dict.fromkeys(n for c in choices for n in c.notes))


def scope_notes(skipped: int, assumed: list[str], schemas: list[str] | None = None) -> str:
    """What a summary must not hide: files skipped as not configs, the hardware the memory verdict assumed, and
    the Axolotl / DeepSpeed releases the schema verdict was checked against."""
    notes = list(schemas or [])
    if skipped:
        notes.append(f"{_files(skipped)} skipped: not Axolotl or DeepSpeed configs (--show-skipped lists them)")
    if assumed:
        notes.append(f"memory judged for an assumed {' or '.join(assumed)}: set `hardware`")
    return "".join(f"; {n}" for n in notes)


def summary_line(diags: list[Diagnostic], files: int, *, skipped: int = 0, assumed: list[str] | None = None,
                 schemas: list[str] | None = None) -> str:
    notes = scope_notes(skipped, assumed or [], schemas)
    if not diags:
        return f"All checks passed ({_files(files)}{notes})."
    sev = Counter(d.severity.value for d in diags)
    fixable = sum(1 for d in diags if d.fix and d.fix.applicability.value == "safe")
    parts = ", ".join(f"{sev[s]} {s}{'s' if sev[s] != 1 and s != 'info' else ''}" for s in ("error", "warning", "info") if sev[s])
    line = f"Found {len(diags)} problem{'s' if len(diags) != 1 else ''} ({parts}) in {_files(files)}{notes}."
    if fixable:
        line += f"\n[*] {fixable} fixable with `axlint fix --write`."
    return line


def render_skipped(skipped: "Iterable[Skipped]") -> str:
    """`--show-skipped`: one `path: skipped: why` line per file that is not a config."""
    return "".join(f"{display_path(s.path)}: skipped: {s.reason}\n" for s in skipped)


def render_statistics(diags: list[Diagnostic]) -> str:
    counts = Counter((d.code, d.name) for d in diags)
    fixable = Counter((d.code, d.name) for d in diags if applicable(d))
    return "".join(f"{n:>5}  {code:<7} {'[*]' if fixable[(code, name)] else '   '} {name}\n"
                   for (code, name), n in counts.most_common())


Renderer = Callable[[list[Diagnostic], dict[Path, Source], list[Rule]], str]


def printable(text: str) -> str:
    """`text` with lone surrogates written as `\\udcff` escapes, so it always encodes as UTF-8. They come from
    file names that are not UTF-8 (Python keeps their bytes as surrogates) and from `"\\ud83d"` escapes in YAML."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _encodable(render: Renderer) -> Renderer:
    def wrapped(diags: list[Diagnostic], sources: dict[Path, Source], rules: list[Rule]) -> str:
        return printable(render(diags, sources, rules))

    wrapped.__doc__ = render.__doc__
    return wrapped


RENDERERS: dict[str, Renderer] = {name: _encodable(render) for name, render in {
    "full": render_full, "concise": render_concise, "json": render_json, "sarif": render_sarif,
    "github": render_github,
}.items()}
