"""Pure parts of `axlint validate`: scaling, the probe search, the train spec, launch commands, the report."""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types
from pathlib import Path

import pytest

from axlint.validate.launch import choose_launcher, launch_command, run_ranks
from axlint.validate.probe import largest_fitting
from axlint.validate.report import ValidationReport
from axlint.validate.runner import runnable_config
from axlint.validate.scaling import scale_down
from axlint.facts import resolve_facts
from axlint.training.model import effective_attention
from axlint.training.spec import TrainSpec, cpu_attention, train_spec
from axlint.validate.measure import Meter, _physical_index, process_device_bytes

LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "bos_token_id": 128000,
            "eos_token_id": [128001, 128008], "tie_word_embeddings": False}
MIXTRAL = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "num_local_experts": 8,
           "num_experts_per_tok": 2}


def test_scale_down_keeps_the_shape_class() -> None:
    small = scale_down(LLAMA_8B)
    assert small["model_type"] == "llama" and small["num_hidden_layers"] == 2 and small["vocab_size"] == 512
    assert small["num_attention_heads"] // small["num_key_value_heads"] == 4  # GQA ratio kept
    assert small["num_key_value_heads"] == 2 and small["hidden_size"] == 8 * 16
    assert small["intermediate_size"] == 448  # 14336/4096 × 128
    assert small["bos_token_id"] == 511 and small["eos_token_id"] == [511, 511]
    assert LLAMA_8B["num_hidden_layers"] == 32  # input untouched


def test_scale_down_moe_and_odd_ratios() -> None:
    moe = scale_down(MIXTRAL)
    assert moe["num_local_experts"] == 4 and moe["num_experts_per_tok"] == 2
    qwen = scale_down({"hidden_size": 896, "num_attention_heads": 14, "num_key_value_heads": 2,
                       "num_hidden_layers": 24, "layer_types": ["full_attention"] * 24, "intermediate_size": 4864})
    assert qwen["num_attention_heads"] == 14 and qwen["num_key_value_heads"] == 2
    assert qwen["hidden_size"] == 14 * 16 and qwen["layer_types"] == ["full_attention"] * 2


def test_largest_fitting_doubles_then_bisects() -> None:
    outcome = largest_fitting(lambda v: v <= 11)
    assert outcome.largest_fit == 11
    assert [v for v, _ in outcome.tried] == [1, 2, 4, 8, 16, 12, 10, 11]
    assert largest_fitting(lambda v: False).largest_fit is None
    assert largest_fitting(lambda v: True, limit=100).largest_fit == 100
    seq = largest_fitting(lambda v: v <= 5000, start=256, granularity=256, limit=1 << 16)
    assert seq.largest_fit == 4864


def test_train_spec_reads_axolotl_semantics() -> None:
    spec = train_spec(resolve_facts({"micro_batch_size": 4, "sequence_len": 2048, "bf16": "auto",
                                     "gradient_checkpointing": True, "adapter": "qlora", "load_in_4bit": True,
                                     "lora_target_linear": True, "learning_rate": "2e-4"}))
    assert spec.tokens == 8192 and spec.dtype == "bfloat16" and spec.quantized
    assert spec.gradient_checkpointing_kwargs == {"use_reentrant": True}
    assert spec.lora_target_modules == "all-linear" and spec.learning_rate == 2e-4
    linear = {"adapter": "lora", "lora_target_linear": True, "lora_target_modules": ["embed_tokens"]}
    assert train_spec(resolve_facts(linear), ("q_proj", "v_proj")).lora_target_modules == [
        "embed_tokens", "q_proj", "v_proj"]  # Axolotl's list: the written targets and every Linear's name
    assert train_spec(resolve_facts({"flash_attention": True, "sdp_attention": True})).attn_implementation \
        == "flash_attention_2"
    assert train_spec(resolve_facts({})).attn_implementation == "sdpa"
    assert cpu_attention("flash_attention_2") == "sdpa" and cpu_attention("eager") == "eager"


