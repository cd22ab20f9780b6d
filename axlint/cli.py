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
