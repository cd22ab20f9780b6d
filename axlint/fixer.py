"""Apply fixes until stable: lint, apply the allowed fixes to every file they name, re-parse, re-lint, repeat.

One run fixes a config and the DeepSpeed JSON it references together (a finding located in the JSON carries a
fix for the JSON). All texts are held in memory until the end, so `axlint fix` without `--write` can show the
diff of every file it would change; `write_changed` then writes the changed files all or nothing, each atomically.

Per pass and per file, whole fixes are taken in offset order and a fix whose edits touch one already taken waits
for the next pass. A text that no longer parses is refused (the file keeps its previous text and the refusal is
reported); a text seen before in the same run means the fixes oscillate, and the loop stops and says so.
"""
from __future__ import annotations

import bisect
import difflib
import os
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from axlint.diagnostics import Diagnostic
from axlint.document import DocumentError, decode_bytes, load_document
from axlint.edits import Edit, apply_edits
from axlint.fixes import Fix
from axlint.lint import LintOptions, LintResult, lint_text

MAX_PASSES = 10
TRIALS_PER_PASS = 8
"""Lints a pass may spend finding the fixes that bring a new error, beyond two per halving of its fixes."""
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Applied:
    """A finding whose fix was applied, and the text of the file it was applied to (its spans point there)."""

    diagnostic: Diagnostic
    text: str


@dataclass
class FileState:
    """One file the fixer read: its bytes on disk, its text now, and what was fixed in it."""

    path: Path
    original: str
    text: str
    raw: bytes | None = None  # None for stdin
    applied: list[Applied] = field(default_factory=list)  # every pass, in order
    problems: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.text != self.original

    @property
    def fixed(self) -> Counter[tuple[str, str]]:
        """(code, name) -> number of findings fixed."""
        return Counter((a.diagnostic.code, a.diagnostic.name) for a in self.applied)

    @property
    def bom(self) -> bool:
        return bool(self.raw and self.raw.startswith(BOM))


@dataclass
class FixReport:
    files: dict[Path, FileState]
    remaining: LintResult

    @property
    def changed(self) -> list[FileState]:
        return [f for f in self.files.values() if f.changed]

    @property
    def problems(self) -> list[str]:
        return [f"{f.path}: {p}" for f in self.files.values() for p in f.problems]

    def file(self, path: Path) -> FileState:
        return self.files[_key(path)]


def _key(path: Path) -> Path:
    return Path(os.path.abspath(path))


