"""Run the `axlint validate` CLI on every config of matrix.yaml (one process per config) and write the results.

    python benchmarks/memory/run_matrix.py [--device cuda|cpu] [--steps 3] [--only NAME ...] [--out DIR]

Writes results-<gpu>-<date>.json and .md next to this file (or in --out): per config the estimate, the measured
peaks (allocated, reserved, device; RSS on CPU), the error in percent, the GPU, driver, torch and deepspeed
versions and the date, plus a summary (median and max absolute error of the peak-device estimate).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
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
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        return {"status": "error", "log": (proc.stdout + proc.stderr)[-3000:]}
    return json.loads(proc.stdout)


def summarise(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """The row of one config: estimate vs measured peaks (max over ranks) and the error of the estimate."""
    ranks = report.get("ranks") or []
    mem = [r.get("memory") or {} for r in ranks]
    env = next((r.get("environment") for r in ranks if r.get("environment")), {}) or {}
    est = ((report.get("estimate") or {}).get("per_gpu")) or {}

    def peak(key: str) -> float | None:
        values = [m[key] for m in mem if m.get(key)]
        return round(max(values) / GIB, 3) if values else None

    measured = {"allocated_gib": peak("peak_allocated_bytes"), "reserved_gib": peak("peak_reserved_bytes"),
                "device_gib": peak("peak_device_bytes"), "rss_gib": peak("peak_rss_bytes")}
    reference = measured["device_gib"] or measured["rss_gib"]
    estimate = est.get("peak_device_gib")
    error = round(100 * (estimate - reference) / reference, 1) if reference and estimate is not None else None
    return {"name": name, "status": report.get("status"), "estimate": est, "measured": measured,
            "error_percent": error, "gpu": env.get("gpu"), "driver": env.get("driver"), "torch": env.get("torch"),
            "deepspeed": env.get("deepspeed"), "comparison": report.get("comparison"),
            **({"log": report["log"]} if report.get("log") else {})}


def write_results(rows: list[dict[str, Any]], out: Path, device: str) -> tuple[Path, Path]:
    gpu = next((r["gpu"] for r in rows if r.get("gpu")), None) or ("cpu" if device == "cpu" else "unknown-gpu")
    date = dt.date.today().isoformat()
    errors = [abs(r["error_percent"]) for r in rows if r.get("error_percent") is not None]
    summary = {"configs": len(rows), "ok": sum(r["status"] == "ok" for r in rows),
               "median_abs_error_percent": round(statistics.median(errors), 1) if errors else None,
               "max_abs_error_percent": max(errors) if errors else None}
    stem = out / f"results-{gpu.replace(' ', '_')}-{date}"
    payload = {"date": date, "device": device, "summary": summary, "results": rows}
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    lines = [f"# axlint memory accuracy — {gpu}, {date}", "",
             f"median |error| {summary['median_abs_error_percent']} %, max {summary['max_abs_error_percent']} % "
             f"({summary['ok']}/{summary['configs']} runs ok). Error = estimated peak device vs measured "
             "(RSS on CPU).", "",
             "| config | status | est. device GiB | meas. allocated | meas. reserved | meas. device | RSS | error % |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["measured"]
        lines.append(f"| {r['name']} | {r['status']} | {r['estimate'].get('peak_device_gib', '-')} | "
                     f"{m['allocated_gib'] or '-'} | {m['reserved_gib'] or '-'} | {m['device_gib'] or '-'} | "
                     f"{m['rss_gib'] or '-'} | {r['error_percent'] if r['error_percent'] is not None else '-'} |")
    first = rows[0] if rows else {}
    lines += ["", f"GPU {first.get('gpu')}, driver {first.get('driver')}, torch {first.get('torch')}, "
                  f"deepspeed {first.get('deepspeed')}."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return stem.with_suffix(".json"), stem.with_suffix(".md")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="names from matrix.yaml")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per config")
    args = ap.parse_args(argv)
    entries = yaml.safe_load((HERE / "matrix.yaml").read_text())["configs"]
    entries = [e for e in entries if not args.only or e["name"] in args.only]
    rows = []
    for entry in entries:
        row = summarise(entry["name"], measure(entry, args.device, args.steps, args.timeout))
        print(f"{row['name']}: {row['status']}, error {row['error_percent']} %", flush=True)
        rows.append(row)
    for path in write_results(rows, args.out, args.device):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
