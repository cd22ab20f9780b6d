"""Catalog entries of the evidence round (corpus models whose layouts axlint had but whose config.json had not been
found): each entry is built by transformers 5.24 on the meta device and its numel sum must equal axlint's total, the
tower and projector Linears axlint lays out must be the model's, and each corpus config that names the model is
covered by the memory estimate (benchmarks/memory/coverage.py ``classify``)."""
from __future__ import annotations

import pytest

from axlint.architectures import catalog_lookup, resolve_architecture
from benchmarks.memory.coverage import classify
from tests.catalog_models import assert_entry_is_the_meta_model, meta_model
from tests.corpus import CORPUS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


TOWER_ROOTS = ("model.vision_tower", "model.multi_modal_projector")


# model id, total, tower + projector. Where an exact total was published the entry carries it (published_parameters)
# and it must be this total; otherwise the total is computed (the entry's source compares it with the rounded size
# the publisher gives). Either way it must equal the model transformers builds.
ENTRIES = [
    ("axolotl-ai-co/Mistral-Medium-3.5-128B-BF16", 127_704_210_176, 2_678_221_568),  # computed; Mistral: "128B dense"
    ("tiiuae/Falcon-H1-1.5B-Deep-Base", 1_554_872_208, 0),  # published (a loader's check of the safetensors)
    ("tiiuae/Falcon-H1-1.5B-Instruct", 1_554_863_488, 0),  # published (a project's check of the safetensors)
]
CORPUS_CONFIGS = {
    "mistral-medium-3_5/qlora-text.yml": "axolotl-ai-co/Mistral-Medium-3.5-128B-BF16",
    "mistral-medium-3_5/qlora-vision.yml": "axolotl-ai-co/Mistral-Medium-3.5-128B-BF16",
    "falcon-h1/falcon-h1-1b-deep-qlora.yaml": "tiiuae/Falcon-H1-1.5B-Deep-Base",
    "falcon-h1/falcon-h1-1b-qlora-cp.yaml": "tiiuae/Falcon-H1-1.5B-Deep-Base",
    "falcon-h1/falcon-h1-1b-qlora.yaml": "tiiuae/Falcon-H1-1.5B-Instruct",  # names the Base, an alias
}


@pytest.mark.parametrize("model_id, total, tower", ENTRIES, ids=[e[0] for e in ENTRIES])
def test_entry_equals_the_model_transformers_builds(model_id: str, total: int, tower: int) -> None:
    assert catalog_lookup(model_id).get("published_parameters", total) == total
    assert_entry_is_the_meta_model(model_id, total, tower, TOWER_ROOTS)


def test_mistral_medium_3_5_tower_heads_are_104_wide() -> None:
    """Mistral Medium 3.5's Pixtral tower has 16 heads of head_dim 104 (1664 = 16 x 104), not Pixtral's usual 64: the
    attention projections are 1664 square, and the untied output projection is counted beside the embedding."""
    model = meta_model(catalog_lookup("axolotl-ai-co/Mistral-Medium-3.5-128B-BF16")["config"])
    attention = model.model.vision_tower.transformer.layers[0].attention
    assert tuple(attention.q_proj.weight.shape) == (1664, 1664) and attention.head_dim == 104
    arch = resolve_architecture("axolotl-ai-co/Mistral-Medium-3.5-128B-BF16")
    assert arch.embedding_params == arch.lm_head_params == 131072 * 12288


@pytest.mark.parametrize("path, model_id", sorted(CORPUS_CONFIGS.items()))
def test_corpus_configs_are_covered(path: str, model_id: str) -> None:
    corpus_model, _, verdict = classify(CORPUS / "examples" / path)
    assert catalog_lookup(corpus_model)["id"] == model_id
    assert verdict == "covered"


def test_falcon_h1_1_5b_deep_layers() -> None:
    """The deep 1.5B: 66 parallel hybrid layers (attention of 6 heads x 128 beside Mamba-2 of 24 heads x 64 with the
    gated RMSNorm over its 1536 channels), each with a 3072-wide gated MLP, at width 1280; the embedding and the output
    projection are separate 65536 x 1280 matrices."""
    arch = resolve_architecture("tiiuae/Falcon-H1-1.5B-Deep-Base")
    assert arch.num_layers == 66 and arch.embedding_params == arch.lm_head_params == 65536 * 1280
    model = meta_model(catalog_lookup("tiiuae/Falcon-H1-1.5B-Deep-Base")["config"])
    layer = model.model.layers[65]
    assert tuple(layer.self_attn.q_proj.weight.shape) == (768, 1280)
    assert tuple(layer.mamba.norm.weight.shape) == (1536,)
    assert tuple(layer.feed_forward.up_proj.weight.shape) == (3072, 1280)


def test_falcon_h1_1_5b_layers_match_what_a_study_of_the_base_reads() -> None:
    """The 1.5B (Instruct, and the Base by alias): 24 parallel hybrid layers at width 2048, attention of 8 heads / 2 kv
    of 128 beside Mamba-2 of 48 heads x 64 in one group of state 256, so a conv over 3072 + 2 x 256 = 3584 channels (the
    Base's conv state a study reads), and a 4608-wide gated MLP; untied 65537 x 2048 embedding and output projection."""
    arch = resolve_architecture("tiiuae/Falcon-H1-1.5B-Base")
    assert arch.num_layers == 24 and arch.embedding_params == arch.lm_head_params == 65537 * 2048
    model = meta_model(catalog_lookup("tiiuae/Falcon-H1-1.5B-Base")["config"])
    layer = model.model.layers[23]
    assert tuple(layer.self_attn.k_proj.weight.shape) == (256, 2048)
    assert tuple(layer.mamba.conv1d.weight.shape) == (3584, 1, 4)
    assert tuple(layer.mamba.norm.weight.shape) == (3072,)
    assert tuple(layer.feed_forward.down_proj.weight.shape) == (2048, 4608)
