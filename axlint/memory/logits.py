"""Logits and loss memory for T tokens, vocabulary V, hidden h (transformers 5 `loss/loss_utils.py`; Liger-Kernel and
Cut Cross-Entropy kernels).

  HF ForCausalLMLoss   14·T·V  bf16 logits 2 + fp32 upcast 4 + log_softmax 4, + grads at backward start
  Liger CE (unfused)    6·T·V  bf16 logits + the loss's fp32 upcast, into which Liger writes the gradient
  chunked CE           (2 + 12/n)·T·V  bf16 logits whole, fp32 work per chunk
  Liger FLCE           13·T·h  logits never materialised (Liger benchmark slope 0.054 MB/token at h=4096),
                       + V·h·b when lm_head trains: the kernel computes the weight's gradient in the forward into
                       a buffer of the weight's dtype, kept until backward hands it on (liger-kernel 0.8.5
                       ops/fused_linear_cross_entropy.py ``grad_weight = torch.zeros_like(weight)``; measured on an
                       H200: Llama-3.2-1B full fine-tune, 8k tokens, a second 0.49 GiB lm_head gradient at the peak),
                       + V·h·(c + 4) while it adds a chunk's share, where liger-kernel 0.6.2 to 0.8.2 (Axolotl
                       0.18.0 pins 0.8.0) write ``grad_weight += torch.mm(grad_logits_chunk.t(), x_chunk).float()``:
                       the product in the compute dtype (c bytes: the half dtype under autocast) and its fp32 copy
                       (none when c is 4); older releases and 0.8.5 accumulate in place (``torch.addmm(out=...)``)
  Cut Cross-Entropy     4·T·h  grad of the input + recomputed blocks
  eval (no backward)   10·T·V  (Liger FLCE only fuses when training: eval materialises logits); CCE as training
  fp32 lm_head          + V·h·b: with the embeddings in fp32 (``TrainSetup.embeddings_fp32``) autocast casts the
                       output weight to the half dtype for the matmul and autograd keeps that copy until lm_head's
                       backward (measured on an H100: 0.49 GiB for Llama-3.2-1B); Liger FLCE's chunk matmuls run
                       under autocast too, and its forward's logits matmul and input-gradient matmul each cast the
                       weight (ops/fused_linear_cross_entropy.py ``_input_chunk @ weight.t()``, ``grad_logits_chunk
                       @ weight``): 2·V·h·b at its peak, beside a gradient buffer in fp32 (measured on an H100:
                       Llama-3.2-1B with Liger and sdpa at 8k tokens, two 0.49 GiB copies, 14.44 GiB allocated)

Under a classification head (reward_model, process_reward_model: ``setup.head``) V is the score head's num_labels
(``Architecture.output_size``): the logits are T×num_labels, and the loss (RewardTrainer's -logsigmoid of the
pooled rewards, or the token-classification cross-entropy) is the plain PyTorch one (``read_setup`` sets HF), so
the term is 14·T·num_labels bytes, a few KiB.
"""
from __future__ import annotations

from axlint.architectures import Architecture
from axlint.memory import constants as C
from axlint.memory.params import head_trains
from axlint.memory.setup import TrainSetup


def head_cast_bytes(arch: Architecture, setup: TrainSetup, copies: int = 1) -> float:
    """``copies`` of autocast's half-precision cast of an fp32 lm_head weight, V·h·b each (0 unless
    ``embeddings_fp32``, and for a classification head, which stays in the load dtype)."""
    if not setup.embeddings_fp32 or arch.num_labels:
        return 0.0
    return copies * setup.param_bytes * arch.vocab_size * arch.hidden_size


def flce_weight_grad_bytes(arch: Architecture, setup: TrainSetup) -> float:
    """Liger FLCE's lm_head gradient while the forward adds a chunk's share: the buffer V·h·b (the weight's dtype)
    and, with ``liger_flce_weight_grad_copies``, the chunk's product V·h·c in the compute dtype and its fp32 copy."""
    v, h = arch.output_size, arch.hidden_size
    c = setup.param_bytes
    copies = c + (C.FP32 if c < C.FP32 else 0) if setup.liger_flce_weight_grad_copies else 0
    return (setup.embedding_bytes + copies) * v * h


def logits_bytes(arch: Architecture, setup: TrainSetup, tokens: int, training: bool = True) -> float:
    v, h = arch.output_size, arch.hidden_size
    if setup.loss == "cce":
        return C.CCE_BYTES_PER_HIDDEN * h * tokens
    if not training:
        return C.LOGITS_EVAL * v * tokens + head_cast_bytes(arch, setup)
    if setup.loss == "liger_flce":
        grad_weight = flce_weight_grad_bytes(arch, setup) if head_trains(arch, setup) else 0.0
        return C.FLCE_BYTES_PER_HIDDEN * h * tokens + grad_weight + head_cast_bytes(arch, setup, copies=2)
    copy = head_cast_bytes(arch, setup)
    if setup.loss == "liger_ce":
        return C.LOGITS_LIGER_CE * v * tokens + copy
    if setup.loss == "chunked":
        return (C.BF16 + 3 * C.FP32 / setup.chunked_ce_chunks) * v * tokens + copy
    return C.LOGITS_HF * v * tokens + copy
