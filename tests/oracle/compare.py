"""What both halves of the differential suite (tests/test_oracle.py, tests/test_oracle_deepspeed.py) share: matching
a refusal with a known miss, telling a later-stage error, and writing the confusion table."""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from tests.corpus import ROOT


def known_miss(error: str, patterns: dict[str, str]) -> str | None:
    """The first pattern of `patterns` (regex -> reason) that matches the refusal `error`."""
    return next((pattern for pattern in patterns if re.search(pattern, error)), None)


def later_stage(code: str, key: str, table: dict[tuple[str, str], str]) -> bool:
    """(code, key) or (code, any key) is listed in `table` as an error that is right for a later-stage reason."""
    return (code, "") in table or (code, key) in table


def write_table(records: list[dict], title: str, name: str) -> None:
    """The confusion table (refused and caught / refused and missed / accepted and flagged, by rule) as
    build/oracle/<name>.md, every record as build/oracle/<name>-records.json."""
    table = Counter()
    flagged_by: dict[str, int] = defaultdict(int)
    for r in records:
        table[(r["verdict"], bool(r["errors"]))] += 1
        if r["verdict"] == "accepted":
            for code in sorted({e[0] for e in r["errors"]}):
                flagged_by[code] += 1
    rows = [f"# {title}", "", "| real stack | axlint error | axlint silent |", "|---|---|---|"]
    for verdict in ("refused", "accepted", "environment"):
        rows.append(f"| {verdict} | {table[(verdict, True)]} | {table[(verdict, False)]} |")
    rows += ["", "Errors on accepted configs, by rule (configs):", ""]
    rows += [f"- {code}: {n}" for code, n in sorted(flagged_by.items())]
    out = ROOT / "build" / "oracle"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (out / f"{name}-records.json").write_text(json.dumps(records, indent=1), encoding="utf-8")
