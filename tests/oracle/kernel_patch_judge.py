"""Run inside the oracle venv: does Axolotl 0.18.0's patching for its fused LoRA kernels apply, per request.

Reads one JSON object per line on stdin and writes one per line on stdout, {"id", "error": what Axolotl raised,
or ""}:

* {"id": <model type>, "config": <the model's config.json>}: the rewrite of the model's attention for the QKV / O
  kernels, ``patch_self_attn_lora``, as ``PatchManager`` calls it before the model loads, with ``base_model`` a
  folder that holds the config.json ("remote code" for a model type transformers does not define, which the
  kernels never reach: Axolotl turns them off under ``trust_remote_code``);
* {"id": ..., "layers_of": <a config.json>}: the model of that config built on the meta device as Axolotl loads
  it (``AutoModelForCausalLM``, or the class of Axolotl's ``MULTIMODAL_AUTO_MODEL_MAPPING`` for a multimodal
  type), wrapped by PEFT
  with LoRA on one Linear of its decoder, then ``apply_lora_kernel_patches`` with only ``lora_mlp_kernel`` on,
  which finds the model's layers before it looks at any adapter ("build" and the reason where transformers
  cannot build the model from that config alone);
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


_NOT_DECODER = ("lm_head", "embed", "vision", "visual", "audio", "multi_modal", "projector")


def _decoder_linears(model) -> list[str]:
    """Paths of the Linear (or GPT-2's Conv1D) layers of a model outside its towers, head and embeddings."""
    import torch
    from transformers.pytorch_utils import Conv1D

    return [name for name, module in model.named_modules() if isinstance(module, (torch.nn.Linear, Conv1D))
            and not any(part in name for part in _NOT_DECODER)]


def build_as_axolotl_loads(model_type: str, config: dict, device: str = "meta"):
    """The model of a config.json built on ``device`` (random weights on a real one) as Axolotl loads it:
    ``AutoModelForCausalLM``, or the class of Axolotl's ``MULTIMODAL_AUTO_MODEL_MAPPING`` for a multimodal type.
    Raises what transformers raises when it cannot build the model from the config alone."""
    import torch
    from axolotl.loaders.constants import MULTIMODAL_AUTO_MODEL_MAPPING
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM, AutoModelForImageTextToText

    config = CONFIG_MAPPING[model_type].from_dict(dict(config))
    with torch.device(device):
        multimodal = MULTIMODAL_AUTO_MODEL_MAPPING.get(model_type)
        if multimodal is None:
            return AutoModelForCausalLM.from_config(config)
        if isinstance(multimodal, str):  # transformers' image-text-to-text class name
            return AutoModelForImageTextToText.from_config(config)
        return multimodal(config)  # the class Axolotl names itself (Voxtral)


def layers_found(model_type: str, config: dict) -> dict:
    from axolotl.utils.dict import DictDefault
    from peft import LoraConfig, get_peft_model
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        return {"error": "remote code"}
    lora_kernels = _lora_kernels()
    try:
        model = build_as_axolotl_loads(model_type, config)
    except Exception as exc:  # transformers cannot build it from its config alone
        return {"error": "build", "reason": _first_line(f"{type(exc).__name__}: {exc}")}
    peft_model = None
    for target in _decoder_linears(model):  # PEFT refuses some (Mamba's in/out projections): take the next
        try:
            peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=[target], task_type="CAUSAL_LM"))
            break
        except ValueError:
            continue
    if peft_model is None:
        return {"error": "build", "reason": "PEFT wraps none of its Linear layers"}
    try:
        lora_kernels.apply_lora_kernel_patches(peft_model, DictDefault({"lora_mlp_kernel": True}))
    except Exception as exc:  # the refusal is the answer
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
    def answer(item: dict) -> dict:
        if "task_type" in item:
            return kernel_patch(item["task_type"])
        if "layers_of" in item:
            return layers_found(item["model_type"], item["layers_of"])
        return attention_rewrite(item["id"], item["config"])

    serve(answer)


if __name__ == "__main__":
    main()
