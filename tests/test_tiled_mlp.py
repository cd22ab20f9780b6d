"""Axolotl's tiled MLP (``tiled_mlp``, Axolotl 0.18 monkeypatch/tiled_mlp): the MLP keeps only its input for
backward and recomputes one sequence tile at a time; the tile count is ``tiled_mlp_num_shards`` or one per 32,768
tokens of the sequence a GPU holds."""
from __future__ import annotations

import pytest

from axlint.architectures import resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory import constants as C
from axlint.memory import estimate_memory
from axlint.memory.activations import layer_bytes_per_token, mlp_part_bytes
from axlint.memory.setup import read_setup
from tests.resolved import facts

L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
H100 = parse_hardware("8xH100")
BASE = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 131072, "micro_batch_size": 1, "bf16": True,
        "sample_packing": True, "flash_attention": True, "optimizer": "adamw_torch_fused",
        "fsdp_version": 2, "fsdp_config": {"reshard_after_forward": True}}


def setup_of(config):
    return read_setup(facts({**BASE, **config}, None, L8B, H100), L8B)


@pytest.mark.parametrize("config, tiles", [
    ({}, 1),
    ({"tiled_mlp": True}, 4),                                         # 131072 / 32768
    ({"tiled_mlp": True, "context_parallel_size": 8}, 1),             # 16384 tokens a GPU: one tile
    ({"tiled_mlp": True, "sequence_len": 500_000, "context_parallel_size": 8}, 2),  # 62500 tokens
    ({"tiled_mlp": True, "tiled_mlp_num_shards": 16}, 16),
])
def test_the_tile_count_is_axolotls(config, tiles):
    assert setup_of(config).mlp_tiles == tiles


def test_a_tiled_layer_keeps_the_mlp_input_instead_of_the_mlp():
    plain, tiled = setup_of({}), setup_of({"tiled_mlp": True})
    removed = mlp_part_bytes(L8B, plain, 0) - C.LINEAR_INPUT_BYTES * L8B.hidden_size
    assert layer_bytes_per_token(L8B, plain, 0) - layer_bytes_per_token(L8B, tiled, 0) == pytest.approx(removed)
    assert removed > 6 * L8B.intermediate_size  # the gated MLP's 6I and more


def test_tiling_lowers_the_peak_without_checkpointing():
    def peak(config):
        hw = parse_hardware("8xH100")
        return estimate_memory(facts({**BASE, **config}, None, L8B, hw), L8B, hw).components["activations"]

    assert peak({"tiled_mlp": True}) < 0.6 * peak({})
