"""The bundled JSON Schemas: one per Axolotl and DeepSpeed release, each valid draft 2020-12, indexed, with the
nested models, plugin marks and deprecations the generators record; and the generators' pure parts."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.corpus import CORPUS

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "axlint" / "schemas"
AXOLOTL_VERSIONS = ["0.12.2", "0.13.2", "0.14.0", "0.15.0", "0.16.1", "0.17.0", "0.18.0", "0.19.0"]
DEEPSPEED_VERSIONS = ["0.18.9", "0.19.8"]
BUNDLED = [("axolotl", v) for v in AXOLOTL_VERSIONS] + [("deepspeed", v) for v in DEEPSPEED_VERSIONS]


def _tool(name: str):
    sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _schema(package: str, version: str) -> dict:
    return json.loads((SCHEMAS / package / f"{version}.schema.json").read_text(encoding="utf-8"))


def _refs(node: object) -> set[str]:
    if isinstance(node, dict):
        own = {node["$ref"]} if "$ref" in node else set()
        return own.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


@pytest.mark.parametrize("package", ["axolotl", "deepspeed"])
def test_index_lists_exactly_the_bundled_files(package):
    index = json.loads((SCHEMAS / package / "versions.json").read_text(encoding="utf-8"))[package]
    files = sorted(p.name for p in (SCHEMAS / package).glob("*.schema.json"))
    assert sorted(e["file"] for e in index) == files
    assert [e["version"] for e in index] == (AXOLOTL_VERSIONS if package == "axolotl" else DEEPSPEED_VERSIONS)


@pytest.mark.parametrize("package, version", BUNDLED)
def test_bundled_schema_is_valid_closed_and_resolves(package, version):
    schema = _schema(package, version)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert version in schema["title"]
    assert schema["additionalProperties"] is False and schema["x-axlint-extra"] == "ignore"
    assert {ref.rsplit("/", 1)[-1] for ref in _refs(schema)} <= set(schema["$defs"])


@pytest.mark.parametrize("version", AXOLOTL_VERSIONS)
def test_axolotl_nested_models_come_through(version):
    schema = _schema("axolotl", version)
    defs, properties = schema["$defs"], schema["properties"]
    assert properties["base_model"]["x-axlint-required"] is True
    for name in ("SFTDataset", "DPODataset", "SpecialTokensConfig", "PeftConfig", "TRLConfig", "VllmConfig"):
        assert defs[name]["additionalProperties"] is False, name
        assert defs[name]["properties"], name
    assert "type" in defs["SFTDataset"]["properties"]
    assert "pad_token" in defs["SpecialTokensConfig"]["properties"]
    assert "adamw_torch_fused" in properties["optimizer"]["anyOf"][0]["enum"]
    assert "cosine" in properties["lr_scheduler"]["anyOf"][0]["enum"]
    assert {"type_of_model", "model_type"} <= set(properties)  # field name and alias are both accepted


def test_plugin_keys_name_the_plugin_class():
    properties = _schema("axolotl", "0.18.0")["properties"]
    assert properties["liger_fused_linear_cross_entropy"]["x-axlint-plugin"] == "axolotl.integrations.liger.LigerPlugin"
    assert properties["cut_cross_entropy"]["x-axlint-plugin"] == (
        "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin")
    assert properties["kd_alpha"]["x-axlint-plugin"] == "axolotl.integrations.kd.KDPlugin"
    assert "x-axlint-plugin" not in properties["generation_temperature"]  # core key, also a nested diffusion field


def test_deprecations_probed_from_validate_config():
    properties = _schema("axolotl", "0.18.0")["properties"]
    refused = properties["unsloth_lora_mlp"]["x-axlint-deprecated"]
    assert refused["refused"] is True
    assert properties["max_packed_sequence_len"]["x-axlint-deprecated"]["refused"] is True
    moved = properties["dataset_processes"]["x-axlint-deprecated"]
    assert moved["replacement"] == "dataset_num_proc" and "refused" not in moved
    assert properties["noisy_embedding_alpha"]["x-axlint-deprecated"]["replacement"] == "neftune_noise_alpha"
    assert properties["flash_attention"]["x-axlint-deprecated"]["replacement"] == "attn_implementation"
    fsdp = _schema("axolotl", "0.18.0")["$defs"]["FSDPConfig"]["properties"]
    prefixed = dict(fsdp["fsdp_offload_params"])  # the prefixed spelling Axolotl strips, with a warning
    assert prefixed.pop("x-axlint-deprecated")["replacement"] == "offload_params"
    assert prefixed == fsdp["offload_params"]
    assert "version" in fsdp  # AliasChoices("fsdp_version", "version")


def test_deepspeed_018_lacks_keys_added_in_019():
    old = _schema("deepspeed", "0.18.9")["$defs"]["zero_optimization"]
    new = _schema("deepspeed", "0.19.8")["$defs"]["zero_optimization"]
    assert old["additionalProperties"] is False and old["x-axlint-extra"] == "forbid"
    assert "compute_grad_norm" not in old["properties"]
    assert "compute_grad_norm" in new["properties"]


@pytest.mark.parametrize("version", DEEPSPEED_VERSIONS)
def test_deepspeed_pydantic_fields_accept_auto(version):
    defs = _schema("deepspeed", version)["$defs"]
    assert {"$ref": "#/$defs/auto"} in defs["zero_optimization"]["properties"]["reduce_bucket_size"]["anyOf"]
    assert {"$ref": "#/$defs/auto"} in defs["bf16"]["properties"]["enabled"]["anyOf"]
    assert defs["fp16"]["additionalProperties"] is False


@pytest.mark.parametrize("path", sorted((CORPUS / "deepspeed_configs").glob("*.json")), ids=lambda p: p.name)
def test_corpus_deepspeed_configs_are_valid_for_jsonschema(path):
    errors = list(Draft202012Validator(_schema("deepspeed", "0.18.9")).iter_errors(json.loads(path.read_text())))
    assert errors == []


def test_reduce_keeps_the_checker_subset():
    schemagen = _tool("schemagen")
    raw = {"title": "M", "type": "object", "x-extra": "ignore", "required": ["a"], "x-spellings": {"alias_a": "a"},
           "properties": {"a": {"title": "A", "type": "string", "description": "First. Second sentence."},
                          "b": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}], "x-validator": "before"},
                          "c": {"anyOf": [{"type": "string", "enum": ["x"]}], "x-validator": "before"},
                          "d": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}}}
    defs = {"N": {"type": "object", "properties": {"k": {"type": "integer"}}}}
    out = schemagen.reduce_schema(raw, defs)
    assert out["additionalProperties"] is False and out["x-axlint-extra"] == "ignore"
    assert out["properties"]["a"] == {"type": "string", "x-axlint-required": True, "description": "First."}
    assert out["properties"]["alias_a"] == {"type": "string", "description": "First."}
    assert out["properties"]["b"]["anyOf"][0] == {"$ref": "#/$defs/N"}  # leads to a model: still checked
    assert out["properties"]["c"] == {}  # converted by a validator first: any value
    assert out["properties"]["d"] == {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}
    assert "title" not in out


def test_deprecation_from_probe_outcomes():
    gen = _tool("gen_axolotl_schema")
    props = {"new_key": {}, "other_key": {}}
    refused = gen.deprecation({"key": "old_key", "error": "ValueError: `old_key` was removed"}, None, props, "1.0")
    assert refused == {"replacement": None, "note": "Axolotl 1.0 refuses to start when it is set", "refused": True,
                       "refused_when_empty": True}
    only_true = gen.deprecation({"key": "old_key", "error": "ValueError: removed", "falsy_refused": False}, None,
                                props, "1.0")
    assert only_true["note"].endswith("when it is set to a true value") and not only_true["refused_when_empty"]
    moved = gen.deprecation({"key": "old_key", "warnings": ["old_key is deprecated, use new_key"],
                             "changed": ["new_key"], "kept": False}, None, props, "1.0")
    assert moved["replacement"] == "new_key" and "refused" not in moved
    silent = gen.deprecation({"key": "old_key", "changed": [], "kept": True}, {"type": "string"}, props, "1.0")
    assert silent is None


def test_a_pydantic_deprecation_message_names_what_to_use_without_a_rename():
    gen = _tool("gen_axolotl_schema")
    props = {"fsdp": {}, "fsdp_config": {}}
    message = "Configuring FSDP using `fsdp` is deprecated. Please use `fsdp_config` instead."
    marked = gen.deprecation({"key": "fsdp"}, {"deprecated": True, "x-deprecated-message": message}, props, "1.0")
    assert marked == {"replacement": None,
                      "note": "marked deprecated in Axolotl 1.0, which points to `fsdp_config` instead"}
    nested = gen.deprecation({"key": "old"}, {"deprecated": True, "x-deprecated-message": "Use `fsdp_config.x`."},
                             props, "1.0")
    assert nested["note"].endswith("points to `fsdp_config.x` instead") and nested["replacement"] is None
    unnamed = gen.deprecation({"key": "old"}, {"deprecated": True, "x-deprecated-message": "Use `elsewhere`."},
                              props, "1.0")
    assert unnamed["note"] == "marked deprecated in Axolotl 1.0"


def test_the_bundled_schema_says_where_fsdp_went():
    properties = _schema("axolotl", "0.19.0")["properties"]
    assert properties["fsdp"]["x-axlint-deprecated"] == {
        "replacement": None, "note": "marked deprecated in Axolotl 0.19.0, which points to `fsdp_config` instead"}
