"""The `axlint` command line: thin click commands that parse arguments, call the library and print.

Each command's module is imported only when that command runs (click's lazy-subcommand pattern), so `axlint check`
does not pay for the imports of `estimate`, `fix` or `validate`.
"""
from __future__ import annotations

import importlib

import click

from axlint import __version__

COMMANDS = {
    "check": ("axlint.commands.check", "check"),
    "estimate": ("axlint.commands.estimate", "estimate"),
    "fix": ("axlint.commands.fix", "fix"),
    "rule": ("axlint.commands.rules", "rule_command"),
    "rules": ("axlint.commands.rules", "rules_command"),
    "validate": ("axlint.commands.validate", "validate"),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported by name on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name]
        return getattr(importlib.import_module(module), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="axlint")
def cli() -> None:
    """Catch CUDA OOMs and config mistakes in Axolotl + DeepSpeed fine-tuning configs before the job starts."""


GC_THRESHOLD = 10_000
"""Allocations between two young-generation collections in the `axlint` process (Python's default is 700). Start-up
creates tens of thousands of long-lived objects (classes, rules, schemas) and a lint allocates many small ones (YAML
nodes, spans): with the default, the collector ran ~280 times over the corpus, a tenth of its CPU time, to find
almost no garbage. Set by the console script only: a program that imports axlint keeps its own settings."""


def main() -> None:
    """The `axlint` console script (and `python -m axlint`): one short-lived process per call."""
    import gc
    import sys

    from axlint import codecache

    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate (a file name that is not UTF-8) prints as `\udcff`
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    code = codecache.install()  # before the command's modules create their dataclasses
    try:
        cli(prog_name="axlint")
    finally:
        code.save()
        gc.freeze()  # what is left lives until exit: the interpreter's last collections need not walk it again
