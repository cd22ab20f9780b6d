"""Compose the per-component functions into the per-GPU peak of a training run.

Phase model (HF blog "Visualize and understand GPU memory in PyTorch"):

  resident   = W·w_share + (O + M)·o_share + buffers
  P_fwd_bwd  = max(start of backward, end of backward):
    start    = resident + G_acc + stored activations + max(logits, first layer backward + E_tied)
               (LoRA on parameters adds its merged weight copies W + BA: kept per layer without checkpointing,
               one layer's copy, gradient and fp32 gradient in a layer's backward: ``merged_weight_bytes``; a
               bitsandbytes 4/8-bit base adds the bf16 copy of its largest Linear that backward dequantizes:
               ``dequantized_weight_bytes``; with checkpointing, DoRA's weight-norm transient in a layer's recompute,
               ``dora_norm_bytes``, where larger)
               the loss buffers (fp32 log-softmax, its gradient and the nll gradient) are freed before the last
               layer's backward starts, so they and that layer's backward (its gradient temporaries, and with
               checkpointing its recomputed activations) never coexist; G_acc = the gradient share when
               gradient_accumulation_steps > 1 (grads of the previous micro batches stay allocated) or under
               DeepSpeed ZeRO-3 (its gradient partition buffer lives for the whole run: ``persistent_gradients``),
               else 0 (set_to_none: no grads exist before the lm_head backward); the gradient share is 0 where
               the gradients follow an offloaded optimizer to the CPU (sharding.gradients_offloaded); E_tied = a
               tied, trained embedding's gradient E: lm_head's contribution waits in the autograd engine's buffer
               from lm_head's backward to the embedding's (measured on an H200: Llama-3.2-1B full fine-tune with
               Liger, a second 0.49 GiB lm_head gradient through the layers' backward)
    end      = resident + G·g_share + the larger of                    (all other activations are freed)
               layer 0's backward (its activations + gradient temporaries), less the embedding gradient E when
               the embedding trains untied (E does not exist yet), and
               the embedding backward of a tied trained embedding: 2E (lm_head's E waits in the autograd buffer,
               the embedding's dense E and their sum coexist; untied: nothing beyond G)
  images     (a run with processor_type, ``memory.tower``): a trained vision tower's stored activations join the
             start of backward and stay until the tower's own backward, after layer 0's (the end's larger of the two);
             a frozen tower's forward temporaries are a third moment, resident + G_acc + T_v·A_v, before the decoder's
             forward; eval takes the larger of the decoder's and the tower's forward temporaries
  DoRA       in PEFT's layers, a forward moment: resident + G_acc + stored activations + its weight-norm transient
             (``dora_norm_bytes``; all the stored activations, though the last layer's are not all made yet)
  P_step     = resident + G·g_share + step temporaries       (foreach optimizer copy, DeepSpeed fp32 grads);
               FSDP's gathered params are resharded by then (sharding.step_buffer_bytes)
  P_eval     = resident + one layer's forward temporaries (+ DoRA's norm transient) + eval logits    (grads freed
               after the step)

  P_load     = the whole model (and, under FSDP, its new shards) on every GPU while FSDP or ZeRO-3 shards it, where a
               run loads it whole (``memory.loading``: a 4/8-bit load); 0 elsewhere. When it is the largest moment it
               is the peak ("model load"), reserving P_load plus the unreturnable fragmentation
               (``loading.load_slack_bytes``) or the step's reserved, whichever is larger

  peak_allocated = max(max(P_fwd_bwd, P_step) less the states of a paged optimizer, P_load) (bitsandbytes
  allocates paged states as CUDA managed memory, outside PyTorch's allocator, and pages them out to CPU RAM under
  pressure); reserved = the largest over the moments of their allocated × (1 + slack), + the loss's cached-unreused
  block at the loss moment (overhead.loss_unreused_bytes): the cache keeps what an earlier moment reserved, so a
  later moment with more allocated and no such block does not lower it; device = reserved + context + paged states.
  required = allocated × (1 + fragmentation) + context (overhead.resident_bytes): what must be resident, since
  the caching allocator frees its cache and retries before it raises. The run fits when required ≤ GPU memory.
The reported components are those of the moment that sets the peak; they sum to peak_device_gib.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from axlint.architectures import Architecture
from axlint.architectures.mixers import MIXER_NOTES
from axlint.facts import RunFacts, ShardingKind
from axlint.hardware import Hardware
from axlint.memory import constants as C
from axlint.memory.activations import (
    dequantized_weight_bytes,
    dora_norm_bytes,
    eval_activation_bytes,
    layer_backward_bytes,
    merged_weight_bytes,
    per_layer_bytes_per_token,
    stored_activation_bytes,
    token_copy_bytes,
)
from axlint.memory.loading import LOAD_PHASE, load_note, load_peak_bytes, load_slack_bytes
from axlint.memory.logits import logits_bytes
from axlint.memory.overhead import (
    allocator_slack_bytes,
    context_bytes,
    loss_unreused_bytes,
    resident_bytes,
)
from axlint.memory.params import idle_split, trainable
from axlint.memory.setup import TrainSetup, read_setup
from axlint.memory.tensor_parallel import rank_of
from axlint.memory.tower import TowerWork, tower_work
from axlint.memory.sharding import (
    buffer_bytes,
    cpu_offload_bytes,
    gradient_share,
    mixed_share,
    optimizer_share,
    replicated_quant_state_bytes,
    step_buffer_bytes,
    step_temp_bytes,
    weight_share,
)
from axlint.memory.states import (
    UNKNOWN_OPTIMIZER,
    embedding_gradient_bytes,
    expert_trainable_fraction,
    expert_weight_fraction,
    gradient_bytes,
    master_weight_bytes,
    optimizer_spec,
    optimizer_state_bytes,
    optimizer_temp_bytes,
    weight_bytes,
)

COMPONENTS = ("weights", "gradients", "optimizer_states", "master_weights", "activations", "logits",
              "sharding_buffers", "cuda_context", "allocator_slack")


def _gib(value: float) -> float:
    return round(value / C.GIB, 2)


@dataclass(frozen=True)
class MemoryEstimate:
    """Per-GPU memory of one run, in bytes; ``to_json`` renders the DESIGN.md contract in GiB."""

    arch: Architecture
    hw: Hardware
    setup: TrainSetup
    components: Mapping[str, float]
    phase: str                      # "forward-backward" | "optimizer-step" | "model load" (loading.LOAD_PHASE)
    phases: Mapping[str, float]     # allocated bytes of each phase, eval included
    peak_allocated: float
    peak_reserved: float
    peak_device: float
    eval_peak_device: float
    required: float
    eval_required: float
    cpu_offload: float
    trainable_params: int
    assumptions: tuple[str, ...] = field(default=())

    @property
    def capacity(self) -> float:
        return self.hw.memory_gib * C.GIB

    @property
    def fits(self) -> bool:
        """Training fits: what must be resident (``required``) is within the GPU's memory."""
        return self.required <= self.capacity

    @property
    def eval_fits(self) -> bool:
        return self.eval_required <= self.capacity

    @property
    def headroom(self) -> float:
        return self.capacity - self.required

    def to_json(self, config_path: str) -> dict[str, Any]:
        """The ``axlint estimate --format json`` object of DESIGN.md, with ``required_gib`` / ``eval_required_gib``
        (what decides ``fits``) added."""
        return {
            "config": str(config_path),
            "model": {"id": self.arch.model_id, "source": self.arch.source, "parameters": self.arch.total_params},
            "hardware": self.hw.to_json(),
            "assumptions": list(self.assumptions),
            "per_gpu": {
                "components_gib": {k: _gib(self.components[k]) for k in COMPONENTS},
                "peak_allocated_gib": _gib(self.peak_allocated),
                "peak_reserved_gib": _gib(self.peak_reserved),
                "peak_device_gib": _gib(self.peak_device),
                "required_gib": _gib(self.required),
            },
            "eval_peak_device_gib": _gib(self.eval_peak_device),
            "eval_required_gib": _gib(self.eval_required),
            "cpu_offload_gib": _gib(self.cpu_offload),
            "fits": self.fits,
            "headroom_gib": _gib(self.headroom),
        }


