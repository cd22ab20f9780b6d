"""Parsed data files kept between runs (axlint.datacache): the rule packs, the bundled schemas and the catalog."""
from __future__ import annotations

import json
import marshal

from axlint import datacache
from axlint.architectures.resolve import CATALOG_PATH
from axlint.schemas.validator import SCHEMA_DIR


def test_an_entry_is_written_once_and_an_edited_file_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "a.json"
    source.write_text('{"a": [1, 2.5, null, true, "\\u00e9"]}', encoding="utf-8")
    parsed = []

    def parse(raw: bytes):
        parsed.append(raw)
        return json.loads(raw)

    assert datacache.load(source, "a", parse) == {"a": [1, 2.5, None, True, "é"]}
    assert datacache.load(source, "a", parse) == {"a": [1, 2.5, None, True, "é"]} and len(parsed) == 1
    entry = datacache.cache_file("a")
    assert entry is not None and entry.parent == tmp_path / "cache" / "data"
    assert not list(entry.parent.glob("*.tmp"))
    source.write_text('{"a": 2}', encoding="utf-8")
    assert datacache.load(source, "a", parse) == {"a": 2} and len(parsed) == 2


def test_a_corrupt_entry_or_an_unusable_folder_is_skipped(tmp_path, monkeypatch):
    source = tmp_path / "a.json"
    source.write_text('{"a": 1}', encoding="utf-8")
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "cache"))
    datacache.load_json(source, "a")
    entry = datacache.cache_file("a")
    for junk in (b"", b"\xff\x00", marshal.dumps(7), marshal.dumps(("x", "y", "z"))):
        entry.write_bytes(junk)
        assert datacache.load_json(source, "a") == {"a": 1}
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "file"))
    assert datacache.load_json(source, "a") == {"a": 1}


def test_data_that_marshal_does_not_give_back_equal_is_not_written(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "a.json"
    source.write_text('{"a": NaN}', encoding="utf-8")
    datacache.load_json(source, "a")
    assert not datacache.cache_file("a").exists()


def test_the_bundled_json_comes_back_equal_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path / "cache"))
    for path in (CATALOG_PATH, *sorted(SCHEMA_DIR.glob("*/*.schema.json"))):
        name = f"{path.parent.name}-{path.stem}"
        plain = json.dumps(json.loads(path.read_text(encoding="utf-8")))  # the keys' order too
        assert json.dumps(datacache.load_json(path, name)) == plain
        assert datacache.cache_file(name).exists()
        assert json.dumps(datacache.load_json(path, name)) == plain
