"""Axolotl's fused LoRA kernels: which ones a config gets (``RunFacts.lora_kernels``; held to the real Axolotl in
tests/test_oracle_lora_kernels.py) and what the estimate says of them."""
from __future__ import annotations

import pytest

from axlint.architectures import resolve_architecture
from axlint.facts import resolve_facts
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.activations import (
    adapter_transient_bytes_per_token,
    backward_temp_bytes_per_token,
    layer_bytes_per_token,
    lora_kernel_linears,
)
from axlint.memory.params import lora_targets
from axlint.memory.setup import read_setup
from tests.resolved import facts

ALL = ("mlp", "qkv", "o", "embedding")
KERNELS = "scattermoe"


@pytest.mark.parametrize("config, gpus, kernels", [
    ({"adapter": "qlora", "load_in_4bit": True}, 1, ALL),
    ({"adapter": "lora"}, 8, ALL),
    ({"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}}, 8, ()),
    ({"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}}, 1, ALL),
    ({"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}, "fsdp_version": 2}, 8, ALL),
    ({"adapter": "lora", "load_in_8bit": True}, 1, ()),
    ({"adapter": "qlora", "load_in_8bit": True}, 1, ALL),
    ({"adapter": "lora", "trust_remote_code": True}, 1, ()),
    ({"adapter": "lora", "rl": "dpo"}, 1, ()),
    ({"adapter": "lora", "use_ray": True}, 1, ()),
    ({"adapter": "lora", "nvfp4_merge_aware": True}, 1, ()),
    ({"adapter": "lora", "lora_mlp_kernel": False}, 1, ()),
    ({"adapter": "lora", "lora_qkv_kernel": True, "lora_o_kernel": "false"}, 1, ("qkv",)),
    ({"lora_mlp_kernel": True}, 1, ("mlp",)),  # written flags stand; Axolotl refuses them without an adapter
    ({}, 1, ()),
    ({"adapter": "lora", "plugins": ["axolotl.integrations.kernels.KernelsPlugin"], "use_scattermoe": True,
      "use_dsv4_kernels": True}, 1, ("qkv", "o", "embedding")),
    ({"adapter": "lora", "use_scattermoe": True, "use_dsv4_kernels": True}, 1, ALL),  # without the plugin
])
def test_the_kernels_a_config_gets(config, gpus, kernels) -> None:
    assert resolve_facts(config, world_size=gpus).lora_kernels == kernels


L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
H100 = parse_hardware("1xH100")
BASE = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 2048, "micro_batch_size": 1, "bf16": True,
        "gradient_checkpointing": True}


def _notes(config: dict) -> list[str]:
    e = estimate_memory(facts({**BASE, **config}, None, L8B, H100), L8B, H100)
    return [note for note in e.assumptions if "fused LoRA kernels" in note]


def test_the_estimate_says_which_kernels_it_counts() -> None:
    (note,) = _notes({"adapter": "qlora", "load_in_4bit": True})
    assert note.startswith("Axolotl runs its fused LoRA kernels (mlp, qkv, o; on by itself")
    assert _notes({"adapter": "lora", "lora_qkv_kernel": True})[0].startswith(
        "Axolotl runs its fused LoRA kernels (qkv;")
    assert _notes({"adapter": "lora", "load_in_8bit": True}) == []
    assert _notes({"adapter": "lora", "lora_embedding_kernel": True, "lora_mlp_kernel": False}) == []
    assert _notes({"adapter": "lora", "reward_model": True}) == []  # AX234: the patch refuses it
    assert _notes({}) == []


def _setups(config: dict):
    """The run's setup (Axolotl's kernels on by itself) and the same run on PEFT's layers."""
    on = read_setup(facts({**BASE, **config, "lora_target_linear": True}, None, L8B, H100), L8B)
    return on, on.with_changes(lora_kernels=())


def test_a_qlora_layer_under_the_kernels_keeps_the_mlp_s_gate_and_up_and_no_adapter_outputs() -> None:
    """Per token of one Llama-3.1-8B layer (bf16 adapters over a 4-bit base: PEFT makes no input copies): PEFT's
    layers keep the MLP's 6I, the product 2I for down, and seven lora_A outputs 2r; the kernels keep gate and up 4I
    and the inputs they already shared. The MLP backward adds 2I under the kernel, 6I under PEFT's layers."""
    on, off = _setups({"adapter": "qlora", "load_in_4bit": True})
    assert on.lora_kernels == ("mlp", "qkv", "o")
    adapted = lora_targets(L8B, on)[0]
    assert len(adapted) == 7 and set(lora_kernel_linears(L8B, on, 0, adapted)) == set(adapted)
    i, r = L8B.intermediate_size, on.lora_r
    assert layer_bytes_per_token(L8B, off, 0, adapted) - layer_bytes_per_token(L8B, on, 0, adapted) == 4 * i + 14 * r
    assert backward_temp_bytes_per_token(L8B, off, 0) - backward_temp_bytes_per_token(L8B, on, 0) == 4 * i


def test_a_lora_layer_under_the_kernels_loses_peft_s_fp32_adapter_copies() -> None:
    """A bf16 LoRA (fp32 adapters under autocast): PEFT's layers keep a half copy of the input per adapted Linear
    (q, k, v, gate, up: 2h each; o: 2hq; down: 2I) where the kernels keep the attention and MLP norm outputs once
    (2h each); and no fp32 transient in an adapter."""
    on, off = _setups({"adapter": "lora"})
    adapted = lora_targets(L8B, on)[0]
    h, hq, i, r = L8B.hidden_size, L8B.q_dim, L8B.intermediate_size, on.lora_r
    copies = 5 * 2 * h + 2 * hq + 2 * i - 2 * 2 * h
    assert (layer_bytes_per_token(L8B, off, 0, adapted) - layer_bytes_per_token(L8B, on, 0, adapted)
            == 2 * i + copies + 14 * r)
    assert adapter_transient_bytes_per_token(L8B, on, 0) == 0 < adapter_transient_bytes_per_token(L8B, off, 0)


def test_the_kernels_lower_the_peak_of_a_long_lora_run() -> None:
    config = {**BASE, "adapter": "lora", "lora_target_linear": True, "sequence_len": 16384,
              "plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_fused_linear_cross_entropy": True}
    on = estimate_memory(facts(config, None, L8B, H100), L8B, H100)
    off = estimate_memory(facts({**config, "lora_mlp_kernel": False}, None, L8B, H100), L8B, H100)
    assert on.setup.lora_kernels and not off.setup.lora_kernels
    assert on.peak_allocated < off.peak_allocated - 2**30


@pytest.mark.parametrize("model, dense_kernel", [("google/gemma-4-26B-A4B", True), ("Qwen/Qwen3-30B-A3B", False)])
def test_in_a_moe_layer_the_mlp_kernel_takes_only_a_dense_mlp_at_mlp(model, dense_kernel) -> None:
    """Axolotl's ``find_mlp_in_layer`` patches ``layer.mlp`` when it has gate, up and down projections: Gemma 4 keeps
    its dense MLP there beside the experts; Qwen3-MoE's ``mlp`` is the sparse block, which it leaves to PEFT."""
    arch = resolve_architecture(model)
    setup = read_setup(facts({"base_model": model, "adapter": "qlora", "load_in_4bit": True, "bf16": True,
                              "lora_target_linear": True}, None, arch, H100), arch)
    assert arch.is_moe_layer(0) and setup.lora_kernels == ("mlp", "qkv", "o")
    kernels = set(lora_kernel_linears(arch, setup, 0, lora_targets(arch, setup)[0]).values())
    assert kernels == ({"qkv", "o", "mlp", "mlp_down"} if dense_kernel else {"qkv", "o"})


@pytest.mark.parametrize("model, config, kernels", [
    ("allenai/Olmo-3-7B-Instruct-SFT", {}, ()),                         # AX233: the fixed run has no kernels
    ("allenai/Olmo-3-7B-Instruct-SFT", {"lora_mlp_kernel": True}, ("mlp",)),  # no attention rewrite: the MLP kernel runs
    ("allenai/Olmo-3-7B-Instruct-SFT", {"lora_mlp_kernel": True, "lora_qkv_kernel": True}, ()),  # AX233
    ("EleutherAI/pythia-1.4b-deduped", {"lora_mlp_kernel": True}, ()),  # AX235: its layers are not found
    ("meta-llama/Llama-3.1-8B", {"lora_mlp_kernel": True}, ("mlp",)),
])
def test_the_estimate_counts_the_kernels_of_a_run_that_starts(model, config, kernels) -> None:
    """Kernels that stop the run at model load are not counted (the estimate is of the run with the rules' fixes);
    a written MLP kernel on a model whose attention alone Axolotl cannot rewrite runs, and is counted."""
    arch = resolve_architecture(model)
    setup = read_setup(facts({"base_model": model, "adapter": "lora", "lora_target_linear": True, **config}, None,
                             arch, H100), arch)
    assert setup.lora_kernels == kernels


STABLELM_QLORA = {"base_model": "stabilityai/stablelm-2-1_6b", "adapter": "qlora", "load_in_4bit": True, "bf16": True,
                  "lora_target_linear": True}


@pytest.mark.parametrize("config, kernels", [
    ({"lora_mlp_kernel": True}, ()),
    ({"lora_mlp_kernel": True, "lora_o_kernel": True}, ()),      # and the O kernel's attention rewrite fails (AX233)
    ({"lora_mlp_kernel": True, "bf16": False}, ("mlp",)),        # fp32 training: no autocast, the kernel runs
])
def test_an_mlp_kernel_that_gets_fp32_hidden_states_is_not_counted(config, kernels) -> None:
    """StableLM's LayerNorm hands its MLP fp32 hidden states under a 4-bit load and autocast, and a written MLP kernel
    stops the run (AX243): the estimate is of the run with the fix, without it."""
    arch = resolve_architecture(STABLELM_QLORA["base_model"])
    assert read_setup(facts({**STABLELM_QLORA, **config}, None, arch, H100), arch).lora_kernels == kernels


@pytest.mark.parametrize("config, advice", [
    ({"base_model": "allenai/Olmo-3-7B-Instruct-SFT", "adapter": "qlora", "load_in_4bit": True, "bf16": True,
      "lora_target_linear": True}, True),                    # RMSNorm, a gated MLP: the kernel would run
    (STABLELM_QLORA, False),                                   # the kernel would get fp32 hidden states (AX243)
    ({**STABLELM_QLORA, "adapter": "lora", "load_in_4bit": False}, True),   # a 16-bit LoRA: bf16 hidden states
    ({"base_model": "microsoft/phi-2", "adapter": "lora", "bf16": True, "lora_target_linear": True}, False),  # no gate
    ({"base_model": "allenai/Olmo-3-7B-Instruct-SFT", "adapter": "lora", "bf16": True,
      "lora_target_modules": ["q_proj", "v_proj"]}, False),  # no adapter on the MLP: the kernel patches nothing
])
def test_ax233_suggests_the_mlp_kernel_only_where_it_would_run(tmp_path, config, advice) -> None:
    import yaml

    from axlint.cli import cli
    from click.testing import CliRunner

    path = tmp_path / "c.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    out = CliRunner().invoke(cli, ["check", "--select", "AX233", str(path)]).stdout
    assert "AX233" in out
    assert ("add `lora_mlp_kernel: true` to keep the MLP kernel" in out) is advice
