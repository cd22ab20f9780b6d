"""`axlint estimate`: the JSON contract of DESIGN.md, the table, the --fit grid, --simulate, exit codes."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from axlint.cli import cli

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ("llama3-8b-fft-zero3.yml", "llama3-8b-lora.yml", "ds_zero3.json")
COMPONENTS = ["weights", "gradients", "optimizer_states", "master_weights", "activations", "logits",
              "sharding_buffers", "cuda_context", "allocator_slack"]


@pytest.fixture()
def project(tmp_path, monkeypatch) -> Path:
    for name in FIXTURES:
        shutil.copy2(ROOT / "fixtures" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    monkeypatch.delenv("PYTORCH_ALLOC_CONF", raising=False)
    return tmp_path


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["estimate", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def estimate_json(*args: str) -> tuple[int, dict]:
    code, out, err = invoke(*args, "--format", "json")
    assert code in (0, 1), err
    return code, json.loads(out)  # one JSON object and nothing else on stdout


# ---------------------------------------------------------------------------------------------------- JSON contract


def check_contract(data: dict) -> None:
    """Keys and types as DESIGN.md states them, with what decides the fit (required_gib, eval_required_gib)."""
    assert list(data) == ["config", "model", "hardware", "assumptions", "per_gpu", "eval_peak_device_gib",
                          "eval_required_gib", "cpu_offload_gib", "fits", "headroom_gib", "verdict"]
    assert isinstance(data["config"], str)
    assert list(data["model"]) == ["id", "source", "parameters"]
    assert isinstance(data["model"]["id"], str) and isinstance(data["model"]["source"], str)
    assert type(data["model"]["parameters"]) is int
    assert list(data["hardware"]) == ["gpu", "count", "memory_gib"]
    assert isinstance(data["hardware"]["gpu"], str) and type(data["hardware"]["count"]) is int
    assert isinstance(data["hardware"]["memory_gib"], (int, float))
    assert isinstance(data["assumptions"], list) and all(isinstance(a, str) for a in data["assumptions"])
    per_gpu = data["per_gpu"]
    assert list(per_gpu) == ["components_gib", "peak_allocated_gib", "peak_reserved_gib", "peak_device_gib",
                             "required_gib"]
    assert list(per_gpu["components_gib"]) == COMPONENTS
    numbers = [*per_gpu["components_gib"].values(), per_gpu["peak_allocated_gib"], per_gpu["peak_reserved_gib"],
               per_gpu["peak_device_gib"], per_gpu["required_gib"], data["eval_peak_device_gib"],
               data["eval_required_gib"], data["cpu_offload_gib"], data["headroom_gib"]]
    assert all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers)
    assert type(data["fits"]) is bool
    assert data["fits"] == (data["headroom_gib"] >= 0)
    assert data["verdict"] in ("fits", "does_not_fit", "unknown")
    assert data["verdict"] == "unknown" or data["verdict"] == ("fits" if data["fits"] else "does_not_fit")
    assert data["headroom_gib"] == pytest.approx(data["hardware"]["memory_gib"] - per_gpu["required_gib"], abs=0.02)
    assert sum(per_gpu["components_gib"].values()) == pytest.approx(per_gpu["peak_device_gib"], abs=0.1)
    assert per_gpu["peak_allocated_gib"] <= per_gpu["peak_reserved_gib"] <= per_gpu["peak_device_gib"]
    assert per_gpu["peak_allocated_gib"] <= per_gpu["required_gib"] <= per_gpu["peak_device_gib"]


@pytest.mark.parametrize(("spec", "gpu", "count", "memory"), [
    ("8xH100", "H100-80GB", 8, 79.2), ("1xA100-40GB", "A100-40GB", 1, 39.4), ("2x24GiB", "24GiB", 2, 24.0),
])
def test_json_contract_for_each_hardware_spelling(project, spec, gpu, count, memory):
    code, data = estimate_json("llama3-8b-lora.yml", "--hardware", spec)
    check_contract(data)
    assert data["hardware"] == {"gpu": gpu, "count": count, "memory_gib": memory}
    # the fixture evaluates (val_set_size), so the eval peak counts too: 44 GiB of full eval logits on a 40 GB card
    assert code == (0 if data["fits"] and data["eval_required_gib"] <= memory else 1)
    assert not any("hardware assumed" in a for a in data["assumptions"])


def test_json_states_the_default_hardware_assumption(project):
    code, data = estimate_json("llama3-8b-fft-zero3.yml")
    check_contract(data)
    assert data["hardware"] == {"gpu": "H100-80GB", "count": 8, "memory_gib": 79.2}
    assert "hardware assumed: 8x H100-80GB (pass --hardware)" in data["assumptions"]
    assert data["model"] == {"id": "meta-llama/Llama-3.1-8B", "source": "catalog", "parameters": 8030261248}
    assert code == 1 and data["fits"] is False


def test_single_gpu_default_for_a_config_without_sharding(project):
    _, data = estimate_json("llama3-8b-lora.yml")
    assert data["hardware"]["count"] == 1 and "hardware assumed: 1x H100-80GB (pass --hardware)" in data["assumptions"]


def test_hardware_from_the_settings_file(project):
    (project / ".axlint.toml").write_text('hardware = "4xA100-40GB"\n', encoding="utf-8")
    _, data = estimate_json("llama3-8b-lora.yml")
    assert data["hardware"] == {"gpu": "A100-40GB", "count": 4, "memory_gib": 39.4}


def test_model_config_path_resolves_an_unknown_model(project):
    (project / "private.yml").write_text((project / "llama3-8b-lora.yml").read_text().replace(
        "meta-llama/Llama-3.1-8B", "my-org/private-8b"), encoding="utf-8")
    config = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}
    (project / "config.json").write_text(json.dumps(config), encoding="utf-8")
    _, data = estimate_json("private.yml", "--model-config", "config.json")
    assert data["model"]["source"] == "model-config" and data["model"]["parameters"] == 8030261248


# ---------------------------------------------------------------------------------------------------- table


def test_fft_fixture_table_does_not_fit(project):
    code, out, _ = invoke("llama3-8b-fft-zero3.yml")
    assert code == 1
    assert "DOES NOT FIT: 275.94 GiB > 79.20 GiB per GPU" in out
    assert "eval: DOES NOT FIT" in out
    assert "8 × H100-80GB, 79.2 GiB per GPU (assumed: pass --hardware)" in out
    assert "hardware assumed: 8x H100-80GB (pass --hardware)" in out
    assert "DeepSpeed ZeRO-3 over 8 GPUs · no gradient checkpointing" in out
    # without checkpointing even one micro batch with the fused loss does not fit: Liger 0.8.0 (Axolotl's pin) adds
    # the lm_head gradient through a product and its fp32 copy (2.9 GiB for this vocabulary)
    assert "1. turn on gradient checkpointing; use Liger's fused linear cross-entropy; eval_batch_size 8->4" in out
    assert "2. turn on gradient checkpointing; micro_batch_size 4->2 with gradient_accumulation_steps 2->4" in out
    assert "throughput 0.75× (≈25 % slower)" in out and "throughput 0.73× (≈27 % slower)" in out


def test_lora_fixture_table_fits_on_one_h100(project):
    code, out, _ = invoke("llama3-8b-lora.yml", "--hardware", "1xH100")
    assert code == 0
    assert "FITS: 23.81 of 79.20 GiB per GPU" in out and "DOES NOT FIT" not in out
    assert "turn off gradient checkpointing" not in out  # 75 GiB without: above the 85 % that dropping a saver keeps to


def test_table_bars_have_a_fixed_width(project):
    from axlint.report.estimate_table import BAR_WIDTH, LABELS

    _, out, _ = invoke("llama3-8b-fft-zero3.yml")
    rows = [line for line in out.splitlines() if line[2:].startswith(tuple(LABELS.values()))]
    assert len(rows) == len(LABELS)
    assert len({len(row.split("%")[0]) for row in rows}) == 1  # the GiB and % columns line up
    activations = next(row for row in rows if row[2:].startswith("activations"))
    assert activations[25:25 + BAR_WIDTH].endswith("▶")  # 197 GiB overflows the 79.2 GiB scale


def test_bar_scale():
    from axlint.report.estimate_table import BAR_WIDTH, bar

    assert bar(0, 80) == " " * BAR_WIDTH
    assert bar(40, 80) == "█" * (BAR_WIDTH // 2) + " " * (BAR_WIDTH // 2)
    assert bar(80, 80) == "█" * BAR_WIDTH
    assert bar(81, 80) == "█" * (BAR_WIDTH - 1) + "▶"
    assert bar(80 / BAR_WIDTH / 8, 80).startswith("▏")


def test_expandable_segments_from_the_environment(project, monkeypatch):
    _, plain = estimate_json("llama3-8b-lora.yml", "--hardware", "1xH100")
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    _, data = estimate_json("llama3-8b-lora.yml", "--hardware", "1xH100")
    assert data["per_gpu"]["peak_device_gib"] < plain["per_gpu"]["peak_device_gib"]
    assert any("expandable_segments" in a for a in data["assumptions"])


# ---------------------------------------------------------------------------------------------------- --fit


def test_fit_grid_is_monotone(project):
    code, out, _ = invoke("llama3-8b-fft-zero3.yml", "--fit", "--format", "json", "--micro-batch-sizes", "8,1,2,4",
                          "--sequence-lens", "1024,4096,2048,8192")
    grid = json.loads(out)
    assert code == 1
    assert grid["micro_batch_sizes"] == [1, 2, 4, 8] and grid["sequence_lens"] == [1024, 2048, 4096, 8192]
    peaks, fits = grid["required_gib"], grid["fits"]
    for row in peaks:
        assert row == sorted(row)
    for column in zip(*peaks):
        assert list(column) == sorted(column)
    assert fits == [[p <= grid["capacity_gib"] for p in row] for row in peaks]
    assert fits[0][0] and not fits[-1][-1]


def test_fit_grid_table_marks_the_configured_cell(project):
    code, out, _ = invoke("llama3-8b-lora.yml", "--fit", "--hardware", "1x28GiB", "--micro-batch-sizes", "1,2,4",
                          "--sequence-lens", "2048,4096,8192")
    assert code == 1  # training fits in 28 GiB, the eval (full logits, 39 GiB) does not
    row = next(line for line in out.splitlines() if line.strip().startswith("2 "))
    assert "[23.8]" in row and "OOM" not in row
    assert "OOM 30" in next(line for line in out.splitlines() if line.strip().startswith("4 "))


@pytest.mark.parametrize("value", ["a,b", "0,1", ""])
def test_bad_grid_axes_are_usage_errors(project, value):
    code, _, err = invoke("llama3-8b-lora.yml", "--fit", "--micro-batch-sizes", value)
    assert code == 2 and "--micro-batch-sizes" in err


# ---------------------------------------------------------------------------------------------------- exit 2


def test_unknown_model_exits_2_naming_model_config(project):
    (project / "private.yml").write_text("base_model: my-org/private-7b\nsequence_len: 4096\n", encoding="utf-8")
    code, out, err = invoke("private.yml")
    assert code == 2 and out == ""
    assert "my-org/private-7b" in err and "--model-config" in err


def test_a_deepspeed_json_is_not_an_axolotl_config(project):
    code, _, err = invoke("ds_zero3.json")
    assert code == 2 and "Axolotl YAML" in err


def test_missing_deepspeed_file_exits_2(project):
    (project / "broken.yml").write_text("base_model: meta-llama/Llama-3.1-8B\ndeepspeed: nowhere.json\n",
                                        encoding="utf-8")
    code, _, err = invoke("broken.yml")
    assert code == 2 and "nowhere.json" in err


def test_hardware_local_without_gpus_exits_2(project, monkeypatch):
    monkeypatch.setattr("axlint.hardware.detect_local_gpus", lambda: None)
    code, _, err = invoke("llama3-8b-lora.yml", "--hardware", "local")
    assert code == 2 and "nvidia-smi" in err


def test_hardware_local_uses_what_nvidia_smi_reports(project, monkeypatch):
    from axlint.hardware import parse_smi_output

    monkeypatch.setattr("axlint.hardware.detect_local_gpus",
                        lambda: parse_smi_output("NVIDIA A100-SXM4-40GB, 40960\nNVIDIA A100-SXM4-40GB, 40960\n"))
    _, data = estimate_json("llama3-8b-lora.yml", "--hardware", "local")
    assert data["hardware"] == {"gpu": "A100-40GB", "count": 2, "memory_gib": 39.4}
    assert any("detected with nvidia-smi" in a for a in data["assumptions"])


# ---------------------------------------------------------------------------------------------------- --simulate


def test_simulate_without_the_extra_exits_2_with_the_install_command(project, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails, as without the extra
    code, out, err = invoke("llama3-8b-lora.yml", "--simulate")
    assert code == 2 and out == ""
    assert "pip install 'axlint[simulate]'" in err and "torch" in err


def test_simulate_prints_the_simulated_peak_next_to_the_analytic_one(project, monkeypatch):
    gib = 2**30
    fake = SimpleNamespace(per_gpu_bytes={"parameters": 15 * gib, "buffers": 0, "gradients": gib // 4,
                                          "optimizer_states": gib // 2, "master_weights": 0, "activations": 3 * gib,
                                          "temporaries": gib, "other": 0},
                           seconds=12.5, notes=["sdpa instead of flash_attention_2 on CPU"], setup=None,
                           to_json=lambda: {"per_gpu": {"peak_allocated_gib": 19.75}})
    monkeypatch.setattr("axlint.simulate.simulate", lambda facts, arch, hw: fake)
    code, out, _ = invoke("llama3-8b-lora.yml", "--hardware", "1xH100", "--simulate")
    assert code == 0
    assert "simulation (real model code on fake tensors, 12.5 s) vs analytic" in out
    simulated = out.split("simulation (")[1]
    weights = next(line for line in simulated.splitlines() if line.strip().startswith("weights"))
    assert weights.split()[-2:] == ["15.00", "15.11"]
    assert "sdpa instead of flash_attention_2 on CPU" in out
    _, data = estimate_json("llama3-8b-lora.yml", "--hardware", "1xH100", "--simulate")
    assert data["simulation"] == {"per_gpu": {"peak_allocated_gib": 19.75}}


def test_a_failing_simulation_exits_2(project, monkeypatch):
    def boom(*args):
        raise NotImplementedError("MemTracker does not support this")

    monkeypatch.setattr("axlint.simulate.simulate", boom)
    code, _, err = invoke("llama3-8b-lora.yml", "--simulate")
    assert code == 2 and "--simulate failed: NotImplementedError" in err


def test_lora_on_quantized_experts_is_not_simulated_and_says_why(project):
    """quantize_moe_experts with an expert weight targeted: what PEFT does there depends on its release (0.19 trains
    only the last expert weight, 0.21 stops), so the simulation refuses before it builds anything: exit 2, and why."""
    (project / "glm.yml").write_text(
        "base_model: zai-org/GLM-4.7-Flash\nadapter: qlora\nload_in_4bit: true\nquantize_moe_experts: true\n"
        "lora_target_modules: [q_proj]\nlora_target_parameters: [mlp.experts.down_proj]\nsequence_len: 2048\n"
        "micro_batch_size: 1\ngradient_accumulation_steps: 1\nlearning_rate: 0.0001\n"
        "datasets:\n  - path: x\n    type: alpaca\n", encoding="utf-8")
    code, out, err = invoke("glm.yml", "--hardware", "1xH100", "--simulate")
    assert code == 2 and out == ""
    assert "--simulate: LoRA on routed experts stored quantized" in err and "this process runs PEFT" in err


@pytest.mark.parametrize("extra", ["peft_layer_replication: [[0, 8], [4, 12]]\n"])
def test_lora_settings_the_simulation_would_leave_out_are_not_simulated(project, extra):
    """PEFT's layer replication: the simulation's plain LoRA would run without it, so it refuses: exit 2, and which
    setting."""
    (project / "dora.yml").write_text("base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_target_linear: true\n"
                                      "sequence_len: 1024\n" + extra, encoding="utf-8")
    code, out, err = invoke("dora.yml", "--hardware", "1xH100", "--simulate")
    key = extra.split(":", 1)[0]
    assert (code, out) == (2, "") and f"--simulate: `{key}` is not simulated" in err


def test_dora_in_axolotls_lora_kernels_is_not_simulated_and_says_why(project):
    """DoRA on one GPU, where Axolotl turns its fused LoRA kernels on: the simulation's stand-ins run plain LoRA, so
    it refuses, exit 2, and says how the run would use PEFT's DoRA layers, which it simulates."""
    (project / "dora.yml").write_text("base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_target_linear: true\n"
                                      "sequence_len: 1024\npeft_use_dora: true\n", encoding="utf-8")
    code, out, err = invoke("dora.yml", "--hardware", "1xH100", "--simulate")
    assert (code, out) == (2, "") and "--simulate: DoRA inside Axolotl's fused LoRA kernels (" in err
    assert "`lora_mlp_kernel`, `lora_qkv_kernel` and `lora_o_kernel` false" in err


