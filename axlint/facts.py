"""RunFacts: every fact of a run that rules, the estimator, the solver, simulate and validate need, resolved once.

The Axolotl YAML and the DeepSpeed JSON are read here, and only here, for these facts; every consumer reads the
resulting frozen `RunFacts`. Each `Fact` keeps the key it came from, so a finding about it can point there.
Resolution follows what the real stack does at launch (Axolotl 0.18.0, transformers 5.14, DeepSpeed 0.18):

- Axolotl's pydantic models coerce values in lax mode (`axlint.lax`): `micro_batch_size: "4"` is 4,
  `sample_packing: "yes"` is True. Its `mode="before"` validators read raw truthiness instead: a legacy attention
  flag written `flash_attention: "false"` still turns flash attention on (`AxolotlInputConfig.
  normalize_attn_implementation`, utils/schemas/config.py).
- Defaults are the pydantic defaults of Axolotl's schema (`sequence_len` 512, `optimizer` adamw_torch_fused, ...);
  `normalize_config` (utils/config/__init__.py) derives `gradient_accumulation_steps` from `batch_size` //
  `micro_batch_size` and `eval_batch_size` from `micro_batch_size`; `resolve_dtype` there turns `bf16: auto` into
  bf16 on a bf16-capable GPU (else fp16), switches fp16 off under bf16, and loads the model in bfloat16 (bf16 or
  `bfloat16`), float16 (`load_in_8bit`, fp16 or `float16`) or float32.
- Quantization as Axolotl's model loader builds it (loaders/model.py `_set_quantization_config`): nf4 when
  `adapter: qlora` with `load_in_4bit`, int8 when `adapter: lora` with `load_in_8bit`, none otherwise.
- DeepSpeed "auto" values as the HF Trainer fills them (transformers integrations/deepspeed.py
  `HfTrainerDeepSpeedConfig.trainer_config_process` / `trainer_config_finalize`), and the ZeRO stage as DeepSpeed's
  pydantic config reads it (`"3"` and `3.0` are stage 3; `"auto"` is refused by accelerate's `int()`).
"""
from __future__ import annotations

import copy
import enum
import re
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, Mapping, TypeVar

from axlint.lax import is_int, lax_bool, lax_float, lax_int, truthy
from axlint.mesh import Mesh, build_mesh

T = TypeVar("T")
KeyPath = tuple[Any, ...]

LIGER_PLUGIN = "axolotl.integrations.liger.LigerPlugin"
CCE_PLUGIN = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"
KERNELS_PLUGIN = "axolotl.integrations.kernels.KernelsPlugin"
SWANLAB_PLUGIN = "axolotl.integrations.swanlab.SwanLabPlugin"
LIGER_FLAGS = ("liger_rope", "liger_rms_norm", "liger_rms_norm_gated", "liger_layer_norm", "liger_glu_activation",
               "liger_cross_entropy", "liger_fused_linear_cross_entropy", "liger_use_token_scaling")
"""The Liger plugin's flags: any of them truthy makes its ``pre_model_load`` check the model's support (Axolotl
0.18.0 ``integrations/liger/plugin.py`` ``LIGER_FLAGS``; held to it by tests/test_oracle_model_support.py)."""

LEGACY_ATTENTION: tuple[tuple[str, str], ...] = (
    ("xformers_attention", "xformers"), ("sage_attention", "sage"), ("flex_attention", "flex_attention"),
    ("flash_attention", "flash_attention_2"), ("sdp_attention", "sdpa"), ("eager_attention", "eager"))
"""Axolotl's deprecated attention flags and the `attn_implementation` each maps to, highest priority first
(`LEGACY_ATTN_FLAG_TO_IMPL`, utils/schemas/enums.py, Axolotl 0.18.0)."""

CANONICAL_ATTENTION = frozenset({"eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention",
                                 "xformers", "sage", "fp8"})
"""The backends `attn_implementation` accepts by name (`CANONICAL_ATTN_IMPLS`); a value with a `/` is a hub
kernel and passes too."""

ATTENTION_ALIASES = {"flash": "flash_attention_2", "flex": "flex_attention", "sdp": "sdpa"}
"""Short forms Axolotl refuses, with the canonical name they stand for (`SHORT_FORM_ALIAS_TO_CANONICAL`)."""

ZERO_ALIASES = {
    "prefetch_bucket_size": "stage3_prefetch_bucket_size",
    "param_persistence_threshold": "stage3_param_persistence_threshold",
    "model_persistence_threshold": "stage3_model_persistence_threshold",
    "max_live_parameters": "stage3_max_live_parameters",
    "max_reuse_distance": "stage3_max_reuse_distance",
    "gather_16bit_weights_on_model_save": "stage3_gather_16bit_weights_on_model_save",
}
"""DeepSpeed accepts both spellings of these ZeRO-3 keys (pydantic aliases of `DeepSpeedZeroConfig`,
deepspeed/runtime/zero/config.py); axlint reads the long one."""


CHUNKED_CE_CHUNKS = 8
"""Axolotl's default `chunked_cross_entropy_num_chunks`."""

# DeepSpeed 0.18's `DeepSpeedZeroConfig` defaults (deepspeed/runtime/zero/config.py), in elements.
DS_REDUCE_BUCKET = 500_000_000
DS_PREFETCH_BUCKET = 50_000_000
DS_MAX_LIVE_PARAMETERS = 1_000_000_000
DS_PERSISTENCE_THRESHOLD = 100_000
DS_SUB_GROUP_SIZE = 1_000_000_000


class Origin(enum.Enum):
    WRITTEN = "written"    # the value of the key the fact points at
    DEFAULT = "default"    # nothing written: the stack's default
    DERIVED = "derived"    # computed from other keys (the key points at the one that decided it)


class Where(enum.Enum):
    AXOLOTL = "axolotl"
    DEEPSPEED = "deepspeed"


@dataclass(frozen=True)
class Fact(Generic[T]):
    """One resolved value, the key it came from (None for a default) and in which file that key is."""

    value: T
    key: KeyPath | None = None
    origin: Origin = Origin.DEFAULT
    where: Where = Where.AXOLOTL


class LossKernel(str, enum.Enum):
    HF = "hf"                  # transformers' cross-entropy over fp32 logits
    LIGER_FLCE = "liger_flce"  # Liger fused linear cross-entropy: no logits tensor
    LIGER_CE = "liger_ce"      # Liger cross-entropy: logits, no fp32 copy
    CCE = "cce"                # Cut Cross-Entropy: no logits tensor
    CHUNKED = "chunked"        # Axolotl's chunked cross-entropy


class ShardingKind(str, enum.Enum):
    SINGLE = "single"
    DDP = "ddp"
    DEEPSPEED = "deepspeed"
    FSDP = "fsdp"


Dtype = Literal["bfloat16", "float16", "float32"]


@dataclass(frozen=True)
class Sharding:
    """How model states are split over `world` ranks. `stage` uses ZeRO numbering (FSDP full_shard = 3,
    shard_grad_op = 2, no_shard = 0). Bucket sizes are DeepSpeed 0.18's defaults unless written. ``mesh``: the
    parallel axes (``Mesh``); ``state_ranks`` / ``expert_shard_ranks``: over how many ranks the sharded states of the
    dense parameters / of an expert-parallel slice of the routed experts are split."""

    kind: ShardingKind = ShardingKind.SINGLE
    stage: int = 0
    world: int = 1
    offload_optimizer: bool = False
    offload_param: bool = False
    ds_optimizer: bool = False  # optimizer defined in the DeepSpeed JSON (FusedAdam, fp32 states)
    reduce_bucket: float = DS_REDUCE_BUCKET
    prefetch_bucket: float = DS_PREFETCH_BUCKET
    max_live_parameters: float = DS_MAX_LIVE_PARAMETERS
    persistence_threshold: float = DS_PERSISTENCE_THRESHOLD
    sub_group_size: float = DS_SUB_GROUP_SIZE
    overlap_comm: bool = False
    fsdp_version: int = 1  # FSDP only: Axolotl takes 1 when nothing says otherwise
    mesh: Mesh = field(default_factory=Mesh)
    mesh_problem: str = ""

    @property
    def distributed(self) -> bool:
        return self.world > 1

    @property
    def state_ranks(self) -> int:
        """FSDP shards the dense parameters over ep × dp_shard × cp (Axolotl's ``dp_shard_cp`` mesh axes,
        monkeypatch/accelerate/parallelism_config.py); a HSDP copy (dp_replicate) and a tensor-parallel rank hold
        their own. Without a mesh written that is every rank, as for DeepSpeed, whose ZeRO group is the world."""
        if self.kind is ShardingKind.FSDP and self.mesh.size == self.world:
            return self.mesh.ep * self.mesh.dp_shard * self.mesh.cp
        return self.world

    @property
    def expert_shard_ranks(self) -> int:
        """Over how many ranks an expert-parallel slice of the routed experts (1/ep of them) is sharded: dp_shard
        under FSDP (the expert-parallel plugin wraps the experts on ``mesh["dp_shard"]``), else as the dense
        states."""
        if self.kind is ShardingKind.FSDP and self.mesh.size == self.world:
            return self.mesh.dp_shard
        return self.state_ranks


