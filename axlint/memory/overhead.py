"""Memory outside the live tensors: allocator slack, CUDA context, NCCL (PyTorch CUDA caching
allocator notes, `docs/source/notes/cuda.rst`; Stas Bekman, ml-engineering).

  peak_reserved = peak_allocated × (1 + slack)      slack 0.10, 0.05 with expandable_segments:True
                  + the loss's cached-unreused block when the peak is the loss moment (loss_unreused_bytes)
  peak_device   = peak_reserved + CUDA context (0.75 GiB) + NCCL (1.0 GiB when world > 1; 0.55 GiB for DeepSpeed
                  on one GPU)
"""
from __future__ import annotations

import os
from typing import Mapping

from axlint.architectures import Architecture
from axlint.facts import LossKernel, ShardingKind
from axlint.memory import constants as C
from axlint.memory.setup import TrainSetup


def expandable_segments_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``expandable_segments:True`` in PYTORCH_CUDA_ALLOC_CONF or its newer name PYTORCH_ALLOC_CONF."""
    env = os.environ if env is None else env
    conf = ",".join(env.get(k, "") for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"))
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def allocator_slack_bytes(allocated: float, expandable_segments: bool) -> float:
    return allocated * (C.ALLOCATOR_SLACK_EXPANDABLE if expandable_segments else C.ALLOCATOR_SLACK)


def resident_bytes(allocated: float, context: float) -> float:
    """What a GPU must hold at a moment of ``allocated`` bytes for the run not to raise out-of-memory: the allocated
    bytes, the fragmentation the allocator cannot give back (``RESIDENT_FRAGMENTATION``) and the context. Cached
    blocks beyond that are released and the allocation retried before PyTorch raises, so reserved memory above
    this is not needed."""
    return allocated * (1 + C.RESIDENT_FRAGMENTATION) + context


def context_bytes(world: int, sharding: ShardingKind = ShardingKind.SINGLE) -> float:
    """CUDA context + kernels, plus NCCL's communicator and buffers where a process group runs on NCCL: every
    run of several GPUs, and DeepSpeed on one GPU too (``deepspeed.init_distributed``: NCCL_SINGLE_GIB, measured)."""
    if world > 1:
        nccl = C.NCCL_GIB
    elif sharding is ShardingKind.DEEPSPEED:
        nccl = C.NCCL_SINGLE_GIB
    else:
        nccl = 0.0
    return (C.CUDA_CONTEXT_GIB + nccl) * C.GIB


def loss_unreused_bytes(arch: Architecture, setup: TrainSetup, tokens: int) -> float:
    """Reserved-but-unusable memory the HF loss leaves in the caching allocator at the start of backward.

    T·V blocks in order (transformers 5 `loss/loss_utils.py`, ForCausalLMLoss): forward allocates the bf16 logits
    2TV, their fp32 upcast 4TV and the fp32 log-softmax 4TV (saved); the bf16 logits and the upcast are freed once the
    loss is computed. Backward then asks for two fp32 4TV gradients (nll, log-softmax) while the log-softmax is
    alive: the first reuses the cached upcast block, the second finds only the 2TV block, too small (a cached block
    serves only a request that fits in it, and non-adjacent free blocks are never merged [SRC PyTorch
    c10/cuda/CUDACachingAllocator.cpp, best-fit over cached blocks ≥ the request]), so a new 4TV block is mapped.
    Reserved at that moment = 2 + 4 + 4 + 4 = 14TV for 12TV allocated: the 2TV block stays cached, unused, until
    the bf16 gradient of the logits takes it. Only the full HF loss has it: Liger CE and FLCE work in place or in
    chunks, CCE never materialises the logits; chunked CE is not modelled (0)."""
    if setup.loss is not LossKernel.HF:
        return 0.0
    return C.LOGITS_HF_UNREUSED * arch.output_size * tokens
