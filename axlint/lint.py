"""Lint files: read each, build its TrainingRun, run the selected rules, apply suppressions."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator, Mapping

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
    jobs: int = 1
    """Processes a lint of many files may use (`job_count`: 0 is one per CPU); the findings do not depend on it."""

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
    config it is about; findings of one config at one place (a rule's several hits on one key) are its own and name
    no config. The result is the same whatever `options.jobs` is."""
    total = LintResult()
    seen: set[tuple] = set()
    reached_from: dict[tuple, list[tuple[Diagnostic, Path]]] = {}
    resolved: dict[Path, Path] = {}  # resolving is a system call per path component: once per path named
    for path, one in zip(paths, _lint_each(paths, options)):
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
        if len({config for _, config in found}) == 1:  # one config's findings, however many at this place
            total.diagnostics.extend(diag for diag, _ in found)
        else:
            total.diagnostics.extend(replace(diag, message=f"{diag.message} (for {config})") for diag, config in found)
    total.diagnostics.sort(key=Diagnostic.sort_key)
    return total


MIN_FILES_PER_JOB = 16
"""Files each process of a parallel lint gets at the least. A process pays once for what a file of a new model
costs the first time (its architecture's layer kinds, linears and module paths), which files of the same family
share; below about this many files a second process gains less than it costs."""

CHUNKS_PER_JOB = 2
"""The files are cut into this many runs of neighbours per process: neighbouring files (mostly one family's, which
share a model) stay in one process, and a process that finishes early takes the next run. Smaller runs measured
slower on the corpus (more models prepared in both processes)."""


def job_count(requested: int, files: int) -> int:
    """Processes for a lint of `files` files: `requested` (0: one per CPU this process may run on), at most one per
    MIN_FILES_PER_JOB files after the first, at least 1. 1 where processes cannot be forked (Windows, macOS: a
    spawned process would import axlint again, which costs more than most lints)."""
    most = (files - 1) // MIN_FILES_PER_JOB
    if requested == 1 or most < 2 or not sys.platform.startswith("linux"):
        return 1  # decided before `multiprocessing` is imported: a lint of a few files never needs it
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(requested or len(os.sched_getaffinity(0)), most)


class WorkerDied(Exception):
    """A process of a parallel lint stopped before it returned its files' results (killed by the system)."""


_FORKED_OPTIONS: LintOptions | None = None
"""The options of the parallel lint under way, which its forked processes inherit (rules hold compiled checks that
are not pickled)."""


def _lint_each(paths: list[Path], options: LintOptions) -> Iterator[LintResult]:
    """Each file's LintResult (without its runs), in the order of `paths`: in this process, or with `job_count`
    forked processes after the first file, which this process lints (the imports and data it loads are then
    inherited, not loaded again in each process). `--axolotl-validators` keeps to this process: its Axolotl runs in
    a subprocess of its own."""
    jobs = job_count(options.jobs, len(paths)) if options.upstream is None else 1
    if jobs == 1:
        yield from (_without_runs(lint_text(path, None, options)) for path in paths)
        return
    global _FORKED_OPTIONS
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    yield _without_runs(lint_text(paths[0], None, options))
    rest = paths[1:]
    size = -(-len(rest) // (jobs * CHUNKS_PER_JOB))
    chunks = [rest[i:i + size] for i in range(0, len(rest), size)]
    _FORKED_OPTIONS = options
    try:  # an executor, not a Pool: a process that dies (the OOM killer) fails the lint instead of hanging it
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            for chunk in pool.map(_lint_chunk, chunks):
                yield from chunk
    except BrokenProcessPool:
        raise WorkerDied(f"a process checking {len(paths)} files in parallel stopped before it finished (killed by "
                         "the system: out of memory?); check them again with `-j 1`") from None
    finally:
        _FORKED_OPTIONS = None


def _lint_chunk(paths: list[Path]) -> list[LintResult]:
    """A forked process's share of a parallel lint."""
    assert _FORKED_OPTIONS is not None
    return [_without_runs(lint_text(path, None, _FORKED_OPTIONS)) for path in paths]


def _without_runs(result: LintResult) -> LintResult:
    """A file's result as a lint of many files keeps it: its runs (documents, memory facts) are dropped."""
    result.runs = []
    return result
