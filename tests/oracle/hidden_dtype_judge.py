"""Run inside the oracle venv: what Axolotl 0.18.0's fused LoRA QKV and MLP kernels and bitsandbytes' 4-bit Linear do with
fp32 hidden states in a bf16 run, on the CPU. Prints one JSON object:

* ``linear4bit``: {input dtype: output dtype} of a ``bnb.nn.Linear4bit`` (NF4, bf16 compute dtype) for bf16 and fp32
  inputs: it computes in bf16 and returns its output in its input's dtype (bitsandbytes 0.49.1 ``nn/modules.py``
  ``Linear4bit.forward``), so an fp32 input gives an fp32 output, which the residual add keeps;
* ``qkv``: {input dtype: "" or the error raised} of ``apply_lora_qkv`` (``kernels/lora.py``) on a Llama attention
  whose q/k/v PEFT 0.19.1 wrapped with LoRA, under bf16 autocast: PEFT keeps the adapters of a bf16 base in fp32
  (``autocast_adapter_dtype``), the kernel casts them to the input's dtype and adds them in place into the base
  product, which autocast made bf16.

* ``mlp``: the same of ``apply_lora_mlp_swiglu`` on a Llama MLP whose gate, up and down projections PEFT wrapped.

* ``varlen``: for each case of ``VARLEN_CASES`` (an Axolotl config and a model config), whether Axolotl's
  ``PatchManager._apply_sdpa_varlen_patch`` patches sdpa with PyTorch's variable-length attention (``varlen_attn``,
  which takes fp16 and bf16 only).

What CUDA's autocast adds, and the CPU's does not (its fp32 list has neither ``pow`` nor ``softplus``/``expm1``), is
where fp32 hidden states come from: ReLU² and xIELU outputs in fp32 (tests/test_oracle_lora_qkv_dtype.py).
Axolotl's kernel module imports Triton, which the oracle venv leaves out; the QKV kernel does not run it, so
benchmarks/memory/triton_standin.py takes its place.
"""
from __future__ import annotations

import json
from typing import Any, Callable


def linear4bit() -> dict[str, str]:
    import bitsandbytes as bnb
    import torch

    layer = bnb.nn.Linear4bit(64, 32, bias=False, compute_dtype=torch.bfloat16, quant_type="nf4")
    layer.weight = bnb.nn.Params4bit(torch.randn(32, 64, dtype=torch.bfloat16), requires_grad=False,
                                     quant_type="nf4")
    layer = layer.to("cpu")
    return {str(dtype).removeprefix("torch."): str(layer(torch.randn(4, 64, dtype=dtype)).dtype).removeprefix("torch.")
            for dtype in (torch.bfloat16, torch.float32)}


def _by_input_dtype(call: Callable[[Any], Any]) -> dict[str, str]:
    """{input dtype: "" or the first line of the RuntimeError raised} of ``call`` on a bf16 and an fp32 input of
    shape (1, 8, 64), under bf16 autocast on the CPU."""
    import torch

    out = {}
    for dtype in (torch.bfloat16, torch.float32):
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                call(torch.randn(1, 8, 64, dtype=dtype))
            out[str(dtype).removeprefix("torch.")] = ""
        except RuntimeError as exc:
            out[str(dtype).removeprefix("torch.")] = f"RuntimeError: {exc}".splitlines()[0]
    return out


def qkv() -> dict[str, str]:
    import torch
    from benchmarks.memory.triton_standin import install

    install()
    from axolotl.kernels.lora import apply_lora_qkv
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaAttention

    config = LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=4)

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.self_attn = LlamaAttention(config, layer_idx=0)

    model = get_peft_model(Layer().to(torch.bfloat16), LoraConfig(r=8, target_modules=["q_proj", "k_proj", "v_proj"]))
    attn = model.base_model.model.self_attn
    return _by_input_dtype(lambda x: apply_lora_qkv(attn, x))


def mlp() -> dict[str, str]:
    """{input dtype: "" or the error raised} of ``apply_lora_mlp_swiglu`` on a Llama MLP whose gate, up and down
    projections PEFT wrapped with LoRA, under bf16 autocast: its gate and up projections go through ``matmul_lora``,
    as the QKV kernel's do. Its SwiGLU is a Triton kernel, which a PyTorch function of the same result stands in
    for (only the bf16 input reaches it)."""
    import torch
    from benchmarks.memory.triton_standin import install

    install()
    from axolotl.kernels import lora
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    lora.swiglu_forward = lambda gate, up: torch.nn.functional.silu(gate) * up
    config = LlamaConfig(hidden_size=64, intermediate_size=128)

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlp = LlamaMLP(config)

    model = get_peft_model(Layer().to(torch.bfloat16),
                           LoraConfig(r=8, target_modules=["gate_proj", "up_proj", "down_proj"]))
    block = model.base_model.model.mlp
    return _by_input_dtype(lambda x: lora.apply_lora_mlp_swiglu(block, x))


VARLEN_CASES = {
    "sdpa packed": ({"attn_implementation": "sdpa", "sample_packing": True}, {"head_dim": 128}),
    "sdpa packed, sdpa_varlen false": ({"attn_implementation": "sdpa", "sample_packing": True, "sdpa_varlen": False},
                                       {"head_dim": 128}),
    "sdpa unpacked": ({"attn_implementation": "sdpa", "sample_packing": False}, {"head_dim": 128}),
    "sdpa unpacked, sdpa_varlen true": ({"attn_implementation": "sdpa", "sdpa_varlen": True}, {"head_dim": 128}),
    "flash packed, sdpa_varlen true": ({"attn_implementation": "flash_attention_2", "sample_packing": True,
                                        "sdpa_varlen": True}, {"head_dim": 128}),
    "flash packed": ({"attn_implementation": "flash_attention_2", "sample_packing": True}, {"head_dim": 128}),
    "nothing chosen, packed": ({"sample_packing": True}, {"head_dim": 128}),
    "sdpa packed, 512-wide heads": ({"attn_implementation": "sdpa", "sample_packing": True}, {"head_dim": 512}),
    "sdpa packed, head from hidden size": ({"attn_implementation": "sdpa", "sample_packing": True},
                                           {"hidden_size": 2560, "num_attention_heads": 20}),
    "sdpa packed, sliding window": ({"attn_implementation": "sdpa", "sample_packing": True},
                                    {"head_dim": 128, "sliding_window": 4096}),
    "sdpa packed, no sliding layer": ({"attn_implementation": "sdpa", "sample_packing": True},
                                      {"head_dim": 128, "sliding_window": 4096, "layer_types": ["full_attention"]}),
}
"""(Axolotl config keys, model config.json keys) per case."""


def varlen() -> dict[str, bool]:
    from types import SimpleNamespace

    from axolotl.loaders.patch_manager import PatchManager
    from axolotl.monkeypatch.attention import sdpa_varlen
    from axolotl.utils.dict import DictDefault

    out = {}
    original = sdpa_varlen.patch_sdpa_varlen
    try:
        for name, (cfg, model_config) in VARLEN_CASES.items():
            patched = []
            sdpa_varlen.patch_sdpa_varlen = lambda: patched.append(True)
            PatchManager._apply_sdpa_varlen_patch(SimpleNamespace(cfg=DictDefault(cfg), model_config=model_config))
            out[name] = bool(patched)
    finally:
        sdpa_varlen.patch_sdpa_varlen = original
    return out


if __name__ == "__main__":
    print(json.dumps({"linear4bit": linear4bit(), "qkv": qkv(), "mlp": mlp(), "varlen": varlen()}))
