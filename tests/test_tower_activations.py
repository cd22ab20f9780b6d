"""The activations of the images inside a vision tower (axlint/memory/tower.py), hand-computed from the published
config.json values of the catalog, and the verdict of a run whose tokens per image nothing bounds."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.facts import feeds_images
from axlint.memory.setup import read_setup
from axlint.memory.tower import image_tokens, tower_work
from tests.resolved import facts

H100 = parse_hardware("1xH100")
GEMMA3 = "google/gemma-3-4b-it"      # SigLIP 1152 wide, 27 layers, MLP 4304, 16 heads, 896 / 14
LLAVA = "llava-hf/llava-1.5-7b-hf"   # CLIP 1024 wide, 24 layers, MLP 4096, 16 heads, 336 / 14, a class token
MLLAMA = "meta-llama/Llama-3.2-11B-Vision-Instruct"  # 1280 wide, 32 + 8 global layers, MLP 5120, 560 / 14, 4 tiles
QWEN2_VL = "Qwen/Qwen2-VL-7B-Instruct"
BASE = {"sequence_len": 2048, "micro_batch_size": 2, "bf16": True, "sample_packing": False,
        "processor_type": "AutoProcessor", "flash_attention": False, "sdp_attention": True}


def setup_of(model: str, **config: Any):
    arch = resolve_architecture(model)
    return arch, read_setup(facts({"base_model": model, **BASE, **config}, None, arch, H100), arch)


def work(model: str, **config: Any):
    arch, setup = setup_of(model, **config)
    return tower_work(arch, setup)


# Per token of a tower layer, bf16, sdpa (activations / tower docstrings):
#   norms 2 LayerNorms x 2h (their inputs), attention 4h + 4h + 4a, plain MLP 2I (QuickGELU 4I)
#   + when the weights train: the inputs of q/k/v (2h), fc1 (2h), fc2 (2I); o_proj reads the kernel's output
SIGLIP_FROZEN = 2 * 2 * 1152 + (4 * 1152 + 4 * 1152 + 4 * 16) + 2 * 4304       # 22,496
SIGLIP_TRAINED = SIGLIP_FROZEN + 2 * 1152 + 2 * 1152 + 2 * 4304               # 35,712
CLIP_FROZEN = 2 * 2 * 1024 + (4 * 1024 + 4 * 1024 + 4 * 16) + 4 * 4096          # 28,736: QuickGELU keeps 4I
MLLAMA_FROZEN = 2 * 2 * 1280 + (4 * 1280 + 4 * 1280 + 4 * 16) + 2 * 5120        # 25,664
MLLAMA_TRAINED = MLLAMA_FROZEN + 2 * 1280 + 2 * 1280 + 2 * 5120                # 41,024


def test_token_counts_of_fixed_and_tiled_towers() -> None:
    """SigLIP (896 / 14)² = 4096; CLIP (336 / 14)² + a class token = 577; Mllama 4 tiles of (560 / 14)² + 1 = 1601
    padded to 1608; InternViT (448 / 14)² + 1 = 1025 (one tile: a square image)."""
    for model, n in ((GEMMA3, 4096), (LLAVA, 577), (MLLAMA, 4 * 1608), ("OpenGVLab/InternVL3_5-8B-HF", 1025)):
        arch, setup = setup_of(model)
        assert image_tokens(arch.vision_part, setup.images) == n, model


def test_axolotl_image_size_sizes_a_dynamic_tower() -> None:
    """Qwen2-VL's smart_resize to multiples of 14 x 2 = 28: 448² -> 32 x 32 patches; 640 x 480 -> 644 x 476 ->
    46 x 34. Pixtral scales 2048 x 1024 down to its 1024 longest edge: 64 x 32 patches of 16."""
    for size, n in ((448, 1024), ([640, 480], 46 * 34)):
        arch, setup = setup_of(QWEN2_VL, image_size=size)
        assert image_tokens(arch.vision_part, setup.images) == n
    arch, setup = setup_of("mistral-community/pixtral-12b", image_size=[2048, 1024])
    assert image_tokens(arch.vision_part, setup.images) == 64 * 32
    arch, setup = setup_of("mistral-community/pixtral-12b")
    assert image_tokens(arch.vision_part, setup.images) == 64 * 64  # up to vision_config's image_size, 1024


def test_frozen_siglip_keeps_nothing_and_runs_one_layer_at_a_time() -> None:
    """gemma-3's QLoRA on the decoder alone: the tower keeps nothing; its forward holds one layer's temporaries
    over the 2 x 4096 image tokens of a micro batch."""
    w = work(GEMMA3, adapter="qlora", load_in_4bit=True, lora_r=16, eval_batch_size=1,
             lora_target_modules=r"model.language_model.layers.[\d]+.(mlp|self_attn).(up|down|gate|q|k|v|o)_proj")
    assert w.stored == 0 and w.backward == 0
    assert w.forward == 2 * 4096 * SIGLIP_FROZEN
    assert w.eval == 1 * 4096 * SIGLIP_FROZEN


def test_trained_siglip_keeps_every_layer() -> None:
    """A full fine-tune: 27 layers x A_v over 2 x 4096 tokens, + the projector matrix's input 2 x 1152 per row;
    backward adds one layer's gradient temporaries 2h + 4I."""
    w = work(GEMMA3)
    tokens = 2 * 4096
    assert w.stored == tokens * (27 * SIGLIP_TRAINED + 2 * 1152)
    assert w.backward == w.stored + tokens * (2 * 1152 + 4 * 4304)


