"""Corpus models of the "bigmoe" group: the linearized Llama 4 Maverick QLoRA checkpoint (an alias of the Maverick
entry, its experts per-expert nn.Linear), GLM-5.2 (glm_moe_dsa) and its NVFP4 checkpoint, the evidence behind each
entry in its catalog ``source``, and what FSDP gathers of a quantized or expert-parallel layer."""
from __future__ import annotations

from dataclasses import replace

import pytest

from axlint.architectures import catalog_lookup, resolve_architecture
from axlint.document import load_document
from axlint.memory.facts import memory_facts, unsized_parts
from axlint.memory.params import trainable
from axlint.memory.states import weight_bytes
from axlint.run import build_run
from tests.catalog_models import meta_model
from tests.corpus import CORPUS

MAVERICK_QLORA = CORPUS / "examples/llama-4/do-no-use-fa2/maverick-qlora-fsdp1.yaml"


def test_linearized_maverick_is_the_maverick_entry():
    entry = catalog_lookup("axolotl-quants/Llama-4-Maverick-17B-128E-Linearized-bnb-nf4-bf16")
    assert entry["id"] == "meta-llama/Llama-4-Maverick-17B-128E"
    assert "monkeypatch/models/llama4/modeling.py" in entry["source"]


def test_linearized_maverick_qlora_run_quantizes_its_experts():
    """The corpus run sets llama4_linearized_experts with load_in_4bit: Axolotl's linearized experts are nn.Linear
    modules, so bitsandbytes quantizes all 128 x 24 x 3 of them: the weights of the 401.58 B parameters come to
    under 0.3 of their bf16 bytes (nf4 0.5625 B per quantized weight; embeddings, norms and vision tower bf16)."""
    run = build_run(load_document(MAVERICK_QLORA))
    assert run.arch is not None and run.arch.total_params == 401_583_781_376
    assert not unsized_parts(run.arch)
    setup = memory_facts(run).estimate.setup
    assert setup.quantization == "nf4" and setup.quantize_experts
    assert run.arch.expert_params == 24 * 128 * 3 * 5120 * 8192
    assert weight_bytes(run.arch, setup, trainable(run.arch, setup)) < 0.3 * 2 * run.arch.total_params


GLM_5_2_PARAMS = 743_377_000_704
"""zai-org/GLM-5.2 as transformers 5.24 builds it (GlmMoeDsaForCausalLM: no MTP layer), computed from its entry."""


def test_glm_5_2_total_equals_transformers_model():
    """The catalog entry read by transformers 5.24 (GlmMoeDsaConfig derives indexer_types from index_topk_freq /
    index_skip_topk_offset) and built on the meta device has axlint's total."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    model = meta_model(catalog_lookup("zai-org/GLM-5.2")["config"])
    arch = resolve_architecture("zai-org/GLM-5.2")
    assert sum(p.numel() for p in model.parameters()) == arch.total_params == GLM_5_2_PARAMS


def test_glm_5_2_matches_its_published_bf16_checkpoint_to_the_byte():
    """zai-org/GLM-5.2's BF16 model.safetensors.index.json totals 1,506,659,919,872 bytes: 2 bytes for every
    parameter of the model and of its one MTP layer (num_nextn_predict_layers: a MoE layer with its indexer, the
    eh_proj 2h -> h and three norms), and 4 bytes for each of the 75 + 1 MoE layers' fp32 e_score_correction_bias."""
    arch = resolve_architecture("zai-org/GLM-5.2")
    h = arch.hidden_size
    full_moe_layer = next(i for i in range(arch.num_layers) if arch.is_moe_layer(i) and arch.mixer_shapes(i))
    mtp = arch.layer_params(full_moe_layer) + 2 * h * h + 3 * h
    moe_layers = sum(arch.is_moe_layer(i) for i in range(arch.num_layers)) + 1
    assert 2 * (arch.total_params + mtp) + 4 * moe_layers * arch.num_experts == 1_506_659_919_872


def test_glm_5_2_shares_its_indexer_over_four_layers():
    """index_topk_freq 4, index_skip_topk_offset 3: layers 0-2 run their own indexer, then one layer in four."""
    arch = resolve_architecture("zai-org/GLM-5.2")
    full = [i for i in range(arch.num_layers) if arch.mixer_shapes(i)]
    assert full == [0, 1, 2, *range(6, 78, 4)]
    assert [arch.is_moe_layer(i) for i in range(4)] == [False, False, False, True]


