"""The rule engine: loads rule packs, evaluates rules on a TrainingRun, selects and suppresses diagnostics.

A rule is data (a YAML pack under `rules/`). A simple rule is a condition over key paths:
`{key: PATH, OP: VALUE}` with OP in exists, equals, not_equals, in, not_in, greater_than, less_than, truthy,
matches, contains; combined with all / any / not. A VALUE may be `{key: OTHER_PATH}` to compare two keys.
PATH prefixes: none = the Axolotl config with defaults, `raw:` = as written, `ds:` = DeepSpeed with "auto"
resolved, `ds_raw:` = as written, `run:` = attributes of the run (world_size, world_size_assumed), `facts:` = a
resolved fact of `axlint.facts.RunFacts` as Axolotl and DeepSpeed read it (`facts:sample_packing` is true for
`sample_packing: "yes"`). Anything else names a Python check.
"""
from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from axlint import edits
from axlint.checks import CHECKS, Hit, load_builtin_checks
from axlint.diagnostics import Diagnostic, Severity, Span
from axlint.document import Document, DocumentError, KeyPath
from axlint.facts import Fact
from axlint.fixes import Applicability, Fix
from axlint.paths import home
from axlint.run import TrainingRun

MISSING = object()
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PackError(Exception):
    """A rule pack that cannot be used; the CLI reports it and exits 2."""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    category: str
    summary: str
    message: str
    pack: str
    source: Path
    check: str | None = None
    when: Any = None
    report: tuple[str, ...] = ()
    report_part: str = "key"
    fix: dict[str, Any] | None = None
    docs: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    tests: tuple[dict[str, Any], ...] = field(default=(), hash=False, compare=False)
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    redirect_from: tuple[str, ...] = ()

    @property
    def fix_safety(self) -> str:
        if self.fix:
            return self.fix.get("applicability", "safe")
        return self.docs.get("fix_availability", "none")


# ---------------------------------------------------------------------------------------------------- packs


