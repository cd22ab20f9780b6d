"""Options and set-up shared by the commands that lint: settings, rule selection, hardware, schema versions."""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import click

from axlint.packs import PackError, load_rules, select_rules, unknown_selectors
from axlint.rule import Rule
from axlint.schemas.validator import (
    SchemaChoice,
    choose_versions,
    default_choice,
    version_key,
)
from axlint.settings import Settings, SettingsError, find_settings_file, load_settings


class UsageError(click.ClickException):
    """Exit 2 with a one-line message (bad settings, bad pack, bad option value)."""

    exit_code = 2


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


PATH = click.Path(path_type=Path)
"""The type of a path option or argument (one instance: click looks up its name's translation per instance)."""
FILE = click.Path(path_type=Path, dir_okay=False)
"""The type of an option that names a file."""

HOST_MEMORY_HELP = ("CPU RAM of each host (1TiB, 512GiB), against which CPU offload is checked. Default: the "
                    "settings' value; read from this machine with --hardware local; else unknown.")


def selection_options(fn: Callable) -> Callable:
    """--select/--ignore/--extend-select/--rules-dir/--settings/--hardware/--model-config."""
    options = [
        click.option("--select", multiple=True, help="Rules to enable: code, prefix, name or ALL (comma-separated)."),
        click.option("--ignore", multiple=True, help="Rules to disable (same forms as --select)."),
        click.option("--extend-select", multiple=True, help="Rules to add to the selection."),
        click.option("--rules-dir", "rules_dirs", multiple=True, type=PATH,
                     help="Folder of extra rule packs (repeatable)."),
        click.option("--settings", "settings_path", type=FILE,
                     help="Settings file (default: closest .axlint.toml or pyproject.toml [tool.axlint])."),
        click.option("--hardware", help="GPUs of the run: 8xH100, 1xA100-40GB, 2x24GiB, or `local` (ask nvidia-smi)."),
        click.option("--host-memory", help=HOST_MEMORY_HELP),
        click.option("--model-config", type=FILE,
                     help="A Hugging Face config.json for a model the catalog lacks."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def discovery_options(fn: Callable) -> Callable:
    """--exclude/--extend-exclude/--force-exclude/--show-skipped, for the commands that take many paths."""
    for option in reversed([
        click.option("--exclude", multiple=True,
                     help="Patterns to skip when walking folders (gitignore syntax), replacing the defaults."),
        click.option("--extend-exclude", multiple=True, help="Patterns to skip, added to the defaults."),
        click.option("--force-exclude", is_flag=True,
                     help="Apply the exclude patterns to files named on the command line too (for hooks)."),
        click.option("--show-skipped", is_flag=True,
                     help="List the files skipped as not Axolotl or DeepSpeed configs, and why."),
    ]):
        fn = option(fn)
    return fn


def files_to_read(paths: list[Path], settings: Settings, exclude: tuple[str, ...], extend_exclude: tuple[str, ...],
                  force_exclude: bool) -> list[Path]:
    """The files named, found in folders or matched by globs (axlint.discovery); an unreadable path is exit 2."""
    from axlint.discovery import DEFAULT_EXCLUDE, DiscoveryError, Excludes, discover

    base = settings.source.parent if settings.source else Path.cwd()
    patterns = _split(exclude) or settings.exclude or list(DEFAULT_EXCLUDE)
    excludes = Excludes(tuple(patterns + settings.extend_exclude + _split(extend_exclude)), base,
                        settings.respect_gitignore)
    try:
        return discover(paths, excludes, force_exclude=force_exclude)
    except DiscoveryError as exc:
        raise UsageError(str(exc)) from None


def reporting_options(fail_on_help: str, stdin_help: str) -> Callable[[Callable], Callable]:
    """--fail-on / --stdin-filename / -q, shared by the commands that lint (`check`, `fix`)."""
    def deco(fn: Callable) -> Callable:
        for option in reversed([
            click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="warning",
                         show_default=True, help=fail_on_help),
            click.option("--stdin-filename", type=PATH, help=stdin_help),
            click.option("-q", "--quiet", is_flag=True, help="No summary line."),
        ]):
            fn = option(fn)
        return fn

    return deco


def schema_options(fn: Callable) -> Callable:
    """--axolotl-version/--deepspeed-version: the releases whose bundled schemas the configs are checked with."""
    for option in reversed([
        click.option("--axolotl-version", help="Axolotl release to check against (default: the installed one, "
                                               "else the newest bundled)."),
        click.option("--deepspeed-version", help="DeepSpeed release to check against (default: the installed one, "
                                                 "else the newest bundled release the Axolotl release allows)."),
    ]):
        fn = option(fn)
    return fn


@dataclass
class Setup:
    """What a linting command needs from its options and settings: the selected and all rules, the hardware,
    the schema versions."""

    settings: Settings
    rules: list[Rule]
    all_rules: list[Rule]
    hardware: Any
    model_config: Path | None
    schemas: SchemaChoice | None = None
    host_memory_gib: float | None = None


def prepare(paths: list[Path], select: tuple[str, ...], ignore: tuple[str, ...], extend_select: tuple[str, ...],
            rules_dirs: tuple[Path, ...], settings_path: Path | None, hardware: str | None,
            model_config: Path | None, axolotl_version: str | None = None,
            deepspeed_version: str | None = None, host_memory: str | None = None) -> Setup:
    """Settings (closest file), then CLI flags over them; every problem is a UsageError (exit 2)."""
    try:
        start = paths[0] if paths and str(paths[0]) != "-" else Path.cwd()
        settings = load_settings(settings_path or find_settings_file(start))
        dirs = [settings.resolve(d) for d in settings.rules_dirs] + list(rules_dirs)
        all_rules = load_rules(dirs)
    except (SettingsError, PackError) as exc:
        raise UsageError(str(exc)) from None
    chosen_select = _split(select) or settings.select
    chosen_ignore = settings.ignore + _split(ignore)
    chosen_extend = settings.extend_select + _split(extend_select)
    bad = unknown_selectors(all_rules, [*(chosen_select or []), *chosen_ignore, *chosen_extend])
    if bad:
        raise UsageError(f"unknown rule selector(s): {', '.join(bad)} (see `axlint rules`)")
    rules = select_rules(all_rules, chosen_select, chosen_ignore, chosen_extend)
    hw = parse_hardware_option(hardware or settings.hardware)
    mc = model_config or (settings.resolve(settings.model_config) if settings.model_config else None)
    return Setup(settings, rules, all_rules, hw, mc, choose_schemas(axolotl_version or settings.axolotl_version,
                                                                    deepspeed_version or settings.deepspeed_version),
                 host_memory_option(host_memory or settings.host_memory, hardware or settings.hardware))


def choose_schemas(axolotl: str | None, deepspeed: str | None) -> SchemaChoice:
    """The bundled schemas for the releases asked for (flag, else setting), else the defaults."""
    for name, value in (("axolotl-version", axolotl), ("deepspeed-version", deepspeed)):
        if value is not None and not version_key(value):
            raise UsageError(f"{name}: `{value}` is not a release number such as 0.18.0")
    return choose_versions(axolotl, deepspeed) if axolotl or deepspeed else default_choice()


def parse_hardware_option(spec: str | None) -> Any:
    """`--hardware` (or the settings' value): a spec such as 8xH100, `local` (ask nvidia-smi), or None when not
    given (each run then assumes its default and says so). A bad spec, or `local` without a GPU, is exit 2."""
    if not spec:
        return None
    from axlint.hardware import detect_local_gpus, parse_hardware

    if spec.strip().lower() == "local":
        found = detect_local_gpus()
        if found is None:
            raise UsageError("--hardware local: nvidia-smi found no GPU here; give the GPUs, e.g. --hardware 8xH100")
        return found
    try:
        return parse_hardware(spec)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def host_memory_option(spec: str | None, hardware: str | None) -> float | None:
    """`--host-memory` (or the settings' value) in GiB; with `--hardware local` and no size, this machine's RAM;
    else None (offload is then shown with what it needs, unchecked). A bad size is exit 2."""
    from axlint.hardware import local_host_memory_gib, parse_host_memory

    if spec:
        try:
            return parse_host_memory(spec)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return local_host_memory_gib() if hardware and hardware.strip().lower() == "local" else None


def read_stdin() -> bytes:
    """The raw bytes of stdin, at most one byte past the size limit (an endless stdin ends there); decoding them is
    the linter's job, so bad input is a finding as for a file."""
    from axlint.document import MAX_FILE_BYTES

    return sys.stdin.buffer.read(MAX_FILE_BYTES + 1)


def stdin_text() -> str:
    """stdin as text for the commands that read one config (`estimate -`, `validate -`); bad input is exit 2."""
    from axlint.document import DocumentError, decode_bytes

    try:
        return decode_bytes(read_stdin())
    except DocumentError as exc:
        raise UsageError(f"stdin: {exc.message}") from None


def internal_errors(fn: Callable) -> Callable:
    """Any unexpected exception is exit 2 with a one-line message (AXLINT_DEBUG=1 shows the traceback)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import os

        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit, KeyboardInterrupt,
                BrokenPipeError):
            raise  # click ends a closed pipe quietly (exit 1, no message)
        except Exception as exc:
            if os.environ.get("AXLINT_DEBUG"):
                raise
            click.echo(f"axlint: internal error: {type(exc).__name__}: {exc} (set AXLINT_DEBUG=1 for a traceback)",
                       err=True)
            sys.exit(2)

    return wrapper
