"""`axlint check`: lint configs and print diagnostics."""
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
from axlint.diagnostics import Diagnostic, Severity
from axlint.lint import LintOptions, LintResult, WorkerDied, lint_paths, lint_text
from axlint.report import (
    FORMATS,
    RENDERERS,
    assumed_hardware,
    render_skipped,
    render_statistics,
    schema_versions,
    summary_line,
)
from axlint.settings import Settings

if TYPE_CHECKING:
    from axlint.upstream.validators import AxolotlValidators


@click.command()
@click.argument("paths", nargs=-1, type=PATH)
@selection_options
@schema_options
@discovery_options
@click.option("--output-format", type=click.Choice(FORMATS), help="How to print findings (default: full).")
@click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, show_default=True,
              help="Processes to check many files with: 0 is one per CPU, 1 checks in this process only. Each "
                   "process takes at least 16 files; the findings are the same whatever the number.")
@click.option("--axolotl-validators/--no-axolotl-validators", default=None,
              help="Also run the installed Axolotl's own config validation (AX020, AX021). Off by default: it "
                   "imports Axolotl and torch in a subprocess, seconds per run; needs axlint installed next to "
                   "Axolotl. Setting: axolotl-validators.")
@reporting_options("Lowest severity that makes the exit code 1.", "Name to report for `-` (stdin).")
@internal_errors
def check(paths: tuple[Path, ...], select, ignore, extend_select, rules_dirs, settings_path, hardware, host_memory,
          model_config, axolotl_version, deepspeed_version, exclude, extend_exclude, force_exclude, show_skipped, output_format,
          statistics, exit_zero, jobs, axolotl_validators, fail_on, stdin_filename, quiet) -> None:
    """Lint Axolotl YAML configs and DeepSpeed JSON configs: files, folders (recursive) or globs.

    Files that are neither (CI workflows, package.json, ...) are skipped and counted. Exit codes: 0 clean,
    1 findings at or above --fail-on, 2 usage error (a missing or unreadable path included), settings or internal
    error.
    """
    if not paths:
        raise UsageError("no files given (pass config paths, folders, globs, or - for stdin)")
    setup = prepare(list(paths), select, ignore, extend_select, rules_dirs, settings_path, hardware, model_config,
                    axolotl_version, deepspeed_version, host_memory)
    upstream = upstream_validators(axolotl_validators, setup.settings)
    options = LintOptions(setup.rules, setup.hardware, setup.model_config, setup.schemas, upstream,
                          host_memory_gib=setup.host_memory_gib, jobs=jobs)
    files = files_to_read([p for p in paths if str(p) != "-"], setup.settings, exclude, extend_exclude,
                          force_exclude)
    result = LintResult()
    stdin = any(str(p) == "-" for p in paths)
    try:
        if stdin:
            result.merge(lint_text(stdin_filename or Path("stdin.yml"), read_stdin(), options))
        if files:
            result.merge(lint_paths(files, options))
    except WorkerDied as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:
        if upstream is not None:
            from axlint.upstream.validators import UpstreamError

            if isinstance(exc, UpstreamError):  # Axolotl could not be run: no verdict, not a finding
                raise UsageError(f"--axolotl-validators: {exc}") from None
        raise
    finally:
        if upstream is not None:
            upstream.close()
    result.diagnostics.sort(key=Diagnostic.sort_key)
    fmt = output_format or setup.settings.output_format or "full"
    out = sys.stdout
    if statistics:
        out.write(render_statistics(result.diagnostics))
    else:
        out.write(RENDERERS[fmt](result.diagnostics, result.sources, setup.rules))
    if show_skipped:
        click.echo(render_skipped(result.skipped), err=True, nl=False)
    if fmt in ("full", "concise") and not quiet:
        read = len(files) + stdin
        click.echo(summary_line(result.diagnostics, read - len(result.skipped), skipped=len(result.skipped),
                                assumed=assumed_hardware(result.scopes, setup.rules),
                                schemas=schema_versions(result.scopes, setup.rules)), err=statistics)
    threshold = Severity(fail_on).rank
    failing = any(d.severity.rank >= threshold for d in result.diagnostics)
    sys.exit(0 if exit_zero or not failing else 1)


def upstream_validators(flag: bool | None, settings: Settings) -> AxolotlValidators | None:
    """The installed Axolotl's validation when asked for (flag, else the `axolotl-validators` setting). Its
    import is looked up, not done, here; without Axolotl in this interpreter the request is a usage error."""
    if not (flag if flag is not None else settings.axolotl_validators):
        return None
    from axlint.upstream.validators import AxolotlValidators, axolotl_importable

    if not axolotl_importable():
        asked = "--axolotl-validators" if flag else f"`axolotl-validators = true` in {settings.source}"
        raise UsageError(f"{asked}: Axolotl is not installed in this Python ({sys.executable}); install axlint "
                         "in Axolotl's environment to judge configs with that Axolotl, or leave the option off")
    return AxolotlValidators()
