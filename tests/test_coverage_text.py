"""The text group's catalog entries (Nemotron 3 Super, Falcon-H1-34B, Olmo 3 7B, Hunyuan-0.5B, Qwen3-4B-Instruct-2507
with its fine-tune Plano-Orchestrator-4B) against transformers 5.24 and the vendored Axolotl corpus.

Each entry is read from a copy of the model's published config.json (its ``source``). transformers builds the model
from the entry on the meta device (no memory, no weights) and axlint's count must equal its ``numel`` sum; where the
published total is known it is pinned too. The corpus configs that name these models must get a full verdict.
"""
from __future__ import annotations

import pytest

from axlint.architectures import catalog_lookup, resolve_architecture
from benchmarks.memory.coverage import classify
from tests.catalog_models import assert_counts_are_the_meta_model, meta_model
from tests.corpus import CORPUS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOTALS = [
    # nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16: published BF16 safetensors weights less the MTP block, which
    # transformers does not build; active as published with it excluded.
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", 120_668_687_360, 12_770_216_960),
    ("tiiuae/Falcon-H1-34B-Instruct", 33_642_516_224, 33_642_516_224),  # computed (published: 34B)
    ("allenai/Olmo-3-7B-Instruct-SFT", 7_298_011_136, 7_298_011_136),  # published (Hub total of Olmo-3-7B-Think)
    ("tencent/Hunyuan-0.5B-Instruct", 539_010_048, 539_010_048),  # computed (published: 0.5B)
    ("Qwen/Qwen3-4B-Instruct-2507", 4_022_468_096, 4_022_468_096),  # published
]


@pytest.mark.parametrize("model_id, total, active", TOTALS, ids=[t[0] for t in TOTALS])
def test_entry_totals(model_id: str, total: int, active: int) -> None:
    arch = resolve_architecture(model_id)
    assert arch is not None and arch.source == "catalog" and arch.unsized_decoder is None
    assert arch.total_params == total and arch.active_params == active


@pytest.mark.parametrize("model_id", [t[0] for t in TOTALS])
def test_entry_is_the_model_transformers_builds(model_id: str) -> None:
    """The entry's count equals the numel sum of the model built from it (Nemotron 3 Super: 120.7B parameters on the
    meta device, its MTP block not built); a dense one's parameter names are axlint's."""
    assert_counts_are_the_meta_model(model_id)


def test_nemotron_3_super_layer_plan_and_latent_experts() -> None:
    """88 blocks: 40 Mamba-2, 40 LatentMoE (h -> 1024 -> h around 512 experts 2688 wide, top-22, one shared expert
    5376 wide), 8 attention; the first block is Mamba-2, the second MoE, the eighth attention."""
    arch = resolve_architecture("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16")
    kinds = [(p.mixers, p.mlp) for p in arch.layer_plans]
    assert kinds.count((("mamba2",), None)) == 40 and kinds.count(((), "moe")) == 40
    assert kinds.count((("attention",), None)) == 8
    assert kinds[:2] == [(("mamba2",), None), ((), "moe")] and arch.has_attention(7)
    moe = {lin.name: (lin.d_in, lin.d_out, lin.count) for lin in arch.mlp_linears(1)}
    assert moe["fc1_latent_proj"] == (4096, 1024, 1) and moe["fc2_latent_proj"] == (1024, 4096, 1)
    assert moe["up_proj"] == (1024, 2688, 512) and moe["shared_experts.up_proj"] == (4096, 5376, 1)
    assert arch.experts_per_token == 22


def test_olmo_3_layers_and_aliases() -> None:
    """Olmo 3 7B: OLMo 2's layer (q/k norms over all heads, norms after attention and MLP), three sliding-window
    layers to one full-attention layer; the Instruct stages and the base resolve to the same entry."""
    arch = resolve_architecture("allenai/Olmo-3-7B-Instruct-SFT")
    assert arch.qk_norm == "full" and arch.layout.norm_names == ("post_attention_layernorm",
                                                                  "post_feedforward_layernorm")
    assert arch.config["layer_types"][:4] == ["sliding_attention"] * 3 + ["full_attention"]
    for alias in ("allenai/Olmo-3-7B-Instruct", "allenai/Olmo-3-7B-Instruct-DPO", "allenai/Olmo-3-1025-7B"):
        assert catalog_lookup(alias)["id"] == "allenai/Olmo-3-7B-Instruct-SFT"


def test_falcon_h1_34b_mamba_and_alias() -> None:
    """Falcon-H1-34B: Mamba-2 of 32 heads x 128 in 2 groups with its gated RMSNorm weight, beside GQA attention
    (20 heads, 4 kv) in each of the 72 layers; the Base model resolves to the Instruct one's architecture."""
    arch = resolve_architecture("tiiuae/Falcon-H1-34B-Base")
    assert arch.model_id == "tiiuae/Falcon-H1-34B-Base" and arch.num_layers == 72
    others = dict(arch.mixer_shapes(0)[0].others)
    assert others["norm.weight"] == 4096 and others["conv1d.weight"] == (4096 + 2 * 2 * 256) * 4
    assert arch.kv_dim == 4 * 128


def test_plano_orchestrator_is_qwen3_4b_instruct_2507() -> None:
    """Plano-Orchestrator-4B's card names Qwen/Qwen3-4B-Instruct-2507 as its base: it resolves there, as a listed
    fine-tune, to Qwen3-4B's layer (head-wise q/k norms) with the output tied to the embedding."""
    entry = catalog_lookup("katanemo/Plano-Orchestrator-4B")
    assert entry["id"] == "Qwen/Qwen3-4B-Instruct-2507"
    arch = resolve_architecture("katanemo/Plano-Orchestrator-4B")
    assert arch.qk_norm == "head" and arch.tie_word_embeddings and arch.lm_head_params == 0


@pytest.mark.parametrize("config", ["falcon-h1/falcon-h1-34b-qlora.yaml", "nemotron-h/120b-a12b-qlora.yaml",
                                    "olmo3/olmo3-7b-qlora.yaml", "hunyuan/hunyuan-v1-dense-qlora.yaml",
                                    "plano/plano-4b-qlora.yaml"])
def test_corpus_configs_are_covered(config: str) -> None:
    """The vendored Axolotl examples that name these models get a full memory verdict
    (benchmarks/memory/coverage.py ``classify``)."""
    assert classify(CORPUS / "examples" / config)[2] == "covered"
