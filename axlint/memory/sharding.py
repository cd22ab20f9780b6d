"""Sharding of model states over N ranks, and the buffers that sharding adds (DeepSpeed 0.19.8
`runtime/zero/stage_1_and_2.py`, `runtime/zero/stage3.py`; PyTorch FSDP).

Per-GPU share of each state (ZeRO numbering; FSDP full_shard = 3, shard_grad_op = 2):
  weights ÷N at stage 3, gradients ÷N at stage ≥ 2, optimizer states and fp32 master ÷N at stage ≥ 1; N is the
  ranks that shard the states (``Sharding.state_ranks``: the world, or FSDP's ep × dp_shard × cp axes of a mesh).
  Routed experts under expert parallelism: 1/ep of them per rank, that slice ÷ dp_shard when sharded.
  Offloaded optimizer (ZeRO-Offload / FSDP CPU offload): states, master and fp32 grads live in CPU RAM.
  Offloaded params (stage 3): the weight partition lives in CPU RAM.
  FSDP1 and a 4-bit model: the weights' quantization state is whole on every GPU (``replicated_quant_state_bytes``).

Buffers on the GPU:
  ZeRO-1/2   the gradient bucket rbs·2, double-buffered with overlap_comm, reduced in place; allocated at each
             backward and released at its end, so not at the step; with offload_optimizer one more largest-param
             buffer 2·Lm for the copies to the CPU (all the step); the updated partitions are all-gathered in place
             (no all-gather bucket)
  ZeRO-3     reduce bucket rbs·2·(2 + overlap_comm) + gathered params 2·max(Lm, min(max_live, Lm + prefetch))
             + full grads of the current module 2·Lm + persistent small params (numel ≤ threshold)
  FSDP       root unit (embed + lm_head) + 2 decoder layers gathered (current + prefetch) + one layer's grads
             (forward-backward only: resharded before the optimizer step); a layer gathers its parameters as the
             GPU stores them (4-bit and NVFP4 weights packed) and its expert-parallel slice of the experts only
             when FSDP shards it (``gathered_layer_bytes``)
  DDP        the reducer's gradient buckets: one more copy of the trainable gradients
  Lm = largest leaf module (usually the embedding), 2 = bytes of the bf16 params.
Step temporaries: ZeRO-1/2 make the fp32 gradient partition 4·P/N; ZeRO-3 one fp32 sub-group 4·min(sub_group, P/N).
"""
from __future__ import annotations

from axlint.architectures import Architecture
from axlint.facts import ShardingKind
from axlint.memory import constants as C
from axlint.memory.setup import Sharding, TrainSetup
from axlint.memory.states import layer_weight_bytes, quant_state_bytes


def weight_share(s: Sharding) -> float:
    """Fraction of the dense weights resident on one GPU (0 when offloaded)."""
    if s.offload_param and s.stage == 3:
        return 0.0
    return 1 / s.state_ranks if s.stage == 3 else 1.0


def replicated_quant_state_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """What one GPU holds of the 4-bit weights' quantization state (``states.quant_state_bytes``) beyond its share
    of the weights, where every rank keeps all of it (``_quant_state_replicated``)."""
    s = setup.sharding
    if not _quant_state_replicated(s):
        return 0.0
    return quant_state_bytes(arch, setup) * (1 - weight_share(s))


def _quant_state_replicated(s: Sharding) -> bool:
    """Every rank holds the whole quantization state of the 4-bit weights on its GPU: FSDP1 shards, gathers and
    offloads FlatParameters, which hold only the parameters' data (torch ``distributed/fsdp/_flat_param.py``),
    while bitsandbytes keeps the state as a Python attribute (``Params4bit.quant_state``, mirrored on
    ``Linear4bit.quant_state``), neither parameter nor buffer, and dequantizes with it on the GPU (bitsandbytes
    0.43 ``nn/modules.py``). Answer.AI's script quantizes each weight on the rank's GPU and moves only its data to
    the CPU or the meta device (fsdp_qlora ``train.py`` ``load_and_quantize``, 049515f)."""
    return s.kind is ShardingKind.FSDP and s.fsdp_version == 1 and s.state_ranks > 1


