"""Tensor parallelism (axlint/memory/tensor_parallel.py): the families whose split axlint lays out follow
transformers' own tp plans, and one rank holds 1/tp of the attention heads and MLP width."""
from __future__ import annotations

import pytest

from axlint.architectures import resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.tensor_parallel import TP_FAMILIES, per_rank, unsupported
from tests.resolved import facts

transformers = pytest.importorskip("transformers")

PLAN = {"layers.*.self_attn.q_proj": "colwise", "layers.*.self_attn.k_proj": "colwise",
        "layers.*.self_attn.v_proj": "colwise", "layers.*.self_attn.o_proj": "rowwise",
        "layers.*.mlp.gate_proj": "colwise", "layers.*.mlp.up_proj": "colwise", "layers.*.mlp.down_proj": "rowwise"}
REPLICATED = {"layers.*.self_attn.q_norm": "replicated_with_grad_allreduce",
              "layers.*.self_attn.k_norm": "replicated_with_grad_allreduce"}
L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
FSDP = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 8192, "micro_batch_size": 1, "bf16": True,
        "sample_packing": True, "flash_attention": True, "optimizer": "adamw_torch_fused", "fsdp_version": 2,
        "fsdp_config": {"reshard_after_forward": True}, "dp_shard_size": 4}


@pytest.mark.parametrize("model_type", sorted(TP_FAMILIES))
def test_every_family_splits_as_transformers_plans_it(model_type):
    plan = dict(transformers.AutoConfig.for_model(model_type).base_model_tp_plan)
    assert {k: v for k, v in plan.items() if k not in REPLICATED} == PLAN


def test_one_rank_holds_half_the_heads_and_the_mlp_width():
    rank = per_rank(L8B, 2)
    assert (rank.num_heads, rank.num_kv_heads, rank.intermediate_size, rank.head_dim) == (16, 4, 7168, 128)
    linears = sum(lin.params for lin in L8B.linears(0))
    norms = sum(L8B.small_params_per_layer(0))
    assert rank.layer_params(0) == linears // 2 + norms
    assert rank.embedding_params == L8B.embedding_params and rank.lm_head_params == L8B.lm_head_params


def test_the_estimate_takes_one_rank_and_reports_the_whole_model():
    hw = parse_hardware("8xH100")
    plain = estimate_memory(facts({**FSDP, "dp_shard_size": 8}, None, L8B, hw), L8B, hw)
    split = estimate_memory(facts({**FSDP, "tensor_parallel_size": 2}, None, L8B, hw), L8B, hw)
    assert split.setup.sharding.mesh.tp == 2 and split.setup.sharding.state_ranks == 4
    assert split.components["activations"] < plain.components["activations"]
    assert split.arch is L8B and split.trainable_params == plain.trainable_params == L8B.total_params
    assert any("tensor_parallel_size 2" in note for note in split.assumptions)


def test_what_axlint_cannot_split_says_why():
    assert unsupported(L8B, 2) is None
    assert "not a multiple" in unsupported(L8B, 3)
    assert "qwen3_moe" in unsupported(resolve_architecture("Qwen/Qwen3-30B-A3B"), 2)