def estimate_setup(setup: TrainSetup, arch: Architecture, hw: Hardware, *,
                   expandable_segments: bool = False) -> MemoryEstimate:
    """The estimate for an already-normalised TrainSetup (the solver varies the setup and calls this). Under a
    classification head (``setup.head``) the model is the decoder with a ``score`` head in place of lm_head."""
    model = head_architecture(arch, setup)
    arch = rank_of(model, setup.sharding)
    notes = list(setup.assumptions)
    if arch is not model:
        notes.append(f"tensor_parallel_size {setup.sharding.mesh.tp}: each GPU holds 1/{setup.sharding.mesh.tp} of the "
                     "attention heads and of the MLP width, their weights, states and activations; the lm_head shard is "
                     "counted whole, and the logits are gathered whole on every GPU")
    spec = optimizer_spec(setup.optimizer)
    if spec is None:
        notes.append(f"optimizer {setup.optimizer!r} unknown: AdamW (2 states, foreach) assumed")
        spec = UNKNOWN_OPTIMIZER
    if spec.paged:
        notes.append(f"{setup.optimizer}: paged states live outside PyTorch's allocator; shown in the device peak, "
                     "not needed for the fit (bitsandbytes moves them to CPU RAM when the GPU runs short)")
    t = trainable(arch, setup)
    whole = t if arch is model else trainable(model, setup)  # the model's, all ranks together
    if t.untrained:
        notes.append(f"{t.untrained / 1e6:.1f} M adapter parameters on the quantized experts get no gradient (PEFT "
                     "0.19-0.20 trains only the last expert weight each experts module targets): counted without "
                     "gradients or optimizer states")
    idle = t.idle_adapter + t.idle_base
    if idle:
        split = idle_split(arch, setup)
        notes.append(f"{idle / 1e6:.1f} M trainable parameters of {' and '.join(split.idle_parts)} get no gradient: "
                     f"{split.why}; counted without gradients or optimizer states")
    s = setup.sharding
    w_all = weight_bytes(arch, setup, t)
    w = w_all * mixed_share(s, weight_share(s), expert_weight_fraction(arch, setup, t)) \
        + replicated_quant_state_bytes(arch, setup)
    experts = expert_trainable_fraction(arch, setup)
    g = gradient_bytes(arch, setup, t, spec) * mixed_share(s, gradient_share(s), experts)
    o_share = mixed_share(s, optimizer_share(s), experts)
    o = optimizer_state_bytes(arch, setup, t, spec) * o_share
    m = master_weight_bytes(setup, t) * o_share
    buffers = buffer_bytes(arch, setup, g)
    step_grads = g + step_temp_bytes(setup, t.trained, arch.largest_module_params)
    step_opt = o + optimizer_temp_bytes(arch, setup, t, spec) * o_share
    resident = w + buffers + m

    layers = per_layer_bytes_per_token(arch, setup)
    persistent_g = persistent_gradients(setup, g)
    g_acc = g if setup.gradient_accumulation_steps > 1 else persistent_g
    tower = tower_work(model, setup)
    dora = dora_norm_bytes(arch, setup)
    fixed = {"weights": w, "optimizer_states": o, "master_weights": m, "sharding_buffers": buffers}
    moments = [{**moment, **fixed} for moment in _backward_moments(
        arch, setup, layers, t.adapter, g, embedding_gradient_bytes(arch, setup, spec) * gradient_share(s), g_acc,
        dora, tower)]
    fwd = max(moments, key=lambda moment: sum(moment.values()))
    step = {"weights": w, "gradients": step_grads, "optimizer_states": step_opt, "master_weights": m,
            "activations": 0.0, "logits": 0.0, "sharding_buffers": step_buffer_bytes(arch, setup, buffers)}
    p_fwd, p_step = sum(fwd.values()), sum(step.values())
    phase, comps = ("forward-backward", fwd) if p_fwd >= p_step else ("optimizer-step", step)
    paged = o if spec.paged else 0.0
    allocated = max(p_fwd, p_step) - paged
    unreused = loss_unreused_bytes(arch, setup, setup.tokens)

    def reserved(moment: dict[str, float]) -> float:
        """What the caching allocator holds at ``moment``: its allocated bytes with the slack, and the loss's
        cached-unreused block while the logits are alive."""
        held = sum(moment.values()) - paged
        return held + allocator_slack_bytes(held, expandable_segments) + (unreused if moment["logits"] > 0 else 0.0)

    slack = max(map(reserved, (*moments, step))) - allocated  # the cache keeps what an earlier moment reserved
    p_load = load_peak_bytes(arch, setup, w_all)
    if p_load > allocated:  # the step's reserved stays the peak reserved when it is the larger
        slack = max(load_slack_bytes(p_load), allocated + slack - p_load)
        phase, allocated = LOAD_PHASE, p_load
        comps = dict.fromkeys(comps, 0.0) | {"weights": w_all, "sharding_buffers": p_load - w_all}
    ctx = context_bytes(s.world, s.kind)
    p_eval = resident + o - paged + persistent_g \
        + max(eval_activation_bytes(setup.eval_tokens, layers) + dora,
              tower.eval if tower else 0.0) \
        + logits_bytes(arch, setup, setup.eval_tokens, training=False)
    eval_device = p_eval + allocator_slack_bytes(p_eval, expandable_segments) + ctx + paged
    notes.append(f"peak phase: {phase}; {setup.tokens} tokens per micro batch")
    if p_load:
        notes.append(load_note(arch, setup, w_all, p_load))
    if tower:
        notes.append(tower.note)
    notes += [MIXER_NOTES[kind] for kind in arch.mixer_kinds if kind in MIXER_NOTES]
    if arch.source == "catalog":
        notes.append(catalog_note(arch.model_id))
    if hw.assumed:
        notes.append(f"hardware assumed: {hw.count}x {hw.gpu} (pass --hardware)")
    if hw.note:
        notes.append(hw.note)
    return MemoryEstimate(
        arch=model, hw=hw, setup=setup, components={**comps, "cuda_context": ctx, "allocator_slack": slack},
        phase=phase, phases={"forward-backward": p_fwd - paged, "optimizer-step": p_step - paged, "eval": p_eval,
                             LOAD_PHASE: p_load},
        peak_allocated=allocated, peak_reserved=allocated + slack, peak_device=allocated + slack + ctx + paged,
        eval_peak_device=eval_device, required=resident_bytes(allocated, ctx),
        eval_required=resident_bytes(p_eval, ctx),
        cpu_offload=cpu_offload_bytes(setup, weight_bytes(model, setup, whole),
                                      optimizer_state_bytes(model, setup, whole, spec),
                                      master_weight_bytes(setup, whole), whole.total),
        trainable_params=whole.total, assumptions=tuple(notes))


