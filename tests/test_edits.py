"""Text-edit builders: exact output text, and the edited file loads to the old data changed only where asked."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from axlint import edits
from axlint.document import load_document
from axlint.edits import apply_edits

YAML = """\
# Llama 3 LoRA
base_model: meta-llama/Llama-3.1-8B  # the model

# batch
micro_batch_size: 4 # per GPU
learning_rate: '2e-4'
plugins:
  - axolotl.integrations.liger.LigerPlugin  # fused kernels
# after plugins
lora:
  r: 16
  # alpha: 32

special_tokens: {pad_token: "<|end|>", eos_token: x}
"""

DS = """\
{
    "zero_optimization": {
        "stage": 3,
        "overlap_comm": true
    },
    "bf16": {"enabled": "auto"},
    "train_micro_batch_size_per_gpu": "auto"
}
"""


def edit(text: str, builder, *args: Any, name: str = "config.yml") -> str:
    """Apply one builder's edits; the result must still load."""
    doc = load_document(Path(name), text)
    new, skipped = apply_edits(text, builder(doc, *args))
    assert skipped == []
    load_document(Path(name), new)
    return new


def data(text: str, name: str = "config.yml") -> Any:
    return load_document(Path(name), text).data


def with_change(original: Any, path: tuple, value: Any = None, delete: bool = False) -> Any:
    expected = copy.deepcopy(original)
    target = expected
    for part in path[:-1]:
        target = target.setdefault(part, {})
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return expected


# ---------------------------------------------------------------------------------------------------- set_value


def test_set_value_replaces_only_the_scalar():
    new = edit(YAML, edits.set_value, ("micro_batch_size",), 2)
    assert new == YAML.replace("micro_batch_size: 4 # per GPU", "micro_batch_size: 2 # per GPU")
    assert data(new) == with_change(data(YAML), ("micro_batch_size",), 2)


def test_set_value_keeps_quote_style_and_quotes_what_would_not_load_as_a_string():
    assert edit(YAML, edits.set_value, ("learning_rate",), "1e-5") == YAML.replace("'2e-4'", "'1e-5'")
    assert "special_tokens: {pad_token: \"<|eot|>\"" in edit(YAML, edits.set_value, ("special_tokens", "pad_token"), "<|eot|>")
    for text in ("yes", "1e-5", "null", "0x1F", "12", "on", ""):
        new = edit("a: b\n", edits.set_value, ("a",), text)
        assert new != f"a: {text}\n" and data(new) == {"a": text}


def test_set_value_floats_load_back_as_floats_under_yaml_1_1():
    new = edit("lr: 1\n", edits.set_value, ("lr",), 1e-5)
    assert new == "lr: 1.0e-05\n" and yaml.safe_load(new) == {"lr": 1e-5}
    assert edit("lr: 1\n", edits.set_value, ("lr",), 2e-4) == "lr: 0.0002\n"
    assert edit("lr: 1\n", edits.set_value, ("lr",), 3.0) == "lr: 3.0\n"


def test_set_value_unchanged_value_gives_no_edits():
    doc = load_document(Path("c.yml"), YAML)
    assert edits.set_value(doc, ("micro_batch_size",), 4) == []
    assert edits.set_value(doc, ("micro_batch_size",), 4.0) != []  # 4.0 is not the same value
    assert edits.set_value(doc, ("lora", "r"), True) != []


def test_set_value_inserts_a_missing_key_next_to_its_siblings():
    new = edit(YAML, edits.set_value, ("lora", "alpha"), 32)
    assert "lora:\n  r: 16\n  alpha: 32\n  # alpha: 32\n" in new
    assert data(new) == with_change(data(YAML), ("lora", "alpha"), 32)


def test_set_value_creates_missing_parents():
    new = edit(YAML, edits.set_value, ("a", "b", "c"), "on")
    assert new == YAML + 'a:\n  b:\n    c: "on"\n'
    assert data(new) == with_change(data(YAML), ("a",), {"b": {"c": "on"}})


