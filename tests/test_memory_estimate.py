import time

import pytest

from axlint.architectures import resolve_architecture
from axlint.facts import LossKernel
from axlint.hardware import parse_hardware
from axlint.memory import constants as C
from axlint.memory import estimate_memory
from axlint.memory.activations import backward_temp_bytes_per_token, dequantized_weight_bytes
from axlint.memory.estimate import COMPONENTS
from axlint.memory.logits import logits_bytes
from axlint.memory.overhead import expandable_segments_enabled
from axlint.memory.setup import ModelLoader, read_setup
from axlint.memory.states import known_optimizers, optimizer_spec
from tests.resolved import facts

GIB = 2**30
L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
H100 = parse_hardware("1xH100")
BASE = {"base_model": "meta-llama/Llama-3.1-8B", "sequence_len": 2048, "micro_batch_size": 1, "bf16": True,
        "sample_packing": True, "optimizer": "adamw_torch_fused", "flash_attention": True}
LIGER = {"plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_fused_linear_cross_entropy": True}
LORA = {"adapter": "lora", "lora_r": 16, "lora_target_linear": True, "lora_mlp_kernel": False}
"""A LoRA on PEFT's layers: a written kernel flag keeps Axolotl from turning its fused LoRA kernels on, as `axlint
validate` runs (the GPU figures below come from it); tests/test_lora_kernels.py covers the kernels."""
ZERO3 = {"zero_optimization": {"stage": 3, "overlap_comm": True, "sub_group_size": 0, "reduce_bucket_size": 4096**2,
                               "stage3_prefetch_bucket_size": int(0.9 * 4096**2),
                               "stage3_param_persistence_threshold": 40960, "max_live_parameters": 0},
         "bf16": {"enabled": True}}


def est(config=None, ds=None, hw=H100, arch=L8B, **kw):
    return estimate_memory(facts({**BASE, **(config or {})}, ds, arch, hw), arch, hw, **kw)


def est_liger_085(config, arch, hw=H100):
    """The estimate on liger-kernel 0.8.5, which our GPU runs installed: its fused loss adds the lm_head gradient in
    place (Axolotl 0.18.0 pins 0.8.0, which adds it through a product and its fp32 copy)."""
    from axlint.memory.estimate import estimate_setup

    setup = read_setup(facts({**BASE, **config}, None, arch, hw), arch)
    return estimate_setup(setup.with_changes(liger_flce_weight_grad_copies=False), arch, hw)


def gib(e, key):
    return round(e.components[key] / GIB, 2)


def test_full_finetune_bf16_single_gpu():
    e = est()
    # pure bf16 (Axolotl loads bf16, HF Trainer, torch AdamW states in bf16): 2 + 2 + 4 bytes/param
    assert gib(e, "weights") == 14.96
    assert e.phases["optimizer-step"] / GIB == pytest.approx(14.96 * 4, abs=0.05)
    assert gib(e, "optimizer_states") == 29.92
    assert gib(e, "master_weights") == 0


def test_deepspeed_mixed_precision_adds_fp32_master_and_states():
    e = est(ds={"zero_optimization": {"stage": 0}, "bf16": {"enabled": True}})
    assert gib(e, "weights") == 14.96
    assert gib(e, "master_weights") == 29.92
    assert gib(e, "optimizer_states") == 59.83  # 2 fp32 states × 8.03e9
    assert not e.fits


def test_qlora_8b():
    e = est({"adapter": "qlora", "load_in_4bit": True, "lora_r": 32, "lora_target_linear": True,
             "gradient_checkpointing": True, "optimizer": "adamw_bnb_8bit"}, hw=parse_hardware("1x24GiB"))
    assert e.trainable_params == 83_886_080  # memory-model.md §1.1: 83.9 M
    # NF4+DQ linears (6.98e9 × 0.516 B) + embed/lm_head/norms bf16 (1.05e9 × 2) + fp32 adapters
    assert gib(e, "weights") == pytest.approx((6.98e9 * 0.5159 + 1.0509e9 * 2 + 83.9e6 * 4) / GIB, abs=0.05)
    assert e.fits and 8 < e.peak_device / GIB < 16


def test_zero3_over_8_gpus_shards_states():
    e = est({"gradient_checkpointing": True}, ds=ZERO3, hw=parse_hardware("8xH100"))
    assert gib(e, "weights") == pytest.approx(14.96 / 8, abs=0.01)
    assert e.components["sharding_buffers"] > 2 * 525e6  # gathered embedding + its grads
    assert e.fits


def test_zero_stages_are_monotone():
    hw = parse_hardware("8xH100")
    peaks = [est({"gradient_checkpointing": True}, {"zero_optimization": {"stage": s, "reduce_bucket_size": 4096**2,
                                                                            "allgather_bucket_size": 4096**2},
                                                    "bf16": {"enabled": True}}, hw).peak_device
             for s in (0, 1, 2, 3)]
    assert peaks[3] <= peaks[2] <= peaks[1] <= peaks[0]


def test_json_contract_keys_exactly():
    j = est().to_json("cfg.yml")
    assert list(j) == ["config", "model", "hardware", "assumptions", "per_gpu", "eval_peak_device_gib",
                       "eval_required_gib", "cpu_offload_gib", "fits", "headroom_gib"]
    assert list(j["model"]) == ["id", "source", "parameters"] and j["model"]["parameters"] == 8_030_261_248
    assert j["hardware"] == {"gpu": "H100-80GB", "count": 1, "memory_gib": 79.2}
    assert list(j["per_gpu"]) == ["components_gib", "peak_allocated_gib", "peak_reserved_gib", "peak_device_gib",
                                  "required_gib"]
    assert list(j["per_gpu"]["components_gib"]) == list(COMPONENTS)
    assert all(isinstance(a, str) for a in j["assumptions"])
    assert sum(j["per_gpu"]["components_gib"].values()) == pytest.approx(j["per_gpu"]["peak_device_gib"], abs=0.06)
    assert j["headroom_gib"] == pytest.approx(79.2 - j["per_gpu"]["required_gib"], abs=0.02)
    allocated, context = j["per_gpu"]["peak_allocated_gib"], j["per_gpu"]["components_gib"]["cuda_context"]
    assert j["per_gpu"]["required_gib"] == pytest.approx(allocated * 1.05 + context, abs=0.02)


def test_eval_spike_from_larger_eval_batch():
    lora = {**LORA, "gradient_checkpointing": True, **LIGER}
    same = est(lora)
    spike = est({**lora, "eval_batch_size": 8})
    assert spike.eval_peak_device > same.eval_peak_device + 10 * GIB
    assert spike.peak_device == same.peak_device
    # Liger FLCE fuses only in training: eval materialises the 128k-vocab logits
    assert spike.eval_peak_device > spike.peak_device


