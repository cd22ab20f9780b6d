"""The analytic estimate against the fake-tensor simulation of the same run (tier 1 against tier 2).

Both sides see the same architecture and the same Axolotl settings: one GPU, micro batch 1, bf16, sdpa, fused
AdamW, LoRA r16 on every linear layer with dropout 0 unless a case says otherwise, gradient checkpointing on or
off. Every case asserts |analytic − simulated| / simulated ≤ 10 % on the peak allocated bytes; ``test_print_table``
prints the table (pytest -s). Each simulation runs once per session (two optimizer steps, seconds on a CPU).

The MoE cases run Qwen3-30B-A3B with 4 of its 48 layers (every other config.json number as published) on both
sides. Their LoRA targets the attention projections, which is what Axolotl's ``lora_target_linear`` selects on
transformers 5 (its ``find_all_linear_names`` keeps ``nn.Linear`` modules; the fused experts are 3-D parameters and
the router is a ``*TopKRouter`` module), as the simulation hands PEFT too (``training.spec.lora_targets``: the
written targets and ``params.linear_names``, Axolotl's list, not PEFT's "all-linear", which PEFT 0.21 also applies
to the experts and the router); the cases write the attention projections out.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from axlint.architectures import Architecture, resolve_architecture
from axlint.hardware import parse_hardware
from axlint.memory.activations import layer_bytes_per_token, mlp_bytes
from axlint.memory.estimate import estimate_memory, estimate_setup
from axlint.memory.setup import ModelLoader, read_setup
from axlint.run import axolotl_defaults
from axlint.simulate import simulate
from tests.resolved import facts

GIB = 2**30
TOLERANCE = 0.10
H100 = parse_hardware("1xH100")
SMOL, QWEN, LLAMA, MOE = ("HuggingFaceTB/SmolLM2-135M", "Qwen/Qwen2.5-0.5B", "meta-llama/Llama-3.2-1B",
                          "Qwen/Qwen3-30B-A3B")
APERTUS = "swiss-ai/Apertus-8B-Instruct-2509"
STABLELM = "stabilityai/stablelm-2-1_6b"
MLLAMA = "meta-llama/Llama-3.2-11B-Vision"
CCE = {"plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]}
LORA = {"adapter": "lora", "lora_r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "lora_target_linear": True}
ATTENTION_LORA = {**LORA, "lora_target_linear": False, "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}
QLORA = {"adapter": "qlora", "load_in_4bit": True}
# PEFT's own layers: Axolotl's fused LoRA kernels, which it turns on by itself for LoRA and DoRA alike, off
PEFT_LAYERS = {"lora_mlp_kernel": False, "lora_qkv_kernel": False, "lora_o_kernel": False}
PEFT_DORA = {**PEFT_LAYERS, "peft_use_dora": True}

# (case id, model, layers kept (None: all), settings on top of the common ones)
CASES: list[tuple[str, str, int | None, dict[str, Any]]] = [
    ("smollm2-135m full", SMOL, None, {}),
    ("smollm2-135m lora", SMOL, None, LORA),
    ("smollm2-135m full ckpt", SMOL, None, {"gradient_checkpointing": True}),
    ("smollm2-135m lora ckpt", SMOL, None, {**LORA, "gradient_checkpointing": True}),
    ("smollm2-135m lora dropout 0.05", SMOL, None, {**LORA, "lora_dropout": 0.05}),
    # DoRA keeps each adapted Linear's base and adapter outputs; with checkpointing its weight norm's transient
    # comes back in every recompute
    ("smollm2-135m lora peft layers", SMOL, None, {**LORA, **PEFT_LAYERS}),
    ("smollm2-135m lora dora", SMOL, None, {**LORA, **PEFT_DORA}),
    ("smollm2-135m lora dora ckpt", SMOL, None, {**LORA, **PEFT_DORA, "gradient_checkpointing": True}),
    ("smollm2-135m full eager s1024", SMOL, None, {"attn_implementation": "eager", "sequence_len": 1024}),
    ("qwen2.5-0.5b full", QWEN, None, {}),
    ("qwen2.5-0.5b lora", QWEN, None, LORA),
    ("qwen2.5-0.5b full ckpt", QWEN, None, {"gradient_checkpointing": True}),
    ("qwen2.5-0.5b lora ckpt", QWEN, None, {**LORA, "gradient_checkpointing": True}),
    ("qwen2.5-0.5b qlora dora ckpt", QWEN, None, {**LORA, **QLORA, **PEFT_DORA, "gradient_checkpointing": True}),
    # flash attention configured: Axolotl casts the embeddings back to bf16 (the full cases above keep them in fp32)
    ("qwen2.5-0.5b full ckpt flash", QWEN, None, {"gradient_checkpointing": True,
                                                  "attn_implementation": "flash_attention_2"}),
    # peaks at the backward of the tied embedding (lm_head's gradient, the embedding's and their sum)
    ("llama-3.2-1b full ckpt", LLAMA, None, {"gradient_checkpointing": True}),
    ("llama-3.2-1b lora", LLAMA, None, LORA),
    # peft_layers_to_transform: PEFT adapts two of the 16 layers (dropout on, so each adapter keeps its own input)
    ("llama-3.2-1b lora layers 0 and 15", LLAMA, None, {**LORA, "lora_dropout": 0.05,
                                                         "peft_layers_to_transform": [0, 15]}),
    # 8192 tokens: the stored MoE activations then set the peak (at 2048 the end-of-backward gradients do)
    ("qwen3-30b-a3b[4 layers] full s8192", MOE, 4, {"sequence_len": 8192}),
    ("qwen3-30b-a3b[4 layers] lora", MOE, 4, ATTENTION_LORA),
    ("qwen3-30b-a3b[4 layers] lora ckpt", MOE, 4, {**ATTENTION_LORA, "gradient_checkpointing": True}),
    # a 4-bit load leaves the 3-D experts unquantized and PEFT's kbit preparation casts them to fp32: fp32 weights and
    # fp32 expert activations on both sides (the simulation's fp32 grouped_mm is a shape stand-in, simulate.py)
    ("qwen3-30b-a3b[4 layers] qlora fp32 experts", MOE, 4, {**ATTENTION_LORA, **QLORA}),
    ("qwen3-30b-a3b[4 layers] qlora fp32 experts ckpt", MOE, 4,
     {**ATTENTION_LORA, **QLORA, "gradient_checkpointing": True}),
    # experts quantized on load (quantize_moe_experts): stored in NF4 / int8 and read dequantized, whole, once per
    # forward (the simulation's stand-in of the parametrization allocates each read as bitsandbytes does)
    ("qwen3-30b-a3b[4 layers] qlora quantized experts ckpt", MOE, 4,
     {**ATTENTION_LORA, **QLORA, "quantize_moe_experts": True, "gradient_checkpointing": True}),
    ("qwen3-30b-a3b[4 layers] qlora quantized experts", MOE, 4,
     {**ATTENTION_LORA, **QLORA, "quantize_moe_experts": True}),
    ("qwen3-30b-a3b[4 layers] 8-bit lora quantized experts ckpt", MOE, 4,
     {**ATTENTION_LORA, "load_in_8bit": True, "quantize_moe_experts": True, "gradient_checkpointing": True}),
    # xIELU's Python form (no CUDA package): what it keeps and holds in its backward; CCE keeps the loss out of the
    # peak, 4096 tokens so that the layers set it
    ("apertus-8b[4 layers] lora cce s4096", APERTUS, 4, {**LORA, **CCE, "sequence_len": 4096}),
    ("apertus-8b[4 layers] lora cce ckpt s4096", APERTUS, 4,
     {**LORA, **CCE, "sequence_len": 4096, "gradient_checkpointing": True}),
    ("apertus-8b[4 layers] full cce ckpt s4096", APERTUS, 4,
     {**CCE, "sequence_len": 4096, "gradient_checkpointing": True}),
    # nn.LayerNorm under a 4-bit load: CUDA's autocast runs it in fp32 and the 4-bit Linears return fp32, so the
    # residual stream and the whole gated MLP are fp32 (the simulation runs CUDA's policy, ``_cuda_fp32_ops``)
    ("stablelm-2-1.6b[4 layers] qlora", STABLELM, 4, {**LORA, **QLORA}),
    ("stablelm-2-1.6b[4 layers] qlora ckpt", STABLELM, 4, {**LORA, **QLORA, "gradient_checkpointing": True}),
    # text only (no processor_type): the text model skips its 8 cross-attention layers of 40 (counting them put the
    # analytic peak 12.7 % over the simulation's)
    ("llama-3.2-11b-vision lora text-only s4096", MLLAMA, None,
     {**ATTENTION_LORA, "lora_target_modules": ["q_proj", "v_proj"], "sequence_len": 4096}),
]


def architecture(model: str, layers: int | None) -> Architecture:
    """The catalog architecture, with its first ``layers`` decoder layers only when given."""
    arch = resolve_architecture(model)
    assert arch is not None, model
    if layers is None:
        return arch
    return dataclasses.replace(arch, model_id=f"{model}[{layers} layers]",
                               config={**arch.config, "num_hidden_layers": layers})


def config(model: str, settings: dict[str, Any]) -> dict[str, Any]:
    """An Axolotl config with its defaults: 1 × 2048 tokens, bf16, sdpa, fused AdamW, then ``settings``."""
    return {**axolotl_defaults(), "base_model": model, "micro_batch_size": 1, "sequence_len": 2048, "bf16": True,
            "attn_implementation": "sdpa", "optimizer": "adamw_torch_fused", "gradient_checkpointing": False,
            **settings}


@functools.cache
def compare(case: str) -> tuple[float, float, str]:
    """(simulated, analytic peak allocated bytes, analytic peak phase) of one case, computed once per session."""
    _, model, layers, settings = next(c for c in CASES if c[0] == case)
    arch, cfg = architecture(model, layers), config(model, settings)
    run = facts(cfg, None, arch, H100)
    estimate = estimate_memory(run, arch, H100)
    return simulate(run, arch, H100).peak_allocated_bytes, estimate.peak_allocated, estimate.phase


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_analytic_peak_within_ten_percent_of_simulated(case: str) -> None:
    simulated, analytic, _ = compare(case)
    assert abs(analytic - simulated) / simulated <= TOLERANCE, case


def test_doras_share_of_the_peak_is_the_simulated_one() -> None:
    """What DoRA adds to a LoRA run without checkpointing (its kept outputs, most of a gigabyte here) on both sides,
    within the same tolerance: the whole peaks agreeing could hide it."""
    (plain_sim, plain_est, _), (dora_sim, dora_est, _) = (compare("smollm2-135m lora peft layers"),
                                                          compare("smollm2-135m lora dora"))
    assert dora_sim - plain_sim > 0.25 * plain_sim
    assert abs((dora_est - plain_est) / (dora_sim - plain_sim) - 1) <= TOLERANCE


def test_peft_layers_to_transform_adapts_the_listed_layers_only() -> None:
    """`peft_layers_to_transform: [0, 15]` on Llama 3.2 1B: PEFT (the simulation's wrap) adapts two of the 16 layers,
    and the estimate counts the same adapters: an eighth of those on every layer."""
    arch = architecture(LLAMA, None)
    every = facts(config(LLAMA, LORA), None, arch, H100)
    two = facts(config(LLAMA, {**LORA, "peft_layers_to_transform": [0, 15]}), None, arch, H100)
    result = simulate(two, arch, H100)
    assert result.trainable_parameters == estimate_memory(two, arch, H100).trainable_params
    assert 8 * estimate_memory(two, arch, H100).trainable_params == estimate_memory(every, arch, H100).trainable_params


def test_a_layernorm_qlora_s_gated_mlp_is_fp32() -> None:
    """StableLM 2's SwiGLU MLP reads its LayerNorm's fp32 output under a 4-bit load, so its gate, up, activation and
    product, and their gradients, are fp32: twice the half-precision figures (``gated_mlp_scale``). Without
    checkpointing every layer keeps them, and the estimate is within 2 % of the simulation (counted in bf16 it read
    −6.6 %)."""
    simulated, analytic, _ = compare("stablelm-2-1.6b[4 layers] qlora")
    assert analytic == pytest.approx(simulated, rel=0.02)
    arch = architecture(STABLELM, 4)
    setup = read_setup(facts(config(STABLELM, {**LORA, **QLORA}), None, arch, H100), arch)
    assert setup.fp32_source == "layernorm" and setup.mlp_fp32
    assert mlp_bytes(arch, setup, 0) == 2 * mlp_bytes(arch, setup.with_changes(fp32_source=None), 0)


def one_layer_saved_bytes_per_token(arch: Architecture, tokens: int = 1024, fp32_residual: bool = False) -> float:
    """Stas Bekman's per-layer experiment (ml-engineering, benchmarks/activation-memory-per-layer.py) on fake
    tensors: one bf16 decoder layer, trainable, sdpa, no mask; the bytes autograd saves plus the layer output.
    ``fp32_residual``: as Axolotl leaves a full fine-tune with sdpa, the norms in fp32 and an fp32 input (the fp32
    embedding's output), under autocast as Accelerate runs the forward."""
    import contextlib

    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from transformers import AutoModelForCausalLM

    from axlint.simulate import materialize_fake
    from axlint.training.model import hf_config

    cfg = hf_config(arch.model_type, {**arch.config, "num_hidden_layers": 1})
    cfg.use_cache = False
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    if fp32_residual:
        for name, module in model.named_modules():
            if "norm" in name:
                module.to(torch.float32)
    dtype = torch.float32 if fp32_residual else torch.bfloat16
    mixed = torch.autocast("cpu", dtype=torch.bfloat16) if fp32_residual else contextlib.nullcontext()
    with FakeTensorMode(allow_non_fake_inputs=True):
        materialize_fake(model)
        hidden = torch.empty((1, tokens, cfg.hidden_size), dtype=dtype, requires_grad=True)
        positions = torch.arange(tokens)[None]
        cos_sin = model.model.rotary_emb(hidden, positions)
        # an fp32 input is what the first norm keeps (its upcast is a no-op): saved, so it counts
        existing = {id(t.untyped_storage()) for t in ((*cos_sin, *model.parameters()) if fp32_residual
                                                       else (hidden, *cos_sin, *model.parameters()))}
        saved: dict[int, int] = {}

        def keep(t: Any) -> Any:
            storage = t.untyped_storage()
            if id(storage) not in existing:
                saved[id(storage)] = storage.nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t), mixed:
            out = model.model.layers[0](hidden_states=hidden, attention_mask=None, position_ids=positions,
                                        position_embeddings=cos_sin)
        out = out[0] if isinstance(out, tuple) else out
        saved.setdefault(id(out.untyped_storage()), out.untyped_storage().nbytes())
    return sum(saved.values()) / tokens


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B-Instruct", "HuggingFaceTB/SmolLM2-360M", "Qwen/Qwen3-4B",
                                   "google/gemma-1.1-2b-it", APERTUS])
