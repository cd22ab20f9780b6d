"""Run one fuzz case through axlint and say what went wrong.

For each case, in a fresh folder:

1. `lint_paths` in-process, under a time limit: an exception is a *traceback*, an AX999 finding an *internal*
   error, a run past the limit a *hang*; every output format must encode as strict UTF-8 (*encoding*).
2. optionally the CLI (`check` in three formats, `fix` showing its diff, `estimate` as a table and as JSON with
   the fit grid) through click's runner: exit 0, 1 or 2, no exception.
3. `fix --write --unsafe-fixes` on a copy, then:
   * the written files parse, and the loop did not oscillate or run out of passes (*unstable*);
   * a second fix run changes nothing (*unstable*);
   * no error-severity code appears that was not there before (*new-error*);
   * every key whose value changed is named by an applied fix's title (*unnamed-change*), and no file was
     changed but the entry and the DeepSpeed JSON it references (*unnamed-file*);
   * a file written with one kind of line break keeps it (*line-endings*); a symlink stays a symlink (*link*).
"""
from __future__ import annotations

import json
import re
import shutil
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from tests.fuzz.cases import Case

HANG_S = 5.0


class Hang(BaseException):
    """The time limit of one step passed (a BaseException: no `except Exception` in the code under test can
    swallow it and go on looping)."""


@dataclass
class Verdict:
    """What one case produced: failures as (kind, detail), and the slowest step's seconds."""

    case: Case
    failures: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def fail(self, kind: str, detail: str) -> None:
        self.failures.append((kind, detail[:400]))


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in the main thread after `seconds` (SIGALRM; the campaign runs single-threaded)."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _step(verdict: Verdict, name: str, function: Any, *args: Any, **kwargs: Any) -> Any:
    start = time.perf_counter()
    try:
        with time_limit(HANG_S):
            return function(*args, **kwargs)
    except Hang as exc:
        verdict.fail("hang", f"{name}: {exc}")
    except Exception as exc:  # noqa: BLE001 - the point of the campaign is to catch every escape
        verdict.fail("traceback", f"{name}: {type(exc).__name__}: {exc}")
    finally:
        verdict.seconds = max(verdict.seconds, time.perf_counter() - start)
    return None


