"""Activations of the images inside a vision tower and its projector, in bytes (bf16; ×2 for fp32 training).

A run feeds images when Axolotl's multimodal collator is on (``processor_type``: ``facts.ImageFeed``). Axolotl has no
setting for the images of a sample and its strategies take the first one (0.18.0 ``processing_strategies.py``), so a
micro batch of b rows (sequences: a preference pair is two) is taken to carry b images of n tokens each inside the
tower (``vision.Vision.image_tokens``): T_v = b·n (eval: the eval batch size's rows). Axolotl resizes the images of a
sample's ``images`` / ``image`` column to its ``image_size`` (or the vision_config's, which it takes when unset);
images given inside the messages keep their own size, which a tower of dynamic resolution then follows unbounded.
The image tokens the decoder reads are among its ``sequence_len``.

Autograd records an op only when one of its inputs requires grad, and pixel values never do: a tower none of whose
weights train (an adapter that reaches none of its Linears, ``unfrozen_parameters`` that name none of them,
``freeze_mm_modules``) keeps nothing for backward and runs as under eval, one layer's temporaries at a time: T_v·A_v,
during the forward, before the decoder's. A tower that trains (a full fine-tune, LoRA on its Linears, unfrozen
parameters in it) keeps per token of each layer what a decoder layer of the same computation keeps (the
``activations`` module docstring; transformers 5.24 runs the towers' attention without a causal mask, over the tokens
of one image, n), h the tower's width, hq = hkv = h (heads × head_dim where the row reads one), a heads, I its MLP
width:

  A_v = norms·(norm input, + the normalised tensor when an RMSNorm's weight trains) + qk-norm internals
        + attention (sdpa / flash: 4hq + 4hkv + 4a; eager: 6hq + 6·a·n) + MLP (gated 6I, plain 2I; QuickGELU 4I)
        + the inputs of its Linears (``activations.group_bytes``: the attention input h, the MLP input h, the down
          projection's I; the output projection reads the attention kernel's own output)

All of the tower's layers keep A_v as soon as one of them has a trained Linear (an adapter on some of its layers
only is taken to reach all: an upper bound). Stored at the start of backward: T_v·(L_v·A_v + scales + patch) + the
projector's trained inputs, 2·d_in per projector row (T_v / merge rows) for each of its weighted pieces that trains;
scales = 2h per trained learned scale (``_scale_inputs``), patch = 2·pixels for a patch embedding that is a trained
``nn.Linear``. With gradient checkpointing, a tower whose layers are ``GradientCheckpointingLayer``s
(``vision.Tower.checkpointed``) keeps their inputs T_v·L_v·2h instead of T_v·(L_v·A_v + scales) (0 when offloaded).
The tower's backward comes after the decoder's: its stored activations and one layer's gradient temporaries
T_v·(2h + MLP: gated 6I, plain 4I), + T_v·A_v recomputed under checkpointing.
"""
from __future__ import annotations

from dataclasses import dataclass

from axlint.architectures import Architecture, Linear
from axlint.architectures.vision import Vision, VisionLinear, tower_type
from axlint.facts import ImageFeed
from axlint.memory import constants as C
from axlint.memory.activations import group_bytes
from axlint.memory.freeze import mm_frozen
from axlint.memory.params import is_unfrozen, targeted
from axlint.memory.setup import TrainSetup


@dataclass(frozen=True)
class TowerWork:
    """What the images of one micro batch cost inside the tower, in bytes: ``stored`` at the start of backward,
    ``backward`` at the tower's own backward (after the decoder's), ``forward`` the frozen tower's forward
    temporaries, ``eval`` the same under eval's batch; ``note`` says how it was sized."""

    stored: float
    backward: float
    forward: float
    eval: float
    note: str


def images_vision(arch: Architecture, images: ImageFeed | None) -> Vision | None:
    """The vision tower the run feeds ``images`` to: a sized tower (not an audio encoder) and ``processor_type``
    set."""
    if images is None or arch.hears_audio:
        return None
    return arch.vision_part


def image_tokens(vision: Vision, images: ImageFeed) -> int | None:
    """n: the tokens of one image inside the tower (``Vision.image_tokens`` of the image as Axolotl resizes it);
    None when nothing bounds them."""
    return vision.image_tokens(vision.image_dims(images.image_size))


def _linear(lin: VisionLinear) -> Linear:
    return Linear(lin.name, lin.d_in, lin.d_out, lin.bias)


