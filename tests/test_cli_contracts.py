"""What a user of a fresh clone relies on: fixes that a guessed GPU never writes, shared DeepSpeed files left alone
unless every config needs the change, `--hardware local` for check too, stdin for estimate and validate, closed
pipes ending quietly, and a CPU validation that reports its own figures only."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.validate import ValidationReport
from tests.corpus import ROOT

GIB = 2**30
FFT = (ROOT / "fixtures" / "llama3-8b-fft-zero3.yml").read_text()
DS = (ROOT / "fixtures" / "ds_zero3.json").read_text()


def run(args: list[str], cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None) -> CliRunner:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner(env=env).invoke(cli, args, input=stdin)
    finally:
        os.chdir(old)


# ------------------------------------------------------------------------------------- guessed GPUs never write

def test_fix_write_leaves_memory_fixes_alone_when_the_gpus_are_assumed(tmp_path):
    (tmp_path / "c.yml").write_text(FFT)
    (tmp_path / "ds_zero3.json").write_text(DS)
    result = run(["fix", "--write", "--unsafe-fixes", "--select", "MEM,PERF", "c.yml"], tmp_path)
    assert (tmp_path / "c.yml").read_text() == FFT  # gradient checkpointing etc. were shown, not written
    assert "memory judged for an assumed 8×H100-80GB: set `hardware`" in result.stderr
    longer = FFT.replace("sequence_len: 8192", "sequence_len: 12288")  # checkpointing is part of every fix
    (tmp_path / "c.yml").write_text(longer)
    declared = run(["fix", "--write", "--select", "MEM003", "--hardware", "8xH100", "c.yml"], tmp_path)
    assert declared.exit_code == 0, declared.stderr  # declared GPUs: MEM003's safe fix is written
    assert (tmp_path / "c.yml").read_text() == longer.replace("gradient_checkpointing: false",
                                                              "gradient_checkpointing: true")


# ------------------------------------------------------------------------------------------- shared DeepSpeed files

SHARED_DS = '{\n  "zero_optimization": {"stage": 2},\n  "bf16": {"enabled": "auto"},\n  "train_batch_size": 64\n}\n'
CONFIG = ("base_model: meta-llama/Llama-3.2-1B\nsequence_len: 1024\nmicro_batch_size: {mbs}\n"
          "gradient_accumulation_steps: {gas}\nlearning_rate: 0.0001\nbf16: true\ndeepspeed: ds/shared.json\n"
          "datasets:\n  - path: x\n    type: alpaca\n")


def shared_project(root: Path, second_mbs: int) -> None:
    (root / "ds").mkdir()
    (root / "ds" / "shared.json").write_text(SHARED_DS)
    for name, mbs, gas in (("one.yml", 1, 1), ("two.yml", second_mbs, 1)):
        (root / "configs").mkdir(exist_ok=True)
        (root / "configs" / name).write_text(CONFIG.format(mbs=mbs, gas=gas))


def test_a_shared_deepspeed_file_is_not_changed_for_one_config(tmp_path):
    # two.yml runs 8 GPUs × 8 × 1 = 64 = train_batch_size; one.yml (8 × 1 × 1) needs "auto": not written
    shared_project(tmp_path, second_mbs=8)
    result = run(["fix", "--write", "--hardware", "8xH100", "--select", "DS100", "configs/one.yml"], tmp_path)
    assert (tmp_path / "ds" / "shared.json").read_text() == SHARED_DS
    assert result.exit_code == 1
    assert ("DS100 fix (set `train_batch_size` to \"auto\") not applied: this DeepSpeed file is also used by "
            "configs/two.yml, which does not need the change; give configs/one.yml its own copy") in result.stderr


def test_a_shared_deepspeed_file_is_changed_when_every_config_needs_it(tmp_path):
    shared_project(tmp_path, second_mbs=1)  # both run 8 × 1 × 1: both need "auto"
    result = run(["fix", "--write", "--hardware", "8xH100", "--select", "DS100", "configs/one.yml"], tmp_path)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "ds" / "shared.json").read_text() == SHARED_DS.replace("64", '"auto"')


# -------------------------------------------------------------------------------------------------- --hardware

def fake_nvidia_smi(folder: Path) -> dict[str, str]:
    exe = folder / "nvidia-smi"
    exe.write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3, 81559'\necho 'NVIDIA H100 80GB HBM3, 81559'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def test_check_takes_hardware_local_like_estimate(tmp_path, monkeypatch):
    (tmp_path / "c.yml").write_text(FFT)
    (tmp_path / "ds_zero3.json").write_text(DS)
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path)["PATH"])
    result = run(["check", "c.yml", "--hardware", "local", "--output-format", "concise"], tmp_path)
    assert "(on 2×H100-80GB)" in result.stdout and "assum" not in result.stdout
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    refused = run(["check", "c.yml", "--hardware", "local"], tmp_path)
    assert refused.exit_code == 2 and "nvidia-smi found no GPU here" in refused.stderr


def test_an_a100_without_size_is_not_called_assumed(tmp_path):
    (tmp_path / "c.yml").write_text(FFT)
    (tmp_path / "ds_zero3.json").write_text(DS)
    out = run(["estimate", "c.yml", "--hardware", "8xA100"], tmp_path).stdout
    assert "8 × A100-80GB, 79.2 GiB per GPU\n" in out and "(assumed" not in out
    assert "A100 read as the 80 GB card (write A100-40GB for the 40 GB one)" in out


# ------------------------------------------------------------------------------------------------------ stdin

def test_estimate_reads_stdin(tmp_path):
    (tmp_path / "ds_zero3.json").write_text(DS)
    result = run(["estimate", "-", "--stdin-filename", "c.yml", "--hardware", "8xH100"], tmp_path, stdin=FFT)
    from_file = (tmp_path / "c.yml").write_text(FFT) and run(["estimate", "c.yml", "--hardware", "8xH100"], tmp_path)
    assert result.exit_code == from_file.exit_code == 1
    assert result.stdout == from_file.stdout


def test_validate_reads_stdin_through_a_temporary_file(tmp_path, monkeypatch):
    seen = []

    def fake(config, **kwargs):
        seen.append((config.parent.resolve(), config.read_text()))
        return ValidationReport(str(config), "m", "llama", "cpu", 1, 1, "direct", None,
                                [{"rank": 0, "status": "ok", "steps_completed": 1, "losses": [1.0],
                                  "tokens_per_second": 1.0, "memory": {"peak_rss_bytes": GIB}}])

    monkeypatch.setattr("axlint.validate.run_validation", fake)
    result = run(["validate", "-", "--device", "cpu"], tmp_path, stdin=FFT)
    assert result.exit_code == 0, result.output
    assert seen == [(tmp_path.resolve(), FFT)]
    assert not list(tmp_path.glob(".axlint-stdin-*"))  # removed afterwards


# -------------------------------------------------------------------------------------------------------- pipes

@pytest.mark.parametrize("args", [["rules"], ["check", "fixtures/axolotl/examples", "--output-format", "concise"]])
def test_a_closed_pipe_ends_quietly(args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(f"{sys.executable} -m axlint {' '.join(args)} | head -1", shell=True, cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.count("\n") == 1
    assert done.stderr == "", done.stderr


# ------------------------------------------------------------------------------------------------ CPU validate

def test_a_cpu_validation_reports_its_own_figures_and_no_error_against_the_gpu_estimate():
    estimate = {"per_gpu": {"components_gib": {"weights": 16.0}, "peak_allocated_gib": 33.0,
                            "peak_reserved_gib": 36.0, "peak_device_gib": 37.0}}
    rank = {"rank": 0, "status": "ok", "steps_completed": 2, "losses": [2.0, 1.9], "tokens_per_second": 10.0,
            "memory": {"peak_rss_bytes": int(1.5 * GIB)}}
    report = ValidationReport("c.yml", "m", "llama", "cpu", 1, 2, "direct", None, [rank], estimate)
    text = report.render_text()
    assert report.comparison() == [] and report.to_json()["comparison"] == []
    assert "%" not in text and "estimated" not in text
    assert "measured on CPU: peak RSS 1.500 GiB per rank at most (the process, not a GPU; not compared with the " \
           "GPU estimate)" in text
