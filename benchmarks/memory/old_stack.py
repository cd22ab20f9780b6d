"""What the Hugging Face stack of a published measurement kept beyond today's (transformers 5), for the
measurements taken on an older stack: the calibration test and the published-measurements benchmark estimate
today's stack and add these where the source ran the older one."""
from __future__ import annotations

from typing import Any

MIB = 2**20


def repeat_kv_sdpa_extra(arch: Any) -> float:
    """Bytes per token the older sdpa path kept beyond today's: it repeated K and V to every head (repeat_kv) and
    copied the transposed output, 10·hq in all (memory-model.md §1.2, "sdpa with repeat_kv, the long-standing
    default"), where transformers 5 takes the GQA flash path: q, k, v, output and fp32 lse, 4hq + 4hkv + 4a."""
    hq, hkv, a = arch.q_dim, arch.kv_dim, arch.num_heads
    return 10 * hq - (4 * hq + 4 * hkv + 4 * a)


def shifted_logits_extra(arch: Any, batch: int, tokens: int) -> float:
    """Reserved bytes the pre-4.46 transformers loss left beyond today's (the Liger chart's stack, 2024-08): the model
    upcast the logits and made a shifted fp32 copy ``logits[..., :-1, :].contiguous()``, so the log-softmax and both
    fp32 gradients have (T − b)·V elements; the slice's backward then asks for a full T·V fp32 zero tensor, which none
    of the cached (T − b)·V blocks can hold once 4·b·V exceeds the allocator's 2 MiB rounding (b = 8: 4.1 MB), and
    a fifth 4·T·V block is mapped: 18·T·V reserved where today's loss reserves 14·T·V (overhead.loss_unreused_bytes).
    [INF from the old LlamaForCausalLM.forward and the caching allocator's best-fit; memory-model.md §1.3]"""
    if 4 * batch * arch.vocab_size <= 2 * MIB:
        return 0.0
    return 4 * tokens * arch.vocab_size
