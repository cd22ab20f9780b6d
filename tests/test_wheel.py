"""The built wheel carries everything `axlint check` needs and behaves like the checkout once installed.

One module-scoped fixture builds the wheel from a copy of the source tree and installs it (`--no-deps`, then the
three core dependencies) into a fresh virtual environment; the tests then run the installed `axlint` console
script from a folder outside the repository.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from axlint.packs import load_rules

ROOT = Path(__file__).resolve().parents[1]
CORE_DEPENDENCIES = ("click", "pyyaml", "jsonschema")


def _run(cmd: list[str | Path], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kwargs)


def _copy_sources(dest: Path) -> Path:
    """The top-level files plus axlint/ and rules/, without caches (the wheel is built from this copy)."""
    dest.mkdir()
    for item in ROOT.iterdir():
        if item.is_file() and not item.name.startswith("."):
            shutil.copy2(item, dest / item.name)
    for folder in ("axlint", "rules"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("wheel")
    src = _copy_sources(base / "src")
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", base / "dist", src])
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next((base / "dist").glob("axlint-*.whl"))
    venv = base / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", venv]).returncode == 0
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--disable-pip-version-check"]
    for args in (["--no-deps", wheel], list(CORE_DEPENDENCIES)):
        done = _run([*pip, *args])
        assert done.returncode == 0, done.stdout + done.stderr
    work = base / "work"
    work.mkdir()
    for name in ("llama3-8b-fft-zero3.yml", "ds_zero3.json", "llama3-8b-lora.yml"):
        shutil.copy2(ROOT / "fixtures" / name, work / name)
    (work / "stock-ds.yml").write_text("base_model: meta-llama/Llama-3.1-8B\n"
                                       "deepspeed: deepspeed_configs/zero3_bf16.json\n", encoding="utf-8")
    return {"wheel": wheel, "python": python, "axlint": venv / "bin" / "axlint", "work": work}


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _expected_wheel_files() -> set[str]:
    """Every file under axlint/ (less caches and hidden files) and every pack of rules/ as
    axlint/_rules."""
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "axlint").rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and not p.name.startswith(".")}
    return files | {f"axlint/_rules/{p.name}" for p in (ROOT / "rules").glob("*.yaml")}


def test_wheel_contains_every_module_rule_pack_and_data_file(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    missing = sorted(_expected_wheel_files() - names)
    assert not missing, f"not in the wheel (add the package or data to [tool.setuptools] in pyproject.toml): {missing}"


def test_installed_package_is_the_wheel_not_the_checkout(installed):
    probe = "import axlint, axlint.packs as e; print(axlint.__file__); print(e.builtin_rules_dir())"
    done = _run([installed["python"], "-c", probe], cwd=installed["work"], env=_clean_env())
    assert done.returncode == 0, done.stderr
    module_file, rules_dir = done.stdout.split()
    venv = installed["python"].parent.parent
    assert Path(module_file).is_relative_to(venv)
    assert Path(rules_dir) == Path(module_file).parent / "_rules"


def test_installed_rules_lists_every_rule_of_the_checkout(installed):
    done = _run([installed["axlint"], "rules", "--format", "json"], cwd=installed["work"], env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert [r["code"] for r in json.loads(done.stdout)] == [r.code for r in load_rules()]


@pytest.mark.parametrize("config", ["llama3-8b-fft-zero3.yml", "llama3-8b-lora.yml", "stock-ds.yml"])
def test_installed_check_matches_the_checkout(installed, config):
    """Same findings and exit code as the source tree: packs, schemas, catalog and stock DeepSpeed files all load."""
    args = ["check", config, "--axolotl-version", "0.18.0", "--deepspeed-version", "0.18.9",
            "--output-format", "json"]  # the same schemas whatever each environment has installed
    wheel = _run([installed["axlint"], *args], cwd=installed["work"], env=_clean_env())
    source = _run([sys.executable, "-m", "axlint", *args], cwd=installed["work"],
                  env={**_clean_env(), "PYTHONPATH": str(ROOT)})
    assert "Traceback" not in wheel.stderr, wheel.stderr
    assert wheel.returncode in (0, 1), wheel.stderr
    assert (wheel.returncode, json.loads(wheel.stdout)) == (source.returncode, json.loads(source.stdout))


def test_installed_check_finds_a_duplicate_key(installed):
    (installed["work"] / "dup.yml").write_text("base_model: x\nlearning_rate: 0.1\nlearning_rate: 0.2\n")
    done = _run([installed["axlint"], "check", "dup.yml", "--select", "AX001", "-q", "--output-format", "concise"],
                cwd=installed["work"], env=_clean_env())
    assert (done.returncode, done.stdout) == (1, "dup.yml:3:1: AX001 [error] `learning_rate` is given twice "
                                                 "(first at line 2); the loader keeps only this last one\n")
