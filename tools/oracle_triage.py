"""Judge a folder of Axolotl configs with the real Axolotl (the oracle venv of tests/oracle) and with axlint, and
print where the two disagree: the differential suite's check, for configs that are not in the vendored corpus
(configs collected from public repositories, a team's own).

    python tools/oracle_triage.py DIR [--json OUT.json]

Every `*.yml` / `*.yaml` directly in DIR is copied, with Axolotl's stock `deepspeed_configs/`, into a scratch
folder and judged by Axolotl 0.18.0's start-up validation (with the capabilities of 8×H100) and by `axlint check`
with every rule but the memory estimate. A config Axolotl refuses without an axlint error, or accepts with one from
a rule whose docs name no silent failure (nor a later-stage failure of any key: tests/test_oracle.py
`LATER_STAGE`), is printed. Building the oracle venv needs the package index once
(tests/oracle/venv.py).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from axlint.diagnostics import Severity  # noqa: E402
from axlint.lint import LintOptions, lint_text  # noqa: E402
from tests.corpus import CORPUS  # noqa: E402
from tests.oracle.venv import judge, oracle_python  # noqa: E402
from tests.test_oracle import CAPABILITIES, LATER_STAGE, RULES, SCHEMAS, SILENT  # noqa: E402


def triage(folder: Path) -> list[dict]:
    """One record per config: Axolotl's verdict, its refusal and the key it names, axlint's errors."""
    options = LintOptions(RULES, schemas=SCHEMAS)
    silent = SILENT | {c for c, key in LATER_STAGE if not key}
    configs = sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    with tempfile.TemporaryDirectory(prefix="axlint-triage-") as scratch:
        root = Path(scratch)
        shutil.copytree(CORPUS / "deepspeed_configs", root / "deepspeed_configs")
        for path in configs:
            shutil.copyfile(path, root / path.name)
        verdicts = judge(oracle_python(), [{"id": p.name, "capabilities": CAPABILITIES} for p in configs], root)
        records = []
        for path in configs:
            result = lint_text(root / path.name, None, options)
            errors = [(d.code, d.span.line) for d in result.diagnostics if d.severity is Severity.ERROR]
            records.append({"config": path.name, **verdicts[path.name], "errors": errors,
                            "unexplained": sorted({c for c, _ in errors} - silent)})
    return records


def disagreements(records: list[dict]) -> list[str]:
    out = []
    for r in records:
        if r["verdict"] == "refused" and not r["errors"]:
            out.append(f"{r['config']}: Axolotl refuses ({r['error']}); axlint has no error")
        elif r["verdict"] == "accepted" and r["unexplained"]:
            out.append(f"{r['config']}: Axolotl accepts it; axlint errors {', '.join(r['unexplained'])} name no "
                       "silent failure")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--json", type=Path, help="write every record here")
    args = parser.parse_args()
    records = triage(args.folder)
    counts = {(v, bool(e)): sum(1 for r in records if r["verdict"] == v and bool(r["errors"]) == e)
              for v in ("refused", "accepted", "environment") for e in (True, False)}
    print(f"{len(records)} configs: refused {counts[('refused', True)]} caught / {counts[('refused', False)]} "
          f"missed; accepted {counts[('accepted', False)]} clean / {counts[('accepted', True)]} with errors; "
          f"environment {counts[('environment', True)] + counts[('environment', False)]}")
    for line in disagreements(records):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
