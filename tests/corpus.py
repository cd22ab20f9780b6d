"""The vendored Axolotl corpus (fixtures/axolotl: Axolotl's example configs and DeepSpeed files at one upstream
commit, see its NOTICE): the one place tests find it, and the small sample that cheaper tests use."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "axolotl"

SAMPLE = tuple(CORPUS / p for p in (
    "examples/llama-3/lora-1b.yml",
    "examples/llama-3/fft-8b.yaml",
    "examples/archived/dbrx/fft-ds-zero3.yaml",
    "examples/qwen3/8b-lora-fused-attn.yaml",
    "examples/distributed-parallel/llama-3_1-8b-hsdp-tp.yaml",
    "examples/mistral/mixtral/mixtral.yml",
    "deepspeed_configs/zero2.json",
    "deepspeed_configs/zero3_bf16.json",
))
"""Real configs that reach every kind of check: full fine-tune with a DeepSpeed file, LoRA, FSDP + TP, MoE."""


def corpus_files() -> list[Path]:
    """Every corpus file relative to the corpus root: the example YAMLs, then the DeepSpeed JSONs, sorted."""
    yamls = [*CORPUS.glob("examples/**/*.yml"), *CORPUS.glob("examples/**/*.yaml")]
    return [p.relative_to(CORPUS) for p in sorted(yamls) + sorted(CORPUS.glob("deepspeed_configs/*.json"))]
