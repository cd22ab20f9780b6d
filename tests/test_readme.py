"""The README's rule table and docs/rules.md are generated from the packs and stay in sync; the Quickstart has
exactly two commands."""
import re
from pathlib import Path

from tools.update_readme import README, RULES_DOC, rendered, rules_doc


def test_rule_table_in_sync():
    text = README.read_text(encoding="utf-8")
    assert "<!-- rules:start -->" in text
    assert rendered(text) == text, "run `python tools/update_readme.py` after changing a rule pack"


def test_rules_doc_in_sync_with_an_anchor_per_rule():
    text = RULES_DOC.read_text(encoding="utf-8")
    assert text == rules_doc(), "run `python tools/update_readme.py` after changing a rule pack"
    assert '<a id="mem001"></a>' in text and '<a id="ax010"></a>' in text


def test_quickstart_has_exactly_two_commands():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Quickstart\n.*?```bash\n(.*?)```", text, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2
    assert "axlint check fixtures/" in commands[0]
    assert "pytest" in commands[1]
    fixture = re.search(r"axlint check (\S+)", commands[0]).group(1)
    assert (Path(README).parent / fixture).is_file()


def test_the_readme_check_example_is_what_axlint_prints():
    """The `$ axlint check ... --output-format concise` block is a real run of the current code."""
    import os
    import shlex
    import subprocess
    import sys

    text = README.read_text(encoding="utf-8")
    block = re.search(r"```\n\$ (axlint check [^\n]*--output-format concise)\n(.*?)```", text, re.S)
    assert block, "the README shows a concise check of the bundled fixture"
    root = Path(README).parent
    done = subprocess.run([sys.executable, "-m", "axlint", *shlex.split(block.group(1))[1:]], cwd=root,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)}, timeout=120)
    assert done.stdout == block.group(2)
