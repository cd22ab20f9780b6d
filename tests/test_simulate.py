"""The simulation tier: the real HF model code on fake tensors, memory by category."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from axlint.architectures import Architecture
from axlint.facts import Sharding, ShardingKind
from axlint.mesh import Mesh
from axlint.simulate import per_gpu, simulate
from tests.resolved import facts

TINY = {"hidden_size": 256, "intermediate_size": 768, "num_hidden_layers": 4, "num_attention_heads": 8,
        "num_key_value_heads": 2, "vocab_size": 4096, "max_position_embeddings": 4096, "tie_word_embeddings": False}
ARCH = Architecture("tiny-llama", "model-config", "llama", TINY)


def run(**overrides: Any) -> Any:
    config = {"micro_batch_size": 2, "sequence_len": 1024, "bf16": True, "gradient_checkpointing": False,
              "attn_implementation": "sdpa", "optimizer": "adamw_torch_fused", **overrides}
    return simulate(facts(config, None, ARCH, None), ARCH, None)


def test_full_finetune_categories_are_positive() -> None:
    result = run(attn_implementation="flash_attention_2")  # Axolotl casts the embeddings back to bf16 for it
    for key in ("parameters", "optimizer_states", "activations"):
        assert result.process_bytes[key] > 0, key
    params = result.parameters
    assert result.process_bytes["parameters"] == 2 * params  # bf16
    assert result.process_bytes["optimizer_states"] == pytest.approx(2 * 2 * params, rel=1e-3)  # two bf16 moments
    assert result.peak_allocated_bytes == sum(result.per_gpu_bytes.values())
    assert result.to_json()["per_gpu"]["peak_allocated_gib"] > 0


def test_a_full_finetune_with_sdpa_holds_the_embeddings_and_norms_in_fp32() -> None:
    """Axolotl's loader leaves them fp32 (RunFacts.embeddings_fp32): 2 more bytes for each of their weights and
    of each of torch AdamW's two states kept in the parameter's dtype."""
    result, bf16 = run(), run(attn_implementation="flash_attention_2")
    h, v, layers = TINY["hidden_size"], TINY["vocab_size"], TINY["num_hidden_layers"]
    upcast = 2 * v * h + (2 * layers + 1) * h  # embed_tokens, the untied lm_head, two norms a layer and the final one
    assert result.process_bytes["parameters"] - bf16.process_bytes["parameters"] == 2 * upcast
    assert result.process_bytes["optimizer_states"] - bf16.process_bytes["optimizer_states"] \
        == pytest.approx(2 * 2 * upcast, rel=1e-3)


def test_checkpointing_lowers_the_activation_peak() -> None:
    assert run(gradient_checkpointing=True).process_bytes["activations"] < run().process_bytes["activations"]


def test_lora_lowers_optimizer_states() -> None:
    lora = run(adapter="lora", lora_r=8, lora_target_linear=True)
    full = run()
    assert 0 < lora.process_bytes["optimizer_states"] < full.process_bytes["optimizer_states"] / 10
    assert lora.trainable_parameters < full.trainable_parameters


def test_flash_attention_is_simulated_with_sdpa() -> None:
    result = run(flash_attention=True, attn_implementation=None)
    assert result.attn_implementation == "sdpa"
    assert any("flash_attention_2" in n for n in result.notes)


def test_zero_sharding_divides_model_states() -> None:
    process = {"parameters": 800, "gradients": 800, "optimizer_states": 1600, "master_weights": 800,
               "activations": 100}
    zero = [Sharding(ShardingKind.DEEPSPEED, stage, 8) for stage in (3, 2, 1)]
    assert per_gpu(process, zero[0]) == {"parameters": 100, "gradients": 100, "optimizer_states": 200,
                                         "master_weights": 100, "activations": 100}
    assert per_gpu(process, zero[1])["parameters"] == 800 and per_gpu(process, zero[2])["gradients"] == 800


def test_offloaded_states_leave_the_gpu() -> None:
    """FSDP CPU offload moves parameters, gradients and optimizer states to CPU RAM; ZeRO-2 with offload_optimizer
    the optimizer states, master weights and gradient partitions, keeping the bf16 weights whole."""
    process = {"parameters": 800, "gradients": 800, "optimizer_states": 1600, "master_weights": 800,
               "activations": 100}
    fsdp = Sharding(ShardingKind.FSDP, 3, 8, offload_optimizer=True, offload_param=True)
    assert per_gpu(process, fsdp) == {"parameters": 0, "gradients": 0, "optimizer_states": 0, "master_weights": 0,
                                      "activations": 100}
    zero2 = Sharding(ShardingKind.DEEPSPEED, 2, 8, offload_optimizer=True)
    assert per_gpu(process, zero2) == {"parameters": 800, "gradients": 0, "optimizer_states": 0,
                                       "master_weights": 0, "activations": 100}


def test_deepspeed_mixed_precision_and_zero3() -> None:
    ds = {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}}
    config = {"micro_batch_size": 1, "sequence_len": 256, "bf16": True, "optimizer": "adamw_torch_fused"}
    hw = SimpleNamespace(count=4)
    result = simulate(facts(config, ds, ARCH, hw), ARCH, hw)
    n = result.parameters
    assert result.process_bytes["master_weights"] == 4 * n
    assert result.process_bytes["optimizer_states"] == pytest.approx(8 * n, rel=1e-3)
    assert result.per_gpu_bytes["parameters"] == result.process_bytes["parameters"] // 4
    assert result.per_gpu_bytes["sharding_buffers"] > 0


def test_zero2_peaks_at_the_step_with_the_fp32_gradient_partition() -> None:
    """ZeRO-1/2 flatten the gradient partition and copy it to fp32 at the step (``sharding.step_temp_bytes``), which
    the simulated process, running torch's optimizer, cannot show: at a short sequence that moment is the peak, with
    the bf16 gradients, their flat copy and the fp32 copy (2 + 2 + 4 bytes per trainable parameter on one GPU) beside
    the parameters, the fp32 states and master weights. Measured on an H200: SmolLM2-1.7B and Llama-3.2-3B full
    fine-tunes under ZeRO-2 (benchmarks/memory/simulate_gpu_runs.md)."""
    ds = {"zero_optimization": {"stage": 2, "reduce_bucket_size": 10**5, "allgather_bucket_size": 10**5},
          "bf16": {"enabled": True}}  # buckets smaller than the tiny model's gradients
    config = {"micro_batch_size": 1, "sequence_len": 256, "bf16": True, "optimizer": "adamw_torch_fused"}
    hw = SimpleNamespace(count=1)
    result = simulate(facts(config, ds, ARCH, hw), ARCH, hw)
    n = result.trainable_parameters
    assert any(note.startswith("DeepSpeed's optimizer step") for note in result.notes)
    assert result.per_gpu_bytes["gradients"] == 8 * n
    assert result.per_gpu_bytes["activations"] == 0
    assert result.per_gpu_bytes["master_weights"] == 4 * n


def test_fsdp_cpu_offload_keeps_only_the_gathered_units_on_the_gpu() -> None:
    """FSDP full shard with CPU offload over 4 GPUs: no parameter, gradient or optimizer state stays on the GPU; the
    gathered root unit (embedding + lm_head) and three decoder layers (two gathered, one's gradients) do, in bf16."""
    config = {"micro_batch_size": 1, "sequence_len": 256, "bf16": True, "optimizer": "adamw_torch_fused",
              "fsdp": ["full_shard", "auto_wrap"], "fsdp_config": {"fsdp_offload_params": True}}
    hw = SimpleNamespace(count=4)
    result = simulate(facts(config, None, ARCH, hw), ARCH, hw)
    h, i, v = TINY["hidden_size"], TINY["intermediate_size"], TINY["vocab_size"]
    layer = 2 * h * h + 2 * h * 64 + 3 * h * i + 2 * h  # q, o; k, v (2 kv heads of 32); gate, up, down; 2 norms
    assert {k: result.per_gpu_bytes[k] for k in ("parameters", "gradients", "optimizer_states")} == \
        {"parameters": 0, "gradients": 0, "optimizer_states": 0}
    assert result.per_gpu_bytes["sharding_buffers"] == 2 * (2 * v * h + 3 * layer)
    assert any("CPU offload" in note for note in result.notes)


def test_sdpa_runs_without_an_explicit_mask() -> None:
    """Unpacked rows: no s×s mask and no K/V repeat, so activations grow linearly with the sequence length."""
    short, long = run(sequence_len=512), run(sequence_len=2048)
    ratio = long.process_bytes["activations"] / short.process_bytes["activations"]
    assert ratio == pytest.approx(4, rel=0.02)


def test_lora_dropout_keeps_a_one_byte_mask_per_adapted_input() -> None:
    """Fused dropout as on CUDA: with PEFT's layers (Axolotl's kernels off) each adapted Linear adds a bool mask of
    its input (Σ d_in = 5h + hq + I per layer); the adapter's bf16 input copy exists with or without dropout (fp32
    adapters under autocast). The first layer's q/k/v input needs no gradient (frozen embedding), so their masks are
    not kept."""
    lora = {"adapter": "lora", "lora_r": 8, "lora_target_linear": True, "lora_mlp_kernel": False}
    plain, dropped = run(**lora), run(**lora, lora_dropout=0.1)
    h, i, layers, tokens = TINY["hidden_size"], TINY["intermediate_size"], TINY["num_hidden_layers"], 2 * 1024
    mask = ((5 * h + h + i) * layers - 3 * h) * tokens
    assert dropped.process_bytes["activations"] - plain.process_bytes["activations"] == mask


def test_the_lora_mlp_kernel_drops_its_input_once() -> None:
    """Axolotl's LoRA MLP kernel (on by itself for LoRA; its stand-in runs the MLP): one dropout of the MLP input for
    gate and up, whose mask 1h and dropped copy 2h the kernel keeps, and none of the product for down; q, k, v and o
    run PEFT's layers (a mask of each input, the first layer's q/k/v excepted)."""
    lora = {"adapter": "lora", "lora_r": 8, "lora_target_linear": True}
    plain, dropped = run(**lora), run(**lora, lora_dropout=0.1)
    assert any(note.startswith("Axolotl's LoRA MLP kernel") for note in plain.notes)
    h, layers, tokens = TINY["hidden_size"], TINY["num_hidden_layers"], 2 * 1024
    mask = ((3 * h + h + 3 * h) * layers - 3 * h) * tokens
    assert dropped.process_bytes["activations"] - plain.process_bytes["activations"] == mask


def test_deepspeed_casts_lora_adapters_to_bf16() -> None:
    """The DeepSpeed engine casts every parameter to bf16: adapters cost 2 B, plus DeepSpeed's fp32 master and
    states."""
    ds = {"zero_optimization": {"stage": 0}, "bf16": {"enabled": True}}
    config = {"micro_batch_size": 1, "sequence_len": 256, "bf16": True, "adapter": "lora", "lora_r": 8,
              "lora_target_linear": True, "optimizer": "adamw_torch_fused"}
    result = simulate(facts(config, ds, ARCH, None), ARCH, None)
    adapters = result.trainable_parameters
    assert result.process_bytes["parameters"] == 2 * result.parameters
    assert result.process_bytes["master_weights"] == 4 * adapters
    assert result.process_bytes["optimizer_states"] == pytest.approx(8 * adapters, rel=1e-3)


def test_gradient_accumulation_keeps_gradients_through_the_next_forward() -> None:
    """With accumulation the first micro batch's gradients are alive during the second forward: the simulated peak
    holds them (before, the tracker refused a second forward of the same module)."""
    one, four = run(gradient_accumulation_steps=1), run(gradient_accumulation_steps=4)
    assert four.process_bytes["gradients"] > 0 == one.process_bytes["gradients"]
    assert four.peak_allocated_bytes > one.peak_allocated_bytes


def test_expert_parallelism_keeps_a_slice_of_the_experts() -> None:
    """FSDP shard-grad-op over 8 GPUs as 2 expert-parallel groups of 4: the parameters stay unsharded, yet each GPU
    holds only its half of the routed experts (here half of the weights), as the estimate's ``mixed_share`` says;
    the sharded gradients split the experts' slice over dp_shard, the rest over all 8 ranks."""
    process = {"parameters": 800, "gradients": 800, "optimizer_states": 1600, "master_weights": 800,
               "activations": 100}
    fsdp = Sharding(ShardingKind.FSDP, 2, 8, mesh=Mesh(ep=2, dp_shard=4))
    assert per_gpu(process, fsdp, expert_weights=0.5, expert_trainable=0.5) == {
        "parameters": 600, "gradients": 100, "optimizer_states": 200, "master_weights": 100, "activations": 100}
    assert per_gpu(process, fsdp)["parameters"] == 800  # a dense model: the parameters stay whole


def test_lora_on_the_experts_parameters_is_simulated() -> None:
    """``lora_target_parameters`` wraps the routed experts' 3-D weights in PEFT's ParamWrapper, as Axolotl passes
    them on: r·E·(d_in + d_out) adapter weights per wrapped weight (the estimate's count) beyond the module LoRA."""
    from axlint.memory.params import trainable
    from axlint.memory.setup import read_setup

    moe = Architecture("tiny-qwen3-moe", "model-config", "qwen3_moe", {
        **TINY, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "head_dim": 32,
        "decoder_sparse_step": 1, "mlp_only_layers": []})
    config = {"micro_batch_size": 1, "sequence_len": 128, "bf16": True, "gradient_checkpointing": True,
              "attn_implementation": "sdpa", "optimizer": "adamw_torch", "adapter": "lora", "lora_r": 4,
              "lora_target_modules": ["q_proj", "v_proj"]}
    experts = {**config, "lora_target_parameters": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]}
    modules_only, with_experts = (simulate(facts(c, None, moe, None), moe, None) for c in (config, experts))
    h, i, e, layers = TINY["hidden_size"], 64, 4, TINY["num_hidden_layers"]
    adapters = layers * 4 * e * ((h + 2 * i) + (i + h))  # gate_up [E, 2I, h] and down [E, h, I], rank 4
    assert with_experts.trainable_parameters - modules_only.trainable_parameters == adapters
    run = facts(experts, None, moe, None)
    assert with_experts.trainable_parameters == trainable(moe, read_setup(run, moe)).total