class Fixer:
    """Holds the texts of every file involved; `fix(entry)` runs the loop for one config given on the command line."""

    def __init__(self, options: LintOptions, *, unsafe: bool = False, only: set[Path] | None = None,
                 entries: list[Path] | None = None) -> None:
        self.options = options
        self.unsafe = unsafe
        self.only = {_key(p) for p in only} if only is not None else None
        self.files: dict[Path, FileState] = {}
        self.entries = list(entries or [])  # the configs named on the command line
        self._linted: dict[Path, LintResult] = {}
        self._referrers: dict[Path, list[Path]] = {}
        self._held: set[tuple[str, Path, str]] = set()  # fixes found to bring a new error: not tried again
        self._trials = 0  # lints left in this pass for finding such fixes

    def add_text(self, path: Path, text: str) -> None:
        """A file that lives only in memory (stdin under `--stdin-filename`)."""
        self.files[_key(path)] = FileState(path, text, text)

    def state(self, path: Path) -> FileState | None:
        """The file's state, read from disk on first use; None if it cannot be read as text."""
        key = _key(path)
        if key not in self.files:
            try:
                raw = path.read_bytes()
                text = decode_bytes(raw)
            except (OSError, DocumentError):
                return None
            self.files[key] = FileState(path, text, text, raw)
        return self.files[key]

    def lint(self, entry: Path) -> LintResult:
        """`lint_text` of the entry as it stands in memory, its DeepSpeed file too (reused while neither changed)."""
        last = self._linted.get(_key(entry))
        if last is not None and all(self._current(src.path) == src.text for src in last.sources.values()):
            return last
        state = self.state(entry)
        texts = {key: f.text for key, f in self.files.items()}
        result = lint_text(entry, state.text if state else None, self.options, texts)
        if result.sources:
            self._linted[_key(entry)] = result
        return result

    def _current(self, path: Path) -> str | None:
        state = self.state(path)
        return state.text if state else None

    def fix(self, entry: Path) -> None:
        """Fix one entry (and the files its fixes name) until nothing changes, at most MAX_PASSES passes."""
        seen = {self._snapshot()}
        for _ in range(MAX_PASSES):
            result = self.lint(entry)
            if not self._apply_pass(entry, result, [d for d in result.diagnostics if self._allowed(entry, d)]):
                return
            snapshot = self._snapshot()
            if snapshot in seen:
                self._problem(entry, "fixes oscillate (a text came back that an earlier pass had); stopped")
                return
            seen.add(snapshot)
        self._problem(entry, f"still changing after {MAX_PASSES} passes; stopped")

    def _allowed(self, entry: Path, diag: Diagnostic) -> bool:
        """The fix may be applied: its applicability is allowed, and a fix to another file than the entry (its
        DeepSpeed JSON) is needed by every config that shares that file, or it would change their runs too."""
        fix = diag.fix
        if fix is None or not fix.applies(self.unsafe) or (self.only is not None and _key(fix.path) not in self.only):
            return False
        if _identity(diag) in self._held:
            return False
        if _key(fix.path) == _key(entry):
            return True
        others = [p for p in self.referrers(fix.path) if _key(p) != _key(entry) and not self._needs(p, fix)]
        if others:
            from axlint.report import display_path

            names = ", ".join(display_path(p) for p in others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            which = "which does" if len(others) == 1 else "which do"
            self._problem(fix.path, f"{diag.code} fix ({fix.title}) not applied: this DeepSpeed file is also used by "
                                    f"{names}, {which} not need the change; give {display_path(entry)} its own copy")
            return False
        return True

    def referrers(self, ds_path: Path) -> list[Path]:
        """The Axolotl configs whose `deepspeed:` resolves to this file: the entries, and the YAMLs of the same
        repository (the nearest folder with `.git`, else the folder of the entries and the file) that name it."""
        key = _key(ds_path)
        if key not in self._referrers:
            from axlint.discovery import DiscoveryError, discover, git_root

            folders = [key.parent, *(_key(e).parent for e in self.entries)]
            root = git_root(key.parent) or Path(os.path.commonpath(folders))
            try:
                nearby = [p for p in discover([root]) if p.suffix != ".json"] if root != Path(root.anchor) else []
            except DiscoveryError:
                nearby = []
            candidates = dict.fromkeys([*self.entries, *nearby])
            self._referrers[key] = [p for p in candidates if _references(p, key, ds_path.name)]
        return self._referrers[key]

    def _needs(self, config: Path, fix: Fix) -> bool:
        """The config's own lint asks for this very change of the shared file."""
        return any(d.fix is not None and _key(d.fix.path) == _key(fix.path) and set(d.fix.edits) == set(fix.edits)
                   for d in self.lint(config).diagnostics)

    def _snapshot(self) -> tuple[tuple[Path, str], ...]:
        return tuple(sorted((k, f.text) for k, f in self.files.items()))

    def _problem(self, path: Path, message: str) -> None:
        state = self.state(path)
        if state is not None and message not in state.problems:
            state.problems.append(message)

    def _apply_pass(self, entry: Path, result: LintResult, diags: list[Diagnostic]) -> bool:
        """Apply this pass's fixes; True if any text changed.

        Per file, whole fixes are taken in offset order (`compatible_fixes`) and the ones whose text would not
        parse are set aside. Of the rest, a set that brings no new error is kept: all of them when the entry's
        lint after them has no error code more often than before, else the culprits are found by halving (a
        handful of lints however many fixes there are) and reported, and the others applied."""
        by_file: dict[Path, list[Diagnostic]] = {}
        for diag in diags:
            by_file.setdefault(_key(diag.fix.path), []).append(diag)
        candidates: list[Diagnostic] = []
        for group in by_file.values():
            state = self.state(group[0].fix.path)
            if state is not None:
                candidates += self._parsing(state, compatible_fixes(group))
        if not candidates:
            return False
        before = _error_counts(result)
        self._trials = TRIALS_PER_PASS + 2 * len(candidates).bit_length()
        kept = self._keep_harmless(entry, before, [], candidates)
        texts = self._texts_with(kept)
        changed = False
        for key, text in texts.items():
            state = self.files[key]
            if text != state.text:
                state.applied.extend(Applied(d, state.text) for d in kept if _key(d.fix.path) == key)
                state.text, changed = text, True
        return changed

    def _parsing(self, state: FileState, taken: list[Diagnostic]) -> list[Diagnostic]:
        """The fixes whose edits leave `state`'s text parsable: all of them when their sum parses (one parse),
        else each is tried alone and the ones that break the file are reported."""
        if _parses(state.path, apply_edits(state.text, [e for d in taken for e in d.fix.edits])[0]):
            return taken
        usable = [d for d in taken if _parses(state.path, apply_edits(state.text, list(d.fix.edits))[0])]
        for diag in taken:
            if not any(diag is u for u in usable):
                self._problem(state.path, f"{diag.code} fix ({diag.fix.title}) would make the file unparsable; "
                                          "not applied")
        if usable and not _parses(state.path, apply_edits(state.text, [e for d in usable for e in d.fix.edits])[0]):
            self._problem(state.path, "the fixes together would make the file unparsable; not applied")
            return []
        return usable

    def _texts_with(self, diags: list[Diagnostic]) -> dict[Path, str]:
        """The new text of every file these fixes edit (their edits are against the current texts)."""
        edits: dict[Path, list[Edit]] = {}
        for diag in diags:
            edits.setdefault(_key(diag.fix.path), []).extend(diag.fix.edits)
        return {key: apply_edits(self.files[key].text, found)[0] for key, found in edits.items()}

    def _errors_with(self, entry: Path, diags: list[Diagnostic]) -> Counter[str]:
        """The error counts of the entry's lint with these fixes applied (the texts are put back after)."""
        texts = self._texts_with(diags)
        saved = {key: self.files[key].text for key in texts}
        try:
            for key, text in texts.items():
                self.files[key].text = text
            return _error_counts(self.lint(entry))
        finally:
            for key, text in saved.items():
                self.files[key].text = text

    def _keep_harmless(self, entry: Path, before: Counter[str], base: list[Diagnostic],
                       candidates: list[Diagnostic]) -> list[Diagnostic]:
        """The candidates that, added to `base`, bring no error code more often than `before`: all of them if
        they can go together, else found by halving. A single fix that brings one is reported and held back for
        the rest of the run; when the pass's lints run out first, the untested fixes are held back unapplied."""
        if not candidates:
            return []
        if self._trials <= 0:
            self._hold(candidates, "not applied: with the other fixes it would bring a new error; fix by hand and "
                                   "run `axlint fix` again")
            return []
        self._trials -= 1
        new = self._errors_with(entry, base + candidates) - before
        if not new:
            return candidates
        if len(candidates) == 1:
            self._hold(candidates, f"not applied: it would bring a new {', '.join(sorted(new))} error; change it "
                                   "by hand")
            return []
        half = len(candidates) // 2
        left = self._keep_harmless(entry, before, base, candidates[:half])
        return left + self._keep_harmless(entry, before, base + left, candidates[half:])

    def _hold(self, diags: list[Diagnostic], why: str) -> None:
        for diag in diags:
            self._held.add(_identity(diag))
            self._problem(diag.fix.path, f"{diag.code} fix ({diag.fix.title}) {why}")

    def report(self, entries: list[Path]) -> FixReport:
        """Lint every entry once more on the final texts: what remains."""
        remaining = LintResult()
        seen: set[tuple] = set()
        for entry in entries:
            one = self.lint(entry)
            remaining.sources.update(one.sources)
            remaining.scopes.extend(one.scopes)
            remaining.skipped.extend(one.skipped)
            for diag in one.diagnostics:
                ident = (str(_key(diag.path)), diag.span, diag.code, diag.message)
                if ident not in seen:
                    seen.add(ident)
                    remaining.diagnostics.append(diag)
        remaining.diagnostics.sort(key=Diagnostic.sort_key)
        return FixReport(self.files, remaining)


def _identity(diag: Diagnostic) -> tuple[str, Path, str]:
    """A fix as the passes see it: its rule, file and title (its offsets move as the text changes)."""
    assert diag.fix is not None
    return diag.code, _key(diag.fix.path), diag.fix.title


def _error_counts(result: LintResult) -> Counter[str]:
    """How many error findings of each code a lint has."""
    return Counter(d.code for d in result.diagnostics if d.severity.value == "error")


def _references(config: Path, ds_key: Path, name: str) -> bool:
    """`config` is an Axolotl config whose `deepspeed:` resolves to `ds_key` (a text that never names the file is
    not parsed)."""
    from axlint.kind import ConfigKind
    from axlint.run import DsSource, build_run

    try:
        text = config.read_text(encoding="utf-8")
        if name not in text:
            return False
        run = build_run(load_document(config, text), kind=ConfigKind.AXOLOTL)
    except (OSError, UnicodeDecodeError, DocumentError):
        return False
    return run.ds_source is DsSource.FILE and run.deepspeed is not None and _key(run.deepspeed.path) == ds_key


def compatible_fixes(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Whole fixes in offset order, skipping any whose edits touch an edit already taken (same start included).

    Findings that carry the very same edits (two keys asking for one plugin) are all taken: one change fixes them.
    The taken edits are kept sorted by start, so each test is a binary search and N fixes cost O(N log N).
    """
    taken: list[Diagnostic] = []
    spans: set[Edit] = set()
    starts: list[int] = []
    ends: list[int] = []
    for diag in sorted(diags, key=lambda d: (min((e.start for e in d.fix.edits), default=0), d.code)):
        edits = set(diag.fix.edits)
        if edits <= spans or not any(_touches_taken(e, starts, ends) for e in edits):
            taken.append(diag)
            for edit in edits - spans:
                at = bisect.bisect_left(starts, edit.start)
                starts.insert(at, edit.start)
                ends.insert(at, edit.end)
            spans |= edits
    return taken


def _touches_taken(edit: Edit, starts: list[int], ends: list[int]) -> bool:
    """`edit` starts where a taken edit starts, or overlaps one. Taken edits do not overlap each other, so the one
    starting last before `edit` ends is the only one that can overlap it."""
    at = bisect.bisect_left(starts, edit.start)
    if at < len(starts) and starts[at] == edit.start:
        return True
    before = bisect.bisect_left(starts, edit.end) - 1
    return before >= 0 and edit.start < ends[before] and starts[before] < edit.end


def _parses(path: Path, text: str) -> bool:
    try:
        load_document(path, text)
    except DocumentError:
        return False
    return True


def fix_paths(paths: list[Path], options: LintOptions, *, unsafe: bool = False) -> FixReport:
    """Fix every file in `paths` (and the DeepSpeed files they reference) in memory."""
    fixer = Fixer(options, unsafe=unsafe, entries=paths)
    for path in paths:
        fixer.fix(path)
    return fixer.report(paths)


def fix_text(path: Path, text: str, options: LintOptions, *, unsafe: bool = False) -> FixReport:
    """Fix one in-memory text (stdin) only; fixes for other files are not applied."""
    fixer = Fixer(options, unsafe=unsafe, only={path})
    fixer.add_text(path, text)
    fixer.fix(path)
    return fixer.report([path])


# ---------------------------------------------------------------------------------------------------- output


def unified_diff(state: FileState, label: str) -> str:
    """The change to one file as a unified diff (`--- label` / `+++ label`), marking a missing final newline. Lines
    keep their `\\r\\n`; a lone `\\r` line break is shown as a newline (a terminal would overprint the line)."""
    lines = []
    for line in difflib.unified_diff(state.original.splitlines(keepends=True), state.text.splitlines(keepends=True),
                                     fromfile=label, tofile=label):
        if line.endswith("\r"):
            line = line[:-1] + "\n"
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def write_changed(report: FixReport) -> list[str]:
    """Write every changed file, all or nothing; returns problems (nothing is written when there is one).

    A fix can span two files (the YAML and the DeepSpeed JSON it names), so each new text is first staged in a
    temp file beside its target (written and fsynced); only when every file staged are they moved into place.
    A file that changed on disk meanwhile, a read-only file (no owner write bit: root would write it anyway) or a
    failed stage (disk full, permissions) stops the whole write and removes the staged files.
    """
    states = [s for s in report.changed if s.raw is not None]
    problems: list[str] = []
    staged: list[_Staged] = []
    try:
        for state in states:
            try:
                if state.path.read_bytes() != state.raw:
                    problems.append(f"{state.path}: changed on disk while fixing; not written")
                    continue
                staged.append(_stage(state.path, state.text, bom=state.bom))
            except (OSError, _ReadOnly) as exc:
                problems.append(f"{state.path}: cannot write: {getattr(exc, 'strerror', None) or exc}")
        if not problems:  # an editor may have saved while the files were staged: look once more, just before
            moved = [s for s in states if _read_or_none(s.path) != s.raw]
            problems = [f"{s.path}: changed on disk while fixing; not written" for s in moved]
            staged_ok = [i for i in staged if i.target not in {Path(os.path.realpath(s.path)) for s in moved}]
        else:
            staged_ok = staged
        if problems:
            return problems + ([f"nothing written: {len(staged_ok)} other file(s) left as they were, so a fix that "
                                f"spans files is never half applied"] if staged_ok else [])
        for item in staged:
            item.commit()
        staged = []
        return []
    finally:
        for item in staged:
            item.discard()


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


class _ReadOnly(Exception):
    """The file has no owner write bit; it is not written even when the process could (root)."""


@dataclass
class _Staged:
    """A new text written and fsynced beside `target`, not yet in place.

    `commit` renames it over the target (mode and, where allowed, owner kept) and fsyncs the folder; a file with
    other hard links is instead rewritten in place from the staged copy, so every link keeps seeing it."""

    target: Path
    tmp: str
    data: bytes
    in_place: bool

    def commit(self) -> None:
        if self.in_place:
            with open(self.target, "r+b") as handle:
                handle.write(self.data)
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
            os.unlink(self.tmp)
        else:
            os.replace(self.tmp, self.target)
            _fsync_dir(self.target.parent)

    def discard(self) -> None:
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


def _stage(path: Path, text: str, *, bom: bool) -> _Staged:
    """A symlink is followed: its target is written, the link stays."""
    target = Path(os.path.realpath(path))
    info = target.stat()
    if not info.st_mode & stat.S_IWUSR:
        raise _ReadOnly(f"read-only (mode {stat.S_IMODE(info.st_mode):04o})")
    data = (BOM if bom else b"") + text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".axlint.tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        if hasattr(os, "chown") and (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, info.st_uid, info.st_gid)
            except PermissionError:
                pass  # not root: the rename gives the file our owner, as any editor's save would
    except BaseException:
        os.unlink(tmp)
        raise
    return _Staged(target, tmp, data, in_place=info.st_nlink > 1)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; some platforms cannot open a folder for fsync, which is then skipped."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
