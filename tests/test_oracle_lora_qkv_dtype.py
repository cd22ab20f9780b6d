"""Rules AX237, AX238 and AX243, held to Axolotl 0.18.0, PEFT 0.19.1 and bitsandbytes 0.49.1 in the oracle venv of
tests/oracle on the CPU (tests/oracle/hidden_dtype_judge.py): bitsandbytes' 4-bit Linear returns fp32 for fp32
input; Axolotl's fused LoRA QKV and MLP kernels stop with the error AX237 and AX243 quote when their input is fp32
and run when it is bf16; Axolotl patches sdpa to send packed rows to PyTorch's variable-length attention exactly where
``facts.sdpa_varlen_patched`` says. The rest, that CUDA's autocast makes the ReLU² and xIELU outputs and LayerNorm's
fp32, is what an H200 showed: Axolotl's Arcee AFM-4.5B, Apertus 8B and StarCoder2-3B QLoRA examples stop with AX237's
error, and Arcee's and Phi-1.5's with the kernels off on packed sdpa with AX238's
(benchmarks/memory/axolotl-reference-NVIDIA_H200-2026-11-27.md, axolotl-reference-NVIDIA_H200-2026-11-28.md)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from axlint.facts import lora_kernel_dtype_error, lora_qkv_dtype_error, sdpa_varlen_patched
from tests.corpus import ROOT
from tests.oracle.hidden_dtype_judge import VARLEN_CASES
from tests.oracle.venv import oracle_python
from tests.resolved import facts

JUDGE = ROOT / "tests" / "oracle" / "hidden_dtype_judge.py"


@pytest.fixture(scope="module")
def judged() -> dict:
    done = subprocess.run([str(oracle_python()), str(JUDGE)], capture_output=True, text=True, check=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "AXOLOTL_DO_NOT_TRACK": "1"})
    return json.loads(done.stdout.splitlines()[-1])


def test_the_4bit_linear_returns_its_input_s_dtype(judged: dict) -> None:
    assert judged["linear4bit"] == {"bfloat16": "bfloat16", "float32": "float32"}


def test_the_qkv_kernel_refuses_fp32_input_with_the_error_the_rule_quotes(judged: dict) -> None:
    run = facts({"base_model": "arcee-ai/AFM-4.5B", "adapter": "qlora", "load_in_4bit": True, "bf16": True})
    assert judged["qkv"] == {"bfloat16": "", "float32": lora_qkv_dtype_error(run, "arcee", "relu2", "rmsnorm")}


def test_the_mlp_kernel_refuses_fp32_input_with_the_error_the_rule_quotes(judged: dict) -> None:
    run = facts({"base_model": "stabilityai/stablelm-2-1_6b", "adapter": "qlora", "load_in_4bit": True, "bf16": True,
                 "lora_qkv_kernel": False, "lora_mlp_kernel": True})
    error = lora_kernel_dtype_error(run, "stablelm", "silu", "layernorm")
    assert error is not None and judged["mlp"] == {"bfloat16": "", "float32": error}


def test_axolotl_patches_sdpa_for_varlen_where_the_facts_say(judged: dict) -> None:
    ours = {name: sdpa_varlen_patched(facts({"base_model": "x", **cfg}), model_config)
            for name, (cfg, model_config) in VARLEN_CASES.items()}
    assert ours == judged["varlen"]
    assert sum(ours.values()) == 5  # the cases reach both answers
