"""Tensor parallelism: one GPU's share of each layer when transformers applies a model's ``tp_plan``.

Axolotl 0.18 hands ``tensor_parallel_size`` to ``from_pretrained`` as ``tp_size`` (loaders/model.py) and lays the tp
axis out in accelerate's mesh (``axlint.facts.Mesh``). transformers 5 then shards each decoder layer by the config
class's ``base_model_tp_plan``: for the families in ``TP_FAMILIES`` q_proj, k_proj, v_proj, gate_proj and up_proj
column-wise (each rank holds heads/tp query heads, kv_heads/tp key/value heads and I/tp of the MLP width),
o_proj and down_proj row-wise (their inputs are those shards; the outputs are summed over the tp ranks, so the
hidden states, the norms and the residual stream stay whole on every rank), q/k norms replicated; the embedding is
not in the plan. The output projection is ``colwise_gather_output``: its logits are gathered, whole on every rank.

One rank is therefore the same decoder with heads/tp, kv_heads/tp and intermediate_size/tp (``per_rank``), whose
parameters, trainable states and activations the estimate takes as they are. The lm_head stays whole in it: its
weight shard (1/tp of V x h) is counted whole, a small overstatement the estimate says.
"""
from __future__ import annotations

from dataclasses import replace

from axlint.architectures import Architecture
from axlint.facts import Sharding, ShardingKind

TP_FAMILIES = frozenset({"llama", "mistral", "granite", "qwen2", "qwen3", "olmo", "cohere", "cohere2", "gemma",
                         "gemma2", "gemma3_text", "seed_oss", "exaone4", "ministral3"})
"""Dense decoders whose transformers 5.24 ``base_model_tp_plan`` is the plan above (checked in
tests/test_tensor_parallel.py)."""


def unsupported(arch: Architecture, tp: int) -> str | None:
    """Why one rank of ``arch`` under tensor parallelism of ``tp`` cannot be laid out (None when it can): a family
    outside ``TP_FAMILIES``, a multimodal model, or a size the ranks cannot split evenly."""
    if arch.decoder_type not in TP_FAMILIES or arch.multimodal or arch.is_moe or arch.family is None:
        return f"splits every layer of a {arch.decoder_type} model over GPUs"
    sizes = {"num_attention_heads": arch.num_heads, "num_key_value_heads": arch.num_kv_heads,
             "intermediate_size": arch.intermediate_size}
    uneven = [f"{key} {value}" for key, value in sizes.items() if value % tp]
    return f"splits every layer over GPUs, and {', '.join(uneven)} is not a multiple of it" if uneven else None


def not_modelled(arch: Architecture, sharding: Sharding) -> str | None:
    """Why the tensor parallelism of a run is left out of the estimate (MEM010 says it), None when it is modelled or
    absent: DeepSpeed's AutoTP, or ``unsupported``."""
    tp = sharding.mesh.tp
    if tp == 1:
        return None
    if sharding.kind is ShardingKind.DEEPSPEED:
        return "splits every layer over GPUs with DeepSpeed's AutoTP"
    return unsupported(arch, tp)


def rank_of(model: Architecture, sharding: Sharding) -> Architecture:
    """What one GPU holds of ``model`` (``per_rank``); the model itself without tensor parallelism or where it is not
    modelled."""
    tp = sharding.mesh.tp
    return model if tp == 1 or not_modelled(model, sharding) else per_rank(model, tp)


def per_rank(arch: Architecture, tp: int) -> Architecture:
    """The decoder one tensor-parallel rank holds (module docstring): heads, kv heads and MLP width ÷ tp."""
    config = {**arch.config, "num_attention_heads": arch.num_heads // tp,
              "num_key_value_heads": arch.num_kv_heads // tp, "intermediate_size": arch.intermediate_size // tp,
              "head_dim": arch.head_dim}
    return replace(arch, config=config, published_parameters=None)
