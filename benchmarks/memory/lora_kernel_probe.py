"""What LoRA-adapted projections keep for backward under PEFT's modules and under Axolotl's fused LoRA kernels.

    python benchmarks/memory/lora_kernel_probe.py [--tokens 256] [--rank 8]

Run where Axolotl 0.18.0 imports (the oracle venv of tests/oracle; benchmarks/memory/triton_standin.py takes Triton's
place where it is missing). Axolotl turns ``lora_mlp_kernel``, ``lora_qkv_kernel`` and ``lora_o_kernel`` on by
itself for most LoRA and QLoRA runs (``utils/schemas/config.py``, ``check_auto_enable_lora_kernels``), which replace
the forward of the MLP and of the q/k/v and o projections with the autograd functions ``LoRA_MLP``, ``LoRA_QKV`` and
``LoRA_O`` (``kernels/lora.py``, through ``monkeypatch/lora_kernels.py``). The probe builds one Llama layer's MLP and
attention projections in bf16 with bf16 LoRA adapters on gate, up, down, q, k, v and o (PEFT, as Axolotl wraps
them; bf16 adapters as a 4-bit base or DeepSpeed has them, so PEFT makes no fp32 copies), plain LoRA and DoRA
(``use_dora``, which Axolotl's functions run too), runs each part through PEFT's modules and through Axolotl's
function, and sums the bytes of the distinct storages autograd saves for backward
(``torch.autograd.graph.saved_tensors_hooks``), parameters left out, at ``--tokens`` and at twice as many: the growth
per token is reported, so that what does not grow with the tokens (DoRA's weight norms and per-output scales, and the
identity DoRA builds its adapter's weight from) drops out. Dropout runs as on CUDA
(``axlint.simulate.fused_dropout``: a bool mask, where CPU's composite keeps a noise tensor). Axolotl's SwiGLU forward
and backward are Triton kernels; the probe puts PyTorch functions with the same outputs in their place (what is
saved is decided by ``LoRA_MLP.forward``, not by those kernels).

It also runs each part's backward and takes the peak of what that allocates beyond the saved tensors
(``measure``); Axolotl's Triton SwiGLU backward, which writes over its inputs, is stood in for in place.

Prints one JSON line per (part, LoRA dropout, DoRA): {"part": "mlp" | "qkv" | "o", "dropout", "dora", "peft",
"kernel": bytes saved per token, "peft_backward", "kernel_backward": the backward's peak per token, "hidden",
"intermediate", "q_dim", "rank", "versions"}.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

HIDDEN, INTERMEDIATE, HEADS = 64, 256, 4
PARTS = ("mlp", "qkv", "o")
DROPOUTS = (0.0, 0.05)
DORA = (False, True)


def _swiglu_forward(gate: Any, up: Any) -> Any:
    import torch

    return torch.nn.functional.silu(gate) * up


def _swiglu_backward(grad: Any, gate: Any, up: Any) -> tuple[Any, Any, Any]:
    """Axolotl's ``swiglu_backward`` contract: its Triton kernel writes the activation output h over the output
    gradient, and the gate and up gradients over the saved gate and up, and hands the three back. Computed here
    outside any tracking mode (a Triton kernel allocates nothing), then written in place."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        sig = torch.sigmoid(gate)
        act = gate * sig
        h, d_up, d_gate = act * up, grad * act, grad * up * sig * (1 + gate * (1 - sig))
    grad.copy_(h)
    gate.copy_(d_gate)
    up.copy_(d_up)
    return grad, gate, up


def allocations(known: set[int]) -> Any:
    """A dispatch mode that sees every storage the operations run under it make (those of ``known`` data pointers
    left out), keeps it until its last reference goes (as the GPU's caching allocator sees a tensor freed) and the
    peak of their bytes in ``.peak``."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Allocations(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live: dict[int, int] = {}
            self.now = self.peak = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            for tensor in tree_flatten(out)[0]:
                if isinstance(tensor, torch.Tensor):
                    storage = tensor.untyped_storage()
                    key = storage.data_ptr()
                    if key and key not in known and key not in self.live:
                        self.live[key] = storage.nbytes()
                        self.now += storage.nbytes()
                        weakref.finalize(storage, self.free, key)
            self.peak = max(self.peak, self.now)
            return out

        def free(self, key: int) -> None:
            self.now -= self.live.pop(key, 0)

    return Allocations()


def measure(fn: Any, x: Any, parameters: set[int]) -> tuple[int, int]:
    """(the bytes of the distinct storages autograd saves while `fn(x)` runs, the peak bytes its backward allocates
    on top of them, ``allocations``), those of `parameters` (data pointers) left out; the saved tensors, the inputs,
    the outputs and their gradients exist before the backward."""
    import torch

    from axlint.simulate import fused_dropout

    storages: dict[int, int] = {}
    held = []  # a storage freed during the run (DoRA's weight-norm graph) must not lend its address to another

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            storages[storage.data_ptr()] = storage.nbytes()
            held.append(tensor)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), fused_dropout():
        out = fn(x)
    outs = out if isinstance(out, tuple) else (out,)
    grads = [torch.ones_like(o) for o in outs]
    known = parameters | set(storages) | {t.untyped_storage().data_ptr() for t in (x, *outs, *grads)}
    with allocations(known) as backward:
        torch.autograd.backward(outs, grads)
    return sum(storages.values()), backward.peak


def probe(tokens: int, rank: int, dropout: float, dora: bool = False) -> list[dict[str, Any]]:
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
        r=rank, lora_alpha=2 * rank, lora_dropout=dropout, use_dora=dora,
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

    def per_token(fn: Any, width: int) -> tuple[float, float]:
        """The growth of ``measure``'s two figures from `tokens` to twice as many, per token: what does not grow
        with the tokens (DoRA's weight norms, its per-output scales, the adapters' gradients) drops out."""
        sizes = [measure(fn, torch.randn(1, n, width, dtype=torch.bfloat16, requires_grad=True), parameters)
                 for n in (tokens, 2 * tokens)]
        return (sizes[1][0] - sizes[0][0]) / tokens, (sizes[1][1] - sizes[0][1]) / tokens

    out = []
    for part, (width, peft_fn, kernel_fn) in runs.items():
        (peft, peft_backward), (kernel, kernel_backward) = per_token(peft_fn, width), per_token(kernel_fn, width)
        out.append({"part": part, "dropout": dropout, "dora": dora, "peft": peft, "kernel": kernel,
                    "peft_backward": peft_backward, "kernel_backward": kernel_backward,
                    "hidden": HIDDEN, "intermediate": INTERMEDIATE, "q_dim": q_dim, "rank": rank})
    return out


def main() -> None:
    from importlib.metadata import version

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--rank", type=int, default=8)
    args = ap.parse_args()
    versions = {name: version(name) for name in ("axolotl", "peft", "transformers", "torch")}
    for dora in DORA:
        for dropout in DROPOUTS:
            for row in probe(args.tokens, args.rank, dropout, dora):
                print(json.dumps({**row, "versions": versions}))


if __name__ == "__main__":
    main()
