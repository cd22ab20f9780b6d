"""TrainSpec: the few settings a real or simulated training step depends on, taken from the resolved run.

Pure functions only; no torch import. Every value comes from `axlint.facts`, which reads the config the way
Axolotl does; this module only shapes it for the model builder and the worker (a JSON round trip).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from axlint.facts import Lora, LossKernel, RunFacts, resolve_facts

_CPU_ATTENTION = {"eager": "eager", "sdpa": "sdpa"}

LIGER_KEYS = ("liger_rope", "liger_rms_norm", "liger_glu_activation", "liger_layer_norm",
              "liger_fused_linear_cross_entropy", "liger_cross_entropy")
"""The Liger kernels a step can apply, by the Axolotl key that turns each on."""

@dataclass(frozen=True)
class TrainSpec:
    """What one training step needs to know. `tokens` = micro_batch_size × sequence_len (the packing worst case)."""

    micro_batch_size: int
    sequence_len: int
    gradient_accumulation_steps: int
    dtype: str
    attn_implementation: str
    gradient_checkpointing: bool
    gradient_checkpointing_kwargs: dict[str, Any]
    adapter: str | None
    quantization: str | None  # "nf4" | "int8" | None, as Axolotl's loader builds it
    lora_r: int
    lora_alpha: int
    lora_dropout: float
    lora_target_modules: list[str] | str
    learning_rate: float
    optimizer: str
    liger: dict[str, bool] = field(default_factory=dict)
    lora_modules_to_save: list[str] = field(default_factory=list)
    """Modules PEFT keeps a trainable full copy of (`lora_modules_to_save`, e.g. embed_tokens and lm_head)."""
    lora_target_parameters: list[str] = field(default_factory=list)
    """Parameters PEFT wraps in a LoRA `ParamWrapper` (`lora_target_parameters`, e.g. the experts' 3-D weights)."""
    lora_layers_to_transform: list[int] = field(default_factory=list)
    """`peft_layers_to_transform`: PEFT adapts only the modules of these layers (empty: every layer)."""
    lora_layers_pattern: list[str] = field(default_factory=list)
    """`peft_layers_pattern`: the names after which PEFT reads a module's layer index (empty: PEFT's own reading)."""
    lora_rank_pattern: dict[str, int] = field(default_factory=dict)
    """`lora_rank_pattern`: module path expression -> the rank of the modules it matches (PEFT ``rank_pattern``)."""
    lora_alpha_pattern: dict[str, int] = field(default_factory=dict)
    """`lora_alpha_pattern`: module path expression -> their alpha (PEFT ``alpha_pattern``)."""
    lora_use_dora: bool = False
    """`peft_use_dora`: PEFT's DoRA layers in place of plain LoRA (``use_dora``)."""
    lora_trainable_tokens: list[int] | dict[str, list[int]] | None = None
    """`peft_trainable_token_indices` as PEFT takes it (``trainable_token_indices``): the input embedding's indices,
    or layer name -> indices."""
    embeddings_fp32: bool = False
    """Axolotl leaves the input and output embeddings in fp32 (`RunFacts.embeddings_fp32`)."""
    experts_fp32: bool = False
    """PEFT's kbit preparation leaves the routed experts in fp32 (`RunFacts.experts_fp32`)."""
    quantize_experts: bool = False
    """The routed experts are stored quantized too (Axolotl's ``quantize_moe_experts``; `RunFacts.quantize_experts`)."""
    cut_cross_entropy: bool = False
    """The loss is Cut Cross-Entropy (the CCE plugin; `LossKernel.CCE`)."""

    @property
    def tokens(self) -> int:
        return self.micro_batch_size * self.sequence_len

    @property
    def quantized(self) -> bool:
        """The frozen weights are stored by bitsandbytes (4-bit or 8-bit), which needs a CUDA GPU."""
        return self.quantization in ("nf4", "int8")

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def cpu_attention(impl: str) -> str:
    """The implementation that runs on CPU for `impl`: eager and sdpa as they are, anything else becomes sdpa."""
    return _CPU_ATTENTION.get(impl, "sdpa")


def lora_targets(lora: Lora, linear_names: tuple[str, ...] | None = None) -> list[str] | str:
    """PEFT `target_modules` as Axolotl hands them over (0.18.0 `loaders/adapter.py` `_build_peft_lora_config`): with
    `lora_target_linear`, the written targets (a regular expression as one list entry) and the last name of every
    Linear of the model (`linear_names`, `memory.params.linear_names`; PEFT's own `all-linear` where the model's
    names are not given); else the written list or regular expression, else q_proj / v_proj."""
    written = [lora.target_modules] if isinstance(lora.target_modules, str) else list(lora.target_modules)
    if lora.target_linear:
        return sorted({*written, *linear_names}) if linear_names is not None else "all-linear"
    if isinstance(lora.target_modules, str):
        return [lora.target_modules]
    return written or ["q_proj", "v_proj"]


def train_spec(facts: RunFacts, linear_names: tuple[str, ...] | None = None) -> TrainSpec:
    """The TrainSpec of a resolved run (axlint.facts); `linear_names`: what `lora_target_linear` adds on this model
    (`lora_targets`)."""
    on = (facts.liger_rope, facts.liger_rms_norm, facts.liger_glu, facts.liger_layer_norm,
          facts.loss.value is LossKernel.LIGER_FLCE, facts.loss.value is LossKernel.LIGER_CE)
    return TrainSpec(
        micro_batch_size=facts.micro_batch_size.value,
        sequence_len=facts.sequence_len.value,
        gradient_accumulation_steps=facts.gradient_accumulation_steps.value,
        dtype=facts.dtype.value,
        attn_implementation=facts.attention,
        gradient_checkpointing=facts.gradient_checkpointing.value,
        gradient_checkpointing_kwargs=dict(facts.gradient_checkpointing_kwargs),
        adapter=facts.adapter.value,
        quantization=facts.quantization.value,
        lora_r=facts.lora.r,
        lora_alpha=facts.lora.alpha,
        lora_dropout=facts.lora.dropout,
        lora_target_modules=lora_targets(facts.lora, linear_names),
        learning_rate=facts.learning_rate.value or 1e-5,
        optimizer=facts.optimizer.value,
        liger={key: True for key, enabled in zip(LIGER_KEYS, on) if enabled},
        lora_modules_to_save=list(facts.lora.modules_to_save),
        lora_target_parameters=list(facts.lora.target_parameters),
        lora_layers_to_transform=list(facts.lora.layers_to_transform),
        lora_layers_pattern=list(facts.lora.layers_pattern),
        lora_rank_pattern=dict(facts.lora.rank_pattern),
        lora_alpha_pattern=dict(facts.lora.alpha_pattern),
        lora_use_dora=facts.lora.dora,
        lora_trainable_tokens=_peft_token_indices(facts.lora.trainable_tokens),
        embeddings_fp32=facts.embeddings_fp32,
        experts_fp32=facts.experts_fp32,
        quantize_experts=facts.quantize_experts,
        cut_cross_entropy=facts.loss.value is LossKernel.CCE,
    )


def job_facts(job: Mapping[str, Any]) -> RunFacts:
    """The resolved run of a validate job: its config and DeepSpeed dict as written, "auto" filled for the world
    size and the hidden size that actually run (a multimodal model's decoder's, as transformers' DeepSpeed
    integration reads ``text_config`` when the config has no hidden size of its own)."""
    config = job["model_config"]
    hidden = int(config.get("hidden_size") or (config.get("text_config") or {}).get("hidden_size") or 0) or None
    return resolve_facts(job["axolotl"], job.get("ds_raw"), world_size=int(job.get("world_size") or 1),
                         hidden_size=hidden)


def _peft_token_indices(tokens: tuple[tuple[str, tuple[int, ...]], ...]) -> list[int] | dict[str, list[int]] | None:
    """``Lora.trainable_tokens`` as PEFT's ``trainable_token_indices`` takes it: the list of the input embedding's
    indices (written as a list), or a mapping of layer names."""
    if not tokens:
        return None
    if tokens[0][0] == "":
        return list(tokens[0][1])
    return {name: list(indices) for name, indices in tokens}