def test_launch_commands_use_existing_launchers(tmp_path: Path) -> None:
    job = tmp_path / "job.json"
    ds = launch_command(job, processes=8, launcher="deepspeed", hostfile=tmp_path / "hosts", port=1234)
    assert ds[1:3] == ["-m", "deepspeed.launcher.runner"] and "--hostfile" in ds and "--no_local_rank" in ds
    tr = launch_command(job, processes=2, launcher="torchrun", hostfile=None, port=1234)
    assert tr[1:3] == ["-m", "torch.distributed.run"] and tr[tr.index("--nproc_per_node") + 1] == "2"
    assert choose_launcher(8, None, True) == "deepspeed" and choose_launcher(2, None, False) == "torchrun"
    assert choose_launcher(1, None, True) == "direct" and choose_launcher(1, tmp_path, False) == "deepspeed"


def test_report_compares_measured_and_estimated() -> None:
    gib = 2**30
    ranks = [{"rank": 0, "status": "ok", "steps_completed": 2, "losses": [2.0, 1.9], "tokens_per_second": 1000.0,
              "memory": {"peak_allocated_bytes": 30 * gib, "peak_reserved_bytes": 34 * gib,
                         "peak_device_bytes": 36 * gib, "model_states_bytes": 20 * gib}},
             {"rank": 1, "status": "oom", "oom": {"step": 1, "phase": "optimizer"}}]
    estimate = {"per_gpu": {"components_gib": {"weights": 16.0, "optimizer_states": 4.0}, "peak_allocated_gib": 33.0,
                            "peak_reserved_gib": 36.0, "peak_device_gib": 37.0}}
    report = ValidationReport("c.yml", "m", "llama", "cuda", 2, 2, "deepspeed", None, ranks, estimate)
    rows = {r["component"].split(" (")[0]: r for r in report.comparison()}
    assert rows["peak allocated"]["error_percent"] == 10.0
    assert rows["activations peak"]["measured_gib"] == 10.0 and rows["activations peak"]["estimated_gib"] == 13.0
    assert report.status == "oom"
    text = report.render_text()
    assert "out of memory at step 1 during optimizer" in text and "+10.0%" in text


def _spec(attn: str) -> TrainSpec:
    return TrainSpec(micro_batch_size=1, sequence_len=2048, gradient_accumulation_steps=1, dtype="bfloat16",
                     attn_implementation=attn, gradient_checkpointing=False, gradient_checkpointing_kwargs={},
                     adapter=None, quantization=None, lora_r=8, lora_alpha=16, lora_dropout=0.0,
                     lora_target_modules=[], learning_rate=1e-4, optimizer="adamw_torch")


def test_flash_attention_without_the_package_runs_sdpa_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "flash_attn" else real_find_spec(name, *a))
    impl, note = effective_attention(_spec("flash_attention_2"), on_cuda=True)
    assert impl == "sdpa" and note is not None and "flash-attn package, which is not installed" in note
    assert effective_attention(_spec("sdpa"), on_cuda=True) == ("sdpa", None)
    impl, note = effective_attention(_spec("flash_attention_2"), on_cuda=False)
    assert impl == "sdpa" and note is not None and "not available on CPU" in note


def test_flash_attention_with_the_package_runs_as_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert effective_attention(_spec("flash_attention_2"), on_cuda=True) == ("flash_attention_2", None)


class _Process:
    def __init__(self, pid: int, used: int | None) -> None:
        self.pid, self.usedGpuMemory = pid, used


def _fake_nvml(processes: list[_Process], fail: bool = False) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def init() -> None:
        if fail:
            raise NVMLError("driver not loaded")

    nvml.NVMLError = NVMLError  # type: ignore[attr-defined]
    nvml.nvmlInit = init  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetHandleByIndex = lambda index: ("gpu", index)  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda handle: processes  # type: ignore[attr-defined]
    return nvml


