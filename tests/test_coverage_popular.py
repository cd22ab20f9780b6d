"""Catalog entries of popular fine-tuning bases beyond the vendored corpus: DeepSeek-R1's distilled Qwen and Llama
models, Qwen2.5-Coder, QwQ-32B, SmolLM3, Granite 3.3, Phi-4-mini, OLMoE, DeepSeek-V3 / R1, Qwen3-235B-A22B,
Qwen3-Coder-30B-A3B, Qwen2.5-Math, Falcon3, Codestral, Mistral Large 2, Phi-3.5-MoE, and the multimodal Qwen3-VL (2B
to 32B, 30B-A3B), Qwen2.5-VL-3B and Gemma 3n E4B.

Each entry is read from copies of the model's published config.json (its ``source``). transformers 5.24 builds the
model from the entry on the meta device (no memory, no weights) and axlint's count must equal its ``numel`` sum, and
its parameter names axlint's where axlint lays them out; where an exact total was published the entry carries it and
it must be this total.
"""
from __future__ import annotations

import pytest

from axlint.architectures import catalog_lookup, resolve_architecture
from axlint.architectures.resolve import catalog_match
from tests.catalog_models import assert_counts_are_the_meta_model, assert_entry_is_the_meta_model, meta_model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

R1 = "deepseek-ai/DeepSeek-R1-Distill-"
# model id, total, active
TOTALS = [
    (R1 + "Qwen-1.5B", 1_777_088_000, 1_777_088_000),  # computed (Hugging Face: 1.78B)
    (R1 + "Qwen-7B", 7_615_616_512, 7_615_616_512),  # published
    (R1 + "Qwen-14B", 14_770_033_664, 14_770_033_664),  # published
    (R1 + "Qwen-32B", 32_763_876_352, 32_763_876_352),  # published (the Hub's safetensors total)
    (R1 + "Llama-8B", 8_030_261_248, 8_030_261_248),  # published (the Hub's safetensors total)
    (R1 + "Llama-70B", 70_553_706_496, 70_553_706_496),  # published
    ("Qwen/Qwen2.5-Coder-0.5B-Instruct", 494_032_768, 494_032_768),  # computed (card: 0.49B)
    ("Qwen/Qwen2.5-Coder-1.5B-Instruct", 1_543_714_304, 1_543_714_304),  # computed (card: 1.54B)
    ("Qwen/Qwen2.5-Coder-3B-Instruct", 3_085_938_688, 3_085_938_688),  # computed (card: 3.09B)
    ("Qwen/Qwen2.5-Coder-7B-Instruct", 7_615_616_512, 7_615_616_512),  # published
    ("Qwen/Qwen2.5-Coder-14B-Instruct", 14_770_033_664, 14_770_033_664),  # computed (blog: 14.7B)
    ("Qwen/Qwen2.5-Coder-32B-Instruct", 32_763_876_352, 32_763_876_352),  # computed
    ("Qwen/QwQ-32B", 32_763_876_352, 32_763_876_352),  # computed
    ("HuggingFaceTB/SmolLM3-3B", 3_075_098_624, 3_075_098_624),  # published
    ("ibm-granite/granite-3.3-8b-instruct", 8_170_864_640, 8_170_864_640),  # published
    ("ibm-granite/granite-3.3-2b-instruct", 2_533_539_840, 2_533_539_840),  # computed (card: 2.5B)
    ("microsoft/Phi-4-mini-instruct", 3_836_021_760, 3_836_021_760),  # computed (card: 3.8B)
    ("allenai/OLMoE-1B-7B-0924", 6_919_161_856, 1_282_017_280),  # computed (README: 6.9B total, 1.3B active)
    ("deepseek-ai/DeepSeek-V3", 671_026_404_352, 37_552_282_624),  # computed (README: 671B main model, 37B active)
    ("Qwen/Qwen3-235B-A22B", 235_093_634_560, 22_190_763_520),  # computed (card: 235B total, 22B activated)
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 30_532_122_624, 3_353_032_704),  # published
    ("Qwen/Qwen2.5-Math-1.5B", 1_543_714_304, 1_543_714_304),  # computed
    ("Qwen/Qwen2.5-Math-7B", 7_615_616_512, 7_615_616_512),  # computed
    ("tiiuae/Falcon3-1B-Instruct", 1_669_408_768, 1_669_408_768),  # computed (Hugging Face: 1.67B)
    ("tiiuae/Falcon3-3B-Instruct", 3_227_655_168, 3_227_655_168),  # computed (Hugging Face: 3.23B)
    ("tiiuae/Falcon3-7B-Instruct", 7_455_550_464, 7_455_550_464),  # computed (Hugging Face: 7.46B)
    ("tiiuae/Falcon3-10B-Instruct", 10_305_653_760, 10_305_653_760),  # computed (Hugging Face: 10.3B)
    ("mistralai/Codestral-22B-v0.1", 22_247_282_688, 22_247_282_688),  # computed (card: 22B)
    ("mistralai/Mistral-Large-Instruct-2411", 122_610_069_504, 122_610_069_504),  # computed (card: 123B)
    ("microsoft/Phi-3.5-MoE-instruct", 41_873_153_344, 6_640_999_744),  # computed (leaderboard: 41.873B; 6.6B active)
    ("zai-org/GLM-4.5", 352_797_814_784, 33_632_251_904),  # computed (355B total and 32B active with its MTP layer)
    ("THUDM/GLM-4-9B-0414", 9_400_279_040, 9_400_279_040),  # computed (Hugging Face: 9.4B)
]


