"""Start the ranks of a validation run with an existing launcher and collect their JSON results.

One process: the worker directly, with the rendezvous variables set. Several processes on one machine: `torchrun`
(`python -m torch.distributed.run`), or DeepSpeed's launcher (`python -m deepspeed.launcher.runner`, the `deepspeed`
command) which is also the one that takes a `--hostfile` for several nodes.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

WORKER = "axlint.validate.worker"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch_command(job_path: Path, *, processes: int, launcher: str, hostfile: Path | None, port: int) -> list[str]:
    """The command line that starts every rank of the worker on `job_path`."""
    py = sys.executable
    if launcher == "deepspeed":
        cmd = [py, "-m", "deepspeed.launcher.runner", "--master_port", str(port)]
        cmd += ["--hostfile", str(hostfile)] if hostfile else ["--num_gpus", str(processes), "--master_addr", "127.0.0.1"]
        return cmd + ["--module", "--no_local_rank", WORKER, str(job_path)]
    if launcher == "torchrun":
        return [py, "-m", "torch.distributed.run", "--nproc_per_node", str(processes), "--master_addr", "127.0.0.1",
                "--master_port", str(port), "-m", WORKER, str(job_path)]
    return [py, "-m", WORKER, str(job_path)]


def choose_launcher(processes: int, hostfile: Path | None, has_deepspeed: bool, requested: str = "auto") -> str:
    """`deepspeed` for a hostfile or a multi-process DeepSpeed run, `torchrun` for multi-process DDP, else `direct`."""
    if requested != "auto":
        return requested
    if hostfile is not None or (processes > 1 and has_deepspeed):
        return "deepspeed"
    return "torchrun" if processes > 1 else "direct"


def worker_env(device: str, port: int, processes: int) -> dict[str, str]:
    """Environment of the ranks: rendezvous defaults for a direct launch, the CPU recipe for `--device cpu`
    (one OpenMP thread per rank when several share the cores, as torchrun does)."""
    env = dict(os.environ)
    env.update({"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    if device == "cpu":
        env.update({"DS_ACCELERATOR": "cpu", "GLOO_SOCKET_IFNAME": "lo", "CUDA_VISIBLE_DEVICES": ""})
        if processes > 1:
            env["OMP_NUM_THREADS"] = "1"
    return env


def run_ranks(job: dict[str, Any], work_dir: Path, *, processes: int, launcher: str, hostfile: Path | None,
              timeout: float | None = None) -> tuple[list[dict[str, Any]], str]:
    """Write the job, launch it, and return (per-rank results sorted by rank, the launcher's output tail)."""
    job = {**job, "out_dir": str(work_dir)}
    job_path = work_dir / "job.json"
    job_path.write_text(json.dumps(job))
    port = free_port()
    cmd = launch_command(job_path, processes=processes, launcher=launcher, hostfile=hostfile, port=port)
    proc = subprocess.run(cmd, env=worker_env(job["device"], port, processes), capture_output=True, text=True,
                          timeout=timeout, check=False)
    results = [json.loads(p.read_text()) for p in sorted(work_dir.glob("rank-*.json"))]
    results.sort(key=lambda r: r["rank"])
    tail = (proc.stdout + proc.stderr)[-4000:]
    if not results:
        return [{"rank": 0, "status": "error", "log": tail,
                 "message": f"launcher exited {proc.returncode} and no rank wrote a result"}], tail
    return results, tail
