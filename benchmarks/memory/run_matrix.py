"""Run the `axlint validate` CLI on every config of matrix.yaml (one process per config) and write the results.

    python benchmarks/memory/run_matrix.py [--device cuda|cpu] [--steps 3] [--only NAME ...] [--out DIR]
        [--jobs N --budget-gib GIB] [--deadline SECONDS]

Writes results-<gpu>-<date>.json and .md next to this file (or in --out), again after every config, so a run cut
short keeps what it measured: per config the estimate, the measured peaks (allocated, reserved, device; RSS on CPU),
the error in percent, the GPU, driver, torch and deepspeed versions and the date, plus a summary (median and max
absolute error of the peak-device estimate).

`--jobs N` runs up to N configs at once on one GPU while the estimates of those running add up to at most
`--budget-gib` (a config estimated above the budget runs alone). Each process's allocator counters are its own, and
its device figure is its own NVML entry; a row whose device figure could only be read for the whole GPU
(`device_measure: device`) while others ran beside it has that figure dropped. `--deadline` starts no config after
that many seconds; those left are listed as "not run".
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
GIB = 2**30


def validate_command(config: Path, device: str, steps: int, num_gpus: int) -> list[str]:
    """The `axlint validate` command line of one matrix entry (JSON on stdout)."""
    return [sys.executable, "-m", "axlint", "validate", str(config), "--device", device, "--steps", str(steps),
            "--num-gpus", str(num_gpus), "--format", "json"]


def measure(entry: dict[str, Any], device: str, steps: int, timeout: float) -> dict[str, Any]:
    """One config through the `axlint validate` CLI in its own process, so an OOM or a crash leaves nothing
    behind. Exit 0 and 1 print the report (1: a rank ran out of memory or failed); 2 prints a usage error."""
    cmd = validate_command(HERE / entry["config"], device, steps, int(entry.get("num_gpus", 1)))
    # A session of its own, so that a timeout stops the validate worker too: killing only the CLI left the worker
    # running, holding its GPU memory under the configs that came next.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout"}
    if proc.returncode not in (0, 1) or not stdout.strip():
        return {"status": "error", "log": (stdout + stderr)[-3000:]}
    return json.loads(stdout)


def summarise(name: str, report: dict[str, Any], shared: bool = False) -> dict[str, Any]:
    """The row of one config: estimate vs measured peaks (max over ranks) and the error of the estimate. With
    `shared` (other configs ran on the GPU beside it) a device figure read for the whole GPU is dropped."""
    ranks = report.get("ranks") or []
    mem = [r.get("memory") or {} for r in ranks]
    env = next((r.get("environment") for r in ranks if r.get("environment")), {}) or {}

    def peak(key: str) -> float | None:
        values = [m[key] for m in mem if m.get(key)]
        return round(max(values) / GIB, 3) if values else None

    measured = {"allocated_gib": peak("peak_allocated_bytes"), "reserved_gib": peak("peak_reserved_bytes"),
                "device_gib": peak("peak_device_bytes"), "rss_gib": peak("peak_rss_bytes"),
                "device_measure": next((m["device_measure"] for m in mem if m.get("device_measure")), None)}
    if shared and measured["device_measure"] == "device":
        measured["device_gib"] = None
    return {"name": name, "status": report.get("status"), "measured": measured,
            **_scored(report.get("status"), report.get("estimate") or {}, measured),
            "ran_beside_others": shared, "gpu": env.get("gpu"), "driver": env.get("driver"),
            "versions": env.get("versions") or {}, "comparison": report.get("comparison"),
            "notes": list(dict.fromkeys((report.get("notes") or []) + [n for r in ranks for n in r.get("notes", [])])),
            **({"oom": ranks[0]["oom"]} if ranks and ranks[0].get("oom") else {}),
            **({"log": log} if (log := report.get("log") or next((r["log"] for r in ranks if r.get("log")), None))
               else {})}


def _scored(status: str | None, estimate: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    """The estimate's fields of a row (`axlint estimate --format json`'s per-GPU figures and fit call) and its errors
    against `measured`. A run that ran out of memory stopped short of its peak: it scores a fit call, no error."""
    est = estimate.get("per_gpu") or {}
    ran = status == "ok"
    reference = (measured.get("device_gib") or measured.get("rss_gib")) if ran else None
    return {"estimate": est, "estimate_fits": estimate.get("fits"),
            "error_percent": _error(est.get("peak_device_gib"), reference),
            "allocated_error_percent": _error(est.get("peak_allocated_gib"), measured.get("allocated_gib") if ran else None)}


def _error(estimate: float | None, measured: float | None) -> float | None:
    """The estimate's error in percent of the measured value."""
    if estimate is None or not measured:
        return None
    return round(100 * (estimate - measured) / measured, 1)


