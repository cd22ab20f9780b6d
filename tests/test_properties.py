"""Property test: real configs, mutated at random, never make the library or the CLI raise.

Seeds are every file of the vendored Axolotl corpus (fixtures/axolotl). A mutation deletes, duplicates or swaps lines, inserts random
characters or bytes, re-indents a line, truncates the text or replaces a value with a random YAML scalar. Every
problem must come out as a Diagnostic (no exception, no AX999 internal error) and the CLI must exit 0 or 1.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axlint.cli import cli
from axlint.diagnostics import Diagnostic
from axlint.packs import load_rules
from axlint.lint import LintOptions, lint_text
from axlint.report import RENDERERS
from tests.corpus import CORPUS, corpus_files

SEEDS = [CORPUS / p for p in corpus_files()]
RULES = load_rules()
OPTIONS = LintOptions(RULES)
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SCALARS = st.one_of(
    st.sampled_from(["yes", "no", "on", "off", "~", "null", "", "1e3", "2e-4", "0x1F", "0o17", "1_000", ".inf",
                     "-.inf", ".nan", "2024-01-01", "'quoted'", '"dq\\n"', "[]", "{}", "[a, b", "{a: 1", "&a x", "*a",
                     "*missing", "!!str 1", "!!int x", "!!python/object/apply:os.system [true]", "|", ">-", "- x",
                     ": x", "auto", "-1", "0", "99999999999999999999999", "@x", "`x`", "%YAML 1.1", "? x"]),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)
NOISE = st.one_of(st.binary(max_size=6), st.text(alphabet=":-[]{}#&*!|>'\"%@`,? \t\r\n\\", max_size=6)
                  .map(str.encode), st.text(max_size=4).map(str.encode))
INDENTS = st.sampled_from([b"", b" ", b"  ", b"   ", b"    ", b"\t", b"        "])

Lines = list[bytes]
Mutation = Callable[[Callable, Lines], Lines]


def _index(draw: Callable, lines: Lines) -> int:
    return draw(st.integers(0, len(lines) - 1))


def delete_line(draw: Callable, lines: Lines) -> Lines:
    i = _index(draw, lines)
    return lines[:i] + lines[i + 1:]


def duplicate_line(draw: Callable, lines: Lines) -> Lines:
    i = _index(draw, lines)
    return lines[:i + 1] + lines[i:]


def swap_lines(draw: Callable, lines: Lines) -> Lines:
    i, j = _index(draw, lines), _index(draw, lines)
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return out


def insert_noise(draw: Callable, lines: Lines) -> Lines:
    i = _index(draw, lines)
    at = draw(st.integers(0, len(lines[i])))
    return lines[:i] + [lines[i][:at] + draw(NOISE) + lines[i][at:]] + lines[i + 1:]


def reindent(draw: Callable, lines: Lines) -> Lines:
    i = _index(draw, lines)
    return lines[:i] + [draw(INDENTS) + lines[i].lstrip()] + lines[i + 1:]


def truncate(draw: Callable, lines: Lines) -> Lines:
    data = b"\n".join(lines)
    return data[:draw(st.integers(0, len(data)))].split(b"\n")


def replace_value(draw: Callable, lines: Lines) -> Lines:
    keyed = [i for i, line in enumerate(lines) if b": " in line or line.rstrip().endswith(b":")]
    if not keyed:
        return lines
    i = draw(st.sampled_from(keyed))
    key = lines[i].split(b":", 1)[0]
    return lines[:i] + [key + b": " + draw(SCALARS).encode("utf-8", "surrogatepass")] + lines[i + 1:]


MUTATIONS: list[Mutation] = [delete_line, duplicate_line, swap_lines, insert_noise, reindent, truncate, replace_value]


@st.composite
def mutated_configs(draw: Callable) -> tuple[Path, bytes]:
    """A seed config and its text after one to four random mutations."""
    seed = draw(st.sampled_from(SEEDS))
    lines = seed.read_bytes().split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        if lines:
            lines = draw(st.sampled_from(MUTATIONS))(draw, lines)
    return seed, b"\n".join(lines)


def test_there_are_seeds_of_both_kinds():
    assert {p.suffix for p in SEEDS} >= {".yml", ".yaml", ".json"}


@PROPERTY_SETTINGS
@given(case=mutated_configs())
def test_library_turns_every_problem_into_a_diagnostic(case):
    seed, data = case
    result = lint_text(seed, data, OPTIONS)
    assert all(isinstance(d, Diagnostic) for d in result.diagnostics)
    internal = [d.message for d in result.diagnostics if d.code == "AX999"]
    assert not internal, internal
    for d in result.diagnostics:
        assert 1 <= d.span.line <= d.span.end_line and d.span.col >= 1, d
    for render in RENDERERS.values():
        assert isinstance(render(result.diagnostics, result.sources, RULES), str)


@PROPERTY_SETTINGS
@given(case=mutated_configs())
def test_cli_exits_0_or_1_without_a_traceback(case):
    seed, data = case
    result = CliRunner().invoke(cli, ["check", "-", "--stdin-filename", str(seed), "--output-format", "concise"],
                                input=data)
    assert result.exit_code in (0, 1), result.output
    assert isinstance(result.exception, (SystemExit, type(None))), repr(result.exception)
    assert "Traceback" not in result.output
    assert "AX999" not in result.output
