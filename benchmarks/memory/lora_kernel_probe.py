"""What a LoRA-adapted gated MLP keeps for backward under PEFT's modules and under Axolotl's LoRA MLP kernel.

    python benchmarks/memory/lora_kernel_probe.py [--hidden 64] [--intermediate 256] [--tokens 128] [--rank 8]

Run where Axolotl 0.18.0 and its training dependencies import (the oracle venv of tests/oracle with the packages of
benchmarks/memory/axolotl_wheels.sh; CPU). Axolotl turns ``lora_mlp_kernel`` on by itself for most LoRA and QLoRA
runs (``utils/schemas/config.py``, ``check_auto_enable_lora_kernels``), which replaces the MLP's forward with its
``LoRA_MLP`` autograd function (``kernels/lora.py``, through ``monkeypatch/lora_kernels.py``
``apply_lora_mlp_swiglu``). The probe builds one Llama MLP in fp32 with LoRA on gate, up and down projections
(PEFT, as Axolotl wraps it), runs its forward once through PEFT's modules and once through Axolotl's function,
and sums the bytes of the distinct storages autograd saves for backward (``torch.autograd.graph.saved_tensors_hooks``).
Axolotl's SwiGLU forward and backward are Triton kernels that allocate on CUDA; the probe puts PyTorch functions
with the same outputs in their place (what is saved is decided by ``LoRA_MLP.forward``, not by those kernels).
Prints one JSON line: per LoRA dropout, both totals in units of tokens × intermediate × 4 bytes.
"""
from __future__ import annotations

import argparse
import json


def _swiglu_forward(gate, up):
    import torch

    return torch.nn.functional.silu(gate) * up


def _swiglu_backward(grad, gate, up):
    """Axolotl's ``swiglu_backward`` contract: (h, d_up, d_gate) from the output gradient and the saved gate, up."""
    import torch

    sig = torch.sigmoid(gate)
    act = gate * sig
    return act * up, grad * act, grad * up * sig * (1 + gate * (1 - sig))


def saved_bytes(fn, x) -> int:
    """Bytes of the distinct storages autograd saves while `fn(x)` runs."""
    import torch

    storages: dict[int, int] = {}

    def pack(tensor):
        storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn(x)
    return sum(storages.values())


def probe(hidden: int, intermediate: int, tokens: int, rank: int, dropout: float) -> dict[str, float]:
    import torch
    from axolotl.kernels import lora as kernels
    from axolotl.monkeypatch import lora_kernels
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP

    for module in (kernels, lora_kernels):
        module.swiglu_forward, module.swiglu_backward = _swiglu_forward, _swiglu_backward

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mlp = LlamaMLP(LlamaConfig(hidden_size=hidden, intermediate_size=intermediate, hidden_act="silu"))

        def forward(self, x):
            return self.mlp(x)

    torch.manual_seed(0)
    model = get_peft_model(Layer(), LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=dropout,
                                               target_modules=["gate_proj", "up_proj", "down_proj"]))
    x = torch.randn(1, tokens, hidden, requires_grad=True)
    mlp = model.base_model.model.mlp
    unit = tokens * intermediate * 4
    return {"peft": round(saved_bytes(model, x) / unit, 2),
            "axolotl_lora_mlp": round(saved_bytes(lambda t: lora_kernels.apply_lora_mlp_swiglu(mlp, t), x) / unit, 2),
            "input": round(tokens * hidden * 4 / unit, 2)}


def main() -> None:
    from importlib.metadata import version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--intermediate", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rank", type=int, default=8)
    args = ap.parse_args()
    out = {f"lora_dropout {p}": probe(args.hidden, args.intermediate, args.tokens, args.rank, p) for p in (0.0, 0.05)}
    out["unit"] = "tokens x intermediate x 4 bytes"
    out["versions"] = {name: version(name) for name in ("axolotl", "peft", "transformers", "torch")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
