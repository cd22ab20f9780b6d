"""The remote-code group of the corpus: Qwen (1), BTLM and MiMo, model types transformers 5.24 has no model of, and
Replit's code model, which runs its repository's own MPT code. Their layouts (families.py rows with ``remote_code``,
and the mpt row for Replit) were read from each checkpoint's own modelling code; they are proven here against the
published checkpoints (the total of their safetensors / pytorch indexes, the parameter names of the index or of the
code) and, for MiMo, against a model built from transformers 5.24's Qwen2 modules the way the checkpoint's
modeling_mimo.py assembles them (on the meta device for its parameters, on the CPU for which get a gradient)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axlint.architectures import Architecture, resolve_architecture
from axlint.architectures.families import FAMILIES
from axlint.lint import LintOptions, lint_text
from axlint.hardware import parse_hardware
from axlint.memory.params import idle_split, linear_names, named_parameters
from axlint.memory.setup import read_setup
from axlint.packs import load_rules, select_rules
from benchmarks.memory.coverage import classify
from tests.catalog_models import axlint_adapter_params, peft_adapter_params
from tests.corpus import CORPUS
from tests.resolved import facts

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

REMOTE = ("qwen", "btlm", "mimo")


def _catalog_config(model_id: str) -> dict[str, Any]:
    return dict(resolve_architecture(model_id).raw_config)


def _layer_zero(arch: Architecture, prefix: str) -> set[str]:
    return {name.removeprefix(prefix) for name, _ in named_parameters(arch) if name.startswith(prefix)}


def test_the_remote_rows_are_types_transformers_does_not_build():
    assert {t for t, row in FAMILIES.items() if row.remote_code} == set(REMOTE)
    assert not set(REMOTE) & set(transformers.CONFIG_MAPPING)


# ------------------------------------------------------------------------------------------------------- Qwen (1)

def test_qwen_7b_is_the_official_safetensors_total():
    """Qwen/Qwen-7B's model.safetensors.index.json: total_size 15,442,649,088 bytes of bf16."""
    assert resolve_architecture("Qwen/Qwen-7B").total_params * 2 == 15_442_649_088


@pytest.mark.parametrize("fields", [{}, {"kv_channels": 32, "num_attention_heads": 4, "hidden_size": 64,
                                         "intermediate_size": 96, "num_hidden_layers": 3, "vocab_size": 100}])
def test_qwen_total_is_modeling_qwen_layer_by_layer(fields):
    """modeling_qwen.py: wte and an untied lm_head (V x h each); per QWenBlock ln_1 / ln_2 (h each), c_attn h -> 3p with
    its bias (p = kv_channels x heads), c_proj h x p without one, w1 / w2 h -> I/2 and c_proj I/2 -> h without; ln_f."""
    c = {**_catalog_config("Qwen/Qwen-7B"), **fields}
    h, p, i = c["hidden_size"], c["kv_channels"] * c["num_attention_heads"], c["intermediate_size"] // 2
    layer = 2 * h + (h * 3 * p + 3 * p) + h * p + 3 * h * i
    expected = 2 * c["vocab_size"] * h + c["num_hidden_layers"] * layer + h
    assert Architecture.from_config("t", "model-config", c).total_params == expected


def test_qwen_parameter_names_are_modeling_qwens():
    arch = resolve_architecture("Qwen/Qwen-7B")
    assert _layer_zero(arch, "transformer.h.0.") == {
        "ln_1.weight", "ln_2.weight", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
        "mlp.w1.weight", "mlp.w2.weight", "mlp.c_proj.weight"}
    outer = {n for n, _ in named_parameters(arch) if not n.startswith("transformer.h.")}
    assert outer == {"transformer.wte.weight", "transformer.ln_f.weight", "lm_head.weight"}
    assert linear_names(arch) == ("c_attn", "c_proj", "w1", "w2")


def test_qwen_with_biases_is_not_laid_out():
    """Every published Qwen (1) config.json sets no_bias; without it c_proj, w1, w2 and the MLP's c_proj have biases."""
    arch = Architecture.from_config("t", "model-config", {**_catalog_config("Qwen/Qwen-7B"), "no_bias": False})
    assert arch.family is None and arch.unsized_decoder == "qwen"


# ----------------------------------------------------------------------------------------------------------- BTLM

def test_btlm_3b_is_a_published_safetensors_total():
    """A BTLM-3B-8k fine-tune's bf16 model.safetensors.index.json (KnutJaegersberg/Walter-BTLM-3B): total_size
    5,292,511,552 bytes, which holds transformer.relative_pe.slopes (one ALiBi slope per head) beside the layout."""
    arch = resolve_architecture("cerebras/btlm-3b-8k-base")
    assert (arch.total_params + arch.num_heads) * 2 == 5_292_511_552