def test_liger_and_cce_lower_logits():
    hf, liger = est(LORA), est({**LORA, **LIGER})
    cce = est({**LORA, "plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]})
    loss = {name: logits_bytes(L8B, e.setup, e.setup.tokens)
            for name, e in (("hf", hf), ("liger", liger), ("cce", cce))}
    # fp32 log-softmax + its gradient + the nll gradient at the start of backward
    assert hf.components["logits"] == loss["hf"] == pytest.approx(12 * 128256 * 2048)
    assert loss["liger"] < loss["hf"] / 20
    assert loss["cce"] < loss["liger"]
    # so small that the last layer's backward, not the loss, sets the peak: the loss buffers are freed by then
    assert liger.components["logits"] == 0 and liger.phase == "forward-backward"


def test_checkpointing_lowers_activations():
    off, on = est(LORA), est({**LORA, "gradient_checkpointing": True})
    offload = est({**LORA, "gradient_checkpointing": "offload"})
    assert on.components["activations"] < off.components["activations"] / 5
    assert offload.components["activations"] < on.components["activations"]


def test_eager_attention_is_quadratic():
    eager = {**LORA, "flash_attention": False, "eager_attention": True}
    a1 = est({**eager, "sequence_len": 4096}).components["activations"]
    a2 = est({**eager, "sequence_len": 8192}).components["activations"]
    assert a2 > 2.5 * a1


def test_lora_dropout_costs_activations():
    assert est({**LORA, "lora_dropout": 0.05}).components["activations"] > \
        est({**LORA, "lora_dropout": 0.0}).components["activations"]


def test_modules_to_save_embeddings_is_expensive():
    extra = est({**LORA, "lora_modules_to_save": ["embed_tokens", "lm_head"]}).trainable_params \
        - est(LORA).trainable_params
    assert extra == 2 * 128256 * 4096


def test_unfrozen_parameters():
    e = est({"unfrozen_parameters": [r"^lm_head.weight", r"model.layers.3[01].mlp.*"]})
    assert e.trainable_params == 128256 * 4096 + 2 * 3 * 4096 * 14336


@pytest.mark.parametrize("key", ["sequence_len", "micro_batch_size"])
def test_peak_grows_with_tokens(key):
    values = [1, 2, 4] if key == "micro_batch_size" else [512, 1024, 4096]
    peaks = [est({**LORA, key: v, "gradient_checkpointing": True}).peak_device for v in values]
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]


def test_optimizer_offload_moves_states_to_cpu():
    ds = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True}}
    e = est({"gradient_checkpointing": True}, ds=ds, hw=parse_hardware("8xH100"))
    assert e.components["optimizer_states"] == 0 and e.cpu_offload / GIB > 100


