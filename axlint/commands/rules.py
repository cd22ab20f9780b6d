"""`axlint rules` and `axlint rule CODE|NAME`: the rule list and one rule's documentation."""
from __future__ import annotations

from pathlib import Path

import click

from axlint.commands.common import PATH, UsageError, internal_errors
from axlint.packs import PackError, load_rules
from axlint.rule import Rule


def _rules(rules_dirs: tuple[Path, ...]) -> list[Rule]:
    try:
        return load_rules(rules_dirs)
    except PackError as exc:
        raise UsageError(str(exc)) from None


def rule_markdown(rule: Rule, level: int = 1) -> str:
    """A rule's documentation: what it does, why it is bad, what stops the run (error rules the real stack refuses
    or crashes on) or what the stack does silently when it accepts such a config, an example, what to write
    instead, fix safety."""
    d = rule.docs
    h = "#" * level
    parts = [f"{h} {rule.code} {rule.name}", "", f"{rule.summary}", "",
             f"Severity: {rule.severity.value} · category: {rule.category} · pack: {rule.pack} · "
             f"fix: {rule.fixable.value}"]
    for title, key, fence in (("Why is this bad?", "why", False),
                              ("What stops the run", "launch_failure", False),
                              ("What the stack does instead of refusing", "silent_failure", False),
                              ("Example", "example", True), ("Use instead", "instead", True),
                              ("Fix safety", "fix_safety", False)):
        if d.get(key):
            body = d[key].rstrip()
            parts += ["", f"{h}# {title}", "", f"```yaml\n{body}\n```" if fence else body]
    return "\n".join(parts) + "\n"


@click.command(name="rules")
@click.option("--rules-dir", "rules_dirs", multiple=True, type=PATH)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text", show_default=True)
@internal_errors
def rules_command(rules_dirs: tuple[Path, ...], fmt: str) -> None:
    """List every rule."""
    rules = _rules(rules_dirs)
    if fmt == "json":
        import json

        click.echo(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity.value, "category": r.category,
                                "summary": r.summary, "fix": r.fixable.value} for r in rules], indent=2))
    elif fmt == "markdown":
        click.echo(rules_table(rules), nl=False)
    else:
        for r in rules:
            click.echo(f"{r.code:<7} {r.severity.value:<8} {r.name:<40} {r.summary}")


def _cell(text: str) -> str:
    return text.replace("|", r"\|")


def rules_table(rules: list[Rule]) -> str:
    rows = ["| code | name | severity | summary |", "|---|---|---|---|"]
    rows += [f"| {r.code} | `{r.name}` | {r.severity.value} | {_cell(r.summary)} |" for r in rules]
    return "\n".join(rows) + "\n"


@click.command(name="rule")
@click.argument("ident")
@click.option("--rules-dir", "rules_dirs", multiple=True, type=PATH)
@internal_errors
def rule_command(ident: str, rules_dirs: tuple[Path, ...]) -> None:
    """Print the documentation of one rule, by code or name."""
    for r in _rules(rules_dirs):
        if ident in (r.code, r.name, *r.redirect_from) or ident.upper() == r.code:
            click.echo(rule_markdown(r), nl=False)
            return
    raise UsageError(f"no rule {ident!r} (see `axlint rules`)")
