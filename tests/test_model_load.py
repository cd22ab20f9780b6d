"""The load's peak: a run under FSDP whose model lies whole on every GPU before it is sharded
(axlint.memory.loading)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from axlint.architectures import resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory import constants as C
from axlint.memory.estimate import COMPONENTS
from axlint.memory.loading import LOAD_PHASE, load_peak_bytes, whole_model_load
from axlint.memory.params import trainable
from axlint.memory.setup import read_setup
from axlint.memory.states import weight_bytes
from tests.resolved import facts

GIB = 2**30
L70B = resolve_architecture("meta-llama/Meta-Llama-3-70B")
Q32B = resolve_architecture("Qwen/Qwen3-32B")
TWO = parse_hardware("2x48GB")
BASE = {"base_model": "meta-llama/Meta-Llama-3-70B", "sequence_len": 1024, "micro_batch_size": 1, "bf16": True,
        "sample_packing": True, "flash_attention": True, "gradient_checkpointing": True, "lora_r": 8,
        "lora_target_linear": True}
QLORA = {"adapter": "qlora", "load_in_4bit": True}
INT8 = {"adapter": "lora", "load_in_8bit": True}
FSDP1 = {"fsdp": ["full_shard", "auto_wrap"],
         "fsdp_config": {"auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                         "transformer_layer_cls_to_wrap": "LlamaDecoderLayer"}}
FSDP2 = {"fsdp_version": 2, "fsdp_config": {"auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                                            "transformer_layer_cls_to_wrap": "LlamaDecoderLayer"}}
RAM = {"cpu_ram_efficient_loading": True}


def setup_of(config, arch=L70B, hw=TWO):
    return read_setup(facts({**BASE, **config}, None, arch, hw), arch)


def with_ram(fsdp):
    return {**fsdp, "fsdp_config": {**fsdp["fsdp_config"], **RAM}}


@pytest.mark.parametrize("config, whole", [
    ({**QLORA, **FSDP1}, True),                                      # device_map {"": LOCAL_RANK}
    ({**QLORA, **with_ram(FSDP1)}, True),                            # FSDP1 keeps that device_map
    ({**QLORA, **with_ram(FSDP1), "qlora_sharded_model_loading": True}, False),  # Answer.AI's sharded load
    ({**QLORA, **FSDP2}, True),
    ({**QLORA, **with_ram(FSDP2)}, False),                           # rank 0 on the CPU, the others on meta
    ({**INT8, **FSDP1}, True),                                       # bitsandbytes takes the current GPU
    ({**INT8, **with_ram(FSDP1)}, True),
    ({**INT8, **with_ram(FSDP2)}, False),
    ({"adapter": "lora", **FSDP2}, False),                           # Axolotl skips the move since 0.13.0
    ({"adapter": "lora", **FSDP2, "experimental_skip_move_to_device": False}, True),
    ({**QLORA}, False),                                              # DDP: every GPU holds the model anyway
    ({**QLORA, "fsdp_version": 2, "fsdp_config": {"fsdp_cpu_ram_efficient_loading": True}}, False),  # legacy key
])
def test_whole_model_load(config, whole):
    assert bool(whole_model_load(L70B, setup_of(config))) is whole


ZERO3 = {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}


def test_zero3_quantized_load_lies_whole_on_every_gpu_until_partitioned():
    # no device_map under ZeRO-3: bitsandbytes' quantizer takes the current GPU; the engine partitions param by param
    run = facts({**BASE, **QLORA, "deepspeed": "ds.json"}, ZERO3, L70B, TWO)
    setup = read_setup(run, L70B)
    why = whole_model_load(L70B, setup)
    assert why == "bitsandbytes quantizes the nf4 load on the current GPU"
    whole = weight_bytes(L70B, setup, trainable(L70B, setup))
    assert load_peak_bytes(L70B, setup, whole) == whole
    e = estimate_memory(run, L70B, parse_hardware("2xA100-40GB"))
    assert e.phase == LOAD_PHASE and not e.fits
    assert any("before ZeRO-3 shards it" in n and n.endswith("more GPUs do not lower it") for n in e.assumptions)


def test_an_unquantized_zero3_run_and_an_older_stack_have_no_load_peak():
    assert not whole_model_load(L70B, read_setup(facts({**BASE, "adapter": "lora"}, ZERO3, L70B, TWO), L70B))
    setup = read_setup(facts({**BASE, **QLORA}, ZERO3, L70B, TWO), L70B)
    older = setup.with_changes(model_load=replace(setup.model_load, quantized_off_gpu=True))
    assert whole_model_load(L70B, setup) and not whole_model_load(L70B, older)


def test_dbrx_qlora_takes_the_sharded_load_with_cpu_ram_efficient_loading():
    dbrx = resolve_architecture("LnL-AI/dbrx-base-converted-v2")
    config = {**QLORA, **with_ram(FSDP1), "base_model": "LnL-AI/dbrx-base-converted-v2"}
    assert not whole_model_load(dbrx, setup_of(config, dbrx))
    assert whole_model_load(dbrx, setup_of({**QLORA, **FSDP1, "base_model": "LnL-AI/dbrx-base-converted-v2"}, dbrx))


def test_one_gpu_never_has_a_load_peak():
    assert not whole_model_load(L70B, setup_of({**QLORA, **FSDP1}, hw=parse_hardware("1xH100")))


def test_fsdp2_peak_is_the_whole_model_and_its_shards():
    # Axolotl's fsdp2_prepare_model holds model.state_dict() while fully_shard allocates the shards
    setup = setup_of({**INT8, **FSDP2, "base_model": "Qwen/Qwen3-32B"}, Q32B)
    whole = weight_bytes(Q32B, setup, trainable(Q32B, setup))
    assert load_peak_bytes(Q32B, setup, whole) == pytest.approx(whole * 1.5)
    four = setup_of({**INT8, **FSDP2, "base_model": "Qwen/Qwen3-32B"}, Q32B, parse_hardware("4x48GB"))
    assert load_peak_bytes(Q32B, four, whole) == pytest.approx(whole * 1.25)


def test_fsdp1_peak_is_the_whole_model_and_its_largest_unit():
    # Llama-3-70B: the root unit (embed_tokens + lm_head, 2 × 128256 × 8192 bf16) is larger than a 4-bit layer
    setup = setup_of({**QLORA, **FSDP1})
    whole = weight_bytes(L70B, setup, trainable(L70B, setup))
    assert load_peak_bytes(L70B, setup, whole) == whole + 2 * 128256 * 8192 * 2


def test_the_estimate_peaks_at_the_load():
    small = parse_hardware("2x24GB")  # the whole 4-bit 70B (about 37 GiB) is over a 24 GB card
    e = estimate_memory(facts({**BASE, **QLORA, **FSDP1}, None, L70B, small), L70B, small)
    whole = weight_bytes(L70B, e.setup, trainable(L70B, e.setup))
    assert e.phase == LOAD_PHASE and not e.fits
    assert e.peak_allocated == pytest.approx(whole + 2 * 128256 * 8192 * 2)
    assert e.peak_reserved == pytest.approx(e.peak_allocated * (1 + C.RESIDENT_FRAGMENTATION))
    assert e.phases[LOAD_PHASE] == e.peak_allocated > e.phases["forward-backward"]
    assert sum(e.components[k] for k in COMPONENTS) == pytest.approx(e.peak_device)
    assert e.components["weights"] == pytest.approx(whole)
    note = next(n for n in e.assumptions if n.startswith("model load:"))
    assert "QLoRA under FSDP loads the model with device_map on the local GPU" in note
    assert "qlora_sharded_model_loading: true" in note


def test_the_sharded_load_leaves_the_training_peak():
    config = {**BASE, **QLORA, **with_ram(FSDP1), "qlora_sharded_model_loading": True}
    e = estimate_memory(facts(config, None, L70B, TWO), L70B, TWO)
    assert e.phase != LOAD_PHASE and e.phases[LOAD_PHASE] == 0.0 and e.fits
    assert not [n for n in e.assumptions if n.startswith("model load:")]


def test_a_training_peak_above_the_load_stays_the_peak():
    # 8 × 4096 tokens without checkpointing of an 8B 4-bit model: the step is far over the 6 GiB load
    l8b = resolve_architecture("meta-llama/Llama-3.1-8B")
    config = {**BASE, **QLORA, **FSDP1, "base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 4096,
              "micro_batch_size": 8, "gradient_checkpointing": False}
    e = estimate_memory(facts(config, None, l8b, TWO), l8b, TWO)
    assert 0 < e.phases[LOAD_PHASE] < e.peak_allocated and e.phase == "forward-backward"


def test_the_solver_offers_the_sharded_load_for_a_qlora_under_fsdp1():
    from axlint.memory.knobs import Change
    from axlint.memory.solver import suggest

    small = parse_hardware("2x24GB")
    config = {**BASE, **QLORA, **FSDP1, "fsdp_config": {**FSDP1["fsdp_config"], "offload_params": True}}
    best = suggest(facts(config, None, L70B, small), L70B, small)[0]
    assert best.steps[0].change is Change.SHARDED_QUANT_LOAD and best.relative_throughput == 1.0
    assert best.changes == {"qlora_sharded_model_loading": True, "fsdp_config.cpu_ram_efficient_loading": True}


def test_an_8bit_lora_under_fsdp2_has_no_load_fix_but_fits_on_more_gpus_as_it_is():
    from axlint.memory.solver import scale_out, suggest

    config = {**BASE, **INT8, **FSDP2, "base_model": "Qwen/Qwen3-32B"}
    run = facts(config, None, Q32B, TWO)
    assert suggest(run, Q32B, TWO) == []
    wider = scale_out(run, Q32B, TWO)
    assert wider is not None and wider.gpus == 4 and wider.suggestion.steps == ()


def test_the_step_reserved_stays_when_it_is_larger_than_the_load_reserved():
    # 10240 tokens: the step allocates a little less than the load (whole 8-bit model + half shards), but with the
    # step's slack and the loss's unreused block it reserves more; the peak reserved is the step's
    config = {**BASE, **INT8, **FSDP2, "base_model": "Qwen/Qwen3-32B", "sequence_len": 10240}
    e = estimate_memory(facts(config, None, Q32B, TWO), Q32B, TWO)
    step = e.phases["forward-backward"]
    assert e.phase == LOAD_PHASE and step < e.peak_allocated == e.phases[LOAD_PHASE]
    assert e.peak_reserved > e.peak_allocated * (1 + C.RESIDENT_FRAGMENTATION)
    assert e.peak_reserved == pytest.approx(e.peak_allocated + e.components["allocator_slack"])
    assert e.peak_reserved > step * (1 + C.ALLOCATOR_SLACK)  # the step's own slack, and its loss block on top
