"""Run inside the oracle venv: does Axolotl's rewrite of a model's attention for the fused LoRA QKV / O kernels
apply, per model type.

Reads one JSON object per line on stdin, {"id": <model type>, "config": <the model's config.json>}, and writes one per
line on stdout: {"id", "error": what Axolotl 0.18.0's ``patch_self_attn_lora`` raised ("" when it patched the
class; "remote code" for a model type transformers does not define, which the kernels never reach: Axolotl
turns them off under ``trust_remote_code``)}. The call is the one ``PatchManager`` makes before the model loads,
with ``base_model`` a folder that holds the config.json.

Axolotl's kernel modules import Triton, which the oracle venv leaves out (a GPU compiler of about 1 GB); the rewrite
is plain Python over transformers' source, so a stand-in module takes Triton's place once transformers and PEFT
have imported (they look for the real package).
"""
from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

from judge import _first_line, serve  # the sibling judge: same environment


class _Stub(types.ModuleType):
    """Any attribute is a decorator or factory that hands its function back (``triton.jit``,
    ``triton.language.constexpr``, ``triton.autotune(...)``)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _passthrough


def _passthrough(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def _lora_kernels():
    """Axolotl's ``monkeypatch.lora_kernels`` with the Triton stand-in."""
    import peft  # noqa: F401  (imported before the stand-in: they probe for the real package)
    from transformers import AutoConfig, AutoModel, GenerationMixin  # noqa: F401

    triton, language = _Stub("triton"), _Stub("triton.language")
    triton.language = language
    sys.modules.setdefault("triton", triton)
    sys.modules.setdefault("triton.language", language)
    from axolotl.monkeypatch import lora_kernels

    return lora_kernels


def attention_rewrite(model_type: str, config: dict) -> dict:
    from transformers import CONFIG_MAPPING
    from axolotl.utils.dict import DictDefault

    if model_type not in CONFIG_MAPPING:
        return {"error": "remote code"}
    lora_kernels = _lora_kernels()
    folder = Path(tempfile.mkdtemp())
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    cfg = DictDefault({"base_model": str(folder), "model_config_type": model_type})
    try:
        lora_kernels.patch_self_attn_lora(cfg)
    except Exception as exc:  # the refusal is the answer
        try:  # it marks the class before it asserts: unmark it, so that a later type sharing it is judged again
            cls = lora_kernels.get_attention_cls_from_config(cfg)
            if "_original_forward" in vars(cls):
                del cls._original_forward
        except Exception:  # no class to unmark
            pass
        return {"error": _first_line(f"{type(exc).__name__}: {exc}")}
    return {"error": ""}


def main() -> None:
    serve(lambda item: attention_rewrite(item["id"], item["config"]))


if __name__ == "__main__":
    main()
