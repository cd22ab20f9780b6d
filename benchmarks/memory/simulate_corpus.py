"""`--simulate` against the analytic estimate on the corpus configs of tests/simulate_corpus.py, at full depth.

    python benchmarks/memory/simulate_corpus.py [--layers N] [--out FILE]

Prints and writes (default: simulate_corpus.md next to this file) one row per config: the model, its layers, the
simulated and the analytic peak allocated GiB per GPU, the difference, the trainable parameters, and the seconds
the simulation took on this machine.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.simulate_corpus import CONFIGS, compare  # noqa: E402

GIB = 2**30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, help="cut every decoder to its first N layers (both sides)")
    parser.add_argument("--out", type=Path, default=HERE / "simulate_corpus.md")
    args = parser.parse_args(argv)
    rows = ["| config | model | layers | simulated GiB | analytic GiB | analytic − simulated | trainable | seconds |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    errors, started = [], time.perf_counter()
    for config in CONFIGS:
        found = compare(config, args.layers)
        errors.append(abs(found.error))
        rows.append(f"| {config.removeprefix('examples/')} | {found.model} | {found.layers} | "
                    f"{found.simulated_bytes / GIB:.2f} | {found.analytic_bytes / GIB:.2f} | {found.error:+.1%} | "
                    f"{found.analytic_trainable:,} | {found.seconds:.1f} |")
        print(rows[-1], flush=True)
    summary = (f"{len(CONFIGS)} configs in {time.perf_counter() - started:.0f} s on {platform.machine()} "
               f"({platform.python_version()}); |analytic − simulated| / simulated: median "
               f"{statistics.median(errors):.1%}, max {max(errors):.1%}; within 10 %: "
               f"{sum(e <= 0.10 for e in errors)} of {len(errors)}")
    print(summary)
    args.out.write_text("# `--simulate` against the analytic estimate, corpus configs\n\n"
                        "Written by `benchmarks/memory/simulate_corpus.py`"
                        + (f" --layers {args.layers}" if args.layers else " (full depth)") + ".\n\n"
                        + "\n".join(rows) + f"\n\n{summary}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
