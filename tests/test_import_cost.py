"""`axlint check` stays light: no torch, deepspeed, transformers, peft or liger_kernel (nor numpy) on its path,
and jsonschema only once a user's rule pack has to be validated.

Each test runs the real CLI in a fresh interpreter over configs that reach every kind of check (full fine-tune
with a DeepSpeed file, LoRA with Liger, FSDP, a stock DeepSpeed name, a bare DeepSpeed JSON) and reads
`sys.modules` afterwards.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.corpus import SAMPLE

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "deepspeed", "transformers", "peft", "liger_kernel", "numpy")
CONFIGS = [
    "fixtures/llama3-8b-fft-zero3.yml", "fixtures/llama3-8b-lora.yml", "fixtures/ds_zero3.json",
    *(str(p.relative_to(ROOT)) for p in SAMPLE if p.suffix != ".json"),
]
PROBE = """
import sys
from axlint.cli import cli
try:
    cli(args=sys.argv[1:], prog_name="axlint")
except SystemExit as exc:
    code = exc.code
modules = sorted(sys.modules)
import json
print("\\nMODULES " + json.dumps({"exit": code, "modules": modules}))
"""


def loaded_modules(*args: str, env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    """Exit code of `axlint check ARGS` and every module imported by then (`env`: added to the environment)."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE, "check", "-q", "--output-format", "concise", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout.rsplit("MODULES ", 1)[1])
    return report["exit"], set(report["modules"])


def modules_after(*args: str) -> tuple[int, set[str]]:
    """Exit code of `axlint check ARGS` and the top-level packages imported by then."""
    code, modules = loaded_modules(*args)
    return code, {name.split(".")[0] for name in modules}


def test_check_imports_nothing_heavy():
    code, loaded = modules_after(*CONFIGS)
    assert code in (0, 1)
    assert not loaded & set(HEAVY), f"heavy imports on the check path: {sorted(loaded & set(HEAVY))}"


def test_check_with_hardware_imports_nothing_heavy():
    code, loaded = modules_after("--hardware", "8xH100", *CONFIGS)
    assert code in (0, 1)
    assert not loaded & set(HEAVY)


def test_jsonschema_only_for_a_user_pack(tmp_path):
    code, loaded = modules_after(*CONFIGS)
    assert code in (0, 1) and "jsonschema" not in loaded
    pack = {"pack": "team", "rules": [{
        "code": "TEAM001", "name": "no-fp16", "severity": "warning", "category": "policy",
        "summary": "Use bf16.", "message": "fp16 is set", "when": {"key": "raw:fp16", "truthy": True},
        "report": "raw:fp16", "docs": {"why": "bf16 trains more stably."}, "tests": []}]}
    (tmp_path / "team.yaml").write_text(json.dumps(pack), encoding="utf-8")
    code, loaded = modules_after("--rules-dir", str(tmp_path), *CONFIGS)
    assert code == 1 and "jsonschema" in loaded


def test_the_listed_check_modules_are_every_module_of_the_package_that_registers_checks():
    from axlint import checks

    files = {p.stem for p in (ROOT / "axlint" / "checks").glob("*.py") if "@register_check(" in p.read_text()}
    assert set(checks.MODULES) == files


def test_every_lazy_command_resolves_to_a_command_of_that_name():
    import click

    from axlint.cli import COMMANDS, cli

    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name
    assert cli.get_command(ctx, "nope") is None


def test_check_does_not_import_the_other_commands():
    code, modules = loaded_modules("fixtures/llama3-8b-lora.yml")
    assert code in (0, 1) and "axlint.commands.check" in modules
    assert not {"axlint.commands.fix", "axlint.commands.estimate", "axlint.commands.validate"} & modules


def test_a_yaml_check_with_text_output_imports_no_json(tmp_path):
    """json's import compiles its regexes (~2 ms): it is imported where JSON is read or written, not on the way to
    a YAML config's text report (once the bundled JSON is in the data cache, and with no config.json to read)."""
    env = {"AXLINT_CACHE_DIR": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf"),
           "HF_HUB_CACHE": str(tmp_path / "hf")}
    config = "fixtures/axolotl/examples/llama-3/lora-1b.yml"
    loaded_modules(config, env=env)  # fills the cache
    code, modules = loaded_modules(config, env=env)
    assert code in (0, 1) and "json" not in modules
