"""`axlint fix`: show (default) or write (`--write`) the fixes of the selected rules."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from axlint.commands.common import (
    PATH,
    UsageError,
    discovery_options,
    files_to_read,
    internal_errors,
    prepare,
    read_stdin,
    reporting_options,
    schema_options,
    selection_options,
)
from axlint.diagnostics import Severity
from axlint.lint import LintOptions
from axlint.report import (
    assumed_hardware,
    display_path,
    render_concise,
    render_skipped,
    schema_versions,
    scope_notes,
)

if TYPE_CHECKING:
    from axlint.fixer import FixReport


@click.command()
@click.argument("paths", nargs=-1, type=PATH)
@selection_options
@schema_options
@discovery_options
@click.option("--write", is_flag=True, help="Write the fixed files (default: print a unified diff).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply unsafe fixes (they change training behaviour).")
@click.option("--show-fixes", is_flag=True, help="List what was fixed, per file and rule (on stderr).")
@reporting_options("Lowest severity of a remaining finding that makes the exit code 1 (with --write or stdin).",
                   "Name to lint `-` (stdin) under.")
@internal_errors
def fix(paths: tuple[Path, ...], select, ignore, extend_select, rules_dirs, settings_path, hardware, host_memory,
        model_config, axolotl_version, deepspeed_version, exclude, extend_exclude, force_exclude, show_skipped, write, unsafe_fixes, show_fixes, fail_on, stdin_filename,
        quiet) -> None:
    """Fix findings in Axolotl YAML and DeepSpeed JSON configs.

    Without --write, print a unified diff of every file that would change (stdout) and exit 1 if any would,
    0 if none would. With --write, write the fixes (atomically) and exit 1 if findings at or above --fail-on
    remain or a file could not be written, 0 otherwise. `axlint fix -` reads stdin and prints the fixed text, exiting like --write.
    Findings that have no fix are listed on stderr. Memory fixes are written only when the GPUs are declared
    (--hardware, settings, or `local`). Exit 2: usage error (a missing or unreadable path included), settings or
    internal error.
    """
    if not paths:
        raise UsageError("no files given (pass config paths, or - for stdin)")
    stdin = any(str(p) == "-" for p in paths)
    if stdin and len(paths) > 1:
        raise UsageError("`-` (stdin) cannot be combined with other paths")
    from axlint.fixer import (  # not on `axlint check`'s import path
        fix_paths,
        unified_diff,
        write_changed,
    )

    setup = prepare(list(paths), select, ignore, extend_select, rules_dirs, settings_path, hardware, model_config,
                    axolotl_version, deepspeed_version, host_memory)
    options = LintOptions(setup.rules, setup.hardware, setup.model_config, setup.schemas,
                          host_memory_gib=setup.host_memory_gib)
    if stdin:
        report = _fix_stdin(stdin_filename or Path("stdin.yml"), options, unsafe_fixes)
    else:
        files = files_to_read(list(paths), setup.settings, exclude, extend_exclude, force_exclude)
        report = fix_paths(files, options, unsafe=unsafe_fixes)
    if show_skipped:
        click.echo(render_skipped(report.remaining.skipped), err=True, nl=False)
    problems = report.problems
    unwritten = write_changed(report) if write and not stdin else []
    problems += unwritten
    if not write and not stdin:
        for state in report.changed:
            sys.stdout.write(unified_diff(state, display_path(state.path)))
    notes = scope_notes(len(report.remaining.skipped), assumed_hardware(report.remaining.scopes, setup.rules),
                        schema_versions(report.remaining.scopes, setup.rules))
    _explain(report, problems, applied=(write and not unwritten) or stdin, show_fixes=show_fixes, quiet=quiet,
             unsafe=unsafe_fixes, notes=notes)
    if write or stdin:
        threshold = Severity(fail_on).rank
        left = any(d.severity.rank >= threshold for d in report.remaining.diagnostics)
        sys.exit(1 if left or unwritten else 0)
    sys.exit(1 if report.changed else 0)


def _fix_stdin(name: Path, options: LintOptions, unsafe: bool) -> FixReport:
    """Fix stdin and print the result (the input itself, byte for byte, when it is not UTF-8 text)."""
    from axlint.document import DocumentError, decode_bytes
    from axlint.fixer import BOM, FixReport, fix_text
    from axlint.lint import lint_text

    raw = read_stdin()
    try:
        text = decode_bytes(raw)
    except DocumentError:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        return FixReport({}, lint_text(name, raw, options))
    report = fix_text(name, text, options, unsafe=unsafe)
    sys.stdout.flush()
    sys.stdout.buffer.write((BOM if raw.startswith(BOM) else b"") + report.file(name).text.encode("utf-8"))
    return report


def _explain(report: FixReport, problems: list[str], *, applied: bool, show_fixes: bool, quiet: bool,
             unsafe: bool, notes: str) -> None:
    """stderr: fix problems, the fixes per file and rule, the findings left, a summary line."""
    for problem in problems:
        click.echo(f"axlint: warning: {problem}", err=True)
    total = sum(len(f.applied) for f in report.changed)
    if show_fixes and total:
        click.echo(fixes_listing(report, applied), err=True, nl=False)
    remaining = report.remaining.diagnostics
    if remaining:
        click.echo(render_concise(remaining, report.remaining.sources, []), err=True, nl=False)
    if quiet:
        return
    verb = "Fixed" if applied else "Would fix"
    line = f"{verb} {total} finding{'s' if total != 1 else ''} in {len(report.changed)} file" \
           f"{'s' if len(report.changed) != 1 else ''}, {len(remaining)} remaining{notes}."
    hidden = sum(1 for d in remaining if d.fix and d.fix.applicability.value == "unsafe")
    if hidden and not unsafe:
        line += f" {hidden} more fixable with --unsafe-fixes."
    click.echo(line, err=True)


def fixes_listing(report: FixReport, applied: bool) -> str:
    """ruff's --show-fixes: `Fixed N findings:`, then `- file:` and `    count × CODE (name)` lines."""
    total = sum(len(f.applied) for f in report.changed)
    lines = [f"{'Fixed' if applied else 'Would fix'} {total} finding{'s' if total != 1 else ''}:"]
    for state in report.changed:
        lines.append(f"- {display_path(state.path)}:")
        lines += [f"    {n} × {code} ({name})" for (code, name), n in sorted(state.fixed.items())]
    return "\n".join(lines) + "\n"
