"""Run inside the oracle venv: what a bitsandbytes 4/8-bit load and PEFT's k-bit preparation leave in memory, on
the CPU (bitsandbytes 0.49.1 has CPU kernels for both).

Reads one JSON object per line on stdin, {"id", "model_type", "config", "bits": 4 | 8}, and writes one per line on
stdout. A small model of that config.json (random bf16 weights) is saved and loaded back with
``from_pretrained(quantization_config=BitsAndBytesConfig(...), dtype=bfloat16)``, the quantization config Axolotl
0.18.0's loader builds for ``load_in_4bit`` (NF4, double quantization, bf16 compute) or ``load_in_8bit``; then
PEFT 0.19.1's ``prepare_model_for_kbit_training``, which Axolotl runs for a LoRA on such a load on one GPU or under
DDP (``loaders/model.py`` ``_prepare_model_for_quantization``). Answers {"linear_types": {class name: count} of
the Linear-like modules in the decoder layers, "loaded": {dtype: elements} and "prepared": {dtype: elements} of
those layers' weights after the load and after the preparation}.
"""
from __future__ import annotations

import tempfile

from judge import serve  # the sibling judge: same environment

LINEAR_TYPES = ("Linear", "Linear4bit", "Linear8bitLt")
"""The class names counted besides subclasses of ``nn.Linear``."""


def _layer_linears(model) -> dict[str, object]:
    """Module path -> module, for the Linear-like modules inside the decoder's layer list."""
    import torch

    layers = {name for name, module in model.named_modules() if isinstance(module, torch.nn.ModuleList)}
    return {name: module for name, module in model.named_modules()
            if any(name.startswith(f"{root}.") for root in layers)
            and (isinstance(module, torch.nn.Linear) or type(module).__name__ in LINEAR_TYPES)}


def _dtypes(linears: dict[str, object]) -> dict[str, int]:
    out: dict[str, int] = {}
    for module in linears.values():
        weight = module.weight
        key = str(weight.dtype).removeprefix("torch.")
        out[key] = out.get(key, 0) + weight.numel()
    return out


def load(item: dict) -> dict:
    import torch
    from peft import prepare_model_for_kbit_training
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM, BitsAndBytesConfig

    config = CONFIG_MAPPING[item["model_type"]].from_dict(dict(item["config"]))
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        AutoModelForCausalLM.from_config(config).to(torch.bfloat16).save_pretrained(folder)
        quantization = (BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                           bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
                        if item["bits"] == 4 else BitsAndBytesConfig(load_in_8bit=True))
        model = AutoModelForCausalLM.from_pretrained(folder, quantization_config=quantization, dtype=torch.bfloat16,
                                                     device_map="cpu")
    linears = _layer_linears(model)
    types: dict[str, int] = {}
    for module in linears.values():
        types[type(module).__name__] = types.get(type(module).__name__, 0) + 1
    loaded = _dtypes(linears)
    model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)
    return {"linear_types": types, "loaded": loaded, "prepared": _dtypes(_layer_linears(model))}


def main() -> None:
    serve(load)


if __name__ == "__main__":
    main()
