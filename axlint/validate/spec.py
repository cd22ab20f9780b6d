"""TrainSpec: the few Axolotl settings a real or simulated training step depends on, read from the config dict.

Pure functions only; no torch import. Axolotl's semantics: `bf16: true|auto|full` -> bfloat16, `fp16` -> float16,
else float32; legacy attention flags map to `attn_implementation` (priority xformers > sage > flex > flash > sdp >
eager, axolotl.md); `gradient_checkpointing_kwargs` defaults to `{"use_reentrant": True}` when checkpointing is on.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

_LEGACY_ATTENTION = (
    ("xformers_attention", "xformers"),
    ("sage_attention", "sage"),
    ("flex_attention", "flex_attention"),
    ("flash_attention", "flash_attention_2"),
    ("sdp_attention", "sdpa"),
    ("eager_attention", "eager"),
)
_CPU_ATTENTION = {"eager": "eager", "sdpa": "sdpa"}

LIGER_KEYS = ("liger_rope", "liger_rms_norm", "liger_glu_activation", "liger_layer_norm",
              "liger_fused_linear_cross_entropy", "liger_cross_entropy")


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
    lora_r: int
    lora_alpha: int
    lora_dropout: float
    lora_target_modules: list[str] | str
    learning_rate: float
    optimizer: str
    liger: dict[str, bool] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.micro_batch_size * self.sequence_len

    @property
    def quantized(self) -> bool:
        return self.adapter == "qlora"

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def training_dtype(config: Mapping[str, Any]) -> str:
    """torch dtype name the model is loaded and trained in."""
    if config.get("bf16") in (True, "auto", "full"):
        return "bfloat16"
    if config.get("fp16") is True:
        return "float16"
    return "float32"


def attention_implementation(config: Mapping[str, Any]) -> str:
    """`attn_implementation`, else the legacy flag with the highest priority, else HF's default `sdpa`."""
    impl = config.get("attn_implementation")
    if isinstance(impl, str) and impl:
        return impl
    for key, name in _LEGACY_ATTENTION:
        if config.get(key) is True:
            return name
    return "sdpa"


def cpu_attention(impl: str) -> str:
    """The implementation that runs on CPU for `impl`: eager and sdpa as they are, anything else becomes sdpa."""
    return _CPU_ATTENTION.get(impl, "sdpa")


def lora_targets(config: Mapping[str, Any]) -> list[str] | str:
    """PEFT `target_modules`: the explicit list, `all-linear` for `lora_target_linear`, else q_proj/v_proj."""
    modules = config.get("lora_target_modules")
    if config.get("lora_target_linear") is True:
        return "all-linear"
    if isinstance(modules, str):
        return [modules]
    if isinstance(modules, list) and modules:
        return [str(m) for m in modules]
    return ["q_proj", "v_proj"]


def train_spec(config: Mapping[str, Any]) -> TrainSpec:
    """A TrainSpec from an Axolotl config dict (raw or with defaults applied)."""
    adapter = config.get("adapter") or None
    if adapter is None and config.get("load_in_4bit") is True:
        adapter = "qlora"
    gc = config.get("gradient_checkpointing")
    gc_on = gc is True or gc in ("offload", "unsloth")
    gc_kwargs = config.get("gradient_checkpointing_kwargs")
    liger = {k: bool(config.get(k)) for k in LIGER_KEYS if config.get(k)}
    return TrainSpec(
        micro_batch_size=int(config.get("micro_batch_size") or 1),
        sequence_len=int(config.get("sequence_len") or 2048),
        gradient_accumulation_steps=int(config.get("gradient_accumulation_steps") or 1),
        dtype=training_dtype(config),
        attn_implementation=attention_implementation(config),
        gradient_checkpointing=gc_on,
        gradient_checkpointing_kwargs=dict(gc_kwargs) if isinstance(gc_kwargs, dict) else {"use_reentrant": True},
        adapter=str(adapter) if adapter else None,
        lora_r=int(config.get("lora_r") or 8),
        lora_alpha=int(config.get("lora_alpha") or 16),
        lora_dropout=float(config.get("lora_dropout") or 0.0),
        lora_target_modules=lora_targets(config),
        learning_rate=float(config.get("learning_rate") or 1e-5),
        optimizer=str(config.get("optimizer") or "adamw_torch_fused"),
        liger=liger,
    )
