"""Dispatch: run each selected rule on a TrainingRun and turn its hits into findings.

A check-backed rule runs its registered Python check (`axlint.rule.CHECKS`), each hit held to the check's
declared contract; a condition rule is evaluated by `axlint.conditions` and located at the first key it names
that is written, with its pack `fix:` block built by `declarative_fix`. A check that raises becomes an AX999
finding naming the rule, never a traceback, and the other rules still run.
"""
from __future__ import annotations

from typing import Iterable

from axlint import edits
from axlint.conditions import condition_hit, evaluate, keys_of, lookup, scope_ok
from axlint.diagnostics import Diagnostic, Span
from axlint.fixes import Applicability, Fix, key_fix
from axlint.packs import PackError
from axlint.rule import (
    CHECKS,
    INTERNAL_ERROR,
    Hit,
    Rule,
    check_hit,
    emit,
    format_message,
)
from axlint.run import TrainingRun


def run_rules(run: TrainingRun, rules: list[Rule]) -> list[Diagnostic]:
    """Evaluate each rule on the run; a crashing check becomes an AX999 internal-error finding naming the rule (when
    AX999 is selected), never a traceback, and the other rules still run."""
    out: list[Diagnostic] = []
    crash_rule = next((r for r in rules if r.code == INTERNAL_ERROR), None)
    with edits.unfit_marked():  # once for all rules: entered per rule, it cost more than most rules on the corpus
        for rule in rules:
            if rule.check is None and rule.when is None:
                continue
            try:
                hits = list(_hits(run, rule))
                found = [(hit, _message(run, rule, hit)) for hit in hits]
            except PackError:
                raise
            except Exception as exc:  # a bug in one check must not hide the other findings
                doc = run.axolotl or run.deepspeed
                assert doc is not None
                if crash_rule is not None:
                    out.append(emit(crash_rule, doc.path, Span.file_start(),
                                    problem=f"axlint's check for {rule.code} ({rule.name}) failed on this config "
                                            f"({type(exc).__name__}: {exc}), so {rule.code} gave no verdict; please "
                                            f"report it, and `--ignore {rule.code}` to go on"))
                continue
            for hit, message in found:
                fix = hit.fix if hit.fix is None or edits.UNFIT not in hit.fix.edits else None
                out.append(rule.diagnostic(hit.doc.path, hit.span, message, fix))
    return out


def _message(run: TrainingRun, rule: Rule, hit: Hit) -> str:
    """A check's message takes only what the check declared it supplies; a condition's may name key paths."""
    if rule.check:
        check_hit(CHECKS[rule.check], hit)
        return format_message(rule.message, hit.args)
    return format_message(rule.message, hit.args, lambda path: lookup(run, path))


def _hits(run: TrainingRun, rule: Rule) -> Iterable[Hit]:
    if rule.check:
        return CHECKS[rule.check].run(run, rule)
    if not scope_ok(run, rule) or not evaluate(run, rule.when):
        return []
    hit = condition_hit(run, rule)
    if rule.fix:
        hit.fix = declarative_fix(run, rule)
    return [hit]


def declarative_fix(run: TrainingRun, rule: Rule) -> Fix | None:
    """A pack's `fix:` block: {action: set|delete|rename, key: PATH, value|to: ..., applicability, title}."""
    spec = rule.fix or {}
    path = spec["key"]
    prefix = path.rpartition(":")[0]
    keys = keys_of(path)
    doc = run.deepspeed if prefix.startswith("ds") else run.axolotl
    if doc is None or (prefix.startswith("ds") and not run.ds_editable):
        return None
    if prefix.startswith("ds"):
        keys = run.ds_prefix + keys
    action = spec.get("action", "set")
    if action not in ("set", "delete", "rename"):
        raise PackError(f"{rule.source}: rule {rule.code}: unknown fix action {action!r}")
    title = spec.get("title") or f"{action} `{'.'.join(map(str, keys))}`"
    value = spec.get("to") if action == "rename" else spec.get("value")
    return key_fix(doc, keys, action, value, Applicability(spec.get("applicability", "safe")), title)
