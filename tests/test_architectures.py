import json

import pytest

from axlint.architectures import Architecture, catalog_lookup, load_catalog, resolve_architecture

CATALOG = load_catalog()


def test_catalog_has_at_least_50_models_with_sources():
    assert len(CATALOG) >= 50
    assert all(entry["source"] for entry in CATALOG)


def test_every_id_and_alias_looks_up_its_own_entry_as_the_catalog_file_writes_it(tmp_path, monkeypatch):
    from axlint.architectures import resolve

    written = json.loads(resolve.CATALOG_PATH.read_text(encoding="utf-8"))["models"]
    assert list(CATALOG) == written
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path))  # built from the JSON, then read back from the cache
    for _ in range(2):
        resolve._catalog_index.cache_clear()
        resolve._catalog_entry.cache_clear()
        for entry in written:
            for ident in (entry["id"], *entry["aliases"]):
                assert catalog_lookup(ident) == entry and catalog_lookup(ident.upper()) == entry
    assert (tmp_path / "data").is_dir()
    resolve._catalog_index.cache_clear()
    resolve._catalog_entry.cache_clear()


@pytest.mark.parametrize("entry", [e for e in CATALOG if e.get("published_parameters")], ids=lambda e: e["id"])
def test_computed_parameter_count_matches_published(entry):
    arch = Architecture.from_config(entry["id"], "catalog", entry["config"])
    assert arch.total_params == pytest.approx(entry["published_parameters"], rel=0.005)


def test_the_norm_a_kbit_load_passes_on_is_there_exactly_when_the_load_converts_a_layer_linear():
    """``kbit_layer_norm`` reads the family (``linear_subclass``) in O(1); it must agree with the layers' sizes."""
    for entry in CATALOG:
        arch = Architecture.from_config(entry["id"], "catalog", entry["config"])
        assert (arch.kbit_layer_norm is None) == (arch.quantizable_params == 0), entry["id"]
        assert arch.kbit_layer_norm in (None, arch.layout.norm)
    assert resolve_architecture("tiiuae/falcon-7b").kbit_layer_norm is None


@pytest.mark.parametrize("model_id, params", [
    ("meta-llama/Llama-3.1-8B", 8_030_261_248),
    ("Qwen/Qwen2.5-7B", 7_615_616_512),
    ("mistralai/Mistral-7B-v0.1", 7_241_732_096),
])
def test_headline_counts(model_id, params):
    assert resolve_architecture(model_id).total_params == params


def test_moe_active_parameters():
    assert resolve_architecture("mistralai/Mixtral-8x7B-v0.1").active_params == pytest.approx(12.88e9, rel=0.005)
    assert resolve_architecture("Qwen/Qwen3-30B-A3B").active_params == pytest.approx(3.35e9, rel=0.01)


def test_split_of_llama_3_1_8b():
    a = resolve_architecture("meta-llama/Llama-3.1-8B")
    assert a.embedding_params == a.lm_head_params == 128256 * 4096
    assert sum(lin.params for lin in a.attention_linears()) == 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert sum(lin.params for lin in a.mlp_linears(0)) == 3 * 4096 * 14336
    assert a.largest_module_params == 128256 * 4096


@pytest.mark.parametrize("alias, canonical", [
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B"),
    ("NousResearch/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "meta-llama/Llama-3.1-8B"),
    ("META-LLAMA/LLAMA-3.2-1B-INSTRUCT", "meta-llama/Llama-3.2-1B"),
    ("someorg/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-v0.3"),
])
def test_aliases_resolve(alias, canonical):
    assert catalog_lookup(alias)["id"] == canonical


def test_sizes_are_not_confused():
    assert catalog_lookup("unsloth/Qwen2.5-0.5B-Instruct")["id"] == "Qwen/Qwen2.5-0.5B"
    assert catalog_lookup("meta-llama/Llama-3.1-70B-Instruct")["id"] == "meta-llama/Llama-3.1-70B"
    assert catalog_lookup("meta-llama/Llama-3.1-7B") is None
    assert resolve_architecture("nobody/unknown-model-13b") is None


def _config(hidden=64):
    return {"model_type": "llama", "hidden_size": hidden, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "tie_word_embeddings": False}


def test_local_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_config()))
    arch = resolve_architecture(str(tmp_path))
    assert arch.source == "local" and arch.hidden_size == 64
    assert arch.total_params == 2 * 100 * 64 + 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64) + 64


