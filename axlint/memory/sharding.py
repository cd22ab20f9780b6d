"""Sharding of model states over N ranks, and the buffers that sharding adds (DeepSpeed 0.19.8
`runtime/zero/stage_1_and_2.py`, `runtime/zero/stage3.py`; PyTorch FSDP).

Per-GPU share of each state (ZeRO numbering; FSDP full_shard = 3, shard_grad_op = 2):
  weights ÷N at stage 3, gradients ÷N at stage ≥ 2, optimizer states and fp32 master ÷N at stage ≥ 1; N is the
  ranks that shard the states (``Sharding.state_ranks``: the world, or FSDP's ep × dp_shard × cp axes of a mesh).
  Routed experts under expert parallelism: 1/ep of them per rank, that slice ÷ dp_shard when sharded.
  Offloaded optimizer (ZeRO-Offload / FSDP CPU offload): states, master and fp32 grads live in CPU RAM.
  Offloaded params (stage 3): the weight partition lives in CPU RAM.

Buffers on the GPU:
  ZeRO-1/2   reduce bucket rbs·2·(2 + overlap_comm) + all-gather bucket abs·2
  ZeRO-3     reduce bucket as above + gathered params 2·max(Lm, min(max_live, Lm + prefetch))
             + full grads of the current module 2·Lm + persistent small params (numel ≤ threshold)
  FSDP       root unit (embed + lm_head) + 2 decoder layers gathered (current + prefetch) + one layer's grads
             (forward-backward only: resharded before the optimizer step)
  DDP        the reducer's gradient buckets: one more copy of the trainable gradients
  Lm = largest leaf module (usually the embedding), 2 = bytes of the bf16 params.
Step temporaries: ZeRO-1/2 make the fp32 gradient partition 4·P/N; ZeRO-3 one fp32 sub-group 4·min(sub_group, P/N).
"""
from __future__ import annotations

from axlint.architectures import Architecture
from axlint.facts import ShardingKind
from axlint.memory import constants as C
from axlint.memory.setup import Sharding, TrainSetup


def weight_share(s: Sharding) -> float:
    """Fraction of the dense weights resident on one GPU (0 when offloaded)."""
    if s.offload_param and s.stage == 3:
        return 0.0
    return 1 / s.state_ranks if s.stage == 3 else 1.0


def gradient_share(s: Sharding) -> float:
    return 1 / s.state_ranks if s.stage >= 2 else 1.0


def optimizer_share(s: Sharding) -> float:
    """Fraction of optimizer states (and fp32 master) on one GPU."""
    if s.offload_optimizer:
        return 0.0
    return 1 / s.state_ranks if s.stage >= 1 else 1.0


def expert_share(s: Sharding, dense_share: float) -> float:
    """Fraction of a routed-expert state on one GPU, given the dense states' ``dense_share`` (one of the above):
    expert parallelism keeps 1/ep of the experts, and a sharded state splits that slice over
    ``expert_shard_ranks`` instead of ``state_ranks``."""
    if dense_share in (0.0, 1.0):
        return dense_share / s.mesh.ep
    return 1 / (s.mesh.ep * s.expert_shard_ranks)


def mixed_share(s: Sharding, dense_share: float, expert_fraction: float) -> float:
    """The share of a state of which ``expert_fraction`` is routed experts (``expert_share``), the rest dense."""
    if s.mesh.ep == 1 and s.expert_shard_ranks == s.state_ranks:
        return dense_share
    return (1 - expert_fraction) * dense_share + expert_fraction * expert_share(s, dense_share)


def _persistent_params(arch: Architecture, threshold: float) -> int:
    """Σ of the small tensors (norms, qk-norms, biases) with numel ≤ stage3_param_persistence_threshold, one layer of
    each kind (``Architecture.kind_layers``) times its layers."""
    small = sum(n * len(layers) for layers in arch.kind_layers for n in arch.small_params_per_layer(layers[0])
                if n <= threshold)
    biases = sum(lin.d_out * lin.count * len(layers) for layers in arch.kind_layers for lin in arch.linears(layers[0])
                 if lin.bias and lin.d_out <= threshold)
    return small + biases + (arch.final_norm_params if arch.final_norm_params <= threshold else 0)


def buffer_bytes(arch: Architecture, setup: TrainSetup, grad_bytes: float) -> float:
    """Persistent communication / gather buffers on one GPU during forward-backward (see module docstring)."""
    s = setup.sharding
    lp = setup.param_bytes
    if s.kind is ShardingKind.DDP:
        return grad_bytes
    if s.kind is ShardingKind.FSDP and s.world > 1 and s.stage >= 2:
        root = arch.embedding_params + arch.position_embedding_params + arch.lm_head_params
        return lp * (root + 3 * arch.largest_layer_params)
    if s.kind != "deepspeed" or s.stage == 0:
        return 0.0
    reduce = s.reduce_bucket * lp * (C.DS_BUCKET_COPIES + (C.DS_OVERLAP_EXTRA_COPIES if s.overlap_comm else 0))
    if s.stage < 3:
        return reduce + s.allgather_bucket * lp
    lm = arch.largest_module_params
    gathered = max(lm, min(s.max_live_parameters, lm + s.prefetch_bucket))
    return reduce + lp * (gathered + lm + _persistent_params(arch, s.persistence_threshold))


def step_buffer_bytes(setup: TrainSetup, buffers: float) -> float:
    """The buffers of ``buffer_bytes`` still allocated at the optimizer step. FSDP's are unsharded params and
    gradients of the units being run: FULL_SHARD / SHARD_GRAD_OP free every unsharded FlatParameter in its
    post-backward hook, the root's included, so the step sees sharded states only [MEM torch
    distributed/fsdp/_runtime_utils.py `_should_free_in_backward`, `_post_backward_reshard`]. DeepSpeed's buckets and
    persistent params and DDP's gradient buckets are allocated once and stay."""
    return 0.0 if setup.sharding.kind is ShardingKind.FSDP else buffers


def step_temp_bytes(setup: TrainSetup, trainable: int, largest_module: int) -> float:
    """fp32 gradients DeepSpeed builds for the optimizer step (on the GPU unless the optimizer is offloaded)."""
    s = setup.sharding
    if s.kind != "deepspeed" or s.stage == 0 or s.offload_optimizer:
        return 0.0
    partition = trainable / s.world
    if s.stage < 3:
        return C.FP32 * partition
    group = max(s.sub_group_size, largest_module / s.world)
    return C.FP32 * min(group, partition)


def cpu_offload_bytes(setup: TrainSetup, weights: float, optimizer: float, master: float, trainable: int) -> float:
    """CPU RAM for all ranks of the node: offloaded optimizer states + fp32 master + fp32 grads, and offloaded
    (16-bit) weights. Partitions summed over ranks = the full model states."""
    s = setup.sharding
    out = 0.0
    if s.offload_optimizer:
        out += optimizer + (master or C.FP32 * trainable) + C.FP32 * trainable
    if s.offload_param:
        out += weights
    return out