def test_set_value_on_an_empty_and_a_null_value():
    assert edit("a:\nb: 1\n", edits.set_value, ("a",), 5) == "a: 5\nb: 1\n"
    assert edit("a: ~  # none\nb: 1\n", edits.set_value, ("a",), "x") == "a: x  # none\nb: 1\n"
    assert edit("a:  # c\nb: 1\n", edits.set_value, ("a",), [1, 2]) == "a:  # c\n  - 1\n  - 2\nb: 1\n"


def test_set_value_replaces_a_block_collection():
    assert edit(YAML, edits.set_value, ("lora",), False) == YAML.replace("lora:\n  r: 16\n", "lora: false\n")
    new = edit("a:\n  b: 1\nc: 2\n", edits.set_value, ("a",), {"x": 1})
    assert new == "a:\n  x: 1\nc: 2\n"


def test_set_value_in_flow_style_and_on_list_items():
    assert edit("a: [1, 2]\n", edits.set_value, ("a", 1), "no") == 'a: [1, "no"]\n'
    assert edit("a:\n  - x\n  - y\n", edits.set_value, ("a", 0), "z") == "a:\n  - z\n  - y\n"
    assert edit("a: {b: 1}\n", edits.set_value, ("a", "c"), [1, "x, y"]) == 'a: {b: 1, c: [1, "x, y"]}\n'


def test_set_value_through_an_alias_edits_the_alias_not_the_anchor():
    assert edit("x: &a 5\ny: *a\n", edits.set_value, ("y",), 6) == "x: &a 5\ny: 6\n"
    assert edit("x: &a 5\ny: *a\n", edits.set_value, ("x",), 6) == "x: &a 6\ny: *a\n"


def test_set_value_keeps_crlf_and_a_missing_final_newline():
    text = "a: 1\r\nb:\r\n  c: 2"
    assert edit(text, edits.set_value, ("b", "d"), 3) == "a: 1\r\nb:\r\n  c: 2\r\n  d: 3"
    assert edit(text, edits.set_value, ("b", "c"), 4) == "a: 1\r\nb:\r\n  c: 4"
    assert edit("a: 1", edits.set_value, ("z",), 1) == "a: 1\nz: 1"


def test_set_value_uses_the_file_indentation():
    text = "a:\n    b: 1\nl:\n- x\n"
    assert edit(text, edits.set_value, ("c",), {"d": [1]}) == text + "c:\n    d:\n    - 1\n"


def test_set_value_json():
    new = edit(DS, edits.set_value, ("zero_optimization", "stage"), 2, name="ds.json")
    assert new == DS.replace('"stage": 3', '"stage": 2')
    new = edit(DS, edits.set_value, ("train_micro_batch_size_per_gpu",), 1, name="ds.json")
    assert new == DS.replace('"train_micro_batch_size_per_gpu": "auto"', '"train_micro_batch_size_per_gpu": 1')
    assert json.loads(new) == with_change(json.loads(DS), ("train_micro_batch_size_per_gpu",), 1)


def test_set_value_json_inserts_with_the_file_indentation_and_order():
    new = edit(DS, edits.set_value, ("zero_optimization", "offload_optimizer"), {"device": "cpu"}, name="ds.json")
    assert new == DS.replace('"overlap_comm": true\n', '"overlap_comm": true,\n        "offload_optimizer": {\n'
                             '            "device": "cpu"\n        }\n')
    new = edit(DS, edits.set_value, ("bf16", "x"), 1, name="ds.json")
    assert '"bf16": {"enabled": "auto", "x": 1},' in new
    new = edit('{\n\t"a": {}\n}', edits.set_value, ("a", "b"), 1, name="ds.json")
    assert new == '{\n\t"a": {\n\t\t"b": 1\n\t}\n}'
    assert edit('{"a": 1}', edits.set_value, ("b", "c"), [1], name="ds.json") == '{"a": 1, "b": {"c": [1]}}'


# ---------------------------------------------------------------------------------------------------- insert_key