def test_hf_cache_wins_over_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    snap = tmp_path / "models--meta-llama--Llama-3.1-8B" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(_config(96)))
    (tmp_path / "models--meta-llama--Llama-3.1-8B" / "refs").mkdir()
    (tmp_path / "models--meta-llama--Llama-3.1-8B" / "refs" / "main").write_text("abc123")
    arch = resolve_architecture("meta-llama/Llama-3.1-8B")
    assert arch.source == "hf-cache" and arch.hidden_size == 96


def test_hf_home_and_search_paths(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    snap = tmp_path / "extra" / "models--org--tiny" / "snapshots" / "r1"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(_config(32)))
    assert resolve_architecture("org/tiny") is None
    assert resolve_architecture("org/tiny", search_paths=[tmp_path / "extra"]).hidden_size == 32


def test_model_config_wins(tmp_path):
    path = tmp_path / "my.json"
    path.write_text(json.dumps(_config(48)))
    arch = resolve_architecture("meta-llama/Llama-3.1-8B", model_config=path)
    assert arch.source == "model-config" and arch.hidden_size == 48


def test_multimodal_text_config_and_vision_tower():
    arch = resolve_architecture("google/gemma-3-4b-it")
    assert arch.model_type == "gemma3" and arch.hidden_size == 2560 and arch.qk_norm == "head"
    assert arch.extra_parameters == 4_300_079_472 - arch.decoder_params


def test_family_traits():
    qwen = resolve_architecture("Qwen/Qwen2.5-7B")
    assert [lin.bias for lin in qwen.attention_linears()] == [True, True, True, False]
    assert resolve_architecture("tiiuae/falcon-7b").num_kv_heads == 1
    assert resolve_architecture("allenai/OLMo-7B-hf").norm_type == "nonparametric"
    assert resolve_architecture("microsoft/phi-2").gated_mlp is False
    ds = resolve_architecture("deepseek-ai/DeepSeek-V2-Lite")
    assert ds.is_mla and ds.first_dense_layers == 1 and not ds.is_moe_layer(0) and ds.is_moe_layer(1)


# Entries added from copies of the models' config.json (see each entry's "source"). No exact published total was
# read for these, so each total below is the computed value, pinned so that a change to the catalog numbers or to
# the parameter layout shows up here.
@pytest.mark.parametrize("model_id, params", [
    ("openlm-research/open_llama_3b_v2", 3_426_473_600),  # computed
    ("codellama/CodeLlama-13b-hf", 13_016_028_160),  # computed
    ("codellama/CodeLlama-34b-hf", 33_743_970_304),  # computed
    ("Qwen/Qwen1.5-MoE-A2.7B", 14_315_784_192),  # computed
    ("microsoft/phi-1_5", 1_418_270_720),  # computed
    ("mistral-community/Mixtral-8x22B-v0.1", 140_620_634_112),  # computed
    ("mistralai/Ministral-8B-Instruct-2410", 8_019_808_256),  # computed
    ("huggyllama/llama-7b", 6_738_415_616),  # computed
    ("Salesforce/xgen-7b-8k-base", 6_895_702_016),  # computed
    ("agentica-org/DeepCoder-14B-Preview", 14_770_033_664),  # computed
    ("deepseek-ai/DeepSeek-V2.5", 235_741_434_880),  # computed, q_a_layernorm included (published: 236B)
    ("openai/gpt-oss-20b", 20_914_757_184),  # computed, sinks + router / expert biases (published: 21B)
    ("zai-org/GLM-4.5-Air", 106_852_245_504),  # computed, no MTP layer (published: 106B)
    ("THUDM/GLM-4-32B-0414", 32_566_081_536),  # computed
    ("ByteDance-Seed/Seed-OSS-36B-Instruct", 36_151_104_512),  # computed
    ("swiss-ai/Apertus-8B-Instruct-2509", 8_053_338_176),  # computed, xIELU's 2 scalars per layer
    ("nvidia/Nemotron-Mini-4B-Instruct", 4_190_509_056),  # computed
    ("arcee-ai/AFM-4.5B", 4_619_189_760),  # computed
    # the five below also equal the numel sum of the transformers 5.24 model built from the entry on the meta device
    ("EleutherAI/gpt-j-6b", 6_050_882_784),  # computed, lm_head bias (model card: 6,053,381,344, not matched)
    ("mosaicml/mpt-7b", 6_649_286_656),  # computed (published: 6.7B)
    ("cerebras/Cerebras-GPT-1.3B", 1_315_723_264),  # computed, wpe included
    ("LnL-AI/dbrx-base-converted-v2", 131_596_523_520),  # computed (published: 132B)
    ("openai/gpt-oss-120b", 116_829_156_672),  # computed (published: 117B)
    ("zai-org/GLM-4.7-Flash", 29_943_390_976),  # computed, meta device too; no MTP layer (published: 30B)
])
def test_added_entries_total(model_id, params):
    entry = catalog_lookup(model_id)
    assert entry["id"] == model_id
    assert Architecture.from_config(model_id, "catalog", entry["config"]).total_params == params


