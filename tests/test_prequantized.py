"""Checkpoints stored quantized (config.json ``quantization_config``) and LoRA on 3-D expert weights
(``lora_target_parameters``): the byte formulas, transformers' skip-pattern matching, the expert parameter names
against the real modelling code, PEFT's adapter count, and one estimate per quantization method."""
from __future__ import annotations

from typing import Any

import pytest

from axlint.architectures import Architecture
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.facts import unsized_parts
from axlint.memory.params import expert_parameters, trainable
from axlint.memory.prequantized import fp8_tensor_bytes, nvfp4_tensor_bytes, should_convert
from axlint.memory.setup import read_setup
from tests.resolved import facts
from tests.test_families import CONFIGS, _hf_config, _meta_model

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

H100 = parse_hardware("1xH100")
SMALL_MOE = {"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
             "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32, "tie_word_embeddings": False}
"""A Qwen3-MoE of two layers: per layer attention 64→64 q, 64→32 k / v, 64→64 o, router 4×64 and 4 experts of
gate / up 64→32, down 32→64."""
KERNELS = {"plugins": ["axolotl.integrations.kernels.KernelsPlugin"], "use_sonicmoe": True}
RUN = {"base_model": "test/small-moe", "sequence_len": 512, "micro_batch_size": 1, "bf16": True,
       "sample_packing": True, "adapter": "lora", "lora_r": 4, "lora_target_modules": ["q_proj"],
       "lora_target_parameters": ["experts.gate_up_proj", "experts.down_proj"]}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "ignore": ["lm_head", "model.layers.*.mlp.gate"]}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "float8_e4m3fn", "weight_block_size": [128, 128],
       "modules_to_not_convert": ["gate", "lm_head"]}


def _arch(quantization: dict[str, Any] | None) -> Architecture:
    config = {**SMALL_MOE, **({"quantization_config": quantization} if quantization else {})}
    return Architecture.from_config("test/small-moe", "model-config", config)


def _estimate(quantization: dict[str, Any] | None, **config: Any):
    arch = _arch(quantization)
    return estimate_memory(facts({**RUN, **config}, None, arch, H100), arch, H100)


def _unsized(quantization: dict[str, Any] | None, **config: Any) -> dict[str, str]:
    arch = _arch(quantization)
    return unsized_parts(arch, read_setup(facts({**RUN, **config}, None, arch, H100), arch).prequantized)


# ---- byte formulas -------------------------------------------------------------------------------------------

def test_nvfp4_tensor_is_half_a_byte_plus_a_scale_per_16_and_a_per_tensor_scale():
    assert nvfp4_tensor_bytes(32, 64) == 32 * 64 / 2 + 32 * 4 + 4
    assert nvfp4_tensor_bytes(32, 70) == 32 * 35 + 32 * 5 + 4  # a partial group of 16 has its own scale


def test_fp8_tensor_is_one_byte_plus_an_fp32_scale_per_block():
    assert fp8_tensor_bytes(256, 300, (128, 128)) == 256 * 300 + 4 * 2 * 3
    assert fp8_tensor_bytes(256, 300, None) == 256 * 300 + 4


@pytest.mark.parametrize("path", ["lm_head", "model.layers.1.mlp.gate", "model.layers.11.mlp.gate_proj",
                                  "model.layers.1.self_attn.q_proj", "model.layers.3.mlp.experts"])
@pytest.mark.parametrize("patterns", [("lm_head",), ("gate",), ("model.layers.1",), ("model.layers.*.mlp.gate",),
                                      ("self_attn",), ("experts",), ("model.layers.1[0-9]",)])
def test_skip_patterns_match_as_transformers_matches_them(path, patterns):
    from transformers.quantizers.quantizers_utils import should_convert_module

    assert should_convert(path, patterns) == should_convert_module(path, list(patterns))


# ---- expert parameters and lora_target_parameters ------------------------------------------------------------

MOE_FAMILIES = [(t, f) for t, variants in CONFIGS.items() for f in variants
                if Architecture.from_config("t", "model-config", _hf_config(t, f).to_dict()).expert_params]