@pytest.mark.parametrize("fp32_residual", [False, True])
def test_per_layer_activations_match_one_simulated_layer(model: str, fp32_residual: bool) -> None:
    """A (the analytic per-layer bytes) + the layer output (2h, or 4h on an fp32 residual stream) against the same
    layer on today's code, within 1 %: GQA, qk-norm, Gemma norms, GeGLU and Apertus's xIELU (its Python form, with
    its alphas training) included; bf16 embeddings (as
    Transformers loads the model) and Axolotl's fp32 ones."""
    arch = architecture(model, None)
    setup = read_setup(facts(config(model, {}), None, arch, H100), arch).with_changes(
        loader=ModelLoader.AXOLOTL if fp32_residual else ModelLoader.TRANSFORMERS)
    assert setup.embeddings_fp32 is fp32_residual
    analytic = layer_bytes_per_token(arch, setup, 0) + setup.embedding_bytes * arch.hidden_size
    assert analytic == pytest.approx(one_layer_saved_bytes_per_token(arch, fp32_residual=fp32_residual), rel=0.01)


def moe_block_saved_bytes_per_token(arch: Architecture, fp32_experts: bool, tokens: int = 512) -> float:
    """What autograd saves in the MoE block of transformers' own one-layer model, on the CPU with real tensors
    (the fake-tensor grouped_mm takes half precision only): bf16 weights, all frozen (a QLoRA's experts), the
    experts cast to fp32 as PEFT's kbit preparation leaves them when ``fp32_experts``, an input that needs a
    gradient (the adapted attention's output); parameters are not counted."""
    import torch
    from transformers import AutoModelForCausalLM

    from axlint.training.model import hf_config, upcast_unquantized

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(hf_config(arch.model_type, arch.config), dtype=torch.bfloat16)
    model.requires_grad_(False)
    if fp32_experts:
        upcast_unquantized(model)
    block = model.model.layers[0].mlp
    weights = {p.untyped_storage().data_ptr() for p in block.parameters()}
    saved: dict[int, int] = {}

    def keep(t: Any) -> Any:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    hidden = torch.randn(1, tokens, arch.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        out = block(hidden)
    out.float().sum().backward()  # the graph runs: what it saved was usable
    return sum(saved.values()) / tokens


@pytest.mark.parametrize("fp32_experts", [False, True])
def test_moe_block_activations_match_real_tensors(fp32_experts: bool) -> None:
    """The routed experts' analytic bytes per token (``mlp_bytes``: router, routing, gate|up, activation and down
    outputs) against Qwen3-MoE's block at h 256, I 128, 8 experts, top-2, within 1 % (the analytic side leaves out
    the 4-byte sum that normalises the top-k weights): fp32 experts keep their per-choice tensors in fp32."""
    small = {"hidden_size": 256, "moe_intermediate_size": 128, "num_experts": 8, "num_experts_per_tok": 2,
             "num_hidden_layers": 1, "vocab_size": 1024, "num_attention_heads": 4, "num_key_value_heads": 2,
             "head_dim": 64}
    base = architecture(MOE, None)
    arch = dataclasses.replace(base, model_id=f"{MOE}[small]", config={**base.config, **small})
    setup = read_setup(facts(config(MOE, {**ATTENTION_LORA, **QLORA}), None, arch, H100), arch)
    setup = setup.with_changes(loader=ModelLoader.AXOLOTL if fp32_experts else ModelLoader.TRANSFORMERS)
    assert setup.experts_fp32 is fp32_experts
    measured = moe_block_saved_bytes_per_token(arch, fp32_experts)
    assert mlp_bytes(arch, setup, 0) == pytest.approx(measured, rel=0.01)


def test_at_least_twelve_combinations_cover_the_matrix() -> None:
    """Dense and MoE, GQA, tied embeddings, full and LoRA, checkpointing on and off."""
    archs = {model: architecture(model, layers) for _, model, layers, _ in CASES}
    assert len(CASES) >= 12
    assert any(a.is_moe for a in archs.values()) and any(not a.is_moe for a in archs.values())
    assert any(a.num_kv_heads < a.num_heads for a in archs.values())
    assert any(a.tie_word_embeddings for a in archs.values())
    settings = [s for *_, s in CASES]
    assert {bool(s.get("adapter")) for s in settings} == {True, False}
    assert {bool(s.get("gradient_checkpointing")) for s in settings} == {True, False}


def test_print_table() -> None:
    """The comparison table of the cases above (pytest -s)."""
    print("\n| case | simulated GiB | analytic GiB | error | analytic peak phase |\n|---|---|---|---|---|")
    for case, *_ in CASES:
        simulated, analytic, phase = compare(case)
        print(f"| {case} | {simulated / GIB:.3f} | {analytic / GIB:.3f} | {analytic / simulated - 1:+.1%} | {phase} |")


def test_xielu_cuda_keeps_what_a_plain_activation_keeps() -> None:
    """With the optional XIELU CUDA package (``TrainSetup.xielu_cuda``) the activation saves only its input: the
    simulation's stand-in and the analytic model agree, and both hold less than the Python form."""
    arch = architecture(APERTUS, 4)
    run = facts(config(APERTUS, {**LORA, **CCE, "sequence_len": 4096}), None, arch, H100)
    python_form = read_setup(run, arch)
    kernel = python_form.with_changes(xielu_cuda=True)
    simulated = simulate(run, arch, H100, setup=kernel)
    assert any(note.startswith("XIELU CUDA") for note in simulated.notes)
    analytic = estimate_setup(simulated.setup, arch, H100).peak_allocated  # PEFT's q/k/v/o layers, as simulated
    assert analytic == pytest.approx(simulated.peak_allocated_bytes, rel=0.03)
    assert simulated.peak_allocated_bytes < compare("apertus-8b[4 layers] lora cce s4096")[0]
    assert analytic < estimate_setup(python_form, arch, H100).peak_allocated
    assert mlp_bytes(arch, kernel, 0) < mlp_bytes(arch, python_form, 0)


@pytest.mark.parametrize("settings", [{}, QLORA], ids=["lora", "qlora"])
def test_doras_weight_norm_transient_is_the_simulated_one(settings: dict[str, Any]) -> None:
    """A model whose DoRA peak is its weight norm's transient (wide square projections, 16 tokens): what DoRA adds
    on both sides, within 5 %. fp32 adapters make an fp32 identity and fp32 copies of the merged weight; under a
    4-bit base PEFT leaves the input in bf16, and the copies are bf16 (``activations.dora_norm_transient``)."""
    arch = Architecture("wide", "model-config", "llama",
                        {"hidden_size": 2048, "intermediate_size": 512, "num_hidden_layers": 2,
                         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 256,
                         "max_position_embeddings": 4096, "tie_word_embeddings": False})
    added = []
    for dora in (False, True):
        cfg = {"micro_batch_size": 1, "sequence_len": 16, "bf16": True, "attn_implementation": "sdpa",
               "optimizer": "adamw_torch", "gradient_checkpointing": False, **LORA, **PEFT_LAYERS, **settings,
               "lora_r": 8, "peft_use_dora": dora}
        run = facts(cfg, None, arch, H100)
        added.append((simulate(run, arch, H100).peak_allocated_bytes, estimate_memory(run, arch, H100).peak_allocated))
    (plain_sim, plain_est), (dora_sim, dora_est) = added
    assert dora_sim - plain_sim > plain_sim
    assert abs((dora_est - plain_est) / (dora_sim - plain_sim) - 1) <= 0.05


TOKEN_CASES = {
    # a tied head follows the embedding: its copy is kept from the forward to its backward
    "tied, a list": (True, 256, [3, 4, 5]),
    # the embedding's dense gradient at the end of the backward sets the peak of this wide, short run
    "untied, a list": (False, 1024, [3, 4, 5]),
    # the head's copy, its dense gradient and the logits' gradient at the head's backward
    "untied, embedding and head": (False, 1024, {"embed_tokens": [3, 4], "lm_head": [7]}),
}


@pytest.mark.parametrize("case", list(TOKEN_CASES))
def test_trainable_tokens_add_what_the_simulation_adds(case: str) -> None:
    """PEFT's trainable tokens (``peft_trainable_token_indices``, handed to PEFT by both sides): the rows they train
    and what their full copies of the embedding and the head add to the peak, within 1 % (a 32k vocabulary, so that
    the copies stand out)."""
    tie, hidden, indices = TOKEN_CASES[case]
    arch = Architecture("vocab", "model-config", "llama",
                        {"hidden_size": hidden, "intermediate_size": 512, "num_hidden_layers": 2,
                         "num_attention_heads": hidden // 64, "num_key_value_heads": hidden // 256,
                         "vocab_size": 32768, "max_position_embeddings": 4096, "tie_word_embeddings": tie})
    added = []
    for tokens in (None, indices):
        cfg = {"micro_batch_size": 1, "sequence_len": 64 if hidden == 256 else 16, "bf16": True,
               "attn_implementation": "sdpa", "optimizer": "adamw_torch", "adapter": "lora", "lora_r": 8,
               "lora_target_modules": ["q_proj"], **({"peft_trainable_token_indices": tokens} if tokens else {})}
        run = facts(cfg, None, arch, H100)
        simulated, estimate = simulate(run, arch, H100), estimate_memory(run, arch, H100)
        assert simulated.trainable_parameters == estimate.trainable_params
        added.append((simulated.peak_allocated_bytes, estimate.peak_allocated))
    (plain_sim, plain_est), (tokens_sim, tokens_est) = added
    vh = 32768 * hidden * 2  # one bf16 copy of the matrix
    assert tokens_sim - plain_sim > 0.85 * vh
    assert abs((tokens_est - plain_est) - (tokens_sim - plain_sim)) <= 0.01 * tokens_sim
