"""Dump the pydantic models of an installed Axolotl or DeepSpeed as raw JSON Schema (runs inside a throwaway venv).

Usage: `python dump_pydantic_schema.py axolotl|deepspeed > raw.json`. It needs only the standard
library, pydantic and the package being read; axlint itself is not importable there. Output (stdout, one JSON
object):

- axolotl: `version`, `extra` (the config model's `extra` setting), `config` (AxolotlInputConfig's JSON Schema;
  `x-owner` marks fields declared among the deprecated parameters, `x-deprecated-message` keeps the text of a
  field's pydantic `deprecated=`, `x-downstream-enum` lists the values of
  `optimizer` / `lr_scheduler` that transformers accepts), `plugins` (one entry per plugin class: its dotted path
  and its argument model's schema), `probes` (what `validate_config` does with each candidate key: raise, warn,
  rename; candidates are the deprecated fields and every key-like string literal in Axolotl's config modules that
  is not a field), `prefixed` (nested keys also accepted with their parent's prefix), `datasets_by_rl` (the
  dataset model `validate_config` uses for an `rl` value), `adapters` (the adapter names `validate_adapter` takes
  without a plugin, None before it tested them, and the adapters each plugin registers) and `probe_error` (why
  there are no probes when `validate_config` does not import).
- deepspeed: `version` and `models` (the JSON Schema of each config model axlint checks).

The schemas come from `model_json_schema(mode="validation")`; defaults and enum members that are not JSON
(`torch.dtype`) are written as strings. Each model carries `x-extra` (its `extra` setting) and `x-spellings`
(aliases and field names it also accepts); fields wrapped in a before/wrap/plain validator carry `x-validator`
so the caller knows their input is converted before the declared type is checked.
"""
from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import logging
import os
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticSerializationError


class LooseJsonSchema(GenerateJsonSchema):
    """pydantic's generator, tolerant of Python-only defaults, enum values and types."""

    def encode_default(self, dft: Any) -> Any:
        try:
            return super().encode_default(dft)
        except (PydanticSerializationError, TypeError, ValueError):
            return str(dft)

    def enum_schema(self, schema: Any) -> dict:
        try:
            return super().enum_schema(schema)
        except (PydanticSerializationError, TypeError, ValueError):
            return {"enum": [member.name for member in schema["members"]], "x-enum-names": True}

    def handle_invalid_for_json_schema(self, schema: Any, error_info: str) -> dict:
        return {}

    def model_schema(self, schema: Any) -> dict:
        """Adds `x-extra` (the model's `extra` setting) and `x-spellings` ({other spelling: property name}):
        field names next to aliases where the model validates by name, and every choice of an `AliasChoices`."""
        result = super().model_schema(schema)
        result["x-extra"] = schema["cls"].model_config.get("extra") or "ignore"
        by_name = any(schema["cls"].model_config.get(k) for k in ("populate_by_name", "validate_by_name"))
        spellings = {}
        for name, info in schema["cls"].model_fields.items():
            choices = getattr(info.validation_alias, "choices", None)
            accepted = [c for c in choices if isinstance(c, str)] if choices else []
            if isinstance(info.validation_alias, str):
                accepted.append(info.validation_alias)
            accepted += [info.alias] if info.alias else []
            key = accepted[0] if accepted else name
            if by_name or not accepted:
                accepted.append(name)
            spellings.update({other: key for other in accepted if other != key})
        if spellings:
            result["x-spellings"] = spellings
        return result

    def _mark(self, schema: Any, kind: str) -> dict:
        result = dict(getattr(super(), f"function_{kind}_schema")(schema))
        result["x-validator"] = kind
        return result

    def function_before_schema(self, schema: Any) -> dict:
        return self._mark(schema, "before")

    def function_wrap_schema(self, schema: Any) -> dict:
        return self._mark(schema, "wrap")

    def function_plain_schema(self, schema: Any) -> dict:
        return self._mark(schema, "plain")


def model_schema(model: type[BaseModel]) -> dict:
    """The validation-mode JSON Schema of `model`."""
    return model.model_json_schema(mode="validation", schema_generator=LooseJsonSchema)


