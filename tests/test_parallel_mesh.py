"""The parallel axes of a run (context, expert, HSDP / FSDP) as Axolotl lays them out, and what they do to the
per-GPU estimate. The layout cases follow Axolotl 0.18's ``_get_parallel_config_kwargs`` (utils/distributed.py) and
the axes FSDP shards over (monkeypatch/accelerate/parallelism_config.py); the layouts and refusals below were
checked by calling Axolotl 0.18.0's own function (pip, no dependencies) on the same sizes, and accelerate 1.15's
``ParallelismConfig`` refuses a total that differs from the GPU count (Axolotl leaves cp 3 on 8 GPUs to it)."""
from __future__ import annotations

import pytest

from axlint.architectures import resolve_architecture
from axlint.document import load_document
from axlint.facts import ShardingKind
from axlint.mesh import Mesh, build_mesh, implied_world
from axlint.hardware import parse_hardware
from axlint.memory import estimate_memory
from axlint.memory.facts import layout_problem, not_modelled
from axlint.run import build_run
from tests.resolved import facts

FSDP = {"fsdp_version": 2, "fsdp_config": {"reshard_after_forward": True}}
L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
QWEN_MOE = resolve_architecture("Qwen/Qwen3-30B-A3B")
BASE = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 65536, "micro_batch_size": 1, "bf16": True,
        "sample_packing": True, "flash_attention": True, "gradient_checkpointing": True,
        "optimizer": "adamw_torch_fused"}


@pytest.mark.parametrize("config, world, fsdp, mesh", [
    ({}, 8, True, Mesh(dp_shard=8)),                                             # FSDP alone: every rank shards
    ({"context_parallel_size": 2, "tensor_parallel_size": 2, "dp_shard_size": 2}, 8, True,
     Mesh(tp=2, cp=2, dp_shard=2)),
    ({"dp_shard_size": 4, "dp_replicate_size": 2}, 8, True, Mesh(dp_replicate=2, dp_shard=4)),
    ({"dp_shard_size": 4}, 8, True, Mesh(dp_replicate=2, dp_shard=4)),           # the rest becomes replicas
    ({"expert_parallel_size": 2, "dp_shard_size": 2}, 4, True, Mesh(ep=2, dp_shard=2)),
    ({"expert_parallel_size": 4}, 4, False, Mesh(ep=4)),
    ({"context_parallel_size": 8}, 8, False, Mesh(cp=8)),
    ({"sequence_parallel_degree": 4}, 8, True, Mesh(cp=4, dp_shard=2)),          # the deprecated name
])
def test_the_mesh_is_laid_out_as_axolotl_does(config, world, fsdp, mesh):
    assert build_mesh(config, world, fsdp) == mesh


@pytest.mark.parametrize("config, world, fsdp, problem", [
    ({"expert_parallel_size": 4}, 1, False, "expert_parallel_size: 4 does not divide the 1 GPUs left for it"),
    ({"dp_shard_size": 2}, 8, False, "dp_shard_size is set without fsdp_config"),
    ({"dp_shard_size": 4, "dp_replicate_size": 2, "tensor_parallel_size": 2}, 8, True,
     "dp_shard_size: 4 does not divide the 2 GPUs left for it"),
    ({"context_parallel_size": 3}, 8, True, "context_parallel_size: 3 does not divide the 8 GPUs left for it"),
])
def test_a_layout_axolotl_refuses_is_said(config, world, fsdp, problem):
    assert build_mesh(config, world, fsdp) == problem


def test_the_assumed_gpu_count_follows_the_parallel_sizes():
    assert implied_world({}, 8) == 8
    assert implied_world({"expert_parallel_size": 4}, 1) == 4
    assert implied_world({"dp_shard_size": 4, "dp_replicate_size": 2, "tensor_parallel_size": 2}, 8) == 16
    assert implied_world({"context_parallel_size": 4}, 8) == 8


def _estimate(config, arch=L8B, hardware="8xH100"):
    hw = parse_hardware(hardware)
    return estimate_memory(facts({**BASE, **config}, None, arch, hw), arch, hw)