def test_insert_key_after_a_sibling():
    new = edit(YAML, edits.insert_key, (), "sequence_len", 4096, "micro_batch_size")
    assert "micro_batch_size: 4 # per GPU\nsequence_len: 4096\nlearning_rate" in new
    assert data(new) == with_change(data(YAML), ("sequence_len",), 4096)


def test_insert_key_block_value_and_existing_key():
    new = edit(YAML, edits.insert_key, ("lora",), "targets", ["q_proj", "v_proj"])
    assert "lora:\n  r: 16\n  targets:\n    - q_proj\n    - v_proj\n  # alpha: 32\n" in new
    assert edit(YAML, edits.insert_key, ("lora",), "r", 8) == YAML.replace("r: 16", "r: 8")


def test_insert_key_into_a_list_item_mapping():
    text = "datasets:\n  - path: a\n    type: alpaca\n"
    assert edit(text, edits.insert_key, ("datasets", 0), "split", "train") == text + "    split: train\n"


def test_insert_key_after_a_block_scalar():
    text = "s: |\n  hello\n  # content\n\n# real\nt: 1\n"
    assert edit(text, edits.insert_key, (), "u", 1, "s") == "s: |\n  hello\n  # content\nu: 1\n\n# real\nt: 1\n"


def test_insert_key_json_after():
    new = edit(DS, edits.insert_key, (), "gradient_clipping", 1.0, "bf16", name="ds.json")
    assert '"bf16": {"enabled": "auto"},\n    "gradient_clipping": 1.0,\n    "train_micro' in new


def test_insert_key_into_something_else_raises():
    doc = load_document(Path("c.yml"), YAML)
    with pytest.raises(ValueError):
        edits.insert_key(doc, ("micro_batch_size",), "x", 1)


# ---------------------------------------------------------------------------------------------------- rename_key


def test_rename_key():
    new = edit(YAML, edits.rename_key, ("micro_batch_size",), "batch_size")
    assert new == YAML.replace("micro_batch_size:", "batch_size:")
    assert edit("'a': 1\n", edits.rename_key, ("a",), "b") == "'b': 1\n"
    assert edit("a: 1\n", edits.rename_key, ("a",), "true") == '"true": 1\n'
    new = edit(DS, edits.rename_key, ("bf16",), "fp16", name="ds.json")
    assert new == DS.replace('"bf16"', '"fp16"')


def test_rename_key_to_a_taken_name_or_a_missing_key_gives_no_edits():
    doc = load_document(Path("c.yml"), YAML)
    assert edits.rename_key(doc, ("micro_batch_size",), "learning_rate") == []
    assert edits.rename_key(doc, ("nope",), "x") == []


# ---------------------------------------------------------------------------------------------------- delete_key


def test_delete_key_removes_its_lines_and_own_comment_only():
    new = edit(YAML, edits.delete_key, ("micro_batch_size",))
    assert new == YAML.replace("micro_batch_size: 4 # per GPU\n", "")
    assert data(new) == with_change(data(YAML), ("micro_batch_size",), delete=True)


def test_delete_key_removes_the_nested_block_with_its_commented_children():
    new = edit(YAML, edits.delete_key, ("lora",))
    assert new == YAML.replace("lora:\n  r: 16\n  # alpha: 32\n", "")
    new = edit(YAML, edits.delete_key, ("plugins",))
    assert new == YAML.replace("plugins:\n  - axolotl.integrations.liger.LigerPlugin  # fused kernels\n", "")
    assert "# after plugins\n" in new


def test_delete_key_flow_and_list_items():
    assert edit(YAML, edits.delete_key, ("special_tokens", "pad_token")).endswith("special_tokens: {eos_token: x}\n")
    assert edit(YAML, edits.delete_key, ("special_tokens", "eos_token")).endswith('{pad_token: "<|end|>"}\n')
    text = "datasets:\n  - path: a\n    type: alpaca\n"
    assert edit(text, edits.delete_key, ("datasets", 0, "path")) == "datasets:\n  - type: alpaca\n"
    assert edit(text, edits.delete_key, ("datasets", 0, "type")) == "datasets:\n  - path: a\n"