def _import(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _plugin_methods(package: Path, method: str) -> Iterator[tuple[str, ast.FunctionDef]]:
    """(plugin class path, the method's definition) for every `BasePlugin` subclass under axolotl/integrations
    that defines `method`, read from the source (importing a plugin may need its kernels)."""
    for source in sorted(package.rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            if not any(getattr(base, "id", getattr(base, "attr", "")) == "BasePlugin" for base in cls.bases):
                continue
            plugin = f"axolotl.integrations.{source.relative_to(package).parts[0]}.{cls.name}"
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method):
                yield plugin, fn


def plugin_classes(package: Path) -> list[tuple[str, str]]:
    """(plugin class path, argument model path) for every plugin whose `get_input_args` returns a constant."""
    return [(plugin, ret.value.value) for plugin, fn in _plugin_methods(package, "get_input_args")
            for ret in ast.walk(fn)
            if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Constant) and isinstance(ret.value.value, str)]


def plugin_adapters(package: Path) -> dict[str, str]:
    """Adapter name -> plugin class path, for every plugin whose `get_adapter_capabilities` returns
    `AdapterCapabilities(name=...)` with a constant name."""
    found = {}
    for plugin, fn in _plugin_methods(package, "get_adapter_capabilities"):
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            if getattr(call.func, "id", getattr(call.func, "attr", "")) != "AdapterCapabilities":
                continue
            for kw in call.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    found[kw.value.value] = plugin
    return dict(sorted(found.items()))


def builtin_adapters(source: Path) -> list[str] | None:
    """The adapter names `validate_adapter` (utils/schemas/peft.py) accepts without a plugin: the constants of its
    `adapter not in (...)` test; None when the release has no such test (its field type says what it takes)."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "validate_adapter"):
        for node in ast.walk(fn):
            if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.NotIn)
                    and getattr(node.left, "id", "") == "adapter"
                    and isinstance(node.comparators[0], (ast.Tuple, ast.List, ast.Set))):
                return [e.value for e in node.comparators[0].elts if isinstance(e, ast.Constant)]
    return None


def _args_model(path: str) -> type[BaseModel]:
    """The argument model at `path`. When the plugin package's __init__ needs a library that is not installed
    (a kernel package), the package is replaced by an empty module so that the file defining the class imports
    on its own."""
    try:
        return _import(path)
    except ImportError:
        name = path.rpartition(".")[2]
        package = ".".join(path.split(".")[:3])
        folder = Path(importlib.util.find_spec("axolotl.integrations").origin).parent / path.split(".")[2]
        stub = types.ModuleType(package)
        stub.__path__ = [str(folder)]
        sys.modules[package] = stub
        for source in sorted(folder.rglob("*.py")):
            tree = ast.parse(source.read_text(encoding="utf-8"))
            if any(isinstance(n, ast.ClassDef) and n.name == name for n in tree.body):
                dotted = ".".join((package, *source.relative_to(folder).with_suffix("").parts))
                return getattr(importlib.import_module(dotted.removesuffix(".__init__")), name)
        raise


class _Captured(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


BASE_CONFIG = {
    "base_model": "org/model",
    "datasets": [{"path": "org/data", "type": "alpaca"}],
    "micro_batch_size": 1,
    "gradient_accumulation_steps": 1,
    "num_epochs": 1,
    "learning_rate": 0.0001,
    "sequence_len": 512,
    "output_dir": "./out",
}
CAPABILITIES = {"bf16": True, "fp8": False, "n_gpu": 8, "n_node": 1, "compute_capability": "sm_90"}
ENV_CAPABILITIES = {"torch_version": "2.12.0"}


def _validate(extra: dict) -> tuple[dict | None, str | None, list[str]]:
    """(validated config, error, warnings) of `validate_config` on BASE_CONFIG plus `extra`, run in a forked
    child so that no probe sees another's state (Axolotl logs some warnings once per process)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        with os.fdopen(write_end, "w") as out:
            json.dump(_validate_here(extra), out, default=str)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        text = answer.read()
    os.waitpid(pid, 0)
    config, error, messages = json.loads(text)
    return config, error, messages


