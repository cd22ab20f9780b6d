"""The trainable parameters that get no gradient (``params.idle_split``): a multimodal model's towers on text only
and MiMo's multi-token-prediction layers, and what the estimate does with them, on published configs of the catalog
(the real stack's answer on small models of every multimodal type is tests/test_oracle_ddp.py, on MiMo's layers
tests/test_coverage_remote.py)."""
from __future__ import annotations

from typing import Any

from axlint.architectures import resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.params import adapted_patch_conv, idle_split, trainable
from axlint.memory.setup import read_setup
from tests.resolved import facts

QWEN3_VL = "Qwen/Qwen3-VL-2B-Instruct"   # a 1,024-wide tower of 406,957,056 parameters, 16 x 16 x 2 patches of 3 channels
MIMO = "XiaomiMiMo/MiMo-7B-RL"  # one multi-token-prediction layer beside 36 decoder layers
VOXTRAL = "mistralai/Voxtral-Mini-3B-2507"  # Whisper's encoder: a frozen 1,500 x 1,280 position table
TOWER = 406_957_056


def setup_of(model: str, hardware: str = "1xH100", ds: dict | None = None, **config: Any):
    arch, hw = resolve_architecture(model), parse_hardware(hardware)
    raw = {"base_model": model, "sequence_len": 1024, "micro_batch_size": 1, "bf16": True, **config}
    return arch, read_setup(facts(raw, ds, arch, hw), arch)


def test_a_text_only_full_finetune_trains_no_tower_on_one_gpu() -> None:
    arch, setup = setup_of(QWEN3_VL)
    t = trainable(arch, setup)
    assert arch.extra_parameters == TOWER
    assert (t.base, t.idle_base, t.trained) == (arch.total_params, TOWER, arch.total_params - TOWER)
    assert idle_split(arch, setup).idle_parts == ("the vision tower and its projector",)


def test_deepspeed_holds_states_for_the_idle_tower() -> None:
    arch, setup = setup_of(QWEN3_VL, "2xH100", {"zero_optimization": {"stage": 2}})
    t = trainable(arch, setup)
    assert (t.idle_base, t.trained) == (0, arch.total_params)


def test_freeze_mm_modules_takes_the_tower_out_of_a_full_finetune() -> None:
    arch, setup = setup_of(QWEN3_VL, freeze_mm_modules=True)
    t = trainable(arch, setup)
    split = idle_split(arch, setup)
    assert (t.base, t.idle_base, split.frozen_base, split.idle_parts) == (arch.total_params - TOWER, 0, TOWER, ())


def test_a_fed_tower_trains() -> None:
    arch, setup = setup_of(QWEN3_VL, processor_type="AutoProcessor")
    assert trainable(arch, setup).idle_base == 0


def test_lora_reaches_the_patch_convolution_by_its_name() -> None:
    """Axolotl's names include the attention's `proj`, which also names the Conv3d `patch_embed.proj`: PEFT gives it
    lora_A r x (3 x 2 x 16 x 16) and lora_B 1,024 x r."""
    arch, setup = setup_of(QWEN3_VL, adapter="lora", lora_r=16, lora_target_linear=True)
    assert adapted_patch_conv(arch, setup) == ("model.visual.patch_embed.proj", 1536, 1024)
    _, listed = setup_of(QWEN3_VL, adapter="lora", lora_r=16, lora_target_modules=["q_proj", "proj"])
    assert adapted_patch_conv(arch, listed) == ("model.visual.patch_embed.proj", 1536, 1024)
    _, decoder = setup_of(QWEN3_VL, adapter="lora", lora_r=16, lora_target_modules=["q_proj", "v_proj"])
    assert adapted_patch_conv(arch, decoder) is None


def test_text_only_lora_on_the_tower_gets_no_gradient() -> None:
    arch, setup = setup_of(QWEN3_VL, adapter="lora", lora_r=16, lora_target_linear=True)
    split = idle_split(arch, setup)
    vision = arch.vision_part
    tower_width = sum(lin.d_in + lin.d_out for lin in vision.linears()) + 1536 + 1024
    assert split.idle_adapter == 16 * tower_width
    assert trainable(arch, setup).idle_adapter == split.idle_adapter


