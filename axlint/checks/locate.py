"""Where a check's hit lands in the Axolotl YAML: helpers every check module shares."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from axlint.rule import Hit

if TYPE_CHECKING:
    from axlint.document import KeyPath
    from axlint.fixes import Fix
    from axlint.run import TrainingRun


def ax_hit(run: "TrainingRun", path: "KeyPath", part: str = "key", fix: "Fix | None" = None, **args: Any) -> Hit:
    """A hit at `path` of the Axolotl YAML (its key, or its value with `part="value"`)."""
    doc, span = run.ax_span(path, part)
    return Hit(doc, span, args, fix)


def first_written(run: "TrainingRun", *paths: "KeyPath", default: "KeyPath | None" = None) -> "KeyPath":
    """The first of `paths` written in the YAML, else `default`, else the first of them."""
    assert run.axolotl is not None
    return next((p for p in paths if run.axolotl.node(p) is not None), default or paths[0])


def written_config(run: "TrainingRun") -> dict[str, Any] | None:
    """The Axolotl config as written (the mapping the start-up validators' `data` is), or None when the run has no
    Axolotl YAML or its top level is not a mapping."""
    return run.raw if run.axolotl is not None and isinstance(run.raw, dict) else None


def lists_plugin(raw: dict[str, Any], plugin: str) -> bool:
    """`plugin` is in the written `plugins:` list: its arguments, and their validators, join the config only then."""
    plugins = raw.get("plugins")
    return isinstance(plugins, list) and plugin in plugins


def key_label(path: "KeyPath") -> str:
    """A key path as a message names it: `fsdp_config.offload_params`, `lora_target_modules[0]`."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


def written_block(raw: dict[str, Any], key: str) -> dict[str, Any]:
    """The mapping written under `key` (`fsdp_config`, `trl`, ...), empty when it is missing or not a mapping."""
    block = raw.get(key)
    return block if isinstance(block, dict) else {}
