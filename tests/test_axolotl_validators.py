"""`axlint check --axolotl-validators`: the installed Axolotl's start-up validation as findings (AX020, AX021).

The end-to-end tests run `python -m axlint check` with the oracle venv's interpreter (the real Axolotl 0.18.0,
tests/oracle/venv.py) and this checkout on PYTHONPATH, as a user who installed axlint next to Axolotl would; the
dev venv, which has no Axolotl, stands for the user who has not.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from axlint.document import load_document
from axlint.hardware import parse_hardware
from axlint.upstream import validators
from axlint.upstream.validators import (AxolotlValidators, UpstreamError, capabilities, key_path, named_keys,
                                        names_in)
from tests.oracle.venv import oracle_python

ROOT = Path(__file__).resolve().parents[1]
BASE = """\
base_model: meta-llama/Llama-3.2-1B
datasets:
  - path: tatsu-lab/alpaca
    type: alpaca
micro_batch_size: 2
gradient_accumulation_steps: 4
learning_rate: 0.0002
"""


def axlint(python: Path | str, *args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([str(python), "-m", "axlint", "check", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, input=stdin)


def findings(python: Path | str, cwd: Path, *args: str) -> tuple[int, list[dict]]:
    done = axlint(python, "--output-format", "json", *args, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def real():
    return oracle_python()


@pytest.fixture(scope="module")
def configs(tmp_path_factory) -> Path:
    """Every config the end-to-end tests read, judged in one run of axlint (one Axolotl import)."""
    root = tmp_path_factory.mktemp("upstream")
    files = {
        "accepted.yml": BASE + "attn_implementation: flash_attention_2\n",
        "not_a_number.yml": BASE.replace("micro_batch_size: 2", "micro_batch_size: two"),
        "dataset_type.yml": BASE.replace("    type: alpaca\n", "    type: alpaca\n  - path: other/data\n    type: 3\n"),
        "packing.yml": BASE + "sample_packing: true\n",
        "saves.yml": BASE + "save_strategy: epoch\nsave_steps: 100\n",
        "no_lr.yml": BASE.replace("learning_rate: 0.0002\n", ""),
        "suppressed.yml": BASE.replace("micro_batch_size: 2", "micro_batch_size: two  # axlint: ignore[AX020]"),
        "ds.json": '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"}\n',
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def upstream_only(real, configs) -> dict[str, list[dict]]:
    """Findings of the upstream rules alone (the flag on, every other rule off), by file name."""
    _, found = findings(real, configs, "--axolotl-validators", "--select", "AX020,AX021,AX002", ".")
    by_file: dict[str, list[dict]] = {}
    for f in found:
        by_file.setdefault(f["path"], []).append(f)
    return by_file


def test_a_refused_config_gets_ax020_at_the_key_pydantic_names(upstream_only):
    [finding] = upstream_only["not_a_number.yml"]
    assert finding["code"] == "AX020" and finding["severity"] == "error"
    assert finding["location"] == {"line": 5, "column": 1}
    assert finding["message"].startswith("Axolotl 0.18.0 refuses this config: `micro_batch_size`: Input should be "
                                         "a valid integer")


def test_an_error_inside_a_dataset_entry_is_at_that_entry(upstream_only):
    [finding] = upstream_only["dataset_type.yml"]
    assert finding["code"] == "AX020"
    assert finding["location"] == {"line": 6, "column": 5}  # `type: 3` of the second entry
    assert "`datasets.1.type`" in finding["message"]
    assert "; or " in finding["message"], "the union's alternatives are one finding"


def test_a_model_level_refusal_is_at_the_key_its_message_names(upstream_only):
    [finding] = upstream_only["saves.yml"]
    assert finding["code"] == "AX020"
    assert finding["location"]["line"] == 8  # save_strategy, the first key the message names
    assert "save_strategy and save_steps mismatch" in finding["message"]


def test_a_missing_key_is_reported_at_the_file_start(upstream_only):
    [finding] = upstream_only["no_lr.yml"]
    assert finding["location"] == {"line": 1, "column": 1}
    assert "`learning_rate`: Field required" in finding["message"]


def test_axolotl_warnings_become_ax021_at_the_key(upstream_only):
    [finding] = upstream_only["packing.yml"]
    assert finding["code"] == "AX021" and finding["severity"] == "warning"
    assert finding["location"] == {"line": 8, "column": 1}
    assert "without an attention backend" in finding["message"]


def test_an_accepted_config_gets_nothing(upstream_only):
    assert "accepted.yml" not in upstream_only


def test_suppression_comments_apply_and_count_as_used(upstream_only):
    assert "suppressed.yml" not in upstream_only  # neither AX020 nor an unused-suppression AX002


def test_a_deepspeed_file_alone_is_not_sent_to_axolotl(upstream_only):
    assert "ds.json" not in upstream_only


def test_one_finding_per_problem_with_axlints_own_rules(real, configs):
    """Where axlint's own error is at the key (or names the missing key), the upstream duplicate is left out."""
    _, found = findings(real, configs, "--axolotl-validators", "not_a_number.yml", "saves.yml", "no_lr.yml",
                        "packing.yml")
    codes = {(f["path"], f["code"]) for f in found}
    assert ("not_a_number.yml", "AX011") in codes and ("not_a_number.yml", "AX020") not in codes
    assert ("saves.yml", "AX201") in codes and ("saves.yml", "AX020") not in codes
    assert ("no_lr.yml", "AX214") in codes and ("no_lr.yml", "AX020") not in codes
    assert ("packing.yml", "AX107") in codes and ("packing.yml", "AX021") not in codes


