"""Lint files: read each, build its TrainingRun, run the selected rules, apply suppressions."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

from axlint.diagnostics import Diagnostic
from axlint.document import (
    BOM_IN_JSON,
    DocumentError,
    Source,
    decode_bytes,
    load_document,
    read_text,
    starts_with_bom,
)
from axlint.engine import run_rules
from axlint.fixes import Applicability
from axlint.kind import ConfigKind, classify_data, classify_text
from axlint.rule import INVALID_CONFIG, UNUSED_SUPPRESSION, Rule, emit
from axlint.run import TrainingRun, build_run
from axlint.schemas.validator import SchemaChoice, default_choice
from axlint.suppression import apply_suppressions


@dataclass
class LintOptions:
    """What every file of a lint is checked with: the rules, the hardware and the schema versions."""

    rules: list[Rule]
    hardware: Any = None
    model_config: Path | None = None
    schemas: SchemaChoice | None = None
    """The bundled schema versions; None: `default_choice()`."""
    upstream: Any = None  # axlint.upstream.validators.AxolotlValidators, when `--axolotl-validators` is on
    host_memory_gib: float | None = None
    """CPU RAM of each host (`--host-memory`), against which offload suggestions are checked."""

    @cached_property
    def invalid_config(self) -> Rule | None:
        """The AX000 rule when selected (found once, not once per file)."""
        return next((r for r in self.rules if r.code == INVALID_CONFIG), None)

    @cached_property
    def unused_suppression(self) -> Rule | None:
        """The rule that reports a suppression comment with nothing to suppress, when selected."""
        return next((r for r in self.rules if r.code == UNUSED_SUPPRESSION), None)

    @cached_property
    def memory_codes(self) -> frozenset[str]:
        """Codes of the selected memory rules, whose findings hold for the GPUs they were judged on."""
        return frozenset(r.code for r in self.rules if r.pack == "memory")

    @cached_property
    def schema_codes(self) -> frozenset[str]:
        """Codes of the selected schema rules, whose findings say which schema versions were used."""
        return frozenset(r.code for r in self.rules if r.pack == "schema")


@dataclass(frozen=True)
class Skipped:
    """A file that was read and is neither an Axolotl nor a DeepSpeed config: no finding, counted in the summary."""

    path: Path
    reason: str


@dataclass(frozen=True)
class RunScope:
    """What a lint's summary says of one run: the GPUs its memory verdict assumed because the run named none (None
    when it named them, or has no Axolotl config), and the schema versions it was checked against."""

    assumed_hardware: str | None
    schemas: SchemaChoice | None

    @classmethod
    def of(cls, run: TrainingRun) -> "RunScope":
        hw = run.hardware
        assumed = hw.label if run.axolotl is not None and hw is not None and hw.assumed else None
        return cls(assumed, run.schemas)


@dataclass
class LintResult:
    """The findings of a lint, the text of each file read into a run (the report shows the lines of the findings),
    each run's scope (the summary's notes) and the skipped files; `merge` adds another result to it. `runs` holds
    the TrainingRuns of one file's lint (`lint_text`); a lint of many files (`lint_paths`, `merge`) keeps their
    sources and scopes, not the runs, whose documents and memory facts are most of a lint's memory."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[Path, Source] = field(default_factory=dict)
    scopes: list[RunScope] = field(default_factory=list)
    runs: list[TrainingRun] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def merge(self, other: "LintResult") -> None:
        self.diagnostics += other.diagnostics
        self.sources.update(other.sources)
        self.scopes += other.scopes
        self.skipped += other.skipped