def _validate_here(extra: dict) -> tuple[dict | None, str | None, list[str]]:
    """`_validate`'s work, in the calling process."""
    from axolotl.utils.config import validate_config
    from axolotl.utils.dict import DictDefault

    handler = _Captured()
    logging.getLogger().addHandler(handler)
    kwargs: dict[str, Any] = {}
    params = inspect.signature(validate_config).parameters
    if "capabilities" in params:
        kwargs["capabilities"] = CAPABILITIES
    if "env_capabilities" in params:
        kwargs["env_capabilities"] = ENV_CAPABILITIES
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = validate_config(DictDefault(json.loads(json.dumps({**BASE_CONFIG, **extra}))), **kwargs)
        messages = handler.messages + [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
        return json.loads(json.dumps(dict(out), default=str)), None, messages
    except Exception as exc:  # noqa: BLE001 - any refusal is what the probe records
        return None, f"{type(exc).__name__}: {exc}", handler.messages
    finally:
        logging.getLogger().removeHandler(handler)


def probe(key: str, values: list[Any], baseline: tuple[dict, list[str]]) -> dict:
    """What validate_config does with `key` set to the first value that changes anything: `error`, `warnings`
    (beyond those of the plain run, `baseline`), `changed` (other keys that took the value), whether `key`
    survives validation (`kept`) and, for a refused key, whether its empty value is refused too (`falsy_refused`)."""
    result: dict[str, Any] = {"key": key}
    for value in values:
        out, error, messages = _validate({key: value})
        messages = [m for m in messages if m not in baseline[1]]
        result.update(value=value, error=error, warnings=messages)
        if out is not None:
            result["kept"] = out.get(key) == value
            result["changed"] = sorted(k for k in out if k != key and out.get(k) != baseline[0].get(k)
                                       and json.dumps(out.get(k)) == json.dumps(value))
        type_error = error is not None and "[type=" in error and "type=value_error" not in error
        if type_error:
            result["error"] = None
            continue
        if error or messages or result.get("changed"):
            break
    falsy = _FALSY.get(type(result.get("value")))
    if result.get("error") and falsy is not None and result["value"] != falsy:
        result["falsy_refused"] = _validate({key: falsy})[1] is not None
    return result


_FALSY = {bool: False, int: 0, float: 0.0, str: "", list: [], dict: {}}
"""The empty value of each probe value's type: whether a removed key is refused when it is set to it too."""


_PROBE_VALUES = {"boolean": True, "integer": 7, "number": 0.5, "string": "probe", "array": ["probe"],
                 "object": {"probe": 1}}
_KEY_LIKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


def probe_candidates(config: dict, sources: list[Path]) -> dict[str, list[Any]]:
    """Key -> values to try: deprecated fields (a value of their own type) and key-like string literals of the
    config modules that are not fields (a bool, then an int)."""
    candidates: dict[str, list[Any]] = {}
    for key, prop in config["properties"].items():
        if prop.get("deprecated") or "Deprecated" in prop.get("x-owner", ""):
            branches = prop.get("anyOf", [prop])
            values = [v for b in branches for v in b.get("enum", [b["const"]] if "const" in b else [])]
            values += [_PROBE_VALUES[b["type"]] for b in branches if b.get("type") in _PROBE_VALUES]
            candidates[key] = values[:1] or [True]
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _KEY_LIKE.fullmatch(node.value):
                if node.value not in config["properties"]:
                    candidates.setdefault(node.value, [True, 7, "probe"])
    return dict(sorted(candidates.items()))


def deprecated_fields(model: type[BaseModel]) -> set[str]:
    """Fields declared on a class of the config model's hierarchy whose name says it holds deprecated or
    remapped parameters."""
    return {name for cls in model.__mro__ if any(w in cls.__name__ for w in ("Deprecated", "Remapped"))
            for name in getattr(cls, "__annotations__", {})}


def deprecation_messages(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the text of its pydantic `deprecated=` (a string, or a `Deprecated` with a `message`), for
    the fields that give one; the JSON Schema keeps only `deprecated: true`."""
    found = {}
    for name, info in model.model_fields.items():
        deprecated = getattr(info, "deprecated", None)
        message = deprecated if isinstance(deprecated, str) else getattr(deprecated, "message", None)
        if isinstance(message, str) and message.strip():
            found[name] = message.strip()
    return found


def compared_strings(sources: list[Path], attributes: set[str]) -> dict[str, set[str]]:
    """String constants the source compares `<x>.<attribute>` with (`==`, `in [...]`), by attribute."""
    found: dict[str, set[str]] = {a: set() for a in attributes}
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr in attributes:
                for other in node.comparators:
                    items = other.elts if isinstance(other, (ast.List, ast.Tuple, ast.Set)) else [other]
                    found[node.left.attr] |= {i.value for i in items
                                              if isinstance(i, ast.Constant) and isinstance(i.value, str)}
    return found


def downstream_values(root: Path) -> dict[str, list[str]]:
    """Values of keys pydantic types as plain `str` but transformers' TrainingArguments turns into an enum:
    transformers' OptimizerNames / SchedulerType members plus the names Axolotl handles itself (what its
    source compares `cfg.optimizer` / `cfg.lr_scheduler` with)."""
    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    own = compared_strings(sorted(root.rglob("*.py")), {"optimizer", "lr_scheduler", "alternate_lr_scheduler_type"})
    return {
        "optimizer": sorted({m.value for m in OptimizerNames} | own["optimizer"]),
        "lr_scheduler": sorted({m.value for m in SchedulerType} | own["lr_scheduler"]
                               | own["alternate_lr_scheduler_type"]),
    }


def prefixed_probes(config: dict, baseline: tuple[dict, list[str]]) -> list[dict]:
    """Nested models that also take their keys with the parent key's stem as prefix (`fsdp_config:
    {fsdp_offload_params: ...}`): one probe per nested field, kept where validation maps the prefixed key to it,
    with the warnings the prefixed spelling adds to those of the plain one."""
    found = []
    for key, prop in config["properties"].items():
        refs = [b["$ref"] for b in prop.get("anyOf", [prop]) if "$ref" in b]
        target = config["$defs"].get(refs[0].rsplit("/", 1)[-1], {}) if refs else {}
        stem = key.removesuffix("_config")
        if stem == key or "properties" not in target:
            continue
        for field, sub in target["properties"].items():
            types = [b.get("type") for b in sub.get("anyOf", [sub])]
            value = next((_PROBE_VALUES[t] for t in types if t in _PROBE_VALUES), True)
            if "enum" in sub or any("enum" in b or "const" in b for b in sub.get("anyOf", [])):
                value = next(iter(sub.get("enum") or [b.get("const", (b.get("enum") or [None])[0])
                                                      for b in sub["anyOf"] if "enum" in b or "const" in b]))
            out, error, messages = _validate({key: {f"{stem}_{field}": value}})
            if out is not None and isinstance(out.get(key), dict) and out[key].get(field) == value:
                plain = _validate({key: {field: value}})[2]
                found.append({"parent": key, "key": f"{stem}_{field}", "field": field,
                              "warnings": [m for m in messages if m not in baseline[1] + plain]})
    return found


def dataset_models_by_rl(config: dict) -> dict[str, str]:
    """`rl` value -> dataset model that `validate_config` builds the `datasets` entries as, for the `rl` values
    where that is not the model used without `rl`. The probe entry carries one string field that only that model
    has, for each dataset model; the field that survives validation names the model."""
    defs = config["$defs"]
    models = {name: d["properties"] for name, d in defs.items() if name.endswith("Dataset") and "properties" in d}
    marker = {}
    for name, fields in models.items():
        others = set().union(*(set(f) for n, f in models.items() if n != name))
        own = [k for k, v in sorted(fields.items()) if k not in others
               and "string" in json.dumps(v.get("anyOf", [v])) and "enum" not in json.dumps(v)]
        if own:
            marker[own[0]] = name
    entry = {"path": "org/data", "type": "alpaca", **{field: "probe" for field in marker}}

    def model_for(extra: dict) -> str | None:
        out, _, _ = _validate({**extra, "datasets": [entry]})
        kept = [marker[k] for k in (out or {}).get("datasets", [{}])[0] if k in marker] if out else []
        return kept[0] if len(kept) == 1 else None

    default = model_for({})
    values = defs.get("RLType", {}).get("enum", [])
    found = {value: model_for({"rl": value}) for value in values}
    return {value: model for value, model in found.items() if model is not None and model != default}


def dump_axolotl() -> dict:
    """Everything the Axolotl generator needs from the installed release (see the module docstring)."""
    from axolotl.utils.schemas.config import AxolotlInputConfig

    root = Path(importlib.util.find_spec("axolotl").origin).parent
    plugins = [{"plugin": plugin, "args": args, "schema": model_schema(_args_model(args))}
               for plugin, args in plugin_classes(root / "integrations")]
    config = model_schema(AxolotlInputConfig)
    for key in deprecated_fields(AxolotlInputConfig) & set(config["properties"]):
        config["properties"][key]["x-owner"] = "Deprecated"
    for key, message in deprecation_messages(AxolotlInputConfig).items():
        if key in config["properties"]:
            config["properties"][key]["x-deprecated-message"] = message
    sources = sorted((root / "utils" / "schemas").rglob("*.py")) + sorted((root / "utils" / "config").rglob("*.py"))
    candidates = probe_candidates(config, sources)
    for key, enum in downstream_values(root).items():
        config["properties"][key]["x-downstream-enum"] = enum
    try:
        import axolotl.utils.config  # noqa: F401 - validate_config's module pulls in the model loaders
    except Exception as exc:  # noqa: BLE001 - their libraries (bitsandbytes, kernels, ...) do not import here
        probes, prefixed, by_rl, probe_error = [], [], {}, f"{type(exc).__name__}: {exc}"
    else:
        plain, error, messages = _validate({})
        assert plain is not None, error
        probes = [probe(key, values, (plain, messages)) for key, values in candidates.items()]
        prefixed, probe_error = prefixed_probes(config, (plain, messages)), None
        by_rl = dataset_models_by_rl(config)
    return {
        "version": importlib.metadata.version("axolotl"),
        "extra": AxolotlInputConfig.model_config.get("extra") or "ignore",
        "config": config,
        "plugins": plugins,
        "prefixed": prefixed,
        "datasets_by_rl": by_rl,
        "adapters": {"builtin": builtin_adapters(root / "utils" / "schemas" / "peft.py"),
                     "plugins": plugin_adapters(root / "integrations")},
        "probe_error": probe_error,
        "probes": [p for p in probes if p.get("error") or p.get("warnings") or p.get("changed")
                   or p["key"] in config["properties"]],
    }


DEEPSPEED_MODELS = {
    "zero_optimization": "deepspeed.runtime.zero.config.DeepSpeedZeroConfig",
    "fp16": "deepspeed.runtime.precision_config.DeepSpeedFP16Config",
    "bf16": "deepspeed.runtime.precision_config.DeepSpeedBF16Config",
}


def _json_extras_only(package: str) -> None:
    """Drop Python callables from the `json_schema_extra` of `package`'s models (DeepSpeed keeps a converter
    function there for deprecated fields) so that their schema serializes, then rebuild the models."""
    pending, seen = list(BaseModel.__subclasses__()), set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        pending += cls.__subclasses__()
        if not cls.__module__.startswith(package):
            continue
        for info in cls.model_fields.values():
            if isinstance(info.json_schema_extra, dict):
                info.json_schema_extra = {k: v for k, v in info.json_schema_extra.items() if not callable(v)}
        cls.model_rebuild(force=True)


def dump_deepspeed() -> dict:
    """The installed DeepSpeed's version and the schemas of DEEPSPEED_MODELS."""
    for path in DEEPSPEED_MODELS.values():
        importlib.import_module(path.rpartition(".")[0])
    _json_extras_only("deepspeed")
    models = {}
    for key, path in DEEPSPEED_MODELS.items():
        try:
            models[key] = {"class": path, "schema": model_schema(_import(path))}
        except (ImportError, AttributeError):
            continue
    return {"version": importlib.metadata.version("deepspeed"), "models": models}


def main(argv: list[str]) -> int:
    if argv[0] == "axolotl":
        data = dump_axolotl()
    else:
        data = dump_deepspeed()
    json.dump(data, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
