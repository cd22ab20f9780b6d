"""benchmarks/memory/peak_breakdown.py: the blocks alive at the peak of a CUDA memory history, by allocating code."""
from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from benchmarks.memory.peak_breakdown import NO_FRAME, breakdown, label, largest_blocks, main

MODEL = {"filename": "venv/site-packages/transformers/models/llama/modeling_llama.py", "line": 90, "name": "forward"}
LINEAR = {"filename": "venv/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}
DROPOUT = {"filename": "venv/site-packages/torch/nn/functional.py", "line": 1400, "name": "dropout"}
PEFT = {"filename": "venv/site-packages/peft/tuners/lora/layer.py", "line": 700, "name": "forward"}


def _events() -> list[dict]:
    return [
        {"action": "alloc", "addr": 1, "size": 100, "frames": [LINEAR, MODEL]},
        {"action": "alloc", "addr": 2, "size": 50, "frames": [DROPOUT, PEFT, MODEL]},
        {"action": "alloc", "addr": 3, "size": 30, "frames": []},
        {"action": "free_requested", "addr": 1},
        {"action": "free_completed", "addr": 1},  # the peak (180) was before this
        {"action": "alloc", "addr": 4, "size": 120, "frames": [LINEAR, MODEL]},  # 200 now: the new peak
        {"action": "free_completed", "addr": 4},
        {"action": "free_completed", "addr": 2},
    ]


def test_the_blocks_alive_at_the_peak_grouped_by_the_code_outside_torch() -> None:
    peak, rows = breakdown(_events(), base_bytes=1000)
    assert peak == 1200
    assert rows == [("allocated before the steps (weights, adapters, buffers)", 1000, 0),
                    ("models/llama/modeling_llama.py:90 forward", 120, 1),
                    ("tuners/lora/layer.py:700 forward [dropout]", 50, 1),
                    (NO_FRAME, 30, 1)]


def test_a_frame_inside_torch_only_is_named_by_its_outermost_frame() -> None:
    assert label([DROPOUT, LINEAR]) == "nn/modules/linear.py:125 forward [dropout]"
    assert label([]) == NO_FRAME


def test_the_command_reads_a_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "memory-rank0.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [_events()]}))
    assert main([str(path), "--top", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "peak allocated 0.000 GiB" and "modeling_llama.py:90 forward" in out[1]
    assert out[2].endswith("(2 more)")


def test_an_environment_folder_named_torch_is_not_torch() -> None:
    peft = {"filename": "envs/torch/lib/python3.12/site-packages/peft/tuners/lora/layer.py", "line": 7, "name": "f"}
    torch = {"filename": "envs/torch/lib/python3.12/site-packages/torch/nn/functional.py", "line": 3, "name": "g"}
    assert label([torch, peft]) == "tuners/lora/layer.py:7 f [g]"


def test_the_largest_blocks_at_the_peak_with_their_stacks() -> None:
    lines = largest_blocks(_events(), 2)
    assert lines[0] == "peak after event 6 of 8"
    assert lines[1] == "    0.000 GiB  transformers/models/llama/modeling_llama.py:90 forward"
    assert lines[2] == ("    0.000 GiB  peft/tuners/lora/layer.py:700 forward"
                        " < transformers/models/llama/modeling_llama.py:90 forward")
