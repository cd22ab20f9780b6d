"""benchmarks/memory/published.yaml is well-formed, every row estimates, and published.md's summary is current.

A change to the estimator that moves the accuracy figures fails the last test until
`python benchmarks/memory/published.py` is re-run and the new published.md committed.
"""
from __future__ import annotations

import re

import pytest

from axlint.architectures import resolve_architecture
from benchmarks.memory import published as bench

ROWS = bench.load_rows()
REQUIRED = ("id", "source", "quote", "model", "hardware", "metric", "measured_gib", "outcome", "set")
URL = re.compile(r"^https?://\S+")


def test_ids_unique_and_both_sets_present():
    ids = [r["id"] for r in ROWS]
    assert len(ids) == len(set(ids))
    assert {r["set"] for r in ROWS} == {"calibration", "check"}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.get("id", "?"))
def test_row_is_well_formed(row):
    missing = [k for k in REQUIRED if k not in row]
    assert not missing, missing
    assert URL.match(row["source"]), row["source"]
    assert row["metric"] in ("allocated", "reserved", "device", "outcome")
    assert row["outcome"] in ("ran", "oom")
    assert row["set"] in ("calibration", "check")
    assert isinstance(row["quote"], str) and 0 < len(row["quote"]) <= 120
    assert ("config" in row) != ("config_file" in row), "exactly one of config / config_file"
    if row["metric"] == "outcome":
        assert row["measured_gib"] is None
    else:
        assert isinstance(row["measured_gib"], (int, float)) and row["measured_gib"] > 0
        assert row["outcome"] == "ran", "a measured figure comes from a run that ran"
    assert isinstance(row.get("assumed", []), list)
    assert row.get("stack") in (None, "transformers<4.46")


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_model_resolves_and_estimate_runs(row):
    assert resolve_architecture(row["model"]) is not None, row["model"]
    e = bench.estimate_row(row)
    assert e.peak_device > 0 and e.peak_reserved >= e.peak_allocated > 0


def test_published_md_summary_is_current():
    fresh = "\n".join(bench.summary_lines(bench.summary(bench.evaluate()))).strip()
    written = bench.written_summary(bench.REPORT.read_text(encoding="utf-8"))
    assert written == fresh, "re-run `python benchmarks/memory/published.py` and commit published.md"