def _encodable(verdict: Verdict, where: str, text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        verdict.fail("encoding", f"{where}: {exc}")


def judge(case: Case, folder: Path, options: Any, rules: list, *, cli: bool = False, fix: bool = True) -> Verdict:
    """Run `case` in `folder` (empty, writable) and return its verdict."""
    from axlint.lint import lint_paths
    from axlint.report import RENDERERS

    verdict = Verdict(case)
    work = folder / "check"
    work.mkdir()
    entry = case.write(work)
    result = _step(verdict, "check", lint_paths, [entry], options)
    if result is not None:
        for diag in result.diagnostics:
            if diag.code == "AX999":
                verdict.fail("internal", diag.message)
        for name, render in RENDERERS.items():
            text = _step(verdict, f"render {name}", render, result.diagnostics, result.sources, rules)
            if text is not None:
                _encodable(verdict, f"render {name}", text)
    if cli:
        _cli(verdict, entry)
    if fix and result is not None:
        _fix(verdict, case, folder, options, result)
    return verdict


def _cli(verdict: Verdict, entry: Path) -> None:
    from click.testing import CliRunner

    from axlint.cli import cli

    for args in (["check", str(entry), "--output-format", "full"], ["check", str(entry), "--output-format", "sarif"],
                 ["check", str(entry), "--output-format", "github"], ["fix", str(entry), "--unsafe-fixes"],
                 ["estimate", str(entry), "--hardware", "1xA100-80GB"],
                 ["estimate", str(entry), "--hardware", "2x24GiB", "--format", "json", "--fit"]):
        runner = CliRunner()
        outcome = _step(verdict, f"cli {args[0]}", runner.invoke, cli, args)
        if outcome is None:
            continue
        if outcome.exception is not None and not isinstance(outcome.exception, SystemExit):
            verdict.fail("traceback", f"cli {args[0]}: {type(outcome.exception).__name__}: {outcome.exception}")
        elif outcome.exit_code not in (0, 1, 2):
            verdict.fail("traceback", f"cli {args[0]}: exit {outcome.exit_code}")
        internal = '"ruleId": "AX999"' if "sarif" in args else "AX999"  # SARIF lists every rule, AX999 too
        if "Traceback" in outcome.output or internal in outcome.output:
            verdict.fail("internal", f"cli {args[0]}: {outcome.output[-300:]}")


def _parse(path: Path, raw: bytes) -> Any:
    """The data a loader reads from `raw` (JSON by suffix, else YAML); None when it does not parse."""
    text = raw.decode("utf-8", "replace").lstrip("\ufeff")
    try:
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        return None


def _leaves(data: Any, prefix: tuple = ()) -> dict[tuple, Any]:
    if isinstance(data, dict):
        out: dict[tuple, Any] = {}
        for key, value in data.items():
            out.update(_leaves(value, prefix + (key,)))
        return out or {prefix: {}}
    if isinstance(data, list):
        out = {}
        for i, value in enumerate(data):
            out.update(_leaves(value, prefix + (i,)))
        return out or {prefix: []}
    return {prefix: data}


def changed_keys(before: Any, after: Any) -> set[tuple]:
    """Key paths whose value differs (list items by index; NaN equals NaN)."""
    a, b = _leaves(before), _leaves(after)
    return {k for k in a.keys() | b.keys() if k not in a or k not in b or not _same(a[k], b[k])}


def _same(x: Any, y: Any) -> bool:
    return x == y or (x != x and y != y) or (type(x) is type(y) and repr(x) == repr(y))


def _eols(raw: bytes) -> set[bytes]:
    kinds = set()
    if b"\r\n" in raw:
        kinds.add(b"\r\n")
    if re.search(rb"\r(?!\n)", raw):
        kinds.add(b"\r")
    if re.search(rb"(?<!\r)\n", raw):
        kinds.add(b"\n")
    return kinds


def _named(path: tuple, titles: str) -> bool:
    """The innermost key of the path is written in a fix title (a list item counts as its list's key), or the fix
    renamed or deleted a key above it: that key stands whole between backticks in a title."""
    keys = [part for part in path if isinstance(part, str) and part]
    quoted = {word for text in re.findall(r"`([^`]*)`", titles) for word in re.split(r"[.:\s]+", text)}
    return bool(keys) and (keys[-1] in titles or any(key in quoted for key in keys))


def _fix(verdict: Verdict, case: Case, folder: Path, options: Any, before_lint: Any) -> None:
    from axlint.fixer import fix_paths, write_changed

    work = folder / "fix"
    shutil.copytree(folder / "check", work, symlinks=True)
    entry = work / case.entry
    originals = {p: p.read_bytes() for p in work.rglob("*") if p.is_file() and not p.is_symlink()}
    links = {p for p in work.rglob("*") if p.is_symlink()}
    report = _step(verdict, "fix", fix_paths, [entry], options, unsafe=True)
    if report is None:
        return
    problems = _step(verdict, "write", write_changed, report) or []
    unstable = [p for p in report.problems if "oscillate" in p or "still changing" in p]
    if unstable:
        verdict.fail("unstable", unstable[0])
    if problems:
        return
    allowed = {entry.resolve(), *(d.path.resolve() for d in report.remaining.sources.values())}
    allowed |= {Path(s.path).resolve() for s in report.files.values()}
    for path, raw in originals.items():
        now = path.read_bytes()
        if now == raw:
            continue
        state = report.files.get(Path(path).absolute())
        titles = " ".join(a.diagnostic.fix.title for a in state.applied) if state else ""
        if path.resolve() not in allowed or (path != entry and path.suffix not in (".json",) and state is None):
            verdict.fail("unnamed-file", f"{path.name} changed")
        eols = _eols(raw)
        if len(eols) == 1 and _eols(now) - eols:
            verdict.fail("line-endings", f"{path.name}: {eols} -> {_eols(now)}")
        new_data = _parse(path, now)
        if new_data is None:
            verdict.fail("unstable", f"{path.name} no longer parses after the fix")
            continue
        for key in changed_keys(_parse(path, raw), new_data):
            if not _named(key, titles):
                verdict.fail("unnamed-change", f"{path.name}: {'.'.join(map(str, key))} changed; titles: {titles}")
    for link in links:
        if not link.is_symlink():
            verdict.fail("link", f"{link.name} is no longer a symlink")
    before = {d.code for d in before_lint.diagnostics if d.severity.value == "error"}
    again = _step(verdict, "fix again", fix_paths, [entry], options, unsafe=True)
    if again is None:
        return
    if again.changed:
        verdict.fail("unstable", "a second fix run changed " + ", ".join(s.path.name for s in again.changed))
    after = {d.code for d in again.remaining.diagnostics if d.severity.value == "error"}
    for code in sorted(after - before):
        verdict.fail("new-error", f"{code} appeared after the fix")