def test_btlm_parameter_names_are_the_checkpoints():
    """The weight_map of that index: Conv1D weights and biases everywhere, LayerNorms with biases, c_fc2 beside c_fc,
    no wpe under ALiBi and no lm_head (tied)."""
    arch = resolve_architecture("cerebras/btlm-3b-8k-base")
    assert _layer_zero(arch, "transformer.h.0.") == {
        f"{module}.{tensor}" for module in ("attn.c_attn", "attn.c_proj", "ln_1", "ln_2", "mlp.c_fc", "mlp.c_fc2",
                                            "mlp.c_proj") for tensor in ("weight", "bias")}
    outer = {n for n, _ in named_parameters(arch) if not n.startswith("transformer.h.")}
    assert outer == {"transformer.wte.weight", "transformer.ln_f.weight", "transformer.ln_f.bias"}


@pytest.mark.parametrize("positions", [{"position_embedding_type": "learned"}, {}])
def test_btlm_with_learned_positions_is_not_laid_out(positions):
    """BTLMConfig defaults to learned positions (a wpe of n_positions x h), which the row does not lay out."""
    config = {k: v for k, v in _catalog_config("cerebras/btlm-3b-8k-base").items() if k != "position_embedding_type"}
    arch = Architecture.from_config("t", "model-config", {**config, **positions})
    assert arch.family is None and arch.unsized_decoder == "btlm"


# ---------------------------------------------------------------------------------------------------------- Replit

def test_replit_code_is_a_published_pytorch_total():
    """Replit-v1-CodeInstruct-3B (replit-code-v1-3b with one more token, vocab_size 32769), its fp32
    pytorch_model.bin.index.json: total_size 10,402,549,760 bytes."""
    config = {**_catalog_config("replit/replit-code-v1-3b"), "vocab_size": 32769}
    assert Architecture.from_config("t", "model-config", config).total_params * 4 == 10_402_549_760
    assert resolve_architecture("replit/replit-code-v1-3b").total_params == 2_600_634_880


def test_replit_parameter_names_are_the_checkpoints():
    """The weight_map of that index: weights only (no_bias), no wpe under ALiBi, no lm_head (tied)."""
    arch = resolve_architecture("replit/replit-code-v1-3b")
    assert _layer_zero(arch, "transformer.blocks.0.") == {
        "attn.Wqkv.weight", "attn.out_proj.weight", "ffn.up_proj.weight", "ffn.down_proj.weight", "norm_1.weight",
        "norm_2.weight"}
    assert {n for n, _ in named_parameters(arch) if ".blocks." not in n} == {"transformer.wte.weight",
                                                                         "transformer.norm_f.weight"}


# ------------------------------------------------------------------------------------------------------------ MiMo

MIMO_SMALL = {"model_type": "mimo", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "max_position_embeddings": 128,
              "tie_word_embeddings": False}


def _mimo_on_meta(fields: dict[str, Any], device: str = "meta") -> Any:
    """modeling_mimo.py on transformers 5.24's Qwen2 modules, on the meta device (or ``device``): MiMoForCausalLM is
    Qwen2ForCausalLM whose model also holds ``mtp_layers``, num_nextn_predict_layers of (Qwen2RMSNorm
    input_layernorm, post_attention_layernorm, token_layernorm, hidden_layernorm; input_proj nn.Linear(2h, h,
    bias=False); final_layernorm; Qwen2Attention self_attn; Qwen2MLP mlp). MiMoModel and MiMoForCausalLM define no
    forward of their own: Qwen2's runs."""
    from torch import nn
    from transformers.models.qwen2 import modeling_qwen2 as q2

    config = transformers.Qwen2Config(**{k: v for k, v in fields.items()
                                         if k not in ("model_type", "num_nextn_predict_layers")})
    h = config.hidden_size
    with torch.device(device):
        model = q2.Qwen2ForCausalLM(config)
        layers = []
        for _ in range(fields.get("num_nextn_predict_layers", 0)):
            layer = nn.Module()
            for norm in ("input_layernorm", "post_attention_layernorm", "token_layernorm", "hidden_layernorm"):
                setattr(layer, norm, q2.Qwen2RMSNorm(h))
            layer.input_proj = nn.Linear(2 * h, h, bias=False)
            layer.final_layernorm = q2.Qwen2RMSNorm(h)
            layer.self_attn = q2.Qwen2Attention(config, layer_idx=0)
            layer.mlp = q2.Qwen2MLP(config)
            layers.append(layer)
        model.model.mtp_layers = nn.ModuleList(layers)
    return model


