"""What a file is, decided by its content: an Axolotl training config, a DeepSpeed config, or neither.

A repository holds many YAML and JSON files that are not training configs (CI workflows, pre-commit configs,
package.json, notebooks, Axolotl's own cloud-launcher YAMLs, docker-compose files); axlint skips those without a
finding. The decision reads the top-level keys only:

- Axolotl: `base_model` (or `base_model_config`) is written, or at least two top-level keys are Axolotl keys and
  they are at least half of all keys (a half-written config is still linted);
- DeepSpeed: a key only DeepSpeed has (`zero_optimization`, `train_micro_batch_size_per_gpu`, ...) is written
  and no `base_model`, or at least half of the keys are DeepSpeed keys and none is Axolotl-only;
- anything else is neither. Keys are the top-level properties of axlint's bundled Axolotl and DeepSpeed schemas.

A text that does not parse, or whose top level is not a mapping, is judged by the keys it appears to write
(`key:`, `"key":`, `- key:` or `{"key":` at the start of a line),
so a broken training config still gets its syntax finding while a broken notebook or editor settings file is
skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Iterable

from axlint.lazypattern import LazyPattern

AXOLOTL_MARKERS = frozenset({"base_model", "base_model_config"})
_KEY_LINE = LazyPattern(r"""^[ \t]{0,4}(?:-[ \t]+|\{[ \t]*)?["']?([A-Za-z_][\w.-]*)["']?[ \t]*:""", re.MULTILINE)


class ConfigKind(str, Enum):
    AXOLOTL = "axolotl"
    DEEPSPEED = "deepspeed"
    OTHER = "other"


@dataclass(frozen=True)
class Verdict:
    """What a file is (Axolotl, DeepSpeed or other) and, for other files, why it is skipped."""

    kind: ConfigKind
    reason: str  # why a file is skipped; empty for configs


@lru_cache(maxsize=None)
def _known_keys(axolotl: str | None = None, deepspeed: str | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """Top-level keys of the bundled Axolotl and DeepSpeed schemas of these releases (default: the releases
    `axlint.schemas.validator.default_choice()` picks, the ones a plain `axlint check` uses)."""
    from axlint.schemas.validator import load_schema

    return (frozenset(load_schema("axolotl", axolotl)["properties"]),
            frozenset(load_schema("deepspeed", deepspeed)["properties"]))


def classify_keys(keys: Iterable[Any], schemas: Any = None) -> Verdict:
    """The kind of a mapping with these top-level keys (see the module docstring for the thresholds), judged with
    the keys of the releases `schemas` (an `axlint.schemas.validator.SchemaChoice`; None: the default releases)."""
    names = {k for k in keys if isinstance(k, str)}
    if not names:
        return Verdict(ConfigKind.OTHER, "no top-level keys")
    if names & AXOLOTL_MARKERS:  # before the keys are read: most Axolotl configs need no DeepSpeed schema
        return Verdict(ConfigKind.AXOLOTL, "")
    axolotl, deepspeed = _known_keys(getattr(schemas, "axolotl", None), getattr(schemas, "deepspeed", None))
    ax, ds = names & axolotl, names & deepspeed
    ax_only, ds_only = ax - deepspeed, ds - axolotl
    if ds_only and not ax_only:
        return Verdict(ConfigKind.DEEPSPEED, "")
    if len(ax) >= 2 and 2 * len(ax) >= len(names) and len(ax_only) >= len(ds_only):
        return Verdict(ConfigKind.AXOLOTL, "")
    if ds and not ax_only and 2 * len(ds) >= len(names):
        return Verdict(ConfigKind.DEEPSPEED, "")
    shown = ", ".join(f"`{k}`" for k in sorted(names)[:4]) + (", ..." if len(names) > 4 else "")
    return Verdict(ConfigKind.OTHER, f"top-level keys {shown} are not those of an Axolotl or DeepSpeed config")


def classify_data(data: Any, schemas: Any = None) -> Verdict:
    """The kind of a parsed document (`schemas`: the releases whose keys count, as for `classify_keys`)."""
    if data is None:
        return Verdict(ConfigKind.OTHER, "empty")
    if not isinstance(data, dict):
        return Verdict(ConfigKind.OTHER, f"its top level is a {_type_name(data)}, not a mapping of settings")
    return classify_keys(data, schemas)


def classify_text(text: str, schemas: Any = None) -> Verdict:
    """The kind of a text that does not parse, from the keys it appears to write."""
    return classify_keys(_KEY_LINE.findall(text), schemas)


def _type_name(value: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "value")
