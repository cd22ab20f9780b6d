#!/usr/bin/env bash
# The memory matrix on one lent GPU machine, in one command: install the wheels carried in .whl/ (the machine has
# torch, transformers, peft and accelerate but no package index), record the machine, run run_matrix.py with
# three configs at a time, and print the table last.
#
#   OUT=DIR bash benchmarks/memory/gpu_session.sh [SECONDS [RUN_MATRIX OPTIONS]]   # from the repository root;
#       SECONDS: start no config after this long (default 330); e.g. `--only NAME ...` picks configs
# Make .whl/ beforehand (README.md of this folder, "On a GPU").
set -u
OUT=${OUT:-/tmp/axlint-gpu}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
nvidia-smi > "$OUT/machine.txt" 2>&1
{ python3 --version; nproc; free -g; } >> "$OUT/machine.txt" 2>&1
python3 benchmarks/memory/run_matrix.py --device cuda --steps 2 --jobs 3 --budget-gib 115 \
  --deadline "${1:-330}" --timeout 180 --out "$OUT" "${@:2}" 2>&1 | tee "$OUT/run.log"
cat "$OUT"/results-*.md
