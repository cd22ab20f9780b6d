"""What Axolotl's fused LoRA kernels keep for backward (``activations.lora_kernel_linears``, ``group_bytes``,
``mlp_bytes`` with ``MLP_GATED_LORA_KERNEL``), and what PEFT's LoRA layers keep in their place, against Axolotl
0.18.0's ``LoRA_MLP``, ``LoRA_QKV`` and ``LoRA_O`` and PEFT 0.19.1 in the oracle venv of tests/oracle: the probe
(benchmarks/memory/lora_kernel_probe.py) runs one Llama layer's MLP and q/k/v and o projections there in bf16 with
bf16 adapters, with and without LoRA dropout, with and without DoRA, and reports the bytes per token autograd saves
and the peak per token the backward allocates beyond them. The analytic figure of the same part, from a QLoRA setup
(bf16 adapters, a base layer that keeps nothing), must be those saved bytes exactly, and DoRA's growth of the
kernels' backward the estimate's."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from axlint.architectures import Architecture
from axlint.hardware import parse_hardware
from axlint.memory.activations import (
    dora_kernel_backward_bytes,
    group_bytes,
    input_bytes,
    lora_kernel_linears,
    mlp_part_bytes,
)
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
def measured() -> dict[tuple[str, float, bool], dict]:
    done = subprocess.run([str(oracle_python()), str(ROOT / "benchmarks" / "memory" / "lora_kernel_probe.py")],
                          capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "AXOLOTL_DO_NOT_TRACK": "1"})
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {(row["part"], row["dropout"], row["dora"]): row for row in rows}


def _analytic(part: str, dropout: float, kernels: bool, dora: bool = False) -> float:
    arch = Architecture.from_config("llama-probe", "model-config", LLAMA)
    run = {"base_model": "llama-probe", "bf16": True, "adapter": "qlora", "load_in_4bit": True,
           "lora_r": 8, "lora_dropout": dropout, "lora_target_linear": True, "peft_use_dora": dora,
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
    assert set(measured) == {(part, p, dora) for part in probe.PARTS for p in probe.DROPOUTS for dora in probe.DORA}


@pytest.mark.parametrize("part", probe.PARTS)
@pytest.mark.parametrize("dropout", probe.DROPOUTS)
@pytest.mark.parametrize("dora", probe.DORA)
def test_what_the_kernels_and_peft_keep_is_the_estimate_s(part, dropout, dora, measured) -> None:
    row = measured[(part, dropout, dora)]
    assert row["rank"] == 8
    assert _analytic(part, dropout, kernels=True, dora=dora) == row["kernel"], (part, dropout, dora)
    assert _analytic(part, dropout, kernels=False, dora=dora) == row["peft"], (part, dropout, dora)


@pytest.mark.parametrize("part", probe.PARTS)
def test_dora_keeps_two_or_four_bytes_per_output_on_top(part, measured) -> None:
    """DoRA's own share, per output element of the part's adapted Linears: 4 bytes in PEFT's layers, 2 in the
    kernels, with or without dropout."""
    outputs = {"mlp": 2 * probe.INTERMEDIATE + probe.HIDDEN, "qkv": 3 * probe.HIDDEN, "o": probe.HIDDEN}[part]
    for dropout in probe.DROPOUTS:
        plain, dora = measured[(part, dropout, False)], measured[(part, dropout, True)]
        assert (dora["peft"] - plain["peft"], dora["kernel"] - plain["kernel"]) == (4 * outputs, 2 * outputs)


def test_doras_growth_of_the_kernels_backward_is_the_estimate_s(measured) -> None:
    """What DoRA adds to the peak a kernel's backward allocates, per token: 2 bytes per output element of its Linears
    (at most: the QKV kernel with dropout peaks before its last output's share), and for the layer the MLP kernel's
    (``dora_kernel_backward_bytes``)."""
    outputs = {"mlp": 2 * probe.INTERMEDIATE + probe.HIDDEN, "qkv": 3 * probe.HIDDEN, "o": probe.HIDDEN}
    arch = Architecture.from_config("llama-probe", "model-config", LLAMA)
    run = {"base_model": "llama-probe", "bf16": True, "adapter": "qlora", "load_in_4bit": True, "lora_r": 8,
           "lora_target_linear": True, "peft_use_dora": True, "gradient_checkpointing": True}
    assert dora_kernel_backward_bytes(arch, read_setup(facts(run, None, arch, H100), arch), 0) == 2 * outputs["mlp"]
    for dropout in probe.DROPOUTS:
        growth = {part: measured[(part, dropout, True)]["kernel_backward"]
                  - measured[(part, dropout, False)]["kernel_backward"] for part in probe.PARTS}
        assert growth["mlp"] == 2 * outputs["mlp"] and growth["o"] == 2 * outputs["o"], dropout
        assert 0 < growth["qkv"] <= 2 * outputs["qkv"], dropout


def test_the_mlp_kernel_keeps_about_half_of_peft(measured) -> None:
    row = measured[("mlp", 0.0, False)]
    assert row["kernel"] < 0.55 * row["peft"]
