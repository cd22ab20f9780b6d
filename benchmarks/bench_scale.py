"""How check and fix grow with the number of findings: a config with N keys that each draw one finding.

    python benchmarks/bench_scale.py [--sizes 250 2000 10000] [--repeat 3]

Two shapes of config, each at every size N:

* `empty`: N unknown keys with no value (AX017, each with a safe delete fix): N findings, N fixes in one pass;
* `typos`: N misspelt keys with a value (AX010 with a did-you-mean, no fix): N findings and N suggestions.

For each, `check` (lint_paths) and `fix` (fix_paths with --unsafe-fixes, in memory) run in this process, best of
`--repeat` (each cold: the did-you-mean cache emptied); printed with the time per finding and its ratio to the smallest size. Linear growth keeps the ratio
near 1; the budget is a ratio under 2 at the largest size (PASS/FAIL).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from axlint.packs import load_rules  # noqa: E402
from axlint.fixer import fix_paths  # noqa: E402
from axlint.lint import LintOptions, lint_paths  # noqa: E402
from axlint.schemas.validator import _close_match_cached  # noqa: E402

HEAD = ("base_model: meta-llama/Llama-3.1-8B\nlearning_rate: 0.0001\nmicro_batch_size: 1\n"
        "gradient_accumulation_steps: 1\ndatasets:\n  - path: a\n    type: alpaca\n")
TYPOS = ("learnig_rate", "sequnce_len", "micro_batch_sise", "num_epoch", "optimzer", "lora_rr", "warmup_stepz")
MAX_RATIO = 2.0


def config(shape: str, n: int) -> str:
    if shape == "empty":
        return HEAD + "".join(f"unknown_key_{i}:\n" for i in range(n))
    return HEAD + "".join(f"{TYPOS[i % len(TYPOS)]}_{i}: {i}\n" for i in range(n))


def best(fn, repeat: int) -> float:  # noqa: ANN001
    """Best of `repeat` cold runs: the did-you-mean cache is emptied first, as at the start of a real run."""
    times = []
    for _ in range(repeat):
        _close_match_cached.cache_clear()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 2000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    options = LintOptions(load_rules())
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.yml"
        warm.write_text(config("typos", 10))
        lint_paths([warm], options)
        for shape in ("empty", "typos"):
            base: dict[str, float] = {}
            for n in args.sizes:
                path = Path(tmp) / f"{shape}-{n}.yml"
                path.write_text(config(shape, n))
                found = len(lint_paths([path], options).diagnostics)
                for step, fn in (("check", lambda: lint_paths([path], options)),
                                 ("fix", lambda: fix_paths([path], options, unsafe=True))):
                    seconds = best(fn, args.repeat if n < 10000 else 1)
                    per = seconds / max(found, 1)
                    ratio = per / base.setdefault(step, per)
                    print(f"{shape:5} {step:5} N={n:>6}  findings={found:>6}  {seconds:7.3f} s  "
                          f"{per * 1e3:6.3f} ms/finding  x{ratio:4.2f}")
                    failed |= ratio > MAX_RATIO
    print("FAIL" if failed else "PASS", f"(budget: time per finding within x{MAX_RATIO} of the smallest size)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
