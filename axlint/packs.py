"""Rule packs: finding, caching, reading and validating the YAML packs under `rules/` (and `--rules-dir`), and
selecting rules from them with ruff's `--select` / `--ignore` semantics.

A rule is data: one entry of a pack, `axlint/schemas/rulepack.schema.json` says its fields. Loading a pack holds
each rule to the contract of what emits it (`axlint.rule.validate_contract`).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml

from axlint import datacache
from axlint.checks import load_builtin_checks
from axlint.diagnostics import Severity
from axlint.document import SAFE_LOADER
from axlint.rule import CHECKS, FixAvailability, Rule, validate_contract


class PackError(Exception):
    """A rule pack that cannot be used; the CLI reports it and exits 2."""


def builtin_rules_dir() -> Path:
    """`rules/` of a source checkout, or the copy installed inside the package as `axlint/_rules`."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "rules"
    return checkout if checkout.is_dir() else here / "_rules"


_REQUIRED = ("code", "name", "severity", "category", "summary", "message")
_CODE = re.compile(r"^[A-Z]{2,5}\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def read_pack_data(path: Path, *, cached: bool, details: bool = True) -> Any:
    """The loaded YAML of a pack. The built-in packs carry docs and tests, so parsing them was most of the
    start-up time of `axlint check`; with `cached` the result is kept in the cache folder (`axlint.datacache`,
    one entry per pack name, whatever copy of axlint reads it). Without `details` the cached rules come without
    their `docs` and `tests` (their own entry: five sixths of a pack's data, which linting never reads)."""
    if not cached:
        return _parse_yaml(path.read_bytes())
    if details:
        return datacache.load(path, f"pack-{path.stem}", _parse_yaml)
    return datacache.load(path, f"pack-{path.stem}-rules", _parse_without_details)


_DETAILS = ("docs", "tests")
"""The parts of a rule's pack entry that only `axlint rule`, machine outputs and the test suite read."""


def _parse_without_details(raw: bytes) -> Any:
    """A pack's YAML with each rule's `docs` and `tests` left out."""
    data = _parse_yaml(raw)
    if isinstance(data, dict) and isinstance(data.get("rules"), list):
        data["rules"] = [{k: v for k, v in entry.items() if k not in _DETAILS} if isinstance(entry, dict) else entry
                         for entry in data["rules"]]
    return data


def pack_entry(path: Path, code: str) -> dict[str, Any]:
    """The full pack entry (docs and tests included) of rule `code` of the pack at `path`; empty when the pack no
    longer has it or can no longer be read."""
    return _pack_entries(path).get(code, {})


@lru_cache(maxsize=None)
def _pack_entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = read_pack_data(path, cached=path.parent == builtin_rules_dir())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    rules = data.get("rules") if isinstance(data, dict) else None
    return {entry["code"]: entry for entry in rules or () if isinstance(entry, dict) and "code" in entry}


def _parse_yaml(raw: bytes) -> Any:
    """A pack's YAML, with libyaml's loader where PyYAML has it."""
    return yaml.load(raw.decode("utf-8"), Loader=SAFE_LOADER)


def load_pack(path: Path, *, validate: bool = False) -> list[Rule]:
    """Rules of one pack file. `validate` checks it against the pack JSON Schema (for user packs, which are small
    and are not cached; the built-in ones are)."""
    try:
        data = read_pack_data(path, cached=not validate, details=False)
    except (OSError, UnicodeDecodeError) as exc:
        raise PackError(f"{path}: cannot read rule pack: {exc}") from None
    except yaml.YAMLError as exc:
        raise PackError(f"{path}: invalid YAML in rule pack: {exc}") from None
    if validate:
        _validate_pack(path, data)
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise PackError(f"{path}: a rule pack is a mapping with a `rules:` list")
    rules = []
    for i, entry in enumerate(data["rules"]):
        where = f"{path}: rules[{i}]"
        if not isinstance(entry, dict):
            raise PackError(f"{where}: each rule is a mapping")
        missing = [k for k in _REQUIRED if not entry.get(k)]
        if missing:
            raise PackError(f"{where}: missing {', '.join(missing)}")
        if not _CODE.match(str(entry["code"])) or not _NAME.match(str(entry["name"])):
            raise PackError(f"{where}: code must look like ABC123 and name be kebab-case (got {entry['code']!r}, {entry['name']!r})")
        if (entry.get("check") is None) == (entry.get("when") is None) and not entry.get("emitted_by_engine"):
            raise PackError(f"{where} ({entry['code']}): give exactly one of `check` or `when`")
        try:
            severity = Severity(entry["severity"])
        except ValueError:
            raise PackError(f"{where} ({entry['code']}): severity must be error, warning or info") from None
        try:
            fixable = FixAvailability(entry["fixable"]) if entry.get("fixable") else implied_fixable(entry)
        except ValueError:
            raise PackError(f"{where} ({entry['code']}): fixable must be never, sometimes or always") from None
        report = entry.get("report") or ()
        rules.append(Rule(
            code=entry["code"], name=entry["name"], severity=severity, category=entry["category"],
            summary=entry["summary"], message=entry["message"], pack=str(data.get("pack", path.stem)), source=path,
            fixable=fixable, check=entry.get("check"), when=entry.get("when"),
            report=tuple([report] if isinstance(report, str) else report), report_part=entry.get("report_part", "key"),
            fix=entry.get("fix"), options=entry.get("options") or {},
            redirect_from=tuple(entry.get("redirect_from") or ()),
        ))
    return rules


def implied_fixable(entry: dict[str, Any]) -> FixAvailability:
    """A rule's fix availability when its pack entry does not state it: what its check declares, `sometimes` for a
    condition with a `fix:` block, else never."""
    if entry.get("check") in CHECKS:
        return CHECKS[entry["check"]].fix
    return FixAvailability.SOMETIMES if entry.get("fix") and entry.get("when") is not None else FixAvailability.NEVER


def _validate_pack(path: Path, data: Any) -> None:
    import json
    import jsonschema  # only for user packs: the built-in ones are validated by the test suite

    schema = json.loads((Path(__file__).parent / "schemas" / "rulepack.schema.json").read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        loc = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise PackError(f"{path}: invalid rule pack at {loc}: {error.message}")


def load_rules(extra_dirs: Iterable[Path] = ()) -> list[Rule]:
    """Built-in packs plus every `*.yaml` pack in `extra_dirs`; codes and names must be unique."""
    load_builtin_checks()
    rules: list[Rule] = []
    for pack in sorted(builtin_rules_dir().glob("*.yaml")):
        rules.extend(load_pack(pack))
    for folder in extra_dirs:
        if not Path(folder).is_dir():
            raise PackError(f"{folder}: rules directory not found")
        for pack in sorted(Path(folder).glob("*.y*ml")):
            rules.extend(load_pack(pack, validate=True))
    seen: dict[str, Rule] = {}
    for rule in rules:
        for ident in (rule.code, rule.name, *rule.redirect_from):
            if ident in seen and seen[ident] is not rule:
                raise PackError(f"{rule.source}: {ident} is already defined in {seen[ident].source}")
            seen[ident] = rule
        if (problem := validate_contract(rule)) is not None:
            raise PackError(f"{rule.source}: {problem}")
    return rules


def _matches(rule: Rule, selector: str) -> bool:
    s = selector.strip()
    return s == "ALL" or s == rule.name or rule.code.startswith(s) or s in rule.redirect_from


def select_rules(rules: list[Rule], select: list[str] | None = None, ignore: list[str] | None = None,
                 extend_select: list[str] | None = None) -> list[Rule]:
    """ruff semantics: `select` replaces the default (ALL), `extend_select` adds, `ignore` removes."""
    chosen = [r for r in rules if any(_matches(r, s) for s in (select or ["ALL"]))]
    taken = {id(r) for r in chosen}
    chosen += [r for r in rules if id(r) not in taken and any(_matches(r, s) for s in (extend_select or []))]
    return [r for r in chosen if not any(_matches(r, s) for s in (ignore or []))]


def unknown_selectors(rules: list[Rule], selectors: Iterable[str]) -> list[str]:
    return [s for s in selectors if not any(_matches(r, s) for r in rules)]