def test_missing_config_and_conflicting_flags_exit_2(project):
    code, _, err = invoke("nothere.yml")
    assert code == 2 and "not found" in err
    code, _, err = invoke("llama3-8b-lora.yml", "--fit", "--simulate")
    assert code == 2 and "--fit and --simulate" in err


def test_online_that_cannot_fetch_says_so_and_does_not_advise_online(project, monkeypatch):
    """An unknown model with --online and no network: the error names the fetch, not `--online` again."""
    monkeypatch.setattr("axlint.architectures.resolve._fetch_hub_config", lambda model_id: None)
    (project / "unknown.yml").write_text("base_model: some-org/unknown-model-7b\nlearning_rate: 0.0001\n"
                                         "micro_batch_size: 1\ngradient_accumulation_steps: 1\n"
                                         "datasets:\n  - path: x\n    type: alpaca\n", encoding="utf-8")
    code, _, err = invoke("unknown.yml", "--online")
    assert code == 2 and "could not be fetched from the Hub" in err and "(or --online)" not in err
    code, _, err = invoke("unknown.yml")
    assert code == 2 and "(or --online)" in err


FULL_8B_YAML = ("base_model: meta-llama/Llama-3.1-8B\nlearning_rate: 0.0001\nsequence_len: 4096\nsample_packing: true\n"
                "flash_attention: true\nmicro_batch_size: 1\ngradient_accumulation_steps: 4\n"
                "gradient_checkpointing: true\nbf16: true\noptimizer: adamw_torch_fused\n"
                "datasets:\n  - path: a\n    type: alpaca\n")