def lint_text(path: Path, text: str | bytes | None, options: LintOptions,
              texts: Mapping[Path, str] | None = None) -> LintResult:
    """Lint one file (its referenced DeepSpeed file too). `text` (or raw bytes) given means stdin under that name;
    `texts` gives the current text of other files by absolute path (the fixer's unwritten edits)."""
    result = LintResult()
    invalid = options.invalid_config

    def report(where: Path, error: DocumentError) -> None:
        if invalid is not None:
            result.diagnostics.append(emit(invalid, where, error.span, problem=error.message))

    try:
        source = decode_bytes(text) if isinstance(text, bytes) else text if text is not None else read_text(path)
    except DocumentError as exc:  # unreadable, binary, not UTF-8, too large
        report(path, exc)
        return result
    try:
        doc = load_document(path, source)
    except DocumentError as exc:
        if classify_text(source.lstrip("\ufeff"), options.schemas).kind is ConfigKind.OTHER:
            result.skipped.append(Skipped(path, f"{exc.message} (and it writes no Axolotl or DeepSpeed key)"))
        else:
            report(path, exc)
        return result
    verdict = classify_data(doc.data, options.schemas)
    if verdict.kind is ConfigKind.OTHER:
        result.skipped.append(Skipped(path, verdict.reason))
        return result
    if verdict.kind is ConfigKind.DEEPSPEED and doc.format == "json" and text is None and starts_with_bom(path):
        report(path, DocumentError(BOM_IN_JSON))
        return result
    run = build_run(doc, kind=verdict.kind, hardware=options.hardware, model_config_path=options.model_config,
                    texts=texts, host_memory_gib=options.host_memory_gib)
    run.schemas = options.schemas or default_choice()
    result.runs.append(run)
    result.scopes.append(RunScope.of(run))
    docs = run.documents
    result.sources.update({d.path: d.source for d in docs})
    if run.ds_error is not None and run.ds_error_path is not None:
        report(run.ds_error_path, _strip_path(run.ds_error))
    diags = run_rules(run, options.rules)
    if options.upstream is not None:
        diags += options.upstream.findings(run, options.rules)
    memory_codes, schema_codes = options.memory_codes, options.schema_codes
    for diag in diags:
        if diag.code in schema_codes:  # machine outputs say which schema versions the verdict used
            diag.extra["schemas"] = run.schemas.to_json()
    if run.hardware is not None:
        hw = run.hardware
        for diag in diags:
            if diag.code in memory_codes:  # the verdict holds for these GPUs only: machine outputs say which
                diag.extra["hardware"] = {**hw.to_json(), "assumed": hw.assumed}
        if hw.assumed:
            diags = hold_guessed_fixes(diags, memory_codes, hw.label)
    kept = apply_suppressions(diags, docs, options.unused_suppression)
    if options.upstream is not None:
        kept = options.upstream.one_per_problem(kept, docs)
    result.diagnostics.extend(kept)
    return result


def hold_guessed_fixes(diags: list[Diagnostic], memory_codes: frozenset[str], label: str) -> list[Diagnostic]:
    """Memory fixes are right only for the GPUs they were computed for: under assumed GPUs they are shown, never
    written (`fix --write` and `--unsafe-fixes` leave them), and their title says how to make them apply."""
    held = []
    for diag in diags:
        if diag.code in memory_codes and diag.fix is not None and diag.fix.applicability is not Applicability.DISPLAY_ONLY:
            title = f"{diag.fix.title} (shown, not applied: computed for an assumed {label}; set `hardware`)"
            diag = replace(diag, fix=replace(diag.fix, applicability=Applicability.DISPLAY_ONLY, title=title))
        held.append(diag)
    return held


def _strip_path(error: DocumentError) -> DocumentError:
    return DocumentError(error.message.split(": ", 1)[-1], error.span)


def lint_paths(paths: list[Path], options: LintOptions) -> LintResult:
    """Lint several files; a DeepSpeed file reached from two configs is reported once per finding. A finding there
    that differs between the configs (a memory figure of each run) is reported once per config, each naming the
    config it is about."""
    total = LintResult()
    seen: set[tuple] = set()
    reached_from: dict[tuple, list[tuple[Diagnostic, Path]]] = {}
    resolved: dict[Path, Path] = {}  # resolving is a system call per path component: once per path named
    for path in paths:
        one = lint_text(path, None, options)
        total.sources.update(one.sources)
        total.scopes.extend(one.scopes)
        total.skipped.extend(one.skipped)
        for diag in one.diagnostics:
            if diag.path not in resolved:
                resolved[diag.path] = diag.path.resolve()
            key = (resolved[diag.path], diag.span, diag.code, diag.message)  # one file, however it was reached
            if key not in seen:
                seen.add(key)
                reached_from.setdefault(key[:3], []).append((diag, path))
    for found in reached_from.values():
        if len(found) == 1:
            total.diagnostics.append(found[0][0])
        else:
            total.diagnostics.extend(replace(diag, message=f"{diag.message} (for {config})") for diag, config in found)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total
