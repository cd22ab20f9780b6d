"""The parallel axes of a run: how Axolotl lays the GPUs out over expert, tensor and context parallelism and the
FSDP / HSDP data-parallel axes (Axolotl 0.18 ``utils/distributed.py`` ``_get_parallel_config_kwargs``, accelerate's
``ParallelismConfig``), read from the config as written."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from axlint.lax import lax_int


@dataclass(frozen=True)
class Mesh:
    """How Axolotl lays the ranks out over the parallel axes (Axolotl 0.18, utils/distributed.py
    ``_get_parallel_config_kwargs``): ``expert_parallel_size`` (ep), ``tensor_parallel_size`` (tp) and
    ``context_parallel_size`` (cp) are taken from the world first; ``dp_replicate_size`` copies (HSDP) of what is
    left, and ``dp_shard_size`` (FSDP's shard axis) fills the rest (all of it when neither is written)."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp_replicate: int = 1
    dp_shard: int = 1

    @property
    def size(self) -> int:
        return self.tp * self.cp * self.ep * self.dp_replicate * self.dp_shard


PARALLEL_KEYS = ("expert_parallel_size", "tensor_parallel_size", "context_parallel_size", "sequence_parallel_degree",
                 "dp_replicate_size", "dp_shard_size")
"""The keys that lay the GPUs out, in the order Axolotl takes them from the world."""


def parallel_sizes(raw: Mapping[str, Any]) -> dict[str, int]:
    """The parallel sizes written in an Axolotl config (keys of ``Mesh`` -> value > 1); the deprecated
    ``sequence_parallel_degree`` is context_parallel_size's old name."""
    written = {"tp": raw.get("tensor_parallel_size"), "ep": raw.get("expert_parallel_size"),
               "cp": raw.get("context_parallel_size") or raw.get("sequence_parallel_degree"),
               "dp_replicate": raw.get("dp_replicate_size"), "dp_shard": raw.get("dp_shard_size")}
    return {axis: n for axis, value in written.items() if (n := lax_int(value)) is not None and n > 1}


def build_mesh(raw: Mapping[str, Any], world: int, fsdp: bool) -> Mesh | str:
    """The ``Mesh`` Axolotl builds on ``world`` ranks, or why it refuses (its ValueError, in words): each of ep,
    tp and cp must divide what is left, ``dp_shard_size`` needs fsdp_config, and every rank must be placed."""
    sizes = parallel_sizes(raw)
    left = world
    for axis in ("ep", "tp", "cp"):
        n = sizes.get(axis, 1)
        if left % n:
            return f"{_AXIS_KEYS[axis]}: {n} does not divide the {left} GPUs left for it"
        left //= n
    replicate, wanted = sizes.get("dp_replicate", 1), sizes.get("dp_shard")
    shard = 1
    if wanted is None and replicate == 1:
        shard, left = left, 1
    if replicate > 1:
        if left % replicate:
            return f"dp_replicate_size: {replicate} does not divide the {left} GPUs left for it"
        left //= replicate
    if wanted is not None and left > 1:
        if not fsdp:
            return "dp_shard_size is set without fsdp_config"
        if left % wanted:
            return f"dp_shard_size: {wanted} does not divide the {left} GPUs left for it"
        shard, left = wanted, left // wanted
        if left > 1 and replicate == 1:
            replicate, left = left, 1
    if left > 1 and fsdp and shard == 1:
        shard, left = left, 1
    if left > 1:
        return f"the parallel sizes place {world // left} of the {world} GPUs"
    return Mesh(sizes.get("tp", 1), sizes.get("cp", 1), sizes.get("ep", 1), replicate, shard)


_AXIS_KEYS = {"tp": "tensor_parallel_size", "cp": "context_parallel_size", "ep": "expert_parallel_size"}


def implied_world(raw: Mapping[str, Any], assumed: int) -> int:
    """The GPU count to assume for a config whose parallel sizes pin it: their product when ``dp_shard_size`` is
    written (every axis then given) or when ``assumed`` is not a multiple of it; ``assumed`` otherwise."""
    sizes = parallel_sizes(raw)
    product = 1
    for n in sizes.values():
        product *= n
    return product if "dp_shard" in sizes or assumed % product else assumed
