"""Gemma 3n E2B (group "gemma3n"): the catalog entry against the whole model transformers 5.24 builds from it on the
meta device (its vision tower timm's MobileNet-V5, built by timm 1.0.31), the tower's count against timm itself, the
audio encoder's defaults, and the verdicts of the three corpus configs that name the model: the text QLoRA covered,
the runs that feed images (and audio) not modelled."""
from __future__ import annotations

import pytest

from axlint.architectures import Architecture, catalog_lookup
from axlint.architectures.audio import gemma3n_audio_tower
from axlint.architectures.vision import TOWERS
from axlint.memory.params import named_parameters
from benchmarks.memory.coverage import classify
from tests.catalog_models import axlint_adapter_params, meta_model, peft_adapter_params
from tests.corpus import CORPUS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
timm = pytest.importorskip("timm")

E2B_TOTAL = 5_418_464_192
"""Computed (no exact published total was read; the Gemma 3n launch post says "5B"), pinned."""


def test_e2b_entry_is_the_meta_model() -> None:
    """The whole E2B: decoder, MobileNet-V5, audio encoder and both embedders, in total and part by part; the
    decoder's parameters by name and size, and the Linears of the encoders and embedders at their module paths."""
    config = catalog_lookup("google/gemma-3n-E2B")["config"]
    arch = Architecture.from_config("google/gemma-3n-E2B", "catalog", config)
    assert arch.unsized_decoder is None and arch.unsized_vision is None
    model = meta_model(config)
    parts = {name: sum(p.numel() for p in model.get_submodule(name).parameters())
             for name in ("model.language_model", "model.vision_tower", "model.audio_tower", "model.embed_vision",
                          "model.embed_audio")}
    assert arch.total_params == sum(p.numel() for p in model.parameters()) == E2B_TOTAL
    assert arch.decoder_params == parts["model.language_model"] == 4_435_182_688
    assert arch.extra_parameters == E2B_TOTAL - parts["model.language_model"]
    assert parts["model.vision_tower"] == TOWERS["gemma3n_vision"].timm_params
    roots = ("model.vision_tower", "model.audio_tower", "model.embed_vision", "model.embed_audio")
    real = {name: p.numel() for name, p in model.named_parameters() if not name.startswith(roots)}
    assert dict(named_parameters(arch)) == real
    linears = {name: m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    laid_out = {lin.path: (lin.d_in, lin.d_out, lin.bias) for lin in arch.vision_linears()}
    assert laid_out == {name: (m.in_features, m.out_features, m.bias is not None)
                        for name, m in linears.items() if name.startswith(roots)}


def test_mobilenet_v5_count_is_timm() -> None:
    """The tower's count is the encoder timm builds by name as TimmWrapperModel asks for it (num_classes=0): its
    parameters, none of them in an nn.Linear (so no LoRA target and no 4-bit weight reaches it)."""
    with torch.device("meta"):
        tower = timm.create_model("mobilenetv5_300m_enc", pretrained=False, num_classes=0)
    assert sum(p.numel() for p in tower.parameters()) == TOWERS["gemma3n_vision"].timm_params == 294_126_912
    assert not any(isinstance(m, torch.nn.Linear) for m in tower.modules())


def test_another_timm_architecture_is_unsized() -> None:
    """The count holds for mobilenetv5_300m_enc without model_args; a vision_config naming another backbone, or
    passing any model_args to timm (the count was not measured with them), leaves the tower unsized."""
    config = catalog_lookup("google/gemma-3n-E2B")["config"]
    for change in ({"architecture": "mobilenetv5_base"}, {"model_args": {"drop_path_rate": 0.1}}):
        changed = {**config, "vision_config": {**config["vision_config"], **change}}
        assert Architecture.from_config("t", "model-config", changed).unsized_vision == "gemma3n_vision"


def test_gemma3n_audio_tower_defaults_are_the_config_class() -> None:
    """An audio_config that leaves keys out is sized with Gemma3nAudioConfig's defaults: the encoder transformers
    builds from the default config (the E2B's: 681,348,640)."""
    with torch.device("meta"):
        tower = transformers.AutoModel.from_config(transformers.AutoConfig.for_model("gemma3n_audio"))
    linears, others = gemma3n_audio_tower({})
    assert sum(lin.params for lin in linears) + others == sum(p.numel() for p in tower.parameters()) == 681_348_640


def test_instruct_checkpoint_resolves_to_the_base() -> None:
    assert catalog_lookup("google/gemma-3n-E2B-it")["id"] == "google/gemma-3n-E2B"


@pytest.mark.parametrize("name, verdict", [
    ("gemma-3n-e2b-qlora.yml", "covered"),
    ("gemma-3n-e2b-vision-qlora.yml", "not modelled: processor_type: AutoProcessor"),
    ("gemma-3n-e2b-vision-audio-qlora.yml", "not modelled: processor_type: AutoProcessor"),
])
def test_corpus_verdicts(name: str, verdict: str) -> None:
    """The text run is estimated; the runs whose processor hands images to MobileNet-V5 are not, since the
    convolutions' activations over 768 x 768 images are not sized (``Tower.image_work``)."""
    assert classify(CORPUS / "examples/gemma3n" / name)[2] == verdict


def test_corpus_lora_targets_train_what_peft_trains() -> None:
    """The corpus regex (the decoder's attention and MLP projections) on a tiny Gemma 3n with kv-shared layers:
    axlint's adapter count is the one PEFT builds over every module path (kv-shared layers keep k_proj / v_proj)."""
    from tests.test_vision import GEMMA3N_AUDIO, GEMMA3N_TEXT

    pytest.importorskip("peft")
    targets = r"model.language_model.layers.[\d]+.(mlp|self_attn).(up|down|gate|q|k|v|o)_proj"
    config = {"model_type": "gemma3n", "text_config": {**GEMMA3N_TEXT, "num_kv_shared_layers": 1, "num_hidden_layers": 3,
                                                       "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]},
              "vision_config": {"model_type": "gemma3n_vision"}, "audio_config": GEMMA3N_AUDIO}
    arch = Architecture.from_config("t", "model-config", config)
    assert axlint_adapter_params(arch, {"lora_target_modules": targets}) == \
        peft_adapter_params(meta_model(config), targets) > 0