def gradient_share(s: Sharding) -> float:
    """Fraction of the gradients held on one GPU between backward and the step: ÷N at stage ≥ 2, 0 when the
    optimizer is offloaded and the gradients go with it (``gradients_offloaded``)."""
    if gradients_offloaded(s):
        return 0.0
    return 1 / s.state_ranks if s.stage >= 2 else 1.0


def gradients_offloaded(s: Sharding) -> bool:
    """The reduced gradient partitions live in CPU RAM: DeepSpeed ZeRO-2/3 with offload_optimizer and FSDP with CPU
    offload. ZeRO-2 accumulates each partition on the CPU (``async_accumulate_grad_in_cpu_via_gpu``) and copies it
    into the fp32 ``.grad`` of the CPU master (``async_inplace_copy_grad_to_fp32_buffer_from_gpu``) [SRC DeepSpeed
    0.19.8 runtime/zero/stage_1_and_2.py ``copy_grads_in_partition``]; ZeRO-3 allocates its gradient partition buffer
    on ``self.device``, the CPU under offload_optimizer [SRC runtime/zero/stage3.py ``_setup_for_real_optimizer``,
    ``partition_grads``]; FSDP1 copies each reduced shard into ``flat_param._cpu_grad`` [SRC torch 2.x
    distributed/fsdp/_runtime_utils.py ``_post_reduce_grad``], FSDP2 moves it under CPUOffloadPolicy
    (``_fsdp_param.py`` ``offload_to_cpu``). ZeRO-1 keeps full gradients on the GPU until the boundary. On the GPU
    remain only the buckets of ``buffer_bytes``."""
    if not s.offload_optimizer:
        return False
    return s.kind is ShardingKind.FSDP or (s.kind is ShardingKind.DEEPSPEED and s.stage >= 2)


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


def gathered_layer_bytes(arch: Architecture, setup: TrainSetup, layer: int) -> float:
    """What FSDP all-gathers for one decoder layer, its wrap unit: the layer's parameters as the GPU stores them
    (``states.layer_weight_bytes``: a QLoRA weight gathers packed, 0.5 B per value, since Axolotl stores bitsandbytes'
    4-bit weights in bf16 elements under FSDP (0.18 loaders/model.py ``bnb_4bit_quant_storage``), the flat
    parameter's dtype; a ModelOpt NVFP4 expert gathers packed too); of the routed experts, the rank's
    expert-parallel slice (1/ep), and only when FSDP shards it (``expert_shard_ranks`` > 1: with dp_shard 1 each
    rank keeps its experts whole and gathers none). Unquantized without expert parallelism: the layer x 2 B."""
    experts, rest = layer_weight_bytes(arch, setup, layer)
    s = setup.sharding
    return rest + (experts / s.mesh.ep if s.expert_shard_ranks > 1 else 0.0)


def root_unit_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """FSDP's root unit, what the decoder layers' wrapping leaves: the embeddings and lm_head in the load dtype."""
    return setup.param_bytes * (arch.embedding_params + arch.position_embedding_params + arch.lm_head_params)


def largest_layer_unit_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """The largest decoder layer as FSDP gathers it (``gathered_layer_bytes``), one layer of each kind."""
    return max(gathered_layer_bytes(arch, setup, layers[0]) for layers in arch.kind_layers)


def buffer_bytes(arch: Architecture, setup: TrainSetup, grad_bytes: float) -> float:
    """Persistent communication / gather buffers on one GPU during forward-backward (see module docstring)."""
    s = setup.sharding
    lp = setup.param_bytes
    if s.kind is ShardingKind.DDP:
        return grad_bytes
    if s.kind is ShardingKind.FSDP and s.world > 1 and s.stage >= 2:
        return root_unit_bytes(arch, setup) + 3 * largest_layer_unit_bytes(arch, setup)
    if s.kind != "deepspeed" or s.stage == 0:
        return 0.0
    if s.stage < 3:
        return _zero12_bucket_bytes(s, lp) + _zero12_offload_bytes(arch, setup)
    reduce = s.reduce_bucket * lp * (C.DS_BUCKET_COPIES + (C.DS_OVERLAP_EXTRA_COPIES if s.overlap_comm else 0))
    lm = arch.largest_module_params
    gathered = max(lm, min(s.max_live_parameters, lm + s.prefetch_bucket))
    return reduce + lp * (gathered + lm + _persistent_params(arch, s.persistence_threshold))