def test_offload_shows_the_host_ram_it_needs_against_host_memory(project):
    (project / "fft.yml").write_text(FULL_8B_YAML)
    out = CliRunner().invoke(cli, ["estimate", "fft.yml", "--hardware", "1xA100-40GB", "--host-memory", "1TiB"])
    assert out.exit_code == 1, out.output
    assert "CPU RAM for the offload: 134.6 GiB per host (the host has 1024 GiB)" in out.output


def test_with_too_little_host_ram_the_estimate_says_how_many_gpus_would_fit(project):
    (project / "fft.yml").write_text(FULL_8B_YAML)
    out = CliRunner().invoke(cli, ["estimate", "fft.yml", "--hardware", "1xA100-40GB", "--host-memory", "64GiB"])
    assert out.exit_code == 1, out.output
    assert ("nothing axlint can change fits it on 1×A100-40GB; on 8×A100-40GB it fits with deepspeed: "
            "deepspeed_configs/zero3_bf16.json") in out.output
    check = CliRunner().invoke(cli, ["check", "fft.yml", "--hardware", "1xA100-40GB", "--host-memory", "64GiB",
                                     "--select", "MEM001", "--output-format", "concise"])
    assert "fft.yml:1:13: MEM001 [error]" in check.output and "on 8×A100-40GB it fits" in check.output


