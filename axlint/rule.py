"""What a rule is and what a Python check promises: `Rule` (one pack entry), `Hit` (one place a check fires),
`FixAvailability`, and the registry of checks with the contract each declares.

A check-backed rule is tied to its pack entry by the check's name. The check declares, when it registers, the
message arguments every hit supplies, the rule options it reads, and whether it fixes; `validate_contract`
holds the pack entry to that declaration when packs load, and `check_hit` holds each hit to it when the check
runs. A message placeholder the check does not supply is a pack error, never the word "unset" in a finding.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from axlint.diagnostics import Diagnostic, Severity, Span

if TYPE_CHECKING:
    from axlint.document import Document
    from axlint.fixes import Fix
    from axlint.run import TrainingRun


class FixAvailability(str, Enum):
    """Whether a rule's findings come with a fix: never, for some findings, or for every finding."""

    NEVER = "never"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


@dataclass(frozen=True)
class Rule:
    """One rule of a pack (see `axlint/schemas/rulepack.schema.json` for the fields)."""

    code: str
    name: str
    severity: Severity
    category: str
    summary: str
    message: str
    pack: str
    source: Path
    fixable: FixAvailability = FixAvailability.NEVER
    check: str | None = None
    when: Any = None
    report: tuple[str, ...] = ()
    report_part: str = "key"
    fix: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    redirect_from: tuple[str, ...] = ()

    @property
    def docs(self) -> dict[str, str]:
        """The `docs:` of this rule's pack entry, read from the pack when first asked for: linting never asks."""
        return self._entry().get("docs") or {}

    @property
    def tests(self) -> tuple[dict[str, Any], ...]:
        """The `tests:` of this rule's pack entry, read from the pack when first asked for."""
        return tuple(self._entry().get("tests") or ())

    def _entry(self) -> dict[str, Any]:
        from axlint.packs import pack_entry  # `axlint.packs` builds rules: it imports this module

        return pack_entry(self.source, self.code)

    def diagnostic(self, path: Path, span: Span, message: str, fix: "Fix | None" = None) -> Diagnostic:
        """A finding of this rule at `span` of `path`, with its code, name, severity and category."""
        return Diagnostic(path, span, self.code, self.name, self.severity, message, self.category, fix)


@dataclass
class Hit:
    """One place where a rule fires; the engine turns it into a Diagnostic with `rule.message` formatted."""

    doc: "Document"
    span: Span
    args: dict[str, Any] = field(default_factory=dict)
    fix: "Fix | None" = None


CheckFunction = Callable[["TrainingRun", Rule], Iterable[Hit]]


@dataclass(frozen=True)
class Check:
    """A registered Python check and its contract."""

    name: str
    run: CheckFunction
    args: frozenset[str]
    fix: FixAvailability
    options: frozenset[str] = frozenset()


CHECKS: dict[str, Check] = {}


def register_check(name: str, *, args: Iterable[str] = (), fix: FixAvailability = FixAvailability.NEVER,
                   options: Iterable[str] = ()) -> Callable[[CheckFunction], CheckFunction]:
    """Register `fn` as the check `name`: every hit supplies `args`, the check reads `options` from its rule, and
    its findings come with a fix `fix` (never / sometimes / always)."""
    def deco(fn: CheckFunction) -> CheckFunction:
        if name in CHECKS:
            raise ValueError(f"check {name!r} registered twice")
        CHECKS[name] = Check(name, fn, frozenset(args), fix, frozenset(options))
        return fn

    return deco


INVALID_CONFIG, UNUSED_SUPPRESSION, INTERNAL_ERROR = "AX000", "AX002", "AX999"
AXOLOTL_REFUSES, AXOLOTL_WARNS = "AX020", "AX021"
ENGINE_ARGS: dict[str, frozenset[str]] = {
    INVALID_CONFIG: frozenset({"problem"}),
    UNUSED_SUPPRESSION: frozenset({"codes"}),
    INTERNAL_ERROR: frozenset({"problem"}),
    AXOLOTL_REFUSES: frozenset({"version", "message"}),
    AXOLOTL_WARNS: frozenset({"version", "message"}),
}
"""The rules that axlint's engine emits itself (no check, no condition) and the message arguments it supplies:
AX000 a file that cannot be read, AX002 an unused suppression, AX999 a check that raised, AX020/AX021 what the
real Axolotl refuses or warns about."""

