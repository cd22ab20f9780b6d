"""Run inside the oracle venv: does Axolotl 0.18.0's patching for its fused LoRA kernels apply, per request.

Reads one JSON object per line on stdin and writes one per line on stdout, {"id", "error": what Axolotl raised,
or ""}:

* {"id": <model type>, "config": <the model's config.json>}: the rewrite of the model's attention for the QKV / O
  kernels, ``patch_self_attn_lora``, as ``PatchManager`` calls it before the model loads, with ``base_model`` a
  folder that holds the config.json ("remote code" for a model type transformers does not define, which the
  kernels never reach: Axolotl turns them off under ``trust_remote_code``);
* {"id": ..., "task_type": "CAUSAL_LM" | "SEQ_CLS" | "TOKEN_CLS"}: a two-layer Llama of that head wrapped by PEFT
  with LoRA on every Linear of its layers and that task type (Axolotl's ``load_adapter`` passes the one of the model's class),
  then ``apply_lora_kernel_patches``, as the post-load patches call it.

Axolotl's kernel modules import Triton, which the oracle venv leaves out; neither call runs a kernel, so
benchmarks/memory/triton_standin.py takes its place.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from judge import _first_line, serve  # the sibling judge: same environment


def _lora_kernels():
    """Axolotl's ``monkeypatch.lora_kernels``, with the Triton stand-in where Triton is missing."""
    from benchmarks.memory.triton_standin import install

    install()
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


def kernel_patch(task_type: str) -> dict:
    import torch
    from axolotl.utils.dict import DictDefault
    from peft import LoraConfig, get_peft_model
    from transformers import (LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification,
                              LlamaForTokenClassification)

    lora_kernels = _lora_kernels()
    heads = {"CAUSAL_LM": LlamaForCausalLM, "SEQ_CLS": LlamaForSequenceClassification,
             "TOKEN_CLS": LlamaForTokenClassification}
    torch.manual_seed(0)
    model = heads[task_type](LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=4, vocab_size=128, num_labels=1))
    model = get_peft_model(model, LoraConfig(r=4, task_type=task_type, target_modules=[
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
    cfg = DictDefault({"lora_mlp_kernel": True, "lora_qkv_kernel": True, "lora_o_kernel": True})
    try:
        lora_kernels.apply_lora_kernel_patches(model, cfg)
    except Exception as exc:  # the refusal is the answer
        return {"error": _first_line(f"{type(exc).__name__}: {exc}")}
    return {"error": ""}


def main() -> None:
    serve(lambda item: kernel_patch(item["task_type"]) if "task_type" in item
          else attention_rewrite(item["id"], item["config"]))


if __name__ == "__main__":
    main()