def test_stdin_is_judged_too(real, configs):
    done = axlint(real, "--axolotl-validators", "--select", "AX020", "--output-format", "concise", "-",
                  cwd=configs, stdin=(configs / "not_a_number.yml").read_text())
    assert done.returncode == 1, done.stderr
    assert "stdin.yml:5:1: AX020 [error] Axolotl 0.18.0 refuses this config" in done.stdout


def test_without_the_flag_axolotl_is_not_run(real, configs):
    _, found = findings(real, configs, "--select", "AX020,AX021", ".")
    assert found == []


def test_axolotl_runs_in_a_subprocess_not_in_axlints_process(real, configs):
    probe = ("import sys\nfrom axlint.cli import cli\ntry:\n    cli(args=sys.argv[1:], prog_name='axlint')\n"
             "except SystemExit:\n    pass\nprint('HEAVY', sorted(m for m in ('torch', 'axolotl', 'transformers')"
             " if m in sys.modules))\n")
    done = subprocess.run([str(real), "-c", probe, "check", "--axolotl-validators", "-q", "not_a_number.yml"],
                          cwd=configs, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=600)
    assert "AX011" in done.stdout, done.stderr
    assert "HEAVY []" in done.stdout


def test_without_axolotl_the_flag_is_a_usage_error(configs):
    done = axlint(sys.executable, "--axolotl-validators", "accepted.yml", cwd=configs)
    assert done.returncode == 2
    assert "--axolotl-validators: Axolotl is not installed in this Python" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_setting_turns_it_on_and_the_flag_off(configs, tmp_path):
    (tmp_path / "accepted.yml").write_text((configs / "accepted.yml").read_text())
    (tmp_path / ".axlint.toml").write_text("axolotl-validators = true\n")
    on = axlint(sys.executable, "accepted.yml", cwd=tmp_path)
    assert on.returncode == 2 and "`axolotl-validators = true` in" in on.stderr and ".axlint.toml" in on.stderr
    off = axlint(sys.executable, "--no-axolotl-validators", "-q", "accepted.yml", cwd=tmp_path)
    assert off.returncode in (0, 1), off.stderr


def test_an_axolotl_that_cannot_be_imported_is_reported_not_raised():
    """The dev venv has no Axolotl: the worker says so on its first line and the caller gets an UpstreamError."""
    with pytest.raises(UpstreamError, match="cannot be imported: ModuleNotFoundError"):
        AxolotlValidators(python=sys.executable).validate("base_model: x\n", Path("c.yml"), {})


def test_capabilities_follow_the_hardware():
    h100 = capabilities(parse_hardware("8xH100"))
    assert h100 == {"bf16": True, "fp8": True, "tf32": True, "n_gpu": 8, "n_node": 1, "compute_capability": "sm_90"}
    v100 = capabilities(parse_hardware("2xV100"))
    assert v100["bf16"] is False and v100["fp8"] is False and v100["compute_capability"] == "sm_70"
    sized = capabilities(parse_hardware("1x24GiB"))
    assert sized["compute_capability"] is None and sized["fp8"] is False


def test_every_catalog_gpu_from_nvidia_has_a_compute_capability():
    from axlint.hardware import GPUS

    nvidia = [g.name for g in GPUS if not g.name.startswith("MI")]
    assert sorted(set(nvidia) - set(validators.COMPUTE_CAPABILITY)) == []


