"""How memory verdicts read: sizes, the GPUs, the largest parts of a peak, the solver's suggestions and their
speed, offload's CPU RAM, and what fits on more GPUs. The memory rules and `axlint estimate` both speak this way."""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from axlint.facts import CCE_PLUGIN, LIGER_PLUGIN, LossKernel
from axlint.memory.constants import GIB
from axlint.memory.knobs import Change
from axlint.rule import format_value

if TYPE_CHECKING:
    from axlint.hardware import Hardware
    from axlint.memory.estimate import MemoryEstimate
    from axlint.memory.facts import MemoryFacts
    from axlint.memory.knobs import Step
    from axlint.memory.solver import ScaleOut, Suggestion

LABELS = {"weights": "weights", "gradients": "gradients", "optimizer_states": "optimizer states",
          "master_weights": "fp32 master weights", "activations": "activations", "logits": "logits + loss",
          "sharding_buffers": "sharding buffers", "cuda_context": "CUDA context + NCCL",
          "allocator_slack": "allocator slack"}
"""What each part of the estimate is called."""
LOSS_NAMES = {LossKernel.HF: "HF cross-entropy", LossKernel.LIGER_FLCE: "Liger fused linear cross-entropy",
              LossKernel.LIGER_CE: "Liger cross-entropy", LossKernel.CCE: "Cut Cross-Entropy",
              LossKernel.CHUNKED: "chunked cross-entropy"}

def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def gpu_args(facts: "MemoryFacts") -> dict[str, str]:
    """The GPU's memory and the hardware wording (with its assumption) that every memory message carries."""
    return {"capacity": f"{facts.hw.memory_gib:.1f} GiB", "hardware": hardware_text(facts.hw)}


def hardware_text(hw: "Hardware") -> str:
    """`8×H100-80GB`, with `assuming ` in front when nobody said which GPUs (pass --hardware)."""
    text = f"{hw.count}×{hw.gpu}"
    return f"assuming {text}; pass --hardware" if hw.assumed else f"on {text}"


def top_components(e: "MemoryEstimate", n: int = 3) -> str:
    """The `n` largest components of the peak phase: `activations 197.1 GiB, logits + loss 54.8 GiB, ...`; the
    allocator's cache is left out (it is given back before an out-of-memory error, ``MemoryEstimate.required``)."""
    ranked = sorted(((k, v) for k, v in e.components.items() if k != "allocator_slack"),
                    key=lambda kv: kv[1], reverse=True)[:n]
    return ", ".join(f"{LABELS[k]} {gib(v)}" for k, v in ranked)


def throughput_text(factor: float) -> str:
    """A relative throughput as felt: `≈25 % slower`, `≈33 % faster`, `≈4.0× faster`, `same speed`."""
    if abs(factor - 1) < 0.005:
        return "same speed"
    if factor >= 2 or factor <= 0.5:
        return f"≈{max(factor, 1 / factor):.1f}× {'faster' if factor > 1 else 'slower'}"
    return f"≈{abs(factor - 1) * 100:.0f} % {'faster' if factor > 1 else 'slower'}"


def changes_text(s: "Suggestion") -> str:
    """`gradient_checkpointing: true, plugins += LigerPlugin, zero_optimization.stage: 3 (DeepSpeed)`."""
    parts: list[str] = []
    for key, value in s.changes.items():
        if key == "plugins":
            parts += [f"plugins += {p.rsplit('.', 1)[-1]}" for p in value if p in (LIGER_PLUGIN, CCE_PLUGIN)]
        else:
            parts.append(f"{key}: {format_value(value)}")
    return ", ".join(parts + [f"{k}: {format_value(v)} (DeepSpeed)" for k, v in s.ds_changes.items()])


def suggestion_text(s: "Suggestion", hw: "Hardware") -> str:
    return f"{changes_text(s)} -> {s.peak_gib:.1f} GiB, {speed_text(s)}{host_text(s, hw)}"