def builtin_rules_dir() -> Path:
    """`rules/` of a source checkout, or the copy installed inside the package as `axlint/_rules`."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "rules"
    return checkout if checkout.is_dir() else here / "_rules"


_REQUIRED = ("code", "name", "severity", "category", "summary", "message")
_CODE = re.compile(r"^[A-Z]{2,5}\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def cache_dir() -> Path | None:
    """Where parsed packs are cached: $AXLINT_CACHE_DIR, else $XDG_CACHE_HOME/axlint or ~/.cache/axlint; None
    when there is no home folder to put it in (then nothing is cached)."""
    if os.environ.get("AXLINT_CACHE_DIR"):
        return Path(os.environ["AXLINT_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "axlint"
    folder = home()
    return folder / ".cache" / "axlint" if folder is not None else None


def _pack_cache_file(path: Path) -> Path | None:
    """One entry per pack name, whatever copy of axlint reads it: the cache stays a handful of files."""
    folder = cache_dir()
    return folder / "packs" / f"{path.stem}.json" if folder is not None else None


def read_pack_data(path: Path, *, cached: bool) -> Any:
    """The loaded YAML of a pack. The built-in packs carry docs and tests, so parsing them was most of the
    start-up time of `axlint check`; with `cached` the result is kept as JSON (about 100x faster to load), keyed
    by the content's length and CRC-32 (hashlib alone costs more to import). A cache that cannot be read or
    written is skipped silently."""
    raw = path.read_bytes()
    cache = _pack_cache_file(path) if cached else None
    if cache is None:
        return yaml.load(raw.decode("utf-8"), Loader=_Loader)
    digest = f"{len(raw)}-{zlib.crc32(raw):08x}"
    try:
        entry = json.loads(cache.read_text(encoding="utf-8"))
        if entry["digest"] == digest:
            return entry["data"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    data = yaml.load(raw.decode("utf-8"), Loader=_Loader)
    _write_cache(cache, digest, data)
    return data


def _write_cache(cache: Path, digest: str, data: Any) -> None:
    """Atomic write of a cache entry, only for data that JSON gives back unchanged."""
    try:
        text = json.dumps({"digest": digest, "data": data})
        if json.loads(text)["data"] != data:
            return
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, cache)
    except (OSError, TypeError, ValueError):
        pass


def load_pack(path: Path, *, validate: bool = False) -> list[Rule]:
    """Rules of one pack file. `validate` checks it against the pack JSON Schema (for user packs, which are small
    and are not cached; the built-in ones are)."""
    try:
        data = read_pack_data(path, cached=not validate)
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
        report = entry.get("report") or ()
        rules.append(Rule(
            code=entry["code"], name=entry["name"], severity=severity, category=entry["category"],
            summary=entry["summary"], message=entry["message"], pack=str(data.get("pack", path.stem)), source=path,
            check=entry.get("check"), when=entry.get("when"),
            report=tuple([report] if isinstance(report, str) else report), report_part=entry.get("report_part", "key"),
            fix=entry.get("fix"), docs=entry.get("docs") or {}, tests=tuple(entry.get("tests") or ()),
            options=entry.get("options") or {}, redirect_from=tuple(entry.get("redirect_from") or ()),
        ))
    return rules


def _validate_pack(path: Path, data: Any) -> None:
    import jsonschema  # only for user packs: the built-in ones are validated by the test suite

    schema = json.loads((Path(__file__).parent / "schemas" / "rulepack.schema.json").read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        loc = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise PackError(f"{path}: invalid rule pack at {loc}: {error.message}")


def load_rules(extra_dirs: Iterable[Path] = ()) -> list[Rule]:
    """Built-in packs plus every `*.yaml` pack in `extra_dirs`; codes and names must be unique."""
    rules: list[Rule] = []
    for pack in sorted(builtin_rules_dir().glob("*.yaml")):
        rules.extend(load_pack(pack))
    for folder in extra_dirs:
        if not Path(folder).is_dir():
            raise PackError(f"{folder}: rules directory not found")
        for pack in sorted(Path(folder).glob("*.y*ml")):
            rules.extend(load_pack(pack, validate=True))
    checks = load_builtin_checks()
    seen: dict[str, Rule] = {}
    for rule in rules:
        for ident in (rule.code, rule.name, *rule.redirect_from):
            if ident in seen and seen[ident] is not rule:
                raise PackError(f"{rule.source}: {ident} is already defined in {seen[ident].source}")
            seen[ident] = rule
        if rule.check and rule.check not in checks:
            raise PackError(f"{rule.source}: rule {rule.code} names unknown check {rule.check!r}")
    return rules


# ---------------------------------------------------------------------------------------------------- selection


def _matches(rule: Rule, selector: str) -> bool:
    s = selector.strip()
    return s == "ALL" or s == rule.name or rule.code.startswith(s) or s in rule.redirect_from


def select_rules(rules: list[Rule], select: list[str] | None = None, ignore: list[str] | None = None,
                 extend_select: list[str] | None = None) -> list[Rule]:
    """ruff semantics: `select` replaces the default (ALL), `extend_select` adds, `ignore` removes."""
    chosen = [r for r in rules if any(_matches(r, s) for s in (select or ["ALL"]))]
    chosen += [r for r in rules if r not in chosen and any(_matches(r, s) for s in (extend_select or []))]
    return [r for r in chosen if not any(_matches(r, s) for s in (ignore or []))]


def unknown_selectors(rules: list[Rule], selectors: Iterable[str]) -> list[str]:
    return [s for s in selectors if not any(_matches(r, s) for r in rules)]


# ---------------------------------------------------------------------------------------------------- conditions


def lookup(run: TrainingRun, path: str) -> Any:
    """The value at a prefixed key path (see module docstring), or MISSING."""
    prefix, _, rest = path.rpartition(":")
    if prefix == "run":
        return getattr(run, rest, MISSING)
    if prefix == "facts":
        value = getattr(run.facts, rest, MISSING)
        value = value.value if isinstance(value, Fact) else value
        return value.value if isinstance(value, Enum) else value
    data: Any = {"": run.config, "raw": run.raw, "ds": run.ds, "ds_raw": run.ds_raw}.get(prefix, MISSING)
    for part in rest.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return MISSING
    return data


def _operand(run: TrainingRun, value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"key"}:
        return lookup(run, value["key"])
    return value


def as_number(v: Any) -> float | None:
    """A number, or a string pydantic would read as one, as a float; None for bools and anything else."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _leaf(run: TrainingRun, cond: dict[str, Any]) -> bool:
    value = lookup(run, cond["key"])
    for op, raw in cond.items():
        if op == "key":
            continue
        arg = _operand(run, raw)
        if op == "exists":
            ok = (value is not MISSING and value is not None) == bool(arg)
        elif value is MISSING or arg is MISSING:
            return False
        elif op == "equals":
            ok = value == arg and isinstance(value, bool) == isinstance(arg, bool)
        elif op == "not_equals":
            ok = value != arg
        elif op == "in":
            ok = value in arg
        elif op == "not_in":
            ok = value not in arg
        elif op in ("greater_than", "less_than"):
            a, b = as_number(value), as_number(arg)
            ok = a is not None and b is not None and (a > b if op == "greater_than" else a < b)
        elif op == "truthy":
            ok = bool(value) == bool(arg)
        elif op == "matches":
            ok = isinstance(value, str) and re.search(arg, value) is not None
        elif op == "contains":
            ok = isinstance(value, (list, tuple, str)) and arg in value
        else:
            raise PackError(f"unknown operator {op!r} in condition {cond}")
        if not ok:
            return False
    return True


