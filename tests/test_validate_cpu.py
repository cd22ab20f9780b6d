"""The CPU path of `axlint validate`: real DeepSpeed ZeRO-2/3 steps with gloo on a scaled-down model.

Every case starts real processes through the launcher the product picks: DeepSpeed's launcher (ZeRO-3, LoRA,
2 processes), torchrun (ZeRO-2, full fine-tuning, 2 processes; DDP without DeepSpeed, 2 processes) and the
worker directly (ZeRO-3, full fine-tuning, bf16, 1 process, through the `axlint validate` command in a
subprocess). bf16 matmuls cost about 5x the fp32 ones on a CPU without bf16 units (2.8 s against 0.5 s for the
steps of one rank), so only that case runs bf16.

Each rank costs ~8 s of CPU, most of it importing torch, transformers, peft and deepspeed on one core, and a
launcher starts its ranks only after its own imports; so the cases start together in `cpu_runs`, two at a time,
and each test waits for its own.

`cpu_runs` points TORCH_EXTENSIONS_DIR at an empty folder, which must stay empty: a JIT build of a DeepSpeed op
(shm all-reduce, FusedAdam, CPUAdam) would need a C++ compiler and 25-45 s on a fresh CI machine. It also gives
every rank one OpenMP thread: with two, a rank waits at every parallel region for a thread whose core another
process holds (measured on the shared 2-core CI machine: the same steps took 13.5 s instead of 0.4 s).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import pytest

from axlint.validate import ValidationError, ValidationReport, run_validation, worker

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


class Case(NamedTuple):
    stage: int | None
    lora: bool
    procs: int
    launcher: str
    expected_launcher: str


CASES = {
    "zero3-lora-2proc": Case(3, True, 2, "auto", "deepspeed"),
    "zero2-full-2proc": Case(2, False, 2, "torchrun", "torchrun"),
    "ddp-full-2proc": Case(None, False, 2, "auto", "torchrun"),
}
CLI_CASE = "cli-zero3-full-1proc-bf16"  # through `axlint validate` in a subprocess; the one-process case


def write_config(tmp: Path, *, stage: int | None, lora: bool, bf16: bool = False,
                 model: str = "Qwen/Qwen2.5-0.5B") -> Path:
    text = (f"base_model: {model}\nsequence_len: 64\nmicro_batch_size: 2\ngradient_accumulation_steps: 2\n"
            f"learning_rate: 0.0002\nbf16: {str(bf16).lower()}\nflash_attention: true\n"
            "gradient_checkpointing: true\noptimizer: adamw_torch_fused\n")
    text += LORA if lora else ""
    if stage is not None:
        (tmp / f"zero{stage}.json").write_text(json.dumps(ZERO[stage]))
        text += f"deepspeed: zero{stage}.json\n"
    path = tmp / "config.yml"
    path.write_text(text)
    return path


def run_case(tmp: Path, case: Case) -> ValidationReport:
    return run_validation(write_config(tmp, stage=case.stage, lora=case.lora), steps=2, num_gpus=case.procs,
                          device="cpu", probe=None, hostfile=None, launcher=case.launcher)


def run_cli(tmp: Path) -> subprocess.CompletedProcess[str]:
    """`axlint validate --device cpu --steps 2 --format json` on ZeRO-3, full fine-tuning, bf16, one process."""
    config = write_config(tmp, stage=3, lora=False, bf16=True)
    return subprocess.run([sys.executable, "-m", "axlint", "validate", str(config), "--device", "cpu", "--steps", "2",
                           "--format", "json"], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def extensions_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("torch_extensions")


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory: pytest.TempPathFactory, extensions_dir: Path) -> Iterator[dict[str, Future[Any]]]:
    """Every case started in the background, two at a time (the largest first); name -> its future."""
    with pytest.MonkeyPatch.context() as env, ThreadPoolExecutor(max_workers=2) as pool:
        env.setenv("TORCH_EXTENSIONS_DIR", str(extensions_dir))
        env.setenv("OMP_NUM_THREADS", "1")
        runs: dict[str, Future[Any]] = {name: pool.submit(run_case, tmp_path_factory.mktemp(name), case)
                                        for name, case in CASES.items()}
        runs[CLI_CASE] = pool.submit(run_cli, tmp_path_factory.mktemp(CLI_CASE))
        yield runs


def assert_measured(data: dict[str, Any], procs: int, *, trainable_is_all: bool) -> None:
    """Every rank ran both steps with finite losses and reported its memory and speed."""
    assert data["status"] == "ok", json.dumps(data["ranks"])[:3000]
    assert [r["rank"] for r in data["ranks"]] == list(range(procs))
    for rank in data["ranks"]:
        assert rank["steps_completed"] == 2 and rank["world_size"] == procs
        assert rank["memory"]["peak_rss_bytes"] > 0 and rank["memory"]["model_states_bytes"] > 0
        assert rank["tokens_per_second"] > 0
        assert len(rank["losses"]) == 2 and all(math.isfinite(x) for x in rank["losses"])
        assert any("flash_attention_2" in n for n in rank["notes"])
        assert (rank["trainable_parameters"] == rank["parameters"]) is trainable_is_all
    assert data["scaled_config"]["num_hidden_layers"] == 2
    assert data["estimate"]["per_gpu"]["peak_allocated_gib"] > 0
    assert data["peak_gib"] > 0


@pytest.mark.parametrize("name", CASES)
def test_cpu_run_measures_every_rank(cpu_runs: dict[str, Future[Any]], name: str) -> None:
    case = CASES[name]
    report = cpu_runs[name].result()
    data = report.to_json()
    assert_measured(data, case.procs, trainable_is_all=not case.lora)
    assert data["launcher"] == case.expected_launcher
    text = report.render_text()
    assert "not GPU memory" in text and "ran sdpa instead" in text
    assert sum(line.startswith("rank ") for line in text.splitlines()) == case.procs


def test_cli_cpu_run_prints_json_per_rank(cpu_runs: dict[str, Future[Any]]) -> None:
    result = cpu_runs[CLI_CASE].result()
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    assert_measured(data, 1, trainable_is_all=True)
    assert data["device"] == "cpu" and data["launcher"] == "direct" and data["within_limit"] is None
    assert any("torch_adam" in n for n in data["ranks"][0]["notes"])


def test_no_deepspeed_op_was_compiled(cpu_runs: dict[str, Future[Any]], extensions_dir: Path) -> None:
    for run in cpu_runs.values():
        run.result()
    assert not any(extensions_dir.iterdir()), f"JIT-compiled: {sorted(extensions_dir.rglob('*'))[:5]}"


def test_probe_on_cpu_needs_a_memory_cap(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="--memory-limit-gib"):
        run_validation(write_config(tmp_path, stage=None, lora=True), steps=1, num_gpus=1, device="cpu",
                       probe="micro_batch_size", hostfile=None)


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
    job = {"model_type": "llama", "model_config": tiny, "ds_raw": None, "steps": 2, "device": "cpu",
           "axolotl": {"sequence_len": 16, "micro_batch_size": 1}}
    result = worker.run_rank(job)
    assert result["status"] == "oom"
    assert result["oom"]["step"] == 0 and result["oom"]["phase"] == "backward"
    assert "out of memory" in result["oom"]["message"]
    assert result["memory"]["peak_rss_bytes"] > 0
