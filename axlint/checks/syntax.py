"""Checks on the files themselves: duplicate keys, an unreadable DeepSpeed reference."""
from __future__ import annotations

from typing import Iterator

from axlint.document import duplicate_keys
from axlint.rule import Hit, Rule, register_check
from axlint.run import TrainingRun


@register_check("duplicate_keys", args=("key", "line", "effect"))
def check_duplicate_keys(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """PyYAML keeps the last of two equal keys silently; DeepSpeed's JSON loader raises on them."""
    for doc in run.documents:
        for path, first, repeated in duplicate_keys(doc.root):
            kept = "DeepSpeed refuses the file" if doc.format == "json" else "the loader keeps only this last one"
            yield Hit(doc, repeated.key.span, {"key": ".".join(map(str, path)), "line": first.key.span.line, "effect": kept})


@register_check("deepspeed_reference", args=("problem",))
def check_deepspeed_reference(run: TrainingRun, rule: Rule) -> Iterator[Hit]:
    """The `deepspeed:` file is missing or unreadable: the launch fails after the model was loaded."""
    if run.ds_error is not None and run.axolotl is not None:
        doc, span = run.ax_span(("deepspeed",), "value")
        yield Hit(doc, span, {"problem": run.ds_error.message})
