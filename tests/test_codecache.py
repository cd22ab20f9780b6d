"""The console script's cache of the code `dataclasses` compiles (axlint.codecache)."""
from __future__ import annotations

import dataclasses
import marshal
import subprocess
import sys
from pathlib import Path

from axlint import codecache
from axlint.codecache import CodeCache

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "fixtures" / "axolotl" / "examples" / "llama-3" / "lora-1b.yml"


def test_each_source_text_is_compiled_once():
    cache = CodeCache(None)
    for _ in range(3):
        ns: dict = {}
        cache.exec("def f(x):\n    return x + 1\n", {}, ns)
        assert ns["f"](1) == 2
    assert cache.added == 1 and len(cache.codes) == 1


def test_dataclasses_built_through_the_cache_behave_as_without_it(monkeypatch):
    def build():
        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int = 0
            tags: tuple = dataclasses.field(default_factory=tuple)
        return Point

    plain = build()
    cache = CodeCache(None)
    monkeypatch.setattr(dataclasses, "exec", cache.exec, raising=False)
    cached, again = build(), build()
    assert cache.added > 0 and len(cache.codes) == cache.added  # the second class compiled nothing new
    for cls in (plain, cached, again):
        p = cls(1)
        assert (p, repr(p).rsplit(".", 1)[-1], hash(p) == hash(cls(1, 0))) == (cls(1, 0, ()),
                                                                             "Point(x=1, y=0, tags=())", True)
        try:
            p.x = 2  # type: ignore[misc]
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError("frozen")


def test_the_cache_file_round_trips_and_a_bad_one_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("AXLINT_CACHE_DIR", str(tmp_path))
    path = codecache.cache_file()
    assert path is not None and path.parent == tmp_path
    first = CodeCache(path)
    first.exec("def g():\n    return 7\n", {}, {})
    first.save()
    second = CodeCache(path)
    assert list(second.codes) == ["def g():\n    return 7\n"]
    ns: dict = {}
    second.exec("def g():\n    return 7\n", {}, ns)
    assert ns["g"]() == 7 and second.added == 0
    second.save()  # nothing new: the file is left as it is
    assert marshal.loads(path.read_bytes()).keys() == {"def g():\n    return 7\n"}
    for junk in (b"not marshal", marshal.dumps([1, 2]), marshal.dumps({"x": 1})):
        path.write_bytes(junk)
        assert CodeCache(path).codes == {}


def test_a_run_that_writes_keeps_unused_entries_up_to_as_many_as_it_used_and_drops_them_past_that(tmp_path):
    path = tmp_path / "codes.marshal"
    sources = [f"v{i} = {i}\n" for i in range(6)]
    first = CodeCache(path)
    for source in sources[:4]:
        first.exec(source, {}, {})
    first.save()
    second = CodeCache(path)  # uses 2 of the 4 and adds 1: 2 unused <= 3 used, all kept
    for source in (sources[0], sources[1], sources[4]):
        second.exec(source, {}, {})
    second.save()
    assert set(marshal.loads(path.read_bytes())) == set(sources[:5])
    third = CodeCache(path)  # uses 1 and adds 1: 4 unused > 2 used, the unused are dropped
    for source in (sources[0], sources[5]):
        third.exec(source, {}, {})
    third.save()
    assert set(marshal.loads(path.read_bytes())) == {sources[0], sources[5]}
    fourth = CodeCache(path)  # adds nothing: nothing is written, however little it used
    fourth.save()
    assert set(marshal.loads(path.read_bytes())) == {sources[0], sources[5]}


def test_nothing_is_written_when_bytecode_is_not(tmp_path):
    cache = CodeCache(tmp_path / "codes.marshal", write=False)
    cache.exec("x = 1\n", {}, {})
    cache.save()
    assert not (tmp_path / "codes.marshal").exists()


def test_an_unwritable_cache_folder_is_skipped(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    cache = CodeCache(blocker / "sub" / "codes.marshal")  # its parent cannot be created
    cache.exec("x = 1\n", {}, {})
    cache.save()
    assert not (blocker / "sub").exists()


def test_the_console_script_writes_the_cache_and_gives_the_same_output(tmp_path):
    env = {"AXLINT_CACHE_DIR": str(tmp_path), "PATH": "", "HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-m", "axlint", "check", str(CONFIG), "--hardware", "1xH100"],
                           capture_output=True, text=True, env=env, cwd=ROOT) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and runs[0].returncode == runs[1].returncode
    files = list(tmp_path.glob("dataclass-code-*.marshal"))
    assert len(files) == 1 and len(marshal.loads(files[0].read_bytes())) > 100
