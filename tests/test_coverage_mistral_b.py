"""The mistral-b group of corpus models (Voxtral Mini, Pixtral 12B, Magistral / Devstral Small) against transformers
5.24: each catalog entry is built on the meta device and its numel sum must equal axlint's total; the audio tower
(Voxtral's Whisper encoder, ``vision.TOWERS["voxtral_encoder"]``) trains as PEFT adapts it; the aliases resolve on
the evidence their entries' sources give; the corpus configs get the verdicts written here."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture, catalog_lookup, resolve_architecture
from axlint.memory.facts import feeds_audio
from benchmarks.memory.coverage import classify
from tests.catalog_models import assert_entry_is_the_meta_model, axlint_adapter_params, meta_model, peft_adapter_params
from tests.corpus import CORPUS
from tests.test_vision import CASES, TEXT, VOXTRAL_AUDIO

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")


TOWER_ROOTS = ("model.vision_tower", "model.audio_tower", "model.multi_modal_projector")


# No exact published total was read for any: each total is computed, and equals the model built here.
@pytest.mark.parametrize("model_id, params, tower", [
    ("mistral-community/pixtral-12b", 12_682_739_712, 434_957_312),  # Hub: 12.7B; Pixtral tower + llava projector
    ("mistralai/Voxtral-Mini-3B-2507", 4_676_271_104, 662_134_784),  # Hub: 4.68B; Whisper encoder + projector
    ("mistralai/Magistral-Small-2506", 23_572_403_200, 0),  # text-only; Oumi's README: 23.6B (Magistral 2507)
])
def test_entries_equal_the_model_transformers_builds(model_id: str, params: int, tower: int) -> None:
    assert_entry_is_the_meta_model(model_id, params, tower, TOWER_ROOTS)


@pytest.mark.parametrize("alias, canonical", [
    ("mistralai/Magistral-Small-2507", "mistralai/Magistral-Small-2506"),
    ("mistralai/Devstral-Small-2507", "mistralai/Magistral-Small-2506"),
    ("mistralai/Magistral-Small-2509", "mistralai/Mistral-Small-3.1-24B-Instruct-2503"),
])
def test_aliases_resolve(alias: str, canonical: str) -> None:
    assert catalog_lookup(alias)["id"] == canonical


def test_the_text_only_24b_is_mistral_small_3_1_without_its_tower() -> None:
    """Magistral 1.0 / 1.1 and Devstral 1.1 are Mistral Small 3.1's decoder with the vision encoder removed (their
    cards): the same decoder, parameter for parameter, and nothing beside it."""
    text, small = resolve_architecture("mistralai/Magistral-Small-2506"), resolve_architecture(
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503")
    assert not text.multimodal and text.decoder_path == "model"
    assert text.total_params == small.decoder_params == small.total_params - small.extra_parameters


def test_voxtral_mini_is_the_documented_defaults() -> None:
    """transformers documents VoxtralConfig's defaults as mistralai/Voxtral-Mini-3B-2507: every size the entry writes
    is the value the class gives (text_config from its sub-config defaults, audio_config VoxtralEncoderConfig's)."""
    written = catalog_lookup("mistralai/Voxtral-Mini-3B-2507")["config"]
    defaults = transformers.VoxtralConfig()
    for part in ("text_config", "audio_config"):
        real = getattr(defaults, part).to_dict()
        for key, value in written[part].items():
            expected = real["rope_parameters"]["rope_theta"] if key == "rope_theta" else real[key]
            assert value == expected, (part, key)


def _axolotl_linear_names(model: Any) -> list[str]:
    """What Axolotl 0.18.0's ``find_all_linear_names`` hands PEFT for ``lora_target_linear``: the last name of every
    ``nn.Linear`` in the whole model (the towers' too), lm_head excepted."""
    names = {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    return sorted(names - {"lm_head"})


@pytest.mark.parametrize("fields", CASES["voxtral"], ids=["voxtral-0", "voxtral-1"])
def test_lora_target_linear_adapts_the_audio_tower_as_peft_does(fields: dict[str, Any]) -> None:
    config = {"model_type": "voxtral", **fields}
    model = meta_model(config)
    arch = Architecture.from_config("t", "model-config", model.config.to_dict())
    assert axlint_adapter_params(arch, {"lora_target_linear": True}) == \
        peft_adapter_params(model, _axolotl_linear_names(model))


def test_audio_fed_to_the_audio_tower_is_not_modelled() -> None:
    """Axolotl's multimodal collator (which carries the audio) runs only with processor_type; without it the data is
    text and the tower idles. A vision model's processor_type is not audio."""
    voxtral = Architecture.from_config("t", "model-config", {"model_type": "voxtral", "text_config": TEXT,
                                                             "audio_config": VOXTRAL_AUDIO})
    pixtral = resolve_architecture("mistral-community/pixtral-12b")
    assert voxtral.hears_audio and not pixtral.hears_audio
    assert list(feeds_audio({"processor_type": "VoxtralProcessor"}, voxtral)) == ["processor_type: VoxtralProcessor"]
    assert feeds_audio({}, voxtral) == {} and feeds_audio({"processor_type": "AutoProcessor"}, pixtral) == {}


@pytest.mark.parametrize("path, verdict", [
    ("pixtral/lora-12b.yml", "covered"),
    ("magistral/magistral-small-qlora.yaml", "covered"),
    ("magistral/magistral-small-fsdp-qlora.yaml", "covered"),
    ("magistral/think/magistral-small-think-qlora.yaml", "covered"),
    ("magistral/vision/magistral-small-vision-24B-qlora.yml", "covered"),
    ("devstral/devstral-small-qlora.yml", "covered"),
    ("voxtral/voxtral-mini-qlora.yml", "covered"),  # text only: the tower's weights, no audio
    ("voxtral/voxtral-mini-audio-qlora.yml", "not modelled: processor_type: VoxtralProcessor"),
])
def test_corpus_verdicts(path: str, verdict: str) -> None:
    assert classify(CORPUS / "examples" / path)[2] == verdict