def test_device_memory_is_this_process_nvml_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    others = [_Process(os.getpid() + 1, 50 * 2**30), _Process(os.getpid(), 3 * 2**30)]
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(others))
    assert process_device_bytes() == 3 * 2**30
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(others[:1]))
    assert process_device_bytes() is None  # this process is not listed (a container hiding PIDs)
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(others, fail=True))
    assert process_device_bytes() is None


def test_meter_falls_back_to_the_whole_gpu_when_nvml_cannot_say(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    import axlint.validate.measure as measure

    monkeypatch.setattr(measure, "process_device_bytes", lambda: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (70 * 2**30, 80 * 2**30))
    meter = Meter(on_cuda=True)
    meter.sample()
    assert (meter.peak_device, meter.source) == (10 * 2**30, "device")
    monkeypatch.setattr(measure, "process_device_bytes", lambda: 4 * 2**30)
    fresh = Meter(on_cuda=True)
    fresh.sample()
    assert (fresh.peak_device, fresh.source) == (4 * 2**30, "process")


def test_nvml_numbers_the_gpus_that_cuda_visible_devices_renumbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert _physical_index(1) == 5 and _physical_index(0) == 3
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert _physical_index(1) == 1


def test_the_forward_autocasts_as_accelerate_does_without_deepspeed() -> None:
    import torch

    from axlint.validate.worker import _autocast

    cuda = torch.device("cuda", 0)
    with pytest.warns(UserWarning) if not torch.cuda.is_available() else contextlib.nullcontext():
        context = _autocast(_spec("sdpa"), cuda)  # bf16 on a GPU: half-precision autocast
    assert isinstance(context, torch.autocast) and context.fast_dtype == torch.bfloat16
    assert isinstance(_autocast(_spec("sdpa"), torch.device("cpu")), contextlib.nullcontext)
    fp32 = TrainSpec(**{**_spec("sdpa").to_json(), "dtype": "float32"})
    assert isinstance(_autocast(fp32, cuda), contextlib.nullcontext)


def test_train_spec_carries_axolotl_s_fp32_embeddings() -> None:
    assert train_spec(resolve_facts({"bf16": True, "sdp_attention": True})).embeddings_fp32
    assert not train_spec(resolve_facts({"bf16": True, "flash_attention": True})).embeddings_fp32


def test_train_spec_carries_the_8bit_load_the_quantized_experts_and_cut_cross_entropy() -> None:
    """An 8-bit LoRA needs bitsandbytes as a 4-bit one does; quantize_moe_experts and the CCE plugin reach the worker."""
    glm = {"adapter": "lora", "load_in_8bit": True, "quantize_moe_experts": True,
           "plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]}
    spec = train_spec(resolve_facts(glm))
    assert spec.quantization == "int8" and spec.quantized and spec.quantize_experts and spec.cut_cross_entropy
    plain = train_spec(resolve_facts({"adapter": "lora", "quantize_moe_experts": True}))
    assert not (plain.quantized or plain.quantize_experts or plain.cut_cross_entropy)  # nothing to quantize
    assert not train_spec(resolve_facts({**glm, "cut_cross_entropy": False})).cut_cross_entropy


def test_without_its_package_cut_cross_entropy_is_dropped_from_the_run_and_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ranks run, and the estimate sizes, transformers' loss when the CCE package is missing on a GPU machine;
    the report says so and how to install it. With the package, or on CPU (where CCE is never applied), the config
    is run as written."""
    raw = {"adapter": "lora", "lora_mlp_kernel": False, "lora_qkv_kernel": False, "lora_o_kernel": False,
           "plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]}
    facts = resolve_facts(raw)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cut_cross_entropy" else real_find_spec(name, *a))
    config, notes = runnable_config(raw, facts, "cuda")
    assert config == {**raw, "cut_cross_entropy": False} and raw.get("cut_cross_entropy") is None
    assert resolve_facts(config).loss.value.value == "hf"
    assert len(notes) == 1 and "Cut Cross-Entropy is not installed here" in notes[0]
    assert "ml-cross-entropy.git@5f0c7a7" in notes[0]
    assert runnable_config(raw, facts, "cpu") == (raw, [])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert runnable_config(raw, facts, "cuda") == (raw, [])


def test_a_worker_that_writes_no_result_is_an_error_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank process that exits 0 without writing rank-0.json (a worker module that never ran main) is reported
    as an error with the launcher's output, not as a run with no ranks."""
    monkeypatch.setattr("axlint.validate.launch.launch_command",
                        lambda *a, **k: [sys.executable, "-c", "print('nothing written')"])
    ranks, tail = run_ranks({"device": "cpu"}, tmp_path, processes=1, launcher="direct", hostfile=None)
    assert ranks[0]["status"] == "error" and "no rank wrote a result" in ranks[0]["message"]
    assert "nothing written" in ranks[0]["log"] and "nothing written" in tail


def test_upcast_embeddings_casts_the_embeddings_and_norms_as_axolotl_does() -> None:
    import torch

    from axlint.training.model import build_model, upcast_embeddings

    config = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 256, "tie_word_embeddings": True}
    spec = train_spec(resolve_facts({"bf16": True}))
    model = build_model("llama", config, spec, attn="sdpa", device="cpu")
    upcast_embeddings(model, "llama")
    inner = model.model
    assert inner.embed_tokens.weight.dtype == torch.float32
    assert model.lm_head.weight is inner.embed_tokens.weight  # still tied
    assert inner.norm.weight.dtype == torch.float32 and inner.layers[0].input_layernorm.weight.dtype == torch.float32
    assert inner.layers[0].self_attn.q_proj.weight.dtype == torch.bfloat16


UPCAST_CASES = {
    "qwen3_moe: the 3-D experts of a model whose Linears are converted": (
        "qwen3_moe", {"hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 2,
                      "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "num_experts": 4,
                      "num_experts_per_tok": 2},
        {"load_in_4bit": True, "adapter": "qlora"},
        ("model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.mlp.experts.down_proj"),
        ("model.layers.0.self_attn.q_proj.weight",)),
    "falcon: the FalconLinear layers a quantized load leaves": (
        "falcon", {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_kv_heads": 1,
                   "multi_query": True, "parallel_attn": True, "new_decoder_architecture": False, "bias": False,
                   "vocab_size": 256},
        {"load_in_8bit": True, "adapter": "lora"},
        ("transformer.h.0.self_attention.query_key_value.weight", "transformer.h.0.mlp.dense_4h_to_h.weight"),
        ("transformer.h.0.input_layernorm.weight", "transformer.word_embeddings.weight")),
}
"""(model type, config, the Axolotl keys of the load, the parameters PEFT's k-bit preparation makes fp32, some it
leaves in bf16)."""


@pytest.mark.parametrize("case", list(UPCAST_CASES))
def test_upcast_unquantized_casts_what_the_kbit_preparation_casts(case: str) -> None:
    import torch

    from axlint.training.model import build_model, upcast_unquantized

    model_type, config, load, fp32, bf16 = UPCAST_CASES[case]
    spec = train_spec(resolve_facts({"bf16": True, **load}))
    assert spec.experts_fp32
    model = build_model(model_type, config, spec, attn="sdpa", device="cpu")
    upcast_unquantized(model)
    dtypes = {name: p.dtype for name, p in model.named_parameters()}
    assert {name: dtypes[name] for name in fp32 + bf16} == {**{n: torch.float32 for n in fp32},
                                                             **{n: torch.bfloat16 for n in bf16}}


QWEN35_TINY = {"model_type": "qwen3_5", "tie_word_embeddings": False,
               "text_config": {"model_type": "qwen3_5_text", "vocab_size": 512, "hidden_size": 64,
                               "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                               "num_key_value_heads": 2, "head_dim": 16, "full_attention_interval": 4,
                               "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_num_key_heads": 2,
                               "linear_num_value_heads": 4, "linear_value_head_dim": 16},
               "vision_config": {"model_type": "qwen3_5_vision", "depth": 2, "hidden_size": 32,
                                 "intermediate_size": 64, "num_heads": 2, "patch_size": 16, "temporal_patch_size": 2,
                                 "spatial_merge_size": 2, "in_channels": 3, "out_hidden_size": 64,
                                 "num_position_embeddings": 64}}


def test_the_gpu_job_builds_the_multimodal_model_axolotl_loads_and_the_cpu_job_its_scaled_decoder() -> None:
    """Axolotl loads Qwen3.5 with its vision tower (transformers maps qwen3_5 for image-text-to-text), where the
    causal-LM class would be text only: the GPU job builds what the estimate counts, parameter for parameter."""
    import torch

    from axlint.architectures import Architecture
    from axlint.training.model import build_model
    from axlint.training.spec import job_facts
    from axlint.validate.runner import model_job

    arch = Architecture.from_config("test/qwen3.5", "model-config", QWEN35_TINY)
    spec = train_spec(resolve_facts({"bf16": True}))
    model_type, config, scaled = model_job(arch, "cuda")
    assert (model_type, scaled) == ("qwen3_5", None)
    with torch.device("meta"):
        model = build_model(model_type, config, spec, attn="sdpa")
    assert type(model).__name__ == "Qwen3_5ForConditionalGeneration"
    assert sum(p.numel() for p in model.parameters()) == arch.total_params > arch.decoder_params
    zero3 = {"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto"}}
    facts = job_facts({"model_config": config, "axolotl": {"bf16": True}, "ds_raw": zero3, "world_size": 1})
    assert facts.ds["zero_optimization"]["reduce_bucket_size"] == 64 * 64  # the decoder's hidden size, squared
    model_type, config, scaled = model_job(arch, "cpu")
    assert model_type == "qwen3_5_text" and config is scaled and "vision_config" not in config
    with torch.device("meta"):
        text = build_model(model_type, config, spec, attn="sdpa")
    assert type(text).__name__ == "Qwen3_5ForCausalLM"