def test_expandable_segments_lower_slack():
    assert est(expandable_segments=True).peak_reserved < est().peak_reserved
    assert expandable_segments_enabled({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    assert not expandable_segments_enabled({})


def test_every_listed_axolotl_optimizer_is_known():
    names = ("adamw_torch adamw_torch_fused adamw_bnb_8bit paged_adamw_8bit paged_adamw_32bit adamw_8bit adafactor "
             "lion_8bit sgd schedule_free_adamw ademamix muon adamw_torch_4bit adamw_torch_8bit galore_adamw lomo")
    assert all(optimizer_spec(n) for n in names.split())
    assert len(known_optimizers()) > 50
    assert "unknown: AdamW" in " ".join(est({"optimizer": "my_custom_opt"}).assumptions)


def test_moe_and_mla_models_estimate():
    for model in ("Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V2-Lite", "mistralai/Mixtral-8x7B-v0.1"):
        e = est({"gradient_checkpointing": True}, ds=ZERO3, hw=parse_hardware("8xH100"),
                arch=resolve_architecture(model))
        assert e.peak_device > 0


def test_estimate_speed_benchmark():
    config = {**BASE, "adapter": "qlora", "load_in_4bit": True, "lora_r": 32, "lora_target_linear": True}
    n = 200
    start = time.perf_counter()
    for _ in range(n):
        arch = resolve_architecture("meta-llama/Llama-3.1-8B")
        estimate_memory(facts(config, None, arch, H100), arch, H100)
    print(f"\nestimate_memory (resolve + estimate): {(time.perf_counter() - start) / n * 1000:.2f} ms per call")


# ---------------------------------------------------------------- gradient buffers, FSDP1 upcast, loss reserved


def test_zero3_gradient_partition_buffer_exists_before_backward():
    # DeepSpeed ZeRO-3 allocates its gradient partitions once (grad_partitions_flat_buffer): bf16 P/N at the loss
    # moment already, with gradient_accumulation_steps 1; offloading the optimizer moves the buffer to the CPU
    hw = parse_hardware("8xH100")
    e = est({"micro_batch_size": 8}, ZERO3, hw)
    assert e.phase == "forward-backward" and e.components["logits"] > 0
    assert e.components["gradients"] == pytest.approx(2 * L8B.total_params / 8)
    offloaded = {**ZERO3, "zero_optimization": {**ZERO3["zero_optimization"],
                                                "offload_optimizer": {"device": "cpu"}}}
    assert est({"micro_batch_size": 8}, offloaded, hw).components["gradients"] == 0


def test_offloaded_optimizer_takes_the_gradients_to_the_cpu():
    # ZeRO-2 accumulates the reduced partitions in CPU RAM and ZeRO-3 keeps its gradient buffer there (with
    # gradient accumulation too); ZeRO-1 keeps full gradients on the GPU until the boundary
    hw = parse_hardware("8xH100")
    config = {"gradient_checkpointing": True, "gradient_accumulation_steps": 4}
    for stage, on_gpu in ((1, True), (2, False), (3, False)):
        ds = {"zero_optimization": {"stage": stage, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True}}
        e = est(config, ds, hw)
        assert (e.components["gradients"] > 0) is on_gpu, stage
    fsdp = est({**config, **LORA, "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD",
                                                  "fsdp_offload_params": True}}, None, hw)
    assert fsdp.components["gradients"] == 0


def test_zero2_gradient_buckets_live_in_backward_only():
    # one reduce_bucket_size bucket (two with overlap_comm) during backward, released before the step; no
    # all-gather bucket; with offload_optimizer a largest-param buffer (the embedding here) stays all run
    hw = parse_hardware("8xH100")
    config = {"gradient_checkpointing": True, "micro_batch_size": 8}
    for overlap, copies in ((False, 1), (True, 2)):
        ds = {"zero_optimization": {"stage": 2, "reduce_bucket_size": 4096**2, "allgather_bucket_size": 10**9,
                                    "overlap_comm": overlap}, "bf16": {"enabled": True}}
        e = est(config, ds, hw)
        assert e.phase == "forward-backward"
        assert e.components["sharding_buffers"] == pytest.approx(copies * 2 * 4096**2)
        assert e.phases["optimizer-step"] == pytest.approx(
            (2 + (2 + 2 + 4 + 4 + 8) / 8) * L8B.total_params)  # W; bf16 G, its flat copy, fp32 G, master, states
    off = est(config, {"zero_optimization": {"stage": 2, "reduce_bucket_size": 4096**2,
                                             "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True}}, hw)
    embed = 2 * L8B.embedding_params
    assert off.components["sharding_buffers"] == pytest.approx(2 * 4096**2 + embed)
    assert off.phases["optimizer-step"] == pytest.approx(2 * L8B.total_params + embed)


def test_fsdp1_full_finetune_trains_fp32_params():
    # accelerate upcasts FSDP1 FlatParameters to fp32 under bf16 mixed precision: sharded W 4, G 4, AdamW 2×4 bytes
    hw = parse_hardware("8xH100")
    fsdp = {"fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}, "gradient_checkpointing": True,
            "optimizer": "adamw_torch", "sequence_len": 128, **LIGER}
    v1, v2 = est(fsdp, None, hw), est({**fsdp, "fsdp_version": 2}, None, hw)
    p = L8B.total_params / 8
    assert v1.components["weights"] == pytest.approx(4 * p) and v2.components["weights"] == pytest.approx(2 * p)
    # step: W + G + AdamW's 2 states + foreach's sqrt temporary (1 state-sized), sharded; no gathered units
    assert v1.phases["optimizer-step"] == pytest.approx((4 + 4 + 8 + 4) * p)
    assert v2.phases["optimizer-step"] == pytest.approx((2 + 2 + 4 + 2) * p)
    lora = est({**fsdp, **LORA}, None, hw)  # adapter runs keep the load dtype (grouping with LoRA not modelled)
    assert lora.components["weights"] < 0.6 * v1.components["weights"]


def test_fsdp1_keeps_the_whole_4bit_quantization_state_on_every_gpu():
    """FSDP1 shards and offloads the packed 4-bit data; bitsandbytes' quant_state is no parameter and stays whole on
    each GPU: n·(1/64 + 4/(64·256)) bytes with double quant. FSDP2 is left as it was (not read)."""
    from dataclasses import replace

    from axlint.memory.estimate import estimate_setup
    from axlint.memory.states import quantized_params

    hw = parse_hardware("2xH100")
    qlora = {"adapter": "qlora", "load_in_4bit": True, "lora_r": 16, "lora_target_linear": True,
             "gradient_checkpointing": True, "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}}

    def weights(config):  # in training, after the load (a model that reached the GPUs already sharded)
        setup = est(config, None, hw).setup
        setup = setup.with_changes(model_load=replace(setup.model_load, quantized_off_gpu=True))
        return setup, estimate_setup(setup, L8B, hw).components["weights"]

    setup, sharded = weights(qlora)
    state = quantized_params(L8B, setup) * (1 / 64 + 4 / (64 * 256))
    _, v2 = weights({**qlora, "fsdp_version": 2})
    _, offloaded = weights({**qlora, "fsdp_config": {**qlora["fsdp_config"], "fsdp_offload_params": True}})
    assert sharded - v2 == pytest.approx(state / 2)
    assert offloaded == pytest.approx(state)


def test_fsdp_step_sees_only_sharded_states():
    # the gathered units are resharded in the post-backward hooks: no sharding buffers at the optimizer step
    fsdp = {"fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}, "optimizer": "adamw_torch",
            "micro_batch_size": 1, "sequence_len": 128, "gradient_checkpointing": True, **LIGER}
    e = est(fsdp, None, parse_hardware("8xH100"))
    assert e.phase == "optimizer-step" and e.components["sharding_buffers"] == 0
    # (without Liger: its fused loss keeps a whole gathered lm_head gradient until backward, the larger moment here)
    z3 = est({"micro_batch_size": 1, "sequence_len": 128, "gradient_checkpointing": True}, ZERO3,
             parse_hardware("8xH100"))
    assert z3.phase == "optimizer-step" and z3.components["sharding_buffers"] > 0


@pytest.mark.parametrize("loss, unreused", [({}, 2), (LIGER, 0)])
def test_hf_loss_leaves_its_bf16_logits_block_cached(loss, unreused):
    # reserved = 12·T·V allocated + 2·T·V cached-unreused (bf16 logits block too small for the fp32 gradients)
    e = est({"sequence_len": 4096, "gradient_checkpointing": True, **LORA, **loss})
    plain = C.ALLOCATOR_SLACK * e.peak_allocated
    assert e.components["allocator_slack"] - plain == pytest.approx(unreused * 4096 * L8B.vocab_size, abs=1)
    assert e.peak_reserved == pytest.approx(e.peak_allocated + e.components["allocator_slack"])


MISTRAL = resolve_architecture("mistralai/Mistral-7B-v0.1")
MISTRAL_QLORA = {**BASE, "base_model": "mistralai/Mistral-7B-v0.1", "adapter": "qlora", "load_in_4bit": True,
                 "lora_r": 64, "lora_dropout": 0.1, "lora_target_linear": True, "gradient_checkpointing": True,
                 "micro_batch_size": 8, "lora_qkv_kernel": False, "lora_o_kernel": False, "lora_mlp_kernel": False}


def test_bitsandbytes_before_0_43_2_kept_the_4bit_layers_inputs():
    """``MatMul4Bit`` kept its input beside the packed weight until bitsandbytes 0.43.1 (``ctx.tensors = (A, B)``):
    with dropout, where no adapter keeps the input itself, each input group the base layers read is kept once more,
    the attention and MLP inputs 2h each and the down projection's 2I (the attention output is the kernel's own)."""
    from axlint.memory.activations import layer_bytes_per_token

    today = _setup(MISTRAL_QLORA, arch=MISTRAL)
    old = today.with_changes(nf4_keeps_input=True)
    assert not today.base_keeps_input and old.base_keeps_input
    h, i = MISTRAL.hidden_size, MISTRAL.intermediate_size
    assert layer_bytes_per_token(MISTRAL, old, 0) - layer_bytes_per_token(MISTRAL, today, 0) == 2 * (2 * h + i)
    assert _setup({**MISTRAL_QLORA, "adapter": "lora", "load_in_4bit": False, "load_in_8bit": True},
                  arch=MISTRAL).base_keeps_input  # the 8-bit matmul still keeps it


def test_peft_before_0_12_trained_the_adapters_of_a_bf16_base_in_bf16():
    """PEFT 0.10 cast each LoRA layer to its base weight's dtype (``LoraLayer.update_layer``), so a bf16 base trains
    bf16 adapters: W, G and AdamW's two states at 2 bytes instead of 4, and no fp32 copy of any adapted input."""
    from axlint.memory.activations import adapter_input_copies
    from axlint.memory.estimate import estimate_setup
    from axlint.memory.params import trainable

    today = _setup({"adapter": "lora", "lora_r": 16, "lora_target_linear": True, "lora_mlp_kernel": False})
    old = today.with_changes(adapters_in_load_dtype=True)
    assert (today.adapter_bytes, old.adapter_bytes) == (4, 2)
    assert adapter_input_copies(today) and not adapter_input_copies(old)
    t = trainable(L8B, today)
    new, before = estimate_setup(old, L8B, H100), estimate_setup(today, L8B, H100)
    assert before.components["optimizer_states"] - new.components["optimizer_states"] == 2 * 2 * t.trained_adapter
    assert before.components["weights"] - new.components["weights"] == 2 * t.adapter
    assert new.components["activations"] < before.components["activations"]


def test_the_peak_reserved_is_the_largest_any_moment_reserved():
    """The caching allocator keeps what it reserved: when the first layer's backward allocates more than the loss
    moment but reserves less (the loss leaves its cached-unreused block, 2·T·V), the peak reserved is the loss
    moment's, and a larger layer backward does not lower it."""
    from axlint.memory.estimate import estimate_setup

    today = _setup(MISTRAL_QLORA, arch=MISTRAL)
    loss_peak = estimate_setup(today, MISTRAL, H100)
    layer_peak = estimate_setup(today.with_changes(nf4_keeps_input=True), MISTRAL, H100)
    assert loss_peak.components["logits"] > 0 and layer_peak.components["logits"] == 0
    assert layer_peak.peak_allocated > loss_peak.peak_allocated
    assert layer_peak.peak_reserved == pytest.approx(loss_peak.peak_reserved)
    unreused = C.LOGITS_HF_UNREUSED * MISTRAL.vocab_size * 8 * 2048
    assert loss_peak.peak_reserved == pytest.approx(loss_peak.peak_allocated * (1 + C.ALLOCATOR_SLACK) + unreused)


@pytest.mark.parametrize("key", ["quantize_moe_experts", "llama4_linearized_experts"])
def test_a_4bit_load_leaves_fused_experts_unquantized_unless_axolotl_quantizes_them(key):
    """transformers 5 stores routed experts as 3-D parameters (MixtralExperts), which bitsandbytes' replacement of
    nn.Linear modules does not touch: a 4-bit Mixtral keeps ~45 B expert weights unquantized (in fp32 once PEFT's kbit
    preparation has run) unless Axolotl quantizes them on load (quantize_moe_experts) or swaps them for per-expert
    nn.Linear modules (llama4_linearized_experts)."""
    from axlint.memory.setup import read_setup
    from axlint.memory.states import weight_bytes
    from axlint.memory.params import trainable

    mixtral = resolve_architecture("mistralai/Mixtral-8x7B-v0.1")
    qlora = {"adapter": "qlora", "load_in_4bit": True, "lora_r": 16, "lora_target_modules": ["q_proj", "v_proj"]}

    def weights(config):
        setup = read_setup(facts(config, None, mixtral, H100), mixtral)
        return weight_bytes(mixtral, setup, trainable(mixtral, setup))

    experts = mixtral.expert_params
    assert experts > 0.95 * 45e9 and mixtral.quantizable_params + experts < mixtral.total_params
    plain, quantized = weights(qlora), weights({**qlora, key: True})
    assert plain - quantized == pytest.approx(experts * (4 - 4.127 / 8), rel=0.01)
    assert weights({"adapter": "lora", "lora_r": 16, key: True}) == weights({"adapter": "lora", "lora_r": 16})


def test_liger_glu_backward_writes_its_gradients_in_place():
    # Liger's SwiGLU backward stores the gate and up gradients over the saved gate and up outputs: of the HF MLP's
    # 6·I backward temporaries only the product's gradient 2·I is new
    hw = parse_hardware("8xH100")
    fsdp = {"fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}, "gradient_checkpointing": True}
    glu = {"plugins": ["axolotl.integrations.liger.LigerPlugin"], "liger_glu_activation": True}
    hf = read_setup(facts({**BASE, **fsdp}, None, L8B, hw), L8B)
    liger = read_setup(facts({**BASE, **fsdp, **glu}, None, L8B, hw), L8B)
    assert liger.liger_glu and not hf.liger_glu
    saved = backward_temp_bytes_per_token(L8B, hf, 0) - backward_temp_bytes_per_token(L8B, liger, 0)
    assert saved == 4 * L8B.dense_intermediate_size


def test_a_lora_target_that_names_one_layer_adapts_that_layer_only():
    """PEFT matches a list entry as the end of a module path: `layers.3.self_attn.q_proj` reaches layer 3's q_proj
    and no other layer's."""
    from axlint.memory.params import lora_targets
    from axlint.memory.setup import read_setup

    run = {**BASE, "adapter": "lora", "lora_target_modules": ["layers.3.self_attn.q_proj"]}
    adapted = lora_targets(L8B, read_setup(facts(run, None, L8B, H100), L8B))
    assert [layer for layer, lins in adapted.items() if lins] == [3]
    assert [lin.name for lin in adapted[3]] == ["q_proj"]


def test_the_activations_of_a_layer_named_by_a_target_are_its_own():
    from axlint.memory.activations import per_layer_bytes_per_token
    from axlint.memory.setup import read_setup

    run = {**BASE, "adapter": "lora", "lora_target_modules": ["layers.3.self_attn.q_proj"]}
    layers = per_layer_bytes_per_token(L8B, read_setup(facts(run, None, L8B, H100), L8B))
    assert layers[3] > layers[2] == layers[4]


def test_a_quantized_base_holds_its_largest_linear_dequantized_in_backward():
    """bitsandbytes computes a 4/8-bit Linear's input gradient from a bf16 copy of its weight: Llama-3.1-8B's largest
    decoder Linear is an MLP projection, 4096 x 14336 (58,720,256 weights, 117,440,512 bytes); an unquantized base
    holds none. With Liger's fused loss (no logits) the peak is one layer's backward on top of the stored
    activations, so the copy adds exactly its bytes there."""
    qlora = {**LORA, "adapter": "qlora", "load_in_4bit": True}
    setup = read_setup(facts({**BASE, **qlora}, None, L8B, H100), L8B)
    assert dequantized_weight_bytes(L8B, setup) == 2 * 4096 * 14336
    assert dequantized_weight_bytes(L8B, read_setup(facts({**BASE, **LORA}, None, L8B, H100), L8B)) == 0
    with_copy = est({**LIGER, **qlora})
    assert with_copy.phase == "forward-backward"
    without = est_without_copy({**LIGER, **qlora})
    assert with_copy.components["activations"] - without.components["activations"] == 2 * 4096 * 14336


def est_without_copy(config):
    """The same estimate with the dequantized copy taken out (``estimate._backward_moments`` reads it by name)."""
    from unittest import mock

    with mock.patch("axlint.memory.estimate.dequantized_weight_bytes", return_value=0.0):
        return est(config)


def test_zero2_step_flattens_the_gradients_before_the_fp32_copy():
    # DeepSpeed's ZeRO-1/2 step holds the 16-bit gradient partition, a flat 16-bit copy of it and its fp32 copy at
    # once (measured: SmolLM2-1.7B / Llama-3.2-3B full fine-tunes under ZeRO-2 on an H200); an fp32 model's flat copy
    # is already fp32, so nothing more
    ds = {"zero_optimization": {"stage": 2, "reduce_bucket_size": 4096**2}, "bf16": {"enabled": True}}
    e = est({"gradient_checkpointing": True}, ds)
    assert e.phase == "optimizer-step"
    assert e.components["gradients"] == pytest.approx((2 + 2 + 4) * L8B.total_params)
    fp32 = est({"gradient_checkpointing": True, "bf16": False}, {"zero_optimization": {"stage": 2}})
    # W 4, G 4, the flat copy 4 (already fp32: `.to(fp32)` returns it), AdamW 8; no separate master copy counted
    assert fp32.phases["optimizer-step"] == pytest.approx((4 + 4 + 4 + 8) * L8B.total_params)


def test_deepspeed_on_one_gpu_holds_an_nccl_communicator():
    # measured on an H200 by NVML outside PyTorch's allocator: 0.74 GiB per process alone, 1.29 GiB under DeepSpeed
    ds = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    plain, deepspeed = est({"gradient_checkpointing": True}), est({"gradient_checkpointing": True}, ds)
    assert gib(plain, "cuda_context") == 0.75 and gib(deepspeed, "cuda_context") == 1.3
    eight = est({"gradient_checkpointing": True}, ds, parse_hardware("8xH100"))
    assert gib(eight, "cuda_context") == 1.75


def test_a_4bit_base_layer_keeps_no_input_an_8bit_one_does():
    # bitsandbytes >= 0.43.2 MatMul4Bit saves only the packed weight; MatMul8bitLt saves its input A. Per layer and
    # token the 8-bit load keeps the attention input h, the MLP input h and the down projection's input I once more
    # (2 bytes each); the o_proj input is the attention kernel's own output either way
    from axlint.memory.activations import input_bytes
    from axlint.memory.params import lora_targets

    qlora = {**LORA, "adapter": "qlora", "load_in_4bit": True, "lora_dropout": 0.05}
    nf4 = read_setup(facts({**BASE, **qlora}, None, L8B, H100), L8B)
    int8 = read_setup(facts({**BASE, **LORA, "load_in_8bit": True, "lora_dropout": 0.05}, None, L8B, H100), L8B)
    assert (nf4.quantization, int8.quantization) == ("nf4", "int8")
    h, i = L8B.hidden_size, L8B.config["intermediate_size"]
    kept = input_bytes(L8B, int8, 0, lora_targets(L8B, int8)[0]) - input_bytes(L8B, nf4, 0, lora_targets(L8B, nf4)[0])
    assert kept == 2 * h + 2 * h + 2 * i


def _setup(config, ds=None, arch=L8B):
    return read_setup(facts({**BASE, **config}, ds, arch, H100), arch)


def test_an_fp32_adapter_under_autocast_holds_its_cast_input_for_a_moment():
    """down_proj's adapter (d_in = I = 14336, d_out = h = 4096): base output 2h, fp32 input 4I, fp32 dropped copy
    4I, and the input itself 2I, which nothing keeps for backward; without dropout no dropped copy; none of it where
    PEFT does not cast (DeepSpeed's bf16 adapters, a 4-bit base under autocast)."""
    from axlint.memory.activations import adapter_transient_bytes_per_token

    h, i = L8B.hidden_size, L8B.intermediate_size
    lora = {**LORA, "gradient_checkpointing": True, "lora_dropout": 0.05}
    assert adapter_transient_bytes_per_token(L8B, _setup(lora), 0) == 2 * h + 4 * i + 4 * i + 2 * i
    assert adapter_transient_bytes_per_token(L8B, _setup({**lora, "lora_dropout": 0.0}), 0) == 2 * h + 4 * i + 2 * i
    qlora = {**lora, "adapter": "qlora", "load_in_4bit": True}
    assert adapter_transient_bytes_per_token(L8B, _setup(qlora), 0) == 0
    assert adapter_transient_bytes_per_token(L8B, _setup(lora, {"zero_optimization": {"stage": 2}}), 0) == 0


def test_a_checkpointed_lora_layer_peaks_in_its_adapter_when_liger_shrinks_the_backward():
    # Liger's GLU backward adds 2h + 2I per token; the adapter's moment in the recompute adds 2h + 10I + the output
    # gradient 2h: measured on an H200, llama31-8b-lora-gc-8k-liger peaked there (20.48 GiB, estimate 20.48)
    h, i, tokens = L8B.hidden_size, L8B.intermediate_size, 8192
    config = {**LORA, **LIGER, "liger_glu_activation": True, "gradient_checkpointing": True, "lora_dropout": 0.05,
              "sequence_len": tokens}
    with_moment = est(config)
    deepspeed = est(config, {"zero_optimization": {"stage": 0}, "bf16": {"enabled": True}})
    assert with_moment.components["activations"] - deepspeed.components["activations"] == pytest.approx(
        tokens * ((2 * h + 10 * i + 2 * h) - (2 * h + 2 * i)))


def test_liger_fused_loss_keeps_a_trained_lm_heads_gradient_from_the_forward():
    """A bf16 gradient buffer of the lm_head's size; liger-kernel 0.8.0 (Axolotl's pin) adds each chunk's share
    through a bf16 product and its fp32 copy beside it, a release that adds in place (0.8.5) does not."""
    v, h, tokens = L8B.vocab_size, L8B.hidden_size, 4096
    full, lora = _setup({**LIGER}), _setup({**LIGER, **LORA})
    assert logits_bytes(L8B, full, tokens) - logits_bytes(L8B, lora, tokens) == (2 + 2 + 4) * v * h
    in_place = full.with_changes(liger_flce_weight_grad_copies=False)
    assert logits_bytes(L8B, in_place, tokens) - logits_bytes(L8B, lora, tokens) == 2 * v * h


def test_liger_fused_loss_product_of_an_fp32_run_needs_no_fp32_copy():
    v, h, tokens = L8B.vocab_size, L8B.hidden_size, 4096
    fp32 = _setup({**LIGER, "bf16": False, "fp32": True})
    lora = _setup({**LIGER, **LORA, "bf16": False, "fp32": True})
    assert fp32.param_bytes == 4
    assert logits_bytes(L8B, fp32, tokens) - logits_bytes(L8B, lora, tokens) == (4 + 4) * v * h


def test_a_tied_trained_embedding_gradient_waits_through_the_backward():
    # measured on an H200 (liger-kernel 0.8.5): Llama-3.2-1B full fine-tune with Liger, two micro batches, a second
    # 0.49 GiB lm_head gradient beside the accumulated gradients while the layers back-propagate
    arch = resolve_architecture("meta-llama/Llama-3.2-1B")
    config = {"base_model": "meta-llama/Llama-3.2-1B", **LIGER, "liger_glu_activation": True,
              "gradient_checkpointing": True, "gradient_accumulation_steps": 2, "sequence_len": 8192}
    e = est_liger_085(config, arch)
    embedding = arch.embedding_params * 2
    assert e.phase == "forward-backward"
    assert e.components["gradients"] == pytest.approx(arch.total_params * 2 + embedding)


L1B = resolve_architecture("meta-llama/Llama-3.2-1B")
L1B_SDPA = {"base_model": "meta-llama/Llama-3.2-1B", "flash_attention": None, "sdp_attention": True,
            "gradient_checkpointing": True, "gradient_accumulation_steps": 2, "sequence_len": 4096,
            "micro_batch_size": 2}


@pytest.mark.parametrize("config, kept", [
    ({}, True),                                                       # sdpa (transformers' default), one GPU
    ({"sdp_attention": True}, True),
    ({"eager_attention": True}, True),
    ({"flash_attention": True}, False),                               # cast back for the flash kernels
    ({"adapter": "lora", "lora_target_linear": True}, False),         # cast back for an adapter
    ({"plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]}, False),
    ({"bf16": False, "fp16": False}, False),                          # an fp32 model has nothing to upcast
    ({"fsdp_version": 2, "fsdp_config": {"reshard_after_forward": True}}, False),  # never upcast under FSDP
])
def test_axolotl_keeps_the_embeddings_fp32_only_in_a_plain_half_precision_full_finetune(config, kept):
    raw = {"bf16": True, "sample_packing": True, "sequence_len": 2048, **config}
    assert facts(raw, None, L1B, parse_hardware("2xH100" if "fsdp_version" in raw else "1xH100")) \
        .embeddings_fp32 is kept


def test_deepspeed_casts_the_upcast_embeddings_back():
    ds = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    assert not facts({"bf16": True, "sequence_len": 2048}, ds, L1B, H100).embeddings_fp32


def test_fp32_embeddings_cost_their_states_a_head_copy_and_an_fp32_residual_stream():
    """Llama-3.2-1B (tied, V·h = E), sdpa against flash attention, 2×4096 tokens with checkpointing and two micro
    batches: W + E·2, G + E·2, torch AdamW's two states + 2·E·2, lm_head's bf16 copy E·2 at the loss moment, and
    the 16 checkpointed layer inputs and the final norm's normalised product at 4 bytes, + (L + 1)·T·h·2; measured on an H100: 24.617 and 21.640 GiB allocated
    (benchmarks/memory/results-NVIDIA_H100_80GB_HBM3-2026-11-26.md)."""
    fp32 = est(L1B_SDPA, arch=L1B)
    bf16 = est({**L1B_SDPA, "sdp_attention": None, "flash_attention": True}, arch=L1B)
    e, tokens = L1B.embedding_params, 2 * 4096
    assert fp32.setup.embeddings_fp32 and not bf16.setup.embeddings_fp32
    assert fp32.components["weights"] - bf16.components["weights"] == 2 * e
    assert fp32.components["gradients"] - bf16.components["gradients"] == 2 * e
    assert fp32.components["optimizer_states"] - bf16.components["optimizer_states"] == 2 * 2 * e
    assert fp32.components["logits"] - bf16.components["logits"] == 2 * e
    assert fp32.components["activations"] - bf16.components["activations"] \
        == (L1B.num_layers + 1) * tokens * L1B.hidden_size * 2
    assert fp32.peak_allocated / GIB == pytest.approx(24.617, rel=0.01)
    assert bf16.peak_allocated / GIB == pytest.approx(21.640, rel=0.01)


def test_without_checkpointing_each_linear_keeps_its_own_cast_of_an_fp32_norm_output():
    """Per layer and token: the two residual norms keep their normalised product at 4 bytes (+2h each), and q, k, v
    (3 readers) and gate, up (2 readers) each keep their own bf16 copy of the norm output where a bf16 output is kept
    once (+2·2h and +1·2h): 10h in all; measured on an H100 at 2×2048 tokens: 25.552 GiB allocated."""
    config = {**L1B_SDPA, "gradient_checkpointing": False, "sequence_len": 2048}
    fp32, bf16 = _setup(config, arch=L1B), _setup({**config, "sdp_attention": None, "flash_attention": True}, arch=L1B)
    from axlint.memory.activations import layer_bytes_per_token
    assert layer_bytes_per_token(L1B, fp32, 0) - layer_bytes_per_token(L1B, bf16, 0) == 10 * L1B.hidden_size
    assert est(config, arch=L1B).peak_allocated / GIB == pytest.approx(25.552, rel=0.01)


def test_the_solver_s_flash_attention_and_zero_options_end_the_fp32_embeddings():
    from dataclasses import replace

    from axlint.facts import ShardingKind

    setup = _setup(L1B_SDPA, arch=L1B)
    assert setup.embeddings_fp32 and setup.embedding_bytes == 4
    assert not setup.with_changes(attention="flash", attn_implementation="flash_attention_2").embeddings_fp32
    assert not setup.with_changes(sharding=replace(setup.sharding, kind=ShardingKind.DEEPSPEED, stage=3)) \
        .embeddings_fp32
    assert setup.with_changes(sharding=replace(setup.sharding, kind=ShardingKind.DDP, world=2)).embeddings_fp32
    assert not setup.with_changes(loader=ModelLoader.TRANSFORMERS).embeddings_fp32


def test_a_reward_model_with_the_cce_plugin_keeps_bf16_embeddings_and_the_note_follows_the_count():
    """Axolotl's loader casts the embeddings back when ``cut_cross_entropy`` is on, though a reward model's score
    head computes its loss in plain PyTorch; the estimate's note says fp32 exactly when it counts fp32."""
    cce = {**L1B_SDPA, "reward_model": True,
           "plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"]}
    with_cce, without = _setup(cce, arch=L1B), _setup({**L1B_SDPA, "reward_model": True}, arch=L1B)
    assert with_cce.loss is LossKernel.HF and with_cce.cut_cross_entropy and not with_cce.embeddings_fp32
    assert without.embeddings_fp32
    for setup in (with_cce, without):
        noted = any("keeps embed_tokens and lm_head in fp32" in note for note in setup.assumptions)
        assert noted is setup.embeddings_fp32


def test_an_untied_lm_head_is_upcast_with_the_embedding():
    qwen = resolve_architecture("Qwen/Qwen2.5-7B")
    config = {"base_model": "Qwen/Qwen2.5-7B", "flash_attention": None, "sdp_attention": True,
              "optimizer": "adamw_bnb_8bit", "gradient_checkpointing": True}
    fp32 = est(config, arch=qwen)
    bf16 = est({**config, "sdp_attention": None, "flash_attention": True}, arch=qwen)
    both = qwen.embedding_params + qwen.vocab_size * qwen.hidden_size
    assert fp32.components["weights"] - bf16.components["weights"] == 2 * both
    assert fp32.components["optimizer_states"] == bf16.components["optimizer_states"]  # 8-bit states: 1 B each


def test_liger_s_fused_loss_casts_an_fp32_lm_head_twice_under_autocast():
    """Measured on an H100 (Llama-3.2-1B, Liger 0.8.5, sdpa, 8192 tokens, checkpointing, two micro batches): the
    peak is in the fused loss, with two bf16 casts of the fp32 weight (0.49 GiB each) beside its fp32 gradient
    buffer, 14.443 GiB allocated."""
    config = {**L1B_SDPA, **LIGER, "liger_glu_activation": True, "liger_rms_norm": True, "liger_rope": True,
              "sequence_len": 8192, "micro_batch_size": 1}
    fp32 = _setup(config, arch=L1B)
    bf16 = _setup({**config, "sdp_attention": None, "flash_attention": True}, arch=L1B)
    e = L1B.embedding_params
    assert logits_bytes(L1B, fp32, 8192) - logits_bytes(L1B, bf16, 8192) == 2 * e + 2 * 2 * e
    assert est_liger_085(config, L1B).peak_allocated / GIB == pytest.approx(14.443, rel=0.01)


QWEN_MOE = resolve_architecture("Qwen/Qwen3-30B-A3B")
MOE_QLORA = {"base_model": "Qwen/Qwen3-30B-A3B", "load_in_4bit": True, "adapter": "qlora", "lora_r": 16,
             "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"], "gradient_checkpointing": True}


@pytest.mark.parametrize("config, ds, hardware, fp32", [
    ({}, None, "1xH100", True),                                       # PEFT's kbit preparation, nothing casts back
    ({"load_in_4bit": False, "load_in_8bit": True, "adapter": "lora"}, None, "1xH100", True),
    ({"quantize_moe_experts": True}, None, "1xH100", False),          # quantized on load: the preparation is skipped
    ({}, {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}, "1xH100", False),  # the engine casts back
    ({"fsdp_version": 2, "fsdp_config": {"reshard_after_forward": True}}, None, "2xH100", False),
    ({"adapter": None, "load_in_4bit": False}, None, "1xH100", False),
])
def test_a_4bit_adapter_run_leaves_the_unquantized_experts_in_fp32(config, ds, hardware, fp32):
    hw = parse_hardware(hardware)
    f = facts({**BASE, **MOE_QLORA, **config}, ds, QWEN_MOE, hw)
    assert f.experts_fp32 is fp32


def test_fp32_experts_double_their_bytes():
    """Qwen3-30B-A3B QLoRA without quantize_moe_experts: 29 B expert weights at 4 bytes instead of 2."""
    fp32 = est(MOE_QLORA, arch=QWEN_MOE)
    setup = fp32.setup.with_changes(loader=ModelLoader.TRANSFORMERS)
    from axlint.memory.estimate import estimate_setup
    plain = estimate_setup(setup, QWEN_MOE, H100)
    assert fp32.setup.experts_fp32 and fp32.setup.unquantized_bytes == 4 and not setup.experts_fp32
    assert fp32.components["weights"] - plain.components["weights"] == 2 * QWEN_MOE.expert_params
    assert any("casts them to fp32" in note for note in fp32.assumptions)


def test_a_plain_kbit_script_keeps_every_unquantized_weight_in_fp32():
    """PEFT's kbit preparation in a script of one's own casts embeddings, lm_head and unquantized experts to fp32
    and nothing casts them back, whatever runs the training; Axolotl's loader casts the embeddings back for QLoRA."""
    from dataclasses import replace

    from axlint.facts import ShardingKind

    axolotl = est(MOE_QLORA, arch=QWEN_MOE).setup
    kbit = axolotl.with_changes(loader=ModelLoader.PEFT_KBIT)
    assert kbit.embeddings_fp32 and kbit.embedding_bytes == 4 and not axolotl.embeddings_fp32
    fsdp = replace(kbit.sharding, kind=ShardingKind.FSDP, stage=3, world=2)
    assert kbit.with_changes(sharding=fsdp).experts_fp32 and not axolotl.with_changes(sharding=fsdp).experts_fp32
    assert not kbit.with_changes(quantize_experts=True).experts_fp32
    unquantized = kbit.with_changes(quantization=None)
    assert not unquantized.embeddings_fp32 and not unquantized.experts_fp32


@pytest.mark.parametrize(("load", "per_element"), [("load_in_8bit", 4), ("load_in_4bit", 2)])
def test_lora_on_quantized_experts_merges_a_weight_of_the_dequantized_dtype(load, per_element):
    """GLM-4.7-Flash with LoRA on the experts' 3-D weights, stored quantized (quantize_moe_experts): bitsandbytes'
    int8 dequantization gives fp32, the 4-bit one the load dtype, b bytes; when down_proj, read last, is merged the
    layer holds both ΔW, both merged copies and down_proj's dequantized copy, b·(2n + n_down). With checkpointing
    nothing is kept."""
    from axlint.memory.activations import merged_weight_bytes
    from axlint.memory.params import adapted_expert_parameters

    glm = resolve_architecture("zai-org/GLM-4.7-Flash")
    hw = parse_hardware("1x48GB")
    config = {load: True, "quantize_moe_experts": True, "adapter": "lora" if load == "load_in_8bit" else "qlora",
              "lora_r": 32, "lora_target_modules": ["q_proj", "v_proj"], "gradient_checkpointing": True,
              "lora_target_parameters": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"], "bf16": True,
              "sequence_len": 2048, "sample_packing": True, "micro_batch_size": 2}
    setup = read_setup(facts(config, None, glm, hw), glm)
    layer = glm.num_layers - 1  # a layer with routed experts
    weights = [p.count * p.d_in * p.d_out for p in adapted_expert_parameters(glm, setup, layer)]
    n = sum(weights)
    assert n > 500e6  # 64 experts' gate_up and down projections of one layer
    assert merged_weight_bytes(glm, setup) == (0.0, per_element * (2 * n + weights[-1]))


def test_xielu_python_form_is_assumed_and_said():
    """Apertus's xIELU: without the optional XIELU CUDA package transformers runs its Python form, which keeps 7
    bytes per MLP unit and token with the alphas frozen (9 when they train) where a plain activation keeps 2."""
    from axlint.memory.activations import mlp_bytes

    arch = resolve_architecture("swiss-ai/Apertus-8B-Instruct-2509")
    config = {"base_model": "swiss-ai/Apertus-8B-Instruct-2509"}
    lora, full = _setup({**config, **LORA}, arch=arch), _setup(config, arch=arch)
    i = arch.intermediate_size
    assert mlp_bytes(arch, lora, 0) == 7 * i and mlp_bytes(arch, full, 0) == 9 * i
    assert mlp_bytes(arch, lora.with_changes(xielu_cuda=True), 0) == 2 * i
    assert any(note.startswith("xIELU activation: transformers' Python form assumed") for note in lora.assumptions)
    assert not any("xIELU" in note for note in _setup({}).assumptions)


AFM = resolve_architecture("arcee-ai/AFM-4.5B")
AFM_QLORA = {"base_model": "arcee-ai/AFM-4.5B", "adapter": "qlora", "load_in_4bit": True, "lora_r": 32,
             "lora_alpha": 16, "lora_dropout": 0.05, "lora_target_linear": True, "micro_batch_size": 2,
             "gradient_accumulation_steps": 4,
             "gradient_checkpointing": True, "optimizer": "adamw_bnb_8bit", "flash_attention": None,
             "sdp_attention": True, "plugins": ["axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"],
             "lora_qkv_kernel": False, "lora_o_kernel": False, "lora_mlp_kernel": False}
"""Axolotl's Arcee AFM-4.5B QLoRA example as `axlint validate` ran it on an H200 (PEFT's layers, sdpa):
benchmarks/memory/configs/arcee-afm45b-qlora-gc-2k.yml."""


@pytest.mark.parametrize("config, fp32, stream", [
    ({}, True, 4),
    ({"adapter": "lora", "load_in_4bit": False}, False, 2),   # bf16 base Linears return bf16 under autocast
    ({"bf16": False}, False, 4),                              # fp32 training: no autocast, all of it fp32
    ({"base_model": "meta-llama/Llama-3.1-8B"}, False, 2),    # SiLU stays in the autocast dtype
])
def test_autocast_s_fp32_relu2_makes_a_4bit_run_s_residual_stream_fp32(config, fp32, stream):
    arch = L8B if "base_model" in config else AFM
    setup = _setup({**AFM_QLORA, **config}, arch=arch)
    assert setup.mlp_fp32 is fp32 and setup.residual_fp32 is fp32 and not setup.embeddings_fp32
    assert setup.residual_bytes == stream


def test_deepspeed_and_the_xielu_cuda_package_keep_the_stream_in_bf16():
    ds = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    assert not _setup(AFM_QLORA, ds, arch=AFM).mlp_fp32
    apertus = resolve_architecture("swiss-ai/Apertus-8B-Instruct-2509")
    setup = _setup({**AFM_QLORA, "base_model": "swiss-ai/Apertus-8B-Instruct-2509"}, arch=apertus)
    assert setup.fp32_source == "xielu" and setup.mlp_fp32
    assert not setup.with_changes(xielu_cuda=True).mlp_fp32


def test_an_fp32_stream_doubles_the_checkpoints_and_the_relu2_mlp():
    """The 36 checkpointed layer inputs at 4 bytes (+2·L·T·h) and the ReLU² MLP's kept and backward tensors at 4
    bytes per intermediate unit; measured on an H200 (torch 2.11, bitsandbytes 0.50.2, PEFT 0.19.1) at 2 × 2048
    tokens: 6.931 GiB allocated, the layer inputs 36 blocks of 0.039 GiB and the recomputed ReLU output 0.281 GiB
    (benchmarks/memory/results-NVIDIA_H200-2026-11-27.md), where the bf16 stream estimated 5.51."""
    from axlint.memory.activations import plain_mlp_bytes, stored_activation_bytes

    fp32 = _setup(AFM_QLORA, arch=AFM)
    bf16 = fp32.with_changes(fp32_source=None)
    tokens = 2 * 2048
    assert stored_activation_bytes(AFM, fp32, tokens, [], 0) - stored_activation_bytes(AFM, bf16, tokens, [], 0) \
        == AFM.num_layers * tokens * AFM.hidden_size * 2
    assert plain_mlp_bytes(AFM, fp32) == 2 * plain_mlp_bytes(AFM, bf16) == 4
    e = est(AFM_QLORA, arch=AFM, hw=parse_hardware("1xH200"))
    assert e.peak_allocated / GIB == pytest.approx(6.931, rel=0.05)


QLORA_BF16 = {"adapter": "qlora", "load_in_4bit": True, "bf16": True}


@pytest.mark.parametrize("model, config, source, attention_fp32", [
    ("arcee-ai/AFM-4.5B", QLORA_BF16, "relu2", "relu2"),
    ("bigcode/starcoder2-3b", QLORA_BF16, "layernorm", "layernorm"),
    ("microsoft/phi-1_5", QLORA_BF16, "layernorm", "layernorm"),
    # 8-bit layers return half precision for inputs with outlier columns: counted, not judged by the rules
    ("arcee-ai/AFM-4.5B", {"adapter": "lora", "load_in_8bit": True, "bf16": True}, "relu2", None),
    ("bigcode/starcoder2-3b", {"adapter": "lora", "load_in_8bit": True, "bf16": True}, "layernorm", None),
    ("bigcode/starcoder2-3b", {"adapter": "lora", "bf16": True}, None, None),  # bf16 Linears return bf16
    ("bigcode/starcoder2-3b", {**QLORA_BF16, "bf16": False}, None, None),      # no autocast
    ("nvidia/Nemotron-Mini-4B-Instruct", QLORA_BF16, "relu2", None),          # LayerNorm1P casts back
    ("tiiuae/falcon-7b", QLORA_BF16, None, None),                             # the load converts no Linear
    ("CohereForAI/c4ai-command-r7b-12-2024", QLORA_BF16, None, None),        # its norm returns its input's dtype
    ("meta-llama/Llama-3.1-8B", QLORA_BF16, None, None),
])
def test_what_makes_the_hidden_states_fp32(model, config, source, attention_fp32):
    from axlint.facts import fp32_layer_inputs

    arch = resolve_architecture(model)
    run = facts({**BASE, "base_model": model, **config}, None, arch, H100)
    assert read_setup(run, arch).fp32_source == source
    assert fp32_layer_inputs(run, arch.model_type, arch.config.get("hidden_act"), arch.kbit_layer_norm) \
        == attention_fp32


def test_deepspeed_keeps_a_layernorm_model_s_stream_in_bf16():
    arch = resolve_architecture("bigcode/starcoder2-3b")
    ds = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
    assert read_setup(facts({**BASE, "base_model": "bigcode/starcoder2-3b", **QLORA_BF16}, ds, arch, H100),
                      arch).fp32_source is None


def _example(path: str, **changes) -> tuple[dict, object]:
    """A corpus example with `changes`, and its architecture."""
    import yaml

    from tests.corpus import CORPUS

    config = {**yaml.safe_load((CORPUS / "examples" / path).read_text()), **changes}
    return config, resolve_architecture(config["base_model"])


KERNELS_OFF = {"lora_qkv_kernel": False, "lora_o_kernel": False}
EIGHT_BIT = {"load_in_4bit": False, "load_in_8bit": True, "adapter": "lora"}


@pytest.mark.parametrize("path, changes, measured, low, high", [
    # a LayerNorm QLoRA: the 4-bit layers return its fp32 output
    ("archived/starcoder2/qlora.yml", KERNELS_OFF, 17.04, -0.05, 0.05),
    ("phi/phi-qlora.yml", KERNELS_OFF, 4.79, -0.05, 0.05),
    ("apertus/apertus-8b-qlora.yaml", {**KERNELS_OFF, "sdpa_varlen": False}, 11.42, -0.05, 0.05),
    # 8-bit: the fp32 stream, the larger of the two cases the data decides between
    ("arcee/afm-4.5b-qlora.yaml", EIGHT_BIT, 8.79, -0.05, 0.10),
    ("apertus/apertus-8b-qlora.yaml", EIGHT_BIT, 13.96, -0.05, 0.10),
    ("phi/phi-qlora.yml", {**EIGHT_BIT, "sdpa_varlen": False}, 5.33, -0.05, 0.05),
])
def test_fp32_streams_as_axolotl_ran_them_on_an_h200(path, changes, measured, low, high):
    """Peak allocated of Axolotl 0.18.0's own runs of its examples (transformers 5.14.1, PEFT 0.19.1, bitsandbytes
    0.49.1, torch 2.11.0; benchmarks/memory/axolotl-reference-NVIDIA_H200-2026-11-28.md): the estimate of the same
    config within [low, high] of it. With a half-precision stream StarCoder2 read 14.02 (−17.7 %), Phi 4.34, the
    8-bit Arcee 7.47 (−15.0 %), Apertus 12.80 and Phi 4.88 (the last estimated before its run)."""
    config, arch = _example(path, **changes)
    hw = parse_hardware("1xH200")
    e = estimate_memory(facts(config, None, arch, hw), arch, hw)
    assert low <= e.peak_allocated / GIB / measured - 1 <= high