def test_a_bad_host_memory_is_a_usage_error(project):
    out = CliRunner().invoke(cli, ["estimate", "llama3-8b-lora.yml", "--host-memory", "lots"])
    assert out.exit_code == 2 and "--host-memory 'lots'" in out.output


def test_a_run_whose_cache_passes_the_gpu_still_fits(project):
    """24.2 GiB reserved + context, 23.81 GiB resident on a 24 GiB card: the caching allocator gives its cache back
    and retries before raising, so training fits and the table says why the device peak is above the card."""
    code, out, _ = invoke("llama3-8b-lora.yml", "--hardware", "1x24GiB")
    assert "peak device            ███████████████████████████████▶    24.91    104 %" in out
    assert "FITS: 23.81 of 24.00 GiB per GPU" in out
    assert "PyTorch frees it and retries before it raises" in out
    assert code == 1 and "eval: DOES NOT FIT" in out  # the eval batch's full logits do not fit


FALCON_QLORA = ("base_model: tiiuae/falcon-7b\nload_in_4bit: true\nadapter: qlora\nlora_target_linear: true\n"
                "sequence_len: 2048\nsample_packing: true\nmicro_batch_size: 1\ngradient_checkpointing: true\nbf16: true\n")
"""A Falcon QLoRA: the 4-bit load converts none of its layers, and the forward's copies of the fp32 weights PEFT's
k-bit preparation leaves are not counted, so the estimate is a lower bound."""


