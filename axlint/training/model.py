"""Build the HF causal LM for a TrainSpec with random weights (no download). Imports torch lazily."""
from __future__ import annotations

import importlib.util
from typing import Any, Mapping

from axlint.facts import embedding_layers
from axlint.training.spec import TrainSpec, cpu_attention


def hf_config(model_type: str, config: Mapping[str, Any]) -> Any:
    """`transformers.AutoConfig.for_model(model_type, **config)` without the keys that name the model type."""
    from transformers import AutoConfig

    fields = {k: v for k, v in config.items() if k not in ("model_type", "architectures", "transformers_version")}
    return AutoConfig.for_model(model_type, **fields)


def model_class(model_type: str) -> Any:
    """The auto class Axolotl loads `model_type` with. Axolotl marks a run multimodal when transformers maps the
    config's model_type for image-text-to-text (Axolotl ``utils/config/__init__.py``, ``is_multimodal``, from
    ``loaders/constants.py`` ``MULTIMODAL_AUTO_MODEL_MAPPING``, which adds Voxtral's class, the one transformers maps
    for speech-to-text) and then loads that class, the vision or audio tower included, even for text-only data
    (``loaders/model.py``, ``_set_auto_model_loader``); any other model_type loads with ``AutoModelForCausalLM``.
    The difference shows where the causal-LM mapping names a text-only class: Qwen3.5's ``qwen3_5`` maps to
    ``Qwen3_5ForCausalLM`` there."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    if model_type == "voxtral":
        return transformers.AutoModelForSpeechSeq2Seq
    if model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


def preload(model_type: str, config: Mapping[str, Any]) -> None:
    """Import the model's modeling code and torch._dynamo now: under `deepspeed.zero.Init` (which patches tensor
    constructors) these imports fail."""
    import torch._dynamo  # noqa: F401

    model_class(model_type)._model_mapping[type(hf_config(model_type, config))]


def effective_attention(spec: TrainSpec, on_cuda: bool) -> tuple[str, str | None]:
    """The attention implementation to run and a note when it differs from the configured one."""
    wanted = spec.attn_implementation
    if not on_cuda:
        impl = cpu_attention(wanted)
        if impl != wanted:
            return impl, f"attn_implementation {wanted} is not available on CPU; ran {impl} instead"
        return impl, None
    if wanted.startswith("flash_attention") and importlib.util.find_spec("flash_attn") is None:
        return "sdpa", (f"attn_implementation {wanted} needs the flash-attn package, which is not installed; ran sdpa "
                        "(PyTorch's own flash kernel keeps the same per-token memory)")
    return wanted, None


def build_model(model_type: str, config: Mapping[str, Any], spec: TrainSpec, *, attn: str,
                device: Any = None) -> Any:
    """A randomly initialised model of the class Axolotl loads (``model_class``) in the spec's dtype, created on
    `device` (default: where torch creates tensors; a GPU initialises an 8B model in seconds, a shared CPU took
    minutes)."""
    import contextlib

    import torch

    cfg = hf_config(model_type, config)
    cfg.use_cache = False
    with torch.device(device) if device is not None else contextlib.nullcontext():
        return model_class(model_type).from_config(cfg, dtype=getattr(torch, spec.dtype), attn_implementation=attn)


def upcast_embeddings(model: Any, model_type: str) -> None:
    """Cast the norms (every module with "norm" in its name) and every module whose name contains an embedding name
    (and has a weight) to fp32, as Axolotl's loader does for `RunFacts.embeddings_fp32`. A tied output embedding
    shares the parameter and follows it."""
    import torch

    names = embedding_layers(model_type)
    for name, module in model.named_modules():
        if "norm" in name or (any(n in name for n in names) and hasattr(module, "weight")):
            module.to(torch.float32)


def upcast_unquantized(model: Any) -> None:
    """Cast to fp32 what a 4/8-bit load leaves in half precision and PEFT's ``prepare_model_for_kbit_training`` turns
    fp32 for `RunFacts.experts_fp32`: the routed experts (transformers 5's 3-D expert weights, the parameters of three
    or more dimensions) and the weights of the Linears the load does not convert, whose class is a subclass of
    ``nn.Linear`` (``memory.facts.BNB_SKIPPED_LINEARS``: Falcon's ``FalconLinear``). It casts the routers and biases
    too, whose size is negligible; Axolotl casts the norms and embeddings back."""
    import torch

    from axlint.memory.facts import BNB_SKIPPED_LINEARS

    half = (torch.bfloat16, torch.float16)
    skipped = set(BNB_SKIPPED_LINEARS.values())
    for param in model.parameters():
        if param.dim() >= 3 and param.dtype in half:
            param.data = param.data.to(torch.float32)
    for module in model.modules():
        if type(module).__name__ in skipped and module.weight.dtype in half:
            module.weight.data = module.weight.data.to(torch.float32)


def prepare_for_training(model: Any, spec: TrainSpec, model_type: str = "") -> Any:
    """Embeddings upcast (when Axolotl leaves them fp32), experts and unconverted Linears upcast (PEFT's kbit
    preparation), LoRA adapters (when configured), gradient checkpointing, train mode — outside `zero.Init`, as
    Axolotl does."""
    if spec.embeddings_fp32:
        upcast_embeddings(model, model_type)
    if spec.experts_fp32:
        upcast_unquantized(model)
    if spec.adapter in ("lora", "qlora"):
        model = apply_lora(model, spec)
    if spec.gradient_checkpointing:
        enable_checkpointing(model, spec.gradient_checkpointing_kwargs)
        if spec.adapter and spec.gradient_checkpointing_kwargs.get("use_reentrant", True):
            model.enable_input_require_grads()
    model.train()
    return model


def enable_checkpointing(model: Any, kwargs: dict[str, Any]) -> None:
    """Per-layer activation checkpointing (`activation_checkpointing_enable` in transformers ≥ 5.23, else the old name)."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def apply_lora(model: Any, spec: TrainSpec) -> Any:
    """Wrap `model` with PEFT LoRA adapters as Axolotl configures them."""
    from peft import LoraConfig, get_peft_model

    parameters = {"target_parameters": spec.lora_target_parameters} if spec.lora_target_parameters else {}
    layers = {"layers_to_transform": spec.lora_layers_to_transform,
              "layers_pattern": spec.lora_layers_pattern or None} if spec.lora_layers_to_transform else {}
    tokens = {"trainable_token_indices": spec.lora_trainable_tokens} if spec.lora_trainable_tokens else {}
    lora = LoraConfig(r=spec.lora_r, lora_alpha=spec.lora_alpha, lora_dropout=spec.lora_dropout,
                      target_modules=spec.lora_target_modules, task_type="CAUSAL_LM", bias="none",
                      modules_to_save=spec.lora_modules_to_save or None, rank_pattern=dict(spec.lora_rank_pattern),
                      alpha_pattern=dict(spec.lora_alpha_pattern), use_dora=spec.lora_use_dora, **parameters,
                      **layers, **tokens)  # PEFT >= 0.17
    return get_peft_model(model, lora)


def unwrapped(model: Any) -> Any:
    """The transformers model under PEFT's wrappers (the model itself when it has none)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if get_base is not None else model


def count_parameters(model: Any) -> tuple[int, int]:
    """(all, trainable) parameter counts; ZeRO-3 partitioned parameters report their full `ds_numel`."""
    total = trainable = 0
    for p in model.parameters():
        n = int(getattr(p, "ds_numel", p.numel()))
        total += n
        trainable += n if p.requires_grad else 0
    return total, trainable
