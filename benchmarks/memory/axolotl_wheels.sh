#!/usr/bin/env bash
# Fetch into .whl-axolotl/ (or $1) the wheels an offline GPU machine with this workplace's `cuda` image (Python 3.12,
# torch, transformers, accelerate, peft, pandas, pyarrow, scipy, numba, colorama, typer, sentencepiece) lacks to run
# Axolotl 0.18.0's `axolotl.cli.train` (axolotl_reference.py). Run on a machine with a package index, in the
# repository root. Versions: Axolotl 0.18.0's pins where it pins one.
#
# CCE_SOURCE: a clone of Axolotl's fork of Cut Cross-Entropy to build it from (default: GitHub); BNB_CUDA: the CUDA
# version of the GPU machine's torch build (130 for torch 2.11+cu130), whose bitsandbytes library is kept.
#
# The set is what a LoRA/QLoRA training run imports (found with `python -X importtime -m axolotl.cli.train`), less
# what the image has; deepspeed and kernels are imported only when present and are left out. protobuf is carried
# although the image has one: wandb 0.23.1 reads protobuf 3 to 6. Four wheels are slimmed to keep the set under the
# device tool's 64 MiB: wandb without its `bin/` service binaries (Axolotl's callbacks import wandb; nothing here
# starts a wandb run), pycountry without `locales/` (mistral-common imports it through pydantic-extra-types for
# language codes), mistral-common without `data/` (its bundled tokenizer files; reference runs use their own
# word-level tokenizer), and bitsandbytes with only the library for BNB_CUDA (its wheel carries one per CUDA
# release, 59 MB in all). About 33 MiB.
set -euo pipefail
DEST=${1:-.whl-axolotl}
mkdir -p "$DEST"
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
      --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps "${PLAT[@]}" -d "$DEST" \
    axolotl==0.18.0 transformers==5.14.1 tokenizers==0.22.2 huggingface_hub==1.17.0 accelerate==1.13.0 \
    peft==0.19.1 trl==1.8.0 datasets==4.8.4 dill==0.4.0 multiprocess==0.70.18 evaluate==0.4.1 \
    pydantic==2.12.5 pydantic-core==2.41.5 annotated-types==0.7.0 typing-inspection==0.4.2 \
    bitsandbytes==0.49.1 liger-kernel==0.8.0 torchao==0.17.0 mistral-common==1.11.5 pydantic-extra-types==2.11.1 \
    pycountry==26.2.16 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 \
    rpds-py==2026.9.1 wandb==0.23.1 addict==2.4.0 fire==0.7.1 termcolor==3.3.0 fastcore==2.2.41 art==6.5 \
    python-dotenv==1.0.1 posthog==6.7.11 distro==1.9.0 backoff==2.2.1 platformdirs==4.14.7 sniffio==1.3.1 \
    pytz==2025.2 hjson==3.1.0 einops==0.8.2 protobuf==6.33.6
CCE="cut-cross-entropy @ git+https://github.com/axolotl-ai-cloud/ml-cross-entropy.git@5f0c7a7"
if [ -n "${CCE_SOURCE:-}" ]; then
  CCE=$(mktemp -d)/ml-cross-entropy
  git clone -q "$CCE_SOURCE" "$CCE" && git -C "$CCE" checkout -q 5f0c7a7
fi
python3 -m pip wheel -q --no-deps -w "$DEST" axolotl-contribs-lgpl==0.0.7 axolotl-contribs-mit==0.0.6 "$CCE"
python3 - "$DEST" "${BNB_CUDA:-130}" <<'EOF'
"""Rewrite four wheels without the files named above (and their RECORD lines)."""
import re
import sys
import zipfile
from pathlib import Path

cuda = sys.argv[2]
DROP = {"wandb-": r"wandb/bin/", "pycountry-": r"pycountry/locales/", "mistral_common-": r"mistral_common/data/",
        "bitsandbytes-": rf"bitsandbytes/libbitsandbytes_(?!cuda{cuda}\.so|cpu\.so)"}
for wheel in Path(sys.argv[1]).glob("*.whl"):
    pattern = next((re.compile(p) for name, p in DROP.items() if wheel.name.startswith(name)), None)
    if pattern is None:
        continue
    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if pattern.match(item.filename):
                continue
            data = src.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                data = b"".join(line for line in data.splitlines(keepends=True)
                                if not pattern.match(line.decode()))
            dst.writestr(item, data)
    slim.replace(wheel)
EOF
du -sh "$DEST"
