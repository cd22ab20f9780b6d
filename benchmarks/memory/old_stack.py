"""How the Hugging Face stack of a published measurement differed from today's, for the measurements taken on an
older stack: the calibration test and the published-measurements benchmark estimate today's stack and add what the
older loss kept (``shifted_logits_extra``), or estimate the run as the older transformers / PEFT / Liger loaded,
adapted and trained the model (``peft_before_0_19``, ``linear_experts``, ``liger_in_place_weight_grad``,
``xielu_cuda``, ``bnb_before_0_43_2``, ``peft_before_0_12``) where the source ran them."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from axlint.facts import RunFacts
from axlint.memory.setup import ModelLoader, TrainSetup

MIB = 2**20


def repeat_kv_sdpa_extra(arch: Any) -> float:
    """Bytes per token the older sdpa path kept beyond today's: it repeated K and V to every head (repeat_kv) and
    copied the transposed output, 10·hq in all (memory-model.md §1.2, "sdpa with repeat_kv, the long-standing
    default"), where transformers 5 takes the GQA flash path: q, k, v, output and fp32 lse, 4hq + 4hkv + 4a."""
    hq, hkv, a = arch.q_dim, arch.kv_dim, arch.num_heads
    return 10 * hq - (4 * hq + 4 * hkv + 4 * a)


def shifted_logits_extra(arch: Any, batch: int, tokens: int) -> float:
    """Reserved bytes the transformers loss before 4.49 left beyond today's (the Liger chart's stack, 2024-08): the
    model (``LlamaForCausalLM.forward`` until 4.45, ``loss/loss_utils.py`` ``ForCausalLMLoss`` in 4.46.3 to 4.48.3)
    upcast the logits and made a shifted fp32 copy ``logits[..., :-1, :].contiguous()`` (4.49.0 pads the labels
    instead), so the log-softmax and both fp32 gradients have (T − b)·V elements; the slice's backward then asks for
    a full T·V fp32 zero tensor, which none of the cached (T − b)·V blocks can hold once 4·b·V exceeds the
    allocator's 2 MiB rounding (b = 8: 4.1 MB), and a fifth 4·T·V block is mapped: 18·T·V reserved where today's loss
    reserves 14·T·V (overhead.loss_unreused_bytes).
    [INF from the old LlamaForCausalLM.forward and the caching allocator's best-fit; memory-model.md §1.3]"""
    if 4 * batch * arch.vocab_size <= 2 * MIB:
        return 0.0
    return 4 * tokens * arch.vocab_size


LOGITS_DTYPE_BYTES = {"fp32": 4, "bf16": 2}


def held_output_logits(arch: Any, tokens: int, dtype: str) -> float:
    """Allocated bytes a training loop adds when it keeps the model's output, logits included, through backward and
    the optimizer step until the next forward returns (Answer.AI's train.py: ``output = model(..., labels=...)``,
    ``loss = output.loss``, ``loss.backward()``): T·V logits in the dtype the model returned them, fp32 under
    transformers before 4.46 (``LlamaForCausalLM.forward``: ``logits = logits.float()`` before the loss), bf16 since,
    where the HF Trainer lets them go before backward and the estimate counts none."""
    return LOGITS_DTYPE_BYTES[dtype] * tokens * arch.vocab_size


def unconverted_targets(setup: TrainSetup, facts: RunFacts) -> TrainSetup:
    """The LoRA targets of PEFT before 0.19, which had no transformers-5 MoE conversion (PEFT 0.19.0, 2026-04-14,
    added ``utils/transformers_weight_conversion.py``; 0.18.1 has none; axlint models the conversion in
    ``axlint.memory.peft_targets``): ``lora_target_modules`` / ``lora_target_linear`` stay module targets, which
    reach only ``nn.Linear`` modules, and ``lora_target_parameters`` is what the config lists, no rank doubled.
    These are the targets axlint's remote-code path keeps (``setup.peft_targets`` under ``remote_modeling``)."""
    lora = facts.lora
    return setup.with_changes(lora_target_modules=lora.target_modules, lora_target_linear=lora.target_linear,
                              lora_target_parameters=lora.target_parameters, lora_doubled=())


def peft_before_0_19(setup: TrainSetup, facts: RunFacts) -> TrainSetup:
    """A run on PEFT before 0.19: its targets (``unconverted_targets``), and a ``ParamWrapper`` that entered no
    parametrize cache, so every adapter on experts stored quantized trains (``TrainSetup.inner_expert_adapters_untrained``;
    PEFT 0.19.0 added the cache)."""
    return unconverted_targets(setup, facts).with_changes(inner_expert_adapters_untrained=False)


def linear_experts(setup: TrainSetup, facts: RunFacts) -> TrainSetup:
    """The run under modelling code that built the routed experts as an ``nn.ModuleList`` of per-expert MLPs with
    ``nn.Linear`` projections, as transformers 4 did for many MoE families (e.g. 4.40.0 models/jamba/modeling_jamba.py
    ``JambaSparseMoeBlock.experts``; transformers 5 fuses them into 3-D parameters), or a checkpoint's own code: a
    bitsandbytes 4/8-bit load quantized them (``quantize_experts``), module targets wrapped each expert's Linears
    (``expert_modules``; no dequantizing parametrization, ``experts_parametrized``), and the PEFT of that time had
    nothing to convert (``unconverted_targets``). These are the
    fields axlint's remote-code path sets for a repository whose own code builds the experts so (``setup.read_setup``
    under ``remote_linear_experts``; tests/test_published_measurements.py checks that the two agree)."""
    return unconverted_targets(setup, facts).with_changes(
        quantize_experts=setup.quantize_experts or setup.quantization is not None, expert_modules=True,
        experts_parametrized=False)


def liger_in_place_weight_grad(setup: TrainSetup, facts: RunFacts | None = None) -> TrainSetup:
    """A run on a liger-kernel before 0.6.2 (2025-08-21), whose fused linear cross-entropy added each chunk's lm_head
    gradient in place (``torch.addmm(out=grad_weight)``, ops/fused_linear_cross_entropy.py of 0.1.0 to 0.6.1):
    no product or fp32 copy of the weight's size beside the gradient buffer
    (``TrainSetup.liger_flce_weight_grad_copies``)."""
    return setup.with_changes(liger_flce_weight_grad_copies=False)


def xielu_cuda(setup: TrainSetup, facts: RunFacts | None = None) -> TrainSetup:
    """A run with the optional XIELU CUDA package installed, which Axolotl's Apertus README recommends "for reduced
    VRAM": its kernel keeps only the activation's input (``TrainSetup.xielu_cuda``)."""
    return setup.with_changes(xielu_cuda=True)


def peft_before_0_12(setup: TrainSetup, facts: RunFacts | None = None) -> TrainSetup:
    """A run on PEFT before 0.12 (2024-07), which cast each LoRA layer to its base weight's dtype when that is a float
    (0.10.0 ``tuners/lora/layer.py`` ``LoraLayer.update_layer``: ``self.to(weight.device, dtype=weight.dtype)``;
    0.12.0 added ``autocast_adapter_dtype``, which keeps them fp32): on a bf16 base, or on 4-bit weights stored in
    bf16 (``bnb_4bit_quant_storage``), the adapters, their gradients and AdamW's states are bf16, and PEFT casts no
    input to fp32 (``TrainSetup.adapters_in_load_dtype``). For a row whose base weight is a float only."""
    return setup.with_changes(adapters_in_load_dtype=True)


def bnb_before_0_43_2(setup: TrainSetup, facts: RunFacts | None = None) -> TrainSetup:
    """A run on bitsandbytes before 0.43.2 (2024-07-23), whose 4-bit matmul kept its input for backward beside the
    packed weight (``MatMul4Bit.forward``: ``ctx.tensors = (A, B)`` in 0.41.0 to 0.43.1, ``(None, B)`` since), as
    the 8-bit one still does (``TrainSetup.nf4_keeps_input``). Every measurement published before that release ran
    such a bitsandbytes."""
    return setup.with_changes(nf4_keeps_input=True)


def sharded_load(setup: TrainSetup) -> TrainSetup:
    """A run whose quantized model reached the GPUs already sharded, never whole on one GPU: Answer.AI's fsdp_qlora
    script (rank 0 quantizes and keeps the weights on the CPU, the other ranks wait on the meta device, FSDP
    broadcasts), or transformers 4 under FSDP's cpu_ram_efficient_loading or ZeRO-3, which quantized each weight on
    the GPU and moved it to the CPU or the meta device (4.57 ``modeling_utils.py`` ``_load_state_dict_into_meta_model``)
    (``memory.loading``)."""
    return setup.with_changes(model_load=replace(setup.model_load, quantized_off_gpu=True))


def outside_axolotl(setup: TrainSetup) -> TrainSetup:
    """A run of a script that is not Axolotl (Transformers, TRL, Accelerate, Answer.AI's or DeepSpeed's examples):
    PEFT's LoRA layers run every adapter, none of the fused LoRA kernels Axolotl turns on by itself
    (``TrainSetup.lora_kernels``)."""
    return setup.with_changes(lora_kernels=())


def kbit_prepared_script(setup: TrainSetup) -> TrainSetup:
    """A run of a plain Transformers + PEFT script on a 4/8-bit load that ran PEFT's ``prepare_model_for_kbit_training``
    and nothing that casts back (``ModelLoader.PEFT_KBIT``): embeddings, lm_head and norms train in fp32, and so does
    the residual stream between the layers; PEFT's LoRA layers (``outside_axolotl``)."""
    return outside_axolotl(setup).with_changes(loader=ModelLoader.PEFT_KBIT)
