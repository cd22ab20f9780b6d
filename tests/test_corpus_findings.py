"""What the Axolotl-conflict (AX1xx) and DeepSpeed (DS1xx) rules find in the real corpus, listed one by one.

Axolotl ships working examples, so none of them is an error (two stock DeepSpeed files are, see ERRORS); every
warning and note below was read and is a real issue. A rule change that adds or drops a finding fails here: update
the lists only after reading it.
The corpus is checked from its root, as Axolotl would be run (so `deepspeed_configs/...` are the real files).
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from axlint.diagnostics import Diagnostic, Severity
from axlint.packs import load_rules, select_rules
from axlint.lint import LintOptions, lint_paths
from tests.corpus import CORPUS, corpus_files

RULES = select_rules(load_rules(), ["AX1", "DS1"])

ERRORS: dict[tuple[str, str], str] = {
    **{(f"deepspeed_configs/{name}", "DS132"): "the `compile: {disable, backend}` block: DeepSpeed 0.18.9's "
                                              "CompileConfig refuses both keys (tests/test_oracle_deepspeed.py "
                                              "runs it), so no launch with this file starts"
       for name in ("zero1_torch_compile.json", "zero2_torch_compile.json")},
}
"""(file, code) -> why the run would fail. No shipped example YAML trips an error-level rule of these packs; two
stock DeepSpeed files do."""

OTHERS: list[tuple[str, str, str]] = [
    ("examples/archived/dbrx/fft-ds-zero3.yaml", "AX112",
     "use_reentrant: false with zero3_bf16.json: Axolotl's docs require reentrant checkpointing under ZeRO-3"),
    ("examples/archived/falcon/config-7b.yml", "AX105", "lora_r/lora_alpha/lora_target_linear with `adapter:` blank"),
    ("examples/archived/mpt-7b/config.yml", "AX105", "lora_r/lora_alpha/lora_target_modules with `adapter:` blank"),
    ("examples/archived/pythia-12b/config.yml", "AX105", "lora_r/lora_alpha/lora_target_linear with `adapter:` blank"),
    ("examples/archived/redpajama/config-3b.yml", "AX105", "lora_r/lora_alpha/lora_target_modules, `adapter:` blank"),
    ("examples/archived/tiny-llama/lora-mps.yml", "AX107", "sample_packing without a backend (Axolotl warns too)"),
    ("examples/gemma3n/gemma-3n-e2b-qlora.yml", "AX107", "sample_packing without a backend (Axolotl warns too)"),
    ("examples/jamba/qlora_deepspeed.yaml", "DS126",
     "paged_adamw_8bit with zero2.json's CPU optimizer offload: swapped for DeepSpeedCPUAdam"),
    ("examples/mistral/mixtral/mixtral.yml", "DS126",
     "adamw_bnb_8bit with zero2.json's CPU optimizer offload: swapped for DeepSpeedCPUAdam"),
    *[(f, "AX110", f"`{m}` in lora_modules_to_save: a full trainable copy with AdamW state")
      for f in ("examples/llama-3/lora-1b-deduplicate-sft.yml", "examples/llama-3/lora-1b-sample-packing-sequentially.yml",
                "examples/llama-3/lora-8b.yml", "examples/llama-4/do-no-use-fa2/scout-qlora-fsdp1.yaml",
                "examples/llama-4/do-no-use-fa2/scout-vision-qlora-fsdp.yaml",
                "examples/llama-4/scout-vision-qlora-fsdp2-flex.yaml", "examples/mistral/dpo/mistral-dpo-qlora.yml")
      for m in ("embed_tokens", "lm_head")],
    *[(f"deepspeed_configs/{name}.json", "DS107", "checked on its own, \"auto\" is only filled by the HF Trainer")
      for name in ("zero1", "zero1_torch_compile", "zero2", "zero2_torch_compile", "zero3", "zero3_bf16",
                   "zero3_bf16_cpuoffload_all", "zero3_bf16_cpuoffload_params")],
]
"""(file, code, why) of every warning and info finding, one entry per finding."""


@pytest.fixture(scope="module")
def findings() -> list[Diagnostic]:
    cwd = Path.cwd()
    os.chdir(CORPUS)
    try:
        return lint_paths(corpus_files(), LintOptions(RULES)).diagnostics
    finally:
        os.chdir(cwd)


def test_no_internal_errors(findings):
    assert not [d for d in findings if d.code == "AX999"]


def test_error_findings_are_exactly_the_listed_ones(findings):
    got = {(str(d.path), d.code) for d in findings if d.severity is Severity.ERROR}
    assert got == set(ERRORS), "\n".join(f"{d.path}:{d.span.line}: {d.code} {d.message}" for d in findings
                                         if d.severity is Severity.ERROR)


def test_warning_and_info_findings_are_exactly_the_listed_ones(findings):
    got = Counter((str(d.path), d.code) for d in findings if d.severity is not Severity.ERROR)
    assert got == Counter((f, code) for f, code, _ in OTHERS)


def test_findings_point_at_the_key_they_name(findings):
    for d in findings:
        line = (CORPUS / d.path).read_text(encoding="utf-8").splitlines()[d.span.line - 1]
        words = {"AX105": ("lora_r",), "AX107": ("sample_packing",), "AX110": ("embed_tokens", "lm_head"),
                 "AX112": ("use_reentrant",), "DS126": ("optimizer",), "DS107": ('"auto"',),
                 "DS132": ('"disable"', '"backend"')}[d.code]
        assert any(w in line for w in words), f"{d.path}:{d.span.line}: {d.code} points at {line!r}"