def head_architecture(arch: Architecture, setup: TrainSetup) -> Architecture:
    """The model that trains: ``arch`` as loaded for causal LM, or under the score head of a reward model
    (AutoModelForSequenceClassification: no bias) / process reward model (AutoModelForTokenClassification: bias,
    transformers 5's ``token_classification_bias`` default True)."""
    if setup.head == "lm" or arch.num_labels:
        return arch
    bias = setup.head == "token" and bool(arch.config.get("token_classification_bias", True))
    return arch.with_score_head(setup.num_labels, bias)


def catalog_note(model_id: str) -> str:
    """Which catalog entry sized the model and on what evidence (its own id, a listed alias, or only its name)."""
    from axlint.architectures.resolve import catalog_match

    found = catalog_match(model_id)
    if found and found[1] != "its own entry":
        return f"architecture from axlint's catalog: {found[1]}"
    return f"architecture from axlint's catalog ({model_id})"


def persistent_gradients(setup: TrainSetup, g: float) -> float:
    """Gradient memory allocated for the whole run, eval included. DeepSpeed ZeRO-3 allocates its gradient
    partitions once, as one flat buffer of b_ga·P/N (``grad_partitions_flat_buffer`` in ``_setup_for_real_optimizer``;
    on the CPU when the optimizer is offloaded) and never frees it [SRC DeepSpeed 0.19.8
    runtime/zero/stage3.py]. Elsewhere the gradients are set to None after each step."""
    s = setup.sharding
    return g if s.kind is ShardingKind.DEEPSPEED and s.stage == 3 and not s.offload_optimizer else 0.0


