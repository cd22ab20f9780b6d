"""axlint's side of `--axolotl-validators`: run Axolotl's own start-up validation on each Axolotl config and turn
its refusals and logged warnings into findings (AX020 `axolotl-refuses`, AX021 `axolotl-warns`).

Axolotl runs in a worker subprocess (`axolotl_validation.py`, same interpreter by default) started on the first
config and kept for the rest, so its import (torch included) is paid once per `axlint check`, never by axlint's
own process, and whatever it prints or however it crashes stays out of axlint's output. Each config's text is sent
as it is being linted, so suppressions and the summary work as for every other rule.

Where a finding goes: the key path pydantic names (`loc`), as deep as the file has it; for a refusal or warning
without one, the most specific key the message names (backticked first, then bare words that are keys of the
file); else the start of the file. One finding per problem: an AX020 at a key where axlint itself reports an error
(an AX021 where axlint reports anything) is dropped, since axlint's own finding says the same with its docs and fix.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import util
from pathlib import Path
from typing import Any

from axlint.diagnostics import Diagnostic, Severity, Span
from axlint.document import Document, KeyPath, iter_pairs
from axlint.rule import AXOLOTL_REFUSES, AXOLOTL_WARNS, format_message

WORKER = Path(__file__).with_name("axolotl_validation.py")
START_TIMEOUT_S = 300.0
"""Seconds for the worker to import Axolotl (torch, transformers, pydantic models): a few on a warm disk."""
CONFIG_TIMEOUT_S = 120.0
"""Seconds for Axolotl to validate one config once imported (it takes well under one)."""

COMPUTE_CAPABILITY = {
    "H100-80GB": "sm_90", "H100-PCIe-80GB": "sm_90", "H100-NVL-94GB": "sm_90", "H200-141GB": "sm_90",
    "B200-180GB": "sm_100", "GB200-186GB": "sm_100", "A100-80GB": "sm_80", "A100-40GB": "sm_80",
    "A10G-24GB": "sm_86", "A10-24GB": "sm_86", "L4-24GB": "sm_89", "L40S-48GB": "sm_89", "L40-48GB": "sm_89",
    "A6000-48GB": "sm_86", "RTX6000-Ada-48GB": "sm_89", "RTX-PRO-6000-96GB": "sm_120", "RTX3090-24GB": "sm_86",
    "RTX4090-24GB": "sm_89", "RTX5090-32GB": "sm_120", "V100-32GB": "sm_70", "V100-16GB": "sm_70",
    "T4-16GB": "sm_75",
}
"""What `torch.cuda.get_device_properties` reports for each NVIDIA card of axlint's catalog, as Axolotl's
`gpu_capabilities()` writes it (`sm_<major><minor>`). ROCm cards are left out: there the value says little."""


class UpstreamError(Exception):
    """Axolotl could not be run at all (not installed, broken install, no answer in time): exit 2."""


def axolotl_importable(python: str | None = None) -> bool:
    """Whether `import axolotl` would find a package, without importing it (only for this interpreter)."""
    if python is not None and Path(python).resolve() != Path(sys.executable).resolve():
        return True  # another interpreter: the worker's first answer says
    return util.find_spec("axolotl") is not None


def capabilities(hardware: Any) -> dict[str, Any]:
    """Axolotl's `GPUCapabilities` for the GPUs axlint judges the run on (`--hardware`, or the assumed default)."""
    name = getattr(hardware, "gpu", "")
    cc = COMPUTE_CAPABILITY.get(name)
    major = int(cc[3:-1]) if cc else 0
    return {"bf16": bool(getattr(hardware, "bf16", True)), "fp8": major >= 9, "tf32": major >= 8,
            "n_gpu": int(getattr(hardware, "count", 1)), "n_node": 1, "compute_capability": cc}


