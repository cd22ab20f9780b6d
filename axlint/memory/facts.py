"""The memory facts of one run: the analytic per-GPU estimate on the run's hardware and what the solver says about
it, computed once per run (`TrainingRun.memory`) and read by the memory rules and by `axlint estimate` alike.

A claim about an OOM needs exact token counts (sample packing or padding to `sequence_len`) and a run that the
model covers (`unknown_parts`), or of which it leaves out only work on top of the estimate (`left_out`: a lower
bound, for which no fix is sized); the estimator and the solver are imported on first use only.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Mapping

from axlint.architectures.families import FAMILIES
from axlint.architectures.mixers import MIXER_UNSIZED
from axlint.architectures.vision import tower_type
from axlint.facts import (
    LossKernel,
    RunFacts,
    Sharding,
    ShardingKind,
    image_feed,
    loss_kernel,
    token_counts,
    token_indices,
)
from axlint.mesh import PARALLEL_KEYS
from axlint.lax import is_int, lax_bool
from axlint.memory.constants import GIB

if TYPE_CHECKING:
    from axlint.architectures import Architecture
    from axlint.hardware import Hardware
    from axlint.memory.estimate import MemoryEstimate
    from axlint.memory.knobs import Knob, Saver
    from axlint.memory.prequantized import Prequantized
    from axlint.memory.solver import ScaleOut, Suggestion
    from axlint.run import TrainingRun

NOT_MODELLED_FLAGS = {"layer_offloading": "keeps the frozen layers on the CPU"}
"""Settings the estimate does not model; it would overstate the memory, so the memory rules stand aside (MEM010).
Context parallelism (tokens per GPU), expert parallelism (experts per GPU), the FSDP / HSDP mesh axes
(``axlint.facts.Mesh``) and tiled MLPs (``activations.tiled``) are modelled."""
LOWER_BOUND_KEYS = ("rl", "qat")
"""A reference model, paired sequences (preference / RL trainers) or fake-quantized copies (QAT) come on top of
the estimate: it is a lower bound, good for an OOM claim, not for advice to drop a memory saver (PERF)."""


@dataclass
class MemoryFacts:
    """The estimate of one run and what the solver says about it (each search on first use). The solver starts
    from ``estimate`` unless it was made with ``expandable_segments`` (the solver's searches assume they are off)."""

    config: Mapping[str, Any]
    run: RunFacts
    arch: "Architecture"
    hw: "Hardware"
    estimate: "MemoryEstimate"
    expandable_segments: bool = False

    @cached_property
    def unknown(self) -> dict[str, str]:
        """``unknown_parts`` of this run, read once (every memory rule asks)."""
        return unknown_parts(self)

    @cached_property
    def lower_bound(self) -> bool:
        """Everything unknown is work left out on top of the estimate (``left_out``): the run needs at least this."""
        return bool(self.unknown) and self.unknown.keys() <= left_out(self.config, self.arch).keys()

    @property
    def coverage(self) -> str:
        """How far the estimate covers the run: "full", "lower bound" (it leaves out only work that adds to it:
        an OOM stands, a fit does not) or "partial" (it misses parts either way: neither stands)."""
        return "full" if not self.unknown else "lower bound" if self.lower_bound else "partial"

    def verdict(self, fits: bool) -> str:
        """"fits", "does_not_fit" or "unknown": what an estimate that ``fits`` (or not) says of the run, as far as
        it covers it (``coverage``)."""
        if self.coverage == "full" or (self.coverage == "lower bound" and not fits):
            return "fits" if fits else "does_not_fit"
        return "unknown"

    @property
    def _base(self) -> "MemoryEstimate | None":
        """The estimate the solver starts from: the run's own, when made as the solver makes its estimates."""
        return None if self.expandable_segments else self.estimate

    @property
    def evaluating(self) -> bool:
        return self.run.evaluates

    @property
    def capacity(self) -> float:
        return self.hw.memory_gib * GIB

    @property
    def exact_tokens(self) -> bool:
        """Every micro batch holds micro_batch_size × sequence_len tokens (packed or padded), not at most that."""
        return self.estimate.setup.packed_or_padded

    @property
    def eval_exact_tokens(self) -> bool:
        return self.exact_tokens and (self.run.eval_sample_packing or self.run.pad_to_sequence_len.value)

    @property
    def train_fits(self) -> bool:
        return self.estimate.fits

    @property
    def load_oom(self) -> bool:
        """Loading the model alone is over the GPU (``memory.loading``): no sample length changes that."""
        from axlint.memory.loading import LOAD_PHASE

        return self.estimate.phase == LOAD_PHASE and not self.estimate.fits

    @property
    def eval_fits(self) -> bool:
        return not self.evaluating or self.estimate.eval_fits

    @property
    def peak(self) -> float:
        """The memory that counts (``MemoryEstimate.required``): training, or eval when the run evaluates and eval
        needs more."""
        e = self.estimate
        return max(e.required, e.eval_required) if self.evaluating else e.required

    @cached_property
    def suggestions(self) -> list["Suggestion"]:
        from axlint.memory.solver import suggest

        return suggest(self.run, self.arch, self.hw, base=self._base)

    @cached_property
    def scale_out(self) -> "ScaleOut | None":
        """What fits on more GPUs of this kind, asked only when nothing fits on these."""
        from axlint.memory.solver import scale_out

        return None if self.suggestions else scale_out(self.run, self.arch, self.hw)

    @cached_property
    def knob_fixes(self) -> dict["Knob", "Suggestion"]:
        from axlint.memory.solver import single_knob_fixes

        return single_knob_fixes(self.run, self.arch, self.hw, base=self._base)

    @cached_property
    def relaxations(self) -> dict["Saver", "Suggestion"]:
        from axlint.memory.solver import relax

        return relax(self.run, self.arch, self.hw, base=self._base)


def not_modelled(config: Mapping[str, Any], sharding: "Sharding", arch: "Architecture") -> dict[str, str]:
    """The settings of the run that the memory model does not cover: `key: value` -> what it does. Tensor
    parallelism of a model outside ``tensor_parallel.TP_FAMILIES`` or under DeepSpeed (AutoTP), expert
    parallelism under DeepSpeed (which Axolotl's expert-parallel plugin does not compose with), audio fed to an
    audio tower (``feeds_audio``) and images fed to a tower whose work on them is not sized (``feeds_images``) are
    among them."""
    from axlint.memory import tensor_parallel

    found: dict[str, str] = left_out(config, arch)
    why = tensor_parallel.not_modelled(arch, sharding)
    if why:
        found[f"tensor_parallel_size: {sharding.mesh.tp}"] = why
    if sharding.mesh.ep > 1 and sharding.kind is ShardingKind.DEEPSPEED:
        found[f"expert_parallel_size: {sharding.mesh.ep}"] = "splits the experts over GPUs, beside DeepSpeed"
    return found | rank_pattern(config, arch) | {f"{k}: true": why for k, why in NOT_MODELLED_FLAGS.items()
                                            if config.get(k) is True}


def unwrapped_lora_settings(config: Mapping[str, Any]) -> list[str]:
    """The keys of the LoRA settings that axlint's own wrap of a model for ``estimate --simulate`` and ``validate``
    (``training.model.apply_lora``) does not hand PEFT: PEFT's layer replication (it hands it DoRA and trainable
    tokens, ``TrainSpec``): a run of it would leave them out."""
    return ["peft_layer_replication"] if _replicated_ranges(config) else []


def _replicated_ranges(config: Mapping[str, Any]) -> list | None:
    """``peft_layer_replication`` as written, beside a LoRA adapter; None where it is not."""
    ranges = config.get("peft_layer_replication")
    return ranges if config.get("adapter") in ("lora", "qlora") and isinstance(ranges, list) and ranges else None


def rank_pattern(config: Mapping[str, Any], arch: "Architecture") -> dict[str, str]:
    """`lora_rank_pattern` -> why, for a LoRA on a mixture-of-experts model that gives some modules other ranks: the
    estimate follows the keys on the modules PEFT wraps as Linears (``params.adapter_rank``, PEFT 0.19.1
    ``rank_pattern``: the first key that ``re.match``es the end of a module's path sets its rank), but sizes the
    adapters on the routed experts' 3-D weights and the router (``params.target_parameter_lora_params``) at `lora_r`,
    and PEFT's own conversion of expert targets writes rank keys of its own."""
    if config.get("adapter") in ("lora", "qlora") and isinstance(config.get("lora_rank_pattern"), Mapping) \
            and config["lora_rank_pattern"] and arch.num_experts:
        return {"lora_rank_pattern": "gives the modules it matches other LoRA ranks, and the estimate sizes the "
                                     "adapters on the routed experts and the router at `lora_r`"}
    return {}


def left_out(config: Mapping[str, Any], arch: "Architecture") -> dict[str, str]:
    """Work of the run that the estimate leaves out and that only adds to it: audio fed to an audio tower
    (``feeds_audio``), images fed to a tower whose work on them is not sized (``feeds_images``), a 4/8-bit load that
    quantizes nothing (``unquantized_load``). When nothing else is unknown the estimate is a lower bound
    (``MemoryFacts.lower_bound``): a predicted OOM stands, but neither a fix (``oom_fix_facts``) nor a fit."""
    return (feeds_audio(config, arch) | feeds_images(config, arch) | unquantized_load(config, arch)
            | lora_variants(config, arch))


FUSED_LOSS_NAMES = {LossKernel.CCE: "Cut Cross-Entropy", LossKernel.LIGER_FLCE: "Liger's fused linear cross-entropy"}
"""The losses that take the output projection's weight into their own kernel instead of calling the layer."""


def lora_variants(config: Mapping[str, Any], arch: "Architecture") -> dict[str, str]:
    """`key: value` (or the key) -> why, for the LoRA settings whose work only adds to what the estimate counts:
    PEFT's layer replication (``peft_layer_replication``: the model gets the listed ranges of layers stacked again,
    sharing their base weights, each with adapters and activations of its own), and trainable tokens
    (``peft_trainable_token_indices``) on a layer that is neither the input embedding nor the output projection, or
    on the output projection of a run whose fused loss (Cut Cross-Entropy, Liger's fused linear cross-entropy) reads
    its weight itself. Axolotl 0.18.0 ``loaders/adapter.py`` hands them to ``LoraConfig``. Counted: DoRA
    (``peft_use_dora``: its magnitudes, ``params.adapter_params``, what it keeps and its backward's growth,
    ``activations.dora_output_bytes`` and ``dora_kernel_backward_bytes``, and its weight norm's transient,
    ``activations.dora_norm_bytes``) and trainable tokens on the embedding and the output projection (their rows,
    ``params.trainable_token_params``, and full copies of the weight, ``activations.token_copy_bytes``)."""
    if config.get("adapter") not in ("lora", "qlora"):
        return {}
    from axlint.memory.params import token_layers

    found = {}
    tokens = token_indices(config.get("peft_trainable_token_indices"))
    if tokens:
        wrapped = token_layers(arch, token_counts(tokens))
        fused = FUSED_LOSS_NAMES.get(loss_kernel(config))
        if wrapped is None:
            found["peft_trainable_token_indices"] = (
                "trains the listed rows of a layer that is neither the input embedding nor the output projection, "
                "which the estimate does not size")
        elif "output" in wrapped and fused:
            found["peft_trainable_token_indices"] = (
                f"trains rows of the output projection, whose weight {fused} reads itself; the copy of it that "
                "PEFT's layer makes at each forward is not counted")
    ranges = _replicated_ranges(config)
    if ranges:
        found[f"peft_layer_replication: {ranges}"] = (
            "stacks the listed ranges of layers again, on shared base weights, each copy with its own adapters and "
            "activations, which are not counted")
    return found


BNB_SKIPPED_LINEARS = {**{t: f.linear_subclass for t, f in FAMILIES.items() if f.linear_subclass},
                       "deepseek_v4": "DeepseekV4GroupedLinear"}
"""Decoder model types whose layers' Linears are a subclass of ``nn.Linear``, which transformers 5.5 and later
(Axolotl 0.16.1 and later) leave out of a bitsandbytes 4/8-bit load: ``replace_with_bnb_linear`` converts
``type(module) is nn.Linear`` only, where 5.4 matched subclasses too (``integrations/bitsandbytes.py``). All of
Falcon's are ``FalconLinear`` (``Family.linear_subclass``); DeepSeek-V4's grouped projections are
``DeepseekV4GroupedLinear``. Checked against every catalog family in tests/test_memory_facts_quantization.py, and
on a 4/8-bit load of a small Falcon in tests/test_oracle_quantized_load.py."""


def unquantized_load(config: Mapping[str, Any], arch: "Architecture") -> dict[str, str]:
    """`load_in_4bit: true` (or 8-bit) -> why, for a model with Linears a bitsandbytes load does not convert
    (``BNB_SKIPPED_LINEARS``). Falcon's weights are counted as they load (16 bits, fp32 after PEFT's k-bit
    preparation: ``states.weight_bytes``), but not the half-precision copy of each fp32 weight that autocast makes
    for its matmul and keeps for the backward pass, nor the input copies PEFT's plain LoRA layer keeps on such a
    Linear; DeepSeek-V4's grouped projections are counted quantized. Either way the estimate is a lower bound."""
    linear = BNB_SKIPPED_LINEARS.get(arch.decoder_type)
    key = next((k for k in ("load_in_4bit", "load_in_8bit") if config.get(k) is True), None)
    if linear is None or key is None:
        return {}
    return {f"{key}: true": f"leaves this model's {linear} layers unquantized: {linear} is a subclass of nn.Linear, "
                            "which transformers 5.5 and later leave out of a bitsandbytes load, so their weights stay "
                            "in 16 bits, fp32 after PEFT's k-bit preparation, which Axolotl runs for a LoRA on one "
                            "GPU or under DDP, and the copies the forward makes of them are not counted"}


def feeds_audio(config: Mapping[str, Any], arch: "Architecture") -> dict[str, str]:
    """`processor_type: X` -> why, when the run feeds audio to the model's audio tower. Axolotl hands the batches to
    its multimodal collator, which carries the audio, only when ``processor_type`` is set (0.18.0
    ``core/builders/causal.py``) and it truncates nothing to ``sequence_len`` (``utils/collators/mm_chat.py``): the
    audio tokens of a sample (transformers 5.24 Voxtral: one per 4 encoder frames, 375 per 30-second chunk) and the
    encoder's work over its chunks follow the clip lengths of the data set, which the config does not give. Without
    ``processor_type`` the data is text and the tower idles (its weights are counted all the same)."""
    kind = config.get("processor_type")
    if not kind or not arch.hears_audio:
        return {}
    return {f"processor_type: {kind}": "feeds audio to the audio tower: the audio tokens per sample and the tower's "
                                       "work follow the clip lengths of the data set, which the config does not give"}


def feeds_images(config: Mapping[str, Any], arch: "Architecture") -> dict[str, str]:
    """`processor_type: X` -> why, when the run hands images to a vision tower whose work on them the memory model
    does not size: what its row says of it (``vision.Tower.image_work``: Gemma 3n's convolutional MobileNet-V5), or
    tokens per image that nothing bounds (``vision.Vision.image_tokens`` is None: a processor's own tiling, or a
    dynamic resolution without an image size), which the user can bound with Axolotl's ``image_size`` where the
    tower reads the image at its own size. As with audio (``feeds_audio``), Axolotl's multimodal collator carries the
    images only when ``processor_type`` is set."""
    from axlint.memory.tower import image_tokens, images_vision

    feed = image_feed(config)
    part = images_vision(arch, feed)
    if feed is None or part is None:
        return {}
    key, tower = f"processor_type: {feed.processor_type}", tower_type(arch.raw_config)
    if part.tower.image_work:
        return {key: part.tower.image_work}
    if image_tokens(part, feed) is not None:
        return {}
    if part.tower.resolution in ("longest_edge", "smart_resize"):
        return {key: f"feeds images to the {tower} tower at their own resolution, which config.json does not bound: "
                     "its tokens per image, and its activations, follow the data set; set Axolotl's image_size "
                     "(e.g. image_size: 448), which resizes the images of a sample's images / image column, and "
                     "axlint sizes them"}
    if part.tower.resolution == "soft_tokens":
        return {key: f"feeds images to the {tower} tower, and config.json gives no vision_soft_tokens_per_image (nor "
                     "vision_config's num_soft_tokens) to bound its tokens per image: the tower's activations are "
                     "not sized"}
    return {key: f"feeds images to the {tower} tower, whose tokens per image follow its processor's tiling, which "
                 "config.json does not give: the tower's activations are not sized"}


def layout_problem(config: Mapping[str, Any], sharding: "Sharding") -> dict[str, str]:
    """Parallel sizes that Axolotl cannot lay out on the run's GPUs (``Sharding.mesh_problem``), on the first
    parallel key written: `key: value` -> why. There is no run to estimate until the GPU count and the sizes
    agree."""
    if not sharding.mesh_problem:
        return {}
    key = next((k for k in PARALLEL_KEYS if is_int(config.get(k)) and config[k] > 1), "base_model")
    return {f"{key}: {config.get(key)} on {sharding.world} GPUs": f"a layout Axolotl refuses: {sharding.mesh_problem}"}


def unsized_parts(arch: "Architecture", checkpoint: "Prequantized | None" = None) -> dict[str, str]:
    """Parts of the model the estimate cannot size, `base_model: id` -> which: their memory is not counted, so the
    verdict is unknown and the memory rules stand aside (not taken for a lower bound as ``left_out`` is). ``checkpoint``: the checkpoint's own quantization
    (``TrainSetup.prequantized``); one that axlint cannot size is never taken for bf16. A token mixer whose
    activations axlint does not model (``mixers.MIXER_UNSIZED``) is such a part too."""
    key = f"base_model: {arch.model_id}"
    if checkpoint is not None and checkpoint.unsized:
        return {key: checkpoint.unsized}
    if arch.unsized_decoder:
        return {key: f"a {arch.unsized_decoder} decoder, whose layer layout axlint does not know"}
    kind = arch.unsized_vision
    if kind:
        return {key: f"a {kind} vision tower, whose layout axlint cannot size"}
    mixers = [MIXER_UNSIZED[m] for m in arch.mixer_kinds if m in MIXER_UNSIZED]
    return {key: "; ".join(mixers)} if mixers else {}


def unknown_parts(facts: MemoryFacts) -> dict[str, str]:
    """Everything that makes the verdict unknown: settings the model does not cover and parts it cannot size."""
    sharding = facts.run.sharding
    return (not_modelled(facts.config, sharding, facts.arch) | layout_problem(facts.config, sharding)
            | unsized_parts(facts.arch, facts.estimate.setup.prequantized))


def compute_facts(run: "TrainingRun", *, expandable_segments: bool = False) -> MemoryFacts | None:
    """The estimate of an Axolotl run whose architecture resolves; None otherwise."""
    if run.axolotl is None or run.arch is None:
        return None
    from axlint.memory.estimate import estimate_memory
    estimate = estimate_memory(run.facts, run.arch, run.hardware, expandable_segments=expandable_segments)
    return MemoryFacts(run.config, run.facts, run.arch, run.hardware, estimate, expandable_segments)


def memory_facts(run: "TrainingRun") -> MemoryFacts | None:
    """`compute_facts`, cached on the run (every memory rule reads it)."""
    return run.memory


def modelled_facts(run: "TrainingRun") -> MemoryFacts | None:
    """The facts when the memory rules may speak: a known architecture and no parallelism the model lacks."""
    facts = memory_facts(run)
    return facts if facts is not None and not facts.unknown else None


def oom_knob(run: "TrainingRun", knob: "Knob") -> tuple[MemoryFacts, Any] | None:
    """(facts, the solver's fix that turns only `knob`) when training is over the GPU and that knob fits it."""
    facts = oom_fix_facts(run)
    fix_ = facts.knob_fixes.get(knob) if facts is not None else None
    return (facts, fix_) if facts is not None and fix_ is not None else None


def oom_facts(run: "TrainingRun") -> MemoryFacts | None:
    """The facts when a claim about an OOM can be made: exact token counts (or a load that is over the GPU whatever
    the samples), training over the GPU, and a run the model covers or of which it leaves out only work that adds to
    the peak (``MemoryFacts.lower_bound``)."""
    facts = memory_facts(run)
    if facts is None or (facts.unknown and not facts.lower_bound):
        return None
    return facts if (facts.exact_tokens or facts.load_oom) and not facts.train_fits else None


def oom_fix_facts(run: "TrainingRun") -> MemoryFacts | None:
    """``oom_facts`` when a fix can be sized: not a lower bound (``MemoryFacts.lower_bound``), of which a fix sized
    without the work left out may not fit."""
    facts = oom_facts(run)
    return facts if facts is not None and not facts.lower_bound else None
