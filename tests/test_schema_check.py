"""The fast schema checker: faithful to jsonschema on the corpus, and the specific problem kinds."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from axlint.document import load_document
from axlint.schemas.validator import COERCED, FAILURES, check_document, check_node, load_schema
from tests.corpus import CORPUS

AXOLOTL = "0.18.0"  # the release the vendored example corpus comes from
DEEPSPEED = "0.19.8"  # the DeepSpeed release the DeepSpeed cases below were written for
EXAMPLES = sorted((CORPUS / "examples").rglob("*.y*ml"))
DS_CORPUS = sorted((CORPUS / "deepspeed_configs").glob("*.json"))

COERCED_IN_CORPUS = {
    # YAML 1.1 reads `5e-4` / `1e-3` (no dot) as strings; DiffusionConfig.eps is a float and pydantic's lax mode
    # parses the string, so the run is fine. jsonschema reports a type error at the same path.
    ("examples/llama-3/diffusion/pretrain-1b.yaml", ("diffusion", "eps")),
    ("examples/llama-3/diffusion/sft-1b.yaml", ("diffusion", "eps")),
    # `jagged_restart_anneal_steps: false` for an `int | None` field: pydantic turns False into 0 (coerced-value).
    ("examples/llama-2/relora.yml", ("jagged_restart_anneal_steps",)),
}


def _yaml(text: str):
    return load_document(Path("config.yml"), text)


def _json(text: str):
    return load_document(Path("ds.json"), text)


def _by_kind(problems, kind):
    return [p for p in problems if p.kind == kind]


# ------------------------------------------------------------------------------------ faithful to jsonschema


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _error_paths(error, root: dict) -> set[tuple]:
    """Where a jsonschema error points, in the checker's terms: an unknown key at the key's own path, and a
    failed anyOf over a map or list at the errors of the branch of that kind (the checker descends there)."""
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        return {path + (key,) for key in error.instance if key not in error.schema.get("properties", {})}
    if error.validator in ("anyOf", "oneOf") and isinstance(error.instance, (dict, list)):
        kind = "object" if isinstance(error.instance, dict) else "array"
        for index, branch in enumerate(error.validator_value):
            allowed = _resolve(branch, root).get("type", ())
            if kind in ((allowed,) if isinstance(allowed, str) else allowed):
                return {p for e in error.context if e.relative_schema_path[0] == index for p in _error_paths(e, root)}
    return {path}


def _for_document(schema: dict, data: dict) -> dict:
    """The schema as jsonschema must see it for this document: `x-axlint-items-by` made explicit (the `datasets`
    entries checked against the model the document's `rl` selects)."""
    select = schema["properties"]["datasets"].get("x-axlint-items-by", {"key": "rl", "cases": {}})
    case = select["cases"].get(data.get(select["key"]))
    if case is None:
        return schema
    datasets = {"anyOf": [{"type": "array", "items": {"$ref": case}}, {"type": "null"}]}
    return {**schema, "properties": {**schema["properties"], "datasets": datasets}}


@pytest.fixture(scope="module")
def corpus_results():
    schema = load_schema("axolotl", AXOLOTL)
    results = {}
    for path in EXAMPLES:
        doc = load_document(path)
        own = _for_document(schema, doc.data)
        expected = {p for e in Draft202012Validator(own).iter_errors(doc.data) for p in _error_paths(e, own)}
        results[str(path.relative_to(CORPUS))] = (expected, check_document(doc, "axolotl", AXOLOTL))
    return results


def test_corpus_has_all_example_configs(corpus_results):
    assert len(corpus_results) == 252  # 250 training configs + 2 cloud-launcher configs


def test_fast_checker_finds_the_same_problem_paths_as_jsonschema(corpus_results):
    differences = {}
    for name, (expected, problems) in corpus_results.items():
        got = {p.path for p in problems if p.kind in FAILURES | COERCED}
        if got != expected:
            differences[name] = (sorted(map(str, expected - got)), sorted(map(str, got - expected)))
    assert differences == {}


def test_coerced_strings_in_corpus_are_exactly_the_known_ones(corpus_results):
    found = {(name, p.path) for name, (_, problems) in corpus_results.items() for p in problems if p.kind in COERCED}
    assert found == COERCED_IN_CORPUS


def test_corpus_typo_gets_a_suggestion(corpus_results):
    _, problems = corpus_results["examples/falcon-h1/falcon-h1-1b-qlora-cp.yaml"]
    unknown = _by_kind(problems, "unknown-key")
    assert [(p.path, p.suggestion) for p in unknown] == [(("context_parapllel_size",), "context_parallel_size")]
    assert unknown[0].span_part == "key"


def test_corpus_plugin_keys_all_have_their_plugin(corpus_results):
    assert [n for n, (_, ps) in corpus_results.items() if _by_kind(ps, "plugin-key-without-plugin")] == []


def test_fast_checker_speed_per_corpus_file():
    docs = [load_document(path) for path in EXAMPLES]
    load_schema("axolotl", AXOLOTL)
    start = time.perf_counter()
    for doc in docs:
        check_document(doc, "axolotl", AXOLOTL)
    per_file_ms = (time.perf_counter() - start) * 1000 / len(docs)
    print(f"fast schema check: {per_file_ms:.3f} ms per corpus file")
    assert per_file_ms < 10


def test_checker_does_not_import_jsonschema():
    code = ("import sys; from pathlib import Path; from axlint.document import load_document; "
            "from axlint.schemas.validator import check_document; "
            "check_document(load_document(Path('c.yml'), 'adapter: loraa\\n'), 'axolotl'); "
            "assert 'jsonschema' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_schemas_are_loaded_once():
    assert load_schema("axolotl") is load_schema("axolotl")


# ---------------------------------------------------------------------------------------- Axolotl cases


def test_unknown_key_with_suggestion_and_span():
    doc = _yaml("base_model: m\nsequence_length: 2048\n")
    [problem] = check_document(doc, "axolotl", AXOLOTL)
    assert (problem.kind, problem.path, problem.suggestion) == ("unknown-key", ("sequence_length",), "sequence_len")
    assert problem.message_args["effect"] == "ignore"
    span = doc.span(problem.path, problem.span_part)
    assert (span.line, span.col) == (2, 1)


def test_unknown_key_without_close_match_has_no_suggestion():
    [problem] = check_document(_yaml("base_model: m\nzzz_qqq: 1\n"), "axolotl", AXOLOTL)
    assert problem.kind == "unknown-key" and problem.suggestion is None


def test_wrong_type_in_yaml_terms():
    [problem] = check_document(_yaml("micro_batch_size: two\n"), "axolotl", AXOLOTL)
    assert problem.kind == "wrong-type"
    assert problem.message_args == {"key": "micro_batch_size", "expected": "int or null", "got": "str",
                                    "value": "two"}


def test_wrong_type_for_a_list_where_a_scalar_belongs():
    [problem] = check_document(_yaml("sequence_len:\n  - 1\n"), "axolotl", AXOLOTL)
    assert problem.kind == "wrong-type"
    assert (problem.message_args["got"], problem.message_args["expected"]) == ("list", "int")


def test_string_learning_rate_is_valid_because_the_field_is_str_or_float():
    assert check_document(_yaml("learning_rate: 2e-4\n"), "axolotl", AXOLOTL) == []


def test_numeric_string_for_float_field_is_coerced_not_wrong():
    [problem] = check_document(_yaml("weight_decay: 1e-2\n"), "axolotl", AXOLOTL)
    assert problem.kind == "coerced-string" and problem.message_args["expected"] == "float or null"


def test_bad_enum_with_suggestion():
    [problem] = check_document(_yaml("lr_scheduler: cosin\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.suggestion) == ("bad-enum", "cosine")


def test_adapter_is_a_plain_string_in_the_model():
    # Axolotl types `adapter` as `str | None`; an unknown adapter is refused later by a validator that also
    # accepts adapters registered by plugins, so the schema has no value list for it.
    assert check_document(_yaml("adapter: loraa\n"), "axolotl", AXOLOTL) == []


def test_bad_enum_in_literal_union():
    [problem] = check_document(_yaml("gradient_checkpointing: ofload\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.suggestion) == ("bad-enum", "offload")


def test_bool_or_literal_accepts_both():
    assert check_document(_yaml("bf16: auto\ntf32: true\ngradient_checkpointing: offload\n"), "axolotl", AXOLOTL) == []


def test_enum_from_refinements():
    [problem] = check_document(_yaml("rl: dpoo\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.suggestion) == ("bad-enum", "dpo")


def test_deprecated_key_with_replacement():
    [problem] = check_document(_yaml("flash_attention: true\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.path, problem.suggestion) == ("deprecated-key", ("flash_attention",),
                                                                "attn_implementation")
    assert "warns" in problem.message_args["note"]


def test_removed_key_is_refused_not_unknown():
    [problem] = check_document(_yaml("unsloth_lora_mlp: true\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.suggestion) == ("removed-key", None)
    assert "refuses to start" in problem.message_args["note"]
    [problem] = check_document(_yaml("unsloth_lora_mlp: false\n"), "axolotl", AXOLOTL)
    assert problem.kind == "deprecated-key"  # the validator tests truthiness: false passes


def test_removed_key_with_a_value_axolotl_lets_through_is_only_deprecated():
    """Axolotl 0.18.0 refuses `unsloth_lora_mlp` when it is true and `dpo_norm_loss` whenever it is set."""
    [problem] = check_document(_yaml("unsloth_lora_mlp: false\n"), "axolotl", "0.18.0")
    assert problem.kind == "deprecated-key"
    [problem] = check_document(_yaml("dpo_norm_loss: false\n"), "axolotl", "0.18.0")
    assert problem.kind == "removed-key"


def test_plugin_key_without_its_plugin():
    [problem] = check_document(_yaml("liger_fused_linear_cross_entropy: true\n"), "axolotl", AXOLOTL)
    assert problem.kind == "plugin-key-without-plugin"
    assert problem.message_args["plugin"] == "axolotl.integrations.liger.LigerPlugin"


def test_plugin_key_with_its_plugin_is_clean():
    text = "plugins:\n  - axolotl.integrations.liger.LigerPlugin\nliger_fused_linear_cross_entropy: true\n"
    assert check_document(_yaml(text), "axolotl", AXOLOTL) == []


def test_plugin_without_listed_class_is_matched_by_package():
    text = "plugins: [axolotl.integrations.kd.KDPlugin]\nkd_alpha: 0.5\n"
    assert check_document(_yaml(text), "axolotl", AXOLOTL) == []
    [problem] = check_document(_yaml("plugins: [axolotl.integrations.kdx.X]\nkd_alpha: 0.5\n"), "axolotl", AXOLOTL)
    assert problem.kind == "plugin-key-without-plugin"


def test_alias_and_field_name_are_both_valid():
    text = "model_type: AutoModelForCausalLM\ntype_of_model: AutoModelForCausalLM\nmodel_config: {a: 1}\n"
    assert check_document(_yaml(text), "axolotl", AXOLOTL) == []


def test_nested_plugin_block_is_closed():
    text = "plugins: [axolotl.integrations.diffusion.DiffusionPlugin]\ndiffusion:\n  noise_schedul: cosine\n"
    [problem] = check_document(_yaml(text), "axolotl", AXOLOTL)
    assert (problem.kind, problem.path, problem.suggestion) == ("unknown-key", ("diffusion", "noise_schedul"),
                                                                "noise_schedule")


def test_fsdp_config_prefixed_key_is_deprecated_and_unknown_key_reported():
    text = "fsdp_config:\n  fsdp_offload_params: true\n  sharding_strategy: FULL_SHARD\n"
    problems = check_document(_yaml(text), "axolotl", AXOLOTL)
    assert [(p.kind, p.path) for p in problems] == [
        ("deprecated-key", ("fsdp_config", "fsdp_offload_params")),
        ("unknown-key", ("fsdp_config", "sharding_strategy")),
    ]


def test_datasets_are_checked_as_the_model_rl_selects():
    # Axolotl 0.18.0's validate_config builds every entry as a DPODataset when `rl: dpo`: `field_chosen` is kept,
    # `roles` is dropped. Without `rl` the entries are SFTDataset, which has no `field_chosen`.
    text = "rl: dpo\ndatasets:\n  - path: p\n    field_chosen: chosen\n    roles: {}\n"
    problems = check_document(_yaml(text), "axolotl", AXOLOTL)
    assert [(p.kind, p.path) for p in problems] == [("unknown-key", ("datasets", 0, "roles"))]
    problems = check_document(_yaml(text.replace("rl: dpo\n", "")), "axolotl", AXOLOTL)
    assert [(p.kind, p.path) for p in problems] == [("unknown-key", ("datasets", 0, "field_chosen"))]


def test_items_of_a_list_are_checked():
    [problem] = check_document(_yaml("lora_target_modules:\n  - q_proj\n  - 3\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.path) == ("wrong-type", ("lora_target_modules", 1))


def test_root_that_is_not_a_map():
    seq = _yaml("v: [1, 2]\n").node(("v",))  # the document loader itself refuses a non-map top level
    [problem] = check_node(seq, load_schema("deepspeed", DEEPSPEED))
    assert (problem.kind, problem.path, problem.message_args["got"]) == ("wrong-type", (), "list")


def test_duplicate_keys_are_each_checked():
    problems = check_document(_yaml("sequence_len: a\nsequence_len: b\n"), "axolotl", AXOLOTL)
    assert [p.kind for p in problems] == ["wrong-type", "wrong-type"]


@pytest.mark.parametrize("annotation, json_type", [
    (int | None, ["integer", "null"]), (float | None, ["number", "null"]), (bool | None, ["boolean", "null"]),
])
@pytest.mark.parametrize("yaml_value", [
    "'3'", "'+3'", "' 4 '", "'1_000'", "'3.0'", "'3.5'", "'1e3'", "'0x10'", "'1e-3'", "'nan'", "'inf'", "''",
    "'true'", "'TRUE'", "'no'", "' yes '", "'off'", "'t'", "true", "false", "0", "1", "2", "1.0", "0.5", "abc",
])
def test_lax_coercion_matches_pydantic(annotation, json_type, yaml_value):
    doc = _yaml(f"v: {yaml_value}\n")
    schema = {"type": "object", "properties": {"v": {"type": json_type}}}
    problems = check_node(doc.root, schema)
    try:
        TypeAdapter(annotation).validate_python(doc.data["v"])
        accepted = True
    except ValidationError:
        accepted = False
    verdict = problems[0].kind if problems else "valid"
    assert (verdict in COERCED | {"valid"}) == accepted, verdict


def test_const_and_non_scalar_enum():
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"const": 3}, "b": {"enum": ["x"]}}}
    problems = check_node(_yaml("a: 4\nb: {c: 1}\n").root, schema)
    assert [(p.kind, p.path) for p in problems] == [("bad-enum", ("a",)), ("wrong-type", ("b",))]
    assert check_node(_yaml("a: 3.0\n").root, schema) == []
    assert check_node(_yaml("a: true\n").root, {"properties": {"a": {"const": 1}}})[0].kind == "bad-enum"


# ---------------------------------------------------------------------------------------- DeepSpeed cases


@pytest.mark.parametrize("path", DS_CORPUS, ids=lambda p: p.name)
def test_corpus_deepspeed_configs_are_clean(path):
    assert check_document(load_document(path), "deepspeed", DEEPSPEED) == []


def test_deepspeed_typo_inside_zero_optimization():
    doc = _json('{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_sizee": "auto"}}')
    [problem] = check_document(doc, "deepspeed", DEEPSPEED)
    assert (problem.kind, problem.path, problem.suggestion) == (
        "unknown-key", ("zero_optimization", "stage3_prefetch_bucket_sizee"), "stage3_prefetch_bucket_size")
    assert problem.message_args["effect"] == "forbid"
    assert doc.span(problem.path, "key").line == 1


def test_deepspeed_offload_device_gpu_is_bad_enum():
    doc = _json('{"zero_optimization": {"stage": 3, "offload_param": {"device": "gpu"}}}')
    [problem] = check_document(doc, "deepspeed", DEEPSPEED)
    assert (problem.kind, problem.path) == ("bad-enum", ("zero_optimization", "offload_param", "device"))
    assert "'cpu'" in problem.message_args["allowed"]


def test_deepspeed_auto_values_and_aliases():
    text = ('{"train_batch_size": "auto", "gradient_clipping": "auto", "fp16": {"enabled": "auto"},'
            ' "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "max_live_parameters": 1e9,'
            ' "stage3_max_live_parameters": 0, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}}')
    assert check_document(_json(text), "deepspeed", DEEPSPEED) == []


def test_deepspeed_wrong_types_and_removed_keys():
    text = ('{"zero_optimization": {"stage": 4, "overlap_comm": "maybe", "mics_shard_size": 8},'
            ' "amp": {"enabled": true}, "bf16": {"check_overflow": true}, "zero_optimisation": {}}')
    problems = check_document(_json(text), "deepspeed", DEEPSPEED)
    assert [(p.kind, p.path, p.suggestion) for p in problems] == [
        ("bad-enum", ("zero_optimization", "stage"), None),
        ("bad-enum", ("zero_optimization", "overlap_comm"), None),
        ("unknown-key", ("zero_optimization", "mics_shard_size"), None),  # not a field of 0.19.8's model
        ("deprecated-key", ("amp",), "bf16"),
        ("unknown-key", ("bf16", "check_overflow"), "check_grad_overflow"),
        ("unknown-key", ("zero_optimisation",), "zero_optimization"),
    ]
    assert problems[-1].message_args["effect"] == "ignore"


def test_deepspeed_legacy_boolean_zero_optimization():
    assert check_document(_json('{"zero_optimization": true}'), "deepspeed", DEEPSPEED) == []


def test_a_wrong_mapping_or_list_is_quoted_by_its_shape():
    """A map or list where a scalar belongs is quoted by its keys or length, never as `null`."""
    [problem] = check_document(_yaml("tokens:\n  pad_token: '<p>'\n  eos_token: '</s>'\n"), "axolotl", AXOLOTL)
    assert problem.message_args["value"] == "{pad_token: ..., eos_token: ...}"
    [problem] = check_document(_yaml("learning_rate: [1, 2]\n"), "axolotl", AXOLOTL)
    assert (problem.kind, problem.message_args["value"]) == ("wrong-type", "[2 items]")