class _Worker:
    """The subprocess: JSON lines in, JSON lines out, stderr kept for the last lines of a crash."""

    def __init__(self, python: str) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="axlint-axolotl-")  # Axolotl writes DeepSpeed copies there
        env = {**os.environ, "TMPDIR": self.tmp.name, "PYTHONUNBUFFERED": "1"}
        try:
            self.proc = subprocess.Popen([python, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                                         env=env)
        except OSError as exc:
            self.tmp.cleanup()
            raise UpstreamError(f"cannot start {python}: {exc}") from None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=20)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.strip():
                self.stderr.append(line.rstrip())

    def receive(self, timeout: float, doing: str) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise UpstreamError(f"Axolotl gave no answer within {timeout:.0f} s while {doing}") from None
        if line is None:
            self.proc.wait()
            last = self.stderr[-1] if self.stderr else "no output"
            raise UpstreamError(f"Axolotl's validation ended (exit status {self.proc.returncode}) while {doing}: "
                                f"{last}")
        return json.loads(line)

    def send(self, request: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # the worker is gone: receive() reports how it ended

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()


@dataclass
class AxolotlValidators:
    """Axolotl's start-up validation, one worker per instance, started on first use."""

    python: str = field(default_factory=lambda: sys.executable)
    _worker: _Worker | None = None
    version: str = ""

    def _start(self) -> _Worker:
        if self._worker is None:
            worker = _Worker(self.python)
            ready = worker.receive(START_TIMEOUT_S, "importing Axolotl")
            if not ready.get("ready"):
                worker.close()
                raise UpstreamError(f"Axolotl is installed but cannot be imported: {ready.get('error')}")
            self.version = str(ready.get("axolotl") or "")
            self._worker = worker
        return self._worker

    def validate(self, text: str, path: Path, caps: dict[str, Any]) -> dict[str, Any]:
        """Axolotl's answer for one config (see `axolotl_validation.validate`)."""
        worker = self._start()
        worker.send({"id": str(path), "text": text, "capabilities": caps, "config_path": str(path)})
        answer = worker.receive(CONFIG_TIMEOUT_S, f"validating {path}")
        if answer.get("status") == "failed":
            raise UpstreamError(f"Axolotl's validation failed on {path}: {answer.get('error')}")
        return answer

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def one_per_problem(self, diags: list[Diagnostic], docs: list[Document]) -> list[Diagnostic]:
        return one_per_problem(diags, {d.path: d for d in docs})

    # ------------------------------------------------------------------------------------------ findings

    def findings(self, run: Any, rules: list[Any]) -> list[Diagnostic]:
        """AX020/AX021 findings for the run's Axolotl config (none for a DeepSpeed file on its own)."""
        by_code = {r.code: r for r in rules if r.code in (AXOLOTL_REFUSES, AXOLOTL_WARNS)}
        doc: Document | None = run.axolotl
        if not by_code or doc is None or doc.format != "yaml":
            return []
        answer = self.validate(doc.text, doc.path.resolve(), capabilities(run.hardware))
        out: list[Diagnostic] = []
        if AXOLOTL_REFUSES in by_code:
            merged: dict[tuple, list[dict[str, Any]]] = {}
            for error in answer.get("errors", []):  # a union's alternatives at one key: one finding
                merged.setdefault(tuple(shown_loc(error.get("loc") or [])), []).append(error)
            for loc, errors in merged.items():
                text = "; or ".join(dict.fromkeys(clean_message(e.get("msg", "")) for e in errors))
                if answer.get("crashed"):
                    text = f"its validation crashes with {text}"
                if loc:
                    text = f"`{'.'.join(map(str, loc))}`: {text}"
                out.append(self._diagnostic(doc, by_code[AXOLOTL_REFUSES], text, list(errors[0].get("loc") or []),
                                            {"type": errors[0].get("type", ""),
                                             "environment": bool(answer.get("environment"))}))
        if AXOLOTL_WARNS in by_code:
            seen: set[str] = set()
            for warning in answer.get("warnings", []):
                text = clean_message(warning.get("msg", ""))
                if text and text not in seen:
                    seen.add(text)
                    out.append(self._diagnostic(doc, by_code[AXOLOTL_WARNS], text, [], {"logger": warning.get("logger")}))
        return out

    def _diagnostic(self, doc: Document, rule: Any, message: str, loc: list[Any], extra: dict[str, Any]
                    ) -> Diagnostic:
        text = clean_message(message)
        at = key_path(doc, loc)
        keys = [at] if at and len(at) == len(shown_loc(loc)) else named_keys(doc, text) or ([at] if at else [])
        span = doc.span(keys[0], "key") if keys else Span.file_start()
        shown = format_message(rule.message, {"version": self.version or "?", "message": text})
        return Diagnostic(doc.path, span, rule.code, rule.name, rule.severity, shown, rule.category,
                          extra={"axolotl": {"version": self.version, "loc": list(loc),
                                             "keys": [list(k) for k in keys],
                                             "related": [list(k) for k in all_named_keys(doc, text)],
                                             "names": names_in(text, loc), "text": text, **extra}})


# ---------------------------------------------------------------------------------------------- locating

_BACKTICKED = re.compile(r"`([A-Za-z_][\w.\-]*)`")
_BACKTICKED_ANY = re.compile(r"`([^`]+)`")
_QUOTED = re.compile(r"(?<![\w])'([^'\n]{1,200})'(?![\w])")
_NOT_NAMES = {"the", "and", "for", "not", "use", "set", "with", "true", "false", "none", "null", "auto", "yes",
              "off", "this", "that", "when", "must", "only", "please", "instead", "should", "using", "are", "can"}
_WORD = re.compile(r"[A-Za-z_][\w.]*[A-Za-z0-9_]")
_TYPE_TAG = re.compile(r"^(str|int|float|bool|dict|list|tuple|set|none|literal|function)(\[.*\])?$|^[A-Z]|[\[\]'\"(]")


def clean_message(message: str) -> str:
    """Axolotl's message on one line, without pydantic's `Value error, ` prefix."""
    text = " ".join(str(message).split())
    text = re.sub(r"^(Value error|Assertion failed),\s*", "", text)
    return text if len(text) <= 600 else text[:597] + "..."


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and bool(_TYPE_TAG.search(part))


def shown_loc(loc: list[Any]) -> list[Any]:
    """pydantic's `loc` without union member tags: the key path as the user wrote it."""
    return [p for p in loc if not _is_tag(p)]


def names_in(message: str, loc: list[Any]) -> list[str]:
    """The key names a refusal is about: its loc's last key, backticked names, snake_case words of the message."""
    names = [str(p) for p in shown_loc(loc) if isinstance(p, str)][-1:]
    names += _BACKTICKED.findall(message) + re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b", message)
    return list(dict.fromkeys(n.split(".")[-1] for n in names))


def key_path(doc: Document, loc: list[Any]) -> KeyPath:
    """The longest prefix of pydantic's `loc` written in the file; union member tags (`str`, `list[str]`,
    a model name) are stepped over."""
    path: KeyPath = ()
    for part in loc:
        node = doc.node(path)
        step: str | int | None = None
        if node is not None and node.kind == "seq" and isinstance(part, (int, str)) and str(part).isdigit():
            step = int(part)
        elif node is not None and node.kind == "map":
            step = str(part)
        if step is not None and doc.node((*path, step)) is not None:
            path = (*path, step)
        elif _is_tag(part):
            continue
        else:
            break
    return path


def named_keys(doc: Document, message: str) -> list[KeyPath]:
    """Where a refusal or warning without a `loc` is about, from the names in its message, most telling first:
    a value it quotes ('qolra') where the file writes it, then backticked names that are keys (top level, dotted,
    or a key anywhere in the file), then backticked values (`adamw_bnb_8bit` is written at `optimizer`), then the
    same for the message's other words, keys before values. The first pass that finds anything wins; its keys
    in the order named, without repeats."""
    for passes in _passes(message):
        found = _found(doc, *passes)
        if found:
            return found
    return []


def all_named_keys(doc: Document, message: str) -> list[KeyPath]:
    """Every key the message names, by any of `named_keys`' passes."""
    found: list[KeyPath] = []
    for passes in _passes(message):
        found += [k for k in _found(doc, *passes) if k not in found]
    return found


def _passes(message: str) -> list[tuple[list[str], bool, Any]]:
    quoted = [q for q in _QUOTED.findall(message) if q.strip()]
    backticked = [w for chunk in _BACKTICKED_ANY.findall(message) for w in _WORD.findall(chunk)]
    words = _WORD.findall(message)
    return [(quoted, False, _value_written), (backticked, False, _key_named), (backticked, False, _value_named),
            (words, True, _key_named), (words, True, _value_named)]


def _found(doc: Document, tokens: list[str], bare: bool, finder: Any) -> list[KeyPath]:
    found: list[KeyPath] = []
    for token in tokens:
        path = finder(doc, token, bare)
        if path and path not in found:
            found.append(path)
    return found


def _value_written(doc: Document, token: str, bare: bool) -> KeyPath | None:
    """The first scalar written exactly as `token`."""
    return next((path for path, node in _scalars(doc.root) if path and node.value == token), None)


def _scalars(node: Any, prefix: KeyPath = ()) -> Any:
    """(path, node) of every scalar value under `node`, list items included, depth first in file order."""
    if node.kind == "map":
        for pair in node.pairs:
            yield from _scalars(pair.value, (*prefix, pair.key.value))
    elif node.kind == "seq":
        for i, item in enumerate(node.items):
            yield from _scalars(item, (*prefix, i))
    else:
        yield prefix, node


def _key_named(doc: Document, token: str, bare: bool) -> KeyPath | None:
    """The key `token` names: a path from the top, else (a snake_case name) the first key anywhere so named."""
    name = token[4:] if token.startswith("cfg.") else token  # Axolotl writes `cfg.load_in_4bit` for a key too
    path = tuple(int(p) if p.isdigit() else p for p in name.split("."))
    if doc.node(path) is not None:
        return path
    if bare and "_" not in name:  # a plain English word names a top-level key only ("ReLoRA" -> `relora:`)
        top = [k for k in (p.key.value for p in (doc.root.pairs if doc.root.kind == "map" else []))
               if isinstance(k, str) and k.lower() == name.lower()]
        return (top[0],) if top else None
    return next((path for path, _ in iter_pairs(doc.root) if path and path[-1] == name), None)


def _value_named(doc: Document, token: str, bare: bool) -> KeyPath | None:
    """The first scalar written as `token` (any case), for a token that is not a common word or a number."""
    if len(token) < 3 or token.lower() in _NOT_NAMES or token.replace(".", "").isdigit():
        return None
    for path, node in _scalars(doc.root):
        if path and isinstance(node.value, str) and node.value.lower() == token.lower():
            return path
    return None


def _lines(doc: Document, path: KeyPath) -> range:
    """The lines of a key and its value."""
    key = doc.key_node(path)
    value = doc.node(path)
    start = (key or value).span.line if (key or value) else 1
    end = value.span.end_line if value is not None else start
    if value is not None and value.span.end_col == 1 and end > start:
        end -= 1  # a block ends where the next key starts
    return range(start, max(start, end) + 1)


def _core(text: str) -> str:
    """The start of Axolotl's message, as an axlint message quoting it would hold it ("" when too short to tell)."""
    core = re.sub(r"^`[^`]*`: ", "", text)[:60].rstrip(" .")
    return core if len(core) >= 15 else ""


def one_per_problem(diags: list[Diagnostic], docs: dict[Path, Document]) -> list[Diagnostic]:
    """Drop an AX020 where an axlint error reports the same problem, and an AX021 where any axlint finding does:
    one at a key the upstream finding is located at or names, one that quotes Axolotl's message, or, for a
    finding about a key the file lacks (a required key missing), one whose message names that key."""
    kept = []
    for diag in diags:
        info = diag.extra.get("axolotl") if diag.code in (AXOLOTL_REFUSES, AXOLOTL_WARNS) else None
        doc = docs.get(diag.path)
        if info is None or doc is None:
            kept.append(diag)
            continue
        least = Severity.ERROR.rank if diag.code == AXOLOTL_REFUSES else Severity.INFO.rank
        own = [d for d in diags if d.code not in (AXOLOTL_REFUSES, AXOLOTL_WARNS) and d.path == diag.path and d.severity.rank >= least]
        lines = {n for keys in [*info.get("keys", []), *info.get("related", [])] for n in _lines(doc, tuple(keys))}
        names = [] if info.get("keys") else [f"`{name}`" for name in info.get("names", [])]
        quoted = _core(info.get("text", ""))
        if any(d.span.line in lines or any(name in d.message for name in names) or (quoted and quoted in d.message)
               for d in own):
            continue
        kept.append(diag)
    return kept