def test_per_module_ranks_are_simulated() -> None:
    """``lora_rank_pattern`` is handed to PEFT as Axolotl hands it (``rank_pattern``): the simulation trains the
    ranks the keys give, the count the estimate makes (``params.adapter_rank``), and more than at `lora_r` alone."""
    from axlint.memory.params import trainable
    from axlint.memory.setup import read_setup

    config = {"micro_batch_size": 1, "sequence_len": 128, "bf16": True, "gradient_checkpointing": True,
              "attn_implementation": "sdpa", "optimizer": "adamw_torch", "adapter": "lora", "lora_r": 4,
              "lora_target_linear": True}
    ranked = {**config, "lora_rank_pattern": {r"layers\.0\.self_attn\.q_proj": 16, "mlp.down_proj": 8},
              "lora_alpha_pattern": {"down_proj": 16}}
    plain, with_ranks = (simulate(facts(c, None, ARCH, None), ARCH, None) for c in (config, ranked))
    h, i, layers = TINY["hidden_size"], TINY["intermediate_size"], TINY["num_hidden_layers"]
    assert with_ranks.trainable_parameters - plain.trainable_parameters == 12 * 2 * h + layers * 4 * (i + h)
    assert with_ranks.trainable_parameters == trainable(ARCH, read_setup(facts(ranked, None, ARCH, None), ARCH)).total


