#!/usr/bin/env bash
# What is alive at the peak of one training step, for each config named, on one lent GPU machine: `axlint validate
# --steps 1` with PyTorch's memory history on (AXLINT_MEMORY_HISTORY), then peak_breakdown.py on it. The configs
# run at once; writes $OUT/<name>.txt (the breakdown) and $OUT/<name>.json (the validate report).
#
#   OUT=DIR bash benchmarks/memory/gpu_peaks.sh NAME...   # names of benchmarks/memory/configs/*.yml
# Make .whl/ beforehand (README.md of this folder, "Run on an offline GPU machine").
set -u
OUT=${OUT:-/tmp/axlint-gpu}
source benchmarks/memory/gpu_install.sh
for name in "$@"; do
  (
    dir=/tmp/history/$name
    mkdir -p "$dir"
    AXLINT_MEMORY_HISTORY=$dir timeout 240 python3 -m axlint validate "benchmarks/memory/configs/$name.yml" \
      --device cuda --steps 1 --format json > "$OUT/$name.json" 2> "$dir/stderr.txt"
    base=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['ranks'][0].get('history_base_bytes', 0))" \
      "$OUT/$name.json" 2>/dev/null || echo 0)
    python3 benchmarks/memory/peak_breakdown.py "$dir/memory-rank0.pickle" --base-bytes "$base" --top 40 --blocks 40 \
      > "$OUT/$name.txt" 2>&1 || tail -20 "$dir/stderr.txt" >> "$OUT/$name.txt"
  ) &
done
wait
head -n 25 "$OUT"/*.txt