def test_new_moe_entries_active_parameters():
    # computed: DBRX 4 of 16 experts (published: 36B active); gpt-oss-120b 4 of 128 (published: 5.1B active, which
    # leaves out the input embedding: 5.71B - 0.58B)
    assert resolve_architecture("LnL-AI/dbrx-base-converted-v2").active_params == 36_469_708_800
    assert resolve_architecture("openai/gpt-oss-120b").active_params == 5_711_982_912


def test_glm_4_7_flash_active_parameters():
    # computed: 4 of 64 routed experts + the shared one, first layer dense; 3.26B less the embedding and the output
    # (published: about 3B active)
    arch = resolve_architecture("zai-org/GLM-4.7-Flash")
    assert arch.active_params == 3_896_763_136
    assert arch.active_params - arch.embedding_params - arch.lm_head_params == 3_262_374_656


def test_deepseek_v2_5_active_parameters():
    # computed: 6 of 160 routed experts + 2 shared, first layer dense (published: 21B active)
    assert resolve_architecture("deepseek-ai/DeepSeek-V2.5").active_params == 21_375_800_320


def test_qwen1_5_moe_active_parameters():
    # computed: 4 of 60 routed experts plus the shared expert, every layer sparse
    assert resolve_architecture("Qwen/Qwen1.5-MoE-A2.7B").active_params == 2_689_173_504


@pytest.mark.parametrize("alias, canonical", [
    ("casperhansen/llama-3-70b-fp16", "meta-llama/Meta-Llama-3-70B"),
    ("neuralmagic/Sparse-Llama-3.1-8B-2of4", "meta-llama/Llama-3.1-8B"),
    ("hugging-quants/Meta-Llama-3.1-405B-BNB-NF4-BF16", "meta-llama/Llama-3.1-405B"),
    ("unsloth/codellama-34b-bnb-4bit", "codellama/CodeLlama-34b-hf"),
    ("axolotl-quants/DeepSeek-V2.5-bnb-nf4-bf16", "deepseek-ai/DeepSeek-V2.5"),
])
def test_added_aliases_resolve(alias, canonical):
    assert catalog_lookup(alias)["id"] == canonical


# Families with a row whose corpus models were added from copies of their config.json (see each entry's "source").
# No exact published total was read for these in the session that added them: each total is the computed value,
# pinned so that a change to the catalog numbers or to the family rows shows up here.
@pytest.mark.parametrize("model_id, params", [
    ("EleutherAI/pythia-1.4b-deduped", 1_414_647_808),  # computed
    ("EleutherAI/pythia-12b-deduped", 11_846_072_320),  # computed
    ("togethercomputer/RedPajama-INCITE-Chat-3B-v1", 2_775_864_320),  # computed
    ("bigcode/starcoder2-3b", 3_030_371_328),  # computed (tied embedding: no tie_word_embeddings key)
    ("stabilityai/stablelm-2-1_6b", 1_644_515_328),  # computed
    ("CohereForAI/c4ai-command-r7b-12-2024", 8_028_033_024),  # computed (tied embedding)
    ("deepcogito/cogito-v1-preview-qwen-14B", 14_765_947_904),  # computed (vocab 151665)
    # Ollama's GGUF of it counts 3,606,752,320 with the 64 rope_freqs values HF does not store: untied lm_head
    ("deepcogito/cogito-v1-preview-llama-3B", 3_606_752_256),
    ("google/gemma-3-270m", 268_098_176),  # computed, equal to the 268,098,176 a shape-checked loader prints
])
def test_family_row_entries_total(model_id, params):
    entry = catalog_lookup(model_id)
    assert entry["id"] == model_id
    arch = Architecture.from_config(model_id, "catalog", entry["config"])
    assert arch.unsized_decoder is None
    assert arch.total_params == params