@pytest.mark.parametrize("model_id, total, active", TOTALS, ids=[t[0] for t in TOTALS])
def test_entry_totals(model_id: str, total: int, active: int) -> None:
    arch = resolve_architecture(model_id)
    assert arch is not None and arch.source == "catalog" and arch.unsized_decoder is None
    assert (arch.total_params, arch.active_params) == (total, active)
    assert catalog_lookup(model_id).get("published_parameters", total) == total


@pytest.mark.parametrize("model_id", [t[0] for t in TOTALS])
def test_entry_is_the_model_transformers_builds(model_id: str) -> None:
    assert_counts_are_the_meta_model(model_id)


@pytest.mark.parametrize("alias, model_id", [
    ("Qwen/Qwen2.5-Coder-7B", "Qwen/Qwen2.5-Coder-7B-Instruct"),
    ("HuggingFaceTB/SmolLM3-3B-Base", "HuggingFaceTB/SmolLM3-3B"),
    ("allenai/OLMoE-1B-7B-0924-Instruct", "allenai/OLMoE-1B-7B-0924"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B"),
    ("Qwen/Qwen2.5-Math-7B-Instruct", "Qwen/Qwen2.5-Math-7B"),
    ("tiiuae/Falcon3-3B-Base", "tiiuae/Falcon3-3B-Instruct"),
    ("mistralai/Mistral-Large-Instruct-2407", "mistralai/Mistral-Large-Instruct-2411"),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ("google/gemma-3n-E4B-it", "google/gemma-3n-E4B"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3"),
    ("nvidia/Llama-3.1-Nemotron-Nano-8B-v1", "meta-llama/Llama-3.1-8B"),
    ("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "deepseek-ai/DeepSeek-V2-Lite"),
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
    ("zai-org/GLM-4-9B-0414", "THUDM/GLM-4-9B-0414"),
    ("meta-llama/Llama-3.2-90B-Vision", "meta-llama/Llama-3.2-90B-Vision-Instruct"),
])
def test_listed_variants_resolve_to_their_entry_and_say_so(alias: str, model_id: str) -> None:
    entry, how = catalog_match(alias)
    assert entry["id"] == model_id and how == f"{model_id}, listed as a mirror or variant of the same sizes"


def test_an_unlisted_copy_resolves_by_name_only() -> None:
    entry, how = catalog_match("someone/DeepSeek-R1-Distill-Qwen-7B")
    assert entry["id"] == R1 + "Qwen-7B" and "matched by repository name only" in how


def test_r1_distill_qwen_1_5b_unties_what_qwen2_5_1_5b_ties() -> None:
    """The distilled 1.5B has its own 151936 x 1536 output projection; Qwen2.5-1.5B shares the embedding's."""
    distilled, base = resolve_architecture(R1 + "Qwen-1.5B"), resolve_architecture("Qwen/Qwen2.5-1.5B")
    assert distilled.lm_head_params == 151936 * 1536 and base.lm_head_params == 0
    assert distilled.total_params - base.total_params == 151936 * 1536


def test_olmoe_layers_are_all_moe_with_full_width_qk_norms() -> None:
    """16 layers, each a router of 64 x 2048 and 64 experts 1024 wide, top-8; q_norm and k_norm span all 16 heads."""
    arch = resolve_architecture("allenai/OLMoE-1B-7B-0924")
    assert all(arch.is_moe_layer(i) for i in range(16)) and (arch.num_experts, arch.moe_intermediate_size) == (64, 1024)
    model = meta_model(catalog_lookup("allenai/OLMoE-1B-7B-0924")["config"])
    layer = model.model.layers[15]
    assert tuple(layer.self_attn.q_norm.weight.shape) == tuple(layer.self_attn.k_norm.weight.shape) == (2048,)
    assert tuple(layer.mlp.gate.weight.shape) == (64, 2048)
    assert tuple(layer.mlp.experts.gate_up_proj.shape) == (64, 2048, 2048)


def test_smollm3_ties_its_embeddings() -> None:
    arch = resolve_architecture("HuggingFaceTB/SmolLM3-3B")
    assert arch.tie_word_embeddings and arch.lm_head_params == 0 and arch.embedding_params == 128256 * 2048


def test_deepseek_v3_is_stored_in_fp8_and_its_first_three_layers_are_dense() -> None:
    arch = resolve_architecture("deepseek-ai/DeepSeek-V3")
    assert [arch.is_moe_layer(i) for i in range(5)] == [False, False, False, True, True]
    assert catalog_lookup("deepseek-ai/DeepSeek-V3")["config"]["quantization_config"]["quant_method"] == "fp8"


# model id, total, tower + projector (the deepstack mergers included), active
VISION = [
    ("Qwen/Qwen3-VL-2B-Instruct", 2_127_532_032, 406_957_056, 2_127_532_032),  # published (the Hub's safetensors)
    ("Qwen/Qwen3-VL-4B-Instruct", 4_437_815_808, 415_347_712, 4_437_815_808),  # published (measured numel)
    ("Qwen/Qwen3-VL-8B-Instruct", 8_767_123_696, 576_388_336, 8_767_123_696),  # published (safetensors sum)
    ("Qwen/Qwen3-VL-32B-Instruct", 33_357_390_064, 595_266_800, 33_357_390_064),  # computed
    ("Qwen/Qwen3-VL-30B-A3B-Instruct", 31_070_754_032, 538_631_408, 3_891_664_112),  # published (safetensors sum)
    ("Qwen/Qwen2.5-VL-3B-Instruct", 3_754_622_976, 668_684_288, 3_754_622_976),  # computed (Hugging Face: 3.75B)
    ("Qwen/Qwen2.5-VL-72B-Instruct", 73_410_777_344, 704_573_696, 73_410_777_344),  # computed (Hugging Face: 73.4B)
    ("meta-llama/Llama-3.2-90B-Vision-Instruct", 88_593_355_323, 926_490_131, 88_593_355_323),  # computed (88.6B)
]
TOWER_ROOTS = ("model.visual", "model.vision_model", "model.multi_modal_projector")


@pytest.mark.parametrize("model_id, total, tower, active", VISION, ids=[v[0] for v in VISION])
def test_vision_entry_is_the_model_transformers_builds(model_id: str, total: int, tower: int, active: int) -> None:
    assert catalog_lookup(model_id).get("published_parameters", total) == total
    assert_entry_is_the_meta_model(model_id, total, tower, TOWER_ROOTS)
    assert resolve_architecture(model_id).active_params == active


def test_qwen3_vl_deepstack_mergers_follow_the_config() -> None:
    """Three deepstack mergers (after blocks 5, 11 and 17 of the 2B's tower), each a LayerNorm over the 4 merged
    patches of a token (4 x 1024) and two Linears out to the decoder's 2048."""
    arch = resolve_architecture("Qwen/Qwen3-VL-2B-Instruct")
    mergers = {lin.path: (lin.d_in, lin.d_out) for lin in arch.vision_linears() if "deepstack" in lin.path}
    assert mergers == {f"model.visual.deepstack_merger_list.{i}.{name}": shape for i in range(3)
                       for name, shape in (("linear_fc1", (4096, 4096)), ("linear_fc2", (4096, 2048)))}


def test_gemma_3n_e4b_is_the_e2b_layout_deeper() -> None:
    """35 layers (every fifth global, the last 15 kv-shared) with a 16384-wide MLP; the towers and embedders are the
    E2B's: 7,818,517,072 parameters, 983,281,504 of them beside the decoder, as transformers 5.24 builds it."""
    e4b, e2b = resolve_architecture("google/gemma-3n-E4B"), resolve_architecture("google/gemma-3n-E2B")
    assert e4b.num_layers == 35 and e4b.extra_parameters == e2b.extra_parameters == 983_281_504
    assert e4b.total_params == sum(p.numel() for p in meta_model(catalog_lookup("google/gemma-3n-E4B")["config"])
                                   .parameters()) == 7_818_517_072


def test_phi_3_5_moe_biases_its_attention_and_output() -> None:
    """q/k/v/o and the output projection carry biases (attention_bias, lm_head_bias), the norms are LayerNorms."""
    model = meta_model(catalog_lookup("microsoft/Phi-3.5-MoE-instruct")["config"])
    attention = model.model.layers[0].self_attn
    assert all(getattr(attention, name).bias is not None for name in ("q_proj", "k_proj", "v_proj", "o_proj"))
    assert model.lm_head.bias is not None and model.model.norm.bias is not None
