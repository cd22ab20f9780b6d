"""benchmarks/memory/run_matrix.py: how configs share one GPU, and how a report becomes a row of the table."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.memory import run_matrix
from benchmarks.memory.run_matrix import rescore, schedule, summarise, write_results

GIB = 2**30


def _entries(*sizes: float | None) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "estimate_gib": size} for i, size in enumerate(sizes)]


def _run_all(entries: list[dict[str, Any]], *, jobs: int, budget: float, deadline: float = float("inf"),
             seconds: float = 0.05) -> tuple[list[tuple[str, dict[str, Any], bool]], list[set[str]]]:
    """Schedule fake runs that each take `seconds`; return what `done` got and every set of configs that ran at
    once."""
    lock = threading.Lock()
    running: set[str] = set()
    together: list[set[str]] = []
    finished: list[tuple[str, dict[str, Any], bool]] = []

    def run(entry: dict[str, Any]) -> dict[str, Any]:
        with lock:
            running.add(entry["name"])
            together.append(set(running))
        time.sleep(seconds)
        with lock:
            running.discard(entry["name"])
        return {"status": "ok", "name": entry["name"]}

    schedule(entries, run, jobs=jobs, budget_gib=budget, deadline=deadline,
             done=lambda entry, result, shared: finished.append((entry["name"], result, shared)))
    return finished, together


def test_configs_share_the_gpu_while_their_estimates_fit_the_budget() -> None:
    entries = _entries(40, 40, 40, 30)
    finished, together = _run_all(entries, jobs=3, budget=100)
    assert sorted(name for name, _, _ in finished) == ["c0", "c1", "c2", "c3"]
    sizes = {e["name"]: e["estimate_gib"] for e in entries}
    assert max(len(group) for group in together) == 2  # a third 40 GiB config would pass 100 GiB
    assert all(sum(sizes[n] for n in group) <= 100 for group in together)
    assert all(shared for _, _, shared in finished)  # c0 beside c1, then c2 beside c3


def test_a_config_over_the_budget_or_without_an_estimate_runs_alone() -> None:
    finished, together = _run_all(_entries(10, 10, 150, 10, 10, None), jobs=3, budget=100)
    assert {name for name, _, shared in finished if not shared} == {"c2", "c5"}
    assert all(len(group) == 1 for group in together if group & {"c2", "c5"})
    assert {"c0", "c1"} in together and {"c3", "c4"} in together


def test_no_config_starts_after_the_deadline() -> None:
    finished, _ = _run_all(_entries(10, 10, 10), jobs=1, budget=100, deadline=time.monotonic() + 0.02,
                           seconds=0.05)
    assert [(name, result["status"]) for name, result, _ in finished] == [("c0", "ok"), ("c1", "not run"),
                                                                          ("c2", "not run")]


def _report(status: str, allocated: float, device: float, measure: str = "process") -> dict[str, Any]:
    memory = {"peak_allocated_bytes": int(allocated * GIB), "peak_reserved_bytes": int((allocated + 1) * GIB),
              "peak_device_bytes": int(device * GIB), "device_measure": measure,
              "model_states_bytes": int(2 * GIB)}
    rank = {"rank": 0, "status": status, "memory": memory, "notes": ["ran sdpa"],
            "environment": {"gpu": "NVIDIA H200", "driver": "580", "versions": {"torch": "2.11.0"}}}
    if status == "oom":
        rank["oom"] = {"step": 0, "phase": "forward", "message": "CUDA out of memory"}
    return {"status": status, "ranks": [rank], "notes": [],
            "estimate": {"fits": status == "ok", "per_gpu": {"peak_allocated_gib": 11.0, "peak_reserved_gib": 12.0,
                                                             "peak_device_gib": 13.0}}}


def test_a_row_gives_the_estimate_error_against_what_was_measured() -> None:
    row = summarise("a", _report("ok", allocated=10.0, device=12.5))
    assert row["allocated_error_percent"] == 10.0 and row["error_percent"] == 4.0
    assert row["measured"]["device_measure"] == "process" and row["estimate_fits"] is True
    assert row["notes"] == ["ran sdpa"] and row["versions"] == {"torch": "2.11.0"}


def test_an_out_of_memory_run_is_a_fit_call_not_an_error_figure() -> None:
    row = summarise("a", _report("oom", allocated=130.0, device=138.0))
    assert row["status"] == "oom" and row["oom"]["phase"] == "forward"
    assert row["error_percent"] is None and row["allocated_error_percent"] is None


def test_a_whole_gpu_device_figure_is_dropped_when_others_ran_beside_it() -> None:
    shared = summarise("a", _report("ok", allocated=10.0, device=40.0, measure="device"), shared=True)
    assert shared["measured"]["device_gib"] is None and shared["error_percent"] is None
    assert shared["allocated_error_percent"] == 10.0  # the allocator's counters are the process's own
    alone = summarise("a", _report("ok", allocated=10.0, device=12.5, measure="device"), shared=False)
    assert alone["error_percent"] == 4.0


def test_the_table_counts_fit_calls_and_leaves_out_runs_that_stopped(tmp_path: Path) -> None:
    rows = [summarise("fits", _report("ok", allocated=10.0, device=12.5)),
            summarise("ooms", _report("oom", allocated=130.0, device=138.0)),
            summarise("late", {"status": "not run"})]
    json_path, md_path = write_results(rows, tmp_path, "cuda", {"steps": 2, "jobs": 3, "budget_gib": 115.0})
    summary = json.loads(json_path.read_text())["summary"]
    assert summary == {"configs": 3, "ok": 1, "median_abs_error_percent": 4.0, "max_abs_error_percent": 4.0,
                       "median_abs_allocated_error_percent": 10.0, "max_abs_allocated_error_percent": 10.0,
                       "fit_calls_right": 2, "fit_calls": 2}
    assert json_path.name == "results-NVIDIA_H200-" + json_path.name.split("NVIDIA_H200-")[1]
    text = md_path.read_text()
    assert "| ooms | oom | False | 11.0 | 130.0 | - |" in text and "| late | not run | - |" in text
    assert "fit calls right 2 / 2" in text and "torch 2.11.0" in text


def test_rescoring_keeps_the_measurement_and_replaces_the_estimate(tmp_path: Path) -> None:
    row = summarise("a", _report("ok", allocated=10.0, device=12.5))
    new = rescore(row, {"fits": True, "per_gpu": {"peak_allocated_gib": 9.5, "peak_reserved_gib": 11.0,
                                                   "peak_device_gib": 12.0}})
    assert new["measured"] == row["measured"] and new["allocated_error_percent"] == -5.0
    assert new["error_percent"] == -4.0 and "comparison" not in new
    oom = rescore(summarise("b", _report("oom", allocated=130.0, device=138.0)), {"fits": False, "per_gpu": {}})
    assert oom["estimate_fits"] is False and oom["error_percent"] is None
    json_path, md_path = write_results([new], tmp_path, "cuda", {"steps": 2, "jobs": 3, "budget_gib": 115.0,
                                                                 "rescored_on": "1xH200",
                                                                 "notes": ["First note.", "Second."]}, "2026-11-26")
    assert json_path.name == "results-NVIDIA_H200-2026-11-26.json"  # the day it was measured, not the day rescored
    assert json.loads(json_path.read_text())["date"] == "2026-11-26"
    text = md_path.read_text()
    assert "recomputed after the measurement (`run_matrix.py --rescore` on 1xH200)" in text
    assert "\n\nFirst note.\n\nSecond.\n" in text


def test_a_config_past_its_time_is_stopped_with_the_processes_it_started(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """validate's worker runs in a process of its own: a timeout must stop it too, or it keeps its GPU memory under
    the configs that come next. The stand-in worker writes a counter every 20 ms for as long as it lives, each
    value whole (written aside, then renamed: a kill between `>`'s truncation and its write left the file empty)."""
    beat = tmp_path / "beat"
    worker = f"n=0; while true; do n=$((n+1)); echo $n > {beat}.new; mv {beat}.new {beat}; sleep 0.02; done"
    monkeypatch.setattr(run_matrix, "validate_command", lambda *args: ["bash", "-c", f"({worker}) & wait"])
    start = time.monotonic()
    assert run_matrix.measure({"config": "x.yml"}, "cpu", 1, timeout=1.0) == {"status": "timeout"}
    assert time.monotonic() - start < 30 and beat.read_text().strip()
    before = beat.read_text()
    time.sleep(0.5)
    assert beat.read_text() == before


@pytest.mark.parametrize("version, in_place", [("0.8.5", True), ("0.9.1", True), ("0.6.1", True), ("0.2.1", True),
                                               ("0.6.2", False), ("0.8.0", False), ("0.8.2", False), (None, False)])
def test_the_liger_a_run_recorded_decides_how_it_is_rescored(version: str | None, in_place: bool) -> None:
    """liger-kernel 0.6.2 to 0.8.2 add the lm_head gradient through a product and its fp32 copy (axlint models 0.8.0,
    Axolotl's pin); a run on another release is rescored with the in-place add."""
    assert run_matrix.liger_adds_in_place(version) is in_place


def test_a_run_on_liger_085_is_rescored_with_the_in_place_lm_head_gradient() -> None:
    """Llama-3.2-1B full fine-tune with Liger at 8k tokens: with 0.8.5 recorded the estimate is the in-place one
    (10.96 GiB allocated; 11.90 with 0.8.0's copies), which is what the H200 measured (11.03)."""
    entry = {"config": "configs/llama32-1b-full-gc-8k-liger.yml"}
    in_place = run_matrix.rescore_estimate(entry, "1xH200", {"liger-kernel": "0.8.5"})
    assert in_place["per_gpu"]["peak_allocated_gib"] == pytest.approx(10.96, abs=0.01)
    copies = run_matrix.rescore_estimate(entry, "1xH200", {"liger-kernel": "0.8.0"})
    assert copies["per_gpu"]["peak_allocated_gib"] == pytest.approx(11.90, abs=0.01)
