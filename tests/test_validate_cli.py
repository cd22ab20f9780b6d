"""`axlint validate` as a command: help, exit codes, the default device, the missing extra.

The real CPU run through the command is in test_validate_cpu.py, with the other real runs and their guard
against JIT compiles.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.commands import validate as command
from axlint.validate import ValidationReport, extras
from tests.test_validate_cpu import write_config

GIB = 2**30
PROBE = """
import json, sys
from axlint.cli import cli
try:
    cli(args=sys.argv[1:], prog_name="axlint")
except SystemExit as exc:
    print("MODULES " + json.dumps({"exit": exc.code, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["validate", *args])


def cpu_report(rank: dict[str, Any], limit: float | None = None) -> ValidationReport:
    return ValidationReport("c.yml", "m", "llama", "cpu", 1, 2, "direct", None, [rank], memory_limit_gib=limit)


def test_help_names_every_option_and_the_exit_codes() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for option in ("--steps", "--num-gpus", "--device", "--format", "--probe", "--memory-limit-gib", "--hostfile",
                   "--launcher", "--model-config"):
        assert option in result.output
    assert "Exit codes: 0" in result.output and "pip install 'axlint[validate]'" in result.output


def test_missing_extra_exits_2_with_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = extras.importlib.util.find_spec
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None if name == "deepspeed" else real(name))
    result = invoke(str(write_config(tmp_path, stage=3, lora=True)), "--device", "cpu")
    assert result.exit_code == 2
    assert "pip install 'axlint[validate]'" in result.output and "not installed: deepspeed" in result.output


def test_without_a_gpu_the_default_device_is_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU: a line says the run goes to the CPU; QLoRA cannot run there, a ValidationError: exit 2."""
    monkeypatch.setattr("axlint.hardware.detect_local_gpus", lambda: None)
    config = write_config(tmp_path, stage=None, lora=False)
    config.write_text(config.read_text() + "adapter: qlora\nload_in_4bit: true\n")
    result = invoke(str(config))
    assert result.exit_code == 2
    assert "lists no GPU here; running on CPU" in result.stderr
    assert "a 4-bit or 8-bit load (load_in_4bit / load_in_8bit) needs bitsandbytes on a CUDA GPU" in result.stderr


def test_the_launching_process_does_not_import_the_training_stack(tmp_path: Path) -> None:
    """Only the ranks import torch and deepspeed: the extra is checked without importing it (that cost ~5 s)."""
    config = write_config(tmp_path, stage=3, lora=False)
    config.write_text(config.read_text() + "adapter: qlora\nload_in_4bit: true\n")
    done = subprocess.run([sys.executable, "-c", PROBE, "validate", str(config), "--device", "cpu"],
                          capture_output=True, text=True, timeout=120, check=False)
    report = json.loads(done.stdout.rsplit("MODULES ", 1)[1])
    assert report["exit"] == 2 and "load_in_4bit" in done.stderr
    assert not {"torch", "deepspeed", "transformers", "peft"} & set(report["modules"])


@pytest.mark.parametrize(("args", "message"), [
    (["--device", "cpu", "--probe", "sequence_len"], "needs --memory-limit-gib"),
    (["--device", "cpu", "--launcher", "torchrun", "--hostfile", "{hosts}"], "--hostfile needs the deepspeed launcher"),
    (["--steps", "0"], "Invalid value for '--steps'"),
])
def test_options_that_cannot_run_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=2\n")
    config = write_config(tmp_path, stage=2, lora=True)
    result = invoke(str(config), *[a.format(hosts=hosts) for a in args])
    assert result.exit_code == 2 and message in result.output


def test_lora_settings_the_validation_would_leave_out_exit_2(tmp_path: Path) -> None:
    """PEFT's layer replication: the validation's LoRA would run without it, so it refuses before launching
    anything."""
    config = write_config(tmp_path, stage=None, lora=True)
    config.write_text(config.read_text() + "peft_layer_replication: [[0, 2], [1, 2]]\n")
    result = invoke(str(config), "--device", "cpu")
    assert result.exit_code == 2
    assert "`peft_layer_replication` is not validated: the validation wraps the model" in result.output


def test_a_config_that_does_not_parse_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "bad.yml"
    config.write_text("base_model: [unclosed\n")
    result = invoke(str(config), "--device", "cpu")
    assert result.exit_code == 2 and str(config) in result.output


@pytest.mark.parametrize(("rank", "limit", "code", "shown"), [
    ({"rank": 0, "status": "ok", "steps_completed": 2, "losses": [2.0, 1.9], "tokens_per_second": 10.0,
      "memory": {"peak_rss_bytes": 2 * GIB}}, None, 0, "peak RSS 2.000 GiB"),
    ({"rank": 0, "status": "ok", "steps_completed": 2, "losses": [2.0, 1.9], "tokens_per_second": 10.0,
      "memory": {"peak_rss_bytes": 2 * GIB}}, 1.5, 1, "measured peak 2.000 GiB: OVER --memory-limit-gib 1.5"),
    ({"rank": 0, "status": "oom", "oom": {"step": 1, "phase": "backward"}, "memory": {"peak_rss_bytes": GIB}},
     None, 1, "out of memory at step 1 during backward"),
    ({"rank": 0, "status": "error", "message": "launcher exited 1", "log": "Traceback\nRuntimeError: boom"},
     None, 1, "  | RuntimeError: boom"),
])
def test_exit_code_follows_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank: dict[str, Any],
                                      limit: float | None, code: int, shown: str) -> None:
    """Exit 0 only when every rank ran (within the limit); an OOM or a failed rank is a printed result, exit 1."""
    monkeypatch.setattr("axlint.validate.run_validation", lambda *a, **k: cpu_report(rank, limit))
    args = [str(write_config(tmp_path, stage=None, lora=False)), "--device", "cpu"]
    result = invoke(*args, *(["--memory-limit-gib", str(limit)] if limit else []))
    assert result.exit_code == code and shown in result.output


def test_default_device_is_cuda_when_nvidia_smi_lists_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from axlint.hardware import parse_hardware

    monkeypatch.setattr("axlint.hardware.detect_local_gpus", lambda: parse_hardware("8xH100"))
    assert command.default_device() == ("cuda", None)
