"""What LoRA-adapted projections keep for backward under PEFT's modules and under Axolotl's fused LoRA kernels.

    python benchmarks/memory/lora_kernel_probe.py [--tokens 256] [--rank 8]

Run where Axolotl 0.18.0 imports (the oracle venv of tests/oracle; benchmarks/memory/triton_standin.py takes Triton's
place where it is missing). Axolotl turns ``lora_mlp_kernel``, ``lora_qkv_kernel`` and ``lora_o_kernel`` on by
itself for most LoRA and QLoRA runs (``utils/schemas/config.py``, ``check_auto_enable_lora_kernels``), which replace
the forward of the MLP and of the q/k/v and o projections with the autograd functions ``LoRA_MLP``, ``LoRA_QKV`` and
``LoRA_O`` (``kernels/lora.py``, through ``monkeypatch/lora_kernels.py``). The probe builds one Llama layer's MLP and
attention projections in bf16 with bf16 LoRA adapters on gate, up, down, q, k, v and o (PEFT, as Axolotl wraps
them; bf16 adapters as a 4-bit base or DeepSpeed has them, so PEFT makes no fp32 copies), runs each part once
through PEFT's modules and once through Axolotl's function, and sums the bytes of the distinct storages autograd
saves for backward (``torch.autograd.graph.saved_tensors_hooks``), parameters left out; dropout runs as on CUDA
(``axlint.simulate.fused_dropout``: a bool mask, where CPU's composite keeps a noise tensor). Axolotl's SwiGLU forward
and backward are Triton kernels; the probe puts PyTorch functions with the same outputs in their place (what is
saved is decided by ``LoRA_MLP.forward``, not by those kernels).

Prints one JSON line per (part, LoRA dropout): {"part": "mlp" | "qkv" | "o", "dropout", "peft", "kernel": bytes per
token, "hidden", "intermediate", "q_dim", "rank", "versions"}.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

HIDDEN, INTERMEDIATE, HEADS = 64, 256, 4
PARTS = ("mlp", "qkv", "o")
DROPOUTS = (0.0, 0.05)


def _swiglu_forward(gate: Any, up: Any) -> Any:
    import torch

    return torch.nn.functional.silu(gate) * up


def _swiglu_backward(grad: Any, gate: Any, up: Any) -> tuple[Any, Any, Any]:
    """Axolotl's ``swiglu_backward`` contract: (h, d_up, d_gate) from the output gradient and the saved gate, up."""
    import torch

    sig = torch.sigmoid(gate)
    act = gate * sig
    return act * up, grad * act, grad * up * sig * (1 + gate * (1 - sig))


def saved_bytes(fn: Any, x: Any, parameters: set[int]) -> int:
    """Bytes of the distinct storages autograd saves while `fn(x)` runs, those of `parameters` (data pointers) left
    out."""
    import torch

    storages: dict[int, int] = {}

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    from axlint.simulate import fused_dropout

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), fused_dropout():
        fn(x)
    return sum(storages.values())


def probe(tokens: int, rank: int, dropout: float) -> list[dict[str, Any]]:
    import torch
    from benchmarks.memory.triton_standin import install

    install()
    from axolotl.kernels import lora as kernels
    from axolotl.monkeypatch import lora_kernels
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP

    for module in (kernels, lora_kernels):
        module.swiglu_forward, module.swiglu_backward = _swiglu_forward, _swiglu_backward
    config = LlamaConfig(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_attention_heads=HEADS,
                         num_key_value_heads=HEADS, hidden_act="silu")

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlp = LlamaMLP(config)
            self.self_attn = LlamaAttention(config, layer_idx=0)

    torch.manual_seed(0)
    model = get_peft_model(Layer().to(torch.bfloat16), LoraConfig(
        r=rank, lora_alpha=2 * rank, lora_dropout=dropout,
        target_modules=["gate_proj", "up_proj", "down_proj", "q_proj", "k_proj", "v_proj", "o_proj"]),
        autocast_adapter_dtype=False)
    model.train()
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    layer = model.base_model.model
    mlp, attn = layer.mlp, layer.self_attn
    q_dim = attn.o_proj.in_features
    runs = {
        "mlp": (HIDDEN, mlp, lambda x: kernels.apply_lora_mlp_swiglu(mlp, x)),
        "qkv": (HIDDEN, lambda x: (attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)),
                lambda x: kernels.apply_lora_qkv(attn, x)),
        "o": (q_dim, attn.o_proj, lambda x: kernels.apply_lora_o(attn, x)),
    }
    out = []
    for part, (width, peft_fn, kernel_fn) in runs.items():
        x = torch.randn(1, tokens, width, dtype=torch.bfloat16, requires_grad=True)
        out.append({"part": part, "dropout": dropout,
                    "peft": saved_bytes(peft_fn, x, parameters) / tokens,
                    "kernel": saved_bytes(kernel_fn, x, parameters) / tokens,
                    "hidden": HIDDEN, "intermediate": INTERMEDIATE, "q_dim": q_dim, "rank": rank})
    return out


def main() -> None:
    from importlib.metadata import version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--rank", type=int, default=8)
    args = ap.parse_args()
    versions = {name: version(name) for name in ("axolotl", "peft", "transformers", "torch")}
    for dropout in DROPOUTS:
        for row in probe(args.tokens, args.rank, dropout):
            print(json.dumps({**row, "versions": versions}))


if __name__ == "__main__":
    main()