def evaluate(run: TrainingRun, cond: Any) -> bool:
    if isinstance(cond, list):
        return all(evaluate(run, c) for c in cond)
    if not isinstance(cond, dict):
        raise PackError(f"a condition is a mapping or a list, got {cond!r}")
    if "all" in cond:
        return all(evaluate(run, c) for c in cond["all"])
    if "any" in cond:
        return any(evaluate(run, c) for c in cond["any"])
    if "not" in cond:
        return not evaluate(run, cond["not"])
    return _leaf(run, cond)


def condition_keys(cond: Any) -> Iterator[str]:
    if isinstance(cond, list):
        for c in cond:
            yield from condition_keys(c)
    elif isinstance(cond, dict):
        for k in ("all", "any"):
            for c in cond.get(k, []):
                yield from condition_keys(c)
        if "not" in cond:
            yield from condition_keys(cond["not"])
        if "key" in cond:
            yield cond["key"]


_CONDITION_KEYS: dict[tuple[str, Path], tuple[str, ...]] = {}


def _scope_ok(run: TrainingRun, rule: Rule) -> bool:
    """A condition rule over Axolotl keys needs the YAML; one over DeepSpeed keys needs a DeepSpeed config."""
    ident = (rule.code, rule.source)
    if ident not in _CONDITION_KEYS:  # a rule's condition never changes: walk it once per process
        _CONDITION_KEYS[ident] = tuple(condition_keys(rule.when))
    for key in _CONDITION_KEYS[ident]:
        prefix = key.rpartition(":")[0]
        if prefix in ("", "raw") and run.axolotl is None:
            return False
        if prefix in ("ds", "ds_raw") and run.ds is None:
            return False
    return True


def locate(run: TrainingRun, path: str, part: str = "key") -> tuple[Document, Span] | None:
    """Where a prefixed key path is written, or None if it is not written anywhere."""
    prefix, _, rest = path.rpartition(":")
    keys: KeyPath = tuple(int(p) if p.isdigit() else p for p in rest.split("."))
    if prefix in ("ds", "ds_raw"):
        if run.ds_raw is None:
            return None
        doc, span = run.ds_span(keys, part)
        return doc, span
    if prefix in ("", "raw") and run.axolotl is not None and run.axolotl.node(keys) is not None:
        return run.axolotl, run.axolotl.span(keys, part)
    return None


