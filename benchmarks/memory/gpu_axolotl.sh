#!/usr/bin/env bash
# Axolotl's own runs of published.yaml's example configs on one lent GPU machine, in one command: install the wheels
# carried in .whl-axolotl/ (benchmarks/memory/axolotl_wheels.sh), record the machine, run axolotl_reference.py in
# /tmp/axolotl-reference (random weights, data and Axolotl's output stay there) and copy its results to $OUT.
#
#   OUT=DIR bash benchmarks/memory/gpu_axolotl.sh SECONDS ROW_ID ...   # from the repository root;
#       SECONDS: start no row after this long
set -u
OUT=${OUT:-/tmp/axlint-gpu}
WHEELS=.whl-axolotl source benchmarks/memory/gpu_install.sh
nvidia-smi > "$OUT/machine.txt" 2>&1
{ python3 --version; nproc; free -g; df -h /tmp; } >> "$OUT/machine.txt" 2>&1
python3 benchmarks/memory/axolotl_reference.py --out /tmp/axolotl-reference --steps 3 --timeout 300 \
  --deadline "$1" --only "${@:2}" 2>&1 | tee "$OUT/run.log"
cp /tmp/axolotl-reference/axolotl-reference.* "$OUT/"
cat "$OUT/axolotl-reference.md"