def test_gpt_oss_20b_active_parameters():
    # computed: 4 of 32 experts per layer; less the input embedding it is 3.61B (published: 3.6B active)
    arch = resolve_architecture("openai/gpt-oss-20b")
    assert arch.active_params == 4_187_440_704
    assert arch.active_params - arch.embedding_params == 3_608_307_264


def test_glm_4_5_air_active_parameters():
    # computed: 8 of 128 routed experts + the shared one, first layer dense (published: 12B active)
    assert resolve_architecture("zai-org/GLM-4.5-Air").active_params == 13_424_123_904


@pytest.mark.parametrize("model_id, how", [
    ("meta-llama/Llama-3.1-8B", "its own entry"),
    ("NousResearch/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B, listed as a mirror or variant of the same sizes"),
    ("someone/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B, matched by repository name only (another organisation's "
                                  "copy); pass --model-config if its config.json differs"),
])
def test_the_catalog_says_on_what_evidence_a_model_resolved(model_id, how):
    from axlint.architectures.resolve import catalog_match
    from axlint.memory.estimate import catalog_note

    entry, found = catalog_match(model_id)
    assert entry["id"] == "meta-llama/Llama-3.1-8B" and found == how
    assert catalog_note(model_id).endswith(f"({model_id})" if how == "its own entry" else how)


# Multimodal entries (vision.TOWERS / PROJECTORS): no exact published total was read, so each total is the computed
# value; each equals the numel sum of the model transformers 5.24 builds from the same config on the meta device.
@pytest.mark.parametrize("model_id, params, vision", [
    ("llava-hf/llava-1.5-7b-hf", 7_063_427_072, 324_487_168),  # computed: CLIP ViT-L/14-336 + 2-layer projector
    ("Qwen/Qwen2.5-VL-7B-Instruct", 8_292_166_656, 676_550_144),  # computed: flat config, tower + merger
    ("Qwen/Qwen2-VL-7B-Instruct", 8_291_375_616, 675_759_104),  # computed: flat config, tower + merger
    ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", 24_011_361_280, 438_958_080),  # computed: Pixtral + mistral3 projector
])
def test_multimodal_entries_total(model_id, params, vision):
    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_vision is None and arch.unsized_decoder is None
    assert arch.total_params == params and arch.extra_parameters == vision
    assert arch.multimodal and arch.decoder_path == "model.language_model"


# Llama 4 (text: models/llama4 in transformers 5.24, vision tower + projector rows): no exact published total was
# read (the Hub rounds to 109B / 400B), so each is computed; each equals the numel sum of the
# Llama4ForConditionalGeneration transformers 5.24 builds from the entry on the meta device.
@pytest.mark.parametrize("model_id, params, vision, active", [
    ("meta-llama/Llama-4-Scout-17B-16E", 108_641_793_536, 871_932_416, 18_044_827_136),  # computed
    ("meta-llama/Llama-4-Maverick-17B-128E", 401_583_781_376, 871_932_416, 18_056_623_616),  # computed
])
def test_llama_4_entries_total_and_active(model_id, params, vision, active):
    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_vision is None and arch.unsized_decoder is None
    assert arch.total_params == params and arch.extra_parameters == vision and arch.active_params == active
    assert arch.decoder_path == "language_model.model"


def test_llama_4_maverick_alternates_dense_and_moe_layers():
    arch = resolve_architecture("meta-llama/Llama-4-Maverick-17B-128E")
    assert [arch.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert {lin.name: lin.d_out for lin in arch.mlp_linears(0)}["gate_proj"] == 16384


@pytest.mark.parametrize("alias, canonical", [
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "meta-llama/Llama-4-Scout-17B-16E"),
    ("axolotl-quants/Llama-4-Scout-17B-16E-Linearized-bnb-nf4-bf16", "meta-llama/Llama-4-Scout-17B-16E"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "meta-llama/Llama-4-Maverick-17B-128E"),
])
def test_llama_4_aliases_resolve(alias, canonical):
    assert catalog_lookup(alias)["id"] == canonical