def _condition_hit(run: TrainingRun, rule: Rule) -> Hit:
    """Point at the first `report` key (or condition key) that is written; else the DeepSpeed reference or line 1."""
    for path in (*rule.report, *condition_keys(rule.when)):
        found = locate(run, path, rule.report_part)
        if found and (found[0].node(_keys(path)) is not None or path.startswith("ds")):
            doc, span = found
            return Hit(doc, span, {"value": _fmt(lookup(run, path))})
    doc = run.axolotl or run.deepspeed
    assert doc is not None
    return Hit(doc, Span.file_start(), {})


def _keys(path: str) -> KeyPath:
    rest = path.rpartition(":")[2]
    return tuple(int(p) if p.isdigit() else p for p in rest.split("."))


def _fmt(v: Any) -> str:
    if v is MISSING:
        return "unset"
    if isinstance(v, bool) or v is None:
        return {True: "true", False: "false", None: "null"}[v]
    return str(v)


_FIELD = re.compile(r"\{([A-Za-z_][\w.:]*)\}")


def format_message(rule: Rule, run: TrainingRun, args: dict[str, Any]) -> str:
    """Fill `{name}` from the hit's args, else from key paths of the run (`{ds:zero_optimization.stage}`)."""
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in args:
            return _fmt(args[name]) if not isinstance(args[name], str) else args[name]
        return _fmt(lookup(run, name))

    return _FIELD.sub(sub, rule.message)


# ---------------------------------------------------------------------------------------------------- running


INTERNAL_ERROR = "AX999"
"""The code of the finding that stands in for a check that raised."""


def run_rules(run: TrainingRun, rules: list[Rule]) -> list[Diagnostic]:
    """Evaluate each rule on the run; a crashing check becomes an AX999 internal-error finding naming the rule (when
    AX999 is selected), never a traceback, and the other rules still run."""
    out: list[Diagnostic] = []
    report_crashes = any(r.code == INTERNAL_ERROR for r in rules)
    for rule in rules:
        if rule.check is None and rule.when is None:
            continue
        try:
            with edits.unfit_marked():
                hits = list(_hits(run, rule))
        except PackError:
            raise
        except Exception as exc:  # a bug in one check must not hide the other findings
            doc = run.axolotl or run.deepspeed
            assert doc is not None
            if report_crashes:
                out.append(Diagnostic(doc.path, Span.file_start(), INTERNAL_ERROR, "internal-error", Severity.ERROR,
                                      f"axlint's check for {rule.code} ({rule.name}) failed on this config "
                                      f"({type(exc).__name__}: {exc}), so {rule.code} gave no verdict; please report "
                                      f"it, and `--ignore {rule.code}` to go on", "internal"))
            continue
        for hit in hits:
            fix = hit.fix if hit.fix is None or edits.UNFIT not in hit.fix.edits else None
            out.append(Diagnostic(hit.doc.path, hit.span, rule.code, rule.name, rule.severity,
                                  format_message(rule, run, hit.args), rule.category, fix))
    return out


def _hits(run: TrainingRun, rule: Rule) -> Iterable[Hit]:
    if rule.check:
        return CHECKS[rule.check](run, rule)
    if not _scope_ok(run, rule) or not evaluate(run, rule.when):
        return []
    hit = _condition_hit(run, rule)
    if rule.fix:
        hit.fix = declarative_fix(run, rule)
    return [hit]


