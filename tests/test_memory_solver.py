import json
from dataclasses import replace

from axlint.architectures import resolve_architecture
from axlint.hardware import local_host_memory_gib, parse_hardware, parse_host_memory
from axlint.memory import estimate_memory
from axlint.memory.solver import fit_grid, scale_out, suggest
from axlint.run import STOCK_DEEPSPEED
from tests.resolved import facts

L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
TOO_BIG = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 8192, "micro_batch_size": 4,
           "gradient_accumulation_steps": 2, "bf16": True, "sample_packing": True, "adapter": "lora",
           "lora_r": 16, "lora_target_linear": True, "eager_attention": True}


def test_solver_finds_a_fitting_config_for_an_obviously_too_large_one():
    hw = parse_hardware("1xH100")
    assert not estimate_memory(facts(TOO_BIG, None, L8B, hw), L8B, hw).fits
    suggestions = suggest(facts(TOO_BIG, None, L8B, hw), L8B, hw)
    assert suggestions
    for s in suggestions:
        assert s.peak_gib <= 79.2 * 0.95 and s.saving_gib > 0 and s.where == "axolotl"
        fixed = estimate_memory(facts({**TOO_BIG, **s.changes}, None, L8B, hw), L8B, hw)
        assert max(fixed.required, fixed.eval_required) / 2**30 <= 79.2 * 0.95 + 0.01
        if "micro_batch_size" in s.changes:  # effective batch kept
            assert s.changes["micro_batch_size"] * s.changes["gradient_accumulation_steps"] == 8
    assert [s.relative_throughput for s in suggestions] == sorted((s.relative_throughput for s in suggestions),
                                                                  reverse=True)


def test_solver_suggests_zero3_for_ddp_full_finetune():
    config = {**TOO_BIG, "adapter": None, "eager_attention": False, "flash_attention": True, "sequence_len": 2048}
    hw = parse_hardware("8xH100")
    suggestions = suggest(facts(config, None, L8B, hw), L8B, hw)
    assert any(s.changes.get("deepspeed") for s in suggestions)


def test_solver_changes_deepspeed_stage():
    ds = {"zero_optimization": {"stage": 1}, "bf16": {"enabled": True}}
    config = {**TOO_BIG, "adapter": None, "eager_attention": False, "flash_attention": True, "sequence_len": 1024,
              "micro_batch_size": 1, "gradient_checkpointing": True,
              "plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_fused_linear_cross_entropy": True}
    hw = parse_hardware("8x40GB")
    suggestions = suggest(facts(config, ds, L8B, hw), L8B, hw)
    assert suggestions and all(s.where == "deepspeed" for s in suggestions)
    # ZeRO-2 (35.4 GiB required: its gradient buckets are released before the step) is the fastest that fits
    assert suggestions[0].ds_changes == {"zero_optimization.stage": 2}
    assert {"zero_optimization.stage": 3} in [s.ds_changes for s in suggestions]


def test_fit_grid_is_monotone():
    hw = parse_hardware("1xH100")
    grid = fit_grid(facts(TOO_BIG, None, L8B, hw), L8B, hw, [1, 2, 4], [1024, 2048, 4096])
    for row in grid.required_gib:
        assert list(row) == sorted(row)
    for col in zip(*grid.required_gib):
        assert list(col) == sorted(col)
    assert grid.fits(0, 0) and not grid.fits(2, 2)


ZERO3_BF16 = json.loads((STOCK_DEEPSPEED / "zero3_bf16.json").read_text())
FULL_8B = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 4096, "micro_batch_size": 1,
           "gradient_accumulation_steps": 4, "gradient_checkpointing": True, "bf16": True,
           "optimizer": "adamw_torch_fused", "sample_packing": True, "flash_attention": True}
"""An 8B full fine-tune: 16 bytes of model states per parameter (about 120 GiB) cannot fit one 40 GB GPU."""


def test_an_8b_full_finetune_on_one_40gb_gpu_is_offered_cpu_offload_with_the_ram_it_needs():
    hw = parse_hardware("1xA100-40GB")
    found = suggest(facts(FULL_8B, None, L8B, hw), L8B, hw)
    assert [s.changes for s in found] == [{"deepspeed": "deepspeed_configs/zero3_bf16_cpuoffload_all.json"}]
    # fp32 master + fp32 grads + two Adam moments + bf16 weights for 8.03 B parameters, all on the one host
    assert found[0].host_gib == round(L8B.total_params * (4 + 4 + 8 + 2) / 2**30, 1)


def test_offload_is_dropped_when_the_host_has_too_little_ram():
    hw = replace(parse_hardware("1xA100-40GB"), host_memory_gib=64)
    assert suggest(facts(FULL_8B, None, L8B, hw), L8B, hw) == []
    roomy = replace(hw, host_memory_gib=1024)
    assert suggest(facts(FULL_8B, None, L8B, roomy), L8B, roomy)