def speed_text(s: "Suggestion") -> str:
    """The suggestion's relative speed as felt, with what it leaves out."""
    speed = throughput_text(s.relative_throughput)
    if any(step.change is Change.QUANTIZE_EXPERTS for step in s.steps):
        speed += "; not counting the experts' dequantization, which axlint does not time"
    return speed


def host_text(s: "Suggestion", hw: "Hardware") -> str:
    """What an offload asks of the host's RAM, against the host memory when it is known."""
    if not s.host_gib:
        return ""
    have = (f"the host has {hw.host_memory_gib:.0f} GiB" if hw.host_memory_gib
            else "pass --host-memory to have it checked")
    amount = f"{s.host_gib:.0f}" if s.host_gib >= 10 else f"{s.host_gib:.1f}"
    return f", needs {amount} GiB of CPU RAM per host ({have})"


def scale_out_text(found: "ScaleOut | None", hw: "Hardware") -> str:
    """The advice when nothing fits on the GPUs given."""
    if found is None:
        return f"nothing axlint can change fits it on {hw.label}, nor on up to 64 of these GPUs"
    s = found.suggestion
    if not s.steps:
        return (f"nothing axlint can change fits it on {hw.label}; on {found.gpus}×{hw.gpu} it fits as it is "
                f"({s.peak_gib:.1f} GiB)")
    return (f"nothing axlint can change fits it on {hw.label}; on {found.gpus}×{hw.gpu} it fits with "
            f"{suggestion_text(s, replace(hw, count=found.gpus))}")


def step_text(step: "Step") -> str:
    """One change of a suggestion in words: `turn on gradient checkpointing`, `ZeRO stage 2->3`, ..."""
    c, old, new = step.change, step.old, step.new
    if c is Change.MICRO_BATCH:
        return f"micro_batch_size {old[0]}->{new[0]} with gradient_accumulation_steps {old[1]}->{new[1]}"
    if c is Change.EVAL_BATCH:
        return f"eval_batch_size {old}->{new}"
    if c is Change.ZERO_STAGE:
        return f"ZeRO stage {old}->{new}"
    if c is Change.STOCK_ZERO3:
        return f"shard with DeepSpeed ZeRO-3 ({new})"
    if c is Change.FLASH_ATTENTION:
        return ("use flash_attention_2 instead of eager attention" if old == "eager" else
                "use flash_attention_2 instead of sdpa (Axolotl then trains the embeddings in bf16, not fp32)")
    if c is Change.QUANTIZE_EXPERTS and new:
        return (f"{_STEP_WORDS[c]}, with lora_target_linear's modules listed in lora_target_modules "
                f"({', '.join(map(str, new))}), since Axolotl refuses lora_target_linear beside it")
    if c is Change.STOCK_ZERO3_OFFLOAD:
        return f"DeepSpeed ZeRO-3 with the optimizer and the parameters offloaded to CPU ({new})"
    return _STEP_WORDS[c]


_STEP_WORDS = {Change.CHECKPOINTING_ON: "turn on gradient checkpointing",
               Change.CHECKPOINTING_OFF: "turn off gradient checkpointing",
               Change.LIGER_FLCE: "use Liger's fused linear cross-entropy",
               Change.CUT_CROSS_ENTROPY: "use Cut Cross-Entropy",
               Change.QUANTIZE_EXPERTS: "store the MoE experts quantized too (quantize_moe_experts)",
               Change.OFFLOAD_OPTIMIZER: "offload the optimizer to CPU",
               Change.OFFLOAD_ALL: "offload the optimizer and the parameters to CPU",
               Change.STOP_OFFLOAD: "stop offloading to CPU",
               Change.SHARDED_QUANT_LOAD: "load the 4-bit model shard by shard on the CPU (qlora_sharded_model_loading "
                                          "with cpu_ram_efficient_loading) instead of whole on every GPU",
               Change.SKIP_MOVE_TO_DEVICE: "let FSDP place the model instead of moving it whole to every GPU first"}


def description(s: "Suggestion") -> str:
    """A suggestion in words, its changes joined by `; ` (a fix's title, a line of `axlint estimate`)."""
    return "; ".join(step_text(step) for step in s.steps)
