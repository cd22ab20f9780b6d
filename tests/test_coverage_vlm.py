"""Catalog entries of the vision-language models of the Axolotl corpus (group "vlm"), each checked against the model
transformers 5.24 builds from the same config.json on the meta device, and each corpus config that names one
covered by the memory estimate (benchmarks/memory/coverage.py ``classify``)."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture, catalog_lookup, resolve_architecture
from benchmarks.memory.coverage import classify
from tests.catalog_models import assert_entry_is_the_meta_model, axlint_adapter_params, peft_adapter_params
from tests.corpus import CORPUS
from tests.test_vision import CASES, VISION_ROOTS, _build

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# model id, total, vision tower + projector; no exact published total was read: each is computed (the source of
# each entry says how it compares with the card's rounded size) and equals the meta-device model's numel
ENTRIES = [
    ("PaddlePaddle/PaddleOCR-VL", 799_695_472, 438_947_440),
    ("zai-org/GLM-4.6V-Flash", 10_292_777_472, 892_498_432),
    ("OpenGVLab/InternVL3_5-8B-HF", 8_528_318_464, 337_583_104),
    # published: the BF16 safetensors count of meta-llama/Llama-3.2-11B-Vision-Instruct (the entry's source)
    ("meta-llama/Llama-3.2-11B-Vision", 10_670_220_835, 895_028_755),
    ("LiquidAI/LFM2-VL-450M", 450_822_656, 96_338_688),
]
CORPUS_CONFIGS = {
    "paddleocr-vl/paddleocr-vl-1_6-qlora.yaml": "PaddlePaddle/PaddleOCR-VL",
    "paddleocr-vl/paddleocr-vl-1_6-full-finetune.yaml": "PaddlePaddle/PaddleOCR-VL",
    "glm46v/glm-4-6v-flash-qlora.yaml": "zai-org/GLM-4.6V-Flash",
    "glm46v/glm-4-6v-flash-ddp.yaml": "zai-org/GLM-4.6V-Flash",
    "internvl3_5/internvl3_5-8b-qlora.yml": "OpenGVLab/InternVL3_5-8B-HF",
    "llama-3-vision/lora-11b.yaml": "meta-llama/Llama-3.2-11B-Vision",
}


@pytest.mark.parametrize("model_id, total, vision", ENTRIES, ids=[e[0] for e in ENTRIES])
def test_entry_total_equals_the_meta_device_model(model_id: str, total: int, vision: int) -> None:
    assert_entry_is_the_meta_model(model_id, total, vision, VISION_ROOTS)


@pytest.mark.parametrize("path, model_id", sorted(CORPUS_CONFIGS.items()))
def test_corpus_configs_are_covered(path: str, model_id: str) -> None:
    corpus_model, _, verdict = classify(CORPUS / "examples" / path)
    assert catalog_lookup(corpus_model)["id"] == model_id
    assert verdict == "covered"
    assert resolve_architecture(corpus_model).source == "catalog"


def test_lfm2_vl_fed_images_is_not_modelled() -> None:
    """LFM2-VL's processor tiles each image by its own settings, which config.json does not give: the corpus run that
    feeds images resolves to its catalog entry and is left unknown."""
    corpus_model, _, verdict = classify(CORPUS / "examples/LiquidAI/lfm2-vl-lora.yaml")
    assert catalog_lookup(corpus_model)["id"] == "LiquidAI/LFM2-VL-450M"
    assert verdict == "not modelled: processor_type: AutoProcessor"


def test_llama_3_2_vision_layers() -> None:
    """Cross-attention at cross_attention_layers, the llama layer elsewhere; the input embedding 8 rows longer than
    the output (MllamaTextModel: vocab_size + 8)."""
    arch = resolve_architecture("alpindale/Llama-3.2-11B-Vision-Instruct")
    assert [i for i in range(40) if not arch.has_attention(i)] == [3, 8, 13, 18, 23, 28, 33, 38]
    assert arch.mixer_kinds == ("cross_attention",)
    assert arch.embedding_params - arch.lm_head_params == 8 * 4096


# The LoRA targets of the corpus configs of this group, on tiny models of each layout: axlint's adapter count must
# be the one PEFT builds (its regex and name matching over every module path, the vision tower's included).
GLM_TARGETS = ["gate_proj", "down_proj", "up_proj", "q_proj", "v_proj", "k_proj", "o_proj"]  # reach the tower too
DECODER_REGEX = r"model.language_model.layers.[\d]+.(mlp|cross_attn|self_attn).(up|down|gate|q|k|v|o)_proj"
PADDLE_REGEX = (r"(model\.language_model\.layers\.\d+\.(mlp\.(gate|up|down)_proj|self_attn\.(q|k|v|o)_proj)|"
                r"model\.visual\.vision_model\.encoder\.layers\.\d+\.(self_attn\.(q|k|v|out)_proj|mlp\.fc[12])|"
                r"model\.projector\.linear_[12])")


@pytest.mark.parametrize("model_type, targets", [("glm4v", GLM_TARGETS), ("mllama", DECODER_REGEX),
                                                 ("internvl", DECODER_REGEX), ("lfm2_vl", DECODER_REGEX),
                                                 ("paddleocr_vl", PADDLE_REGEX)])
def test_the_corpus_lora_targets_train_what_peft_trains(model_type: str, targets: Any) -> None:
    pytest.importorskip("peft")
    model, written = _build(model_type, CASES[model_type][0])
    arch = Architecture.from_config("t", "model-config", written)
    assert axlint_adapter_params(arch, {"lora_target_modules": targets}) == peft_adapter_params(model, targets) > 0
