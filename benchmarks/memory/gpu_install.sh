# Sourced by the GPU scripts of this folder: install the wheels carried in $WHEELS (default .whl/) into /tmp/site
# (the lent machine has torch, transformers, peft and accelerate but no package index) and set the environment.
# Needs $OUT.
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "${WHEELS:-.whl}"/*.whl \
  > "$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