def test_whisper_positions_never_train() -> None:
    arch, setup = setup_of(VOXTRAL)
    assert arch.total_params - trainable(arch, setup).base == 1500 * 1280


def test_the_estimate_says_what_gets_no_gradient() -> None:
    arch, hw = resolve_architecture(QWEN3_VL), parse_hardware("1xH100")
    raw = {"base_model": QWEN3_VL, "sequence_len": 1024, "micro_batch_size": 1, "bf16": True}
    notes = estimate_memory(facts(raw, None, arch, hw), arch, hw).assumptions
    assert any(n.startswith("407.0 M trainable parameters of the vision tower and its projector get no gradient")
               for n in notes)


def test_mimo_mtp_layer_trains_nothing_on_one_gpu_and_is_held_by_deepspeed() -> None:
    arch, setup = setup_of(MIMO, trust_remote_code=True)
    t = trainable(arch, setup)
    assert arch.mtp_params > 0
    assert (t.idle_base, t.trained) == (arch.mtp_params, arch.total_params - arch.mtp_params)
    split = idle_split(arch, setup)
    assert (split.idle_parts, split.freezable) == (("the multi-token-prediction layer `model.mtp_layers`",), False)
    arch, sharded = setup_of(MIMO, "2xH100", {"zero_optimization": {"stage": 2}}, trust_remote_code=True)
    assert trainable(arch, sharded).idle_base == 0


def test_mimo_adapters_on_the_mtp_layer_and_the_note() -> None:
    arch, setup = setup_of(MIMO, trust_remote_code=True, adapter="lora", lora_r=16, lora_target_linear=True)
    widths = sum(lin.d_in + lin.d_out for lin in arch.mtp_linears)
    assert trainable(arch, setup).idle_adapter == idle_split(arch, setup).idle_adapter == 16 * widths
    hw = parse_hardware("1xH100")
    raw = {"base_model": MIMO, "trust_remote_code": True, "sequence_len": 1024, "micro_batch_size": 1, "bf16": True}
    notes = estimate_memory(facts(raw, None, arch, hw), arch, hw).assumptions
    assert f"{arch.mtp_params / 1e6:.1f} M trainable parameters of the multi-token-prediction layer " \
        "`model.mtp_layers` get no gradient: the model's forward never runs its multi-token-prediction layers, " \
        "which only speculative decoding uses; counted without gradients or optimizer states" in notes


def test_unfrozen_parameters_that_name_the_tower_leave_it_idle_on_text() -> None:
    """Patterns are matched against the tower's Linear and projector names too (``unfrozen_names``): what they name
    of the tower trains and, on text, gets no gradient; the tower's unnamed norms and embeddings are left out."""
    from axlint.memory.params import unfrozen_params

    arch, setup = setup_of(QWEN3_VL, unfrozen_parameters=["model.visual.*", "model.language_model.layers.0.*"])
    named_tower = sum(n for _, n in arch.vision_part.named_parameters())
    layer0 = unfrozen_params(arch, ("model.language_model.layers.0.*",))
    t = trainable(arch, setup)
    assert 0.99 * TOWER < named_tower < TOWER
    assert (t.base, t.idle_base, t.trained) == (named_tower + layer0, named_tower, layer0)
    frozen = setup_of(QWEN3_VL, unfrozen_parameters=["model.visual.*"], freeze_mm_modules=True)[1]
    assert idle_split(arch, frozen).idle_base == 0
    language = setup_of(QWEN3_VL, unfrozen_parameters=["model.language_model.layers.0.*"])[1]
    assert idle_split(arch, language).idle_parts == ()


def test_unfrozen_parameters_that_name_mimo_s_mtp_layer() -> None:
    arch, setup = setup_of(MIMO, unfrozen_parameters=["model.mtp_layers.*"])
    split = idle_split(arch, setup)
    assert split.idle_base == arch.mtp_params and split.mtp


def test_an_unfrozen_pattern_inside_a_tower_part_axlint_does_not_name_is_not_judged() -> None:
    from axlint.memory.params import unmatched_unfrozen

    arch = resolve_architecture(QWEN3_VL)
    patterns = ("model.visual.patch_embed.proj.weight", "model.visual.blocks.0.attn.qkv.weight",
                "model.vision_tower.*", "model.visual")
    assert unmatched_unfrozen(arch, patterns) == ["model.vision_tower.*"]
