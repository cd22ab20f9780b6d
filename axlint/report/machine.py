"""Machine-readable outputs: JSON (ruff-like), SARIF 2.1.0, GitHub Actions workflow commands."""
from __future__ import annotations

from pathlib import Path

from axlint import __version__
from axlint.diagnostics import Diagnostic
from axlint.document import Source
from axlint.packs import builtin_rules_dir
from axlint.rule import Rule

DOCS_URL = "https://github.com/axlint/axlint/blob/main/docs/rules.md#{code}"


def _path(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def diagnostic_json(d: Diagnostic) -> dict:
    fix = None
    if d.fix:
        fix = {"applicability": d.fix.applicability.value, "message": d.fix.title, "path": _path(d.fix.path),
               "edits": [{"start": e.start, "end": e.end, "content": e.text} for e in d.fix.edits]}
    out = {"path": _path(d.path), "code": d.code, "name": d.name, "severity": d.severity.value,
           "category": d.category, "message": d.message,
           "location": {"line": d.span.line, "column": d.span.col},
           "end_location": {"line": d.span.end_line, "column": d.span.end_col}, "fix": fix}
    if "hardware" in d.extra:  # a memory verdict: the GPUs it was judged for, and whether they were assumed
        out["hardware"] = d.extra["hardware"]
    if "schemas" in d.extra:  # a schema verdict: the Axolotl and DeepSpeed releases it was checked against
        out["schemas"] = d.extra["schemas"]
    return out


def render_json(diags: list[Diagnostic], sources: dict[Path, Source], rules: list[Rule]) -> str:
    import json  # imported where JSON is read or written: its import compiles regexes, ~2 ms of a YAML check

    return json.dumps([diagnostic_json(d) for d in diags], indent=2) + "\n"


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_TEXT_LIMIT = 1024
"""GitHub code scanning reads at most this many characters of a rule's descriptions."""


def _sarif_uri(path: Path) -> str:
    """A URI reference: percent-encoded and relative when under the working folder, else a file:// URI."""
    from urllib.parse import quote  # SARIF only: off the path of the other formats

    rel = _path(path)
    return Path(rel).resolve().as_uri() if Path(rel).is_absolute() else quote(rel)


def _text(text: str) -> dict[str, str]:
    return {"text": text.strip()[:SARIF_TEXT_LIMIT]}


def _descriptor(r: Rule, builtin: bool) -> dict:
    """A SARIF `reportingDescriptor`; only built-in rules link to axlint's rule docs."""
    descriptor = {
        "id": r.code, "name": r.name,
        "shortDescription": _text(r.summary),
        "fullDescription": _text(r.docs.get("why") or r.summary),
        "help": _text(f"{r.summary}\n\n{r.docs.get('why') or ''}"),
        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity.value]},
        "properties": {"category": r.category, "fixable": r.fixable.value},
    }
    if builtin:
        descriptor["helpUri"] = DOCS_URL.format(code=r.code.lower())
    return descriptor


def render_sarif(diags: list[Diagnostic], sources: dict[Path, Source], rules: list[Rule]) -> str:
    """SARIF 2.1.0 with one `reportingDescriptor` per selected rule (GitHub code scanning reads this)."""
    index = {r.code: i for i, r in enumerate(rules)}
    builtin = builtin_rules_dir()
    descriptors = [_descriptor(r, r.source.parent == builtin) for r in rules]
    results = []
    for d in diags:
        result = {
            "ruleId": d.code, "level": _SARIF_LEVEL[d.severity.value], "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _sarif_uri(d.path)},
                "region": {"startLine": d.span.line, "startColumn": d.span.col,
                           "endLine": d.span.end_line, "endColumn": max(d.span.end_col, d.span.col)}}}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        properties = {key: d.extra[key] for key in ("hardware", "schemas") if key in d.extra}
        if properties:
            result["properties"] = properties
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "axlint", "version": __version__, "informationUri":
                                      "https://github.com/axlint/axlint", "rules": descriptors}},
                  "results": results}],
    }
    import json

    return json.dumps(log, indent=2) + "\n"


def _escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


_GH_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def render_github(diags: list[Diagnostic], sources: dict[Path, Source], rules: list[Rule]) -> str:
    return "".join(
        f"::{_GH_LEVEL[d.severity.value]} title={_escape(f'axlint ({d.code})', True)},file={_escape(_path(d.path), True)},"
        f"line={d.span.line},col={d.span.col},endLine={d.span.end_line},endColumn={d.span.end_col}"
        f"::{_escape(f'{d.code} {d.message}')}\n" for d in diags)