def test_a_text_model_builds_as_a_causal_lm() -> None:
    import torch

    from axlint.training.model import build_model

    spec = train_spec(resolve_facts({"bf16": True}))
    with torch.device("meta"):
        model = build_model("llama", LLAMA_8B, spec, attn="sdpa")
    assert type(model).__name__ == "LlamaForCausalLM"


def test_axolotl_s_fused_lora_kernels_are_turned_off_in_the_run_and_said() -> None:
    """The ranks run PEFT's LoRA layers: where Axolotl would run its fused LoRA kernels (on by default for LoRA),
    validate writes their flags false, so that the run and its estimate count PEFT's layers, and says so."""
    raw = {"adapter": "qlora", "load_in_4bit": True}
    config, notes = runnable_config(raw, resolve_facts(raw), "cpu", "llama")
    assert config == {**raw, "lora_mlp_kernel": False, "lora_qkv_kernel": False, "lora_o_kernel": False,
                      "lora_embedding_kernel": False}
    assert resolve_facts(config).lora_kernels == ()
    assert notes == ["Axolotl would run its fused LoRA kernels (lora_mlp_kernel, lora_qkv_kernel, lora_o_kernel); "
                     "validate runs PEFT's LoRA layers, which keep more for backward, and estimates those"]
    assert runnable_config(raw, resolve_facts(raw), "cpu", "paddleocr_vl") == (raw, [])  # Axolotl runs none there
    full = {"learning_rate": 1e-5}
    assert runnable_config(full, resolve_facts(full), "cuda") == (full, [])
