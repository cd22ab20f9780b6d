"""The CPU path of `axlint validate`: real DeepSpeed ZeRO-2/3 steps with gloo on a scaled-down model."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from axlint.validate import MissingExtraError, ValidationError, require_validate_extras, run_validation
from axlint.validate import extras, worker

ZERO = {
    2: {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "train_batch_size": "auto",
        "gradient_clipping": "auto", "bf16": {"enabled": "auto"},
        "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}},
    3: {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "train_batch_size": "auto",
        "bf16": {"enabled": "auto"},
        "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
        "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                              "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 0,
                              "stage3_max_reuse_distance": 0}},
}

LORA = "adapter: lora\nlora_r: 8\nlora_alpha: 16\nlora_dropout: 0.05\nlora_target_linear: true\n"


def write_config(tmp: Path, *, stage: int | None, lora: bool, model: str = "Qwen/Qwen2.5-0.5B") -> Path:
    text = (f"base_model: {model}\nsequence_len: 64\nmicro_batch_size: 2\ngradient_accumulation_steps: 2\n"
            "learning_rate: 0.0002\nbf16: true\nflash_attention: true\ngradient_checkpointing: true\n"
            "optimizer: adamw_torch_fused\n")
    text += LORA if lora else ""
    if stage is not None:
        (tmp / f"zero{stage}.json").write_text(json.dumps(ZERO[stage]))
        text += f"deepspeed: zero{stage}.json\n"
    path = tmp / "config.yml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("stage", "lora", "procs", "launcher"), [
    (3, True, 1, "auto"),
    (2, False, 1, "auto"),
    (3, False, 2, "torchrun"),
    (2, True, 2, "deepspeed"),
    (None, True, 2, "auto"),
])
def test_cpu_run_measures_every_rank(tmp_path: Path, stage: int | None, lora: bool, procs: int, launcher: str) -> None:
    report = run_validation(write_config(tmp_path, stage=stage, lora=lora), steps=2, num_gpus=procs, device="cpu",
                            probe=None, hostfile=None, launcher=launcher)
    data = report.to_json()
    assert data["status"] == "ok", report.render_text() + json.dumps(data["ranks"])[:3000]
    assert [r["rank"] for r in data["ranks"]] == list(range(procs))
    for rank in data["ranks"]:
        assert rank["steps_completed"] == 2
        assert rank["memory"]["peak_rss_bytes"] > 0 and rank["memory"]["model_states_bytes"] > 0
        assert rank["tokens_per_second"] > 0
        assert len(rank["losses"]) == 2 and all(math.isfinite(x) for x in rank["losses"])
        assert any("flash_attention_2" in n for n in rank["notes"])
    assert data["scaled_config"]["num_hidden_layers"] == 2
    assert data["estimate"]["per_gpu"]["peak_allocated_gib"] > 0
    assert "not GPU memory" in report.render_text()


def test_qlora_on_cpu_is_reported_unsupported(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, stage=None, lora=False)
    cfg.write_text(cfg.read_text() + "adapter: qlora\nload_in_4bit: true\n")
    report = run_validation(cfg, steps=1, num_gpus=1, device="cpu", probe=None, hostfile=None)
    assert report.status == "unsupported"
    assert "QLoRA" in report.ranks[0]["message"]


def test_probe_on_cpu_needs_a_memory_cap(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="--memory-limit-gib"):
        run_validation(write_config(tmp_path, stage=None, lora=True), steps=1, num_gpus=1, device="cpu",
                       probe="micro_batch_size", hostfile=None)


def test_missing_extra_message(monkeypatch: pytest.MonkeyPatch) -> None:
    real = extras.importlib.import_module

    def fake_import(name: str) -> object:
        if name == "deepspeed":
            raise ImportError("No module named 'deepspeed'")
        return real(name)

    monkeypatch.setattr(extras.importlib, "import_module", fake_import)
    with pytest.raises(MissingExtraError, match=r"pip install 'axlint\[validate\]'"):
        require_validate_extras()


def test_out_of_memory_is_a_result(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    def backward_oom(engine: object, spec: object, vocab: int, device: object, step: int, meter: object) -> float:
        with worker._phase(step, "backward"):
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(worker, "torch_step", backward_oom)
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(key, raising=False)
    tiny = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
            "num_key_value_heads": 1, "vocab_size": 128}
    job = {"model_type": "llama", "model_config": tiny, "ds": None, "steps": 2, "device": "cpu",
           "axolotl": {"sequence_len": 16, "micro_batch_size": 1}}
    result = worker.run_rank(job)
    assert result["status"] == "oom"
    assert result["oom"]["step"] == 0 and result["oom"]["phase"] == "backward"
    assert "out of memory" in result["oom"]["message"]
    assert result["memory"]["peak_rss_bytes"] > 0
