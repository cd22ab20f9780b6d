"""Every file of the vendored Axolotl corpus (fixtures/axolotl: 250 training YAMLs, 2 cloud YAMLs, 8 DeepSpeed
JSONs), checked with every rule: once through the library and once through one CLI process, from the corpus root
as Axolotl itself would be run. No crash, no internal error, no unreadable file, and both paths agree."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from axlint.packs import load_rules
from axlint.lint import LintOptions, lint_paths

from tests.corpus import CORPUS, ROOT, corpus_files

FILES = corpus_files()


def test_the_corpus_is_all_there():
    assert sum(p.suffix in (".yml", ".yaml") for p in FILES) == 252
    assert sum(p.suffix == ".json" for p in FILES) == 8
    assert {p.name for p in FILES if p.parent.name == "cloud"} == {"baseten.yaml", "modal.yaml"}


@pytest.fixture(scope="module")
def library_findings() -> set[tuple[str, int, int, str]]:
    cwd = Path.cwd()
    os.chdir(CORPUS)
    try:
        diags = lint_paths(FILES, LintOptions(load_rules())).diagnostics
    finally:
        os.chdir(cwd)
    lines = {str(p): (CORPUS / p).read_text(encoding="utf-8").count("\n") + 1 for p in FILES}
    found = set()
    for d in diags:
        path = str((CORPUS / d.path).resolve().relative_to(CORPUS.resolve()))  # a referenced file may be absolute
        assert d.code != "AX999", f"internal error: {path}: {d.message}"
        assert d.code != "AX000", f"a real config was refused: {path}:{d.span.line}: {d.message}"
        assert path in lines, f"finding outside the corpus: {path}"
        assert 1 <= d.span.line <= d.span.end_line <= lines[path] and d.span.col >= 1, d
        found.add((path, d.span.line, d.span.col, d.code, d.message))
    assert len(found) == len(diags), "the same finding is reported twice"
    return found


def test_library_checks_the_whole_corpus(library_findings):
    assert library_findings, "the corpus has known problems (e.g. a typo'd key); finding none means nothing ran"


def test_one_cli_process_checks_the_whole_corpus(library_findings):
    done = subprocess.run([sys.executable, "-m", "axlint", "check", "--output-format", "json", *map(str, FILES)],
                          cwd=CORPUS, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)
    assert not [f for f in findings if f["code"] == "AX999"]
    got = {(f["path"], f["location"]["line"], f["location"]["column"], f["code"], f["message"]) for f in findings}
    assert got == library_findings
    assert done.returncode == (1 if any(f["severity"] != "info" for f in findings) else 0)


def test_a_shared_deepspeed_file_names_the_config_of_each_differing_finding(library_findings):
    """Mixtral 8x22B and the ALST Llama run both use zero3_bf16_cpuoffload_all.json; PERF003 (offload not needed)
    holds for both with different figures, so each says which config it is about."""
    configs = sorted(message.rsplit(" (for ", 1)[1] for path, _, _, code, message in library_findings
                     if path == "deepspeed_configs/zero3_bf16_cpuoffload_all.json" and code == "PERF003")
    assert configs == ["examples/alst/llama3-8b-deepspeed-alst.yaml)", "examples/mistral/mixtral/mixtral_22.yml)"]
