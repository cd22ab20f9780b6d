"""Which adapters on routed experts stored quantized get a gradient, on the stack Axolotl pins.

    python benchmarks/memory/expert_adapter_probe.py MODEL_TYPE CONFIG_JSON TARGETS_JSON [TARGETS_JSON ...] [--plain]

Run in the oracle venv of tests/oracle (Axolotl 0.18.0, transformers 5.14.1, PEFT 0.19.1, bitsandbytes 0.49.1; CPU).
For each target list it builds a small randomly initialised model of MODEL_TYPE from CONFIG_JSON, stores every
routed expert weight in 4-bit as Axolotl's ``quantize_moe_experts`` does on a 4-bit load (bitsandbytes'
``replace_parameter_4bit``, NF4 with double quantization, the module's parameter order recorded as Axolotl's loader
records it), wraps the targets (a list: ``lora_target_parameters`` beside ``q_proj``; ``{"modules": [...]}``: module
targets, which PEFT converts to the experts' weights where they are the old per-expert names) with PEFT through
Axolotl's own ``patch_peft_target_parameters_matching``, gives
every adapter a non-zero B (a trained adapter), runs one forward and backward, and prints one JSON line: per target,
whether its adapter got a non-zero gradient and its adapter's parameter count, and the versions it ran on.
With ``--plain`` the experts stay unquantized (the control).
"""
from __future__ import annotations

import json
import sys


def probe(model_type: str, config: dict, targets: list[str] | dict, quantize: bool) -> dict:
    import torch
    from axolotl.monkeypatch import moe_quant
    from bitsandbytes.nn.parametrize import replace_parameter_4bit
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **config), dtype=torch.bfloat16)
    moe_quant._moe_load_state["expert_param_order"] = {}
    if quantize:
        for name, module in list(model.named_modules()):
            for param_name, param in list(module.named_parameters(recurse=False)):
                if param.dim() >= 3 and "expert" in f"{name}.{param_name}".lower():
                    moe_quant._moe_load_state["expert_param_order"].setdefault(name, list(module._parameters))
                    replace_parameter_4bit(module, param_name, compress_statistics=True, quant_type="nf4")
    moe_quant.patch_peft_target_parameters_matching()
    # a list: lora_target_parameters beside q_proj; {"modules": [...]}: module targets alone, which PEFT converts
    # to the experts' 3-D weights where their names are the old per-expert ones
    modules, parameters = (targets["modules"], None) if isinstance(targets, dict) else (["q_proj"], targets)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=modules,
                                             target_parameters=parameters))
    for name, param in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.02)
    ids = torch.randint(0, config["vocab_size"], (1, 16))
    model(input_ids=ids, labels=ids).loss.backward()
    adapters: dict[str, dict] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad or "experts" not in name:
            continue
        wrapper = model.get_submodule(name.rsplit(".lora_", 1)[0])
        row = adapters.setdefault(wrapper.parameter_name, {"trained": True, "params": 0})
        row["trained"] &= param.grad is not None and bool(param.grad.abs().sum() > 0)
        row["params"] += param.numel()
    return adapters


def main(argv: list[str]) -> int:
    import bitsandbytes
    import peft
    import transformers

    quantize = "--plain" not in argv
    args = [a for a in argv if a != "--plain"]
    model_type, config = args[0], json.loads(args[1])
    versions = {"peft": peft.__version__, "transformers": transformers.__version__,
                "bitsandbytes": bitsandbytes.__version__}
    for targets in map(json.loads, args[2:]):
        print(json.dumps({"targets": targets, "quantized": quantize, "versions": versions,
                          "adapters": probe(model_type, config, targets, quantize)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
