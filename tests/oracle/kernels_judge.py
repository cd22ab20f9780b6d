"""Run inside the oracle venv: which fused LoRA kernel flags Axolotl's start-up validation leaves on, per config.

Reads one JSON object per line on stdin, {"id": <config path, relative to the working directory>, "capabilities":
{...}}, and writes one per line on stdout: {"id", "kernels": the names of the `lora_*_kernel` flags that are true in
the validated config ("mlp", "qkv", "o", "embedding"), "error": Axolotl's refusal, or ""}.
"""
from __future__ import annotations

from axlint.facts import LORA_KERNEL_FLAGS
from judge import _first_line, serve, validated  # the sibling judge: same environment, same validate_config


def kernels(path: str, capabilities: dict) -> dict:
    try:
        cfg = validated(path, capabilities)
    except Exception as exc:  # a refusal: nothing to compare
        return {"kernels": [], "error": _first_line(f"{type(exc).__name__}: {exc}")}
    return {"kernels": [flag.split("_")[1] for flag in LORA_KERNEL_FLAGS if getattr(cfg, flag, None)], "error": ""}


def main() -> None:
    serve(lambda item: kernels(item["id"], item["capabilities"]))


if __name__ == "__main__":
    main()
