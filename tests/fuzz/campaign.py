"""Run a seeded range of fuzz cases and tally the failures; reduce a failing case to its smallest entry file."""
from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from tests.fuzz.cases import Case, make_case
from tests.fuzz.judge import Verdict, judge


@dataclass
class Tally:
    """Figures of one campaign: cases run, failures by kind, the failing verdicts, the slowest case."""

    cases: int = 0
    kinds: Counter = field(default_factory=Counter)
    failed: list[Verdict] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")

    def add(self, verdict: Verdict) -> None:
        self.cases += 1
        if verdict.failures:
            self.failed.append(verdict)
            self.kinds.update({kind for kind, _ in verdict.failures})
        if verdict.seconds > self.slowest[0]:
            self.slowest = (verdict.seconds, verdict.case.label)


def options_and_rules() -> tuple[object, list]:
    from axlint.packs import load_rules
    from axlint.lint import LintOptions

    rules = load_rules()
    return LintOptions(rules), rules


def run_cases(seed: int, indexes: Iterable[int], *, cli_every: int = 0,
              progress: Callable[[Verdict], None] | None = None) -> Tally:
    """Judge each case of `seed` at `indexes` in its own temporary folder; the CLI on every `cli_every`-th."""
    options, rules = options_and_rules()
    tally = Tally()
    for index in indexes:
        case = make_case(seed, index)
        with tempfile.TemporaryDirectory(prefix="axlint-fuzz-") as tmp:
            verdict = judge(case, Path(tmp), options, rules, cli=bool(cli_every) and index % cli_every == 0)
        tally.add(verdict)
        if progress is not None:
            progress(verdict)
    return tally


def reduce_case(case: Case, kind: str) -> Case:
    """Delete lines of the entry file while the case still fails with `kind` (ddmin, line granularity)."""
    options, rules = options_and_rules()

    def fails(lines: list[bytes]) -> bool:
        trial = Case(case.seed, case.index, case.source, case.entry, {**case.files, case.entry: b"".join(lines)},
                     case.mutations, case.links)
        with tempfile.TemporaryDirectory(prefix="axlint-reduce-") as tmp:
            return any(k == kind for k, _ in judge(trial, Path(tmp), options, rules).failures)

    lines = case.files[case.entry].splitlines(keepends=True)
    chunk = max(1, len(lines) // 2)
    while chunk >= 1:
        i, removed = 0, False
        while i < len(lines):
            trial = lines[:i] + lines[i + chunk:]
            if trial and fails(trial):
                lines, removed = trial, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return Case(case.seed, case.index, case.source, case.entry, {**case.files, case.entry: b"".join(lines)},
                case.mutations, case.links)
