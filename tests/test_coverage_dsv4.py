"""DeepSeek-V4 (deepseek_v4): the layout of architectures/dsv4.py against transformers 5.24 on the meta device, the
V4-Flash catalog entry against its published checkpoint, and the NVFP4 checkpoint of the corpus (FP8 non-experts,
NVFP4 experts) as Axolotl's KernelsPlugin loads it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from axlint.architectures import Architecture, catalog_lookup, resolve_architecture
from axlint.architectures.dsv4 import ATTENTION_UNSIZED, layer_types
from axlint.document import load_document
from axlint.memory.activations import final_norm_bytes, stored_activation_bytes
from axlint.memory.facts import memory_facts, unsized_parts
from axlint.memory.params import layer_modules, named_parameters
from axlint.memory.prequantized import nvfp4_tensor_bytes
from axlint.memory.states import prequantized_bytes
from axlint.run import build_run
from tests.catalog_models import meta_model
from tests.corpus import CORPUS

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

EXAMPLE = CORPUS / "examples/deepseek-v4/v4-flash-nvfp4-lora.yaml"
FLASH_PARAMS = 284_332_230_231
"""deepseek-ai/DeepSeek-V4-Flash as transformers 5.24 builds it (no MTP layer): the model card's "284B total"."""
FLASH_INDEX_BYTES = 159_609_485_896
"""model.safetensors.index.json total_size of deepseek-ai/DeepSeek-V4-Flash@60d8d707 (catalog entry's source)."""
FLASH_LOGICAL_PARAMS = 290_942_289_362
"""The same checkpoint's logical parameters (FP4 bytes unpacked to two values; scales and the I64 tid2eid left out), as
a public tensor inventory of it reports: the model, its MTP layer and the 41 fp32 router biases."""

TINY = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 32, "q_lora_rank": 24,
        "o_groups": 2, "o_lora_rank": 16, "index_n_heads": 4, "index_head_dim": 8, "moe_intermediate_size": 32,
        "n_routed_experts": 4, "num_experts_per_tok": 2, "vocab_size": 256, "max_position_embeddings": 128,
        "qk_rope_head_dim": 8}
VARIANTS = [
    {**TINY, "num_hidden_layers": 5, "compress_ratios": [0, 0, 4, 128, 4, 0], "num_hash_layers": 2},
    {**TINY, "num_hidden_layers": 3, "hc_mult": 2, "layer_types": ["compressed_sparse_attention", "sliding_attention",
                                                                   "heavily_compressed_attention"],
     "compress_rates": {"compressed_sparse_attention": 8, "heavily_compressed_attention": 16}},
    {**TINY, "num_hidden_layers": 4},
    {**TINY, "num_hidden_layers": 2, "hc_mult": 1, "compress_ratios": [4, 0]},
]
"""The published layout (compress_ratios one longer than the layers, as V4-Flash's: the MTP layer's), explicit layer
types with other rates and 2 streams, the config class's default (two HCA layers, then CSA / HCA) and a single
stream (the hyper-connections and hc_head are built all the same)."""


@pytest.mark.parametrize("fields", VARIANTS, ids=["published-ratios", "layer-types", "default", "one-stream"])
@pytest.mark.parametrize("written", [True, False], ids=["saved", "published"])
def test_layout_matches_transformers(fields: dict[str, Any], written: bool) -> None:
    """Every parameter name and size but the routed experts' (transformers 5 fuses them into gate_up_proj /
    down_proj, which ``named_parameters`` lists as three Linears of the same total), from the config as
    save_pretrained writes it and as published."""
    model = meta_model({"model_type": "deepseek_v4", **fields})
    config = model.config
    real = {name: p.numel() for name, p in model.named_parameters()}
    arch = Architecture.from_config("test/dsv4", "model-config",
                                    config.to_dict() if written else {"model_type": "deepseek_v4", **fields})
    assert arch.total_params == sum(real.values())
    mine = dict(named_parameters(arch))
    experts = {n for n in real if ".mlp.experts." in n}
    assert {n: v for n, v in mine.items() if ".mlp.experts." not in n} == {n: real[n] for n in real.keys() - experts}
    assert sum(v for n, v in mine.items() if ".mlp.experts." in n) == sum(real[n] for n in experts)
    assert layer_types(arch.config, arch.num_layers) == config.layer_types