@pytest.mark.parametrize("model_type, fields", MOE_FAMILIES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(MOE_FAMILIES)])
def test_expert_parameters_are_the_models_3d_parameters(model_type, fields):
    config = _hf_config(model_type, fields)
    model = _meta_model(config)
    prefix = "" if hasattr(model, "lm_head") else "model."  # a bare decoder names its modules from ``layers``
    real = {prefix + name: tuple(p.shape) for name, p in model.named_parameters()
            if name.endswith(("experts.gate_up_proj", "experts.up_proj", "experts.down_proj"))}
    arch = Architecture.from_config("t", "model-config", config.to_dict())
    ours = {path: (lin.count, lin.d_in, lin.d_out) for layer in range(arch.num_layers)
            for path, lin in expert_parameters(arch, layer)}
    if not ours:  # a family whose experts axlint does not lay out as gate_up_proj / down_proj
        assert not real or model_type == "dbrx"
        return
    assert set(ours) == set(real)
    for path, (count, d_in, d_out) in ours.items():
        assert real[path][0] == count and sorted(real[path][1:]) == sorted((d_in, d_out))


def test_lora_target_parameters_count_what_peft_builds():
    from peft import LoraConfig, get_peft_model

    config = transformers.AutoConfig.for_model(**SMALL_MOE)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj"],
                                                  target_parameters=RUN["lora_target_parameters"]))
    built = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    arch = _arch(None)
    setup = read_setup(facts(RUN, None, arch, H100), arch)
    assert trainable(arch, setup).adapter == built
    # q_proj 4·(64 + 64) per layer; gate_up 4·4·(64 + 64), down 4·4·(32 + 64) per layer
    assert built == 2 * (4 * 128 + 16 * 128 + 16 * 96)


def test_target_parameters_matching_nothing_add_nothing():
    arch = _arch(None)
    setup = read_setup(facts({**RUN, "lora_target_parameters": ["mlp.experts.w9"]}, None, arch, H100), arch)
    assert trainable(arch, setup).adapter == 2 * 4 * 128


# ---- estimates per method ------------------------------------------------------------------------------------

def _expert_weights(arch: Architecture) -> int:
    return arch.expert_params


def test_modelopt_nvfp4_keeps_experts_packed_and_the_rest_in_bf16():
    plain, packed = _estimate(None, **KERNELS), _estimate(NVFP4, **KERNELS)
    arch = _arch(None)
    experts = 2 * 4 * (2 * nvfp4_tensor_bytes(32, 64) + nvfp4_tensor_bytes(64, 32))
    assert packed.components["weights"] == pytest.approx(plain.components["weights"] - 2 * arch.expert_params + experts)
    assert any("ModelOpt NVFP4" in note for note in packed.assumptions)
    assert not _unsized(NVFP4, **KERNELS)


def test_modelopt_ignore_keeps_the_listed_experts_in_bf16():
    ignored = {**NVFP4, "ignore": ["model.layers.1.mlp.experts.*"]}
    plain, one_layer = _estimate(None, **KERNELS), _estimate(ignored, **KERNELS)
    experts = 4 * (2 * nvfp4_tensor_bytes(32, 64) + nvfp4_tensor_bytes(64, 32))
    assert one_layer.components["weights"] == pytest.approx(
        plain.components["weights"] - _arch(None).expert_params + experts)


def test_modelopt_without_the_kernels_plugin_is_unsized():
    assert "use_scattermoe or use_sonicmoe" in _unsized(NVFP4)["base_model: test/small-moe"]
    assert _unsized(NVFP4, plugins=KERNELS["plugins"], use_scattermoe=False)


def test_modelopt_other_algorithms_and_nonexpert_quantization_are_unsized():
    assert "FP8" in _unsized({**NVFP4, "quant_algo": "FP8"}, **KERNELS)["base_model: test/small-moe"]
    assert _unsized(NVFP4, **KERNELS, nonexpert_quantization="nf4")
    assert not _unsized(NVFP4, **KERNELS, nonexpert_quantization="bf16")


def test_fp8_checkpoint_keeps_linears_and_experts_in_fp8_with_block_scales():
    plain, fp8 = _estimate(None), _estimate(FP8)
    arch = _arch(None)
    per_layer = (fp8_tensor_bytes(64, 64, (128, 128)) * 2 + fp8_tensor_bytes(32, 64, (128, 128)) * 2
                 + 4 * (2 * fp8_tensor_bytes(32, 64, (128, 128)) + fp8_tensor_bytes(64, 32, (128, 128))))
    converted = 2 * (64 * 64 * 2 + 32 * 64 * 2) + arch.expert_params  # all but the router ("gate") and lm_head
    assert fp8.components["weights"] == pytest.approx(plain.components["weights"] - 2 * converted + 2 * per_layer)
    assert fp8.setup.prequantized.lm_head


