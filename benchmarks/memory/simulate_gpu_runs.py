"""`--simulate` against our own GPU measurements: every run of the results-*.json tables that finished, simulated on
the CPU (the real transformers/PEFT model code on fake tensors) on the stack the run recorded, next to what the GPU
measured and what the analytic estimate says.

    python benchmarks/memory/simulate_gpu_runs.py [--out FILE]

The stack: a run on a liger-kernel that adds the lm_head gradient in place (0.8.5, which the device sessions
installed) is simulated and estimated so (``run_matrix.recorded_run``); axlint itself models Axolotl 0.18.0's pin,
0.8.0. Writes simulate_gpu_runs.md next to this file: per run the
simulated, measured and estimated peak allocated GiB and the errors against the measurement, then the median and
largest errors.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from axlint.memory.estimate import estimate_setup  # noqa: E402
from axlint.simulate import simulate  # noqa: E402
from benchmarks.memory.run_matrix import recorded_run  # noqa: E402

GIB = 2**30
TABLES = {"results-NVIDIA_H200-2026-11-26.json": "1xH200", "results-NVIDIA_H100_80GB_HBM3-2026-11-26.json": "1xH100"}


def compare(config: Path, hardware: str, versions: dict[str, str]) -> dict[str, float]:
    """Simulated and estimated peak allocated GiB of one measured run."""
    run, setup = recorded_run(config, hardware, versions)
    simulated = simulate(run.facts, run.arch, run.hardware, setup=setup)
    return {"simulated": simulated.peak_allocated_bytes / GIB,
            "estimated": estimate_setup(setup, run.arch, run.hardware).peak_allocated / GIB}


def _error(value: float, measured: float) -> float:
    return value / measured - 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "simulate_gpu_runs.md")
    args = parser.parse_args(argv)
    entries = {e["name"]: e for e in yaml.safe_load((HERE / "matrix.yaml").read_text())["configs"]}
    rows = ["| GPU | config | measured GiB | simulated GiB | simulated error | estimated GiB | estimated error |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    sim_errors: list[float] = []
    est_errors: list[float] = []
    started = time.perf_counter()
    for table, hardware in TABLES.items():
        payload: dict[str, Any] = json.loads((HERE / table).read_text())
        for row in payload["results"]:
            measured = (row.get("measured") or {}).get("allocated_gib")
            if row["status"] != "ok" or not measured:
                continue
            found = compare(HERE / entries[row["name"]]["config"], hardware, row.get("versions") or {})
            sim_errors.append(_error(found["simulated"], measured))
            est_errors.append(_error(found["estimated"], measured))
            rows.append(f"| {row.get('gpu') or hardware} | {row['name']} | {measured:.2f} | {found['simulated']:.2f} | "
                        f"{sim_errors[-1]:+.1%} | {found['estimated']:.2f} | {est_errors[-1]:+.1%} |")
            print(rows[-1], flush=True)

    def spread(errors: list[float]) -> str:
        absolute = [abs(e) for e in errors]
        return (f"median {statistics.median(absolute):.1%}, largest {max(absolute):.1%}, within 5 %: "
                f"{sum(a <= 0.05 for a in absolute)} of {len(absolute)}")

    summary = (f"{len(sim_errors)} runs simulated in {time.perf_counter() - started:.0f} s on {platform.machine()} "
               f"(Python {platform.python_version()}). |simulated / measured − 1|: {spread(sim_errors)}. "
               f"|estimated / measured − 1|: {spread(est_errors)}.")
    print(summary)
    args.out.write_text("# `--simulate` against our own GPU measurements\n\n"
                        "Written by `benchmarks/memory/simulate_gpu_runs.py`: every run of the results-*.json tables "
                        "that finished, simulated and estimated on the stack it recorded; peak allocated GiB (PyTorch's "
                        "counter on the GPU, the simulation's tracked tensors on the CPU).\n\n"
                        + "\n".join(rows) + f"\n\n{summary}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
