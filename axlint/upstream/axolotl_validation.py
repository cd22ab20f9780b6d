"""What Axolotl's `load_cfg` (Axolotl 0.18.0 `cli/config.py`) does to validate a config before training, and
nothing more: `yaml.safe_load`, `prepare_plugins` with a fresh plugin registry, `validate_config` with the GPU
capabilities given (none when the config sets `use_ray`, as `load_cfg` defers those checks to the Ray workers).

This file imports only the standard library at the top and Axolotl inside functions, and never imports axlint:
it runs as a script (`python axolotl_validation.py`) in whatever interpreter has Axolotl installed, and the
differential test suite imports it from its own Axolotl venv. Protocol: one JSON request per line on stdin,
{"id", "text" or "path", "capabilities", "env_capabilities" (optional), "config_path" (optional)}, one JSON answer
per line on stdout (see `validate`). The first line written is {"ready": true, "axolotl": VERSION} once Axolotl
is imported, or {"ready": false, "error": ...} when it cannot be.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys
from importlib import metadata
from typing import Any

MISSING_PACKAGE = re.compile(r"is not installed|missing one of|No module named|pip install", re.IGNORECASE)
"""A refusal that judges the machine rather than the config: a package the config needs is not installed."""
BUGS = (TypeError, AttributeError, KeyError, IndexError, NameError, ZeroDivisionError, RecursionError)
"""Exceptions Axolotl raises by accident (its code met a value it did not expect), not as a refusal."""
CAPTURED_LOGGERS = ("axolotl",)
"""Loggers whose WARNING records during validation are reported (the `axolotl.*` tree: schemas, plugins)."""


def prepare_environment() -> None:
    """No network and no telemetry while validating: a lint must not download models or report configs."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "AXOLOTL_DO_NOT_TRACK",
                 "DO_NOT_TRACK"):
        os.environ.setdefault(name, "1")


def axolotl_version() -> str:
    try:
        return metadata.version("axolotl")
    except metadata.PackageNotFoundError:
        return "unknown"


