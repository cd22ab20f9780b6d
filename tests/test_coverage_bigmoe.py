"""Corpus models of the "bigmoe" group: the linearized Llama 4 Maverick QLoRA checkpoint (an alias of the Maverick
entry, its experts per-expert nn.Linear), the evidence behind each entry in its catalog ``source``, and what FSDP
gathers of a quantized layer."""
from __future__ import annotations

from dataclasses import replace

import pytest

from axlint.architectures import catalog_lookup, resolve_architecture
from axlint.document import load_document
from axlint.memory.facts import memory_facts, unsized_parts
from axlint.memory.params import trainable
from axlint.memory.states import weight_bytes
from axlint.run import build_run
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

