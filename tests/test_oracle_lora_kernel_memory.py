"""What Axolotl's fused LoRA kernels keep for backward (``activations.lora_kernel_linears``, ``group_bytes``,
``mlp_bytes`` with ``MLP_GATED_LORA_KERNEL``), and what PEFT's LoRA layers keep in their place, against Axolotl
0.18.0's ``LoRA_MLP``, ``LoRA_QKV`` and ``LoRA_O`` and PEFT 0.19.1 in the oracle venv of tests/oracle: the probe
(benchmarks/memory/lora_kernel_probe.py) runs one Llama layer's MLP and q/k/v and o projections there in bf16 with
bf16 adapters, with and without LoRA dropout, and reports the bytes per token autograd saves. The analytic figure of
the same part, from a QLoRA setup (bf16 adapters, a base layer that keeps nothing), must be those bytes exactly."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from axlint.architectures import Architecture
from axlint.hardware import parse_hardware
from axlint.memory.activations import group_bytes, input_bytes, lora_kernel_linears, mlp_part_bytes
from axlint.memory.params import lora_targets
from axlint.memory.setup import read_setup
from benchmarks.memory import lora_kernel_probe as probe
from tests.corpus import ROOT
from tests.oracle.venv import oracle_python
from tests.resolved import facts

H100 = parse_hardware("1xH100")
LLAMA = {"model_type": "llama", "hidden_size": probe.HIDDEN, "intermediate_size": probe.INTERMEDIATE,
         "num_attention_heads": probe.HEADS, "num_key_value_heads": probe.HEADS, "num_hidden_layers": 2,
         "vocab_size": 128, "hidden_act": "silu"}


@pytest.fixture(scope="module")
def measured() -> dict[tuple[str, float], dict]:
    done = subprocess.run([str(oracle_python()), str(ROOT / "benchmarks" / "memory" / "lora_kernel_probe.py")],
                          capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "AXOLOTL_DO_NOT_TRACK": "1"})
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {(row["part"], row["dropout"]): row for row in rows}


def _analytic(part: str, dropout: float, kernels: bool) -> float:
    arch = Architecture.from_config("llama-probe", "model-config", LLAMA)
    run = {"base_model": "llama-probe", "bf16": True, "adapter": "qlora", "load_in_4bit": True,
           "lora_r": 8, "lora_dropout": dropout, "lora_target_linear": True,
           "gradient_checkpointing": True}
    setup = read_setup(facts(run, None, arch, H100), arch)
    assert setup.lora_kernels == ("mlp", "qkv", "o")  # Axolotl turns them on by itself for this QLoRA
    if not kernels:
        setup = setup.with_changes(lora_kernels=())
    adapted = lora_targets(arch, setup)[0]
    by_name = {lin.name: lin for lin in adapted}
    if part == "mlp":
        return mlp_part_bytes(arch, setup, 0, adapted)
    if part == "qkv":
        return input_bytes(arch, setup, 0, adapted, only=frozenset(by_name[n] for n in ("q_proj", "k_proj", "v_proj")))
    o = by_name["o_proj"]  # the probe's o_proj input is its own tensor, not an attention output a kernel keeps
    return group_bytes(o.d_in, (o,), adapted, False, setup, False, False,
                       fused=lora_kernel_linears(arch, setup, 0, adapted))


def test_the_probe_ran_on_axolotls_pins(measured) -> None:
    versions = {(row["versions"]["axolotl"], row["versions"]["peft"]) for row in measured.values()}
    assert versions == {("0.18.0", "0.19.1")}
    assert set(measured) == {(part, p) for part in probe.PARTS for p in probe.DROPOUTS}


@pytest.mark.parametrize("part", probe.PARTS)
@pytest.mark.parametrize("dropout", probe.DROPOUTS)
def test_what_the_kernels_and_peft_keep_is_the_estimate_s(part, dropout, measured) -> None:
    row = measured[(part, dropout)]
    assert row["rank"] == 8
    assert _analytic(part, dropout, kernels=True) == row["kernel"], (part, dropout)
    assert _analytic(part, dropout, kernels=False) == row["peft"], (part, dropout)


def test_the_mlp_kernel_keeps_about_half_of_peft(measured) -> None:
    row = measured[("mlp", 0.0)]
    assert row["kernel"] < 0.55 * row["peft"]
