"""Regenerate the README's rule table from the rule packs (`python tools/update_readme.py`; `--check` to verify)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from axlint.commands.rules import rules_table
from axlint.engine import load_rules

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"(<!-- rules:start -->\n).*?(<!-- rules:end -->)", re.S)


def rendered(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + rules_table(load_rules()) + m.group(2), text)


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    new = rendered(text)
    if "--check" in argv:
        return 0 if new == text else 1
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
