"""Memory outside the live tensors: allocator slack, CUDA context, NCCL (memory-model.md §0, §1.5).

  peak_reserved = peak_allocated × (1 + slack)      slack 0.15, 0.05 with expandable_segments:True
  peak_device   = peak_reserved + CUDA context (1.0 GiB) + NCCL (1.0 GiB when world > 1)
"""
from __future__ import annotations

import os
from typing import Mapping

from axlint.memory import constants as C


def expandable_segments_enabled(env: Mapping[str, str] | None = None) -> bool:
    """``expandable_segments:True`` in PYTORCH_CUDA_ALLOC_CONF or its newer name PYTORCH_ALLOC_CONF."""
    env = os.environ if env is None else env
    conf = ",".join(env.get(k, "") for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"))
    return "expandable_segments:true" in conf.replace(" ", "").lower()


def allocator_slack_bytes(allocated: float, expandable_segments: bool) -> float:
    return allocated * (C.ALLOCATOR_SLACK_EXPANDABLE if expandable_segments else C.ALLOCATOR_SLACK)


def context_bytes(world: int) -> float:
    """CUDA context + kernels, plus NCCL communicators for a distributed run."""
    return (C.CUDA_CONTEXT_GIB + (C.NCCL_GIB if world > 1 else 0.0)) * C.GIB
