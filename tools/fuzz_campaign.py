"""The long fuzz campaign: `python tools/fuzz_campaign.py --cases 10000 [--seed 2026] [--cli-every 50]`.

Builds seeded hostile variants of the vendored corpus (tests/fuzz/cases.py), checks and fixes each one
(tests/fuzz/judge.py) and prints the failures by kind, the slowest case and, with `--reduce`, the smallest entry
file that still fails for each kind. Exit 1 when any case failed. The quick run in the test suite
(tests/test_fuzz.py) is the same code on a few hundred cases.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fuzz.campaign import reduce_case, run_cases  # noqa: E402


def signature(detail: str) -> str:
    """A failure's detail with folders, numbers and quoted values blanked, to group failures of one cause."""
    detail = re.sub(r"/tmp/axlint-fuzz-[^/]+/\S*", "<path>", detail)
    detail = re.sub(r"`[^`]*`|'[^']*'", "<v>", detail)
    return re.sub(r"\d+", "N", detail)[:160]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--cli-every", type=int, default=50, help="also run the CLI on every N-th case (0: never)")
    parser.add_argument("--reduce", action="store_true", help="reduce the first failure of each kind")
    parser.add_argument("--show", type=int, default=3, help="failures to print per kind")
    args = parser.parse_args()

    started = time.perf_counter()
    done = [0]

    def progress(verdict) -> None:  # noqa: ANN001
        done[0] += 1
        if done[0] % 500 == 0:
            print(f"  {done[0]} cases, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    tally = run_cases(args.seed, range(args.start, args.start + args.cases), cli_every=args.cli_every,
                      progress=progress)
    elapsed = time.perf_counter() - started
    print(f"seed {args.seed}, cases {args.start}..{args.start + args.cases - 1}: {tally.cases} run in {elapsed:.0f} s")
    print(f"failed cases: {len(tally.failed)}")
    for kind in ("traceback", "internal", "hang", "encoding", "unstable", "new-error", "unnamed-change",
                 "unnamed-file", "line-endings", "link"):
        print(f"  {kind:15} {tally.kinds.get(kind, 0)}")
    print(f"slowest case: {tally.slowest[0]:.2f} s  {tally.slowest[1]}")
    signatures = Counter(f"[{kind}] {signature(detail)}" for v in tally.failed for kind, detail in v.failures)
    if signatures:
        print("\nfailures by signature:")
        for text, count in signatures.most_common():
            print(f"  {count:5}  {text}")
    shown: dict[str, int] = {}
    for verdict in tally.failed:
        for kind, detail in verdict.failures:
            if shown.get(kind, 0) < args.show:
                shown[kind] = shown.get(kind, 0) + 1
                print(f"\n[{kind}] {verdict.case.label}\n    {detail}")
                if args.reduce and shown[kind] == 1:
                    small = reduce_case(verdict.case, kind)
                    text = small.files[small.entry].decode("utf-8", "backslashreplace")
                    print("    reduced entry:\n" + "".join(f"      | {line}\n" for line in text.splitlines()))
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