def _zero12_bucket_bytes(s: Sharding, lp: int) -> float:
    """ZeRO-1/2's gradient bucket: ``setup_buckets`` allocates one reduce_bucket_size buffer at the start of each
    backward, and a second with overlap_comm ("double buffers to avoid data access conflict"); ``average_tensor``
    reduces each partition's slice of it in place; ``independent_gradient_partition_epilogue`` releases them
    (``_release_ipg_buffers``) when backward ends. The step's all-gather of the updated bf16 partitions writes into
    the flat groups themselves (runtime/utils.py ``all_gather_dp_groups`` -> ``all_gather_into_tensor_dp_groups``), so
    allgather_bucket_size allocates nothing [SRC DeepSpeed 0.19.8 runtime/zero/stage_1_and_2.py]."""
    return s.reduce_bucket * lp * (C.DS_ZERO12_BUCKET_COPIES + (C.DS_OVERLAP_EXTRA_COPIES if s.overlap_comm else 0))


def _zero12_offload_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """ZeRO-1/2 with offload_optimizer keeps ``temp_grad_buffer_for_gpu_offload``, a buffer of the largest
    parameter's numel in the 16-bit dtype, on the GPU for the whole run (``initialize_gradient_partitioning_data_
    structures``) [SRC DeepSpeed 0.19.8 runtime/zero/stage_1_and_2.py]."""
    if not setup.sharding.offload_optimizer:
        return 0.0
    return setup.param_bytes * arch.largest_module_params


def step_buffer_bytes(arch: Architecture, setup: TrainSetup, buffers: float) -> float:
    """The buffers of ``buffer_bytes`` still allocated at the optimizer step. FSDP's are unsharded params and
    gradients of the units being run: FULL_SHARD / SHARD_GRAD_OP free every unsharded FlatParameter in its
    post-backward hook, the root's included, so the step sees sharded states only [MEM torch
    distributed/fsdp/_runtime_utils.py `_should_free_in_backward`, `_post_backward_reshard`]. ZeRO-1/2 release their
    gradient buckets when backward ends (``_zero12_bucket_bytes``); the offload buffer stays. ZeRO-3's bucket, gathered
    and persistent params and DDP's gradient buckets are allocated once and stay."""
    s = setup.sharding
    if s.kind is ShardingKind.FSDP:
        return 0.0
    if s.kind is ShardingKind.DEEPSPEED and 0 < s.stage < 3:
        return _zero12_offload_bytes(arch, setup)
    return buffers


def step_temp_bytes(setup: TrainSetup, trainable: int, largest_module: int) -> float:
    """fp32 gradients DeepSpeed builds for the optimizer step (on the GPU unless the optimizer is offloaded).

    ZeRO-1/2 first flattens the rank's gradient partition into one 16-bit tensor, then copies that to fp32 before
    it frees the flat copy, so at that moment the partition's gradients are there three times: in the gradient
    buffer, flat, and in fp32 (4 + 2 bytes here per trainable element of the partition; the buffer is the step's
    gradients) [SRC DeepSpeed 0.19.8 runtime/zero/stage_1_and_2.py `step`: `flatten_dense_tensors_aligned(...)`,
    `.to(fp32)`, `del flat_grad_partition`]. Measured on an H200: SmolLM2-1.7B and Llama-3.2-3B full fine-tunes
    under ZeRO-2 peak there at 35.1 and 65.9 GiB allocated, the flat copy included
    (benchmarks/memory/results-NVIDIA_H200-2026-11-26.md). An fp32 model's `.to(fp32)` is the flat tensor itself."""
    s = setup.sharding
    if s.kind != "deepspeed" or s.stage == 0 or s.offload_optimizer:
        return 0.0
    partition = trainable / s.world
    if s.stage < 3:
        flat = setup.param_bytes * partition if setup.param_bytes < C.FP32 else 0.0
        return C.FP32 * partition + flat
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
