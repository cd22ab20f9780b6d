from axlint.architectures import resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.solver import fit_grid, suggest
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
        assert max(fixed.peak_device, fixed.eval_peak_device) / 2**30 <= 79.2 * 0.95 + 0.01
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
    assert suggestions[0].ds_changes == {"zero_optimization.stage": 3}


def test_fit_grid_is_monotone():
    hw = parse_hardware("1xH100")
    grid = fit_grid(facts(TOO_BIG, None, L8B, hw), L8B, hw, [1, 2, 4], [1024, 2048, 4096])
    for row in grid.peak_device_gib:
        assert list(row) == sorted(row)
    for col in zip(*grid.peak_device_gib):
        assert list(col) == sorted(col)
    assert grid.fits(0, 0) and not grid.fits(2, 2)
