"""Run inside the oracle venv (tests/oracle/requirements.txt): Axolotl's start-up validation on each config file,
through the same code `axlint check --axolotl-validators` runs (axlint/upstream/axolotl_validation.py: what
`load_cfg` does before training, with the GPU capabilities given). The checkout is on PYTHONPATH (venv.judge).

Reads one JSON object per line on stdin, {"id": <config path, relative to the working directory>,
"capabilities": {...}}, and writes one per line on stdout: {"id", "verdict", "error", "locs"}. The verdict is
"accepted", "refused", or "environment" for a refusal that judges the machine rather than the config (a
package the config needs is not installed here: ring-flash-attn, torchao), so the suite can tell them apart.
ds_judge.py imports `validated`, `_kind` and `_first_line` from here.
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable

from axlint.upstream import axolotl_validation

axolotl_validation.prepare_environment()
logging.disable(logging.CRITICAL)  # the verdict is the refusal; Axolotl's log is not read here

ENV = {"torch_version": "2.12.0"}
"""The torch Axolotl 0.18.0 is built for; the venv has a newer CPU build (see venv.py)."""


def validated(path: str, capabilities: dict) -> Any:
    """Axolotl's validated config for one config file; raises what start-up validation raises."""
    return axolotl_validation.validated(Path(path).read_text(encoding="utf-8"), capabilities, ENV)


def judge(path: str, capabilities: dict) -> dict:
    """The verdict of Axolotl's start-up validation on one config file."""
    result = axolotl_validation.answer({"path": path, "capabilities": capabilities, "env_capabilities": ENV})
    if result["status"] == "accepted":
        return {"verdict": "accepted", "error": "", "locs": []}
    errors = result["errors"]
    return {"verdict": "environment" if result["environment"] else "refused",
            "error": _first_line(errors[0]["msg"]),
            "locs": [] if result["exception"] else [[str(p) for p in e["loc"]] for e in errors]}


def _kind(message: str) -> str:
    return "environment" if axolotl_validation.MISSING_PACKAGE.search(message) else "refused"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def serve(answer: Callable[[dict], dict]) -> None:
    """One answer per request line of stdin, {"id", **answer(request)} per line of stdout; what the stack prints
    while answering goes to stderr, so that it does not mix with the answers."""
    out = sys.stdout
    sys.stdout = sys.stderr
    for line in sys.stdin:
        if line.strip():
            item = json.loads(line)
            out.write(json.dumps({"id": item["id"], **answer(item)}) + "\n")
            out.flush()


def main() -> None:
    serve(lambda item: judge(item["id"], item["capabilities"]))


if __name__ == "__main__":
    main()
