"""`--simulate` on the configs people write: corpus configs of models up to 8B (full fine-tunes, LoRA, QLoRA,
DeepSpeed ZeRO-3, FSDP, one MoE, Cut Cross-Entropy and Liger kernels), each simulated and estimated on the same architecture and the same resolved
run that `axlint estimate --simulate` uses. `tests/test_simulate_corpus.py` runs them with the decoder cut to a few
layers (seconds each); `benchmarks/memory/simulate_corpus.py` runs them at full depth and writes the table."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from axlint.document import load_document
from axlint.hardware import parse_hardware
from axlint.memory.estimate import estimate_setup
from axlint.run import build_run
from axlint.simulate import simulate
from tests.corpus import CORPUS

CONFIGS = (
    "examples/streaming/sft.yaml",                      # SmolLM2-135M, full
    "examples/qwen2/adamw-pretrain-fsdp2.yaml",         # Qwen2.5-0.5B, full, FSDP2
    "examples/eaft/eaft-example.yml",                   # Gemma-3-1B, full
    "examples/gemma3/gemma-3-1b-qlora.yml",             # Gemma-3-1B, QLoRA
    "examples/archived/tiny-llama/lora.yml",            # TinyLlama-1.1B, LoRA
    "examples/archived/tiny-llama/qlora.yml",           # TinyLlama-1.1B, QLoRA
    "examples/archived/tiny-llama/pretrain.yml",        # TinyLlama-1.1B, full
    "examples/llama-3/lora-1b.yml",                     # Llama-3.2-1B, LoRA
    "examples/llama-3/qlora-1b.yml",                    # Llama-3.2-1B, QLoRA
    "examples/llama-3/lora-1b-ray.yml",                 # Llama-3.2-1B, LoRA, DeepSpeed ZeRO-3
    "examples/phi/phi2-ft.yml",                         # Phi-2, full
    "examples/phi/lora-3.5.yaml",                       # Phi-3.5-mini, LoRA
    "examples/phi/phi-qlora.yml",                       # Phi-1.5 (LayerNorm), QLoRA
    "examples/gemma3/gemma-3-4b-qlora.yml",             # Gemma-3-4B (text of a vision model), QLoRA
    "examples/llama-2/lora.yml",                        # Llama-2-7B, LoRA
    "examples/llama-2/qlora.yml",                       # Llama-2-7B, QLoRA
    "examples/archived/falcon/config-7b-lora.yml",      # Falcon-7B, LoRA
    "examples/mistral/lora.yml",                        # Mistral-7B, LoRA
    "examples/mistral/qlora.yml",                       # Mistral-7B, QLoRA
    "examples/llama-3/lora-8b.yml",                     # Llama-3-8B, LoRA on an 8-bit base
    "examples/llama-3/qlora.yml",                       # Llama-3-8B, QLoRA
    "examples/llama-3/fft-8b.yaml",                     # Llama-3.1-8B, full
    "examples/qwen3/8b-lora-fused-attn.yaml",           # Qwen3-8B, LoRA
    "examples/deepseek-v2/fft-fsdp-16b.yaml",           # DeepSeek-V2-Lite (MoE, 2.4B active), full, FSDP
    "examples/hunyuan/hunyuan-v1-dense-qlora.yaml",     # Hunyuan-0.5B, QLoRA, Cut Cross-Entropy
    "examples/plano/plano-4b-qlora.yaml",               # Plano-Orchestrator-4B (Qwen3), QLoRA, Cut Cross-Entropy
    "examples/arcee/afm-4.5b-qlora.yaml",               # AFM-4.5B, QLoRA, Cut Cross-Entropy
    "examples/ministral/ministral-small-qlora.yaml",    # Ministral-8B, QLoRA, Cut Cross-Entropy
    "examples/apertus/apertus-8b-qlora.yaml",           # Apertus-8B (xIELU MLP), QLoRA, Cut Cross-Entropy
    "examples/orpheus/finetune.yml",                    # Orpheus-3B (Llama), full, Liger kernels
    "examples/llama-3/fft-8b-liger-fsdp.yaml",          # Llama-3.1-8B, full, Liger kernels, FSDP with offload
)
"""31 configs; the MoE is the one the corpus has whose active parameters are under 8B. Cut Cross-Entropy and
Liger's kernels run as the simulation's stand-ins (axlint.training.kernel_standins)."""
DISTRIBUTED_GPUS = "8xH100"
SINGLE_GPU = "1xH100"


@dataclass(frozen=True)
class Comparison:
    config: str
    model: str
    layers: int
    simulated_bytes: int
    analytic_bytes: float
    simulated_trainable: int
    analytic_trainable: int
    simulated_parameters: int
    analytic_parameters: int
    """The model's parameters, LoRA adapters and modules_to_save copies included."""
    seconds: float
    notes: tuple[str, ...]

    @property
    def error(self) -> float:
        """(analytic − simulated) / simulated on the peak allocated bytes."""
        return (self.analytic_bytes - self.simulated_bytes) / self.simulated_bytes


def compare(config: str, layers: int | None = None) -> Comparison:
    """Simulate and estimate one corpus config on one H100 (eight with DeepSpeed or FSDP), the decoder cut to its
    first `layers` layers on both sides when given."""
    doc = load_document(CORPUS / config)
    data = doc.data
    distributed = bool(data.get("deepspeed") or data.get("fsdp_config") or data.get("fsdp"))
    hw = parse_hardware(DISTRIBUTED_GPUS if distributed else SINGLE_GPU)
    run = build_run(doc, hardware=hw)
    arch = run.arch
    assert arch is not None, config
    if layers is not None:
        arch = dataclasses.replace(arch, config={**arch.config, "num_hidden_layers": layers})
    start = time.perf_counter()
    result = simulate(run.facts, arch, hw)
    estimate = estimate_setup(result.setup, arch, hw)  # the run the simulation ran (``simulate.simulated_setup``)
    return Comparison(config, arch.model_id, arch.num_layers, result.peak_allocated_bytes, estimate.peak_allocated,
                      result.trainable_parameters, estimate.trainable_params, result.parameters,
                      arch.total_params + (estimate.trainable_params if run.facts.adapter.value else 0),
                      time.perf_counter() - start,
                      tuple(result.notes))
