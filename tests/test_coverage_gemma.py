"""The Gemma models of the corpus (group "gemma"): each catalog entry's total pinned, and equal to the ``numel`` sum
of the model transformers 5.24 builds from the entry's config.json on the meta device (no memory, no weights); the
corpus configs that name them get a memory verdict."""
from __future__ import annotations

import pytest

from axlint.architectures import Architecture, catalog_lookup
from axlint.architectures.audio import gemma4_audio_tower
from axlint.memory.params import named_parameters
from axlint.document import load_document
from axlint.memory.facts import feeds_images
from axlint.run import build_run
from benchmarks.memory.coverage import classify
from tests.catalog_models import meta_model
from tests.corpus import CORPUS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOTALS = {
    "google/gemma-4-12B": 11_959_730_176,  # computed (model card: 11.95B)
    "google/gemma-4-E2B": 5_104_297_504,  # published: a meta build of the checkpoint's config.json
}


@pytest.mark.parametrize("model_id, params", TOTALS.items())
def test_entry_total_is_the_meta_model_numel(model_id: str, params: int) -> None:
    entry = catalog_lookup(model_id)
    arch = Architecture.from_config(model_id, "catalog", entry["config"])
    assert arch.unsized_decoder is None and arch.unsized_vision is None
    assert arch.total_params == params
    assert sum(p.numel() for p in meta_model(entry["config"]).parameters()) == params


@pytest.mark.parametrize("alias, canonical", [("google/gemma-4-12B-it", "google/gemma-4-12B"),
                                              ("google/gemma-4-E2B-it", "google/gemma-4-E2B")])
def test_instruct_checkpoints_resolve_to_their_base(alias: str, canonical: str) -> None:
    assert catalog_lookup(alias)["id"] == canonical


def test_gemma_4_e2b_effective_size() -> None:
    """The model card's "2.3B effective (5.1B with embeddings)": the language model less its per-layer embedding
    table is 2.28B; the table (262144 x 35 x 256) is the largest module."""
    arch = Architecture.from_config("google/gemma-4-E2B", "catalog", catalog_lookup("google/gemma-4-E2B")["config"])
    assert arch.per_layer_table_params == 2_348_810_240 == arch.largest_module_params
    assert arch.decoder_params - arch.per_layer_table_params == 2_279_759_104
    assert (arch.first_kv_shared_layer, arch.layer_intermediate_size(14), arch.layer_intermediate_size(15)) == \
        (15, 6144, 12288)


def test_gemma4_per_layer_width_defaults_to_the_config_class() -> None:
    """hidden_size_per_layer_input absent from config.json is Gemma4TextConfig's default."""
    default = transformers.AutoConfig.for_model("gemma4_text").hidden_size_per_layer_input
    fields = {"model_type": "gemma4_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 128, "vocab_size": 256}
    assert Architecture.from_config("t", "model-config", fields).per_layer_input_size == default


def test_gemma4_audio_tower_defaults_are_the_config_class() -> None:
    """An audio_config that leaves keys out is sized with Gemma4AudioConfig's defaults: the tower transformers builds
    from the default config."""
    config = transformers.AutoConfig.for_model("gemma4_audio")
    with torch.device("meta"):
        tower = transformers.AutoModel.from_config(config)
    linears, others = gemma4_audio_tower({})
    assert sum(lin.params for lin in linears) + others == sum(p.numel() for p in tower.parameters())


GEMMA_3N_E2B_TEXT = catalog_lookup("google/gemma-3n-E2B")["config"]["text_config"]
"""google/gemma-3n-E2B's text_config (the catalog entry; its source says where it was read)."""


def test_gemma_3n_e2b_decoder_is_the_meta_model() -> None:
    """The whole Gemma 3n E2B decoder (AltUp, LAuReL, per-layer embeddings, 10 kv-shared layers) against the
    Gemma3nForCausalLM transformers builds from the same text_config on the meta device: totals and names."""
    model = meta_model(GEMMA_3N_E2B_TEXT)
    arch = Architecture.from_config("google/gemma-3n-E2B-it", "model-config", model.config.to_dict())
    real = {name: p.numel() for name, p in model.named_parameters()}
    assert arch.total_params == sum(real.values()) == 4_435_182_688
    assert dict(named_parameters(arch)) == real
    assert arch.per_layer_table_params == 2_013_265_920 and arch.residual_streams == 4


@pytest.mark.parametrize("config", ["gemma4-unified/12b-text-lora.yaml", "gemma4-unified/12b-vision-lora.yaml"])
def test_corpus_configs_are_covered(config: str) -> None:
    assert classify(CORPUS / "examples" / config)[2] == "covered"


def test_gemma_4_e2b_fed_images_is_not_modelled() -> None:
    """The E2B entry's config.json gives no vision_soft_tokens_per_image, so nothing bounds the tokens an image
    becomes in the tower: the run that feeds images is left unknown (tests/test_tower_activations.py sizes the
    bounded towers)."""
    path = CORPUS / "examples/gemma4/e2b-vision-lora.yaml"
    assert classify(path)[2] == "not modelled: processor_type: AutoProcessor"
    run = build_run(load_document(path))
    assert "vision_soft_tokens_per_image" in feeds_images(run.config, run.arch)["processor_type: AutoProcessor"]