def declarative_fix(run: TrainingRun, rule: Rule) -> Fix | None:
    """A pack's `fix:` block: {action: set|delete|rename, key: PATH, value|to: ..., applicability, title}."""
    spec = rule.fix or {}
    path = spec["key"]
    prefix = path.rpartition(":")[0]
    keys = _keys(path)
    doc = run.deepspeed if prefix.startswith("ds") else run.axolotl
    if doc is None or (prefix.startswith("ds") and run.ds_source not in ("file", "inline")):
        return None
    if prefix.startswith("ds"):
        keys = run.ds_prefix + keys
    action = spec.get("action", "set")
    if action == "set":
        changes = edits.set_value(doc, keys, spec.get("value"))
    elif action == "delete":
        changes = edits.delete_key(doc, keys)
    elif action == "rename":
        changes = edits.rename_key(doc, keys, spec["to"])
    else:
        raise PackError(f"{rule.source}: rule {rule.code}: unknown fix action {action!r}")
    if not changes:
        return None
    title = spec.get("title") or f"{action} `{'.'.join(map(str, keys))}`"
    return Fix(doc.path, tuple(changes), Applicability(spec.get("applicability", "safe")), title)


# ---------------------------------------------------------------------------------------------------- suppression

_SUPPRESS = re.compile(r"#\s*axlint:\s*(ignore|file-ignore)\[([^\]]*)\]")


@dataclass
class Suppression:
    kind: str
    selectors: list[str]
    line: int
    span: Span
    used: set[str] = field(default_factory=set)


def suppressions(doc: Document) -> list[Suppression]:
    """`# axlint: ignore[CODE,...]` (this line and the next) and `# axlint: file-ignore[CODE,...]` comments."""
    if doc.format != "yaml" or "axlint:" not in doc.text:
        return []
    found, offset = [], 0
    for number, line in enumerate(doc.text.splitlines(keepends=True), start=1):
        for m in _SUPPRESS.finditer(line):
            if _in_comment(line, m.start()):
                selectors = [s.strip() for s in m.group(2).split(",") if s.strip()]
                span = Span(number, m.start() + 1, number, m.end() + 1, offset + m.start(), offset + m.end())
                found.append(Suppression(m.group(1), selectors, number, span))
        offset += len(line)
    return found


def _in_comment(line: str, pos: int) -> bool:
    """The `#` at `pos` is inside a YAML comment: it starts one (line start or after whitespace, outside quotes)
    or follows the `#` of an earlier comment, as in `# why # axlint: ignore[...]`. A quote opens a quoted scalar
    only where a scalar can start, so the apostrophe of `it's` in a plain value is just a character."""
    quote, escaped = None, False
    for i, ch in enumerate(line[:pos]):
        if escaped:
            escaped = False
        elif quote == '"' and ch == "\\":
            escaped = True
        elif quote:
            quote = None if ch == quote else quote
        elif ch in "'\"" and (i == 0 or line[i - 1] in " \t[{,"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return True
    return quote is None and (pos == 0 or line[pos - 1].isspace())


def _selector_hits(selector: str, diag: Diagnostic) -> bool:
    return selector == "ALL" or selector == diag.name or diag.code.startswith(selector)


def apply_suppressions(diags: list[Diagnostic], docs: list[Document], unused_rule: Rule | None) -> list[Diagnostic]:
    """Drop suppressed diagnostics; report suppressions that matched nothing when `unused_rule` is selected."""
    by_path = {doc.path: (doc, suppressions(doc)) for doc in docs}
    kept = []
    for diag in diags:
        _, sups = by_path.get(diag.path, (None, []))
        hit = None
        for sup in sups:
            in_range = sup.kind == "file-ignore" or diag.span.line in (sup.line, sup.line + 1)
            if in_range:
                hit = next((s for s in sup.selectors if _selector_hits(s, diag)), None)
                if hit:
                    sup.used.add(hit)
                    break
        if not hit:
            kept.append(diag)
    if unused_rule is not None:
        for doc, sups in by_path.values():
            for sup in sups:
                unused = [s for s in sup.selectors if s not in sup.used]
                if unused:
                    kept.append(Diagnostic(doc.path, sup.span, unused_rule.code, unused_rule.name, unused_rule.severity,
                                           unused_rule.message.replace("{codes}", ", ".join(unused)), unused_rule.category))
    return kept


def document_error_diagnostic(path: Path, error: DocumentError) -> Diagnostic:
    return Diagnostic(path, error.span, error.code, "invalid-config", Severity.ERROR, error.message, "syntax")
