"""Run inside the oracle venv: what ``lora_target_linear: true`` hands PEFT, and whether PEFT can wrap it.

Reads one JSON object per line on stdin, {"id": <model type>, "config": <the model's config.json>}, and writes one
per line on stdout: {"id", "names": the module names Axolotl 0.18.0's ``find_all_linear_names`` collects from the
model built on the meta device as Axolotl loads it (kernel_patch_judge ``build_as_axolotl_loads``), "error": what
PEFT 0.19.1's ``get_peft_model`` raised with those names as ``target_modules``, or ""}. Before that, Axolotl's
``load_lora`` patch for Gemma 4's clippable Linears is applied, as ``load_lora`` applies it. "remote code" for a
model type transformers does not define, "build" (with a reason) where transformers cannot build the model from its
config.json alone. {"id", "model_type", "small": <config fields>}: the same with a small model of that type on the
CPU, trained for one step (``first_step``): what a LoRA layer meets only when it runs. {"id", "model_type", "small",
"lora": <lora_target_modules / lora_target_linear>}: what PEFT raised for those settings as Axolotl hands them over,
and which modules got an adapter (``written_targets``).

Axolotl's ``loaders/adapter.py`` imports its telemetry module, which imports ``posthog``; the oracle venv leaves that
package out, and the judge gives it an empty stand-in (no telemetry is sent either way).
"""
from __future__ import annotations

import sys
from unittest import mock

from judge import _first_line, serve  # the sibling judge: same environment
from kernel_patch_judge import build_as_axolotl_loads

sys.modules.setdefault("posthog", mock.MagicMock())


def linear_targets(model_type: str, config: dict) -> dict:
    from axolotl.loaders import adapter
    from peft import LoraConfig, get_peft_model
    from transformers import CONFIG_MAPPING

    if model_type not in CONFIG_MAPPING:
        return {"error": "remote code", "names": []}
    try:
        model = build_as_axolotl_loads(model_type, config)
    except Exception as exc:  # transformers cannot build it from its config alone
        return {"error": "build", "reason": _first_line(f"{type(exc).__name__}: {exc}"), "names": []}
    adapter._patch_peft_clippable_linear()
    names = sorted(adapter.find_all_linear_names(model))
    try:
        get_peft_model(model, LoraConfig(r=4, target_modules=names, task_type="CAUSAL_LM"))
    except Exception as exc:  # the refusal is the answer
        return {"error": _first_line(f"{type(exc).__name__}: {exc}"), "names": names}
    return {"error": "", "names": names}


def first_step(model_type: str, config: dict) -> dict:
    """A small model of ``config`` (random weights, on the CPU) wrapped by PEFT with the names Axolotl collects, then
    one forward and backward pass: what it raised, or ""."""
    import torch
    from axolotl.loaders import adapter
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **config))
    names = sorted(adapter.find_all_linear_names(model))
    tokens = torch.tensor([[1, 5, 7, 9]])
    try:
        wrapped = get_peft_model(model, LoraConfig(r=4, target_modules=names, task_type="CAUSAL_LM"))
        wrapped(input_ids=tokens, labels=tokens).loss.backward()
    except Exception as exc:  # the failure is the answer
        return {"error": _first_line(f"{type(exc).__name__}: {exc}"), "names": names}
    return {"error": "", "names": names}


def written_targets(model_type: str, config: dict, lora: dict) -> dict:
    """A small model of ``config`` given to PEFT with the LoRA settings ``lora`` (``lora_target_modules``,
    ``lora_target_linear``) as Axolotl 0.18.0's ``_build_peft_lora_config`` turns them into a ``LoraConfig``
    (a string beside ``lora_target_linear`` becomes one entry of the list): what ``get_peft_model`` raised, or "",
    the last names of the modules that got an adapter, the number of parameters that train (the adapters and
    the copies of ``lora_modules_to_save``), and each adapted module's path with its rank and alpha."""
    from axolotl.loaders import adapter
    from axolotl.utils.dict import DictDefault
    from peft import get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **config))
    try:
        cfg = DictDefault({"lora_r": 4, "lora_alpha": 8, "lora_dropout": 0.0, **lora})  # validation's defaults
        wrapped = get_peft_model(model, adapter._build_peft_lora_config(model, cfg))
    except Exception as exc:  # the refusal is the answer
        return {"error": _first_line(f"{type(exc).__module__}.{type(exc).__name__}: {exc}"), "adapted": []}
    adapted = sorted({name.rsplit(".", 1)[-1] for name, module in wrapped.named_modules() if hasattr(module, "lora_A")})
    trainable = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    ranks = {name.removeprefix("base_model.model."): [module.r["default"], module.lora_alpha["default"]]
             for name, module in wrapped.named_modules() if hasattr(module, "lora_A")}
    return {"error": "", "adapted": adapted, "trainable": trainable, "ranks": ranks}


def main() -> None:
    def answer(item: dict) -> dict:
        if "lora" in item:
            return written_targets(item["model_type"], item["small"], item["lora"])
        if "small" in item:
            return first_step(item["model_type"], item["small"])
        return linear_targets(item["id"], item["config"])

    serve(answer)


if __name__ == "__main__":
    main()