def _backward_moments(arch: Architecture, setup: TrainSetup, layers: list[float], adapter_params: int, g: float,
                      embedding_g: float, g_acc: float, dora: float,
                      tower: TowerWork | None = None) -> list[dict[str, float]]:
    """gradients / activations / logits at each moment of the forward and backward (module docstring): the loss at
    the start of backward, the first layer's backward, the end of backward and, with images, the vision tower's
    forward; ``layers``: A of every layer; ``embedding_g``: the embedding's share of
    ``g`` when it trains; ``g_acc``: the gradients already allocated when backward starts (earlier micro batches', or
    ``persistent_gradients``); ``dora``: DoRA's weight-norm transient (``dora_norm_bytes``); ``tower``: the images' work in the tower (``memory.tower``): its stored activations
    live from the start of backward to its own backward, which comes after layer 0's, and a frozen tower's forward
    temporaries before the decoder's forward."""
    tokens = setup.tokens
    merged_stored, merged_backward = merged_weight_bytes(arch, setup)
    # DoRA's norm transient comes back in a checkpointed layer's recompute, before the backward's dequantized copy
    weight_copies = merged_backward + max(dequantized_weight_bytes(arch, setup),
                                          dora if setup.gradient_checkpointing else 0.0)
    stored = stored_activation_bytes(arch, setup, tokens, layers, adapter_params) + merged_stored \
        + (tower.stored if tower else 0.0)
    head_copy, embedding_gradient = token_copy_bytes(arch, setup)
    logits = logits_bytes(arch, setup, tokens)
    first = layer_backward_bytes(arch, setup, tokens, layers, recompute=setup.gradient_checkpointing) + weight_copies
    waiting = embedding_g if arch.tie_word_embeddings else 0.0  # a tied lm_head's gradient, in the engine's buffer
    loss = {"gradients": g_acc, "activations": stored + head_copy, "logits": logits}
    first_layer = {"gradients": g_acc + waiting, "activations": stored + first, "logits": 0.0}
    last = layer_backward_bytes(arch, setup, tokens, layers, recompute=True) + weight_copies \
        + (tower.stored if tower else 0.0)
    last = max(last, tower.backward if tower else 0.0)
    if arch.tie_word_embeddings:
        end = {"gradients": g + 2 * embedding_g, "activations": 0.0, "logits": 0.0} if 2 * embedding_g > last \
            else {"gradients": g, "activations": last, "logits": 0.0}
    else:
        end = {"gradients": g - embedding_g, "activations": last, "logits": 0.0} if last > embedding_g \
            else {"gradients": g, "activations": 0.0, "logits": 0.0}
    forward = {"gradients": g_acc, "activations": tower.forward if tower else 0.0, "logits": 0.0}
    moments = [loss, first_layer, end, forward]
    if head_copy:  # trainable tokens: the output projection's backward, its copy's dense gradient beside the copy
        # and the logits' gradient
        head = 2 * head_copy + setup.param_bytes * tokens * arch.output_size
        moments.append({"gradients": g_acc, "activations": stored + head, "logits": 0.0})
    if embedding_gradient:  # trainable tokens: the embedding's backward, after every layer's
        moments.append({"gradients": g, "activations": embedding_gradient, "logits": 0.0})
    if dora:
        moments.append({"gradients": g_acc, "activations": stored + dora, "logits": 0.0})
    return moments


def estimate_memory(facts: RunFacts, arch: Architecture, hw: Hardware, *,
                    expandable_segments: bool = False) -> MemoryEstimate:
    """Per-GPU peak memory of the resolved run ``facts`` (axlint.facts) on ``hw``. ``expandable_segments``:
    PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True (see ``overhead.expandable_segments_enabled``)."""
    return estimate_setup(read_setup(facts, arch), arch, hw, expandable_segments=expandable_segments)
