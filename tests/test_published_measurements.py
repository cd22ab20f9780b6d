"""benchmarks/memory/published.yaml is well-formed, every row estimates, and published.md is current.

A change to the estimator that moves any row's figures fails the test of the report until
`python benchmarks/memory/published.py` is re-run and the new published.md committed.
"""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from axlint.architectures import resolve_architecture
from axlint.facts import resolve_facts
from axlint.memory.setup import read_setup
from benchmarks.memory import published as bench
from benchmarks.memory.old_stack import LOGITS_DTYPE_BYTES, held_output_logits, linear_experts, unconverted_targets

ROWS = bench.load_rows()
REQUIRED = ("id", "source", "quote", "model", "hardware", "metric", "measured_gib", "outcome", "set")
URL = re.compile(r"^https?://\S+")


def test_ids_unique_and_both_sets_present():
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids))
    assert {r["set"] for r in ROWS} == {"calibration", "check"}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.get("id", "?"))
def test_row_is_well_formed(row):
    missing = [k for k in REQUIRED if k not in row]
    assert not missing, missing
    assert URL.match(row["source"]), row["source"]
    assert row["metric"] in ("allocated", "reserved", "device", "outcome")
    assert row["outcome"] in ("ran", "oom")
    assert row["set"] in ("calibration", "check")
    assert isinstance(row["quote"], str) and 0 < len(row["quote"]) <= 120
    assert ("config" in row) != ("config_file" in row), "exactly one of config / config_file"
    if row["metric"] == "outcome":
        assert row["measured_gib"] is None
    else:
        assert isinstance(row["measured_gib"], (int, float)) and row["measured_gib"] > 0
        assert row["outcome"] == "ran", "a measured figure comes from a run that ran"
    assert isinstance(row.get("assumed", []), list)
    assert isinstance(row.get("stack", ""), (str, list))
    assert set(bench.row_stacks(row)) <= set(bench.STACKS)
    assert row.get("loader") in (None, *bench.LOADERS)
    assert row.get("held_logits") in (None, *LOGITS_DTYPE_BYTES)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_model_resolves_and_estimate_runs(row):
    assert resolve_architecture(row["model"]) is not None, row["model"]
    e = bench.estimate_row(row)
    assert e.peak_device > 0 and e.peak_reserved >= e.peak_allocated > 0


def test_a_loop_that_keeps_the_output_holds_its_logits_at_every_figure():
    # Answer.AI's train.py keeps `output` through backward: transformers 4.38's fp32 logits, 4·T·V, 2 × 2048 tokens
    row = next(r for r in ROWS if r["id"] == "aai-yi34b-qlora-bs2-2048")
    held, dropped = bench.Result(row, bench.estimate_row(row)), bench.Result({**row, "held_logits": None},
                                                                              bench.estimate_row(row))
    extra = 4 * 2 * 2048 * resolve_architecture(row["model"]).vocab_size
    assert held.held_logits_bytes == extra and dropped.held_logits_bytes == 0
    assert (held.estimate_gib - dropped.estimate_gib) * bench.GIB == pytest.approx(extra)
    assert held_output_logits(resolve_architecture(row["model"]), 4096, "bf16") == extra / 2


def test_a_sharded_loader_row_has_no_load_peak():
    # the Llama-3 70B README row was measured on transformers 4.40-dev: no whole 4-bit model on a 24 GB card
    row = next(r for r in ROWS if r["id"] == "axolotl-llama3-qlora-fsdp-70b")
    assert row["loader"] == "sharded"
    assert bench.estimate_row(row).phases["model load"] == 0.0
    assert bench.estimate_row({**row, "loader": None}).phase == "model load"


def test_a_kbit_loader_row_trains_fp32_embeddings_and_residual():
    # the Unsloth HF baseline: PEFT's kbit preparation with nothing casting back, 4-byte checkpointed layer inputs
    row = next(r for r in ROWS if r["id"] == "unsloth-hf-fa2-llama33-70b-48gb-oom")
    assert row["loader"] == "peft-kbit"
    kbit, axolotl = bench.estimate_row(row), bench.estimate_row({**row, "loader": None})
    assert kbit.setup.embeddings_fp32 and not axolotl.setup.embeddings_fp32
    arch = kbit.arch
    assert kbit.components["weights"] - axolotl.components["weights"] == pytest.approx(
        2 * 2 * arch.vocab_size * arch.hidden_size, rel=0.01)  # embed_tokens and lm_head at 4 bytes instead of 2
    assert kbit.components["activations"] > axolotl.components["activations"]
    assert not kbit.fits and axolotl.fits  # the run was out of memory on 48 GB


def test_published_md_is_current():
    """Every row's figures, not only the summary: an estimator change that moves a row must rewrite the report."""
    fresh = bench.comparable(bench.render(bench.evaluate()))
    written = bench.comparable(bench.REPORT.read_text(encoding="utf-8"))
    assert written == fresh, "re-run `python benchmarks/memory/published.py` and commit published.md"


EXPERT_LORA = {"adapter": "lora", "lora_r": 16, "sequence_len": 1024, "micro_batch_size": 1,
               "lora_target_modules": ["q_proj", "gate_proj", "up_proj", "down_proj"]}


@pytest.mark.parametrize("model, quantization", [
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", {"load_in_4bit": True, "adapter": "qlora"}),  # experts quantized
    ("deepseek-ai/DeepSeek-V2-Lite", {}),  # a model type whose targets PEFT 0.19+ converts
])
def test_linear_experts_stack_is_the_remote_code_path(model, quantization):
    # old_stack.linear_experts turns today's setup of a run into the one axlint's own remote-code path
    # (trust_remote_code on a checkpoint whose auto_map code builds nn.Linear experts) reads: equal but for the notes
    arch = resolve_architecture(model)
    assert arch.remote_modeling
    config = {**EXPERT_LORA, **quantization}
    today = resolve_facts(config, hidden_size=arch.hidden_size)
    remote = resolve_facts({**config, "trust_remote_code": True}, hidden_size=arch.hidden_size)
    converted = read_setup(today, arch)
    assert converted != replace(read_setup(remote, arch), assumptions=converted.assumptions)
    # Axolotl's LoRA kernels: on by itself today, off under trust_remote_code; not what the stack changes
    assert (replace(linear_experts(converted, today), assumptions=(), lora_kernels=())
            == replace(read_setup(remote, arch), assumptions=()))


def test_unconverted_targets_keep_module_names_off_the_3d_experts():
    # PEFT < 0.19 left shared_expert.* as module targets: the shared expert's Linears, not LoRA on all routed experts
    arch = resolve_architecture("Qwen/Qwen3-Next-80B-A3B-Instruct")
    written = ("shared_expert.gate_proj", "shared_expert.up_proj", "shared_expert.down_proj", "q_proj")
    facts = resolve_facts({**EXPERT_LORA, "lora_target_modules": list(written)}, hidden_size=arch.hidden_size)
    today = read_setup(facts, arch)
    assert today.lora_target_parameters == ("gate_up_proj", "down_proj") and today.lora_doubled == ("gate_up_proj",)
    old = unconverted_targets(today, facts)
    assert (old.lora_target_modules, old.lora_target_parameters, old.lora_doubled) == (written, (), ())
    assert not old.expert_modules and not old.quantize_experts
    row = {"model": arch.model_id, "config": {**EXPERT_LORA, "lora_target_modules": list(written)},
           "hardware": "1x80GB"}
    assert (bench.estimate_row({**row, "stack": "peft<0.19"}).peak_allocated
            < bench.estimate_row(row).peak_allocated)