def test_context_parallelism_gives_each_gpu_a_chunk_of_every_sequence():
    whole, split = _estimate(FSDP), _estimate({**FSDP, "context_parallel_size": 4})
    assert split.setup.tokens == whole.setup.tokens // 4 == 16384
    assert split.components["activations"] < whole.components["activations"] / 3
    # FSDP shards over dp_shard x cp: the same 8 ranks either way
    assert split.setup.sharding.state_ranks == whole.setup.sharding.state_ranks == 8
    assert split.components["weights"] == pytest.approx(whole.components["weights"])
    assert any("context_parallel_size 4" in note for note in split.assumptions)


def test_hsdp_shards_over_dp_shard_only():
    sharded, hybrid = _estimate(FSDP), _estimate({**FSDP, "dp_shard_size": 4, "dp_replicate_size": 2})
    assert hybrid.setup.sharding.state_ranks == 4
    assert hybrid.components["weights"] == pytest.approx(2 * sharded.components["weights"])
    assert hybrid.components["optimizer_states"] == pytest.approx(2 * sharded.components["optimizer_states"])


def test_expert_parallelism_keeps_a_slice_of_the_experts_on_each_gpu():
    config = {"base_model": "Qwen/Qwen3-30B-A3B", "sequence_len": 2048, "adapter": "lora", "lora_r": 8,
              "lora_target_modules": ["q_proj", "v_proj"]}
    replicated = _estimate(config, QWEN_MOE, "4xH100")
    sliced = _estimate({**config, "expert_parallel_size": 4}, QWEN_MOE, "4xH100")
    experts = QWEN_MOE.expert_params * 2
    assert replicated.components["weights"] - sliced.components["weights"] == pytest.approx(experts * 3 / 4, rel=1e-3)


def test_expert_parallelism_beside_fsdp_shards_the_dense_states_over_every_rank():
    config = {"base_model": "Qwen/Qwen3-30B-A3B", "sequence_len": 2048, **FSDP}
    plain = _estimate(config, QWEN_MOE, "4xH100")
    ep = _estimate({**config, "expert_parallel_size": 2, "dp_shard_size": 2}, QWEN_MOE, "4xH100")
    s = ep.setup.sharding
    assert (s.kind, s.mesh, s.state_ranks, s.expert_shard_ranks) == (ShardingKind.FSDP, Mesh(ep=2, dp_shard=2), 4, 2)
    # experts: 1/2 per EP rank, sharded over 2 -> 1/4, as the dense states over ep x dp_shard = 4
    assert ep.components["weights"] == pytest.approx(plain.components["weights"])


def test_tensor_parallelism_and_refused_layouts_make_the_verdict_unknown(tmp_path):
    path = tmp_path / "tp.yml"
    path.write_text("base_model: meta-llama/Llama-3.1-8B\ntensor_parallel_size: 2\ndp_shard_size: 3\n"
                    "fsdp_version: 2\nfsdp_config:\n  reshard_after_forward: true\n", encoding="utf-8")
    run = build_run(load_document(path), hardware=parse_hardware("8xH100"))
    assert not_modelled(run.config, run.facts.sharding, run.arch) == {}  # tensor parallelism of Llama is modelled
    assert layout_problem(run.config, run.facts.sharding) == {
        "tensor_parallel_size: 2 on 8 GPUs": "a layout Axolotl refuses: dp_shard_size: 3 does not divide the 4 GPUs "
                                             "left for it"}


def test_an_assumed_gpu_count_is_the_one_the_sizes_need(tmp_path):
    path = tmp_path / "ep.yml"
    path.write_text("base_model: Qwen/Qwen3-30B-A3B\nexpert_parallel_size: 4\n", encoding="utf-8")
    run = build_run(load_document(path))
    assert run.world_size == 4 and run.world_size_assumed
    assert run.facts.sharding.mesh == Mesh(ep=4) and not run.facts.sharding.mesh_problem