def test_the_indexer_keeps_nothing_for_backward():
    """GlmMoeDsaIndexer.forward runs under torch.no_grad: a layer with the indexer keeps what the same layer without
    it keeps, in a full fine-tune and under LoRA on every Linear."""
    from axlint.hardware import parse_hardware
    from axlint.memory.activations import per_layer_bytes_per_token
    from axlint.memory.setup import read_setup
    from tests.resolved import facts

    arch = resolve_architecture("zai-org/GLM-5.2")
    hw = parse_hardware("8xH100")
    for extra in ({}, {"adapter": "lora", "lora_r": 16, "lora_target_linear": True}):
        config = {"base_model": "zai-org/GLM-5.2", "sequence_len": 4096, "micro_batch_size": 1, "bf16": True, **extra}
        setup = read_setup(facts(config, None, arch, hw), arch)
        per_layer = per_layer_bytes_per_token(arch, setup)
        assert per_layer[6] == per_layer[7] > 0


def test_glm_5_2_nvfp4_keeps_its_experts_packed():
    entry = catalog_lookup("Mapika/GLM-5.2-NVFP4")
    assert entry["config"]["quantization_config"] == {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    run = build_run(load_document(CORPUS / "examples/glm_moe_dsa/glm-5.2-nvfp4-lora.yaml"))
    assert run.arch.total_params == GLM_5_2_PARAMS and not unsized_parts(run.arch)
    q = memory_facts(run).estimate.setup.prequantized
    assert q is not None and q.experts == "nvfp4" and not q.unsized


def test_fsdp_gathers_a_qlora_layer_packed():
    """FSDP all-gathers a decoder layer as its flat parameter stores it: Axolotl keeps bitsandbytes' 4-bit weights in
    bf16 elements under FSDP, so a QLoRA layer of the linearized Maverick gathers at nf4's bytes, not 2 B a value;
    an unquantized run gathers each layer at 2 B (root unit + 3 of the largest layer, as before)."""
    from axlint.memory import constants as C
    from axlint.memory.sharding import buffer_bytes, gathered_layer_bytes

    run = build_run(load_document(MAVERICK_QLORA))
    arch, setup = run.arch, memory_facts(run).estimate.setup
    moe = next(i for i in range(arch.num_layers) if arch.is_moe_layer(i))
    packed = gathered_layer_bytes(arch, setup, moe)
    assert setup.double_quant
    assert packed == pytest.approx(arch.layer_params(moe) * C.NF4_DOUBLE_QUANT_BYTES, rel=0.01)
    root = arch.embedding_params + arch.lm_head_params
    assert buffer_bytes(arch, setup, 0.0) == pytest.approx(2 * root + 3 * packed)
    plain = build_run(load_document(CORPUS / "examples/llama-3/fft-8b.yaml"))
    plain_setup = replace(memory_facts(plain).estimate.setup, sharding=setup.sharding)
    assert buffer_bytes(plain.arch, plain_setup, 0.0) == 2 * (plain.arch.embedding_params + plain.arch.lm_head_params
                                                              + 3 * max(plain.arch.layers_params))


def test_expert_parallel_ranks_gather_no_experts_without_dp_shard():
    """GLM-5.2's example: expert_parallel_size 8 = the world, dp_shard_size 1: each rank keeps its 32 experts whole,
    so FSDP gathers a layer's attention, router and shared experts only."""
    from axlint.memory.sharding import gathered_layer_bytes
    from axlint.memory.states import layer_weight_bytes

    run = build_run(load_document(CORPUS / "examples/glm_moe_dsa/glm-5.2-nvfp4-lora.yaml"))
    setup = memory_facts(run).estimate.setup
    assert (setup.sharding.mesh.ep, setup.sharding.expert_shard_ranks) == (8, 1)
    experts, rest = layer_weight_bytes(run.arch, setup, 6)
    assert experts > 10 * rest and gathered_layer_bytes(run.arch, setup, 6) == rest
    assert experts == pytest.approx(256 * 3 * 6144 * 2048 * 0.5625, rel=0.001)