def test_doras_own_layers_are_simulated() -> None:
    """``peft_use_dora`` with Axolotl's LoRA kernels off: PEFT's DoRA layers run. They train the magnitude vectors
    the estimate counts (``params.adapter_params``), and, checkpointing off, keep 4 bytes more per output element per
    token than plain LoRA: ``DoraLinearLayer.forward`` multiplies the base and the adapter outputs (bf16 under
    autocast) by the trainable magnitude, which keeps both for its gradient. The peak grows by 1.04 times that over
    these 512 tokens, the same in every process (``simulate._dora_collect``): it falls in a layer's backward, whose
    DoRA layers allocate a little more for their gradients. The analytic estimate counts the 4 bytes
    (``activations.dora_output_bytes``)."""
    from axlint.memory.params import trainable
    from axlint.memory.setup import read_setup

    tiny = Architecture("tiny-llama", "model-config", "llama", {**TINY, "vocab_size": 256})
    config = {"micro_batch_size": 1, "bf16": True, "gradient_checkpointing": False, "attn_implementation": "sdpa",
              "optimizer": "adamw_torch", "adapter": "lora", "lora_r": 8, "lora_target_linear": True,
              "lora_mlp_kernel": False, "lora_qkv_kernel": False, "lora_o_kernel": False}
    kept = {}
    for dora in (False, True):
        for seq in (512, 1024):
            run = facts({**config, "sequence_len": seq, "peft_use_dora": dora}, None, tiny, None)
            result = simulate(run, tiny, None)
            kept[dora, seq] = result.process_bytes["activations"]
            assert result.trainable_parameters == trainable(tiny, read_setup(run, tiny)).total
    h, i, layers = TINY["hidden_size"], TINY["intermediate_size"], TINY["num_hidden_layers"]
    outputs = 2 * h + 2 * 64 + 2 * i + h  # q, o; k, v (2 heads of 32); gate, up; down
    extra = (kept[True, 1024] - kept[False, 1024]) - (kept[True, 512] - kept[False, 512])
    assert 1.0 <= extra / (4 * outputs * layers * 512) < 1.06