def torch_version() -> str | None:
    """What `gpu_capabilities()` reports as `torch_version` (without a local `+cu124` tag), read from the
    installed distribution so that torch is imported by Axolotl only."""
    try:
        return metadata.version("torch").split("+", 1)[0]
    except metadata.PackageNotFoundError:
        return None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[dict[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call inside Axolotl must not fail the validation
            message = str(record.msg)
        self.records.append({"logger": record.name, "level": record.levelname, "msg": message})


def _fresh_plugin_state() -> None:
    """Forget the plugins and the once-only warnings of the previous config (both are process-wide in Axolotl)."""
    from axolotl.integrations.base import PluginManager

    PluginManager._instance = None
    try:
        from axolotl.utils.logging import MultiProcessAdapter

        MultiProcessAdapter.warning_once.cache_clear()
    except (ImportError, AttributeError):
        pass


def load(text: str, config_path: str | None = None) -> Any:
    """`load_cfg`'s first step: the YAML as Axolotl's `DictDefault`, with the path it was read from."""
    import yaml
    from axolotl.utils.dict import DictDefault

    cfg = DictDefault(yaml.safe_load(text))
    if config_path:
        cfg.axolotl_config_path = config_path
    return cfg


def check(cfg: Any, capabilities: dict[str, Any] | None, env_capabilities: dict[str, Any] | None = None) -> Any:
    """`load_cfg`'s validation: the config's plugins registered in a fresh registry, then `validate_config` (GPU
    capabilities left out under `use_ray`, as `load_cfg` does). Returns the validated config; raises what
    `axolotl train` would stop on."""
    from axolotl.utils.config import prepare_plugins, validate_config

    _fresh_plugin_state()
    prepare_plugins(cfg)
    caps, env = (None, None) if cfg.use_ray else (capabilities, env_capabilities)
    if caps is not None and env is None:
        env = {"torch_version": torch_version()}
    return validate_config(cfg, capabilities=caps, env_capabilities=env)


def validated(text: str, capabilities: dict[str, Any] | None, env_capabilities: dict[str, Any] | None = None,
              config_path: str | None = None) -> Any:
    """Axolotl's validated config for one config's text; raises what start-up validation raises."""
    return check(load(text, config_path), capabilities, env_capabilities)


def validate(text: str, capabilities: dict[str, Any] | None, env_capabilities: dict[str, Any] | None = None,
             config_path: str | None = None) -> dict[str, Any]:
    """Axolotl's verdict on one config's text.

    Returns {"status": "accepted" | "refused", "errors": [{"loc": [...], "msg", "type"}], "warnings":
    [{"logger", "level", "msg"}], "environment", "exception", "crashed"}. `environment` marks a refusal that is
    about this machine (a package the config needs is missing) rather than the config. An exception other than
    pydantic's ValidationError stops `axolotl train` just the same: a refusal with an empty `loc` and
    `exception` set; `crashed` when it is not one Axolotl raises on purpose (a TypeError, AttributeError, ...:
    Axolotl's code failed on a value it did not expect).
    """
    from pydantic import ValidationError

    collect = _Collect()
    loggers = [logging.getLogger(name) for name in CAPTURED_LOGGERS]
    for logger in loggers:
        logger.addHandler(collect)
    errors: list[dict[str, Any]] = []
    environment = exception = crashed = False
    cfg: Any = None
    try:
        cfg = load(text, config_path)
        check(cfg, capabilities, env_capabilities)
    except ValidationError as exc:
        prefix = _dataset_prefix(cfg, exc.title)
        errors = [{"loc": prefix + [p if isinstance(p, int) else str(p) for p in e.get("loc", ())],
                   "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))} for e in exc.errors()]
        if not errors:
            errors = [{"loc": [], "msg": str(exc), "type": "validation_error"}]
        environment = bool(MISSING_PACKAGE.search(errors[0]["msg"]))
    except Exception as exc:  # anything else out of start-up validation stops the launch too
        message = f"{type(exc).__name__}: {exc}"
        errors = [{"loc": [], "msg": message, "type": type(exc).__name__}]
        environment = isinstance(exc, ImportError) or bool(MISSING_PACKAGE.search(message))
        exception, crashed = True, isinstance(exc, BUGS)
    except SystemExit as exc:  # a validator that calls sys.exit() ends `axolotl train` as well
        errors = [{"loc": [], "msg": f"Axolotl exited during validation (status {exc.code})", "type": "SystemExit"}]
        exception = crashed = True
    finally:
        for logger in loggers:
            logger.removeHandler(collect)
    return {"status": "refused" if errors else "accepted", "errors": errors, "warnings": collect.records,
            "environment": environment, "exception": exception, "crashed": crashed}


def _dataset_prefix(cfg: Any, title: str) -> list[Any]:
    """`validate_config` turns each `datasets:` entry into a dataset model, in order, before it validates the
    config, so an error from that step has a loc relative to one entry: the first one still unconverted."""
    if title.startswith("Axolotl"):
        return []
    from pydantic import BaseModel

    datasets = cfg.get("datasets") if hasattr(cfg, "get") else None
    if not isinstance(datasets, list):
        return []
    index = next((i for i, ds in enumerate(datasets) if not isinstance(ds, BaseModel)), None)
    return [] if index is None else ["datasets", index]


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """One protocol request -> its answer (the text, or the file at `path`, validated)."""
    if "text" in request:
        text = request["text"]
    else:
        with open(request["path"], encoding="utf-8") as fh:
            text = fh.read()
    result = validate(text, request.get("capabilities"), request.get("env_capabilities"),
                      request.get("config_path"))
    return {"id": request.get("id"), **result}


def main() -> None:
    """Serve requests from stdin. Whatever Axolotl prints (Python or native code) goes to stderr, so stdout
    carries the protocol only."""
    prepare_environment()
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    logging.getLogger().addHandler(logging.NullHandler())  # keep Python's last-resort handler off our stderr
    logging.disable(logging.INFO)  # only warnings are reported: INFO and DEBUG records are not even made

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj, default=str) + "\n")
        out.flush()

    try:
        import axolotl.utils.config  # noqa: F401  (the import cost, paid once, before the first request)
    except BaseException as exc:  # noqa: BLE001 - a broken install is reported, not raised
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}", "axolotl": axolotl_version()})
        return
    send({"ready": True, "axolotl": axolotl_version()})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            send(answer(request))
        except Exception as exc:  # a bad request gets an answer, never silence
            send({"id": None, "status": "failed", "error": f"{type(exc).__name__}: {exc}"})


if __name__ == "__main__":
    main()