@dataclass(frozen=True)
class Lora:
    """The adapter settings PEFT is given (defaults: PEFT 0.19 `LoraConfig`, r=8, lora_alpha=8, dropout 0)."""

    r: int = 8
    alpha: int = 8
    dropout: float = 0.0
    target_modules: tuple[str, ...] | str = ()
    """The names PEFT matches (equal, or a `.`-suffix of a module path), or one regular expression (a string) that
    must match a whole path. Beside ``target_linear`` a written string is one name: Axolotl 0.18.0's
    ``_build_peft_lora_config`` (loaders/adapter.py) joins it, as a list entry, to every Linear's name."""
    target_linear: bool = False
    modules_to_save: tuple[str, ...] = ()
    target_parameters: tuple[str, ...] = ()  # lora_target_parameters: PEFT target_parameters (3-D expert weights)
    layers_to_transform: tuple[int, ...] = ()
    """``peft_layers_to_transform``: PEFT adapts a targeted module only when its path's layer index is one of these
    (none: every layer)."""
    layers_pattern: tuple[str, ...] = ()
    """``peft_layers_pattern``: the names after which PEFT reads that index (none: the last ``.<name>.<digits>.``)."""
    rank_pattern: tuple[tuple[str, int], ...] = ()
    """``lora_rank_pattern`` as written, (key, rank) in order: PEFT gives an adapted module the rank of the first key
    that matches the end of its path (``pattern_key_expression``), else ``r``."""
    alpha_pattern: tuple[tuple[str, int], ...] = ()
    """``lora_alpha_pattern`` as written, (key, alpha), read as ``rank_pattern`` is."""
    dora: bool = False
    """``peft_use_dora``: PEFT's DoRA, a magnitude vector beside each adapter."""
    fan_in_fan_out: bool = False
    """``lora_fan_in_fan_out``: the base weights are stored (in, out), as transformers' ``Conv1D`` stores them."""
    trainable_tokens: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """``peft_trainable_token_indices``: (module name, token indices) per layer PEFT's trainable tokens wrap; a list
    as written is the input embedding's, named "" (PEFT finds that layer, and a tied output projection with it)."""

    @property
    def regex_error(self) -> str | None:
        """Why ``re`` cannot compile a string ``target_modules`` that PEFT reads as a regular expression; None for
        names (a list, or a string beside ``target_linear``) and for an expression that compiles. PEFT 0.19.1
        ``check_target_module_exists`` (tuners/tuners_utils.py) ``re.fullmatch``es the expression against every
        module path and so raises ``re.error`` while it wraps the model."""
        if not isinstance(self.target_modules, str):
            return None
        try:
            re.compile(self.target_modules)
        except re.error as exc:
            return str(exc)
        return None

    @property
    def layers_pattern_error(self) -> tuple[int, str] | None:
        """(position, why ``re`` cannot compile it) of the first ``layers_pattern`` name that makes no regular
        expression where PEFT puts it: PEFT 0.19.1 ``check_target_module_exists`` reads the layer index of each
        targeted module with ``re.match(rf".*\\.{name}\\.(\\d+)\\.", path)``, trying the names in order until one
        matches, and so raises ``re.error`` on the first such name it reaches. None when every name compiles."""
        for position, name in enumerate(self.layers_pattern):
            try:
                re.compile(layer_index_expression(name))
            except re.error as exc:
                return position, str(exc)
        return None

    def regex_refusals(self) -> list[tuple[str, int, str, str]]:
        """(setting, position, entry, why ``re`` cannot compile it) of each `lora_modules_to_save` entry and each
        `lora_rank_pattern` / `lora_alpha_pattern` key that makes no regular expression where PEFT 0.19.1 puts it,
        in the order PEFT compiles them: ``check_target_module_exists`` (tuners/tuners_utils.py) matches every module
        path against each entry's ``saved_expression`` before it looks at the targets, then ``_create_and_replace``
        (tuners/lora/model.py) matches each adapted module's path against the rank keys, then the alpha keys
        (``get_pattern_key``, utils/other.py, ``pattern_key_expression``)."""
        found = []
        for setting, entries, expression in (
                ("lora_modules_to_save", self.modules_to_save, saved_expression),
                ("lora_rank_pattern", tuple(k for k, _ in self.rank_pattern), pattern_key_expression),
                ("lora_alpha_pattern", tuple(k for k, _ in self.alpha_pattern), pattern_key_expression)):
            for position, entry in enumerate(entries):
                try:
                    re.compile(expression(entry))
                except re.error as exc:
                    found.append((setting, position, entry, str(exc)))
        return found


def saved_expression(name: str) -> str:
    """The expression PEFT 0.19.1 (tuners/tuners_utils.py ``check_target_module_exists``) matches each module path
    against for a `lora_modules_to_save` entry, to leave that module and those inside it out of the LoRA."""
    return rf"(^|.*\.){name}($|\..*)"


def pattern_key_expression(key: str) -> str:
    """The expression PEFT 0.19.1 (utils/other.py ``get_pattern_key``) matches an adapted module's path against for a
    `rank_pattern` / `alpha_pattern` key: the key as the end of the path, after a dot or from its start."""
    return rf"(.*\.)?({key})$"


def _patterns(value: Any) -> tuple[tuple[str, int], ...]:
    """A `lora_rank_pattern` / `lora_alpha_pattern` mapping as (key, value) pairs in written order, as Axolotl's schema
    (``dict[str, PositiveInt]``) reads them; a pair it refuses (AX011) never reaches PEFT and is left out."""
    if not isinstance(value, Mapping):
        return ()
    pairs = ((k, lax_int(v)) for k, v in value.items() if isinstance(k, str))
    return tuple((k, v) for k, v in pairs if v is not None and v > 0)


def layer_index_expression(name: str) -> str:
    """The expression PEFT 0.19.1 (tuners/tuners_utils.py ``check_target_module_exists``) reads a module's layer
    index with for a ``layers_pattern`` name: the digits between ``.<name>.`` and the next dot."""
    return rf".*\.{name}\.(\d+)\."


@dataclass(frozen=True)
class ImageFeed:
    """What a run that feeds images says about them: Axolotl hands batches to its multimodal collator only when
    ``processor_type`` is set (0.18.0 ``core/builders/causal.py``); ``image_size`` resizes every image before the
    processor (an int: padded to that square, keeping the aspect; [width, height]: resized to it;
    ``processing_strategies.py``)."""

    processor_type: str
    image_size: int | tuple[int, int] | None


@dataclass(frozen=True)
class ModelLoad:
    """How Axolotl brings the model to the GPUs before FSDP or ZeRO-3 shards it: ``cpu_ram_efficient_loading``
    (fsdp_config, either key style), ``sharded_quant_loading`` (``qlora_sharded_model_loading``: Answer.AI's
    shard-by-shard 4-bit load) and ``move_to_device`` (``experimental_skip_move_to_device: false`` written: the
    legacy move of the whole model to every GPU; Axolotl defaults the key to true since 0.13.0).
    ``quantized_off_gpu``: each quantized weight leaves the GPU as it is loaded, as transformers 4 did under FSDP's
    cpu_ram_efficient_loading or ZeRO-3; no config sets it on today's stack (a measurement taken on that one does)."""

    cpu_ram_efficient_loading: bool = False
    sharded_quant_loading: bool = False
    move_to_device: bool = False
    quantized_off_gpu: bool = False


EMBEDDING_LAYERS = {"gpt_neox": ("embed_in", "embed_out"), "falcon": ("word_embeddings", "lm_head"),
                    "nemotron_h": ("embeddings", "lm_head")}
"""The input and output embedding modules Axolotl names by model type: the ones it requires in
`lora_modules_to_save` when new tokens are added, and casts with the norms (`keeps_fp32_embeddings`); every other
type uses `embed_tokens` and `lm_head` (Axolotl 0.18.0 `loaders/utils.py`, `get_linear_embedding_layers`)."""
DEFAULT_EMBEDDING_LAYERS = ("embed_tokens", "lm_head")


def embedding_layers(model_type: str | None) -> tuple[str, ...]:
    """Axolotl's embedding module names for ``model_type`` (``EMBEDDING_LAYERS``)."""
    return EMBEDDING_LAYERS.get(model_type or "", DEFAULT_EMBEDDING_LAYERS)


def written_fsdp_version(raw: Mapping[str, Any]) -> int | None:
    """The FSDP version as Axolotl's validated config holds it: the top-level `fsdp_version`, else the one written
    in `fsdp_config` (`fsdp_version` or `version`); None when none is written."""
    block = raw.get("fsdp_config") if isinstance(raw.get("fsdp_config"), Mapping) else {}
    return lax_int(raw.get("fsdp_version") or block.get("fsdp_version") or block.get("version"))


def keeps_fp32_embeddings(adapter: str | None, half: bool, sharding: ShardingKind, attn_implementation: str | None,
                          cce: bool) -> bool:
    """Whether Axolotl trains with the input and output embeddings in fp32 while the rest of the model is in half
    precision (``half``). Its loader casts them (``embed_tokens``/``lm_head`` and the model type's own names) and the
    norms to fp32 unless FSDP runs, and back to the load dtype for an adapter, for an attention implementation other
    than eager or sdpa, or for Cut Cross-Entropy (``cce``); DeepSpeed's engine casts every parameter to its bf16/fp16
    anyway. So they stay fp32 in a full fine-tune on one GPU or under DDP with eager or sdpa attention (the default
    when none is set) and without CCE (Axolotl 0.18.0 ``loaders/model.py`` ``_configure_embedding_dtypes``,
    ``utils/schemas/config.py`` ``attn_needs_dtype_cast``; DeepSpeed 0.19.8 ``runtime/engine.py``
    ``_configure_distributed_model``)."""
    return (adapter is None and half and sharding in (ShardingKind.SINGLE, ShardingKind.DDP)
            and (attn_implementation or "sdpa") in ("eager", "sdpa") and not cce)