def test_a_lower_bound_offers_no_change(project):
    (project / "falcon.yml").write_text(FALCON_QLORA)
    code, out, _ = invoke("falcon.yml", "--hardware", "1x24GB")
    assert code == 1
    assert "suggestions: none, as the estimate is only a lower bound here (see the assumptions)" in out
    assert "fastest first" not in out
    code, out, _ = invoke("falcon.yml", "--hardware", "1xH100")
    assert code == 0 and "not needed here" not in out
    (project / "falcon.yml").write_text(FALCON_QLORA.replace("load_in_4bit: true\nadapter: qlora", "adapter: lora"))
    code, out, _ = invoke("falcon.yml", "--hardware", "1xH100")
    assert code == 0 and "not needed here" in out  # the same run on bf16 weights is sized: the savers it can drop


def test_the_verdict_says_no_more_than_the_estimate_covers(project):
    """A lower bound (the Falcon QLoRA's unquantized layers) says that the run does not fit, never that it fits; an
    estimate that misses parts either way (`lora_rank_pattern` on a mixture-of-experts model) gives its number and
    no verdict; the JSON object
    carries the same verdict beside `fits`."""
    (project / "falcon.yml").write_text(FALCON_QLORA)
    code, out, _ = invoke("falcon.yml", "--hardware", "1x24GB")
    assert "DOES NOT FIT: at least " in out and "GiB per GPU (at least " in out
    assert estimate_json("falcon.yml", "--hardware", "1x24GB")[1]["verdict"] == "does_not_fit"
    code, out, _ = invoke("falcon.yml", "--hardware", "1xH100")
    assert "AT LEAST " in out and "so whether the run fits is not known" in out and "FITS:" not in out
    data = estimate_json("falcon.yml", "--hardware", "1xH100")[1]
    assert (data["fits"], data["verdict"]) == (True, "unknown")
    (project / "ranks.yml").write_text("base_model: Qwen/Qwen3-30B-A3B\nadapter: lora\nlora_target_linear: true\n"
                                       "sequence_len: 2048\nlora_rank_pattern:\n  q_proj: 64\n")
    for hardware in ("1xH100", "1x16GB"):
        code, out, _ = invoke("ranks.yml", "--hardware", hardware)
        assert "UNKNOWN: the estimate reads " in out and "FITS" not in out, hardware
        assert "fastest first" not in out and "not needed here" not in out
        assert estimate_json("ranks.yml", "--hardware", hardware)[1]["verdict"] == "unknown"
    assert "suggestions: none, as the estimate does not cover all this run does" in out
    assert estimate_json("llama3-8b-lora.yml", "--hardware", "1xH100")[1]["verdict"] == "fits"
