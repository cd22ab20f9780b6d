"""The per-GPU peak while the model is loaded and sharded, before the first step: the moment a run under FSDP or
DeepSpeed ZeRO-3 holds the whole model on every GPU.

Where the model lands (Axolotl 0.18.0 / main ``loaders/model.py``: ``_set_device_map_config``, ``_build_model``,
``_apply_post_lora_load_setup``):
  - QLoRA under FSDP loads with ``device_map={"": LOCAL_RANK}``: every rank quantizes the whole model on its own GPU.
    Not when ``cpu_ram_efficient_loading`` is on and either FSDP2 (rank 0 loads on the CPU, the others on the meta
    device) or Answer.AI's sharded 4-bit load runs (``qlora_sharded_model_loading``, or a DBRX model).
  - Any other 4/8-bit load under FSDP, and every one under ZeRO-3, gets no device_map from Axolotl, and transformers'
    bitsandbytes quantizer then takes the current GPU (transformers 5.24 ``quantizers/auto.py`` calls
    ``update_device_map``, ``quantizers/quantizer_bnb_{4,8}bit.py`` picks ``torch.cuda.current_device()``; a quantized
    model is not built under ``deepspeed.zero.Init``, ``modeling_utils.py``), again except under FSDP2 with
    ``cpu_ram_efficient_loading``.
  - An unquantized model is moved whole to every GPU (``model.to(cuda:LOCAL_RANK)``) only when the config writes
    ``experimental_skip_move_to_device: false``; Axolotl skips that move by default since 0.13.0, and always under
    ZeRO-3.
  transformers 5 has no FSDP or ZeRO-3 path for quantized weights any more; transformers 4 moved each quantized weight
  to the CPU (rank 0) or the meta device there (4.57 ``modeling_utils.py`` ``_load_state_dict_into_meta_model``:
  ``ModelLoad.quantized_off_gpu``).

Then the model is sharded in place:
  FSDP2  Axolotl's ``fsdp2_prepare_model`` (``monkeypatch/accelerate/fsdp2.py``) takes ``model.state_dict()`` before
         ``fully_shard`` and holds it to the end, so every whole tensor stays while its new shard is allocated:
         peak = W + W/N
  FSDP1  each wrap unit is flattened into one new tensor, then sharded and its whole copy freed (torch
         ``distributed/fsdp/_flat_param.py``): peak = W + the largest unit (a decoder layer, or the root's embedding
         and lm_head)
  ZeRO-3 the engine partitions one parameter at a time and frees its whole copy (DeepSpeed 0.19.8
         ``runtime/zero/partition_parameters.py`` ``_convert_to_zero_parameters``): peak = W
W = the model's weights as the GPU stores them, unsharded (``states.weight_bytes``); N = the ranks that shard them.
Nothing calls ``torch.cuda.empty_cache()`` afterwards, so what the load reserved stays reserved during training.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from axlint.architectures import Architecture
from axlint.facts import ModelLoad, ShardingKind
from axlint.memory import constants as C
from axlint.memory.setup import ModelLoader, TrainSetup
from axlint.memory.sharding import largest_layer_unit_bytes, root_unit_bytes

LOAD_PHASE = "model load"
"""The estimate's name of the load's moment (``MemoryEstimate.phase``)."""
RAM_EFFICIENT_LOADING = "fsdp_config.cpu_ram_efficient_loading"
"""The change key of FSDP's cpu_ram_efficient_loading (a dotted path into the YAML's fsdp_config)."""
SHARDED_LOADERS = ("dbrx",)
"""Model types whose QLoRA under FSDP with cpu_ram_efficient_loading always takes the sharded 4-bit load."""


def whole_model_load(arch: Architecture, setup: TrainSetup) -> str:
    """Why every GPU holds the whole model before FSDP or ZeRO-3 shards it (module docstring), or "" when it never
    does."""
    s, load = setup.sharding, setup.model_load
    zero3 = s.kind is ShardingKind.DEEPSPEED and s.stage == 3
    if (not (s.kind is ShardingKind.FSDP or zero3) or s.world < 2 or s.mesh.tp > 1
            or setup.loader is not ModelLoader.AXOLOTL):
        return ""
    quantized = setup.quantization in ("nf4", "int8")
    if quantized and load.quantized_off_gpu:
        return ""
    if zero3:
        return f"bitsandbytes quantizes the {setup.quantization} load on the current GPU" if quantized else ""
    ram_efficient_fsdp2 = load.cpu_ram_efficient_loading and s.fsdp_version == 2
    if setup.adapter == "qlora":
        sharded = load.cpu_ram_efficient_loading and (load.sharded_quant_loading or arch.model_type in SHARDED_LOADERS)
        if ram_efficient_fsdp2 or sharded:
            return ""
        return "QLoRA under FSDP loads the model with device_map on the local GPU"
    if quantized:
        if ram_efficient_fsdp2:
            return ""
        return f"bitsandbytes quantizes the {setup.quantization} load on the current GPU"
    if load.move_to_device:
        return "experimental_skip_move_to_device: false moves the whole model to every GPU"
    return ""


def load_peak_bytes(arch: Architecture, setup: TrainSetup, whole: float) -> float:
    """Allocated bytes per GPU at the load's peak (module docstring); ``whole``: W, the unsharded weights. 0 when the
    model never lies whole on one GPU."""
    if not whole_model_load(arch, setup):
        return 0.0
    s = setup.sharding
    if s.kind is ShardingKind.DEEPSPEED:
        return whole
    if s.fsdp_version >= 2:
        return whole * (1 + 1 / s.state_ranks)
    return whole + max(root_unit_bytes(arch, setup), largest_layer_unit_bytes(arch, setup))


@dataclass(frozen=True)
class LoadRemedy:
    """A load that never holds the whole model on one GPU: the ``ModelLoad`` it gives, the config changes that ask for
    it (``solver`` change keys: a dotted key reaches into ``fsdp_config``) and what to tell the user."""

    load: ModelLoad
    changes: Mapping[str, Any]
    text: str


def load_remedy(arch: Architecture, setup: TrainSetup) -> LoadRemedy | None:
    """What to write so that the GPUs never hold the whole model, or None where Axolotl offers nothing: under FSDP2 a
    4/8-bit load cannot take cpu_ram_efficient_loading (Axolotl's Llama 4 FSDP2 QLoRA example: "does not work with
    load_in_8bit/4bit"), an 8-bit LoRA has no sharded load, and neither has a 4/8-bit load under ZeRO-3."""
    load = setup.model_load
    if not whole_model_load(arch, setup):
        return None
    if load.move_to_device:
        return LoadRemedy(replace(load, move_to_device=False), {"experimental_skip_move_to_device": True},
                          "drop `experimental_skip_move_to_device: false` so that FSDP places the model")
    if setup.adapter == "qlora" and setup.sharding.kind is ShardingKind.FSDP and setup.sharding.fsdp_version == 1:
        ram = {} if load.cpu_ram_efficient_loading else {RAM_EFFICIENT_LOADING: True}
        return LoadRemedy(replace(load, cpu_ram_efficient_loading=True, sharded_quant_loading=True),
                          {"qlora_sharded_model_loading": True, **ram},
                          "`qlora_sharded_model_loading: true` with `fsdp_config.cpu_ram_efficient_loading: true` "
                          "quantizes it shard by shard on the CPU instead")
    return None


def load_note(arch: Architecture, setup: TrainSetup, whole: float, peak: float) -> str:
    """The estimate's note on the load's peak."""
    fsdp = setup.sharding.kind is ShardingKind.FSDP
    found = load_remedy(arch, setup)
    if found is not None:
        remedy = found.text
    elif fsdp and setup.sharding.fsdp_version >= 2:
        remedy = "more GPUs shrink only the shards, not the whole copy"
    else:
        remedy = "more GPUs do not lower it"
    return (f"model load: {whole_model_load(arch, setup)}, so every GPU holds the whole model "
            f"({whole / C.GIB:.2f} GiB) before {'FSDP' if fsdp else 'ZeRO-3'} shards it, {peak / C.GIB:.2f} GiB "
            f"allocated at that moment, and the caching allocator keeps it reserved; {remedy}")


def load_slack_bytes(allocated: float) -> float:
    """Reserved beyond the allocated bytes at the load's peak: the load allocates whole checkpoint tensors and their
    shards, which the caching allocator rounds up and keeps without the mixed sizes of a training step, so only the
    fragmentation it cannot give back is added (``constants.RESIDENT_FRAGMENTATION``), not the step's slack."""
    return allocated * C.RESIDENT_FRAGMENTATION
