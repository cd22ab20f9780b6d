"""Lint files: read each, build its TrainingRun, run the selected rules, apply suppressions."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from axlint.diagnostics import Diagnostic
from axlint.document import Document, DocumentError, decode_bytes, load_document
from axlint.engine import Rule, apply_suppressions, document_error_diagnostic, run_rules
from axlint.run import TrainingRun, build_run


@dataclass
class LintOptions:
    rules: list[Rule]
    hardware: Any = None
    model_config: Path | None = None


@dataclass
class LintResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    documents: dict[Path, Document] = field(default_factory=dict)
    runs: list[TrainingRun] = field(default_factory=list)


def lint_text(path: Path, text: str | bytes | None, options: LintOptions,
              texts: Mapping[Path, str] | None = None) -> LintResult:
    """Lint one file (its referenced DeepSpeed file too). `text` (or raw bytes) given means stdin under that name;
    `texts` gives the current text of other files by absolute path (the fixer's unwritten edits)."""
    result = LintResult()
    selected = {r.code for r in options.rules}
    try:
        doc = load_document(path, decode_bytes(text) if isinstance(text, bytes) else text)
    except DocumentError as exc:
        if "AX000" in selected:
            result.diagnostics.append(document_error_diagnostic(path, exc))
        return result
    run = build_run(doc, hardware=options.hardware, model_config_path=options.model_config, texts=texts)
    result.runs.append(run)
    docs = run.documents
    result.documents.update({d.path: d for d in docs})
    if run.ds_error is not None and "ds_error_path" in run.extra and "AX000" in selected:
        result.diagnostics.append(document_error_diagnostic(run.extra["ds_error_path"], _strip_path(run.ds_error)))
    diags = run_rules(run, options.rules)
    unused = next((r for r in options.rules if r.code == "AX002"), None)
    result.diagnostics.extend(apply_suppressions(diags, docs, unused))
    return result


def _strip_path(error: DocumentError) -> DocumentError:
    return DocumentError(error.message.split(": ", 1)[-1], error.span, error.code)


def lint_paths(paths: list[Path], options: LintOptions) -> LintResult:
    """Lint several files; a DeepSpeed file reached from two configs is reported once per finding."""
    total = LintResult()
    seen: set[tuple] = set()
    for path in paths:
        one = lint_text(path, None, options)
        total.documents.update(one.documents)
        total.runs.extend(one.runs)
        for diag in one.diagnostics:
            key = (diag.path.resolve(), diag.span, diag.code, diag.message)  # one file, however it was reached
            if key not in seen:
                seen.add(key)
                total.diagnostics.append(diag)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total
