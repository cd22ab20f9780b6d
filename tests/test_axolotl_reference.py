"""benchmarks/memory/axolotl_reference.py: what a reference run changes in an example config, the synthetic
vocabulary and data it trains on, and how Axolotl's memory log is read."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from benchmarks.memory.axolotl_reference import (
    CORPUS,
    DROPPED_KEYS,
    cpu_changes,
    dataset_rows,
    memory_logs,
    named_tokens,
    peaks,
    reference_config,
    selected_rows,
    synthetic_vocabulary,
    tokens_needed,
)

ROOT = Path(__file__).resolve().parents[1]
HUNYUAN = ROOT / "fixtures/axolotl/examples/hunyuan/hunyuan-v1-dense-qlora.yaml"
WORK = Path("row")  # a work folder as the runner is given one (never created here)


def _reference(raw: dict, **kw) -> tuple[dict, list[str]]:
    return reference_config(raw, model_dir=WORK / "model", data_file=WORK / "data.jsonl", work=WORK, steps=3, **kw)


def test_reference_config_changes_only_data_paths_steps_saving_and_evaluation() -> None:
    raw = yaml.safe_load(HUNYUAN.read_text(encoding="utf-8"))
    cfg, notes = _reference(raw)
    assert cfg["base_model"] == "row/model"
    assert cfg["datasets"] == [{"path": "row/data.jsonl", "ds_type": "json", "type": "completion"}]
    assert (cfg["dataset_prepared_path"], cfg["output_dir"]) == ("row/prepared", "row/out")
    assert (cfg["max_steps"], cfg["num_epochs"], cfg["logging_steps"]) == (3, 1, 1)
    assert (cfg["save_strategy"], cfg["val_set_size"]) == ("no", 0)
    assert "evals_per_epoch" not in cfg and "saves_per_epoch" not in cfg
    assert notes == ["left out: saves_per_epoch, evals_per_epoch"]
    changed = {"base_model", "datasets", "dataset_prepared_path", "output_dir", "val_set_size", "num_epochs",
               "logging_steps", "evals_per_epoch", "saves_per_epoch", "max_steps", "save_strategy"}
    kept = {k: v for k, v in raw.items() if k not in changed and k not in DROPPED_KEYS}
    assert {k: v for k, v in cfg.items() if k not in changed} == kept
    assert "wandb_project" in raw and "wandb_project" not in cfg  # empty keys of DROPPED_KEYS go without a note
    assert cfg["plugins"] == ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]
    assert raw["datasets"][0]["path"] == "fozziethebeat/alpaca_messages_2k_test"  # the input is not changed


def test_reference_config_reads_the_deepspeed_file_from_the_corpus_and_builds_without_remote_code() -> None:
    cfg, notes = _reference({"base_model": "x", "deepspeed": "deepspeed_configs/zero2.json", "trust_remote_code": True})
    assert cfg["deepspeed"] == str(CORPUS / "deepspeed_configs/zero2.json")
    assert "trust_remote_code" not in cfg
    assert notes == ["trust_remote_code off: the model is built from transformers' own class"]
    with pytest.raises(FileNotFoundError, match="deepspeed_configs/zero9.json"):
        _reference({"deepspeed": "deepspeed_configs/zero9.json"})


def test_scale_down_turns_off_what_needs_cuda_and_says_so() -> None:
    raw = {"adapter": "qlora", "load_in_4bit": True, "quantize_moe_experts": True, "optimizer": "adamw_bnb_8bit", "bf16": "auto", "tf32": False,
           "attn_implementation": "flash_attention_2", "liger_rms_norm": True, "cut_cross_entropy": True,
           "plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin",
                       "axolotl.integrations.liger.LigerPlugin", "axolotl.integrations.other.Plugin"]}
    cfg = dict(raw)
    notes = cpu_changes(cfg)
    assert cfg == {"adapter": "lora", "optimizer": "adamw_torch", "attn_implementation": "eager",
                   "plugins": ["axolotl.integrations.other.Plugin"], "lora_mlp_kernel": False,
                   "lora_qkv_kernel": False, "lora_o_kernel": False, "lora_embedding_kernel": False, "fp32": True}
    assert notes == ["load_in_4bit, quantize_moe_experts off", "adapter qlora -> lora", "optimizer adamw_bnb_8bit -> adamw_torch",
                     "Cut Cross-Entropy and Liger plugins off", "attn_implementation flash_attention_2 -> eager",
                     "Axolotl's Triton LoRA kernels off", "fp32 instead of bf16/fp16"]
    full = _reference({"base_model": "x", "load_in_8bit": True, "adapter": "lora"}, scale_down=True)[0]
    assert "load_in_8bit" not in full and full["lora_mlp_kernel"] is False


def test_without_flash_attn_flash_attention_becomes_sdpa_and_says_so() -> None:
    cfg, notes = _reference({"base_model": "x", "attn_implementation": "flash_attention_2"}, flash_attn=False)
    assert cfg["attn_implementation"] == "sdpa"
    assert notes == ["attn_implementation flash_attention_2 -> sdpa"]
    cfg, notes = _reference({"base_model": "x", "flash_attention": True, "flash_attn_rms_norm": True},
                            flash_attn=False)
    assert "flash_attention" not in cfg and "flash_attn_rms_norm" not in cfg and cfg["attn_implementation"] == "sdpa"
    assert notes == ["flash_attention off (no flash-attn package)", "flash_attn_rms_norm off (no flash-attn package)",
                     "attn_implementation flash_attention_2 -> sdpa"]
    cfg, notes = _reference({"base_model": "x", "attn_implementation": "eager"}, flash_attn=False)
    assert cfg["attn_implementation"] == "eager" and notes == []
    cfg, notes = _reference({"base_model": "x", "attn_implementation": "flash_attention_2"})
    assert cfg["attn_implementation"] == "flash_attention_2" and notes == []


def test_the_vocabulary_holds_the_named_tokens_at_the_model_s_ids() -> None:
    named = named_tokens({"special_tokens": {"pad_token": "<|pad|>", "eos_token": "<|end|>"}, "tokens": ["<tool>"]})
    assert named == {"bos_token": "<s>", "eos_token": "<|end|>", "pad_token": "<|pad|>", "unk_token": "<unk>",
                     "<tool>": "<tool>"}
    vocab = synthetic_vocabulary(100, named, {"bos_token_id": 1, "eos_token_id": [7, 8], "pad_token_id": None})
    assert sorted(vocab.values()) == list(range(100))
    assert (vocab["<s>"], vocab["<|end|>"]) == (1, 7)
    assert {vocab["<|pad|>"], vocab["<unk>"], vocab["<tool>"]} == {99, 98, 97}
    assert vocab["w2"] == 2 and "w1" not in vocab
    with pytest.raises(ValueError, match="do not fit"):
        synthetic_vocabulary(3, named, {})


def test_rows_fill_packs_or_reach_the_full_sequence_length() -> None:
    vocab = synthetic_vocabulary(50, named_tokens({}), {})
    packed = dataset_rows(vocab, sequence_len=64, packed=True, tokens=1000)
    assert all(8 <= len(r.split()) <= 32 for r in packed)
    assert sum(len(r.split()) for r in packed) >= 1000
    unpacked = dataset_rows(vocab, sequence_len=64, packed=False, tokens=200)
    assert {len(r.split()) for r in unpacked} == {62} and len(unpacked) == 4
    assert all(w.startswith("w") for r in packed + unpacked for w in r.split())
    assert tokens_needed({"gradient_accumulation_steps": 4, "micro_batch_size": 2, "sequence_len": 2048}, 3) \
        == 2 * 4 * 8 * 2048


AXOLOTL_OUTPUT = """\
 50%|#####     | 1/2 [00:01<00:01]  {'loss': '6.259', 'memory/max_active (GiB)': '4.1', \
