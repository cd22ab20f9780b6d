"""Run inside the oracle venv (tests/oracle/requirements.txt): what Axolotl's `load_cfg` does before training, on
each config file: `yaml.safe_load`, register the config's plugins, `validate_config` with the GPU capabilities.

Reads one JSON object per line on stdin, {"id": <config path, relative to the working directory>,
"capabilities": {...}}, and writes one per line on stdout: {"id", "verdict", "error", "locs"}. The verdict is
"accepted", "refused", or "environment" for an exception that judges the machine rather than the config (a
package the config needs is not installed here: ring-flash-attn, torchao), so the suite can tell them apart.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
logging.disable(logging.CRITICAL)

import yaml  # noqa: E402
from axolotl.integrations.base import PluginManager  # noqa: E402
from axolotl.utils.config import prepare_plugins, validate_config  # noqa: E402
from axolotl.utils.dict import DictDefault  # noqa: E402
from pydantic import ValidationError  # noqa: E402

ENV = {"torch_version": "2.12.0"}
MISSING_PACKAGE = re.compile(r"is not installed|missing one of|No module named|pip install", re.IGNORECASE)


def validated(path: str, capabilities: dict) -> DictDefault:
    """Axolotl's validated config for one config file; raises what start-up validation raises."""
    PluginManager._instance = None  # a fresh registry: plugins of one config must not leak into the next
    with open(path, encoding="utf-8") as fh:
        cfg = DictDefault(yaml.safe_load(fh))
    prepare_plugins(cfg)
    return validate_config(cfg, capabilities=capabilities, env_capabilities=ENV)


def judge(path: str, capabilities: dict) -> dict:
    """The verdict of Axolotl's start-up validation on one config file."""
    try:
        validated(path, capabilities)
    except ValidationError as exc:
        errors = exc.errors()
        message = errors[0]["msg"] if errors else str(exc)
        return {"verdict": _kind(message), "error": _first_line(message),
                "locs": [[str(part) for part in e["loc"]] for e in errors]}
    except Exception as exc:  # every other exception out of start-up validation stops the launch too
        message = f"{type(exc).__name__}: {exc}"
        return {"verdict": "environment" if isinstance(exc, ImportError) else _kind(message),
                "error": _first_line(message), "locs": []}
    return {"verdict": "accepted", "error": "", "locs": []}


def _kind(message: str) -> str:
    return "environment" if MISSING_PACKAGE.search(message) else "refused"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # what Axolotl prints while validating must not mix with the verdicts
    for line in sys.stdin:
        if line.strip():
            item = json.loads(line)
            out.write(json.dumps({"id": item["id"], **judge(item["id"], item["capabilities"])}) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