# Corpus models resolved to catalogued architectures on written evidence (each alias is explained in its canonical
# entry's "source"): the same parameter count as the model they copy.
@pytest.mark.parametrize("alias, canonical", [
    ("axolotl-ai-co/gpt-oss-120b-dequantized", "openai/gpt-oss-120b"),
    ("openai/gpt-oss-safeguard-20b", "openai/gpt-oss-20b"),
    ("Skywork/Skywork-Reward-V2-Qwen3-8B", "Qwen/Qwen3-8B"),
    ("canopylabs/orpheus-3b-0.1-ft", "canopylabs/orpheus-3b-0.1-pretrained"),
])
def test_corpus_aliases_resolve(alias, canonical):
    assert catalog_lookup(alias)["id"] == canonical


def test_orpheus_is_llama_3_2_3b_with_its_audio_vocabulary():
    # computed: Llama-3.2-3B's 3,212,749,824 plus (156940 - 128256) x 3072 tied embedding rows
    orpheus, llama = resolve_architecture("canopylabs/orpheus-3b-0.1-pretrained"), resolve_architecture(
        "meta-llama/Llama-3.2-3B")
    assert orpheus.total_params == 3_300_867_072
    assert orpheus.total_params - llama.total_params == (156_940 - 128_256) * 3072




# Mamba / short-conv hybrids (layer plans and mixers in axlint/architectures/ssm.py), from copies of their
# config.json (each entry's "source"). LFM2-350M's total is the published 354,483,968 (also checked above through
# published_parameters); the others are computed, and each equals the numel sum of the model transformers 5.24 builds
# from the entry on the meta device. Active: the routed experts of the top-k only.
@pytest.mark.parametrize("model_id, params, active", [
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 31_577_937_344, 3_580_073_408),  # computed (published: 31.6B / 3.5B)
    ("ai21labs/Jamba-v0.1", 51_570_323_328, 12_110_311_296),  # computed (published: 52B / 12B)
    ("LiquidAI/LFM2-350M", 354_483_968, 354_483_968),  # published
    ("LiquidAI/LFM2-8B-A1B", 8_339_929_856, 1_557_740_288),  # computed (published: 8.3B / 1.5B)
    ("state-spaces/mamba-2.8b", 2_768_345_600, 2_768_345_600),  # computed
    ("tiiuae/Falcon-H1-0.5B-Instruct", 521_411_104, 521_411_104),  # computed
    ("tiiuae/Falcon-H1-3B-Base", 3_149_256_192, 3_149_256_192),  # computed
    ("tiiuae/Falcon-H1-7B-Base", 7_585_513_568, 7_585_513_568),  # computed
])
def test_hybrid_entries_total_and_active(model_id, params, active):
    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_decoder is None
    assert arch.total_params == params and arch.active_params == active


def test_hybrid_entries_layer_plans():
    """Nemotron 3 Nano: 23 Mamba-2 blocks, 23 MoE blocks, 6 attention blocks; Jamba: attention at 4, 12, 20, 28 and
    MoE in the odd layers; LFM2: attention at full_attn_idxs; Mamba: the mixer alone in every layer."""
    nemotron = resolve_architecture("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    kinds = [(p.mixers, p.mlp) for p in nemotron.layer_plans]
    assert kinds.count((("mamba2",), None)) == 23 and kinds.count(((), "moe")) == 23
    assert kinds.count((("attention",), None)) == 6
    jamba = resolve_architecture("ai21labs/Jamba-v0.1")
    assert [i for i in range(32) if jamba.has_attention(i)] == [4, 12, 20, 28]
    assert [i for i in range(6) if jamba.is_moe_layer(i)] == [1, 3, 5]
    lfm2 = resolve_architecture("LiquidAI/LFM2-350M")
    assert [i for i in range(16) if lfm2.has_attention(i)] == [2, 5, 8, 10, 12, 14]
    assert lfm2.dense_intermediate_size == 4608 and lfm2.tie_word_embeddings
    mamba = resolve_architecture("state-spaces/mamba-2.8b-hf")
    assert {(p.mixers, p.mlp) for p in mamba.layer_plans} == {(("mamba",), None)}
@pytest.mark.parametrize("model_id, total, active", [
    ("Qwen/Qwen3.5-4B", 4_539_265_536, 4_539_265_536),
    ("Qwen/Qwen3.5-9B", 9_409_813_744, 9_409_813_744),
    ("Qwen/Qwen3.5-27B", 27_356_728_560, 27_356_728_560),
    ("Qwen/Qwen3.5-35B-A3B", 35_107_181_936, 3_901_560_176),
    ("Qwen/Qwen3.5-122B-A10B", 122_562_817_776, 10_222_579_440),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 79_674_391_296, 3_874_929_408),
])
def test_gated_deltanet_hybrid_totals(model_id, total, active):
    """Computed from the catalog's config.json values (no exact total is published: the model cards say 4B, 9B, 27B,
    35B / 3B active, 122B / 10B active, 80B / 3B active, which these round to); the Qwen3.5 totals hold the vision
    tower and merger, none holds the multi-token-prediction layer that transformers does not build."""
    arch = resolve_architecture(model_id)
    assert arch.unsized_decoder is None and arch.unsized_vision is None
    assert (arch.total_params, arch.active_params) == (total, active)


