"""Store a randomly initialised model the way Axolotl's bitsandbytes loads leave it (CUDA only; imports lazily).

- `quantize_linears`: a 4-bit (QLoRA) or 8-bit (`load_in_8bit`) load replaces every ``nn.Linear`` but lm_head with
  bitsandbytes' ``Linear4bit`` (NF4, double quantization) or ``Linear8bitLt`` (int8 weights, outlier threshold 6.0),
  as transformers' bitsandbytes quantizer does (``BitsAndBytesConfig`` defaults; lm_head is in
  ``get_keys_to_not_convert``), and marks the model (``is_loaded_in_4bit`` / ``is_loaded_in_8bit``) so PEFT
  dispatches its bitsandbytes LoRA layers, which under autocast run the adapters on the half-precision input where
  its generic layer would first cast the input to the adapters' fp32 (peft tuners/lora/bnb.py, tuners/lora/model.py).
- `quantize_experts`: Axolotl's ``quantize_moe_experts`` stores each routed expert weight (transformers 5's 3-D
  parameters whose name holds "expert") quantized behind a ``torch.nn.utils.parametrize`` parametrization that
  dequantizes the whole tensor when the module reads it, cached for the length of the module's forward (Axolotl
  0.18.0 ``monkeypatch/moe_quant.py``, ``patch_moe_quantization_on_load``): 4-bit through bitsandbytes'
  ``replace_parameter_4bit`` (NF4, double quantization), 8-bit as row-wise int8 (``int8_vectorwise_quant``) that
  dequantizes to fp32 (``int8_vectorwise_dequant``).

A real load quantizes each weight as it arrives, so its allocator never holds the full-precision model: the
originals' memory goes back to the driver here too.
"""
from __future__ import annotations

import functools
from typing import Any

LLM_INT8_THRESHOLD = 6.0
"""transformers ``BitsAndBytesConfig.llm_int8_threshold`` default: Linear8bitLt's outlier threshold."""


def quantize_linears(model: Any, quantization: str) -> None:
    """Replace the model's Linears (but lm_head) with bitsandbytes' 4-bit ("nf4") or 8-bit ("int8") layers."""
    import bitsandbytes as bnb
    import torch

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear or name == "lm_head":
                continue
            # on the meta device: the layer's own weight is replaced at once (initialising it on the CPU took 150 s
            # for a 27B model)
            if quantization == "nf4":
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                      compute_dtype=child.weight.dtype, quant_type="nf4", compress_statistics=True,
                                      device="meta")
                q.weight = bnb.nn.Params4bit(child.weight.data, requires_grad=False, quant_type="nf4",
                                             compress_statistics=True)
            else:
                q = bnb.nn.Linear8bitLt(child.in_features, child.out_features, bias=child.bias is not None,
                                        has_fp16_weights=False, threshold=LLM_INT8_THRESHOLD, device="meta")
                q.weight = bnb.nn.Int8Params(child.weight.data, requires_grad=False, has_fp16_weights=False)
            if child.bias is not None:
                q.bias = child.bias
            setattr(parent, name, q.cuda())  # .cuda() quantizes
    # as transformers' quantizer marks the model: PEFT dispatches its bitsandbytes layers on these flags
    model.is_loaded_in_4bit = quantization == "nf4"
    model.is_loaded_in_8bit = quantization == "int8"
    torch.cuda.empty_cache()


def quantize_experts(model: Any, quantization: str) -> int:
    """Quantize every routed expert weight in place behind a dequantizing parametrization; the count quantized.
    A weight PEFT wraps for `lora_target_parameters` is quantized on the module that owns it, under the wrapper,
    which is where Axolotl's load leaves it."""
    import torch

    count = 0
    for module, name in expert_weights(model):
        if quantization == "nf4":
            from bitsandbytes.nn.parametrize import replace_parameter_4bit

            replace_parameter_4bit(module, name, compress_statistics=True, quant_type="nf4")
        else:
            _replace_parameter_int8(module, name)
        count += 1
        torch.cuda.empty_cache()
    return count


def expert_weights(model: Any) -> list[tuple[Any, str]]:
    """(module, parameter name) of every routed expert weight Axolotl's ``quantize_moe_experts`` quantizes: the
    frozen floating-point parameters of three or more dimensions whose path names an expert."""
    return [(module, name) for module_name, module in model.named_modules()
            for name, param in module.named_parameters(recurse=False)
            if param.dim() >= 3 and "expert" in f"{module_name}.{name}".lower() and not param.requires_grad
            and param.is_floating_point()]


def _replace_parameter_int8(module: Any, name: str) -> None:
    """Row-wise int8 storage of `module.<name>` (quantized from fp16) with a parametrization that dequantizes it to
    fp32 on access, cached during the module's forward."""
    import bitsandbytes as bnb
    import torch
    import torch.nn.utils.parametrize as P

    original = getattr(module, name)
    shape = original.shape
    data, row_stats, _ = bnb.functional.int8_vectorwise_quant(original.data.to(torch.float16).reshape(-1, shape[-1]))
    setattr(module, name, torch.nn.Parameter(data.reshape(shape), requires_grad=False))
    del original
    P.register_parametrization(module, name, _int8_dequant_class()(row_stats), unsafe=True)
    cache_parametrizations_per_forward(module)


def cache_parametrizations_per_forward(module: Any) -> None:
    """Cache `module`'s parametrized weights from the start to the end of each of its forwards, as the hooks
    bitsandbytes' ``replace_parameter_4bit`` and Axolotl's ``replace_parameter_8bit`` register do (once per module)."""
    if not getattr(module, "_axlint_parametrization_cache", False):
        module.register_forward_pre_hook(_cache_on)
        module.register_forward_hook(_cache_off, always_call=True)
        module._axlint_parametrization_cache = True


@functools.cache
def _int8_dequant_class() -> Any:
    """The parametrization class (defined on first use: torch is imported lazily)."""
    import torch

    class Int8RowwiseDequant(torch.nn.Module):
        """Dequantize row-wise int8 data (a 3-D tensor is read as rows of its last dimension) to fp32."""

        def __init__(self, row_stats: Any) -> None:
            super().__init__()
            self.register_buffer("row_stats", row_stats)

        @torch.no_grad()
        def forward(self, quantized: Any) -> Any:
            import bitsandbytes as bnb

            shape = quantized.shape
            return bnb.functional.int8_vectorwise_dequant(quantized.reshape(-1, shape[-1]), self.row_stats).reshape(shape)

    return Int8RowwiseDequant


def _cache_on(module: Any, inputs: Any) -> None:
    import torch.nn.utils.parametrize as P

    P._cache_enabled += 1


def _cache_off(module: Any, inputs: Any, output: Any) -> None:
    import torch.nn.utils.parametrize as P

    P._cache_enabled = max(0, P._cache_enabled - 1)
    if not P._cache_enabled:
        P._cache = {}
