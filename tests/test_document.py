"""Documents: values exactly as `yaml.safe_load` / `json.loads` give them, and exact spans for keys and values."""
from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
import yaml

from axlint.diagnostics import Span
from axlint.document import (MAX_FILE_BYTES, MAX_NESTING, DocumentError, decode_bytes, duplicate_keys, iter_pairs,
                             load_document)
from tests.corpus import CORPUS, ROOT



def _real_files(pattern: str) -> list[Path]:
    found = list(ROOT.glob(f"fixtures/{pattern}"))
    found += list(CORPUS.glob(f"examples/**/{pattern}")) + list(CORPUS.glob(f"deepspeed_configs/{pattern}"))
    return sorted(found)


YAML_FILES = _real_files("*.y*ml")
JSON_FILES = _real_files("*.json")

TEXT = """\
base_model: meta-llama/Llama-3.1-8B  # comment
adapter: 'lora'
datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
lora_target_modules: [q_proj, "v_proj"]
"""


def doc_of(text: str, name: str = "c.yml"):
    return load_document(Path(name), text)


def covered(text: str, span: Span) -> str:
    return text[span.start:span.end]


# ---------------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.name)
def test_yaml_data_equals_safe_load(path):
    text = path.read_text(encoding="utf-8")
    assert load_document(path).data == yaml.safe_load(text)


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: p.name)
def test_json_data_equals_json_loads(path):
    doc = load_document(path)
    assert doc.format == "json"
    assert doc.data == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("written", "value"), [
    ("yes", True), ("No", False), ("on", True), ("off", False), ("~", None), ("", None), ("null", None),
    ("2e-4", "2e-4"), ("2.0e-4", 2.0e-4), ("0x1F", 31), ("017", 15), ("1_000", 1000), ("1:30", 90),
    (".inf", float("inf")), ("2024-01-02", datetime.date(2024, 1, 2)), ("'yes'", "yes"), ('"2e-4"', "2e-4"),
])
def test_yaml_1_1_scalars_as_axolotl_reads_them(written, value):
    doc = doc_of(f"v: {written}\n")
    assert doc.data == {"v": value} == yaml.safe_load(f"v: {written}\n")
    assert doc.node(("v",)).value == value


def test_a_scalar_text_resolves_by_its_style_each_time_it_is_written():
    from axlint.document import _scalar_tag

    text = "a: yes\nb: 'yes'\nc: yes\nd: \"12\"\ne: 12\nf: [12, '12', yes]\n"
    for _ in range(2):  # the second document finds every tag already resolved
        before = _scalar_tag.cache_info().hits
        assert doc_of(text).data == yaml.safe_load(text) == {
            "a": True, "b": "yes", "c": True, "d": "12", "e": 12, "f": [12, "12", True]}
    assert _scalar_tag.cache_info().hits - before >= 12


def test_duplicate_keys_are_kept_in_the_tree_and_the_last_one_wins():
    doc = doc_of("a: 1\nb: 2\na: 3\n")
    assert [p.key.value for p in doc.root.pairs] == ["a", "b", "a"]
    assert doc.data == {"a": 3, "b": 2} and doc.node(("a",)).value == 3
    assert doc.key_node(("a",)).span.line == 3
    assert [(path, first.key.span.line, again.key.span.line) for path, first, again in duplicate_keys(doc.root)] == [
        (("a",), 1, 3)]


def test_json_duplicate_keys_are_kept_and_the_last_one_wins():
    doc = doc_of('{"zero_optimization": {"stage": 2, "stage": 3}}', "ds.json")
    assert doc.data == {"zero_optimization": {"stage": 3}}
    assert [path for path, *_ in duplicate_keys(doc.root)] == [("zero_optimization", "stage")]


def test_duplicate_keys_inside_list_items():
    doc = doc_of("datasets:\n  - path: a\n    path: b\n  - path: c\n")
    assert [path for path, *_ in duplicate_keys(doc.root)] == [("datasets", 0, "path")]


def test_merge_keys_resolve_like_safe_load():
    text = "base: &b {lr: 1, mbs: 2}\nrun:\n  <<: *b\n  mbs: 4\n"
    doc = doc_of(text)
    assert doc.data == yaml.safe_load(text)
    assert [p.key.value for p in doc.node(("run",)).pairs] == ["<<", "mbs"]
    assert list(duplicate_keys(doc.root)) == []


def test_scalar_styles_are_recorded():
    doc = doc_of("a: plain\nb: 'single'\nc: \"double\"\nd: |\n  lit\ne: >\n  folded\n")
    assert [doc.node((k,)).style for k in "abcde"] == ["", "'", '"', "|", ">"]


# ---------------------------------------------------------------------------------------------------- spans


def test_yaml_key_and_value_spans():
    doc = doc_of(TEXT)
    key = doc.span(("adapter",))
    assert (key.line, key.col, key.end_line, key.end_col) == (2, 1, 2, 8)
    assert covered(TEXT, key) == "adapter"
    value = doc.span(("adapter",), "value")
    assert (value.line, value.col, value.end_col) == (2, 10, 16)
    assert covered(TEXT, value) == "'lora'"
    assert covered(TEXT, doc.span(("datasets", 0, "type"), "value")) == "alpaca"
    assert doc.span(("datasets", 0, "type")).line == 5
    assert covered(TEXT, doc.span(("lora_target_modules",), "value")) == '[q_proj, "v_proj"]'
    assert covered(TEXT, doc.node(("lora_target_modules", 1)).span) == '"v_proj"'


