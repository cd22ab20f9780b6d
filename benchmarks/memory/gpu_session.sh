#!/usr/bin/env bash
# The memory matrix on one lent GPU machine, in one command: install the wheels carried in .whl/ (the machine has
# torch, transformers, peft and accelerate but no package index), record the machine, run run_matrix.py with
# three configs at a time, and print the table last.
#
#   OUT=DIR bash benchmarks/memory/gpu_session.sh [SECONDS [RUN_MATRIX OPTIONS]]   # from the repository root;
#       SECONDS: start no config after this long (default 330); e.g. `--only NAME ...` picks configs
# Make .whl/ beforehand (README.md of this folder, "Run on an offline GPU machine").
set -u
OUT=${OUT:-/tmp/axlint-gpu}
source benchmarks/memory/gpu_install.sh
nvidia-smi > "$OUT/machine.txt" 2>&1
{ python3 --version; nproc; free -g; } >> "$OUT/machine.txt" 2>&1
python3 benchmarks/memory/run_matrix.py --device cuda --steps 2 --jobs 3 --budget-gib 115 \
  --deadline "${1:-330}" --timeout 300 --out "$OUT" "${@:2}" 2>&1 | tee "$OUT/run.log"
cat "$OUT"/results-*.md
