"""The quick run of the seeded fuzz campaign (tests/fuzz): a few hundred hostile variants of the corpus, each
checked, rendered in every format, fixed with `--unsafe-fixes` on a copy and fixed again. The long run is
`python tools/fuzz_campaign.py --cases 10000`; both must find nothing."""
from __future__ import annotations

from dataclasses import replace

from tests.fuzz.campaign import run_cases
from tests.fuzz.cases import make_case
from tests.fuzz.judge import changed_keys

SEED = 2026
QUICK = 300


def test_cases_are_reproducible():
    a, b = make_case(SEED, 7), make_case(SEED, 7)
    assert (a.files, a.entry, a.mutations) == (b.files, b.entry, b.mutations)
    assert make_case(SEED, 8).files != a.files


def test_the_judge_sees_a_changed_key_inside_a_list():
    before = {"datasets": [{"path": "a", "type": "x"}], "lr": 1}
    after = {"datasets": [{"path": "a", "type": "y"}], "lr": 1}
    assert changed_keys(before, after) == {("datasets", 0, "type")}
    assert changed_keys({"x": float("nan")}, {"x": float("nan")}) == set()


def test_quick_campaign_finds_nothing():
    tally = run_cases(SEED, range(QUICK), cli_every=25)
    assert tally.cases == QUICK
    report = [f"[{kind}] {verdict.case.label}: {detail}" for verdict in tally.failed for kind, detail in verdict.failures]
    assert not report, "\n".join(report[:20])


def test_the_judge_catches_a_crashing_check_and_the_reducer_shrinks_the_case(monkeypatch):
    """The campaign can fail: a check that raises on configs with `sequence_len` is an internal error, and the
    reduced case keeps the line that triggers it and at most one more (a lone `sequence_len:` line is no longer
    taken for an Axolotl config, so a second key of one has to stay)."""
    from axlint import checks
    from tests.fuzz.campaign import reduce_case

    checks.load_builtin_checks()
    real = checks.CHECKS["duplicate_keys"]

    def crash_on_sequence_len(run, rule):  # noqa: ANN001, ANN202 - a check's signature
        if "sequence_len" in run.raw:
            raise TypeError("'bool' object is not iterable")
        return real.run(run, rule)

    monkeypatch.setitem(checks.CHECKS, "duplicate_keys", replace(real, run=crash_on_sequence_len))
    case = make_case(SEED, 0)
    assert b"sequence_len" in case.files[case.entry]
    tally = run_cases(SEED, [0])
    assert "internal" in tally.kinds
    small = reduce_case(case, "internal")
    keys = [line.split(b":")[0] for line in small.files[small.entry].splitlines()]
    assert b"sequence_len" in keys and len(keys) <= 2, keys
