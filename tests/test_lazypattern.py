"""Regular expressions compiled on first use (axlint.lazypattern): axlint's own, and PyYAML's that the console
script leaves uncompiled."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from axlint.lazypattern import YAML_NON_PRINTABLE, YAML_TIMESTAMP, LazyPattern

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ["plain: text", "bell \x07 here", "nul \x00", "é ✓ 𝔘 \ufeff", "\ud800 lone surrogate", "tab\tnew\nline\r", "\x85\x9f"]


def test_a_lazy_pattern_matches_as_the_compiled_one_and_compiles_once():
    lazy, plain = LazyPattern(YAML_NON_PRINTABLE), re.compile(YAML_NON_PRINTABLE)
    assert lazy.pattern == YAML_NON_PRINTABLE and lazy._compiled is None
    for text in SAMPLES:
        found, expected = lazy.search(text), plain.search(text)
        assert (found and (found.group(), found.span())) == (expected and (expected.group(), expected.span()))
        assert lazy.findall(text) == plain.findall(text)
    compiled = lazy._compiled
    lazy.match("x")
    assert compiled is not None and lazy._compiled is compiled


def test_a_lazy_pattern_with_flags_matches_as_the_compiled_one():
    pattern = r"^ *([a-z_]+):"
    lazy, plain = LazyPattern(pattern, re.MULTILINE | re.IGNORECASE), re.compile(pattern, re.MULTILINE | re.IGNORECASE)
    text = "Base_Model: x\n  lr: 1\n- no: 2\n"
    assert lazy.findall(text) == plain.findall(text) == ["Base_Model", "lr"]
    assert lazy.flags == plain.flags and lazy.groups == plain.groups == 1


def test_the_timestamp_stand_in_is_pyyamls_pattern_and_loads_timestamps_as_before():
    import yaml

    upstream = yaml.constructor.SafeConstructor.timestamp_regexp
    assert (upstream.pattern, upstream.flags & ~re.UNICODE) == YAML_TIMESTAMP
    probe = """
import yaml
kind = type(yaml.constructor.SafeConstructor.timestamp_regexp).__name__
print(kind, yaml.load("a: 2024-05-01 12:30:00.5+02:00\\nb: 2024-05-01\\n", Loader=yaml.SafeLoader))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    setup = "from axlint import lazypattern; lazypattern.defer(*lazypattern.YAML_TIMESTAMP)\n"
    lazy = subprocess.run([sys.executable, "-c", setup + probe], capture_output=True, text=True, env=env, check=True)
    plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert lazy.stdout.split(" ", 1)[0] == "LazyPattern" and plain.stdout.split(" ", 1)[0] == "Pattern"
    assert lazy.stdout.split(" ", 1)[1] == plain.stdout.split(" ", 1)[1] and "datetime.date(2024, 5, 1)" in lazy.stdout


def test_yaml_gets_the_stand_in_and_its_pure_python_reader_still_refuses_what_it_refused():
    probe = """
import yaml
before = type(yaml.reader.Reader.NON_PRINTABLE).__name__
try:
    yaml.load("a: b\\x07\\n", Loader=yaml.SafeLoader)
except yaml.YAMLError as exc:
    print(before, type(yaml.reader.Reader.NON_PRINTABLE._compiled).__name__, str(exc).replace("\\n", " "))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    setup = "from axlint import lazypattern; lazypattern.defer(lazypattern.YAML_NON_PRINTABLE)\n"
    lazy = subprocess.run([sys.executable, "-c", setup + probe], capture_output=True, text=True, env=env, check=True)
    plain = subprocess.run([sys.executable, "-c", probe.replace("._compiled", "")], capture_output=True, text=True,
                           env=env, check=True)
    assert lazy.stdout.split(" ", 2)[:2] == ["LazyPattern", "Pattern"]
    assert plain.stdout.split(" ", 2)[:2] == ["Pattern", "Pattern"]
    assert lazy.stdout.split(" ", 2)[2] == plain.stdout.split(" ", 2)[2] and "special characters" in lazy.stdout


def test_the_console_script_leaves_the_unused_patterns_uncompiled_through_a_check():
    probe = """
import sys
sys.argv = ["axlint", "check", "-q", "fixtures/axolotl/examples/llama-3/lora-1b.yml"]
from axlint import console

def stay(status):  # the console script ends its process at once; this probe looks around first
    raise SystemExit(status)

console.exit_now = stay
try:
    console.main()
except SystemExit:
    pass
import yaml
print("STANDIN", type(yaml.reader.Reader.NON_PRINTABLE).__name__, yaml.reader.Reader.NON_PRINTABLE._compiled)
print("STANDIN", type(yaml.constructor.SafeConstructor.timestamp_regexp).__name__,
      yaml.constructor.SafeConstructor.timestamp_regexp._compiled)
from axlint import document, hardware, kind
print("STANDIN", *(type(p).__name__ for p in (document._WS, hardware._SPEC, kind._KEY_LINE)),
      *(p._compiled for p in (document._WS, hardware._SPEC, kind._KEY_LINE)))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT)
    assert [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("STANDIN ")] == [
        ["LazyPattern", "None"], ["LazyPattern", "None"], ["LazyPattern"] * 3 + ["None"] * 3], done.stderr