_FIELD = re.compile(r"\{([A-Za-z_][\w.:]*)\}")


def placeholders(message: str) -> list[str]:
    """The `{name}` fields of a message, in order."""
    return _FIELD.findall(message)


def validate_contract(rule: Rule) -> str | None:
    """What is wrong between a rule's pack entry and the contract of what emits it, or None.

    * a check-backed rule's message may only use the arguments its check supplies, must give every option the
      check reads, and must state the fix availability the check declares;
    * an engine-emitted rule's message may only use the arguments the engine supplies, and it never fixes;
    * a condition rule fixes exactly when it has a `fix:` block (sometimes: a DeepSpeed fix needs a file to write).
    """
    if rule.check is not None:
        check = CHECKS.get(rule.check)
        if check is None:
            return f"rule {rule.code} names unknown check {rule.check!r}"
        unknown = [p for p in placeholders(rule.message) if p not in check.args]
        if unknown:
            return (f"rule {rule.code}: message uses {', '.join(sorted(set(unknown)))}, which check {check.name!r} "
                    f"does not supply (it supplies {', '.join(sorted(check.args)) or 'nothing'})")
        missing = sorted(check.options - set(rule.options))
        if missing:
            return (f"rule {rule.code}: check {check.name!r} reads options {', '.join(missing)}, "
                    "which the pack does not give")
        if rule.fixable is not check.fix:
            return (f"rule {rule.code}: `fixable: {rule.fixable.value}`, but check {check.name!r} fixes "
                    f"{check.fix.value}")
        return None
    if rule.when is None:
        if rule.code not in ENGINE_ARGS:
            return f"rule {rule.code}: give `check` or `when` (only axlint's own codes are emitted by the engine)"
        unknown = [p for p in placeholders(rule.message) if p not in ENGINE_ARGS[rule.code]]
        if unknown:
            return f"rule {rule.code}: message uses {', '.join(sorted(set(unknown)))}, which axlint does not supply"
        if rule.fixable is not FixAvailability.NEVER:
            return f"rule {rule.code}: axlint emits it without a fix, so `fixable` is never"
        return None
    expected = FixAvailability.SOMETIMES if rule.fix else FixAvailability.NEVER
    if rule.fixable is not expected:
        return (f"rule {rule.code}: a condition rule {'with' if rule.fix else 'without'} a `fix:` block is "
                f"`fixable: {expected.value}`")
    return None


def check_hit(check: Check, hit: Hit) -> None:
    """Hold one hit to its check's contract; a broken contract is a bug in axlint (reported as AX999)."""
    missing = sorted(check.args - set(hit.args))
    if missing:
        raise ValueError(f"check {check.name!r} did not supply {', '.join(missing)}")
    if hit.fix is not None and check.fix is FixAvailability.NEVER:
        raise ValueError(f"check {check.name!r} declares no fix but gave one")
    if hit.fix is None and check.fix is FixAvailability.ALWAYS:
        raise ValueError(f"check {check.name!r} declares a fix for every finding but gave none")


MISSING: Any = object()
"""The value of a key path that names nothing (the condition language's "unset")."""


def format_value(v: Any) -> str:
    """A value as a message shows it: YAML spellings for booleans and null, a list in YAML's flow style, `unset` for
    a missing key."""
    if v is MISSING:
        return "unset"
    if isinstance(v, bool) or v is None:
        return {True: "true", False: "false", None: "null"}[v]
    if isinstance(v, (list, tuple)):
        return f"[{', '.join(format_value(x) for x in v)}]"
    return str(v)


def format_message(message: str, args: dict[str, Any], lookup: Callable[[str], Any] | None = None) -> str:
    """Fill `{name}` from `args`; a name not in `args` is looked up as a key path by `lookup` (condition rules)
    and is an error without one (check-backed and engine rules: their arguments are declared)."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in args:
            value = args[name]
            return value if isinstance(value, str) else format_value(value)
        if lookup is None:
            raise KeyError(f"message field {{{name}}} has no value")
        return format_value(lookup(name))

    return _FIELD.sub(sub, message)


def emit(rule: Rule, path: Path, span: Span, **args: Any) -> Diagnostic:
    """A finding of an engine-emitted rule, its message filled from `args`."""
    return rule.diagnostic(path, span, format_message(rule.message, args))