def test_flash_entry_is_the_transformers_model() -> None:
    entry = catalog_lookup("deepseek-ai/DeepSeek-V4-Flash")
    arch = resolve_architecture("deepseek-ai/DeepSeek-V4-Flash")
    model = meta_model(entry["config"])
    assert arch.total_params == sum(p.numel() for p in model.parameters()) == FLASH_PARAMS
    assert round(arch.active_params / 1e9) == 14  # the model card's "13B activated", counted with the embeddings
    assert layer_types(arch.config, 43).count("compressed_sparse_attention") == 21
    assert layer_types(arch.config, 43).count("heavily_compressed_attention") == 20


def _mtp_params(arch: Architecture) -> int:
    """DeepSeek's MTP layer (inference/model.py ``MTPBlock``): a sliding layer with a learned router (layer 0's
    numel: the hash router's weight is the same E x h), e_proj and h_proj (h -> h), enorm, hnorm and norm (h) and its
    own hc head (n x n·h + n + 1)."""
    h, n = arch.hidden_size, arch.residual_streams
    return arch.layer_params(0) + 2 * h * h + 3 * h + n * n * h + n + 1


def _fp8(d_out: int, d_in: int) -> int:
    """F8_E4M3 values and one F8_E8M0 scale per 128x128 block."""
    return d_out * d_in + -(-d_out // 128) * -(-d_in // 128)


BF16_IN_CHECKPOINT = ("compressor.kv_proj", "compressor.gate_proj", "compressor.indexer.kv_proj",
                      "compressor.indexer.gate_proj", "compressor.indexer.scorer.weights_proj")


def _layer_checkpoint_bytes(arch: Architecture, layer: int) -> int:
    """One layer as the official checkpoint stores it: routed experts FP4 (two values a byte + a ue8m0 scale per 32),
    routers and the compressor / indexer projections BF16, the other Linears FP8 (``_fp8``), mHC tensors, position
    biases and sinks F32, norms BF16."""
    out = 0
    for path, lin in layer_modules(arch, layer):
        numel = lin.count * lin.d_in * lin.d_out
        if lin.expert:
            out += numel // 2 + numel // 32
        elif lin.router or path.endswith(BF16_IN_CHECKPOINT):
            out += 2 * numel
        else:
            out += _fp8(lin.d_out, lin.d_in)
    for shape in arch.mixer_shapes(layer):
        for name, numel in shape.others:
            fp32 = shape.module.endswith("_hc") or name.endswith(("position_bias", "sinks"))
            out += (4 if fp32 else 2) * numel
    return out + 2 * 2 * arch.hidden_size  # input_layernorm, post_attention_layernorm


def test_flash_matches_the_published_checkpoint_to_the_byte() -> None:
    """The layout plus the MTP layer, in the checkpoint's formats, is its index total; unpacked, its logical count.
    In bf16 (2 bytes a parameter) the transformers model alone is 568.7 GB, 3.6 x the FP4 / FP8 checkpoint."""
    arch = resolve_architecture("deepseek-ai/DeepSeek-V4-Flash")
    h, n, vocab = arch.hidden_size, arch.residual_streams, arch.vocab_size
    router_biases = (arch.num_layers - 3 + 1) * arch.num_experts  # the learned routers' fp32 biases, MTP's too
    assert arch.total_params + _mtp_params(arch) + router_biases == FLASH_LOGICAL_PARAMS
    layers = sum(_layer_checkpoint_bytes(arch, i) for i in range(arch.num_layers))
    mtp = _layer_checkpoint_bytes(arch, 0) + 2 * _fp8(h, h) + 3 * 2 * h + 4 * (n * n * h + n + 1)
    model = 2 * 2 * vocab * h + 2 * h + 4 * (n * n * h + n + 1)  # embed, head, norm (BF16), hc_head (F32)
    tid2eid = 3 * vocab * arch.experts_per_token * 8
    assert layers + mtp + model + 4 * router_biases + tid2eid == FLASH_INDEX_BYTES
    assert 2 * arch.total_params / FLASH_INDEX_BYTES == pytest.approx(3.56, abs=0.01)


def test_nvfp4_checkpoint_under_the_dsv4_adapter() -> None:
    """The corpus example (use_dsv4_kernels, use_scattermoe): experts NVFP4, the plain Linears Float8Tensor (1 B +
    an fp32 scale per 128x128 block), o_a_proj, the compressor / indexer projections, routers, embeddings, head and
    small tensors in bf16."""
    run = build_run(load_document(EXAMPLE))
    assert run.arch is not None and run.arch.total_params == FLASH_PARAMS
    setup = memory_facts(run).estimate.setup
    q = setup.prequantized
    assert q is not None and not q.unsized and (q.experts, q.linears) == ("nvfp4", "fp8")
    arch, h, i = run.arch, run.arch.hidden_size, run.arch.moe_intermediate_size
    weights, experts = prequantized_bytes(arch, setup, q)
    assert experts == arch.num_layers * arch.num_experts * (2 * nvfp4_tensor_bytes(i, h) + nvfp4_tensor_bytes(h, i))
    fp8 = bf16 = 0.0
    for layer in range(arch.num_layers):
        for path, lin in layer_modules(arch, layer):
            if lin.expert:
                continue
            if lin.router or path.endswith(("o_a_proj", *BF16_IN_CHECKPOINT)):
                bf16 += 2 * lin.d_in * lin.d_out
            else:
                fp8 += lin.d_in * lin.d_out + 4 * -(-lin.d_in // 128) * -(-lin.d_out // 128)
    rest = arch.total_params - arch.quantizable_params - arch.expert_params
    assert weights == experts + fp8 + bf16 + 2 * rest


def test_nvfp4_checkpoint_needs_the_adapter_and_reads_its_mode(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    without = tmp_path / "without.yaml"
    without.write_text(text.replace("use_dsv4_kernels: true", "use_dsv4_kernels: false"))
    run = build_run(load_document(without))
    assert "no NVFP4 expert path" in memory_facts(run).estimate.setup.prequantized.unsized
    bf16 = tmp_path / "bf16.yaml"
    bf16.write_text(text + "dsv4_fp8_nonexpert_mode: bf16\n")
    q = memory_facts(build_run(load_document(bf16))).estimate.setup.prequantized
    assert (q.experts, q.linears, q.unsized) == ("nvfp4", None, None)


def test_activations_stay_unsized() -> None:
    """Neither the eager attention transformers runs nor Axolotl's DSV4 kernels are modelled: the corpus example
    reads MEM010, its weights sized."""
    run = build_run(load_document(EXAMPLE))
    assert unsized_parts(run.arch) == {"base_model: nvidia/DeepSeek-V4-Flash-NVFP4": ATTENTION_UNSIZED}
    assert memory_facts(run).unknown == unsized_parts(run.arch)


def test_checkpointed_layers_keep_every_stream() -> None:
    """The layers pass [B, S, hc_mult, h] between them (``DeepseekV4Model.forward`` expands the embeddings to 4
    streams), so gradient checkpointing keeps 4·h bf16 values per token and layer."""
    run = build_run(load_document(EXAMPLE))
    setup = memory_facts(run).estimate.setup
    assert setup.gradient_checkpointing and not setup.offload_checkpoints
    arch, tokens = run.arch, 4096
    stored = stored_activation_bytes(arch, setup, tokens, [0.0] * arch.num_layers, 0)
    assert stored - tokens * final_norm_bytes(arch, setup) == tokens * arch.num_layers * 2 * 4 * arch.hidden_size
