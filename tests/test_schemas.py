"""The JSON Schemas: valid draft 2020-12, generated file in sync, key coverage, annotation mapping."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.corpus import CORPUS

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "axlint" / "schemas"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_axolotl_schema", ROOT / "tools" / "gen_axolotl_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


@pytest.mark.parametrize("name", ["axolotl", "deepspeed"])
def test_schema_is_valid_draft_2020_12(name):
    schema = _schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_generated_schema_is_in_sync_with_generator():
    assert (SCHEMAS / "axolotl.schema.json").read_text() == _generator().render()


def test_every_core_field_and_alias_is_a_key():
    core = json.loads((SCHEMAS / "source" / "axolotl_fields_core.json").read_text())
    properties = _schema("axolotl")["properties"]
    assert len(core) == 388
    for field in core:
        assert field["name"] in properties
        if field["alias"]:
            assert properties[field["alias"]]["type"] == properties[field["name"]]["type"]
    assert {"model_type", "type_of_model", "model_config", "overrides_of_model_config"} <= set(properties)


def test_top_level_is_closed_and_plugins_are_marked():
    schema = _schema("axolotl")
    properties = schema["properties"]
    assert schema["additionalProperties"] is False
    assert properties["liger_fused_linear_cross_entropy"]["x-axlint-plugin"] == "axolotl.integrations.liger.LigerPlugin"
    assert properties["cut_cross_entropy"]["x-axlint-plugin"] == (
        "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin")
    assert properties["cut_cross_entropy"]["default"] is True
    assert properties["diffusion"]["$ref"] == "#/$defs/DiffusionConfig"
    assert "x-axlint-plugin" not in properties["generation_temperature"]  # core key, also a nested diffusion field
    assert properties["expert_parallel_size"]["type"] == "integer"


def test_deprecated_keys_carry_their_replacement():
    core = json.loads((SCHEMAS / "source" / "axolotl_fields_core.json").read_text())
    properties = _schema("axolotl")["properties"]
    for field in core:
        if field["deprecated"]:
            assert "x-axlint-deprecated" in properties[field["name"]], field["name"]
    assert properties["flash_attention"]["x-axlint-deprecated"]["replacement"] == "attn_implementation"
    assert properties["max_packed_sequence_len"]["x-axlint-deprecated"]["replacement"] is None
    assert properties["noisy_embedding_alpha"]["x-axlint-deprecated"]["replacement"] == "neftune_noise_alpha"
    assert properties["liger_swiglu"]["x-axlint-deprecated"]["replacement"] == "liger_glu_activation"


@pytest.mark.parametrize("annotation, expected", [
    ("int | None", {"type": ["integer", "null"]}),
    ("str | float", {"type": ["string", "number"]}),
    ("Literal['auto'] | bool | None", {"anyOf": [{"type": ["boolean", "null"]}, {"enum": ["auto"]}]}),
    ("list[str] | Literal['all_linear'] | None",
     {"anyOf": [{"type": "null"}, {"enum": ["all_linear"]}, {"type": "array", "items": {"type": "string"}}]}),
    ("dict[str, PositiveInt] | None",
     {"anyOf": [{"type": "null"}, {"type": "object", "additionalProperties": {"type": "integer"}}]}),
    ("dict[str, Any] | None", {"type": ["object", "null"]}),
    ("Annotated[list[str], MinLen(1)] | None",
     {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}}]}),
    ("Optional[float]", {"type": ["number", "null"]}),
    ("Any | None", {}),
    ("FSDPConfig | None", {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/FSDPConfig"}]}),
])
def test_annotation_mapping(annotation, expected):
    mapper = _generator()._Mapper(set(), {}, {"FSDPConfig": None})
    assert mapper(annotation) == expected


def test_annotation_mapping_rejects_unknown_generics():
    with pytest.raises(ValueError):
        _generator()._Mapper(set(), {}, {})("frozenset[int]")


def test_enums_from_refinements():
    schema = _schema("axolotl")
    assert schema["$defs"]["RLType"]["enum"] == ["dpo", "gdpo", "grpo", "ipo", "orpo", "kto", "simpo", "ebft"]
    assert schema["properties"]["adapter"]["anyOf"][1]["enum"] == ["lora", "qlora", "llama-adapter"]


@pytest.mark.parametrize("path", sorted((CORPUS / "deepspeed_configs").glob("*.json")), ids=lambda p: p.name)
def test_corpus_deepspeed_configs_are_valid_for_jsonschema(path):
    errors = list(Draft202012Validator(_schema("deepspeed")).iter_errors(json.loads(path.read_text())))
    assert errors == []


def test_deepspeed_blocks_forbid_extras_where_deepspeed_does():
    schema = _schema("deepspeed")
    defs = schema["$defs"]
    for name in ("zero_optimization", "fp16", "bf16"):
        assert defs[name]["additionalProperties"] is False
    for name in ("offload_param", "offload_optimizer"):
        assert defs[name]["anyOf"][1]["additionalProperties"] is False
    assert "additionalProperties" not in defs["activation_checkpointing"]
    assert schema["x-axlint-extra"] == "ignore"