def test_trained_siglip_under_checkpointing_keeps_layer_inputs() -> None:
    w = work(GEMMA3, gradient_checkpointing=True)
    tokens = 2 * 4096
    assert w.stored == tokens * (27 * 2 * 1152 + 2 * 1152)
    assert w.backward == w.stored + tokens * (2 * 1152 + 4 * 4304 + SIGLIP_TRAINED)


def test_freeze_mm_modules_freezes_a_full_finetune_tower() -> None:
    w = work(GEMMA3, freeze_mm_modules=True)
    assert w.stored == 0 and w.forward == 2 * 4096 * SIGLIP_FROZEN


def test_lora_on_the_clip_tower_keeps_adapter_inputs() -> None:
    """lora_target_linear reaches CLIP's Linears (q/k/v/out_proj, fc1/fc2) and the projector's: under autocast every
    adapted Linear keeps its own bf16 copy of its input 2·d_in and its lora_A output 2r (r = 16); the projector's
    linear_1 / linear_2 keep their inputs 2 x (1024 + 4096) per row."""
    w = work(LLAVA, adapter="lora", lora_r=16, lora_target_linear=True, micro_batch_size=1)
    copies = 3 * (2 * 1024 + 2 * 16) + (2 * 1024 + 2 * 16) + (2 * 1024 + 2 * 16) + (2 * 4096 + 2 * 16)
    assert w.stored == 577 * (24 * (CLIP_FROZEN + copies) + 2 * (1024 + 4096))


def test_mllama_tower_is_not_checkpointed() -> None:
    """MllamaVisionEncoderLayer is a plain nn.Module: gradient checkpointing leaves the 32 + 8 layers' activations
    in place when the tower trains; the 8 global layers' two trained tanh gates keep what they scale, 2h each."""
    w = work(MLLAMA, gradient_checkpointing=True, micro_batch_size=1)
    projector = 2 * 7680  # multi_modal_projector reads vision_output_dim
    assert w.stored == 4 * 1608 * (40 * MLLAMA_TRAINED + 8 * 2 * 2 * 1280 + projector)


