"""The Gemma models of the corpus (group "gemma"): each catalog entry's total pinned, and equal to the ``numel`` sum
of the model transformers 5.24 builds from the entry's config.json on the meta device (no memory, no weights); the
corpus configs that name them get a memory verdict."""
from __future__ import annotations

from pathlib import Path

import pytest

from axlint.architectures import Architecture, catalog_lookup
from benchmarks.memory.coverage import classify

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "axolotl" / "examples"

TOTALS = {
    "google/gemma-4-12B": 11_959_730_176,  # computed (model card: 11.95B)
}


@pytest.mark.parametrize("model_id, params", TOTALS.items())
def test_entry_total_is_the_meta_model_numel(model_id: str, params: int) -> None:
    entry = catalog_lookup(model_id)
    arch = Architecture.from_config(model_id, "catalog", entry["config"])
    assert arch.unsized_decoder is None and arch.unsized_vision is None
    assert arch.total_params == params
    fields = {k: v for k, v in entry["config"].items() if k != "model_type"}
    config = transformers.AutoConfig.for_model(entry["config"]["model_type"], **fields)
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == params


def test_gemma_4_12b_it_resolves_to_the_12b() -> None:
    assert catalog_lookup("google/gemma-4-12B-it")["id"] == "google/gemma-4-12B"


@pytest.mark.parametrize("config", ["gemma4-unified/12b-text-lora.yaml", "gemma4-unified/12b-vision-lora.yaml"])
def test_corpus_configs_are_covered(config: str) -> None:
    assert classify(CORPUS / config)[2] == "covered"
