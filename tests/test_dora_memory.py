"""DoRA's weight-norm transient (``activations.dora_norm_transient``) against PEFT's own DoRA layer.

PEFT's ``DoraLinearLayer`` runs on the CPU as on a GPU: every tensor it allocates is seen by a dispatch mode that
keeps the live storages (freed when their last reference goes, as the caching allocator sees them) and their peak
(benchmarks/memory/lora_kernel_probe.py ``allocations``).
One adapted Linear runs a training forward on a few tokens, so that the peak is the norm's transient: with fp32
adapters under autocast (a 16-bit LoRA), and with the model cast to bf16 and no autocast (DeepSpeed's engine)."""
from __future__ import annotations

from typing import Any

import peft
import pytest
import torch

from axlint.architectures import Architecture
from axlint.hardware import parse_hardware
from axlint.memory.activations import dora_norm_transient
from axlint.memory.setup import read_setup
from benchmarks.memory.lora_kernel_probe import allocations
from tests.resolved import facts

TOKENS, RANK = 4, 8
ARCH = Architecture("tiny-llama", "model-config", "llama",
                    {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 2,
                     "num_key_value_heads": 2, "vocab_size": 128})
LORA = {"bf16": True, "adapter": "lora", "lora_r": RANK, "lora_target_linear": True, "peft_use_dora": True,
        "micro_batch_size": 1, "sequence_len": TOKENS}
DEEPSPEED_JSON = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
HW = parse_hardware("1xH100")


def _setup(deepspeed: bool) -> Any:
    config = {**LORA, "deepspeed": "zero2.json"} if deepspeed else LORA
    return read_setup(facts(config, DEEPSPEED_JSON if deepspeed else None, ARCH, HW), ARCH)


def _peak_of_forward(d_in: int, d_out: int, deepspeed: bool) -> int:
    """Peak bytes of the storages a DoRA Linear's training forward allocates (its weights' own left out)."""

    class One(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(d_in, d_out, bias=False)

        def forward(self, x: Any) -> Any:
            return self.proj(x)

    torch.manual_seed(0)
    model = peft.get_peft_model(One().to(torch.bfloat16),
                                peft.LoraConfig(r=RANK, target_modules=["proj"], use_dora=True))
    if deepspeed:
        model = model.to(torch.bfloat16)
    model.train()
    known = {p.untyped_storage().data_ptr() for p in model.parameters()}
    x = torch.randn(1, TOKENS, d_in, dtype=torch.bfloat16, requires_grad=True)
    known.add(x.untyped_storage().data_ptr())
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=not deepspeed)
    with autocast, allocations(known) as live:
        model(x)
    return live.peak


@pytest.mark.parametrize("deepspeed", [False, True], ids=["autocast", "deepspeed"])
@pytest.mark.parametrize("d_in,d_out", [(512, 512), (256, 1024), (1024, 256)])
def test_the_norm_transient_is_what_peft_allocates(d_in: int, d_out: int, deepspeed: bool) -> None:
    setup = _setup(deepspeed)
    assert setup.dora and (setup.sharding.kind == "deepspeed") == deepspeed
    measured = _peak_of_forward(d_in, d_out, deepspeed)
    # beside the transient: lora_A's output, the magnitude's scale and the outputs of a few tokens
    small = 4 * (RANK * (d_in + d_out) + 8 * TOKENS * d_out + 4 * d_out)
    assert dora_norm_transient(d_in, d_out, setup) <= measured <= dora_norm_transient(d_in, d_out, setup) + small


def test_the_adapters_dtype_decides_the_transient() -> None:
    """fp32 adapters under autocast (a 16-bit LoRA) make an fp32 identity and fp32 copies: about 16 bytes per weight
    element of a square Linear, where DeepSpeed's bf16 adapters make 2-byte ones."""
    autocast, deepspeed = _setup(False), _setup(True)
    assert dora_norm_transient(1024, 1024, autocast) == (2 + 16) * 1024 * 1024
    assert dora_norm_transient(1024, 1024, deepspeed) == (2 + 6) * 1024 * 1024
