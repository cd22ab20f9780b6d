"""How fast is `axlint check`, next to yamllint on the same files?

    python benchmarks/bench_check.py [--runs 15] [--per-file 30] [--config PATH] [--corpus DIR] [--axlint EXE]

Measures, each as a fresh subprocess (what a pre-commit hook or an editor pays):
  1. one typical config: wall time, median of --runs;
  2. the whole Axolotl corpus (every YAML) in one call: median of a few runs, as `axlint check` runs by default
     (in parallel on Linux: one process per CPU) and with `-j 1` (one process);
  3. the corpus one file per process: mean over --per-file files spread over the corpus (0 = all).
yamllint (default rules) runs on exactly the same files, the two tools in turn (run by run, file by file), so that
the neighbours' load on a shared machine falls on both alike. CPU time (user + sys of the child) is printed too,
because wall time on a busy machine says more about the neighbours than about axlint. By default axlint runs from
this checkout (`python -m axlint`, which in an editable install also pays for the editable-import finder);
`--axlint venv/bin/axlint` times an installed copy instead, as users run it.

Bytecode: this environment may set PYTHONDONTWRITEBYTECODE=1, so every run would compile axlint's sources
again (~0.2 s), which no installed wheel does. The children get a private PYTHONPYCACHEPREFIX and one warm-up
run instead, so both tools are timed with their bytecode cached, as after `pip install`.
Budgets, as ratios against yamllint in the same run: one config <= 1.0x; the corpus in one call <= 0.5x (the
default call, wall time: what a user waits for; the CPU time and the `-j 1` row say what it costs).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "fixtures" / "axolotl" / "examples" / "llama-3" / "lora-1b.yml"
DEFAULT_CORPUS = ROOT / "fixtures" / "axolotl"
ONE_CONFIG_RATIO = 1.0
"""Budget: one config no slower than yamllint on the same file (median wall, both timed in the same run)."""
CORPUS_RATIO = 0.5
"""Budget: the whole corpus in one call (`axlint check` as run by default) in at most half of yamllint's wall
time."""


@dataclass
class Timing:
    wall: float
    cpu: float


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(cmd: list[str], env: dict[str, str]) -> Timing:
    """Wall and CPU time of one subprocess; its exit code must be 0 or 1 (clean or findings)."""
    cpu, start = child_cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return Timing(wall, child_cpu() - cpu)


def medians_alternating(cmds: list[list[str]], env: dict[str, str], runs: int) -> list[Timing]:
    """The median of `runs` timings of each command, the commands run in turn within each round: on a shared
    machine the neighbours' load comes and goes within seconds, and timing one tool's runs after the other's put
    it on one of them only."""
    timings: list[list[Timing]] = [[] for _ in cmds]
    for _ in range(runs):
        for cmd, times in zip(cmds, timings):
            times.append(run_once(cmd, env))
    return [Timing(statistics.median(t.wall for t in times), statistics.median(t.cpu for t in times))
            for times in timings]


def means_per_file(tools: list[list[str]], files: list[Path], env: dict[str, str]) -> list[Timing]:
    """The mean timing of each tool over `files`, one process per file, the tools in turn on each file."""
    timings: list[list[Timing]] = [[] for _ in tools]
    for f in files:
        for tool, times in zip(tools, timings):
            times.append(run_once([*tool, str(f)], env))
    return [Timing(statistics.mean(t.wall for t in times), statistics.mean(t.cpu for t in times))
            for times in timings]


def spread(files: list[Path], count: int) -> list[Path]:
    """`count` files evenly spaced over the sorted list (all of them for 0)."""
    if count <= 0 or count >= len(files):
        return files
    step = len(files) / count
    return [files[int(i * step)] for i in range(count)]


def child_env(pycache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    return {**env, "PYTHONPYCACHEPREFIX": str(pycache), "PYTHONPATH": str(ROOT)}


def fmt(t: Timing) -> str:
    return f"{t.wall * 1e3:8.0f} ms (cpu {t.cpu * 1e3:5.0f})"


def row(label: str, ax: Timing, yl: Timing) -> str:
    return f"{label:<40} {fmt(ax)}  {fmt(yl)}  {ax.wall / yl.wall:5.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of the one-config timing (median)")
    parser.add_argument("--corpus-runs", type=int, default=3, help="runs of the whole-corpus timing (median)")
    parser.add_argument("--per-file", type=int, default=30, help="files timed one per process (0 = all)")
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--axlint", help="an axlint executable to time instead of `python -m axlint`")
    args = parser.parse_args()

    files = sorted([*args.corpus.glob("examples/**/*.yml"), *args.corpus.glob("examples/**/*.yaml")])
    if not files:
        raise SystemExit(f"no YAML files under {args.corpus}/examples")
    axlint = [*([args.axlint] if args.axlint else [sys.executable, "-m", "axlint"]), "check", "-q",
              "--output-format", "concise"]
    yamllint = [sys.executable, "-m", "yamllint", "-f", "parsable"]
    with tempfile.TemporaryDirectory(prefix="axlint-bench-pyc-") as pycache:
        env = child_env(Path(pycache))
        for tool in (axlint, yamllint):  # warm-up: bytecode and axlint's caches (packs, data, dataclass code)
            run_once([*tool, str(args.config)], env)
        one = medians_alternating([[*tool, str(args.config)] for tool in (axlint, yamllint)], env, args.runs)
        corpus = medians_alternating([[*tool, *map(str, files)] for tool in (axlint, [*axlint, "-j", "1"], yamllint)],
                                     env, args.corpus_runs)
        sample = spread(files, args.per_file)
        per_file = means_per_file([axlint, yamllint], sample, env)

    print(f"machine: {len(os.sched_getaffinity(0))} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"python {sys.version.split()[0]}")
    print(f"{'':<40} {'axlint':>22}  {'yamllint':>22}  ratio")
    print(row(f"one config, median of {args.runs}", *one))
    print(row(f"corpus, {len(files)} YAML in one call", corpus[0], corpus[2]))
    print(row("corpus, one call, -j 1 (one process)", corpus[1], corpus[2]))
    print(row(f"corpus, per file (mean of {len(sample)})", *per_file))
    print(f"per file in one process: axlint {corpus[1].wall / len(files) * 1e3:.1f} ms, "
          f"yamllint {corpus[2].wall / len(files) * 1e3:.1f} ms")
    one_ok = one[0].wall <= ONE_CONFIG_RATIO * one[1].wall
    corpus_ok = corpus[0].wall <= CORPUS_RATIO * corpus[2].wall
    print(f"budget: one config <= {ONE_CONFIG_RATIO:.1f}x yamllint: {'PASS' if one_ok else 'FAIL'}; "
          f"corpus <= {CORPUS_RATIO:.1f}x yamllint: {'PASS' if corpus_ok else 'FAIL'}")


if __name__ == "__main__":
    main()