def test_value_span_excludes_the_trailing_comment():
    doc = doc_of(TEXT)
    assert covered(TEXT, doc.span(("base_model",), "value")) == "meta-llama/Llama-3.1-8B"


def test_span_falls_back_to_the_closest_written_ancestor_then_line_1():
    doc = doc_of(TEXT)
    assert doc.span(("datasets", 0, "split")) == doc.node(("datasets", 0)).span
    assert doc.span(("datasets", 5, "path")) == doc.span(("datasets",))
    assert doc.span(("missing", "deeper")) == Span.file_start()
    assert doc.node(("missing",)) is None and doc.key_node(("missing",)) is None


def test_negative_and_out_of_range_sequence_indexes():
    doc = doc_of(TEXT)
    assert doc.node(("lora_target_modules", -1)).value == "v_proj"
    assert doc.node(("lora_target_modules", 2)) is None
    assert doc.node(("adapter", 0)) is None


def test_json_spans():
    text = '{\n  "zero_optimization": {\n    "stage": 3,\n    "offload": {"device": "cpu"}\n  },\n  "bf16": true\n}\n'
    doc = doc_of(text, "ds.json")
    stage = doc.span(("zero_optimization", "stage"))
    assert (stage.line, stage.col, stage.end_line, stage.end_col) == (3, 5, 3, 12)
    assert covered(text, stage) == '"stage"'
    assert covered(text, doc.span(("zero_optimization", "stage"), "value")) == "3"
    assert covered(text, doc.span(("zero_optimization", "offload"), "value")) == '{"device": "cpu"}'
    assert covered(text, doc.span(("bf16",), "value")) == "true"
    block = doc.span(("zero_optimization",), "value")
    assert (block.line, block.end_line) == (2, 5)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_offsets_and_columns_count_characters(newline):
    text = newline.join(["note: é✓ 👍", "base_model: x", "adapter: lora", ""])
    doc = doc_of(text)
    span = doc.span(("adapter",), "value")
    assert (span.line, span.col) == (3, 10)
    assert covered(text, span) == "lora"
    assert doc.line_text(3) == "adapter: lora"


def test_json_is_detected_by_suffix_or_by_a_leading_brace():
    assert doc_of('{"a": 1}', "ds.json").format == "json"
    assert doc_of('  {"a": 1}', "stdin").format == "json"
    assert doc_of("{a: 1}", "c.yml").format == "yaml"


def test_json_escapes_in_keys_and_values():
    doc = doc_of('{"\\u0041b": "tab\\there", "n": -1.5e2}', "ds.json")
    assert doc.data == {"Ab": "tab\there", "n": -150.0}


def test_iter_pairs_walks_depth_first_in_file_order():
    doc = doc_of(TEXT)
    assert [path for path, _ in iter_pairs(doc.root)] == [
        ("base_model",), ("adapter",), ("datasets",), ("datasets", 0, "path"), ("datasets", 0, "type"),
        ("lora_target_modules",)]


# ---------------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty file"),
    ("# only\n", "empty document"),
    ("- a\n", "top level is a list"),
    ("3\n", "top level is a scalar value"),
    ("a: [1\n", "invalid YAML"),
    ("a: !!python/object/apply:os.system [ls]\n", "unsafe or unknown tag"),
    ("a: &x [*x]\n", "recursive YAML alias"),
    ("a: " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "\n", "nested deeper than"),
])
def test_yaml_refusals(text, message):
    with pytest.raises(DocumentError, match=message):
        doc_of(text)


def test_nesting_at_the_limit_is_accepted():
    depth = MAX_NESTING - 1
    assert doc_of("a: " + "[" * depth + "]" * depth + "\n").data["a"] is not None


@pytest.mark.parametrize(("text", "line", "col"), [
    ('{"a": 1,}', 1, 9), ('{"a": }', 1, 7), ("[1, 2]", 1, 1), ('{"a": 1} x', 1, 10), ('{\n  "a" 1\n}', 2, 7),
    ('{"a": NaN}', 1, 7), ('{"a": "\x01"}', 1, 7),
])
def test_json_refusals_carry_the_location(text, line, col):
    with pytest.raises(DocumentError) as info:
        doc_of(text, "ds.json")
    assert (info.value.span.line, info.value.span.col) == (line, col)


def test_decode_bytes():
    assert decode_bytes(b"\xef\xbb\xbfa: 1\n") == "a: 1\n"
    with pytest.raises(DocumentError, match="binary data"):
        decode_bytes(b"a: 1\x00\n")
    with pytest.raises(DocumentError, match="not UTF-8") as info:
        decode_bytes(b"a: 1\nb: \xc3(\n")
    assert (info.value.span.line, info.value.span.col) == (2, 4)
    with pytest.raises(DocumentError, match="invalid byte 0xc3") as info:  # after a byte order mark as well
        decode_bytes(b"\xef\xbb\xbfa: 1\nb: \xc3(\n")
    assert (info.value.span.line, info.value.span.col) == (2, 4)
    with pytest.raises(DocumentError, match="invalid byte 0xff") as info:
        decode_bytes(b"\xef\xbb\xbf\xff: 1\n")
    assert (info.value.span.line, info.value.span.col) == (1, 1)
    with pytest.raises(DocumentError, match="MiB"):
        decode_bytes(b"a" * (MAX_FILE_BYTES + 1))
