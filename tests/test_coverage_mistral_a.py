"""The Mistral models of the vendored Axolotl corpus that the mistral-a group covers: Mistral Small 4 (a mistral4
MLA + MoE decoder inside Mistral3ForConditionalGeneration) and Ministral 3 3B Reasoning (a ministral3 decoder in the
same wrapper). Each catalog entry is proven against transformers 5.24: the full-size model is built on the meta
device from the entry's config (no memory, no weights) and axlint's total, vision part, parameter names and module
paths must be the real ones; the totals are pinned to the published sizes the entries' ``source`` names."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture, catalog_lookup, resolve_architecture
from axlint.memory.params import module_paths, named_parameters
from benchmarks.memory.coverage import classify
from tests.catalog_models import meta_model
from tests.corpus import CORPUS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SMALL_4 = "axolotl-ai-co/Mistral-Small-4-119B-2603-BF16"
MINISTRAL_3B = "mistralai/Ministral-3-3B-Reasoning-2512"
VISION_ROOTS = ("model.vision_tower", "model.multi_modal_projector")


def _meta_model(model_id: str) -> Any:
    """Mistral3ForConditionalGeneration of the entry's config.json, built by transformers on the meta device."""
    return meta_model(catalog_lookup(model_id)["config"])


@pytest.fixture(scope="module", params=[SMALL_4, MINISTRAL_3B])
def built(request: pytest.FixtureRequest) -> tuple[Architecture, Any]:
    return resolve_architecture(request.param), _meta_model(request.param)


def test_total_and_vision_part_are_the_real_models(built: tuple[Architecture, Any]) -> None:
    arch, model = built
    params = dict(model.named_parameters())
    assert arch.source == "catalog" and arch.unsized_decoder is None and arch.unsized_vision is None
    assert arch.total_params == sum(p.numel() for p in params.values())
    assert arch.extra_parameters == sum(p.numel() for n, p in params.items() if n.startswith(VISION_ROOTS))


def test_decoder_parameter_names_are_the_real_ones(built: tuple[Architecture, Any]) -> None:
    """Every decoder parameter axlint names (what ``unfrozen_parameters`` is matched against) is the real one with
    its size, and together they are the whole decoder. The routed experts are listed as per-expert Linears, which
    transformers 5 stores as two 3-D parameters of the layer's ``experts`` module: the same numel per layer."""
    arch, model = built
    real = {n: p.numel() for n, p in model.named_parameters() if not n.startswith(VISION_ROOTS)}
    named = dict(named_parameters(arch))
    assert {n: v for n, v in named.items() if ".experts." not in n} == {n: v for n, v in real.items()
                                                                        if ".experts." not in n}
    for layer in range(arch.num_layers if arch.is_moe else 0):
        prefix = f"{arch.decoder_path}.layers.{layer}.mlp.experts."
        assert sum(v for n, v in named.items() if n.startswith(prefix)) == \
            sum(v for n, v in real.items() if n.startswith(prefix))


def test_decoder_module_paths_are_the_real_ones(built: tuple[Architecture, Any]) -> None:
    """The module paths a regex ``lora_target_modules`` is matched against: each is a module of the real model, and
    every real decoder ``nn.Linear`` is among them (Mistral Small 4's layers: MLA's q_a_proj / q_b_proj /
    kv_a_proj_with_mqa / kv_b_proj / o_proj and the shared experts; its routed experts are the ``experts`` module)."""
    arch, model = built
    modules = dict(model.named_modules())
    paths = set(module_paths(arch))
    assert paths <= set(modules)
    linears = {n for n, m in modules.items() if isinstance(m, torch.nn.Linear) and not n.startswith(VISION_ROOTS)}
    assert linears <= paths


def test_mistral_small_4_is_the_published_bf16_checkpoint() -> None:
    """119,401,298,944 parameters: the 238,802,597,888 BF16 bytes of the descaled checkpoint's 765 tensors; the
    output projection untied. Active per token (4 of 128 routed experts, the shared expert, attention, both
    embeddings and the vision tower) computed: the model card's 6.5B counts neither the tower nor the embeddings."""
    arch = resolve_architecture(SMALL_4)
    assert arch.total_params == catalog_lookup(SMALL_4)["published_parameters"] == 238_802_597_888 // 2
    assert len(dict(_meta_model(SMALL_4).named_parameters())) == 765
    assert arch.extra_parameters == 428_472_320 and not arch.tie_word_embeddings
    assert arch.num_experts == 128 and arch.experts_per_token == 4 and arch.first_dense_layers == 0
    assert all(arch.is_moe_layer(i) for i in range(arch.num_layers))
    assert arch.active_params == 7_061_060_608  # computed


def test_ministral_3_3b_is_the_published_size() -> None:
    """3,849,090,048: the Hub's safetensors total of Ministral-3-3B-Instruct-2512 (the same architecture), split
    3,429,006,336 language / 420,083,712 vision; the input and output embeddings tied (458 tensors)."""
    arch = resolve_architecture(MINISTRAL_3B)
    assert arch.total_params == 3_849_090_048 and arch.extra_parameters == 420_083_712
    assert arch.decoder_params == 3_429_006_336 and arch.tie_word_embeddings
    assert len(dict(_meta_model(MINISTRAL_3B).named_parameters())) == 458


@pytest.mark.parametrize("example", [
    "mistral4/fft-text.yml", "mistral4/fft-vision.yml", "mistral4/qlora-text.yml", "mistral4/qlora-vision.yml",
    "ministral3/ministral3-3b-qlora.yaml", "ministral3/think/ministral3-3b-think-qlora.yaml",
    "ministral3/vision/ministral3-3b-vision-qlora.yml",
])
def test_corpus_configs_are_covered(example: str) -> None:
    model, _, verdict = classify(CORPUS / "examples" / example)
    assert model in (SMALL_4, MINISTRAL_3B) and verdict == "covered"