@pytest.mark.parametrize("mtp", [0, 1, 2])
def test_mimo_row_is_modeling_mimo_on_the_meta_device(mtp):
    fields = {**MIMO_SMALL, "num_nextn_predict_layers": mtp}
    real = {name: p.numel() for name, p in _mimo_on_meta(fields).named_parameters()}
    arch = Architecture.from_config("t", "model-config", fields)
    assert arch.mtp_layers == mtp
    assert dict(named_parameters(arch)) == real
    assert arch.total_params == sum(real.values())


@pytest.mark.parametrize("targets", [["q_proj", "down_proj"], ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                "up_proj", "down_proj", "input_proj"]])
def test_mimo_lora_reaches_the_mtp_layer_as_peft_does(targets):
    """PEFT matches a listed name in every module path ending with it, the MTP layer's too (lora_target_linear hands it
    every Linear name, input_proj included)."""
    fields = {**MIMO_SMALL, "num_nextn_predict_layers": 1}
    arch = Architecture.from_config("t", "model-config", fields)
    assert axlint_adapter_params(arch, {"lora_target_modules": targets}) == \
        peft_adapter_params(_mimo_on_meta(fields), targets)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora_target_linear"])
def test_mimo_mtp_layers_get_no_gradient(lora):
    """One step of Qwen2's forward and backward over the model modeling_mimo.py assembles: the parameters left
    without a gradient are the MTP layers' weights (full fine-tune) or the adapters on them (LoRA on every Linear
    name, as lora_target_linear gives PEFT), as ``idle_split`` counts them."""
    fields = {**MIMO_SMALL, "num_nextn_predict_layers": 2}
    torch.manual_seed(0)
    model = _mimo_on_meta(fields, device="cpu")
    lora_keys = {}
    if lora:
        names = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules()
                        if isinstance(module, torch.nn.Linear) and name != "lm_head"})
        model = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=names))
        lora_keys = {"adapter": "lora", "lora_r": 4, "lora_target_linear": True}
    tokens = torch.tensor([[1, 5, 7, 9, 11, 13]])
    model(input_ids=tokens, labels=tokens).loss.backward()
    idle = {name: p.numel() for name, p in model.named_parameters() if p.requires_grad and p.grad is None}
    assert idle and all(".mtp_layers." in name for name in idle)
    arch = Architecture.from_config("t", "model-config", fields)
    run = {"base_model": "t", **lora_keys}
    split = idle_split(arch, read_setup(facts(run, None, arch, parse_hardware("1xH100")), arch))
    assert (split.idle_adapter if lora else split.idle_base) == sum(idle.values())
    assert split.idle_parts == ("the 2 multi-token-prediction layers `model.mtp_layers`",) and split.mtp


def test_mimo_mtp_layer_is_quantized_and_adapted_but_holds_no_activations():
    """A 4-bit load replaces every nn.Linear (the MTP layer's too); lora_target_linear names input_proj; forward does
    not run the MTP layer, so the activation terms see the 36 decoder layers only."""
    arch = resolve_architecture("XiaomiMiMo/MiMo-7B-RL")
    h = arch.hidden_size
    decoder_weights = sum(lin.d_in * lin.d_out for lin in arch.linears(0))
    assert arch.mtp_layers == 1 and arch.num_layers == 36
    assert arch.quantizable_params == 37 * decoder_weights + 2 * h * h
    assert arch.mtp_params == sum(lin.params for lin in arch.linears(0)) + 2 * h * h + 5 * h
    assert "input_proj" in linear_names(arch)


# --------------------------------------------------------------------------------------------- corpus and checks

GROUP = ("examples/archived/qwen/qlora.yml", "examples/archived/qwen/lora.yml",
         "examples/archived/cerebras/btlm-ft.yml", "examples/archived/replit-3b/config-lora.yml",
         "examples/mimo/mimo-7b-qlora.yaml")


@pytest.mark.parametrize("path", GROUP)
def test_the_groups_corpus_configs_are_covered(path):
    assert classify(CORPUS / path)[2] == "covered"


QWEN_LORA = """base_model: Qwen/Qwen-7B
trust_remote_code: true
adapter: lora
lora_r: 8
lora_target_modules: [c_attn, q_proj]
sequence_len: 512
micro_batch_size: 1
"""


def test_lora_targets_are_checked_against_a_row_read_from_the_remote_code(tmp_path: Path):
    """Under trust_remote_code the checkpoint's own code names the modules; for a row read from that code axlint
    knows those names: q_proj matches nothing in Qwen (1), c_attn does."""
    path = tmp_path / "qwen.yml"
    path.write_text(QWEN_LORA, encoding="utf-8")
    found = lint_text(path, None, LintOptions(select_rules(load_rules(), ["MEM011"]), None)).diagnostics
    assert [d.code for d in found] == ["MEM011"]
    assert "q_proj" in found[0].message
