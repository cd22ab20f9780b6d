"""TrainSetup: the memory-relevant facts of one run, read once from the Axolotl config and DeepSpeed dict.

Every other module of ``axlint.memory`` reads this typed object, never the raw dicts. Defaults follow Axolotl
0.18.0 (`utils/schemas/*.py`) and DeepSpeed 0.19.8 (`runtime/zero/config.py`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from axlint.architectures import Architecture
from axlint.hardware import Hardware
from axlint.memory import constants as C
from axlint.memory.liger_models import cce_supports, liger_supports

LIGER_PLUGIN = "axolotl.integrations.liger.LigerPlugin"
CCE_PLUGIN = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"
# legacy attention flags, highest priority first (Axolotl maps them to attn_implementation)
_LEGACY_ATTN = (("xformers_attention", "xformers"), ("sage_attention", "sage"), ("flex_attention", "flex_attention"),
                ("flash_attention", "flash_attention_2"), ("sdp_attention", "sdpa"), ("eager_attention", "eager"))
_TRUE = (True, "true", "True", 1)


@dataclass(frozen=True)
class Sharding:
    """How model states are split over ``world`` ranks. ``stage`` uses ZeRO numbering (FSDP full_shard = 3,
    shard_grad_op = 2, no_shard = 0); ``kind`` is "single" | "ddp" | "deepspeed" | "fsdp"."""

    kind: str = "single"
    stage: int = 0
    world: int = 1
    offload_optimizer: bool = False
    offload_param: bool = False
    ds_optimizer: bool = False  # optimizer defined in the DeepSpeed JSON (FusedAdam, fp32 states)
    reduce_bucket: float = C.DS_REDUCE_BUCKET
    allgather_bucket: float = C.DS_ALLGATHER_BUCKET
    prefetch_bucket: float = C.DS_PREFETCH_BUCKET
    max_live_parameters: float = C.DS_MAX_LIVE_PARAMETERS
    persistence_threshold: float = C.DS_PERSISTENCE_THRESHOLD
    sub_group_size: float = C.DS_SUB_GROUP_SIZE
    overlap_comm: bool = False
    fsdp_version: int = 1  # FSDP only: Axolotl takes 1 when fsdp_config has no fsdp_version (Axolotl 0.18.0)

    @property
    def distributed(self) -> bool:
        return self.world > 1


@dataclass(frozen=True)
class TrainSetup:
    param_bytes: int                 # model load dtype: 2 (bf16/fp16) or 4 (fp32)
    quantization: str | None         # "nf4" | "int8" | None
    double_quant: bool
    adapter: str | None              # "lora" | "qlora" | None
    lora_r: int
    lora_dropout: float
    lora_target_modules: tuple[str, ...] | str
    lora_target_linear: bool
    modules_to_save: tuple[str, ...]
    unfrozen_parameters: tuple[str, ...]
    sequence_len: int
    micro_batch_size: int
    gradient_accumulation_steps: int
    eval_sequence_len: int
    eval_batch_size: int
    packed_or_padded: bool
    gradient_checkpointing: bool
    offload_checkpoints: bool
    attention: str                   # "eager" | "sdpa" | "flash"
    attn_implementation: str
    optimizer: str
    loss: str                        # "hf" | "liger_flce" | "liger_ce" | "cce" | "chunked"
    chunked_ce_chunks: int
    liger_rms_norm: bool
    liger_glu: bool
    sharding: Sharding = field(default_factory=Sharding)
    assumptions: tuple[str, ...] = ()

    @property
    def tokens(self) -> int:
        """Tokens per micro batch: micro_batch_size × sequence_len (exact with packing/padding, worst case else)."""
        return self.micro_batch_size * self.sequence_len

    @property
    def eval_tokens(self) -> int:
        return self.eval_batch_size * self.eval_sequence_len

    def with_changes(self, **changes: Any) -> "TrainSetup":
        return replace(self, **changes)


def _truthy(value: Any) -> bool:
    return value in _TRUE


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _ds_get(zero: Mapping[str, Any], name: str, default: float) -> float:
    """A ZeRO key under its ``stage3_`` name or its short alias; "auto" (unresolved) -> default."""
    for key in (f"stage3_{name}", name):
        value = zero.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return default


def read_sharding(config: Mapping[str, Any], ds: Mapping[str, Any] | None, hw: Hardware) -> Sharding:
    """DeepSpeed ``zero_optimization`` wins; then ``fsdp_config`` / legacy ``fsdp`` list; then DDP / single."""
    world = hw.count
    if ds:
        zero = ds.get("zero_optimization") or {}
        device = lambda k: str((zero.get(k) or {}).get("device", "none")).lower() in ("cpu", "nvme")  # noqa: E731
        stage = _int(zero.get("stage"), 0)
        return Sharding("deepspeed", stage, world, device("offload_optimizer"), stage == 3 and device("offload_param"),
                        "optimizer" in ds,
                        _ds_get(zero, "reduce_bucket_size", C.DS_REDUCE_BUCKET),
                        _ds_get(zero, "allgather_bucket_size", C.DS_ALLGATHER_BUCKET),
                        _ds_get(zero, "prefetch_bucket_size", C.DS_PREFETCH_BUCKET),
                        _ds_get(zero, "max_live_parameters", C.DS_MAX_LIVE_PARAMETERS),
                        _ds_get(zero, "param_persistence_threshold", C.DS_PERSISTENCE_THRESHOLD),
                        _ds_get(zero, "sub_group_size", C.DS_SUB_GROUP_SIZE),
                        _truthy(zero.get("overlap_comm", stage == 3)))
    fsdp_cfg = config.get("fsdp_config") or {}
    fsdp_list = config.get("fsdp") or []
    if fsdp_cfg or fsdp_list:
        strategy = str(fsdp_cfg.get("sharding_strategy") or fsdp_cfg.get("fsdp_sharding_strategy")
                       or " ".join(map(str, fsdp_list)) or "full_shard").lower()
        reshard = fsdp_cfg.get("reshard_after_forward", fsdp_cfg.get("fsdp_reshard_after_forward"))
        stage = 0 if "no_shard" in strategy else 2 if ("shard_grad_op" in strategy or reshard is False) else 3
        offload = _truthy(fsdp_cfg.get("offload_params", fsdp_cfg.get("fsdp_offload_params"))) or "offload" in strategy
        version = _int(config.get("fsdp_version") or fsdp_cfg.get("fsdp_version") or fsdp_cfg.get("version"), 1)
        return Sharding("fsdp", stage, world, offload, offload, fsdp_version=version)
    return Sharding("ddp" if world > 1 else "single", 0, world)


def _attention(config: Mapping[str, Any]) -> tuple[str, str]:
    impl = config.get("attn_implementation")
    if not impl:
        impl = next((name for key, name in _LEGACY_ATTN if _truthy(config.get(key))), "sdpa")
    impl = str(impl)
    if impl == "eager":
        return "eager", impl
    if impl == "sdpa":
        return "sdpa", impl
    return "flash", impl  # flash_attention_2/3, flex, xformers, sage, kernels-community/*: no s² tensors


def _loss(config: Mapping[str, Any], plugins: list[str]) -> str:
    if any(p.endswith("CutCrossEntropyPlugin") for p in plugins) and config.get("cut_cross_entropy") is not False:
        return "cce"
    if any(p.endswith("LigerPlugin") for p in plugins):
        if _truthy(config.get("liger_fused_linear_cross_entropy")):
            return "liger_flce"
        if _truthy(config.get("liger_cross_entropy")):
            return "liger_ce"
    if _truthy(config.get("chunked_cross_entropy")):
        return "chunked"
    return "hf"


def read_setup(config: Mapping[str, Any], ds: Mapping[str, Any] | None, arch: Architecture,
               hw: Hardware) -> TrainSetup:
    """Normalise the Axolotl config (defaults applied) + resolved DeepSpeed dict into a TrainSetup."""
    notes: list[str] = []
    bf16 = config.get("bf16", "auto")
    if bf16 == "auto":
        bf16 = hw.bf16
    half = _truthy(bf16) or _truthy(config.get("fp16")) or _truthy(config.get("load_in_8bit")) \
        or _truthy(config.get("bfloat16")) or _truthy(config.get("float16"))
    if ds and (_truthy((ds.get("bf16") or {}).get("enabled")) or _truthy((ds.get("fp16") or {}).get("enabled"))):
        half = True
    if not half:
        notes.append("bf16/fp16 off: the model is loaded and trained in fp32")
    quant = "nf4" if _truthy(config.get("load_in_4bit")) else "int8" if _truthy(config.get("load_in_8bit")) else None
    bnb = config.get("bnb_config_kwargs") or {}
    adapter = config.get("adapter") or None
    targets = config.get("lora_target_modules") or ()
    plugins = [str(p) for p in (config.get("plugins") or [])]
    loss = _loss(config, plugins)
    liger = any(p.endswith("LigerPlugin") for p in plugins) and liger_supports(arch.model_type)
    if loss == "cce" and not cce_supports(arch.model_type):
        notes.append(f"Cut Cross-Entropy has no patch for model_type {arch.model_type!r}; "
                     "Axolotl's generic (experimental) patch assumed to apply")
    gc = config.get("gradient_checkpointing")
    fsdp_cfg = config.get("fsdp_config") or {}
    gc_on = bool(gc) or _truthy(fsdp_cfg.get("activation_checkpointing")) or _truthy(
        fsdp_cfg.get("fsdp_activation_checkpointing"))  # FSDP1 spelling (e.g. llama-3/3b-qat-fsdp2.yaml)
    offload = gc in ("offload", "offload_disk") or (gc_on and bool(config.get("activation_offloading")))
    packed = _truthy(config.get("sample_packing")) or _truthy(config.get("pad_to_sequence_len"))
    seq = _int(config.get("sequence_len"), 512)
    mbs = _int(config.get("micro_batch_size"), 1)
    if not packed:
        notes.append(f"no sample_packing / pad_to_sequence_len: every micro batch assumed to reach "
                     f"sequence_len ({mbs}×{seq} tokens, the worst case)")
    attention, impl = _attention(config)
    sharding = read_sharding(config, ds, hw)
    return TrainSetup(
        param_bytes=C.BF16 if half else C.FP32,
        quantization=quant,
        double_quant=_truthy(bnb.get("bnb_4bit_use_double_quant", True)),
        adapter=str(adapter) if adapter else None,
        lora_r=_int(config.get("lora_r"), 8),
        lora_dropout=float(config.get("lora_dropout") or 0.0),
        lora_target_modules=targets if isinstance(targets, str) else tuple(map(str, targets)),
        lora_target_linear=_truthy(config.get("lora_target_linear")),
        modules_to_save=tuple(map(str, config.get("lora_modules_to_save") or ())),
        unfrozen_parameters=tuple(map(str, config.get("unfrozen_parameters") or ())),
        sequence_len=seq,
        micro_batch_size=mbs,
        gradient_accumulation_steps=_int(config.get("gradient_accumulation_steps"), 1),
        eval_sequence_len=_int(config.get("eval_sequence_len"), seq),
        eval_batch_size=_int(config.get("eval_batch_size"), mbs),
        packed_or_padded=packed,
        gradient_checkpointing=gc_on,
        offload_checkpoints=offload,
        attention=attention,
        attn_implementation=impl,
        optimizer=str(config.get("optimizer") or "adamw_torch_fused"),
        loss=loss,
        chunked_ce_chunks=_int(config.get("chunked_cross_entropy_num_chunks"), C.CHUNKED_CE_CHUNKS),
        liger_rms_norm=liger and _truthy(config.get("liger_rms_norm")),
        liger_glu=liger and (_truthy(config.get("liger_glu_activation")) or _truthy(config.get("liger_swiglu"))),
        sharding=sharding,
        assumptions=tuple(notes),
    )
