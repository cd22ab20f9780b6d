"""In-process costs that a timed test would make flaky on a busy machine: the slowest corpus config and the
analytic estimate.

    python benchmarks/bench_in_process.py [--corpus DIR] [--repeat 5]

1. every YAML of the vendored Axolotl corpus linted in this process (rules, DeepSpeed file, estimate): the
   slowest config, the median and the total, each the best of `--repeat` passes (the first pass, which loads the
   packs and the architecture catalog, is not counted);
2. the analytic estimate of the README fixture (resolved facts -> per-GPU peak), median of 200 calls.
Budgets: the slowest config under 100 ms, the estimate under 5 ms (the cost an editor integration pays per
keystroke-save). Prints PASS/FAIL; the ratios against yamllint are bench_check.py's job.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from axlint.document import load_document  # noqa: E402
from axlint.packs import load_rules, select_rules  # noqa: E402
from axlint.lint import LintOptions, lint_text  # noqa: E402
from axlint.memory.estimate import estimate_memory  # noqa: E402
from axlint.run import build_run  # noqa: E402

SLOWEST_CONFIG_S = 0.100
ESTIMATE_S = 0.005


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "fixtures" / "axolotl")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    files = sorted([*args.corpus.glob("examples/**/*.yml"), *args.corpus.glob("examples/**/*.yaml")])
    options = LintOptions(select_rules(load_rules()))
    for f in files:  # first pass: packs, catalog, imports
        lint_text(f, None, options)
    best = {f: min(_timed(lambda f=f: lint_text(f, None, options)) for _ in range(args.repeat)) for f in files}
    slowest = max(best, key=best.get)
    run = build_run(load_document(ROOT / "fixtures" / "llama3-8b-fft-zero3.yml"))
    calls = [_timed(lambda: estimate_memory(run.facts, run.arch, run.hardware)) for _ in range(200)]
    estimate = statistics.median(calls)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    print(f"corpus, {len(files)} configs: slowest {best[slowest] * 1e3:.1f} ms ({slowest.relative_to(args.corpus)}), "
          f"median {statistics.median(best.values()) * 1e3:.1f} ms, total {sum(best.values()) * 1e3:.0f} ms")
    print(f"estimate of the README fixture: median {estimate * 1e3:.2f} ms of 200 calls")
    print(f"budget: slowest config < {SLOWEST_CONFIG_S * 1e3:.0f} ms: {'PASS' if best[slowest] < SLOWEST_CONFIG_S else 'FAIL'}; "
          f"estimate < {ESTIMATE_S * 1e3:.0f} ms: {'PASS' if estimate < ESTIMATE_S else 'FAIL'}")


if __name__ == "__main__":
    main()