'memory/max_allocated (GiB)': '4.05', 'memory/device_reserved (GiB)': '4.62', 'epoch': '0.5'}
{'loss': '6.269', 'memory/max_active (GiB)': '1.3', 'memory/max_allocated (GiB)': '1.31', \
'memory/device_reserved (GiB)': '4.62', 'tokens/train_per_sec_per_gpu': '8680'}
{'train_runtime': '1.729', 'memory/max_active (GiB)': '0.2', 'memory/max_allocated (GiB)': '0.2', \
'memory/device_reserved (GiB)': '4.62'}
"""


def test_axolotl_s_per_step_memory_log_is_read_without_the_summary_line() -> None:
    logs = memory_logs(AXOLOTL_OUTPUT)
    assert logs == [{"max_active_gib": 4.1, "max_allocated_gib": 4.05, "max_reserved_gib": 4.62},
                    {"max_active_gib": 1.3, "max_allocated_gib": 1.31, "max_reserved_gib": 4.62}]
    assert peaks(logs) == {"max_active_gib": 4.1, "first_step_max_active_gib": 4.1, "max_allocated_gib": 4.05,
                           "first_step_max_allocated_gib": 4.05, "max_reserved_gib": 4.62,
                           "first_step_max_reserved_gib": 4.62}
    assert peaks([])["max_allocated_gib"] is None


def test_rows_are_the_published_rows_with_an_example_config() -> None:
    rows = selected_rows(None)
    assert rows and all(r.get("config_file") for r in rows)
    assert [r["id"] for r in selected_rows(["axolotl-hunyuan-05b-qlora"])] == ["axolotl-hunyuan-05b-qlora"]
    with pytest.raises(SystemExit, match="gist-z2-ckpt-bs1"):
        selected_rows(["gist-z2-ckpt-bs1"])


def test_corpus_examples_run_beside_the_published_rows() -> None:
    nemotron = "fixtures/axolotl/examples/nemotron/nemotron-mini-4b-qlora.yaml"
    assert selected_rows(None, [nemotron]) == [{"id": "nemotron-mini-4b-qlora", "config_file": nemotron}]
    rows = selected_rows(["axolotl-hunyuan-05b-qlora"], [nemotron])
    assert [r["id"] for r in rows] == ["axolotl-hunyuan-05b-qlora", "nemotron-mini-4b-qlora"]
    with pytest.raises(SystemExit, match="no such example"):
        selected_rows(None, ["fixtures/axolotl/examples/none.yaml"])
