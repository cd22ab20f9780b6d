"""How many configs of the vendored Axolotl corpus get a memory verdict axlint can stand behind.

    python benchmarks/memory/coverage.py [--corpus DIR] [--out benchmarks/memory/coverage.md]

Every example YAML with a ``base_model`` is linted as `axlint check` would (no network). A config is *covered*
when its model resolves to an architecture axlint can size in full and the run uses nothing the estimate leaves out
(no MEM008 "unknown model", no MEM010 for a part it cannot size or a setting it does not model, such as context or
tensor parallelism); the configs that resolve, whatever their settings, are counted too. Prints the figures, the
configs per model family, and the models that are not covered with how many configs name each and why; then, beyond
the corpus, whether each of ``BEYOND_CORPUS`` resolves from the catalog alone; writes the same as Markdown.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent
sys.path.insert(0, str(ROOT))

from axlint.architectures import Architecture  # noqa: E402
from axlint.architectures.resolve import catalog_match  # noqa: E402
from axlint.document import load_document  # noqa: E402
from axlint.memory.facts import layout_problem, memory_facts, not_modelled, unsized_parts  # noqa: E402
from axlint.run import build_run  # noqa: E402


BEYOND_CORPUS = (
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
    "Qwen/Qwen2.5-Coder-0.5B-Instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct", "Qwen/Qwen2.5-Coder-3B-Instruct",
    "Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen/Qwen2.5-Coder-14B-Instruct", "Qwen/Qwen2.5-Coder-32B-Instruct",
    "Qwen/QwQ-32B", "HuggingFaceTB/SmolLM3-3B", "ibm-granite/granite-3.3-2b-instruct",
    "ibm-granite/granite-3.3-8b-instruct", "microsoft/Phi-4-mini-instruct", "allenai/OLMoE-1B-7B-0924",
    "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3-0324", "Qwen/Qwen3-235B-A22B",
    "Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506", "Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-4B-Instruct",
    "Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3-VL-32B-Instruct", "Qwen/Qwen3-VL-30B-A3B-Instruct",
    "Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-32B-Instruct", "Qwen/Qwen2.5-VL-72B-Instruct",
    "Qwen/Qwen2.5-Math-1.5B", "Qwen/Qwen2.5-Math-7B", "tiiuae/Falcon3-1B-Instruct", "tiiuae/Falcon3-3B-Instruct",
    "tiiuae/Falcon3-7B-Instruct", "tiiuae/Falcon3-10B-Instruct", "mistralai/Codestral-22B-v0.1",
    "mistralai/Mistral-Large-Instruct-2411", "microsoft/Phi-3.5-MoE-instruct", "google/gemma-3n-E4B-it",
    "NousResearch/Hermes-3-Llama-3.1-8B", "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "zai-org/GLM-4.5",
    "THUDM/GLM-4-9B-0414", "meta-llama/Llama-3.2-90B-Vision-Instruct", "nvidia/Llama-3.1-Nemotron-Nano-8B-v1",
)
"""Fine-tuning bases no corpus config names, which earlier reports listed as resolving to nothing (MEM008)."""


def beyond_corpus_rows() -> list[str]:
    """One Markdown row per model of ``BEYOND_CORPUS``: its total parameters and the catalog entry it resolved to,
    or that it does not resolve without ``--model-config``."""
    rows = []
    for model in BEYOND_CORPUS:
        found = catalog_match(model)
        if found is None:
            rows.append(f"| `{model}` | - | does not resolve: pass `--model-config` |")
        else:
            entry, how = found
            arch = Architecture.from_config(model, "catalog", entry["config"], entry.get("published_parameters"))
            rows.append(f"| `{model}` | {arch.total_params / 1e9:.2f} B | {how} |")
    return rows


def classify(path: Path) -> tuple[str, str, str]:
    """(model, family, verdict) of one config: "covered", "unknown model", "unsized: <part>" or "not modelled:
    <settings>"."""
    run = build_run(load_document(path))
    model = str(run.config.get("base_model_config") or run.config.get("base_model") or "")
    if run.arch is None:
        return model, "-", "unknown model"
    unsized = unsized_parts(run.arch)
    facts = None if unsized else memory_facts(run)
    if facts is not None:
        unsized = unsized_parts(run.arch, facts.estimate.setup.prequantized)
    family = run.arch.decoder_type if run.arch.model_type == run.arch.decoder_type \
        else f"{run.arch.model_type} ({run.arch.decoder_type})"
    if unsized:
        return model, family, "unsized: " + ", ".join(unsized.values())
    if facts is None:
        return model, family, "no estimate"
    settings = not_modelled(run.config, run.facts.sharding, run.arch) | layout_problem(run.config, run.facts.sharding)
    return model, family, "not modelled: " + ", ".join(settings) if settings else "covered"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "fixtures" / "axolotl")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("coverage.md"))
    args = parser.parse_args()
    files = sorted([*args.corpus.glob("examples/**/*.yml"), *args.corpus.glob("examples/**/*.yaml")])
    rows = [(f.relative_to(args.corpus), *classify(f)) for f in files]
    rows = [r for r in rows if r[1]]
    covered = [r for r in rows if r[3] == "covered"]
    resolved = [r for r in rows if r[3] == "covered" or r[3].startswith("not modelled")]
    families = collections.Counter(r[2] for r in covered)
    missing = collections.Counter((r[1], r[3]) for r in rows if r[3] != "covered")
    lines = ["# Memory coverage of the vendored Axolotl corpus", "",
             "Written by `benchmarks/memory/coverage.py`.", "",
             f"**{len(covered)} of {len(rows)} configs with a `base_model` covered "
             f"({100 * len(covered) / len(rows):.0f} %).**", "",
             f"{len(resolved)} of {len(rows)} ({100 * len(resolved) / len(rows):.0f} %) resolve to an architecture "
             "axlint sizes in full; the covered ones also use nothing the estimate leaves out (the others feed "
             "images or audio at sizes no config bounds, or use settings it does not model: see the last table).", "",
             "| family | configs |", "| --- | --- |",
             *(f"| {name} | {n} |" for name, n in sorted(families.items(), key=lambda kv: (-kv[1], kv[0]))),
             "", "| model not covered | why | configs |", "| --- | --- | --- |",
             *(f"| `{model}` | {why} | {n} |" for (model, why), n in
               sorted(missing.items(), key=lambda kv: (-kv[1], kv[0]))),
             "", "## Beyond the corpus", "",
             "Fine-tuning bases that no corpus config names, resolved from axlint's catalog alone (no Hugging Face "
             "cache, no network):", "",
             "| model | parameters | catalog entry |", "| --- | --- | --- |", *beyond_corpus_rows()]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)
    print(f"{len(rows)} configs on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