def test_locating_keys_from_pydantic_locs_and_messages(tmp_path):
    doc = load_document(tmp_path / "c.yml", BASE + "lora_target_modules: 3\n")
    assert key_path(doc, ["lora_target_modules", "list[str]"]) == ("lora_target_modules",)
    assert key_path(doc, ["datasets", 0, "type", "str"]) == ("datasets", 0, "type")
    assert key_path(doc, ["learning_rate_typo"]) == ()
    assert named_keys(doc, "`micro_batch_size` must divide `lora_target_modules`") == [("micro_batch_size",),
                                                                                     ("lora_target_modules",)]
    assert named_keys(doc, "learning_rate too high for datasets") == [("learning_rate",), ("datasets",)]
    assert names_in("either datasets or pretraining_dataset is required", []) == ["pretraining_dataset"]
    assert names_in("Field required", ["learning_rate"]) == ["learning_rate"]


def test_findings_need_an_axolotl_yaml_and_a_selected_rule(tmp_path):
    """Nothing is sent to Axolotl (no worker started) for a DeepSpeed JSON, or when neither rule is selected."""
    never = AxolotlValidators(python="/nonexistent")
    ds = load_document(tmp_path / "ds.json", '{"zero_optimization": {"stage": 2}}')
    rule = SimpleNamespace(code="AX020")
    assert never.findings(SimpleNamespace(axolotl=ds, hardware=None), [rule]) == []
    yml = load_document(tmp_path / "c.yml", BASE)
    assert never.findings(SimpleNamespace(axolotl=yml, hardware=None), []) == []
    with pytest.raises(UpstreamError, match="cannot start"):
        never.findings(SimpleNamespace(axolotl=yml, hardware=None), [rule])


def test_locating_by_the_names_and_values_a_message_quotes(tmp_path):
    text = BASE.replace("    type: alpaca\n", "    type: alpaca\n    message_field_role: from\n")
    doc = load_document(tmp_path / "c.yml", text + "adapter: qolra\noptimizer: adamw_bnb_8bit\nrelora: true\n"
                        "plugins:\n  - my.Plugin\n")
    assert named_keys(doc, "Adapter 'qolra' is not built in. Add the plugin to `plugins:`.") == [("adapter",)]
    assert named_keys(doc, "FSDP2 not compatible with adamw_bnb_8bit, use `adamw_torch_8bit`") == [("optimizer",)]
    assert named_keys(doc, "jagged_restart_steps must be set to use ReLoRA") == [("relora",)]
    assert named_keys(doc, "Require cfg.micro_batch_size to be 1") == [("micro_batch_size",)]
    assert named_keys(doc, "message_field_role is deprecated") == [("datasets", 0, "message_field_role")]
    assert named_keys(doc, "Failed to load plugin: my.Plugin") == [("plugins", 0)]
    assert named_keys(doc, "its validation crashes with AttributeError: 'bool' object has no attribute 'lower'") == []


def test_an_axlint_error_quoting_axolotls_message_is_the_same_problem(tmp_path):
    from axlint.diagnostics import Diagnostic, Severity

    doc = load_document(tmp_path / "c.yml", BASE + "adapter: qlora\nload_in_8bit: true\n")
    at = doc.span(("adapter",))
    upstream = Diagnostic(doc.path, at, "AX020", "axolotl-refuses", Severity.ERROR, "...", extra={"axolotl": {
        "keys": [["adapter"]], "related": [["adapter"]], "names": [], "text": "Can't load qlora in 8bit"}})
    own = Diagnostic(doc.path, doc.span(("load_in_8bit",)), "AX103", "x", Severity.ERROR,
                     '`load_in_8bit: true` with `adapter: qlora`: Axolotl raises "Can\'t load qlora in 8bit"')
    assert validators.one_per_problem([upstream, own], {doc.path: doc}) == [own]
    other = Diagnostic(doc.path, doc.span(("load_in_8bit",)), "AX999", "x", Severity.ERROR, "something else")
    assert validators.one_per_problem([upstream, other], {doc.path: doc}) == [upstream, other]
    warning = Diagnostic(doc.path, at, "AX107", "x", Severity.WARNING, "a warning at the same key")
    assert validators.one_per_problem([upstream, warning], {doc.path: doc}) == [upstream, warning], \
        "an axlint warning at the key leaves the AX020: only an error says the config is refused"


