"""The `axlint` command line: thin click commands that parse arguments, call the library and print."""
from __future__ import annotations

import click

from axlint import __version__
from axlint.commands.check import check
from axlint.commands.estimate import estimate
from axlint.commands.fix import fix
from axlint.commands.rules import rule_command, rules_command
from axlint.commands.validate import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="axlint")
def cli() -> None:
    """Catch CUDA OOMs and config mistakes in Axolotl + DeepSpeed fine-tuning configs before the job starts."""


cli.add_command(check)
cli.add_command(estimate)
cli.add_command(fix)
cli.add_command(rules_command)
cli.add_command(rule_command)
cli.add_command(validate)


def main() -> None:
    cli(prog_name="axlint")