def write_results(rows: list[dict[str, Any]], out: Path, device: str, how: dict[str, Any],
                  date: str | None = None) -> tuple[Path, Path]:
    """results-<gpu>-<date>.json and .md in `out`: the rows, their summary, and `how` they ran (steps, jobs,
    budget_gib); `date` is the day they were measured (default today)."""
    gpu = next((r["gpu"] for r in rows if r.get("gpu")), None) or ("cpu" if device == "cpu" else "unknown-gpu")
    date = date or dt.date.today().isoformat()
    errors = [abs(r["error_percent"]) for r in rows if r.get("error_percent") is not None]
    allocated = [abs(r["allocated_error_percent"]) for r in rows if r.get("allocated_error_percent") is not None]
    calls = [(r["estimate_fits"], r["status"] == "ok") for r in rows
             if device == "cuda" and r.get("estimate_fits") is not None and r["status"] in ("ok", "oom")]
    summary = {"configs": len(rows), "ok": sum(r["status"] == "ok" for r in rows),
               "median_abs_error_percent": round(statistics.median(errors), 1) if errors else None,
               "max_abs_error_percent": max(errors) if errors else None,
               "median_abs_allocated_error_percent": round(statistics.median(allocated), 1) if allocated else None,
               "max_abs_allocated_error_percent": max(allocated) if allocated else None,
               "fit_calls_right": sum(fits == ran for fits, ran in calls), "fit_calls": len(calls)}
    stem = out / f"results-{gpu.replace(' ', '_')}-{date}"
    payload = {"date": date, "device": device, "how": how, "summary": summary, "results": rows}
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    lines = [f"# axlint memory accuracy — {gpu}, {date}", "",
             f"Peak device: median |error| {summary['median_abs_error_percent']} %, max "
             f"{summary['max_abs_error_percent']} %; peak allocated: median "
             f"{summary['median_abs_allocated_error_percent']} %, max {summary['max_abs_allocated_error_percent']} %; "
             f"fit calls right {summary['fit_calls_right']} / {summary['fit_calls']} "
             f"({summary['ok']}/{summary['configs']} runs ok). Error = (estimate − measured) / measured; device is "
             "the process's own GPU memory (RSS on CPU).", "",
             f"Each config ran `axlint validate --steps {how['steps']}` in its own process: the architecture from "
             "axlint's catalog with random weights, random token ids filling micro_batch_size × sequence_len (a packed "
             f"batch), one warm-up step, then {how['steps']} measured steps; up to {how['jobs']} configs at once on "
             f"the GPU while their estimates added up to at most {how['budget_gib']} GiB. Allocated and reserved are "
             "PyTorch's peak counters, device is the process's NVML entry (CUDA context, allocator segments and "
             "library workspaces)."
             + (f" The estimates were recomputed after the measurement (`run_matrix.py --rescore` on "
                f"{how['rescored_on']}) with the axlint of the commit that wrote this file, on the stack each run "
                "recorded (a liger-kernel that adds the lm_head gradient in place, as 0.8.5 does, is estimated so)."
                if how.get("rescored_on")
                else ""), "",
             "| config | status | estimate fits | est. allocated | meas. allocated | alloc. error % | est. reserved | "
             "meas. reserved | est. device | meas. device | device error % |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, e = r["measured"], r["estimate"]

        def cell(value: Any) -> str:
            return "-" if value is None else str(value)

        lines.append(f"| {r['name']} | {r['status']} | {cell(r.get('estimate_fits'))} | "
                     f"{cell(e.get('peak_allocated_gib'))} | {cell(m['allocated_gib'])} | "
                     f"{cell(r.get('allocated_error_percent'))} | {cell(e.get('peak_reserved_gib'))} | "
                     f"{cell(m['reserved_gib'])} | {cell(e.get('peak_device_gib'))} | "
                     f"{cell(m['device_gib'] or m['rss_gib'])} | {cell(r['error_percent'])} |")
    for note in how.get("notes", []):
        lines += ["", note]
    first = next((r for r in rows if r.get("gpu")), rows[0] if rows else {})
    versions = ", ".join(f"{k} {v}" for k, v in (first.get("versions") or {}).items())
    lines += ["", f"GPU {first.get('gpu')}, driver {first.get('driver')}; {versions}."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return stem.with_suffix(".json"), stem.with_suffix(".md")


def liger_adds_in_place(version: str | None) -> bool:
    """A liger-kernel whose fused linear cross-entropy adds the lm_head gradient in place: before 0.6.2, or 0.8.5
    and later (0.8.2 still adds a product and its fp32 copy per chunk; axlint models Axolotl 0.18.0's pin, 0.8.0)."""
    if not version:
        return False
    release = tuple(int(part) for part in version.split("+")[0].split(".")[:3] if part.isdigit())
    return release < (0, 6, 2) or release >= (0, 8, 5)


def recorded_run(config: Path, hardware: str, versions: dict[str, str]) -> tuple[Any, Any]:
    """(the resolved run, its TrainSetup, None when its model does not resolve) of a measured config as `axlint
    validate` ran it: PEFT's LoRA layers, since
    it writes Axolotl's kernel flags false (``validate.runner.runnable_config``; ``old_stack.outside_axolotl``), on the
    stack the run recorded: a liger-kernel that adds the lm_head gradient in place (``liger_adds_in_place``) gets
    ``old_stack.liger_in_place_weight_grad``."""
    if str(HERE.parents[1]) not in sys.path:
        sys.path.insert(0, str(HERE.parents[1]))
    from axlint.document import load_document
    from axlint.hardware import detect_local_gpus, parse_hardware
    from axlint.memory.setup import read_setup
    from axlint.run import build_run
    from benchmarks.memory.old_stack import liger_in_place_weight_grad, outside_axolotl

    gpus = detect_local_gpus() if hardware == "local" else parse_hardware(hardware)  # "local": this machine's
    run = build_run(load_document(config), hardware=gpus)
    if run.arch is None:
        return run, None
    setup = outside_axolotl(read_setup(run.facts, run.arch))
    if liger_adds_in_place(versions.get("liger-kernel")):
        setup = liger_in_place_weight_grad(setup)
    return run, setup


def rescore_estimate(entry: dict[str, Any], hardware: str, versions: dict[str, str]) -> dict[str, Any] | None:
    """This checkout's estimate of one measured entry as it ran (`recorded_run`), or None for a config whose model
    does not resolve."""
    from axlint.memory.estimate import estimate_setup

    config = HERE / entry["config"]
    run, setup = recorded_run(config, hardware, versions)
    return None if setup is None else estimate_setup(setup, run.arch, run.hardware).to_json(str(config))


def estimated_peak_gib(entry: dict[str, Any]) -> float | None:
    """The estimate's peak device GiB of one entry on one GPU of this machine, which decides what may run beside
    it."""
    try:
        return float((rescore_estimate(entry, "local", {}) or {})["per_gpu"]["peak_device_gib"])
    except (KeyError, TypeError, ValueError):
        return None


def rescore(row: dict[str, Any], estimate: dict[str, Any]) -> dict[str, Any]:
    """The row with this checkout's estimate in place of the one made when it was measured; the measured figures
    stay. The validate comparison of the time is dropped (it compared the old estimate)."""
    out = {**row, **_scored(row["status"], estimate, row["measured"])}
    out.pop("comparison", None)
    return out


def schedule(entries: list[dict[str, Any]], run: Any, *, jobs: int, budget_gib: float, deadline: float,
             done: Any) -> None:
    """Run `run(entry)` for each entry, up to `jobs` at once while the running entries' `estimate_gib` add up to
    at most `budget_gib` (an entry over the budget, or without an estimate, runs alone); in the order given, starting
    none after `deadline` (time.monotonic()). `done(entry, result, shared)` gets each result as it ends, `shared`
    saying whether another config ran beside it at any time."""
    pending = list(entries)
    running: dict[Future[Any], dict[str, Any]] = {}
    shared: dict[str, bool] = {}

    def load() -> float:
        return sum(e["estimate_gib"] if e.get("estimate_gib") is not None else budget_gib for e in running.values())

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        while pending or running:
            while pending and time.monotonic() < deadline and len(running) < jobs:
                need = pending[0].get("estimate_gib")
                alone = need is None or need > budget_gib
                if running and (alone or load() + need > budget_gib):
                    break
                entry = pending.pop(0)
                running[pool.submit(run, entry)] = entry
                if len(running) > 1:
                    for e in running.values():
                        shared[e["name"]] = True
            if not running:
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                entry = running.pop(future)
                done(entry, future.result(), shared.get(entry["name"], False))
    for entry in pending:
        done(entry, {"status": "not run"}, False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="names from matrix.yaml")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per config")
    ap.add_argument("--jobs", type=int, default=1, help="configs run at once on one GPU")
    ap.add_argument("--budget-gib", type=float, default=0.0,
                    help="with --jobs: the most GiB the estimates of the configs running at once may add up to")
    ap.add_argument("--deadline", type=float, default=None, help="start no config after this many seconds")
    ap.add_argument("--rescore", type=Path, metavar="RESULTS_JSON",
                    help="measure nothing: give each row of RESULTS_JSON this checkout's estimate and rewrite it")
    ap.add_argument("--hardware", default="local", help="with --rescore: the GPU the results were measured on")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    entries = yaml.safe_load((HERE / "matrix.yaml").read_text())["configs"]
    if args.rescore:
        payload = json.loads(args.rescore.read_text())
        by_name = {e["name"]: e for e in entries}
        rows = [rescore(r, rescore_estimate(by_name[r["name"]], args.hardware, r.get("versions") or {}) or {})
                for r in payload["results"]]
        for path in write_results(rows, args.rescore.parent, payload["device"],
                                  {**payload["how"], "rescored_on": args.hardware}, payload["date"]):
            print(path)
        return 0
    entries = [e for e in entries if not args.only or e["name"] in args.only]
    if args.jobs > 1:
        for entry in entries:
            entry["estimate_gib"] = estimated_peak_gib(entry)
    start = time.monotonic()
    deadline = start + args.deadline if args.deadline is not None else float("inf")
    order = {e["name"]: i for i, e in enumerate(entries)}
    rows: list[dict[str, Any]] = []
    how = {"steps": args.steps, "jobs": args.jobs, "budget_gib": args.budget_gib}

    def done(entry: dict[str, Any], report: dict[str, Any], shared: bool) -> None:
        row = summarise(entry["name"], report, shared)
        rows.append(row)
        rows.sort(key=lambda r: order[r["name"]])
        print(f"{time.monotonic() - start:6.0f}s {row['name']}: {row['status']}, error {row['error_percent']} %",
              flush=True)
        write_results(rows, args.out, args.device, how)

    schedule(entries, lambda e: measure(e, args.device, args.steps, args.timeout), jobs=args.jobs,
             budget_gib=args.budget_gib, deadline=deadline, done=done)
    for path in write_results(rows, args.out, args.device, how):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