def test_with_the_flag_the_corpus_configs_axolotl_refuses_all_get_an_error(real, tmp_path):
    """The vendored Axolotl examples: every one the real Axolotl refuses gets an error (axlint's own or AX020), and
    none it accepts gets an AX020 (both judged with the same GPUs, 8xH100)."""
    import shutil

    import yaml

    from tests.corpus import CORPUS
    from tests.oracle.venv import judge

    shutil.copytree(CORPUS / "deepspeed_configs", tmp_path / "deepspeed_configs")
    configs = []
    for path in sorted([*CORPUS.glob("examples/**/*.yml"), *CORPUS.glob("examples/**/*.yaml")]):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "base_model" in data:
            rel = path.relative_to(CORPUS).as_posix()
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(path.read_bytes())
            configs.append(rel)
    caps = capabilities(parse_hardware("8xH100"))
    verdicts = judge(real, [{"id": rel, "capabilities": caps} for rel in configs], tmp_path)
    _, found = findings(real, tmp_path, "--axolotl-validators", "--hardware", "8xH100", "--ignore", "MEM",
                        *configs)
    errors: dict[str, set[str]] = {}
    for f in found:
        if f["severity"] == "error":
            errors.setdefault(f["path"], set()).add(f["code"])
    refused = [rel for rel in configs if verdicts[rel]["verdict"] != "accepted"]
    assert refused and all(errors.get(rel) for rel in refused), [r for r in refused if not errors.get(r)]
    accepted = [rel for rel in configs if verdicts[rel]["verdict"] == "accepted"]
    assert len(accepted) > 100 and not [rel for rel in accepted if "AX020" in errors.get(rel, set())]


FAKE_CONFIG = '''\
import os, sys
from pydantic import BaseModel, ValidationError


def prepare_plugins(cfg):
    pass


class _Model(BaseModel):
    micro_batch_size: int


def validate_config(cfg, capabilities=None, env_capabilities=None):
    print("Axolotl chatter on stdout")  # must not reach the protocol
    os.write(1, b"native chatter on fd 1\\n")
    if cfg.get("crash"):
        os._exit(3)
    if cfg.get("hang"):
        import time
        time.sleep(60)
    _Model(**{k: v for k, v in cfg.items() if k == "micro_batch_size"})
    return cfg
'''


@pytest.fixture()
def fake_axolotl(tmp_path) -> Path:
    """A stand-in `axolotl` package in the dev venv: prints on stdout, exits mid-validation on `crash: true`."""
    pkg = tmp_path / "fake" / "axolotl"
    for sub in ("", "utils", "integrations"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "utils" / "config.py").write_text(FAKE_CONFIG)
    (pkg / "utils" / "dict.py").write_text("class DictDefault(dict):\n    def __getattr__(self, k):\n"
                                           "        return self.get(k)\n    def __setattr__(self, k, v):\n"
                                           "        self[k] = v\n")
    (pkg / "integrations" / "base.py").write_text("class PluginManager:\n    _instance = None\n")
    return tmp_path / "fake"


def run_with(fake: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(fake)])}
    return subprocess.run([sys.executable, "-m", "axlint", "check", "--axolotl-validators", "--select", "AX020",
                           "--output-format", "concise", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_what_axolotl_prints_stays_out_of_the_protocol(fake_axolotl, tmp_path):
    (tmp_path / "c.yml").write_text("base_model: x\nmicro_batch_size: two\n")
    done = run_with(fake_axolotl, tmp_path, "c.yml")
    assert done.returncode == 1, done.stderr
    assert "c.yml:2:1: AX020 [error] Axolotl unknown refuses this config: `micro_batch_size`: Input should be a " \
           "valid integer" in done.stdout
    assert "chatter" not in done.stdout


def test_an_axolotl_that_dies_while_validating_is_a_usage_error(fake_axolotl, tmp_path):
    (tmp_path / "c.yml").write_text("base_model: x\ncrash: true\n")
    done = run_with(fake_axolotl, tmp_path, "c.yml")
    assert done.returncode == 2
    assert "--axolotl-validators: Axolotl's validation ended (exit status 3) while validating" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_axolotl_that_does_not_answer_in_time_is_a_usage_error(fake_axolotl, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(fake_axolotl))
    monkeypatch.setattr(validators, "CONFIG_TIMEOUT_S", 2.0)
    slow = AxolotlValidators()
    try:
        with pytest.raises(UpstreamError, match="no answer within 2 s while validating"):
            slow.validate("base_model: x\nhang: true\n", tmp_path / "c.yml", {})
    finally:
        slow.close()


def test_a_broken_axolotl_install_is_a_usage_error(tmp_path):
    fake = tmp_path / "fake"
    (fake / "axolotl").mkdir(parents=True)
    (fake / "axolotl" / "__init__.py").write_text("raise RuntimeError('half-installed')\n")
    (tmp_path / "c.yml").write_text("base_model: x\n")
    done = run_with(fake, tmp_path, "c.yml")
    assert done.returncode == 2
    assert "Axolotl is installed but cannot be imported: RuntimeError: half-installed" in done.stderr


def test_the_default_check_path_does_not_load_the_upstream_code():
    from tests.test_import_cost import loaded_modules

    code, modules = loaded_modules("fixtures/llama3-8b-lora.yml")
    assert code in (0, 1)
    assert not [m for m in modules if m.startswith("axlint.upstream")]