def _trains(setup: TrainSetup, path: str) -> bool:
    """Whether the weight of the Linear at ``path`` trains itself, as ``params.trainable`` counts it: never under an
    adapter (which trains its own weights instead: ``_adapted``) or freeze_mm_modules (``freeze.mm_frozen``); else an
    unfrozen parameter (``params.is_unfrozen``), or every weight without unfrozen_parameters."""
    if setup.adapter or (setup.freeze_mm_modules and mm_frozen(path)):
        return False
    return not setup.unfrozen_parameters or is_unfrozen(f"{path}.weight", setup.unfrozen_parameters)


def _adapted(setup: TrainSetup, path: str, lin: Linear) -> bool:
    """Whether a LoRA adapter reaches the Linear at ``path`` and trains (freeze_mm_modules freezes adapters too)."""
    return bool(setup.adapter) and not (setup.freeze_mm_modules and mm_frozen(path)) and targeted(path, lin, setup)


def layer_bytes_per_token(vision: Vision, setup: TrainSetup, span: int, trains: bool,
                          adapted: tuple[Linear, ...]) -> float:
    """A_v of one tower layer (module docstring), ``span`` the tokens of one image (eager's scores), ``trains``: its
    weights train (a full fine-tune), ``adapted``: its Linears that carry a LoRA adapter."""
    t, h, i = vision.tower, vision.size("hidden"), vision.size("intermediate")
    linears = [_linear(lin) for lin in vision.layer_linears(0)]
    *attention, out = linears[:-len(t.mlp_names)]
    mlp_in, down = linears[-len(t.mlp_names):-1], linears[-1]
    hq, a = out.d_in, vision.heads
    hkv = attention[1].d_out if len(attention) == 3 else hq
    norm = C.NORM_INPUT_BYTES[t.norm] + (C.NORM_WEIGHT_GRAD_BYTES.get(t.norm, 0) if trains else 0)
    total = t.norms_per_layer * norm * h + (norm * (hq + hkv) if t.qk_norm else 0)
    eager = setup.attention == "eager"
    total += (C.ATTN_EAGER_Q * hq + C.EAGER_SCORES_BYTES * a * span if eager
              else C.ATTN_FLASH_Q * hq + C.ATTN_FLASH_KV * hkv + C.ATTN_LSE_PER_HEAD * a)
    plain = C.MLP_PLAIN_QUICK_GELU if vision.activation == "quick_gelu" else C.MLP_PLAIN
    total += (C.MLP_GATED if t.mlp == "gated" else plain) * i
    groups = [(h, tuple(attention), False), (hq, (out,), not eager), (h, tuple(mlp_in), False), (i, (down,), False)]
    total += sum(group_bytes(width, readers, adapted, kept, setup, trains, setup.base_keeps_input) for width, readers, kept in groups)
    return total * setup.param_bytes / C.BF16


def _scale_inputs(vision: Vision, setup: TrainSetup, trains: bool) -> float:
    """Per token, over the tower: what its learned scales keep when they train, the tensor each multiplies, 2h:
    InternViT's ``layer_scales`` in every layer (lambda_1 / lambda_2), Mllama's tanh gates in every layer of its
    global stack (gate_attn / gate_ffn); 0 when the tower's weights do not train (then only the scale is kept)."""
    t = vision.tower
    if not trains:
        return 0.0
    gates = t.global_stack[2] * vision.size(t.global_stack[1]) if t.global_stack else 0
    return (t.layer_scales * vision.layers + gates) * C.LINEAR_INPUT_BYTES * vision.size("hidden") \
        * setup.param_bytes / C.BF16


def _backward_temp_bytes_per_token(vision: Vision, setup: TrainSetup) -> float:
    """One tower layer's gradient temporaries: output grad 2h + MLP gated 6I / plain 4I."""
    mlp = C.BACKWARD_MLP_GATED if vision.tower.mlp == "gated" else C.BACKWARD_MLP_PLAIN
    return (C.BACKWARD_OUTPUT_GRAD_BYTES * vision.size("hidden")
            + mlp * vision.size("intermediate")) * setup.param_bytes / C.BF16 if vision.layers else 0.0