def test_fsdp1_qlora_with_offload_keeps_the_quantization_state_on_the_gpu() -> None:
    """FSDP1 offloads the 4-bit weights' data, not bitsandbytes' quantization state, which stays whole on every
    GPU: n·(1/64 + 4/(64·256)) bytes of double-quantized NF4 over the decoder's linears, as the estimate counts."""
    config = {"micro_batch_size": 1, "sequence_len": 256, "bf16": True, "optimizer": "adamw_torch_fused",
              "adapter": "qlora", "load_in_4bit": True, "lora_r": 8, "lora_target_linear": True,
              "fsdp": ["full_shard", "auto_wrap"], "fsdp_config": {"fsdp_offload_params": True}}
    hw = SimpleNamespace(count=4)
    result = simulate(facts(config, None, ARCH, hw), ARCH, hw)
    h, i, layers = TINY["hidden_size"], TINY["intermediate_size"], TINY["num_hidden_layers"]
    linears = layers * (2 * h * h + 2 * h * 64 + 3 * h * i)
    assert result.per_gpu_bytes["parameters"] == pytest.approx(linears * (1 / 64 + 4 / (64 * 256)), abs=1)


CCE = {"plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]}
LIGER = {"plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_rms_norm": True, "liger_glu_activation": True,
         "liger_fused_linear_cross_entropy": True}


def test_cut_cross_entropy_runs_without_a_logits_tensor() -> None:
    """The transformers loss keeps T×V tensors at the start of the backward (fp32 log-softmax, its gradients); the
    CCE stand-in keeps per-token fp32 values and allocates the hidden states' and lm_head's gradients."""
    hf, cce = run(), run(**CCE)
    tokens, v = 2 * 1024, TINY["vocab_size"]
    assert hf.process_bytes["activations"] + hf.process_bytes["temporaries"] \
        - cce.process_bytes["activations"] - cce.process_bytes["temporaries"] >= 10 * tokens * v
    assert any(note.startswith("Cut Cross-Entropy") for note in cce.notes)
    assert not any(note.startswith("Cut Cross-Entropy") for note in hf.notes)


def test_liger_fused_cross_entropy_adds_the_lm_head_gradient_through_a_product_and_its_fp32_copy() -> None:
    """liger-kernel 0.8.0 (Axolotl 0.18.0's pin) adds each chunk's lm_head gradient as ``mm(...).float()``: a bf16
    product and an fp32 copy of the weight's size beside its gradient buffer, at the forward's end; 0.8.5 adds it in
    place. A full fine-tune whose peak is that moment: the simulated peak with and without the copies is the
    analytic one within 3 % (``logits.flce_weight_grad_bytes``)."""
    from axlint.hardware import parse_hardware
    from axlint.memory.estimate import estimate_setup
    from axlint.memory.setup import read_setup

    wide = Architecture("tiny-llama-32k", "model-config", "llama", {**TINY, "vocab_size": 32768})
    config = {"micro_batch_size": 2, "sequence_len": 1024, "bf16": True, "gradient_checkpointing": True,
              "flash_attention": True, "optimizer": "adamw_torch_fused", **LIGER}
    resolved, hw = facts(config, None, wide, None), parse_hardware("1xH100")
    peaks = {}
    for copies in (True, False):
        setup = read_setup(resolved, wide).with_changes(liger_flce_weight_grad_copies=copies)
        simulated = simulate(resolved, wide, None, setup=setup)
        assert simulated.peak_allocated_bytes == pytest.approx(estimate_setup(setup, wide, hw).peak_allocated,
                                                               rel=0.03), copies
        peaks[copies] = simulated.peak_allocated_bytes
        assert {n.split(":")[0] for n in simulated.notes} >= {"Liger fused linear cross-entropy", "Liger RMSNorm",
                                                              "Liger gated MLP"}
    assert peaks[True] > peaks[False]


def test_liger_norm_and_gated_mlp_keep_fewer_activations() -> None:
    """Without checkpointing every layer keeps what its norms and MLP activation save: Liger's RMSNorm keeps its
    input and an fp32 value per row where transformers' keeps fp32 copies, and its SwiGLU keeps the gate and up
    projections where transformers' keeps them and the activation's output."""
    kernels = {"plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_rms_norm": True,
               "liger_glu_activation": True}
    assert run(**kernels).process_bytes["activations"] < run().process_bytes["activations"]


def test_liger_stand_ins_reproduce_a_gpu_measurement() -> None:
    """Llama-3.2-1B, full fine-tune with Liger's FLCE, RMSNorm and SwiGLU at 8k tokens, measured on an H200 with
    liger-kernel 0.8.5 (benchmarks/memory/results-NVIDIA_H200-2026-11-26.json): the simulation of that stack (the
    lm_head gradient added in place) lands within 1 % of the measured peak allocated."""
    import json
    from pathlib import Path

    from axlint.document import load_document
    from axlint.hardware import parse_hardware
    from axlint.memory.setup import read_setup
    from axlint.run import build_run

    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "memory"
    name = "llama32-1b-full-gc-8k-liger"
    results = json.loads((bench / "results-NVIDIA_H200-2026-11-26.json").read_text())["results"]
    measured = next(r for r in results if r["name"] == name)
    assert measured["versions"]["liger-kernel"] == "0.8.5"
    built = build_run(load_document(bench / "configs" / f"{name}.yml"), hardware=parse_hardware("1xH200"))
    setup = read_setup(built.facts, built.arch).with_changes(liger_flce_weight_grad_copies=False)
    simulated = simulate(built.facts, built.arch, built.hardware, setup=setup).peak_allocated_bytes / 2**30
    assert simulated == pytest.approx(measured["measured"]["allocated_gib"], rel=0.01)


def test_liger_cross_entropy_writes_its_gradient_into_the_fp32_upcast() -> None:
    """transformers 5's causal-LM loss upcasts the logits to fp32 before the cross-entropy Liger replaces: at the loss
    the bf16 logits and the fp32 copy holding the gradient, 6·T·V (``constants.LOGITS_LIGER_CE``). A 128k vocabulary
    puts the loss at the peak; the simulated peak is the analytic one within 3 %."""
    from axlint.hardware import parse_hardware
    from axlint.memory.estimate import estimate_setup
    from axlint.memory.setup import read_setup

    wide = Architecture("tiny-llama-128k", "model-config", "llama", {**TINY, "vocab_size": 131072})
    config = {"micro_batch_size": 2, "sequence_len": 2048, "bf16": True, "gradient_checkpointing": True,
              "flash_attention": True, "optimizer": "adamw_torch_fused",
              "plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_cross_entropy": True}
    resolved = facts(config, None, wide, None)
    setup = read_setup(resolved, wide)
    simulated = simulate(resolved, wide, None, setup=setup)
    assert any(note.startswith("Liger cross-entropy") for note in simulated.notes)
    estimate = estimate_setup(setup, wide, parse_hardware("1xH100"))
    assert estimate.components["logits"] == 6 * 2 * 2048 * 131072
    assert simulated.peak_allocated_bytes == pytest.approx(estimate.peak_allocated, rel=0.03)