def test_frozen_tower_forward_can_set_the_peak() -> None:
    """A frozen tower's forward moment is resident memory + its one layer's temporaries; with a short text it is the
    estimate's activations."""
    arch = resolve_architecture(MLLAMA)
    e = estimate_memory(facts({"base_model": MLLAMA, **BASE, "adapter": "lora", "lora_r": 8, "sequence_len": 16,
                               "micro_batch_size": 8, "lora_target_modules": ["q_proj"],
                               "freeze_mm_modules": True}, None, arch, H100), arch, H100)
    assert e.components["activations"] == 8 * 4 * 1608 * MLLAMA_FROZEN


def test_dynamic_tower_without_image_size_is_not_modelled() -> None:
    """Qwen2-VL reads images at their own resolution: without Axolotl's image_size the verdict is unknown and the
    message says what to write; with it, the run is modelled."""
    arch = resolve_architecture(QWEN2_VL)
    why = feeds_images({"processor_type": "AutoProcessor"}, arch)
    assert list(why) == ["processor_type: AutoProcessor"]
    assert "set Axolotl's image_size" in why["processor_type: AutoProcessor"]
    assert feeds_images({"processor_type": "AutoProcessor", "image_size": 448}, arch) == {}
    assert work(QWEN2_VL) is None
    assert feeds_images({}, arch) == {}