def kbit_prepared(adapter: str | None, quantization: str | None, sharding: ShardingKind,
                  quantize_experts: bool) -> bool:
    """Whether Axolotl runs PEFT's ``prepare_model_for_kbit_training`` after a 4/8-bit load and the weights it leaves
    unquantized train in fp32. Axolotl runs it for a LoRA / QLoRA on a 4/8-bit load, except for QLoRA under FSDP,
    FSDP with cpu_ram_efficient_loading, ZeRO-3, and experts quantized on load (``quantize_moe_experts``) (Axolotl
    0.18.0 ``loaders/model.py`` ``_prepare_model_for_quantization``). It casts every fp16/bf16 parameter that is not
    a 4-bit one to fp32 (PEFT 0.21.2 ``utils/other.py``; checked on transformers 5.24's 3-D experts, and on Falcon's
    layers by tests/test_oracle_quantized_load.py), and Axolotl casts only the norms and embeddings back
    (``_convert_embedding_modules_dtype``). So the routed experts, which transformers 5's 4/8-bit load leaves in the
    load dtype, and the Linears it does not convert (``Architecture.unconverted_linear_params``) are fp32 on one GPU
    or under DDP; DeepSpeed ZeRO-1/2's engine casts them back to bf16 when it starts (the fp32 moment of the load
    before it is not modelled), and FSDP is taken not to run the preparation (a LoRA on an 8-bit load under FSDP
    without cpu_ram_efficient_loading does)."""
    return (adapter in ("lora", "qlora") and quantization in ("nf4", "int8") and not quantize_experts
            and sharding in (ShardingKind.SINGLE, ShardingKind.DDP))


@dataclass(frozen=True)
class RunFacts:
    """Every resolved fact of one run. `ds` is the DeepSpeed dict as the HF Trainer hands it to DeepSpeed."""

    micro_batch_size: Fact[int]
    gradient_accumulation_steps: Fact[int]
    eval_batch_size: Fact[int]
    sequence_len: Fact[int]
    eval_sequence_len: Fact[int]
    sample_packing: Fact[bool]
    eval_sample_packing: bool        # Axolotl's default: follows sample_packing
    pad_to_sequence_len: Fact[bool]
    bf16: Fact[bool]                 # what TrainingArguments gets (after resolve_dtype)
    fp16: Fact[bool]                 # `fp16 and not bf16`, as Axolotl's trainer builder passes it
    dtype: Fact[Dtype]               # the dtype the model is loaded in
    attn_implementation: Fact[str | None]  # None: nothing chosen, transformers picks sdpa
    loss: Fact[LossKernel]
    chunked_ce_chunks: int
    adapter: Fact[str | None]
    quantization: Fact[str | None]   # "nf4" | "int8" | None
    double_quant: bool
    quantize_experts: bool           # Axolotl's quantize_moe_experts: routed experts stored quantized too
    linearized_experts: bool         # Axolotl's llama4_linearized_experts: per-expert nn.Linear modules instead
    lora: Lora
    unfrozen_parameters: tuple[str, ...]
    optimizer: Fact[str]
    learning_rate: Fact[float | None]
    adam_betas: tuple[float, float]
    adam_epsilon: float
    weight_decay: float
    max_grad_norm: float
    gradient_checkpointing: Fact[bool]
    gradient_checkpointing_kwargs: Mapping[str, Any]
    offload_checkpoints: bool
    plugins: tuple[str, ...]
    liger_rms_norm: bool
    liger_glu: bool
    liger_rope: bool
    liger_layer_norm: bool
    evaluates: bool
    rl: str | None
    zero_stage: Fact[int | None]     # None: written but unreadable ("auto", a word)
    ds: Mapping[str, Any] | None
    sharding: Sharding = field(default_factory=Sharding)
    head: str = "lm"                 # output head: "lm" (vocab logits) | "sequence" (reward_model) | "token" (PRM)
    num_labels: int = 0              # the score head's outputs (head != "lm")
    mlp_tiles: int | None = None     # tiled_mlp: its tiled_mlp_num_shards (None: Axolotl's default per sequence)
    tiled_mlp: bool = False
    remote_code: bool = False        # trust_remote_code: a model with an auto_map runs its repository's own code
    expert_kernels: tuple[str, ...] = ()  # KernelsPlugin expert paths turned on: "scattermoe", "sonicmoe"
    lora_kernels: tuple[str, ...] = ()  # Axolotl's fused LoRA kernels that run: "mlp", "qkv", "o", "embedding"
    sdpa_varlen: bool | None = None  # Axolotl's sdpa_varlen as written (None: on for sdpa with sample_packing)
    nonexpert_quantization: str | None = None  # KernelsPlugin's nonexpert_quantization policy, as written
    dsv4_nonexpert_mode: str | None = None  # the KernelsPlugin DSV4 adapter's FP8 non-expert storage; None: not run
    dequantize: bool = False         # model_quantization_config_kwargs.dequantize: a quantized checkpoint loads in bf16
    images: ImageFeed | None = None  # processor_type set: Axolotl's multimodal collator feeds images (None: text)
    freeze_mm_modules: bool = False  # Axolotl freezes the towers' and projectors' parameters (``memory.idle``)
    model_load: ModelLoad = field(default_factory=ModelLoad)

    @property
    def attention(self) -> str:
        """The backend that runs: the chosen implementation, else transformers' default sdpa."""
        return self.attn_implementation.value or "sdpa"

    @property
    def attention_kind(self) -> Literal["eager", "sdpa", "flash"]:
        """What the attention costs in memory: eager (s² scores), sdpa, or a kernel with no s² tensors (flash,
        flex, xformers, sage, hub kernels)."""
        impl = ATTENTION_ALIASES.get(self.attention, self.attention)
        return impl if impl in ("eager", "sdpa") else "flash"  # type: ignore[return-value]

    @property
    def liger(self) -> bool:
        return any(p.endswith("LigerPlugin") for p in self.plugins)

    @property
    def cce(self) -> bool:
        return any(p.endswith("CutCrossEntropyPlugin") for p in self.plugins)

    @property
    def embeddings_fp32(self) -> bool:
        """Axolotl trains this run with its embeddings in fp32 (``keeps_fp32_embeddings``)."""
        return keeps_fp32_embeddings(self.adapter.value, self.dtype.value != "float32", self.sharding.kind,
                                     self.attn_implementation.value, self.loss.value is LossKernel.CCE)

    @property
    def experts_fp32(self) -> bool:
        """What a 4/8-bit load leaves in half precision (the routed experts, the Linears it does not convert) trains
        in fp32 after PEFT's kbit preparation (``kbit_prepared``)."""
        return kbit_prepared(self.adapter.value, self.quantization.value, self.sharding.kind, self.quantize_experts)

    @property
    def batch_size(self) -> int:
        """Samples per optimizer step on one GPU: micro_batch_size × gradient_accumulation_steps."""
        return self.micro_batch_size.value * self.gradient_accumulation_steps.value


# ------------------------------------------------------------------------------------------------ readers


def _present(raw: Mapping[str, Any], key: str) -> bool:
    return raw.get(key) is not None


def _int_fact(raw: Mapping[str, Any], key: str, default: int, *, minimum: int = 1) -> Fact[int]:
    value = lax_int(raw.get(key))
    if value is not None and value >= minimum:
        return Fact(value, (key,), Origin.WRITTEN)
    return Fact(default, (key,) if _present(raw, key) else None, Origin.DEFAULT)


def _bool_fact(raw: Mapping[str, Any], key: str, default: bool = False) -> Fact[bool]:
    value = lax_bool(raw.get(key))
    if value is None:
        return Fact(default, (key,) if _present(raw, key) else None, Origin.DEFAULT)
    return Fact(value, (key,), Origin.WRITTEN)


def _number(raw: Mapping[str, Any], key: str, default: float) -> float:
    """A float field as pydantic reads it; the TrainingArguments default when unset or unreadable (0 stays 0)."""
    value = lax_float(raw.get(key))
    return default if value is None else value