def test_qwen3_5_base_and_next_aliases_resolve():
    assert catalog_lookup("Qwen/Qwen3.5-35B-A3B-Base")["id"] == "Qwen/Qwen3.5-35B-A3B"
    assert resolve_architecture("Qwen/Qwen3.5-27B").layers_params[3] != resolve_architecture(
        "Qwen/Qwen3.5-27B").layers_params[0]  # full-attention layer 3 and Gated DeltaNet layer 0 differ


# Gemma 4 (models/gemma4 in transformers 5.24: the gemma4_text row, the gemma4_vision tower and embed_vision): each
# total equals the numel sum of the Gemma4ForConditionalGeneration transformers 5.24 builds from the entry on the
# meta device.
@pytest.mark.parametrize("model_id, params, vision, active", [
    # computed; the checkpoint's tensors hold 31,273,088,876 elements, 2,364 of them buffers (layer_scalar, std_*)
    ("google/gemma-4-31B", 31_273_086_512, 575_741_232, 31_273_086_512),
    # computed (ollama: 25.8B); 8 of 128 experts per layer, beside each layer's dense MLP
    ("google/gemma-4-26B-A4B", 25_805_933_872, 572_792_112, 4_395_322_672),
])
def test_gemma_4_entries_total_and_active(model_id, params, vision, active):
    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_vision is None and arch.unsized_decoder is None
    assert arch.total_params == params and arch.extra_parameters == vision and arch.active_params == active
    assert arch.decoder_path == "model.language_model"


@pytest.mark.parametrize("alias, canonical", [
    ("google/gemma-4-31B-it", "google/gemma-4-31B"),
    ("google/gemma-4-26B-A4B-it", "google/gemma-4-26B-A4B"),
])
def test_gemma_4_aliases_resolve(alias, canonical):
    assert catalog_lookup(alias)["id"] == canonical


@pytest.mark.parametrize("model_id, total, active", [
    # computed (the card: 48B total, 3B activated); equal to the numel of the KimiLinearForCausalLM transformers 5.24
    # builds from the entry on the meta device
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", 49_122_675_072, 3_484_453_248),
    # computed (Arcee's technical report: 6B total, 1B active); equal to the meta-device AfmoeForCausalLM's numel
    ("arcee-ai/Trinity-Nano-Preview", 6_120_003_328, 1_023_923_968),
])
def test_kimi_linear_and_trinity_totals(model_id, total, active):
    arch = resolve_architecture(model_id)
    assert arch.unsized_decoder is None
    assert (arch.total_params, arch.active_params) == (total, active)


# Checkpoints stored quantized: their entries carry config.json's quantization_config (axlint/memory/prequantized.py
# reads it). The NVFP4 exports keep their base model's sizes, so their totals are the base entries'.
@pytest.mark.parametrize("model_id, total, method", [
    ("nvidia/Qwen3-30B-A3B-NVFP4", 30_532_122_624, "modelopt"),  # Qwen/Qwen3-30B-A3B's published total
    ("nvidia/Qwen3-Next-80B-A3B-Instruct-NVFP4", 79_674_391_296, "modelopt"),  # computed, as its base
    ("nvidia/Gemma-4-26B-A4B-NVFP4", 25_805_933_872, "modelopt"),  # computed, as google/gemma-4-26B-A4B
    # computed (the card: 230B total, 10B active); equal to the transformers 5.24 model on the meta device
    ("MiniMaxAI/MiniMax-M2", 228_689_748_992, "fp8"),
])
def test_quantized_checkpoint_entries_total(model_id, total, method):
    arch = resolve_architecture(model_id)
    assert arch.source == "catalog" and arch.unsized_decoder is None and arch.unsized_vision is None
    assert arch.total_params == total
    assert arch.raw_config["quantization_config"]["quant_method"] == method