def test_processor_tiling_is_not_modelled() -> None:
    """SmolVLM-style and Llama 4 towers take their tiles from the processor's settings, not config.json."""
    arch = resolve_architecture("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    why = feeds_images({"processor_type": "Llama4Processor", "image_size": 336}, arch)
    assert "processor's tiling" in why["processor_type: Llama4Processor"]


def test_text_runs_feed_no_images() -> None:
    arch = resolve_architecture(GEMMA3)
    setup = read_setup(facts({"base_model": GEMMA3, **{k: v for k, v in BASE.items() if k != "processor_type"}},
                             None, arch, H100), arch)
    assert tower_work(arch, setup) is None


@pytest.mark.parametrize("model", [GEMMA3, LLAVA])
def test_tower_work_adds_to_the_estimate(model: str) -> None:
    """The trained tower's stored activations are part of the estimate's activations at the start of backward."""
    arch = resolve_architecture(model)
    text = {k: v for k, v in BASE.items() if k != "processor_type"}
    with_images = estimate_memory(facts({"base_model": model, **BASE}, None, arch, H100), arch, H100)
    without = estimate_memory(facts({"base_model": model, **text}, None, arch, H100), arch, H100)
    stored = work(model).stored
    assert with_images.components["activations"] >= without.components["activations"] + stored


def one_layer_saved_bytes_per_token(kind: str, vision_config: dict[str, Any], tokens: int,
                                    trains: bool = True) -> float:
    """One bf16 encoder layer of transformers 5.24 (models/siglip/modeling_siglip.py ``SiglipEncoderLayer``,
    models/clip/modeling_clip.py ``CLIPEncoderLayer``), sdpa, on fake tensors, its weights trainable or (``trains``
    False) frozen: the bytes autograd saves plus, when it saves any, the layer output (the next layer's LayerNorm
    input), per token."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from transformers import CLIPVisionConfig, SiglipVisionConfig
    from transformers.models.clip.modeling_clip import CLIPEncoderLayer
    from transformers.models.siglip.modeling_siglip import SiglipEncoderLayer

    from axlint.simulate import materialize_fake

    config_class, layer_class = {"siglip_vision_model": (SiglipVisionConfig, SiglipEncoderLayer),
                                 "clip_vision_model": (CLIPVisionConfig, CLIPEncoderLayer)}[kind]
    cfg = config_class(**{k: v for k, v in vision_config.items() if k != "model_type"})
    cfg._attn_implementation = "sdpa"
    with torch.device("meta"):
        layer = layer_class(cfg).to(torch.bfloat16).requires_grad_(trains)
    with FakeTensorMode(allow_non_fake_inputs=True):
        materialize_fake(layer)
        hidden = torch.empty((1, tokens, cfg.hidden_size), dtype=torch.bfloat16, requires_grad=trains)
        existing = {id(t.untyped_storage()) for t in (hidden, *layer.parameters())}
        saved: dict[int, int] = {}

        def keep(t: Any) -> Any:
            if id(t.untyped_storage()) not in existing:
                saved[id(t.untyped_storage())] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
            out = layer(hidden, attention_mask=None)
        out = out[0] if isinstance(out, tuple) else out
        if saved:
            saved.setdefault(id(out.untyped_storage()), out.untyped_storage().nbytes())
    return sum(saved.values()) / tokens


@pytest.mark.parametrize(("model_type", "kind", "n"), [("gemma3", "siglip_vision_model", 256),
                                                       ("llava", "clip_vision_model", 257)])
def test_tower_layer_matches_the_real_layer_on_fake_tensors(model_type: str, kind: str, n: int) -> None:
    """A_v of a trained tiny SigLIP / CLIP layer (CLIP: QuickGELU, a class token) against the real one: within 1 %
    (the LayerNorms' per-row mean and rstd, 8 bytes a token, are left out). A LayerNorm keeps its bf16 input itself,
    so the layer input the analytic norms count is the previous layer's output, which the measurement adds."""
    from axlint.architectures.vision import Vision
    from axlint.memory.tower import layer_bytes_per_token

    vc = {"model_type": kind, "hidden_size": 128, "num_attention_heads": 4, "intermediate_size": 352,
          "num_hidden_layers": 1, "image_size": 128, "patch_size": 8}
    vision = Vision({"model_type": model_type, "vision_config": vc, "text_config": {"hidden_size": 64}}, 64)
    _, setup = setup_of(GEMMA3)
    assert vision.image_tokens(None) == n
    analytic = layer_bytes_per_token(vision, setup, n, True, ())
    assert analytic == pytest.approx(one_layer_saved_bytes_per_token(kind, vc, n), rel=0.01)


def test_a_frozen_tower_layer_saves_nothing() -> None:
    """Pixel values never require grad: a SigLIP layer whose weights are frozen records nothing for backward."""
    vc = {"hidden_size": 128, "num_attention_heads": 4, "intermediate_size": 352, "num_hidden_layers": 1}
    assert one_layer_saved_bytes_per_token("siglip_vision_model", vc, 64, trains=False) == 0


def test_the_note_says_what_the_tower_keeps() -> None:
    """The estimate's note on the tower reads as a sentence: a full fine-tune's tower keeps its layers' activations
    (their inputs under gradient checkpointing); a tower none of whose weights train is frozen."""
    assert work(GEMMA3).note.endswith("the tower keeps its layers' activations for backward")
    assert work(GEMMA3, gradient_checkpointing=True).note.endswith(
        "the tower keeps its layers' inputs (gradient checkpointing) for backward")
    assert work(GEMMA3, adapter="lora", lora_target_linear=True, freeze_mm_modules=True).note.endswith(
        "the tower is frozen: it keeps nothing for backward, one layer's forward temporaries at a time")


def test_unfrozen_parameters_do_not_train_the_tower_under_an_adapter() -> None:
    """Under an adapter the base weights are frozen and unfrozen_parameters count for nothing (``params.trainable``):
    a LoRA on the decoder's q_proj / v_proj alone leaves Qwen2-VL's tower frozen, unfrozen_parameters naming it or
    not; without the adapter those parameters train and the tower keeps its activations."""
    lora = {"image_size": 448, "adapter": "lora", "lora_target_modules": ["q_proj", "v_proj"]}
    assert work(QWEN2_VL, **lora, unfrozen_parameters=["model.visual.*"]) == work(QWEN2_VL, **lora)
    assert work(QWEN2_VL, **lora).stored == 0
    assert work(QWEN2_VL, image_size=448, unfrozen_parameters=["model.visual.*"]).stored > 0