def test_delete_key_duplicates_and_last_line_without_newline():
    assert edit("a: 1\nb: 2\na: 3\n", edits.delete_key, ("a",)) == "b: 2\n"
    assert edit("a: 1\r\nb:\r\n  c: 2", edits.delete_key, ("b",)) == "a: 1"
    assert load_document(Path("c.yml"), "a: 1\n").data == {"a": 1}
    assert edits.delete_key(load_document(Path("c.yml"), "a: 1\n"), ("zz",)) == []


def test_delete_key_json_fixes_commas():
    new = edit(DS, edits.delete_key, ("bf16",), name="ds.json")
    assert new == DS.replace('    "bf16": {"enabled": "auto"},\n', "")
    new = edit(DS, edits.delete_key, ("train_micro_batch_size_per_gpu",), name="ds.json")
    assert new == DS.replace(',\n    "train_micro_batch_size_per_gpu": "auto"', "")
    new = edit(DS, edits.delete_key, ("bf16", "enabled"), name="ds.json")
    assert '"bf16": {},' in new
    assert edit('{"a": 1, "b": 2, "c": 3}', edits.delete_key, ("b",), name="d.json") == '{"a": 1, "c": 3}'
    assert json.loads(new) == with_change(json.loads(DS), ("bf16", "enabled"), delete=True)


# ---------------------------------------------------------------------------------------------------- append_item


def test_append_item_block_list():
    new = edit(YAML, edits.append_item, ("plugins",), "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin")
    assert "  - axolotl.integrations.liger.LigerPlugin  # fused kernels\n" \
           "  - axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin\n# after plugins\n" in new
    assert data(new)["plugins"][-1].endswith("CutCrossEntropyPlugin")


def test_append_item_creates_the_list_and_fills_a_null_one():
    assert edit("a: 1\n", edits.append_item, ("plugins",), "x.Y") == "a: 1\nplugins:\n  - x.Y\n"
    assert edit("plugins:\na: 1\n", edits.append_item, ("plugins",), "x.Y") == "plugins:\n  - x.Y\na: 1\n"


def test_append_item_flow_json_and_mappings():
    assert edit("a: [x]\n", edits.append_item, ("a",), "yes") == 'a: [x, "yes"]\n'
    assert edit("a: []\n", edits.append_item, ("a",), 1) == "a: [1]\n"
    text = "datasets:\n- path: a\n  type: t\n"
    assert edit(text, edits.append_item, ("datasets",), {"path": "b", "type": "u"}) == text + "- path: b\n  type: u\n"
    assert edit('{"a": [1, 2]}', edits.append_item, ("a",), 3, name="d.json") == '{"a": [1, 2, 3]}'
    assert edit('{\n  "a": [\n    1\n  ]\n}\n', edits.append_item, ("a",), "x", name="d.json") == \
        '{\n  "a": [\n    1,\n    "x"\n  ]\n}\n'


def test_append_item_to_a_scalar_raises():
    with pytest.raises(ValueError):
        edits.append_item(load_document(Path("c.yml"), "a: 1\n"), ("a",), 2)


# ---------------------------------------------------------------------------------------------------- rendering


@pytest.mark.parametrize("value", ["yes", "No", "~", "1e-5", "2e-4", "0o17", ".5", "1_000", "a: b", "a #b", "-x",
                                   "[x]", "{x}", "*a", "&a", "!x", "%x", "@x", "`x", "'q'", '"q"', "x, y", " pad",
                                   "multi\nline", "é", "2024-01-01", "=", "<<", "?", "null", True, None, 0, -1.5,
                                   1e300, float("inf")])
def test_rendered_scalars_load_back_as_the_same_value(value):
    for context, probe in (("value", "k: {}\n"), ("flow", "[{}]\n")):
        text = edits.yaml_scalar(value, context)
        loaded = yaml.safe_load(probe.format(text))
        assert (loaded["k"] if context == "value" else loaded[0]) == value, text
