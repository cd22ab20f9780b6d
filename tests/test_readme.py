"""The README's rule table is generated from the packs and stays in sync; its Quickstart has two commands."""
import re
from pathlib import Path

from tools.update_readme import README, rendered


def test_rule_table_in_sync():
    text = README.read_text(encoding="utf-8")
    assert "<!-- rules:start -->" in text
    assert rendered(text) == text, "run `python tools/update_readme.py` after changing a rule pack"


def test_quickstart_has_exactly_two_commands():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Quickstart\n.*?```bash\n(.*?)```", text, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2
    assert "axlint check fixtures/" in commands[0]
    assert "pytest" in commands[1]
    fixture = re.search(r"axlint check (\S+)", commands[0]).group(1)
    assert (Path(README).parent / fixture).is_file()
