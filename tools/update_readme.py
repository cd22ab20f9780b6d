"""Regenerate the rule documentation from the rule packs: the README's rule table and docs/rules.md.

`python tools/update_readme.py` rewrites both; `--check` exits 1 when either is stale.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from axlint.commands.rules import rule_markdown, rules_table
from axlint.packs import load_rules

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RULES_DOC = ROOT / "docs" / "rules.md"
SEVERITY_POLICY = (
    "Severity: **error** means the run refuses to start, crashes (out of memory included), or silently trains "
    "something other than what the config says in a way that matters; every error's docs say which, under \"What "
    "stops the run\" (the upstream check, with its file and version) or \"What the stack does instead of "
    "refusing\". **warning** means likely wasteful or risky, a dead key included. **info** is advice, such as a "
    "setting that a run with room to spare does not need.")
"""The severity policy, printed at the top of docs/rules.md; the README's rules section says the same."""
BLOCK = re.compile(r"(<!-- rules:start -->\n).*?(<!-- rules:end -->)", re.S)


def rendered(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + rules_table(load_rules()) + m.group(2), text)


def rules_doc() -> str:
    """Every rule's documentation on one page; each rule has an anchor named by its lower-case code (SARIF links)."""
    parts = ["# axlint rules", "", "Generated from the packs in `rules/` by `python tools/update_readme.py`.", "",
             SEVERITY_POLICY, ""]
    for rule in load_rules():
        parts += [f'<a id="{rule.code.lower()}"></a>', "", rule_markdown(rule, level=2)]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    readme = README.read_text(encoding="utf-8")
    outputs = {README: rendered(readme), RULES_DOC: rules_doc()}
    stale = [p for p, text in outputs.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if "--check" in argv:
        return 1 if stale else 0
    for path in stale:
        path.write_text(outputs[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
