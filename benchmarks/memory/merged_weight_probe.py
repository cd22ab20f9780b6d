"""LoRA on a MoE block's 3-D expert weights, measured: the peak bytes one forward and backward of the block add, per
adapted weight element, on real CPU tensors with the transformers and PEFT this interpreter imports.

    python benchmarks/memory/merged_weight_probe.py        # one JSON line per case

What runs is what Axolotl runs for ``lora_target_parameters`` on transformers 5 experts: the model's experts module
(``Qwen3NextExperts``, transformers' ``grouped_mm`` experts path, gate_up_proj [E, 2I, h] read before down_proj
[E, h, I]) wrapped in PEFT's ``ParamWrapper`` once per weight (gate_up_proj inside, down_proj outside, the order
Axolotl's target matching keeps), fp32 adapters (PEFT's ``autocast_adapter_dtype``), the forward under
``torch.autocast`` in bf16 as accelerate runs it, the backward outside it. How the module reads each weight is the
case:

  bf16   stored in bf16 (a 16-bit LoRA, experts not quantized)
  fp32   stored in fp32 (PEFT's kbit preparation upcast them)
  nf4    stored packed, dequantized to a new bf16 tensor on each read, as bitsandbytes' ``Bnb4bitParametrization``
         does (its CUDA kernel writes the output directly; a stand-in makes the tensor on the CPU)
  int8   stored in int8, dequantized to fp32 by Axolotl's ``Bnb8bitParametrization`` with bitsandbytes' default
         ``int8_vectorwise_dequant`` kernel, ``A * stats * (1 / 127)``, written out here
and for the quantized cases the parametrization cache hooks bitsandbytes and Axolotl register on the module.

Peak = PyTorch's ``MemTracker`` peak above the start of the forward, with the simulation tier's tracker
(``axlint.simulate.peak_tracker_class``: axlint must be importable); n = the elements of both weights. The token
count is kept small so that the weights' copies dominate what the block keeps for its backward.
"""
from __future__ import annotations

import inspect
import json
import sys
from typing import Any

CASES = ("bf16", "fp32", "nf4", "int8")
EXPERTS, HIDDEN, INTERMEDIATE, TOKENS, TOP_K, RANK = 64, 512, 256, 64, 4, 16


def probe(case: str) -> dict[str, Any]:
    """{case, n, peak_bytes, per_element, versions} for one way of reading the expert weights."""
    import peft
    import torch
    import torch.nn as nn
    import torch.nn.utils.parametrize as parametrize
    import transformers
    from peft.tuners.lora.layer import ParamWrapper
    from transformers import Qwen3NextConfig
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextExperts

    from axlint.simulate import peak_tracker_class

    torch.manual_seed(0)
    config = Qwen3NextConfig(num_experts=EXPERTS, hidden_size=HIDDEN, moe_intermediate_size=INTERMEDIATE,
                             hidden_act="silu")
    config._experts_implementation = "grouped_mm"
    experts = Qwen3NextExperts(config).to(torch.float32 if case == "fp32" else torch.bfloat16)
    names = ("gate_up_proj", "down_proj")
    n = sum(getattr(experts, name).numel() for name in names)
    if case in ("nf4", "int8"):
        _quantize(experts, names, case, torch, nn, parametrize)
    for param in experts.parameters():
        param.requires_grad_(False)

    wrapped: nn.Module = experts
    for name in names:
        kwargs: dict[str, Any] = {"r": RANK, "lora_alpha": 2 * RANK}
        if "config" in inspect.signature(ParamWrapper.__init__).parameters:  # PEFT 0.21 takes the LoraConfig
            kwargs["config"] = peft.LoraConfig(r=RANK, lora_alpha=2 * RANK, target_parameters=list(names))
        wrapped = ParamWrapper(wrapped, "default", name, **kwargs)
    for module in wrapped.modules():
        if isinstance(module, ParamWrapper):
            for param in [*module.lora_A.parameters(), *module.lora_B.parameters()]:
                param.data = torch.randn_like(param, dtype=torch.float32) * 0.01

    hidden = torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16, requires_grad=True)
    top_k_index = torch.randint(0, EXPERTS, (TOKENS, TOP_K))
    top_k_weights = torch.rand(TOKENS, TOP_K, dtype=torch.bfloat16)
    tracker = peak_tracker_class()()
    tracker.track_external(wrapped, hidden, top_k_index, top_k_weights)
    with tracker:
        start = _total(tracker.get_tracker_snapshot("current"))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = wrapped(hidden, top_k_index, top_k_weights)
        out.float().sum().backward()
    peak = _total(tracker.get_tracker_snapshot("peak")) - start
    return {"case": case, "n": n, "peak_bytes": peak, "per_element": round(peak / n, 3),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "peft": peft.__version__}}


def _quantize(experts: Any, names: tuple[str, ...], case: str, torch: Any, nn: Any, parametrize: Any) -> None:
    """Store each weight quantized behind a dequantizing parametrization, with the cache hooks that make one forward
    read each weight once (bitsandbytes 0.50.1 ``nn/parametrize.py``, Axolotl 0.18.0 ``monkeypatch/moe_quant.py``;
    the hooks are axlint's, which `axlint validate` registers on a real load too)."""
    from axlint.validate.quantize import cache_parametrizations_per_forward

    class Nf4(nn.Module):
        def __init__(self, shape: Any) -> None:
            super().__init__()
            self.shape = shape

        def forward(self, packed: Any) -> Any:
            return torch.ones(self.shape, dtype=torch.bfloat16)

    class Int8(nn.Module):
        def __init__(self, shape: Any) -> None:
            super().__init__()
            self.shape = shape
            self.register_buffer("row_stats", torch.ones(shape[:-1].numel()))

        def forward(self, quantized: Any) -> Any:
            rows = quantized.reshape(-1, quantized.shape[-1])
            return (rows * self.row_stats.view(-1, 1) * 7.874015718698502e-3).reshape(self.shape)

    for name in names:
        shape = getattr(experts, name).shape
        if case == "nf4":
            stored, dequantize = torch.zeros(shape.numel() // 2, dtype=torch.uint8), Nf4(shape)
        else:
            stored, dequantize = torch.zeros(shape, dtype=torch.int8), Int8(shape)
        setattr(experts, name, nn.Parameter(stored, requires_grad=False))
        parametrize.register_parametrization(experts, name, dequantize, unsafe=True)
    cache_parametrizations_per_forward(experts)


def _total(snapshot: dict[Any, dict[Any, int]]) -> int:
    from torch.distributed._tools.mem_tracker import _TOTAL_KEY

    return sum(per_device[_TOTAL_KEY] for per_device in snapshot.values())


def main(argv: list[str]) -> int:
    import warnings

    warnings.filterwarnings("ignore")
    for case in argv or CASES:
        print(json.dumps(probe(case)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
