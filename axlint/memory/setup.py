"""TrainSetup: the memory-relevant facts of one run, taken from its resolved facts (axlint.facts).

Every other module of ``axlint.memory`` reads this typed object, never the config. The solver changes it
(`with_changes`) to try settings without writing a config.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from enum import Enum
from typing import Any

from axlint.architectures import Architecture
from axlint.facts import (
    FP32_AUTOCAST_NORM,
    ImageFeed,
    LossKernel,
    ModelLoad,
    RunFacts,
    Sharding,
    fp32_source,
    fused_lora_kernels,
    kbit_prepared,
    keeps_fp32_embeddings,
    lora_attention_rewrite_error,
    lora_kernel_dtype_error,
    lora_kernel_layers_error,
    token_counts,
)
from axlint.memory import constants as C
from axlint.memory.liger_models import cce_supports, liger_supports
from axlint.memory.params import linear_names, regex_leaf_names
from axlint.memory.peft_targets import CONVERTED_MODEL_TYPES, TARGET_MAP, PeftTargets, convert_targets
from axlint.memory.prequantized import Prequantized, read_prequantized


HEAD_NOTES = {
    "sequence": "reward_model: AutoModelForSequenceClassification, score head h×{n}, no vocabulary logits; TRL "
                "RewardTrainer runs chosen and rejected as one forward of 2×micro_batch_size sequences",
    "token": "process_reward_model: AutoModelForTokenClassification, score head h×{n} per token, no vocabulary "
             "logits; TRL PRMTrainer, one forward of micro_batch_size sequences",
}
"""What the estimate models for a reward model (sources: Axolotl 0.18.0 utils/schemas/validation.py
``set_reward_model_defaults``, core/builders/causal.py (trainer class, DataCollatorForPreference for reward_model,
``pad_to_multiple_of`` = sequence_len when pad_to_sequence_len, which the validator defaults to true for
reward_model), core/trainers/trl.py; TRL 1.8.0 (Axolotl's pin) trainer/reward_trainer.py
``DataCollatorForPreference.torch_call``: ``input_ids = chosen_ids + rejected_ids`` padded into one batch, and
``compute_loss``: one ``model(**inputs)``, ``torch.chunk(logits, 2)``, ``-logsigmoid(chosen - rejected)``;
experimental/prm/prm_trainer.py: DataCollatorForTokenClassification, the model's own token-classification loss)."""


class ModelLoader(str, Enum):
    """What loads the model and sets the dtype of the parameters that are not quantized.

    AXOLOTL        Axolotl's loader (0.18.0 ``loaders/model.py``): ``keeps_fp32_embeddings`` and
                   ``kbit_prepared`` say what it leaves in fp32.
    TRANSFORMERS   a plain Transformers script: every parameter in the load dtype.
    PEFT_KBIT      a plain script that runs PEFT's ``prepare_model_for_kbit_training`` on a 4/8-bit load, which casts
                   every fp16/bf16 parameter that is not a 4-bit one to fp32 (PEFT 0.13.2 to 0.21.2
                   ``utils/other.py``), and nothing casts them back: embeddings, lm_head, norms and unquantized
                   experts train in fp32.
                   Their residual stream is fp32 too (``embeddings_fp32``): an fp32 norm returns ``weight * x`` in
                   fp32 and bitsandbytes' Linear4bit returns its output in its input's dtype (0.44.1 / 0.45.0
                   ``nn/modules.py``), so every residual add is fp32."""

    AXOLOTL = "axolotl"
    TRANSFORMERS = "transformers"
    PEFT_KBIT = "peft-kbit"


@dataclass(frozen=True)
class TrainSetup:
    """The training settings the memory estimate reads, resolved from the run's facts (`read_setup`)."""

    param_bytes: int                 # model load dtype: 2 (bf16/fp16) or 4 (fp32)
    quantization: str | None         # "nf4" | "int8" | None
    double_quant: bool
    quantize_experts: bool           # routed experts quantized too (Axolotl's quantize_moe_experts)
    experts_parametrized: bool       # ... as 3-D parameters behind a dequantizing parametrization
    # (quantize_moe_experts on transformers 5 experts), not as per-expert nn.Linear modules that bitsandbytes
    # replaces (llama4_linearized_experts, a remote-code model's own experts)
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
    loss: LossKernel
    chunked_ce_chunks: int
    liger_rms_norm: bool
    liger_glu: bool
    liger_flce_weight_grad_copies: bool = True  # Liger FLCE adds each chunk's lm_head gradient through new tensors
    # (``grad_weight += mm(...).float()``: liger-kernel 0.6.2 to 0.8.2, Axolotl 0.18.0 pins 0.8.0); False: in place
    xielu_cuda: bool = False  # the optional XIELU CUDA package runs xIELU (it keeps only its input); False: the
    # Python form transformers falls back to, which keeps more (``activations.plain_mlp_bytes``)
    fp32_source: str | None = None  # why CUDA's autocast and the 4/8-bit layers make this run's hidden states fp32
    # (``facts.fp32_source``: the MLP activation's name, or "layernorm"; ``mlp_fp32``, ``residual_fp32``)
    adapters_in_load_dtype: bool = False  # PEFT before 0.12 cast each LoRA layer to its base weight's dtype when that
    # is a float (0.10.0 ``LoraLayer.update_layer``: ``self.to(weight.device, dtype=weight.dtype)``): ``adapter_bytes``
    nf4_keeps_input: bool = False  # bitsandbytes before 0.43.2: the 4-bit matmul kept its input for backward
    # (``ctx.tensors = (A, B)``, 0.41.0 to 0.43.1 ``autograd/_functions.py`` ``MatMul4Bit``); since, only the weight
    inner_expert_adapters_untrained: bool = True  # PEFT 0.19-0.20 (Axolotl 0.18.0 pins 0.19.1): on experts stored
    # quantized, only the outermost ParamWrapper's adapter trains (``params.untrained_expert_adapter_params``);
    # False: PEFT 0.18, which trains them all
    sharding: Sharding = field(default_factory=Sharding)
    head: str = "lm"                 # "lm" (vocab logits) | "sequence" (reward model) | "token" (process reward model)
    num_labels: int = 0              # the score head's outputs when head != "lm"
    pair_factor: int = 1             # sequences per sample in one forward: 2 for a preference pair (RewardTrainer)
    context_parallel: int = 1        # context_parallel_size: the GPUs one sequence is split over
    mlp_tiles: int = 1               # tiled_mlp: the sequence tiles the MLP runs in (1: not tiled)
    lora_target_parameters: tuple[str, ...] = ()  # PEFT target_parameters: LoRA on 3-D expert weights
    lora_layers: tuple[tuple[int, ...], tuple[str, ...]] | None = None  # peft_layers_to_transform and the
    # peft_layers_pattern names PEFT reads a module's layer index after (``params.peft_layer_index``); None: all
    lora_doubled: tuple[str, ...] = ()            # target parameters whose LoRA rank PEFT doubles (fused pairs)
    lora_rank_pattern: tuple[tuple[str, int], ...] = ()  # lora_rank_pattern: (key, rank) in order
    # (``params.adapter_rank``)
    dora: bool = False                            # peft_use_dora: each adapter has a magnitude vector too
    trainable_tokens: tuple[tuple[str, int], ...] = ()  # peft_trainable_token_indices: (layer name, tokens); ""
    # the input embedding (``params.token_layers``)
    expert_kernels: tuple[str, ...] = ()          # KernelsPlugin expert paths (scattermoe / sonicmoe) that run the experts
    lora_kernels: tuple[str, ...] = ()            # Axolotl's fused LoRA kernels in place of PEFT's layers: "mlp", "qkv", "o"
    expert_modules: bool = False                  # the repository's own code builds the experts as nn.Linear modules
    prequantized: Prequantized | None = None      # the checkpoint's own quantization (config.json)
    images: ImageFeed | None = None               # the images a multimodal run feeds (processor_type set)
    freeze_mm_modules: bool = False               # Axolotl freezes the towers and projectors (``memory.idle``)
    loader: ModelLoader = ModelLoader.AXOLOTL     # what loads the model and casts its unquantized parameters
    cut_cross_entropy: bool = False               # Axolotl's cut_cross_entropy is on, whatever head computes the loss
    model_load: ModelLoad = field(default_factory=ModelLoad)  # how the model reaches the GPUs before FSDP shards it
    assumptions: tuple[str, ...] = ()

    @cached_property
    def embeddings_fp32(self) -> bool:
        """The embeddings (and an untied lm_head) stay fp32 in this setup (``facts.keeps_fp32_embeddings``): the
        solver's flash attention, CCE and ZeRO options turn it off as Axolotl would. A model loaded in bf16 by a
        plain Transformers script keeps them in bf16; PEFT's kbit preparation without a cast back leaves them fp32
        (``ModelLoader``). Axolotl's loader reads its ``cut_cross_entropy`` flag, which a reward model's head leaves
        on though its loss is plain PyTorch."""
        if self.loader is ModelLoader.PEFT_KBIT:
            return self.quantization is not None and self.param_bytes == C.BF16
        return self.loader is ModelLoader.AXOLOTL and keeps_fp32_embeddings(
            self.adapter, self.param_bytes == C.BF16, self.sharding.kind, self.attn_implementation,
            self.cut_cross_entropy or self.loss is LossKernel.CCE)

    @cached_property
    def experts_fp32(self) -> bool:
        """The weights a 4/8-bit load leaves in half precision (the routed experts, the Linears it does not convert)
        are fp32 in this setup (``facts.kbit_prepared``; under a kbit loader of a plain script whenever a 4/8-bit
        load leaves them unquantized), unless the checkpoint stores them in a format of its own (FP8, NVFP4, ...)."""
        stored = self.prequantized is not None and not self.prequantized.bnb
        if stored:
            return False
        if self.loader is ModelLoader.PEFT_KBIT:
            return self.quantization is not None and not self.quantize_experts
        return self.loader is ModelLoader.AXOLOTL and kbit_prepared(
            self.adapter, self.quantization, self.sharding.kind, self.quantize_experts)

    @cached_property
    def unquantized_bytes(self) -> int:
        """Bytes per element of the weights a 4/8-bit load leaves unquantized: the routed experts and the Linears it
        does not convert (``Architecture.unconverted_linear_params``), fp32 where PEFT's kbit preparation casts them
        (``experts_fp32``)."""
        return C.FP32 if self.experts_fp32 else self.param_bytes

    @cached_property
    def mlp_fp32(self) -> bool:
        """The MLP's activation and what follows it are fp32 (``facts.fp32_source``): CUDA's autocast runs ReLU²
        (``pow``) and the Python form of xIELU (``softplus``, ``expm1``; not the XIELU CUDA package's kernel, which
        keeps its input's dtype) in fp32, or an ``nn.LayerNorm`` before the MLP (``layer_norm``), and bitsandbytes'
        4/8-bit Linears return their output in their input's dtype (0.49.1 ``nn/modules.py``), so the up projection's
        output (from the second layer on), the activation and the down projection's output are fp32 (measured on an
        H200, below). Nemotron's norms cast the stream back to half precision (``facts.NORMS_CAST_TO_HALF``); their
        fp32 stream is counted the same way (Nemotron Mini 4B QLoRA: 31.13 GiB allocated by Axolotl on an H200,
        31.15 estimated). An 8-bit run is counted so too, the larger of the two cases ``facts.KBIT_KEEPS_INPUT_DTYPE``
        describes."""
        return self.fp32_source is not None and not (self.fp32_source == "xielu" and self.xielu_cuda)

    @cached_property
    def adapter_bytes(self) -> int:
        """Bytes per element of the LoRA adapters, their gradients and their unquantized optimizer states: fp32, where
        PEFT keeps the adapters of a half-precision base (``autocast_adapter_dtype``, PEFT 0.12 on), or the load dtype
        where an older PEFT cast them to the base weight's (``adapters_in_load_dtype``)."""
        return self.param_bytes if self.adapters_in_load_dtype else C.FP32

    @cached_property
    def base_keeps_input(self) -> bool:
        """The bitsandbytes base layers keep their input for backward: 8-bit ``MatMul8bitLt`` does
        (``ctx.tensors = (CAt, subA, A)``), 4-bit ``MatMul4Bit`` keeps only the packed weight since bitsandbytes 0.43.2
        (0.49.1 ``autograd/_functions.py``) and kept its input before (``nf4_keeps_input``)."""
        return self.quantization == "int8" or (self.quantization == "nf4" and self.nf4_keeps_input)

    @cached_property
    def residual_fp32(self) -> bool:
        """The residual stream between the layers is fp32: fp32 embeddings feed it (``embeddings_fp32``), or an fp32
        MLP output is added to it (``mlp_fp32``; fp32 + bf16 is fp32). Measured on an H200 (torch 2.11, bitsandbytes
        0.49.1, PEFT 0.19.1): Arcee AFM-4.5B QLoRA with checkpointing at 2 × 2048 tokens keeps its 36 layer inputs
        at 4 bytes (1.41 GiB) and the recomputed layer's ReLU output at 4 bytes per intermediate unit; Axolotl 0.18.0
        trains StarCoder2-3B's QLoRA example (LayerNorm, its LoRA kernels off) at 17.04 GiB allocated, 16.92
        estimated so (14.02 with a half-precision stream), and Phi-1.5's at 4.79 (4.73; 4.34)."""
        return self.embeddings_fp32 or self.mlp_fp32

    @cached_property
    def residual_bytes(self) -> int:
        """Bytes per element of the residual stream (``residual_fp32``) and of its gradient."""
        return C.FP32 if self.residual_fp32 else self.param_bytes

    @cached_property
    def embedding_bytes(self) -> int:
        """Bytes per element of the embedding weights and of what they feed: the residual stream that runs through
        the decoder's adds (fp32 + bf16 is fp32) and the embedding's gradient."""
        return C.FP32 if self.embeddings_fp32 else self.param_bytes

    @cached_property
    def tokens(self) -> int:
        """Tokens per micro batch on one GPU: pair_factor × micro_batch_size × sequence_len / context_parallel
        (exact with packing/padding, worst case else). Context parallelism gives each GPU an equal chunk of every
        sequence (Axolotl 0.18 utils/ctx_managers/sequence_parallel.py)."""
        return self.pair_factor * self.micro_batch_size * -(-self.sequence_len // self.context_parallel)

    @cached_property
    def eval_tokens(self) -> int:
        return self.pair_factor * self.eval_batch_size * -(-self.eval_sequence_len // self.context_parallel)

    def with_changes(self, **changes: Any) -> "TrainSetup":
        return replace(self, **changes)


TILED_MLP_TOKENS_PER_TILE = 32768
"""Axolotl's default tile: ~32K tokens of a sequence (monkeypatch/tiled_mlp/patch.py, ``target_tokens_per_shard``)."""


def mlp_tiles(facts: RunFacts, local_sequence_len: int) -> int:
    """The tiles Axolotl's tiled MLP cuts a sequence into: ``tiled_mlp_num_shards``, else
    ceil(local sequence length / 32768) (the sequence a GPU holds under context parallelism) (Axolotl 0.18
    monkeypatch/tiled_mlp/patch.py ``tiled_mlp_forward``)."""
    return max(1, facts.mlp_tiles or -(-local_sequence_len // TILED_MLP_TOKENS_PER_TILE))


def remote_modeling(facts: RunFacts, arch: Architecture) -> bool:
    """The run trusts remote code and config.json maps the model to the repository's own modelling code."""
    return facts.remote_code and arch.remote_modeling


def remote_linear_experts(facts: RunFacts, arch: Architecture) -> bool:
    """A 4/8-bit run under ``trust_remote_code`` of a model whose repository's own code (``auto_map``) builds its
    routed experts as ``nn.Linear`` modules (``Family.remote_linear_experts``): bitsandbytes quantizes them."""
    return bool(remote_modeling(facts, arch) and facts.quantization.value and arch.expert_params
                and arch.layout.remote_linear_experts)


def peft_targets(facts: RunFacts, arch: Architecture) -> PeftTargets:
    """The LoRA targets PEFT ends up with for this run (``peft_targets.convert_targets``): the listed
    ``lora_target_modules`` and, with ``lora_target_linear``, every Linear's name (Axolotl 0.18.0
    ``_build_peft_lora_config``: the two lists joined), on the model's top-level ``model_type``. A regular-expression
    string is first resolved to the names it reaches, as PEFT 0.20 does (``params.regex_leaf_names``; PEFT 0.19.1
    took it apart character by character and stopped the launch). Nothing is converted when the repository's own
    modelling code runs (``remote_modeling``: transformers 4-style nn.Linear experts that module targets reach)."""
    written = facts.lora.target_modules
    pattern = CONVERTED_MODEL_TYPES.get(arch.model_type)
    if not facts.adapter.value or not arch.is_moe or pattern is None or remote_modeling(facts, arch):
        return PeftTargets(written if isinstance(written, tuple) else (), facts.lora.target_parameters)
    if isinstance(written, str):
        written = regex_leaf_names(arch, written, TARGET_MAP[pattern])
        if not written and not facts.lora.target_linear:
            return PeftTargets((), facts.lora.target_parameters)
    names = (*written, *linear_names(arch)) if facts.lora.target_linear else written
    return convert_targets(arch.model_type, names, facts.lora.target_parameters)


def _weights_storage(facts: RunFacts, arch: Architecture, remote_experts: bool,
                     notes: list[str]) -> tuple[Prequantized | None, str | None, bool]:
    """How the weights are stored: the checkpoint's own quantization (``read_prequantized``), and the bitsandbytes
    load with its double quantization (a bitsandbytes checkpoint's own when the run sets none); appends what the
    estimate assumes of them to ``notes``."""
    if remote_experts:
        notes.append("trust_remote_code: the repository's own modelling code runs (config.json's auto_map), whose "
                     f"routed experts are nn.Linear modules that {facts.quantization.value} quantizes")
    pre = read_prequantized(arch.raw_config, arch.decoder_type, moe=arch.is_moe,
                            expert_kernels=facts.expert_kernels,
                            nonexpert_quantization=facts.nonexpert_quantization, dequantize=facts.dequantize,
                            dsv4_nonexpert_mode=facts.dsv4_nonexpert_mode)
    if pre is not None and pre.note:
        notes.append(pre.note)
    if pre is not None and pre.bnb and facts.quantization.value is None:
        return pre, pre.bnb, pre.bnb_double_quant
    return pre, facts.quantization.value, facts.double_quant


def read_setup(facts: RunFacts, arch: Architecture) -> TrainSetup:
    """The memory-relevant facts of a resolved run (axlint.facts), with the notes the estimate rests on."""
    notes: list[str] = []
    if facts.dtype.value == "float32":
        notes.append("bf16/fp16 off: the model is loaded and trained in fp32")
    liger = facts.liger and liger_supports(arch.model_type)
    if facts.loss.value is LossKernel.CCE and not cce_supports(arch.model_type):
        notes.append(f"Cut Cross-Entropy has no patch for model_type {arch.model_type!r}; "
                     "Axolotl's generic (experimental) patch assumed to apply")
    remote_experts = remote_linear_experts(facts, arch)
    pre, quantization, double_quant = _weights_storage(facts, arch, remote_experts, notes)
    if facts.lora.target_parameters and facts.adapter.value:
        merged = ("the ScatterMoE / SonicMoE kernels' own LoRA buffers are not counted" if facts.expert_kernels else
                  "each layer runs on a merged copy W + BA of the weights it wraps")
        notes.append("lora_target_parameters: PEFT wraps the 3-D expert weights (ParamWrapper), r·E·(d_in + d_out) "
                     f"adapter weights each; the experts then keep their inputs for backward like trained experts; "
                     f"{merged}")
    kernels = lora_kernels(facts, arch)
    if kernels:
        notes.append(f"Axolotl runs its fused LoRA kernels ({', '.join(kernels)}; on by itself for LoRA and QLoRA "
                     "unless a lora_*_kernel flag is written) in place of PEFT's LoRA layers wherever they apply (a "
                     "dense gated SiLU or GELU MLP with LoRA on gate, up and down; attention with LoRA on q, k and v, "
                     "or on o): they keep the input, not PEFT's per-adapter copies, and the MLP kernel keeps the gate "
                     "and up outputs only" + ("; with DoRA each also keeps the sum of its layers' base and adapter "
                                             "outputs, and takes the weight norms in place" if facts.lora.dora else ""))
    if facts.lora.dora and facts.adapter.value:
        notes.append("DoRA (peft_use_dora): a magnitude vector per adapted Linear; where PEFT's layers run, each keeps "
                     "its base and adapter outputs for the magnitude's gradient, and each forward takes the weight "
                     "norms from a full copy of the merged weight, a transient of a few times the largest adapted "
                     "weight")
    if facts.lora.trainable_tokens and facts.adapter.value:
        notes.append("trainable tokens (peft_trainable_token_indices): PEFT writes the trained rows into a full copy "
                     "of the embedding (and of the output projection it wraps, which that layer keeps for its "
                     "backward) at every forward, and their backward makes a dense gradient of the whole matrix")
    if arch.config.get("hidden_act") == "xielu":
        notes.append("xIELU activation: transformers' Python form assumed (7-9 bytes kept per MLP unit and token); "
                     "with the optional XIELU CUDA package installed it keeps 2 and the run needs less")
    packed = facts.sample_packing.value or facts.pad_to_sequence_len.value
    seq, mbs = facts.sequence_len.value, facts.micro_batch_size.value
    pair = 2 if facts.head == "sequence" else 1
    loss = facts.loss.value
    if facts.head != "lm":
        notes.append(HEAD_NOTES[facts.head].format(n=facts.num_labels))
        if loss is not LossKernel.HF:
            notes.append(f"{loss.value} patches the causal LM loss only: the score head's loss is plain PyTorch")
        loss = LossKernel.HF
    targets = peft_targets(facts, arch)
    resolved_regex = isinstance(facts.lora.target_modules, str) and bool(targets.modules)
    if targets.moved:
        router = " and the router" if "gate.weight" in targets.moved_to else ""
        notes.append(f"PEFT turns the LoRA target names {', '.join(targets.moved)} into LoRA on the routed experts' "
                     f"3-D weights{router} ({', '.join(targets.parameters)}; rank doubled for a fused "
                     f"gate_up_proj; each layer runs on a merged copy W + BA of them), and the other nn.Linear modules "
                     f"of those names (dense layers' MLPs, shared experts) get no adapter")
    cp = facts.sharding.mesh.cp
    if cp > 1:
        notes.append(f"context_parallel_size {cp}: each GPU holds 1/{cp} of every sequence; ring attention's "
                     f"exchange of K/V chunks between GPUs is not counted")
    tiles = mlp_tiles(facts, -(-seq // cp)) if facts.tiled_mlp else 1
    if facts.tiled_mlp:
        notes.append(f"tiled_mlp: every MLP runs over {tiles} sequence tile(s) and keeps only its input; backward "
                     f"recomputes one tile at a time")
    if not packed:
        notes.append(f"no sample_packing / pad_to_sequence_len: every micro batch assumed to reach "
                     f"sequence_len ({pair * mbs}×{seq} tokens, the worst case)")
    setup = TrainSetup(
        param_bytes=C.FP32 if facts.dtype.value == "float32" else C.BF16,
        quantization=quantization,
        double_quant=double_quant,
        quantize_experts=facts.quantize_experts or remote_experts,
        experts_parametrized=facts.quantize_experts and not (remote_experts or facts.linearized_experts),
        adapter=facts.adapter.value,
        lora_r=facts.lora.r,
        lora_dropout=facts.lora.dropout,
        lora_target_modules=targets.modules if targets.moved or resolved_regex else facts.lora.target_modules,
        lora_target_linear=facts.lora.target_linear and not targets.moved,
        lora_layers=(facts.lora.layers_to_transform, facts.lora.layers_pattern) if facts.lora.layers_to_transform
        else None,
        modules_to_save=facts.lora.modules_to_save,
        lora_rank_pattern=facts.lora.rank_pattern,
        dora=facts.lora.dora,
        trainable_tokens=token_counts(facts.lora.trainable_tokens),
        unfrozen_parameters=facts.unfrozen_parameters,
        sequence_len=seq,
        micro_batch_size=mbs,
        gradient_accumulation_steps=facts.gradient_accumulation_steps.value,
        eval_sequence_len=facts.eval_sequence_len.value,
        eval_batch_size=facts.eval_batch_size.value,
        packed_or_padded=packed,
        gradient_checkpointing=facts.gradient_checkpointing.value,
        offload_checkpoints=facts.offload_checkpoints,
        attention=facts.attention_kind,
        attn_implementation=facts.attention,
        optimizer=facts.optimizer.value,
        loss=loss,
        chunked_ce_chunks=facts.chunked_ce_chunks,
        liger_rms_norm=liger and facts.liger_rms_norm,
        liger_glu=liger and facts.liger_glu,
        sharding=facts.sharding,
        head=facts.head,
        num_labels=facts.num_labels,
        pair_factor=pair,
        context_parallel=cp,
        mlp_tiles=tiles,
        lora_target_parameters=targets.parameters,
        lora_doubled=targets.doubled,
        expert_kernels=facts.expert_kernels,
        lora_kernels=kernels,
        expert_modules=remote_modeling(facts, arch),
        prequantized=pre,
        images=facts.images,
        freeze_mm_modules=facts.freeze_mm_modules,
        cut_cross_entropy=facts.loss.value is LossKernel.CCE,
        model_load=facts.model_load,
        fp32_source=fp32_source(facts, *arch.autocast_dtype_facts, quantization),
    )
    return replace(setup, assumptions=tuple(notes + _fp32_notes(setup, arch)))


def lora_kernels(facts: RunFacts, arch: Architecture) -> tuple[str, ...]:
    """Axolotl's fused LoRA kernels that replace PEFT's layers in this run ("mlp", "qkv", "o";
    ``facts.fused_lora_kernels``). None where the kernels on stop the run at model load (a reward or process reward
    model, AX234; attention Axolotl cannot rewrite, ``facts.lora_attention_rewrite_error``, AX233; layers it cannot
    find, ``facts.lora_kernel_layers_error``, AX235; a QKV kernel that gets fp32 hidden states stops at the first
    step, ``facts.lora_qkv_dtype_error``, AX237): the estimate is of the run with the rules' fixes, which turn
    those kernels off (where the attention alone fails and ``lora_mlp_kernel: true`` is written, the fixed run keeps
    the MLP kernel and needs less than estimated). A written MLP kernel alone on such a model is counted, unless its
    input is fp32 (``facts.lora_kernel_dtype_error``, AX243), whose fix turns it off."""
    kernels = fused_lora_kernels(facts, arch.model_type)
    fp32_error = lora_kernel_dtype_error(facts, *arch.autocast_dtype_facts)
    stops = (lora_attention_rewrite_error(facts, arch.model_type) or lora_kernel_layers_error(facts, arch.model_type)
             or (fp32_error and "qkv" in kernels))
    if facts.head != "lm" or stops:
        return ()
    return tuple(kernel for kernel in kernels if kernel != "mlp") if fp32_error else kernels


def _fp32_notes(setup: TrainSetup, arch: Architecture) -> list[str]:
    """What the estimate says of the weights Axolotl or PEFT keep in fp32, read from the setup that counts them:
    the embeddings (``TrainSetup.embeddings_fp32``) and the routed experts that a 4/8-bit load leaves unquantized
    (``TrainSetup.experts_fp32``; not for a checkpoint that stores them in a format of its own)."""
    notes = []
    stored = setup.prequantized is not None and not setup.prequantized.bnb
    if setup.quantization and arch.expert_params and not setup.quantize_experts and not stored:
        kept = ("then PEFT's kbit preparation, which Axolotl runs for an adapter on a 4/8-bit load, casts them to "
                "fp32: 4 bytes a weight, and their matmuls then keep fp32 activations (counted) and run through "
                "PyTorch's per-expert fallback loop instead of its bf16 grouped kernel"
                if setup.experts_fp32 else "they stay in the load dtype")
        notes.append(f"routed experts ({arch.expert_params / 1e9:.1f} B weights) are not quantized by "
                     f"{setup.quantization}: transformers 5 quantizes nn.Linear modules only; {kept}; "
                     "`quantize_moe_experts: true` stores them quantized")
    if setup.embeddings_fp32:
        notes.append("Axolotl keeps embed_tokens and lm_head in fp32 in a full fine-tune without FSDP or DeepSpeed "
                     "when attention is eager or sdpa and Cut Cross-Entropy is off: their weights, gradients and "
                     "optimizer states are fp32, and so is the residual stream between the layers; "
                     "`flash_attention: true` or the CCE plugin casts them back to the load dtype")
    if setup.mlp_fp32:
        bits = "4-bit" if setup.quantization == "nf4" else "8-bit"
        cause = ("LayerNorm: CUDA's autocast runs it in fp32" if setup.fp32_source == FP32_AUTOCAST_NORM
                 else f"{setup.fp32_source} activation: CUDA's autocast runs it in fp32")
        notes.append(f"{cause} and the {bits} layers return fp32, so the MLP, the residual stream between the layers "
                     "and its gradient are fp32 (the layer inputs kept for checkpointing at 4 bytes)"
                     + ("; an 8-bit layer returns half precision where its input has outlier columns, so this is "
                        "the larger case" if bits == "8-bit" else ""))
    return notes
