"""The oracle's own virtual environment: the real Axolotl stack pinned in `requirements.txt`, built once per
requirements file under `build/oracle/` (ignored by git) and reused while the pins do not change.

torch goes in first as `torch==2.13.0`, the CPU build pip finds on these machines, so nothing pulls a CUDA build;
everything else is installed with `--no-deps` from the pinned list, because Axolotl's own pins (exact versions of
transformers, pydantic, accelerate) clash with axlint's test extras and would drag in its whole training stack.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

from tests.corpus import ROOT

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
TORCH = "torch==2.13.0"


def oracle_python() -> Path:
    """The oracle venv's python, building the venv first if this requirements file has none yet."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes() + TORCH.encode()).hexdigest()[:12]
    home = ROOT / "build" / "oracle" / digest
    python = home / "bin" / "python"
    done = home / ".complete"
    if done.exists():
        return python
    venv.EnvBuilder(with_pip=True, clear=True).create(home)
    env = {**os.environ, "DS_BUILD_OPS": "0", "DS_ACCELERATOR": "cpu"}  # DeepSpeed without its CUDA kernels
    for args in ([TORCH], ["--no-deps", "-r", str(REQUIREMENTS)]):
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                       check=True, stdout=sys.stderr, env=env)
    done.write_text("ok\n")
    return python


def judge(python: Path, items: list[dict], cwd: Path, script: str = "judge.py") -> dict[str, dict]:
    """Verdicts of `script` (judge.py or ds_judge.py, run with `python` in `cwd`) on `items`, by id."""
    lines = "".join(json.dumps(item) + "\n" for item in items)
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "PYTHONPATH": str(ROOT)}  # the judges import the checkout's axlint
    done = subprocess.run([str(python), str(HERE / script)], input=lines, capture_output=True, text=True,
                          cwd=cwd, check=True, env=env)
    verdicts = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {v["id"]: v for v in verdicts}