def _checkpointing_kwargs(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gradient_checkpointing_kwargs`` the HF Trainer gets: as written; unset, ``{use_reentrant: true}``, which
    Axolotl 0.18.0 writes when ``unfrozen_parameters`` and ``rl`` are unset too (``utils/config/__init__.py``,
    ``normalize_config``), else ``{use_reentrant: false}`` (``core/builders/base.py``). Gemma 4's forced false needs
    the model type, which the run's facts do not hold (``checks.ddp.reentrant_checkpointing``)."""
    written = raw.get("gradient_checkpointing_kwargs")
    if isinstance(written, Mapping):
        return dict(written)
    return {"use_reentrant": not raw.get("unfrozen_parameters") and not raw.get("rl")}


def _flag(raw: Mapping[str, Any], key: str) -> bool:
    """A pydantic bool field as the loaders then test it (`if cfg.key:`)."""
    return bool(lax_bool(raw.get(key)))


def token_indices(value: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``peft_trainable_token_indices`` as Axolotl's schema (``list[int] | dict[str, list[int]]``) reads it: a list
    is the input embedding's (named ""), a mapping names each layer; ints as ``_layer_indexes`` reads them."""
    if isinstance(value, list):
        indices = _layer_indexes(value)
        return (("", indices),) if indices else ()
    if isinstance(value, Mapping):
        return tuple((k, _layer_indexes(v)) for k, v in value.items() if isinstance(k, str) and _layer_indexes(v))
    return ()


def token_counts(tokens: tuple[tuple[str, tuple[int, ...]], ...]) -> tuple[tuple[str, int], ...]:
    """``token_indices`` as (layer name, how many tokens it trains)."""
    return tuple((name, len(indices)) for name, indices in tokens)


def _layer_indexes(value: Any) -> tuple[int, ...]:
    """``peft_layers_to_transform`` as pydantic's ``list[int]`` reads it in lax mode: ints, bools (``true`` is 1)
    and whole floats; a fractional float is refused there (AX011) and left out here."""
    if not isinstance(value, list):
        return ()
    return tuple(int(v) for v in value if isinstance(v, int) or (isinstance(v, float) and v.is_integer()))


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return ()


def _attention(raw: Mapping[str, Any]) -> Fact[str | None]:
    """`attn_implementation`, else the first truthy legacy flag, else the FA2 default of `gemma4_hybrid_attn_impl`."""
    impl = raw.get("attn_implementation")
    if isinstance(impl, str) and impl.strip():
        return Fact(impl, ("attn_implementation",), Origin.WRITTEN)
    for flag, name in LEGACY_ATTENTION:
        if truthy(raw.get(flag)):
            return Fact(name, (flag,), Origin.DERIVED)
    if truthy(raw.get("gemma4_hybrid_attn_impl")):
        return Fact("flash_attention_2", ("gemma4_hybrid_attn_impl",), Origin.DERIVED)
    return Fact(None)


def _precision(raw: Mapping[str, Any], bf16_capable: bool) -> tuple[Fact[bool], Fact[bool], Fact[Dtype]]:
    """Axolotl's `resolve_dtype` (utils/config/__init__.py) on a GPU whose bf16 support is `bf16_capable`."""
    written_bf16 = raw.get("bf16", "auto")
    bf16: bool | str | None = "auto" if written_bf16 == "auto" else lax_bool(written_bf16)
    fp16 = lax_bool(raw.get("fp16"))
    bf16_key: KeyPath | None = ("bf16",) if "bf16" in raw else None
    if not fp16 and bf16 == "auto":
        bf16 = bf16_capable
        if not bf16_capable and fp16 is None and not _flag(raw, "float16"):
            fp16 = True
    if fp16 and bf16 == "auto":
        bf16 = False
    bf16_on = bool(bf16)
    fp16_on = bool(fp16) and not bf16_on
    if bf16_on or _flag(raw, "bfloat16"):
        dtype: Dtype = "bfloat16"
        dtype_key = bf16_key if bf16_on else ("bfloat16",)
    elif _flag(raw, "load_in_8bit") or fp16_on or _flag(raw, "float16"):
        dtype = "float16"
        dtype_key = ("fp16",) if fp16_on and "fp16" in raw else ("load_in_8bit",) if _flag(raw, "load_in_8bit") \
            else ("float16",) if _flag(raw, "float16") else None
    else:
        dtype, dtype_key = "float32", bf16_key
    origin = Origin.WRITTEN if "bf16" in raw else Origin.DEFAULT
    return (Fact(bf16_on, bf16_key, origin), Fact(fp16_on, ("fp16",) if "fp16" in raw else None, origin),
            Fact(dtype, dtype_key, Origin.DERIVED if dtype_key else Origin.DEFAULT))


def _activation_offloading(raw: Mapping[str, Any]) -> bool:
    """`activation_offloading`: a mode name ("legacy", "disk", "hidden_states") or a bool, pydantic-coerced."""
    value = raw.get("activation_offloading")
    return value in ("legacy", "disk", "hidden_states") or bool(lax_bool(value))


def _trained_dtype(dtype: Fact[Dtype], ds: Mapping[str, Any] | None) -> Fact[Dtype]:
    """Under DeepSpeed a half-precision block written `enabled: true` casts an fp32 model (the engine calls
    `module.bfloat16()` / `.half()`, deepspeed/runtime/engine.py `_configure_distributed_model`)."""
    if dtype.value != "float32" or not ds:
        return dtype
    for block, name in (("bf16", "bfloat16"), ("bfloat16", "bfloat16"), ("fp16", "float16")):
        conf = ds.get(block)
        if isinstance(conf, Mapping) and lax_bool(conf.get("enabled")):
            return Fact(name, (block, "enabled"), Origin.WRITTEN, Where.DEEPSPEED)  # type: ignore[arg-type]
    return dtype


def loss_kernel(raw: Mapping[str, Any]) -> LossKernel:
    """The cross-entropy that runs for the config ``raw`` as written (``_loss``)."""
    return _loss(raw, _strings(raw.get("plugins"))).value


def _loss(raw: Mapping[str, Any], plugins: tuple[str, ...]) -> Fact[LossKernel]:
    """The cross-entropy that runs. The CCE plugin's `cut_cross_entropy` defaults to true, so listing the plugin
    turns it on; Liger's kernels need the Liger plugin; then Axolotl's own chunked cross-entropy."""
    cce = any(p.endswith("CutCrossEntropyPlugin") for p in plugins)
    if cce and lax_bool(raw.get("cut_cross_entropy")) is not False:
        return Fact(LossKernel.CCE, ("plugins",), Origin.DERIVED)
    if any(p.endswith("LigerPlugin") for p in plugins):
        if _flag(raw, "liger_fused_linear_cross_entropy"):
            return Fact(LossKernel.LIGER_FLCE, ("liger_fused_linear_cross_entropy",), Origin.WRITTEN)
        if _flag(raw, "liger_cross_entropy"):
            return Fact(LossKernel.LIGER_CE, ("liger_cross_entropy",), Origin.WRITTEN)
    if _flag(raw, "chunked_cross_entropy"):
        return Fact(LossKernel.CHUNKED, ("chunked_cross_entropy",), Origin.WRITTEN)
    return Fact(LossKernel.HF)


def _quantization(raw: Mapping[str, Any], adapter: str | None) -> Fact[str | None]:
    if adapter == "qlora" and _flag(raw, "load_in_4bit"):
        return Fact("nf4", ("load_in_4bit",), Origin.DERIVED)
    if adapter == "lora" and _flag(raw, "load_in_8bit"):
        return Fact("int8", ("load_in_8bit",), Origin.DERIVED)
    return Fact(None)


def _quantizes_experts(raw: Mapping[str, Any], adapter: str | None) -> bool:
    """A 4/8-bit load stores the routed experts quantized too: transformers 5 keeps them as 3-D parameters, which
    bitsandbytes does not replace, unless Axolotl quantizes them on load (``quantize_moe_experts``) or swaps them for
    per-expert ``nn.Linear`` modules (``llama4_linearized_experts``)."""
    return _quantization(raw, adapter).value is not None and (
        _flag(raw, "quantize_moe_experts") or _flag(raw, "llama4_linearized_experts"))


def _evaluates(raw: Mapping[str, Any]) -> bool:
    """The run evaluates: a validation split (`val_set_size` > 0) or `test_datasets`, and eval not turned off."""
    if str(raw.get("eval_strategy") or "").lower() == "no":
        return False
    split = lax_float(raw.get("val_set_size"))
    return (split is not None and not isinstance(raw.get("val_set_size"), bool) and split > 0) \
        or bool(raw.get("test_datasets"))


def parse_zero_stage(value: Any) -> int | None:
    """The ZeRO stage DeepSpeed's pydantic model reads from `zero_optimization.stage` ("3" and 3.0 are 3);
    None when it would refuse it ("auto", a word, a number that is not a stage)."""
    stage = lax_int(value)
    return stage if stage in (0, 1, 2, 3) and not isinstance(value, bool) else None


def _zero_stage(ds_raw: Mapping[str, Any] | None) -> Fact[int | None]:
    if not ds_raw:
        return Fact(0)
    zero = ds_raw.get("zero_optimization")
    if isinstance(zero, bool):  # the legacy `"zero_optimization": true` means stage 1
        return Fact(int(zero), ("zero_optimization",), Origin.WRITTEN, Where.DEEPSPEED)
    if not isinstance(zero, Mapping) or "stage" not in zero:
        return Fact(0, None, Origin.DEFAULT, Where.DEEPSPEED)
    return Fact(parse_zero_stage(zero["stage"]), ("zero_optimization", "stage"), Origin.WRITTEN, Where.DEEPSPEED)


def _ds_number(zero: Mapping[str, Any], name: str, default: float) -> float:
    """A ZeRO key under its `stage3_` name or its short alias; "auto" left unfilled -> DeepSpeed's default."""
    for key in (f"stage3_{name}", name):
        value = zero.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # "auto" and strings: not filled
            return float(value)
    return default


def _sharding(raw: Mapping[str, Any], ds: Mapping[str, Any] | None, stage: int | None, world: int) -> Sharding:
    """DeepSpeed's `zero_optimization` wins; then `fsdp_config` / the legacy `fsdp` list; then DDP or one GPU. The
    parallel axes (``build_mesh``) ride along; a layout Axolotl refuses leaves the default mesh and says why in
    ``mesh_problem``."""
    sharding = _states_sharding(raw, ds, stage, world)
    mesh = build_mesh(raw, world, sharding.kind is ShardingKind.FSDP)
    return replace(sharding, mesh=mesh) if isinstance(mesh, Mesh) else replace(sharding, mesh_problem=mesh)


def _states_sharding(raw: Mapping[str, Any], ds: Mapping[str, Any] | None, stage: int | None,
                     world: int) -> Sharding:
    if ds:
        zero = ds.get("zero_optimization")
        zero = zero if isinstance(zero, Mapping) else {}
        stage = stage or 0

        def offloaded(block: str) -> bool:
            conf = zero.get(block)
            return isinstance(conf, Mapping) and str(conf.get("device", "none")).lower() in ("cpu", "nvme")

        return Sharding(ShardingKind.DEEPSPEED, stage, world, offloaded("offload_optimizer"),
                        stage == 3 and offloaded("offload_param"), "optimizer" in ds,
                        _ds_number(zero, "reduce_bucket_size", DS_REDUCE_BUCKET),
                        _ds_number(zero, "prefetch_bucket_size", DS_PREFETCH_BUCKET),
                        _ds_number(zero, "max_live_parameters", DS_MAX_LIVE_PARAMETERS),
                        _ds_number(zero, "param_persistence_threshold", DS_PERSISTENCE_THRESHOLD),
                        _ds_number(zero, "sub_group_size", DS_SUB_GROUP_SIZE),
                        bool(lax_bool(zero.get("overlap_comm", stage == 3))))
    fsdp_cfg = raw.get("fsdp_config")
    fsdp_cfg = fsdp_cfg if isinstance(fsdp_cfg, Mapping) else {}
    fsdp_list = _strings(raw.get("fsdp"))
    if fsdp_cfg or fsdp_list:
        strategy = str(fsdp_cfg.get("sharding_strategy") or fsdp_cfg.get("fsdp_sharding_strategy")
                       or " ".join(fsdp_list) or "full_shard").lower()
        reshard = fsdp_cfg.get("reshard_after_forward", fsdp_cfg.get("fsdp_reshard_after_forward"))
        fsdp_stage = 0 if "no_shard" in strategy else 2 if ("shard_grad_op" in strategy or reshard is False) else 3
        offload = bool(lax_bool(fsdp_cfg.get("offload_params", fsdp_cfg.get("fsdp_offload_params")))) \
            or "offload" in strategy
        version = written_fsdp_version(raw) or 1
        return Sharding(ShardingKind.FSDP, fsdp_stage, world, offload, offload, fsdp_version=version)
    return Sharding(ShardingKind.DDP if world > 1 else ShardingKind.SINGLE, 0, world)


# ---------------------------------------------------------------------------------------------------- "auto"


def resolve_auto(ds_raw: Mapping[str, Any], facts: "_TrainerArgs", world_size: int,
                 hidden_size: int | None) -> dict[str, Any]:
    """Fill HF "auto" values and normalise ZeRO-3 aliases to their `stage3_` names.

    From transformers `HfTrainerDeepSpeedConfig` (integrations/deepspeed.py): train_micro_batch_size_per_gpu =
    micro_batch_size; gradient_accumulation_steps; train_batch_size = world_size × mbs × gas; gradient_clipping =
    max_grad_norm; bf16/fp16.enabled from the training arguments; reduce_bucket_size = h²;
    stage3_prefetch_bucket_size = int(0.9 h²); stage3_param_persistence_threshold = 10 h; optimizer lr / betas /
    eps / weight_decay and WarmupLR's warmup_max_lr from the training arguments. Values that stay "auto" (an
    unknown hidden size) are left as the string "auto".
    """
    ds = copy.deepcopy(dict(ds_raw))
    fills: dict[KeyPath, Any] = {
        ("train_micro_batch_size_per_gpu",): facts.micro_batch_size,
        ("gradient_accumulation_steps",): facts.gradient_accumulation_steps,
        ("train_batch_size",): world_size * facts.micro_batch_size * facts.gradient_accumulation_steps,
        ("gradient_clipping",): facts.max_grad_norm,
        ("bf16", "enabled"): facts.bf16,
        ("fp16", "enabled"): facts.fp16,
        ("optimizer", "params", "lr"): facts.learning_rate,
        ("optimizer", "params", "betas"): list(facts.adam_betas),
        ("optimizer", "params", "eps"): facts.adam_epsilon,
        ("optimizer", "params", "weight_decay"): facts.weight_decay,
        ("scheduler", "params", "warmup_min_lr"): 0,
        ("scheduler", "params", "warmup_max_lr"): facts.learning_rate,
        ("zero_optimization", "stage3_gather_16bit_weights_on_model_save"): False,
    }
    if hidden_size:
        fills[("zero_optimization", "reduce_bucket_size")] = hidden_size * hidden_size
        fills[("zero_optimization", "stage3_prefetch_bucket_size")] = int(0.9 * hidden_size * hidden_size)
        fills[("zero_optimization", "stage3_param_persistence_threshold")] = 10 * hidden_size
    zero = ds.get("zero_optimization")
    if isinstance(zero, dict):
        for short, long in ZERO_ALIASES.items():
            if short in zero and long not in zero:
                zero[long] = zero.pop(short)
    for path, value in fills.items():
        parent: Any = ds
        for part in path[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and parent.get(path[-1]) == "auto" and value is not None:
            parent[path[-1]] = value
    return ds


@dataclass(frozen=True)
class _TrainerArgs:
    """The training arguments the HF Trainer fills DeepSpeed's "auto" values from."""

    micro_batch_size: int
    gradient_accumulation_steps: int
    bf16: bool
    fp16: bool
    max_grad_norm: float
    learning_rate: float | None
    adam_betas: tuple[float, float]
    adam_epsilon: float
    weight_decay: float


def precision_flags(raw: Any, *, bf16_capable: bool) -> tuple[bool, bool]:
    """The (bf16, fp16) pair the HF Trainer gets from an Axolotl config on a GPU whose bf16 support is
    `bf16_capable`: the `bf16` and `fp16` facts of `resolve_facts`, without resolving the rest."""
    bf16, fp16, _ = _precision(raw if isinstance(raw, Mapping) else {}, bf16_capable)
    return bf16.value, fp16.value


# ---------------------------------------------------------------------------------------------------- resolve


def resolve_facts(raw: Mapping[str, Any], ds_raw: Mapping[str, Any] | None = None, *, world_size: int = 1,
                  bf16_capable: bool = True, hidden_size: int | None = None) -> RunFacts:
    """Resolve an Axolotl config (as written; defaults already applied is fine too) and its DeepSpeed dict (as
    written, "auto" unfilled) on `world_size` GPUs whose bf16 support is `bf16_capable`."""
    raw = raw if isinstance(raw, Mapping) else {}
    mbs = _int_fact(raw, "micro_batch_size", 1)
    gas = _int_fact(raw, "gradient_accumulation_steps", 1)
    batch = lax_int(raw.get("batch_size"))
    if gas.origin is Origin.DEFAULT and batch is not None and batch > 0:
        gas = Fact(max(1, batch // mbs.value), ("batch_size",), Origin.DERIVED)
    eval_bs = _int_fact(raw, "eval_batch_size", mbs.value)
    seq = _int_fact(raw, "sequence_len", 512)
    eval_seq = _int_fact(raw, "eval_sequence_len", seq.value)
    bf16, fp16, dtype = _precision(raw, bf16_capable)
    packing = _bool_fact(raw, "sample_packing")
    plugins = _strings(raw.get("plugins"))
    expert_kernels = _expert_kernels(raw, plugins)
    liger = any(p.endswith("LigerPlugin") for p in plugins)
    adapter_value = raw.get("adapter")
    adapter: Fact[str | None] = Fact(str(adapter_value), ("adapter",), Origin.WRITTEN) \
        if isinstance(adapter_value, str) and adapter_value else Fact(None)
    bnb = raw.get("bnb_config_kwargs")
    bnb = bnb if isinstance(bnb, Mapping) else {}
    targets = raw.get("lora_target_modules")
    optimizer = raw.get("optimizer")
    lr = lax_float(raw.get("learning_rate"))
    gc_value = raw.get("gradient_checkpointing")
    fsdp_cfg = raw.get("fsdp_config") if isinstance(raw.get("fsdp_config"), Mapping) else {}
    if gc_value in ("offload", "offload_disk") or lax_bool(gc_value):
        gc = Fact(True, ("gradient_checkpointing",), Origin.WRITTEN)
    elif lax_bool(fsdp_cfg.get("activation_checkpointing")) or lax_bool(fsdp_cfg.get("fsdp_activation_checkpointing")):
        key = "activation_checkpointing" if "activation_checkpointing" in fsdp_cfg else "fsdp_activation_checkpointing"
        gc = Fact(True, ("fsdp_config", key), Origin.DERIVED)
    else:
        gc = Fact(False, ("gradient_checkpointing",) if "gradient_checkpointing" in raw else None)
    betas = (_number(raw, "adam_beta1", 0.9), _number(raw, "adam_beta2", 0.999))
    args = _TrainerArgs(mbs.value, gas.value, bf16.value, fp16.value, _number(raw, "max_grad_norm", 1.0), lr, betas,
                        _number(raw, "adam_epsilon", 1e-8), _number(raw, "weight_decay", 0.0))
    ds = resolve_auto(ds_raw, args, world_size, hidden_size) if isinstance(ds_raw, Mapping) else None
    stage = _zero_stage(ds_raw if isinstance(ds_raw, Mapping) else None)
    rl = raw.get("rl")
    head, num_labels = _head(raw)
    pad = _bool_fact(raw, "pad_to_sequence_len")
    if head == "sequence" and raw.get("pad_to_sequence_len") is None:
        pad = Fact(True, ("reward_model",), Origin.DERIVED)
    return RunFacts(
        micro_batch_size=mbs,
        gradient_accumulation_steps=gas,
        eval_batch_size=eval_bs,
        sequence_len=seq,
        eval_sequence_len=eval_seq,
        sample_packing=packing,
        eval_sample_packing=packing.value if lax_bool(raw.get("eval_sample_packing")) is None
        else bool(lax_bool(raw.get("eval_sample_packing"))),
        pad_to_sequence_len=pad,
        bf16=bf16,
        fp16=fp16,
        dtype=_trained_dtype(dtype, ds),
        attn_implementation=_attention(raw),
        loss=_loss(raw, plugins),
        chunked_ce_chunks=lax_int(raw.get("chunked_cross_entropy_num_chunks")) or CHUNKED_CE_CHUNKS,
        adapter=adapter,
        quantization=_quantization(raw, adapter.value),
        double_quant=lax_bool(bnb.get("bnb_4bit_use_double_quant", True)) is not False,
        quantize_experts=_quantizes_experts(raw, adapter.value),
        linearized_experts=_flag(raw, "llama4_linearized_experts"),
        lora=Lora(r=lax_int(raw.get("lora_r")) or 8, alpha=lax_int(raw.get("lora_alpha")) or 8,
                  dropout=lax_float(raw.get("lora_dropout")) or 0.0,
                  target_modules=targets if isinstance(targets, str) and not _flag(raw, "lora_target_linear")
                  else _strings(targets),  # beside lora_target_linear Axolotl hands PEFT a string as one name
                  target_linear=_flag(raw, "lora_target_linear"),
                  modules_to_save=_strings(raw.get("lora_modules_to_save")),
                  target_parameters=_strings(raw.get("lora_target_parameters")),
                  layers_to_transform=_layer_indexes(raw.get("peft_layers_to_transform")),
                  layers_pattern=_strings(raw.get("peft_layers_pattern")),
                  rank_pattern=_patterns(raw.get("lora_rank_pattern")),
                  alpha_pattern=_patterns(raw.get("lora_alpha_pattern")),
                  dora=lax_bool(raw.get("peft_use_dora")) is True,
                  fan_in_fan_out=lax_bool(raw.get("lora_fan_in_fan_out")) is True,
                  trainable_tokens=token_indices(raw.get("peft_trainable_token_indices"))),
        unfrozen_parameters=_strings(raw.get("unfrozen_parameters")),
        optimizer=Fact(optimizer, ("optimizer",), Origin.WRITTEN) if isinstance(optimizer, str) and optimizer
        else Fact("adamw_torch_fused"),
        learning_rate=Fact(lr, ("learning_rate",), Origin.WRITTEN) if lr is not None else Fact(None),
        adam_betas=betas,
        adam_epsilon=args.adam_epsilon,
        weight_decay=args.weight_decay,
        max_grad_norm=args.max_grad_norm,
        gradient_checkpointing=gc,
        gradient_checkpointing_kwargs=_checkpointing_kwargs(raw),
        offload_checkpoints=gc_value in ("offload", "offload_disk") or (gc.value and _activation_offloading(raw)),
        plugins=plugins,
        liger_rms_norm=liger and _flag(raw, "liger_rms_norm"),
        liger_glu=liger and (_flag(raw, "liger_glu_activation") or _flag(raw, "liger_swiglu")),
        liger_rope=liger and _flag(raw, "liger_rope"),
        liger_layer_norm=liger and _flag(raw, "liger_layer_norm"),
        evaluates=_evaluates(raw),
        rl=str(rl) if isinstance(rl, str) and rl else None,
        zero_stage=stage,
        ds=ds,
        sharding=_sharding(raw, ds, stage.value, world_size),
        head=head,
        num_labels=num_labels,
        tiled_mlp=_flag(raw, "tiled_mlp"),
        remote_code=_flag(raw, "trust_remote_code"),
        mlp_tiles=lax_int(raw.get("tiled_mlp_num_shards")) or None,
        expert_kernels=expert_kernels,
        lora_kernels=lora_kernels(raw, world_size, expert_kernels),
        sdpa_varlen=lax_bool(raw.get("sdpa_varlen")),
        nonexpert_quantization=str(raw["nonexpert_quantization"]) if raw.get("nonexpert_quantization") else None,
        dsv4_nonexpert_mode=_dsv4_nonexpert_mode(raw, plugins),
        dequantize=_dequantize(raw),
        images=image_feed(raw),
        freeze_mm_modules=_flag(raw, "freeze_mm_modules"),
        model_load=_model_load(raw, fsdp_cfg),
    )


def _model_load(raw: Mapping[str, Any], fsdp_cfg: Mapping[str, Any]) -> ModelLoad:
    """The loading keys of ``ModelLoad``, as Axolotl's loader tests them (``if cfg.key:``; the skip is taken as
    written when it is not None)."""
    ram = fsdp_cfg.get("cpu_ram_efficient_loading", fsdp_cfg.get("fsdp_cpu_ram_efficient_loading"))
    skip = lax_bool(raw.get("experimental_skip_move_to_device"))
    return ModelLoad(bool(lax_bool(ram)), _flag(raw, "qlora_sharded_model_loading"), skip is False)


def image_feed(raw: Mapping[str, Any]) -> ImageFeed | None:
    """The run's ``ImageFeed`` when ``processor_type`` is set; an ``image_size`` that is neither a positive int nor a
    pair of them reads as unset."""
    kind = raw.get("processor_type")
    if not isinstance(kind, str) or not kind:
        return None
    size = raw.get("image_size")
    if isinstance(size, (list, tuple)) and len(size) == 2 and all(is_int(v) and v > 0 for v in size):
        size = (int(size[0]), int(size[1]))
    elif not (is_int(size) and size > 0):
        size = None
    return ImageFeed(kind, size)


def _expert_kernels(raw: Mapping[str, Any], plugins: tuple[str, ...]) -> tuple[str, ...]:
    """The KernelsPlugin expert paths a run turns on: ``use_scattermoe`` / ``use_sonicmoe``, or ``expert_backend:
    scattermoe`` / ``sonicmoe``, which Axolotl writes onto those flags (Axolotl 0.18.0 integrations/kernels/args.py
    ``_canonicalize_expert_backend``); without the plugin the keys do nothing."""
    if not any(p.endswith("kernels.KernelsPlugin") for p in plugins):
        return ()
    backend = str(raw.get("expert_backend") or "").lower()
    return tuple(name for name in ("scattermoe", "sonicmoe") if _flag(raw, f"use_{name}") or backend == name)


LORA_KERNEL_FLAGS = ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel", "lora_embedding_kernel")
UNSUPPORTED_CAPABILITIES: Mapping[str, Mapping[str, str]] = {
    "paddleocr_vl": {
        "cut_cross_entropy": "CCE does not patch PaddleOCRVLForConditionalGeneration.",
        "liger": "",
        "lora_kernels": "The fused QKV/O source rewrite does not match PaddleOCRAttention's forward.",
    },
}
"""Axolotl's model support registry: model type -> the capabilities its descriptor declares ``Unsupported``, with
the reason it gives (Axolotl 0.18.0 ``model_support/``; held to the registry by
tests/test_oracle_model_support.py). Axolotl enforces them with ``model_support.base.check_capability``: the Cut
Cross Entropy and Liger plugins raise before the model loads (``capability_error``); the LoRA kernels are turned
off instead (``LORA_KERNELS_UNSUPPORTED``). Axolotl 0.19.0 declares the same for paddleocr_vl and adds descriptors
for model types outside axlint's catalog (muse_glimmer, qwen4_exp)."""

LORA_KERNELS_UNSUPPORTED = frozenset(t for t, caps in UNSUPPORTED_CAPABILITIES.items() if "lora_kernels" in caps)
"""Model types whose Axolotl support declares the fused LoRA kernels unsupported: ``normalize_config`` turns them off
once the model type is known (Axolotl 0.18.0 ``utils/config/__init__.py``)."""

CAPABILITY_FEATURES: Mapping[str, tuple[str, str]] = {
    "cut_cross_entropy": ("cut_cross_entropy", "Disable cut_cross_entropy for this model."),
    "liger": ("Liger", "Disable Liger flags for this model."),
}
"""The capabilities whose plugin raises, with the feature name and hint its ``check_capability`` call passes
(Axolotl 0.18.0 ``integrations/cut_cross_entropy/__init__.py`` and ``integrations/liger/plugin.py``
``pre_model_load``)."""


def capability_error(model_type: str | None, capability: str) -> str | None:
    """The ValueError a plugin's ``check_capability`` raises before the model loads when `model_type`'s support
    declares `capability` unsupported (``UNSUPPORTED_CAPABILITIES``); None when it is not declared."""
    reason = UNSUPPORTED_CAPABILITIES.get(str(model_type), {}).get(capability)
    if reason is None or capability not in CAPABILITY_FEATURES:
        return None
    feature, hint = CAPABILITY_FEATURES[capability]
    return " ".join(filter(None, (f"ValueError: {feature} is not supported for model_type={model_type}.", reason,
                                  hint)))


_QKV_NOT_FOUND = "AssertionError: Original QKV code not found"
_NO_ATTENTION_CLASS = "ValueError: Axolotl could not import attention class for model_type: {model_type}"
LORA_ATTENTION_REWRITE_FAILS: Mapping[str, str] = {
    **dict.fromkeys(("afmoe", "dbrx", "deepseek_v2", "deepseek_v3", "deepseek_v4", "falcon", "falcon_h1",
                     "glm4_moe", "glm4_moe_lite", "glm_moe_dsa", "gpt2", "gpt_neox", "gptj", "lfm2", "lfm2_moe",
                     "llama4", "minimax_m2", "mllama", "mpt", "olmo", "olmo2", "olmo3", "olmoe", "phi3", "stablelm",
                     "voxtral"),
                    _QKV_NOT_FOUND),
    "phi": "AssertionError: Original O code not found",
    **dict.fromkeys(("gemma3n", "glm4v", "internvl", "llava", "mamba", "qwen2_5_vl", "qwen2_vl", "qwen3_vl_moe"),
                    _NO_ATTENTION_CLASS),
}
"""Model types (transformers' own modelling code) whose attention Axolotl cannot rewrite for the fused LoRA QKV / O
kernels, with the error that stops the run: before the model loads, ``lora_qkv_kernel`` or ``lora_o_kernel``
makes Axolotl look up ``<Prefix>Attention`` in ``transformers.models.<type>`` and replace the three q/k/v lines
and the o_proj line of its ``forward`` source (Axolotl 0.18.0 ``monkeypatch/lora_kernels.py``
``patch_self_attn_lora``, called by ``loaders/patch_manager.py`` ``_apply_self_attention_lora_patch``); where the
class is missing it raises ValueError, where the lines differ (fused or normed projections, other names) an
AssertionError. Read from transformers 5.14.1, Axolotl 0.18.0's pin, and held to that code for every catalogued
model type by tests/test_oracle_lora_kernel_patch.py; Axolotl 0.19.0 with its transformers 5.16.1 gives the same
table."""


def lora_attention_rewrite_error(facts: RunFacts, model_type: str | None) -> str | None:
    """The error that stops a run of `model_type` before its model loads when Axolotl's QKV or O kernel is on
    (``RunFacts.lora_kernels``) and its attention cannot be rewritten (``LORA_ATTENTION_REWRITE_FAILS``); None when
    the run goes on."""
    if model_type not in LORA_ATTENTION_REWRITE_FAILS or not facts.adapter.value or not {"qkv", "o"} & set(
            facts.lora_kernels):
        return None
    return LORA_ATTENTION_REWRITE_FAILS[model_type].format(model_type=model_type)


_LAYERS_NOT_FOUND = "NotImplementedError: Model type {model_type} is not supported yet. Please create an Issue."
LORA_KERNEL_LAYERS_NOT_FOUND: Mapping[str, str] = {
    **dict.fromkeys(("dbrx", "falcon", "gpt2", "gpt_neox", "gptj", "mamba", "mpt"), _LAYERS_NOT_FOUND),
    "llama4": "AttributeError: 'Llama4ForCausalLM' object has no attribute 'layers'",
}
"""Model types (transformers' own modelling code) whose decoder layers Axolotl's fused LoRA kernel patch cannot
find, with the error that stops the run. Once the model has loaded and PEFT has wrapped it,
``apply_lora_kernel_patches`` (any of the MLP, QKV and O kernels on) takes the layers from ``get_layers``, which
knows ``model.model.layers`` and a ``language_model``'s ``layers`` only (Axolotl 0.18.0 and 0.19.0
``monkeypatch/lora_kernels.py``, called by ``loaders/patch_manager.py`` ``_apply_lora_kernel_patch``). GPT-NeoX,
Falcon, MPT, GPT-J, GPT-2, DBRX and Mamba keep theirs under ``gpt_neox``, ``transformer`` or ``backbone``: it
raises NotImplementedError. Axolotl loads a ``llama4`` config as the multimodal Llama4ForConditionalGeneration,
whose ``language_model`` is a whole Llama4ForCausalLM with its layers one level down (transformers 5.14.1 and
5.16.1). Held to that code for every catalogued model type by tests/test_oracle_lora_kernel_patch.py."""


def lora_kernel_layers_error(facts: RunFacts, model_type: str | None) -> str | None:
    """The error that stops a run of `model_type` after its model loads when one of Axolotl's fused LoRA kernels is
    on (``RunFacts.lora_kernels``: "mlp", "qkv" or "o") and the patch cannot find the model's layers
    (``LORA_KERNEL_LAYERS_NOT_FOUND``); None when the run goes on."""
    if model_type not in LORA_KERNEL_LAYERS_NOT_FOUND or not facts.adapter.value or not {"mlp", "qkv", "o"} & set(
            facts.lora_kernels):
        return None
    return LORA_KERNEL_LAYERS_NOT_FOUND[model_type].format(model_type=model_type)


FP32_AUTOCAST_ACTIVATIONS: Mapping[str, str] = {
    "relu2": "its ReLU² MLP activation (`torch.square`, a `pow`, which CUDA's autocast runs in fp32)",
    "xielu": "its xIELU MLP activation (transformers' Python form, which runs unless the optional XIELU CUDA "
             "package is installed, calls `softplus` and `expm1`, which CUDA's autocast runs in fp32)",
}
"""MLP activations (config.json ``hidden_act``) whose output CUDA's autocast makes fp32 in a bf16/fp16 run: ReLU²
(Arcee AFM, Nemotron, Nemotron-H) and xIELU's Python form (Apertus). PyTorch 2.11's CUDA autocast runs ``pow``,
``softplus`` and ``expm1`` in fp32 (``aten/src/ATen/autocast_mode.h``; the CPU's autocast does not)."""

FP32_AUTOCAST_NORM = "layernorm"
"""The norm kind (``Family.norm``) whose output CUDA's autocast makes fp32 in a bf16/fp16 run: ``nn.LayerNorm``
(StarCoder2, Phi, GPT-J, GPT-NeoX, StableLM, MPT, DBRX, Phi-3.5-MoE), whose ``layer_norm`` autocast runs in fp32
(PyTorch 2.11 ``aten/src/ATen/autocast_mode.h``; the CPU's autocast does not). Nemotron's LayerNorm1P casts back
(``NORMS_CAST_TO_HALF``); Cohere's and OLMo's norms compute in fp32 themselves and return their input's dtype."""

FP32_SOURCE_CAUSES: Mapping[str, str] = {
    **{act: f"the output of {text} is fp32, bitsandbytes' 4-bit layers return it in that dtype, and from the "
            "second layer on the residual stream is fp32" for act, text in FP32_AUTOCAST_ACTIVATIONS.items()},
    FP32_AUTOCAST_NORM: "its LayerNorm (`nn.LayerNorm`, whose `layer_norm` CUDA's autocast runs in fp32) returns fp32, "
                        "and bitsandbytes' 4-bit q, k and v projections return their output in that dtype",
}
"""What a rule tells the user of each ``fp32_source``."""

FP32_MLP_INPUT_CAUSES: Mapping[str, str] = {
    **FP32_SOURCE_CAUSES,
    FP32_AUTOCAST_NORM: "the LayerNorm before its MLP (`nn.LayerNorm`, whose `layer_norm` CUDA's autocast runs in "
                        "fp32) returns fp32",
}
"""What a rule tells the user of each ``fp32_source`` about the MLP's input: a LayerNorm's output is the MLP's
input itself; an activation's makes the residual stream, and with it the MLP's normalised input, fp32."""

KBIT_KEEPS_INPUT_DTYPE = frozenset({"nf4", "int8"})
"""bitsandbytes loads whose Linears return their output in their input's dtype: 4-bit ``Linear4bit``
(``matmul_4bit(...).to(inp_dtype)``) and 8-bit ``Linear8bitLt`` (``int8_scaled_mm(..., dtype=A.dtype)``; bitsandbytes
0.49.1 ``nn/modules.py``, ``autograd/_functions.py``). An 8-bit layer whose input has outlier columns (values over
``llm_int8_threshold``, 6 by default) adds their product with ``addmm``, which CUDA's autocast runs in half
precision, so there the output depends on the data: measured on an H200 (Axolotl 0.18.0, bitsandbytes 0.49.1), an
8-bit LoRA of Arcee AFM-4.5B trains with variable-length sdpa, which refuses fp32 queries, and allocates 8.79 GiB,
between the 7.47 of a half-precision stream and the 9.01 of an fp32 one."""


def fp32_source(facts: RunFacts, model_type: str | None, hidden_act: object, norm: str | None,
                quantization: str | None) -> str | None:
    """Why the hidden states of this run are fp32 (a key of ``FP32_SOURCE_CAUSES``), or None: autocast is on (a
    bf16 or fp16 run without DeepSpeed, whose engine casts the model instead), the layers are bitsandbytes 4/8-bit
    (`quantization` in ``KBIT_KEEPS_INPUT_DTYPE``), and either the model's norm is ``FP32_AUTOCAST_NORM`` (not one
    that casts back, ``NORMS_CAST_TO_HALF``), so every attention and MLP reads fp32 and the MLP's output makes the
    residual stream fp32, or the MLP activation (config.json ``hidden_act``) is one CUDA's autocast runs in fp32
    (``FP32_AUTOCAST_ACTIVATIONS``), so the down projection's output and the residual add after it are fp32 from the
    first MLP on. Measured on an H200 (Axolotl 0.18.0, torch 2.11.0, bitsandbytes 0.49.1): Arcee AFM-4.5B and
    Apertus 8B QLoRA (activation), StarCoder2-3B and Phi-1.5 QLoRA (LayerNorm)."""
    autocast = (facts.bf16.value or facts.fp16.value) and facts.sharding.kind is not ShardingKind.DEEPSPEED
    if quantization not in KBIT_KEEPS_INPUT_DTYPE or not autocast:
        return None
    if norm == FP32_AUTOCAST_NORM and model_type not in NORMS_CAST_TO_HALF:
        return FP32_AUTOCAST_NORM
    return str(hidden_act) if hidden_act in FP32_AUTOCAST_ACTIVATIONS else None


NORMS_CAST_TO_HALF = frozenset({"nemotron", "nemotron_h"})
"""Model types whose decoder norms cast their input to half precision, so that their attention and MLP read bf16
(fp16) even when the residual stream is fp32 (``fp32_source``): Nemotron's LayerNorm1P casts to the autocast dtype,
NemotronHBlock to the norm weight's dtype (transformers 5.14.1 ``modeling_nemotron.py`` ``_cast_if_autocast_enabled``,
``modeling_nemotron_h.py`` ``NemotronHBlock.forward``). Arcee's and Apertus's RMSNorm return their input's dtype."""


def fp32_layer_inputs(facts: RunFacts, model_type: str | None, hidden_act: object, norm: str | None) -> str | None:
    """The ``fp32_source`` of a 4-bit run whose attention reads fp32 hidden states, or None: an fp32 residual stream
    through norms that keep its dtype (not ``NORMS_CAST_TO_HALF``), or a LayerNorm. Not an 8-bit run, whose layers
    return half precision for the inputs with outlier columns that real activations have (``KBIT_KEEPS_INPUT_DTYPE``;
    measured: Arcee AFM-4.5B's 8-bit LoRA trains on variable-length sdpa)."""
    if facts.quantization.value != "nf4" or model_type in NORMS_CAST_TO_HALF:
        return None
    return fp32_source(facts, model_type, hidden_act, norm, "nf4")


def lora_kernel_dtype_error(facts: RunFacts, model_type: str | None, hidden_act: object,
                            norm: str | None) -> str | None:
    """The error that stops a QLoRA run at its first step when one of Axolotl's fused LoRA kernels gets fp32 hidden
    states (``fp32_layer_inputs``): ``matmul_lora`` (Axolotl 0.18.0 and 0.19.0 ``kernels/lora.py``), which the QKV
    and MLP kernels run, casts the adapters to its input's dtype and adds them in place into the half-precision
    base product. Measured on an H200 (Axolotl 0.18.0, torch 2.11.0, bitsandbytes 0.49.1): the QLoRA examples of
    Arcee AFM-4.5B, Apertus 8B and StarCoder2-3B stop there in the QKV kernel, and Arcee's in fp16 too. None for
    half-precision inputs, a reward model, or a run that stops earlier (``lora_attention_rewrite_error``,
    ``lora_kernel_layers_error``). Which kernel runs is the caller's question (``lora_qkv_dtype_error``)."""
    if not fp32_layer_inputs(facts, model_type, hidden_act, norm) or facts.head != "lm":
        return None
    if lora_attention_rewrite_error(facts, model_type) or lora_kernel_layers_error(facts, model_type):
        return None
    half = "BFloat16" if facts.bf16.value else "Half"
    return f"RuntimeError: self and mat2 must have the same dtype, but got {half} and Float"


def lora_qkv_dtype_error(facts: RunFacts, model_type: str | None, hidden_act: object,
                         norm: str | None) -> str | None:
    """``lora_kernel_dtype_error`` where Axolotl's fused LoRA QKV kernel runs (``fused_lora_kernels``)."""
    if "qkv" not in fused_lora_kernels(facts, model_type or ""):
        return None
    return lora_kernel_dtype_error(facts, model_type, hidden_act, norm)


SDPA_VARLEN_MAX_HEAD_DIM = 256
"""The widest head PyTorch's variable-length attention serves; Axolotl keeps stock sdpa above it (0.18.0
``monkeypatch/attention/sdpa_varlen.py``, ``_VARLEN_MAX_HEAD_DIM``)."""


def sdpa_varlen_patched(facts: RunFacts, arch_config: Mapping[str, Any]) -> bool:
    """Axolotl 0.18.0 patches sdpa to send packed rows to PyTorch's ``varlen_attn`` (``loaders/patch_manager.py``
    ``_apply_sdpa_varlen_patch``, on the torch >= 2.11 it requires): for ``attn_implementation: sdpa`` (or
    ``sdp_attention: true``) with ``sample_packing``, or ``sdpa_varlen: true``, unless ``sdpa_varlen: false``, when
    the model's heads are at most 256 wide (``head_dim``, else hidden_size / num_attention_heads) and no layer uses a
    sliding window. `arch_config` is the model's config.json. Held to that method by
    tests/test_oracle_lora_qkv_dtype.py."""
    auto = facts.attn_implementation.value == "sdpa" and facts.sample_packing.value
    if facts.sdpa_varlen is False or not (auto or facts.sdpa_varlen):
        return False
    head_dim = arch_config.get("head_dim") or (
        int(arch_config.get("hidden_size") or 0) // max(1, int(arch_config.get("num_attention_heads") or 1)))
    layer_types = arch_config.get("layer_types") or ()
    sliding = bool(arch_config.get("sliding_window")) and (not layer_types or "sliding_attention" in layer_types)
    return head_dim <= SDPA_VARLEN_MAX_HEAD_DIM and not sliding


SDPA_VARLEN_FP32_FALLBACK_SINCE = "0.19.0"
"""From this Axolotl release on, ``sdpa_varlen_forward`` sends fp32 queries to stock sdpa instead of ``varlen_attn``
(0.19.0 ``monkeypatch/attention/sdpa_varlen.py``: ``query.dtype in (torch.float16, torch.bfloat16)``), so
``sdpa_varlen_dtype_error`` holds for the releases before it."""


def sdpa_varlen_dtype_error(facts: RunFacts, model_type: str | None, arch_config: Mapping[str, Any],
                            norm: str | None) -> str | None:
    """The error that stops a packed run on sdpa at its first step when Axolotl patched sdpa for packed rows
    (``sdpa_varlen_patched``; the patched function sends a row there only when it holds several sequences) and the
    attention reads fp32 hidden states (``fp32_layer_inputs``): ``varlen_attn`` is a custom operator that autocast
    does not cast, and its kernel takes fp16 and bf16 only. Measured on an H200: the QLoRAs of Arcee AFM-4.5B and
    Phi-1.5 with Axolotl 0.18.0's LoRA kernels off stop there (StarCoder2-3B's sliding window keeps stock sdpa, and
    it trains). Axolotl releases from ``SDPA_VARLEN_FP32_FALLBACK_SINCE`` on fall back instead."""
    packed_sdpa = facts.attention == "sdpa" and facts.sample_packing.value
    if not (packed_sdpa and sdpa_varlen_patched(facts, arch_config)) or not fp32_layer_inputs(
            facts, model_type, arch_config.get("hidden_act"), norm):
        return None
    return "RuntimeError: FlashAttention only support fp16 and bf16 data type"


def fused_lora_kernels(facts: RunFacts, model_type: str) -> tuple[str, ...]:
    """The fused LoRA kernels that replace PEFT's layers in attention and MLP for a model of `model_type` ("mlp",
    "qkv", "o": ``RunFacts.lora_kernels`` without the embedding kernel; none for ``LORA_KERNELS_UNSUPPORTED``)."""
    if not facts.adapter.value or model_type in LORA_KERNELS_UNSUPPORTED:
        return ()
    return tuple(k for k in facts.lora_kernels if k != "embedding")


def fused_lora_kernel_flags(facts: RunFacts, model_type: str) -> list[str]:
    """The config flags of ``fused_lora_kernels``."""
    return [f"lora_{k}_kernel" for k in fused_lora_kernels(facts, model_type)]


def lora_kernels(raw: Mapping[str, Any], world_size: int, expert_kernels: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The fused LoRA kernels Axolotl runs ("mlp", "qkv", "o", "embedding" for the four ``LORA_KERNEL_FLAGS``).

    The flags written true; when none of the four is written, all four for a LoRA or QLoRA run, which Axolotl
    0.18.0 turns on itself (``utils/schemas/config.py`` ``check_auto_enable_lora_kernels``, a validator of the
    config with GPU capabilities, which ``load_cfg`` leaves out under ``use_ray``) unless the run is RL,
    ``nvfp4_merge_aware``, 8-bit LoRA, ``trust_remote_code``, or FSDP1 (``fsdp_config`` without ``fsdp_version:
    2``) on more than one GPU. The KernelsPlugin's DeepSeek-V4 path (``use_dsv4_kernels`` with ScatterMoE or
    SonicMoE experts) turns the MLP kernel off for its own (``integrations/kernels/args.py``
    ``disable_mlp_kernel``). An architecture that declares the kernels unsupported turns them off again once its
    model type is known (``utils/config/__init__.py`` ``normalize_config``; ``fused_lora_kernel_flags``). Held to Axolotl's
    validated config in tests/test_oracle_lora_kernels.py."""
    written = [flag for flag in LORA_KERNEL_FLAGS if raw.get(flag) is not None]
    if written:
        kernels = tuple(flag.split("_")[1] for flag in written if lax_bool(raw.get(flag)) is True)
    elif _auto_lora_kernels(raw, world_size):
        kernels = tuple(flag.split("_")[1] for flag in LORA_KERNEL_FLAGS)
    else:
        return ()
    if expert_kernels and truthy(raw.get("use_dsv4_kernels")):
        kernels = tuple(k for k in kernels if k != "mlp")
    return kernels


def _auto_lora_kernels(raw: Mapping[str, Any], world_size: int) -> bool:
    """Axolotl turns the LoRA kernels on for this run when none of their flags is written (``lora_kernels``)."""
    adapter = raw.get("adapter")
    if (adapter not in ("lora", "qlora") or truthy(raw.get("use_ray")) or truthy(raw.get("rl"))
            or truthy(raw.get("nvfp4_merge_aware")) or (adapter == "lora" and truthy(raw.get("load_in_8bit")))
            or truthy(raw.get("trust_remote_code"))):
        return False
    return not (world_size > 1 and raw.get("fsdp_config") is not None and str(raw.get("fsdp_version")) != "2")


def _dsv4_nonexpert_mode(raw: Mapping[str, Any], plugins: tuple[str, ...]) -> str | None:
    """How the KernelsPlugin's DeepSeek-V4 adapter stores an FP8 checkpoint's non-expert Linears: it installs its
    NVFP4-aware FineGrainedFP8 quantizer when ``use_dsv4_kernels`` and ``use_scattermoe`` are on (axolotl
    integrations/kernels/adapters/dsv4.py ``pre_model_load``), with ``dsv4_fp8_nonexpert_mode`` ("float8tensor" by
    default, or "bf16"; libs/scattermoe_lora/nvfp4_fp8_quantizer.py ``configure_nonexpert_mode``). None when the
    adapter does not install it."""
    if not (_flag(raw, "use_dsv4_kernels") and "scattermoe" in _expert_kernels(raw, plugins)):
        return None
    return str(raw.get("dsv4_fp8_nonexpert_mode") or "float8tensor").lower()


def _dequantize(raw: Mapping[str, Any]) -> bool:
    """``model_quantization_config_kwargs: {dequantize: true}``: Axolotl builds FineGrainedFP8Config / Mxfp4Config
    from these kwargs (0.18.0 loaders/model.py ``_set_quantization_config``), and transformers then loads a
    quantized checkpoint dequantized to the load dtype."""
    kwargs = raw.get("model_quantization_config_kwargs")
    return (raw.get("model_quantization_config") in ("FineGrainedFP8Config", "Mxfp4Config")
            and isinstance(kwargs, Mapping) and lax_bool(kwargs.get("dequantize")) is True)


def _head(raw: Mapping[str, Any]) -> tuple[str, int]:
    """The output head Axolotl 0.18.0 loads (utils/schemas/validation.py ``set_reward_model_defaults``):
    ``reward_model`` -> AutoModelForSequenceClassification with num_labels 1 (core/builders/causal.py forces
    ``model.config.num_labels = 1`` for TRL's RewardTrainer); ``process_reward_model`` ->
    AutoModelForTokenClassification with ``num_labels`` (default 2). Otherwise the causal LM head."""
    if _flag(raw, "reward_model"):
        return "sequence", 1
    if _flag(raw, "process_reward_model"):
        labels = lax_int(raw.get("num_labels"))
        return "token", labels if labels is not None and labels > 0 else 2
    return "lm", 0