def tower_work(arch: Architecture, setup: TrainSetup) -> TowerWork | None:
    """The tower's share of the run's memory when it is fed images whose tokens are bounded (module docstring);
    None without images, or when ``image_tokens`` is None (``facts.feeds_images`` then leaves the verdict unknown)."""
    vision = images_vision(arch, setup.images)
    n = image_tokens(vision, setup.images) if vision is not None and setup.images is not None else None
    if vision is None or n is None:
        return None
    tokens, eval_tokens = setup.pair_factor * setup.micro_batch_size * n, setup.eval_batch_size * n
    layer_paths = [(lin.path, _linear(lin)) for lin in vision.layer_linears(0)] if vision.layers else []
    trains = any(_trains(setup, path) for path, _ in layer_paths)
    adapted = tuple(lin for path, lin in layer_paths if _adapted(setup, path, lin))
    keeps = trains or bool(adapted)
    layers = vision.layers + (vision.size(vision.tower.global_stack[1]) if vision.tower.global_stack else 0)
    a_v = layer_bytes_per_token(vision, setup, n, trains, adapted) if vision.layers else 0.0
    frozen = layer_bytes_per_token(vision, setup, n, False, ()) if vision.layers else 0.0
    scale = setup.param_bytes / C.BF16
    patch = vision.patch_linear_inputs
    patch_path = f"{vision.tower_path}.{vision.tower.patch_linear}"
    outside = C.LINEAR_INPUT_BYTES * patch * scale if patch and _weight_trains(setup, patch_path, patch, True) else 0.0
    rows = tokens / vision.merge_factor
    projector = sum(C.LINEAR_INPUT_BYTES * d_in * scale for path, d_in, linear in vision.projector_inputs()
                    if _weight_trains(setup, path, d_in, linear))
    checkpointed = setup.gradient_checkpointing and vision.tower.checkpointed
    if not keeps:
        kept = 0.0
    elif checkpointed:
        width = C.CHECKPOINT_BYTES * vision.size("hidden") * scale
        kept = 0.0 if setup.offload_checkpoints else tokens * layers * width
    else:
        kept = tokens * (layers * a_v + _scale_inputs(vision, setup, trains))
    stored = kept + tokens * outside + rows * projector
    backward = stored + (tokens * (_backward_temp_bytes_per_token(vision, setup) + (a_v if checkpointed else 0.0))
                         if keeps else 0.0)
    how = (f"keeps its layers' {'inputs (gradient checkpointing)' if checkpointed else 'activations'} for backward"
           if keeps else "is frozen: it keeps nothing for backward, one layer's forward temporaries at a time")
    note = (f"images: 1 per micro-batch row (Axolotl has no setting for more), {n} tokens each inside the "
            f"{tower_type(vision.config)} tower ({_resolution_note(vision, setup)}); the tower {how}")
    return TowerWork(stored=stored, backward=backward, forward=tokens * frozen, eval=eval_tokens * frozen, note=note)


def _weight_trains(setup: TrainSetup, path: str, d_in: int, linear: bool) -> bool:
    """Whether the weight at ``path`` (a patch Linear's, a projector piece's) trains, itself or, for an ``nn.Linear``
    (``linear``; PEFT adapts no bare matrix or convolution here), through an adapter."""
    return _trains(setup, path) or (linear and _adapted(setup, path, Linear(path.rsplit(".", 1)[-1], d_in, 0, False)))


def _resolution_note(vision: Vision, setup: TrainSetup) -> str:
    """How the image became its tokens (``Vision.image_tokens``), in the user's words."""
    assert setup.images is not None
    kind, dims = vision.tower.resolution, vision.image_dims(setup.images.image_size)
    side = f"{vision.size('image')} x {vision.size('image')}" if "image" in vision.tower.sizes else ""
    if kind == "square":
        return f"the processor resizes every image to {side}"
    if kind == "tiles":
        return f"the processor pads every image to {vision.size('tiles')} tiles of {side}"
    if kind == "soft_tokens":
        return "at most config.json's vision_soft_tokens_per_image, pooled from their patches"
    assert dims is not None
    if kind == "longest_edge" and setup.images.image_size is None:
        return f"images at most {side} (the processor's longest edge, taken to be vision_config's image_size)"
    source = "Axolotl's image_size" if setup.images.image_size is not None else "vision_config's image_size, which " \
                                                                               "Axolotl takes for it"
    return (f"images of {dims[0]} x {dims[1]} ({source}: Axolotl resizes the images of a sample's images / image "
            f"column to it; images inside the messages keep their own size, which the estimate does not bound)")