def test_fp8_without_modules_to_not_convert_keeps_lm_head_and_with_a_list_converts_it():
    arch = _arch(None)
    listed = _estimate({**FP8, "modules_to_not_convert": ["gate"]})
    default = _estimate({k: v for k, v in FP8.items() if k != "modules_to_not_convert"})
    head = arch.vocab_size * arch.hidden_size
    assert default.components["weights"] - listed.components["weights"] == pytest.approx(
        2 * head - fp8_tensor_bytes(256, 64, (128, 128)))


def test_fp8_dequantized_is_the_plain_model():
    kwargs = {"model_quantization_config": "FineGrainedFP8Config",
              "model_quantization_config_kwargs": {"dequantize": True}}
    assert _estimate(FP8, **kwargs).components["weights"] == _estimate(None).components["weights"]


def test_bitnet_autobitlinear_trains_full_precision_weights_and_bitlinear_is_unsized():
    online = {"quant_method": "bitnet", "linear_class": "autobitlinear", "quantization_mode": "online"}
    assert _estimate(online).components["weights"] == _estimate(None).components["weights"]
    assert "bitlinear" in _unsized({"quant_method": "bitnet", "linear_class": "bitlinear"})[
        "base_model: test/small-moe"]


def test_bitsandbytes_checkpoint_is_sized_as_the_4bit_load():
    bnb = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_use_double_quant": True,
           "bnb_4bit_quant_type": "nf4"}
    assert _estimate(bnb).components["weights"] == pytest.approx(
        _estimate(None, adapter="qlora", load_in_4bit=True).components["weights"])


@pytest.mark.parametrize("quantization", [{"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"},
                                          {"quant_method": "gptq", "bits": 4}, {"quant_method": "mxfp4"}])
def test_methods_axlint_cannot_size_make_the_verdict_unknown(quantization):
    assert quantization["quant_method"] in _unsized(quantization)["base_model: test/small-moe"]


def test_adapted_experts_keep_their_inputs():
    without = _estimate(None, lora_target_parameters=None)
    with_experts = _estimate(None)
    assert with_experts.components["activations"] > without.components["activations"]


# ---- catalog entries and the corpus ------------------------------------------------------------------------------

def test_minimax_m2_entry_is_the_model_transformers_builds():
    from axlint.architectures import resolve_architecture

    arch = resolve_architecture("MiniMaxAI/MiniMax-M2")
    config = {k: v for k, v in arch.raw_config.items() if k != "quantization_config"}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config))
    assert sum(p.numel() for p in model.parameters()) == arch.total_params


@pytest.mark.parametrize("example, readme_gib", [
    ("qwen3/30b-a3b-nvfp4-lora.yaml", 31),  # examples/qwen3/README.md: "~31 GiB at sequence_len 2048"
    ("qwen3-next/qwen3-next-80b-a3b-nvfp4-lora.yaml", 86),  # examples/qwen3-next/README.md: "~86 GiB"
])
def test_nvfp4_corpus_runs_land_near_axolotls_published_memory(example, readme_gib):
    """Axolotl's READMEs give the memory of its NVFP4 MoE-LoRA examples on one GPU; sized as bf16 the experts alone
    would be 54 / 144 GiB."""
    from pathlib import Path

    from axlint.document import load_document
    from axlint.memory.facts import memory_facts
    from axlint.run import build_run

    run = build_run(load_document(Path(__file__).parents[1] / "fixtures/axolotl/examples" / example))
    facts_ = memory_facts(run)
    assert facts_ is not None and not unsized_parts(run.arch, facts_.estimate.setup.prequantized)
    assert facts_.estimate.required / 2**30 == pytest.approx(readme_gib, rel=0.1)


def test_an_unsized_checkpoint_stops_the_memory_rules_and_says_so(tmp_path):
    import json

    from axlint.commands.estimate import run_notes
    from axlint.document import load_document
    from axlint.memory.facts import memory_facts, modelled_facts, unknown_parts
    from axlint.run import build_run

    (tmp_path / "config.json").write_text(json.dumps({**SMALL_MOE, "quantization_config": {"quant_method": "awq"}}))
    path = tmp_path / "run.yaml"
    path.write_text(f"base_model: {tmp_path}\nadapter: lora\nlora_target_linear: true\nsequence_len: 512\n"
                    "micro_batch_size: 1\nbf16: true\nsample_packing: true\n")
    run = build_run(load_document(path))
    facts_ = memory_facts(run)
    assert "awq" in unknown_parts(facts_)[f"base_model: {tmp_path}"]
    assert modelled_facts(run) is None
    assert any("awq" in note and "load dtype" in note for note in run_notes(facts_))