def test_scale_out_finds_the_fewest_gpus_that_fit_without_offload():
    hw = parse_hardware("1xA100-40GB")
    found = scale_out(facts(FULL_8B, None, L8B, hw), L8B, hw)
    assert found is not None and found.suggestion.host_gib == 0
    assert found.suggestion.changes == {"deepspeed": "deepspeed_configs/zero3_bf16.json"}
    wider = replace(hw, count=found.gpus)
    assert estimate_memory(facts({**FULL_8B, "deepspeed": "zero3_bf16.json"}, ZERO3_BF16, L8B, wider), L8B,
                           wider).fits
    fewer = replace(hw, count=found.gpus // 2)
    assert not estimate_memory(facts({**FULL_8B, "deepspeed": "zero3_bf16.json"}, ZERO3_BF16, L8B, fewer), L8B,
                               fewer).fits


def test_host_memory_sizes_and_the_local_reading(tmp_path):
    assert parse_host_memory("1TiB") == 1024 and parse_host_memory("512 GiB") == 512
    assert parse_host_memory("1TB") == 931.3 and parse_host_memory("768G") == 715.3
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       131072000 kB\nMemFree:  1 kB\n")
    assert local_host_memory_gib(str(meminfo)) == 125.0
    assert local_host_memory_gib(str(tmp_path / "missing")) is None


def test_a_4bit_moe_whose_experts_stay_bf16_is_offered_quantize_moe_experts():
    """Mixtral-8x7B QLoRA on one H100: the bf16 experts (85 GiB) do not fit; storing them quantized does. Axolotl
    refuses quantize_moe_experts beside lora_target_linear, so there the fix lists the Linears lora_target_linear
    picks (Mixtral's attention projections: the experts are 3-D parameters and the router is not a Linear) in
    lora_target_modules and turns lora_target_linear off; a string there, which Axolotl hands PEFT as a name that
    matches nothing, is left out of the list; beside a regular expression alone it is not offered."""
    mixtral = resolve_architecture("mistralai/Mixtral-8x7B-v0.1")
    hw = parse_hardware("1xH100")
    config = {"adapter": "qlora", "load_in_4bit": True, "lora_r": 16, "lora_target_modules": ["q_proj", "v_proj"],
              "sequence_len": 4096, "sample_packing": True, "micro_batch_size": 1, "gradient_checkpointing": True}
    assert not estimate_memory(facts(config, None, mixtral, hw), mixtral, hw).fits
    best = suggest(facts(config, None, mixtral, hw), mixtral, hw)[0]
    assert best.changes == {"quantize_moe_experts": True} and best.peak_gib < 79.2 * 0.95
    linear = {**config, "lora_target_linear": True}
    del linear["lora_target_modules"]
    best = suggest(facts(linear, None, mixtral, hw), mixtral, hw)[0]
    assert best.changes == {"quantize_moe_experts": True, "lora_target_linear": False,
                            "lora_target_modules": ["k_proj", "o_proj", "q_proj", "v_proj"]}
    assert best.peak_gib < 79.2 * 0.95
    kept = {**linear, "lora_target_modules": ["q_proj", "gate"]}
    assert suggest(facts(kept, None, mixtral, hw), mixtral, hw)[0].changes["lora_target_modules"] == [
        "gate", "k_proj", "o_proj", "q_proj", "v_proj"]
    named = {**linear, "lora_target_modules": r"model.layers.\d+.self_attn.(q|v)_proj"}
    assert suggest(facts(named, None, mixtral, hw), mixtral, hw)[0].changes["lora_target_modules"] == [
        "k_proj", "o_proj", "q_proj", "v_proj"]


def test_flash_attention_is_offered_where_axolotl_keeps_sdpa_s_embeddings_in_fp32():
    """Llama-3.2-1B full fine-tune with sdpa: 26.5 GiB required on a 26 GB card; flash attention has Axolotl cast
    the embeddings back to bf16 (3.1 GiB less) at the same speed, so it is the fastest fix. With flash attention
    configured there is nothing left to offer on that knob."""
    from axlint.memory.knobs import Change
    from axlint.report.memory_text import step_text

    arch = resolve_architecture("meta-llama/Llama-3.2-1B")
    config = {"base_model": "meta-llama/Llama-3.2-1B", "sdp_attention": True, "sequence_len": 4096,
              "micro_batch_size": 2, "gradient_accumulation_steps": 2, "gradient_checkpointing": True,
              "bf16": True, "sample_packing": True}
    hw = parse_hardware("1x26GB")
    best = suggest(facts(config, None, arch, hw), arch, hw)[0]
    assert best.changes == {"attn_implementation": "flash_attention_2"} and best.relative_throughput == 1.0
    assert [step.change for step in best.steps] == [Change.FLASH_ATTENTION]
    assert step_text(best.steps[0]).startswith("use flash_attention_2 instead of sdpa")
    flash = {**config, "sdp_attention": None, "flash_attention": True}
    assert all("attn_implementation" not in s.changes for s in suggest(facts(flash, None, arch, hw), arch, hw))
