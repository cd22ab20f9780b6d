"""Running a rule pack's inline test cases: write the case's files, lint with the rule selected, fix, re-lint."""
from __future__ import annotations

import atexit
import functools
from dataclasses import dataclass
from pathlib import Path

from axlint.commands.common import parse_hardware_option
from axlint.packs import select_rules
from axlint.rule import Rule
from axlint.diagnostics import Diagnostic
from axlint.fixer import fix_paths, write_changed
from axlint.lint import LintOptions, lint_text
from axlint.schemas.validator import choose_versions

CONFIG, DEEPSPEED = "config.yml", "ds.json"


@dataclass
class CaseOutcome:
    codes: list[str]
    fixed: dict[str, str]


def write_case(tmp: Path, case: dict) -> Path:
    config = tmp / CONFIG
    config.write_text(case["config"], encoding="utf-8")
    if "deepspeed" in case:
        (tmp / DEEPSPEED).write_text(case["deepspeed"], encoding="utf-8")
    return config


def case_rules(rule: Rule, all_rules: list[Rule], case: dict) -> list[Rule]:
    return select_rules(all_rules, case.get("select") or [rule.code])


def lint_case(tmp: Path, rule: Rule, all_rules: list[Rule], case: dict) -> LintOptions:
    rules = case_rules(rule, all_rules, case)
    upstream = axolotl_validators() if any(r.pack == "upstream" for r in rules) else None
    schemas = choose_versions(axolotl=str(case["axolotl"])) if "axolotl" in case else None  # the release judged
    return LintOptions(rules, parse_hardware_option(case.get("hardware")), schemas=schemas, upstream=upstream)


@functools.lru_cache(maxsize=1)
def axolotl_validators():
    """The upstream pack's rules report what the real Axolotl says: one worker in the oracle venv for all cases."""
    from axlint.upstream.validators import AxolotlValidators
    from tests.oracle.venv import oracle_python

    validators = AxolotlValidators(python=str(oracle_python()))
    atexit.register(validators.close)
    return validators


def findings_for(path: Path, options: LintOptions, code: str) -> list[Diagnostic]:
    """The findings of rule `code`, in file and position order."""
    return sorted((d for d in lint_text(path, None, options).diagnostics if d.code == code), key=Diagnostic.sort_key)


def position(diag: Diagnostic) -> str:
    """`LINE:COLUMN` of a finding in the case's config, `FILE:LINE:COLUMN` in another file (a pack case's `at`)."""
    where = f"{diag.span.line}:{diag.span.col}"
    return where if diag.path.name == CONFIG else f"{diag.path.name}:{where}"


def fix_once(path: Path, options: LintOptions, code: str) -> dict[str, str]:
    """Fix with `code`'s fixes (safe and unsafe) until stable, write; return the new text of each changed file by name."""
    only_code = LintOptions([r for r in options.rules if r.code == code], options.hardware, options.model_config,
                            options.schemas)
    report = fix_paths([path], only_code, unsafe=True)
    assert not report.problems, report.problems
    assert not write_changed(report)
    return {state.path.name: state.text for state in report.changed}
