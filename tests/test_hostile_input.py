"""Regression cases reduced from the fuzz campaign (tests/fuzz): hostile paths, devices and FIFOs, endless stdin,
lone surrogates, CR-only and double-BOM files, YAML anchors and merge keys under a fix, fixes that would bring a
new error. Each states where the finding lands or what the fixed text is."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from axlint.packs import load_rules, select_rules
from axlint.fixer import fix_paths, write_changed
from axlint.lint import LintOptions, lint_paths
from axlint.report import RENDERERS, printable
from tests.corpus import ROOT

RULES = load_rules()
OPTIONS = LintOptions(RULES)
BASE = "base_model: x\nlearning_rate: 0.1\nmicro_batch_size: 1\ngradient_accumulation_steps: 1\n"


def run(args: list[str], cwd: Path, stdin=None) -> subprocess.CompletedProcess:  # noqa: ANN001
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "axlint", *args], cwd=cwd, stdin=stdin, capture_output=True,
                          timeout=60, env=env)
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert "Traceback" not in out + err, out + err
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


def found(path: Path, codes: list[str] | None = None) -> set[tuple[str, int, int, str]]:
    options = LintOptions(select_rules(RULES, codes)) if codes else OPTIONS
    return {(d.path.name, d.span.line, d.span.col, d.code) for d in lint_paths([path], options).diagnostics}


# ------------------------------------------------------------------------------------------------ paths


@pytest.mark.parametrize("reference", ["d" * 5000 + ".json", "/".join(["deep"] * 900 + ["ds.json"]),
                                       "a\x00b.json"], ids=["name-too-long", "path-too-long", "nul-byte"])
def test_a_deepspeed_path_the_os_refuses_is_a_located_finding(tmp_path, reference):
    (tmp_path / "c.yml").write_text(BASE + f"deepspeed: {reference!r}\n".replace("\\x00", "\\0"))
    assert ("c.yml", 5, 12, "DS000") in found(tmp_path / "c.yml", ["DS000", "AX999"])


def test_a_base_model_name_too_long_for_the_os_is_just_unknown(tmp_path):
    (tmp_path / "c.yml").write_text(BASE.replace("base_model: x", "base_model: " + "m" * 5000))
    assert ("c.yml", 1, 13, "MEM008") in found(tmp_path / "c.yml", ["MEM008", "AX999"])


@pytest.mark.parametrize("kind", ["device", "fifo", "folder"])
def test_a_deepspeed_reference_that_is_no_regular_file_is_reported_without_reading_it(tmp_path, kind):
    target = {"device": "/dev/zero", "fifo": "ds.json", "folder": "ds.json"}[kind]
    if kind == "fifo":
        os.mkfifo(tmp_path / "ds.json")  # no writer: opening it would block forever
    elif kind == "folder":
        (tmp_path / "ds.json").mkdir()
    (tmp_path / "c.yml").write_text(BASE + f"deepspeed: {target}\n")
    diags = lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics
    ds000 = [d for d in diags if d.code == "DS000"]
    assert [(d.span.line, d.span.col) for d in ds000] == [(5, 12)]
    assert "not a regular file" in ds000[0].message


def test_check_refuses_a_device_and_a_fifo_named_on_the_command_line(tmp_path):
    os.mkfifo(tmp_path / "pipe.yml")
    for name in ("/dev/zero", "pipe.yml"):
        done = run(["check", name], tmp_path)
        assert done.returncode == 2 and "not a regular file" in done.stderr


def test_a_fifo_found_in_a_folder_is_a_finding_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.yml")
    done = run(["check", ".", "--output-format", "concise"], tmp_path)
    assert "pipe.yml:1:1: AX000 [error] not a regular file" in done.stdout


def test_endless_stdin_stops_at_the_size_limit(tmp_path):
    with open("/dev/zero", "rb") as zero:
        done = run(["check", "-", "--stdin-filename", "s.yml", "--output-format", "concise"], tmp_path, stdin=zero)
    assert done.returncode == 1
    assert "s.yml:1:1: AX000 [error] input is 5.0 MiB; a config over 5 MiB is refused" in done.stdout


def test_no_home_folder_is_no_error(tmp_path, monkeypatch):
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("AXLINT_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    (tmp_path / "c.yml").write_text(BASE + "base_model_config: ~/model\n")
    assert load_rules()  # the pack cache is skipped, the packs still load
    assert not [d for d in lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics if d.code == "AX999"]


def test_a_huge_micro_batch_is_judged_at_once(tmp_path):
    """The solver looked for smaller micro batches one number at a time: 10**29 never finished."""
    from tests.fuzz.judge import time_limit

    (tmp_path / "c.yml").write_text(BASE.replace("base_model: x", "base_model: meta-llama/Llama-3.1-8B").replace(
        "micro_batch_size: 1", "micro_batch_size: 100000000000000000000000000000") + "sequence_len: 2048\n")
    with time_limit(30):
        diags = lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics
    assert ("MEM009", 5) in {(d.code, d.span.line) for d in diags}  # judged: the micro batch does not fit
    assert "AX999" not in {d.code for d in diags}


def test_plugins_written_as_a_number_leave_the_memory_fix_out(tmp_path):
    """`plugins: .nan` (a float): the memory rules judge the run; their fix cannot append to a number, so it is
    dropped and the finding stays."""
    (tmp_path / "c.yml").write_text(BASE.replace("base_model: x", "base_model: meta-llama/Llama-3.1-8B")
                                    + "sequence_len: 16384\nplugins: .nan\n")
    diags = lint_paths([tmp_path / "c.yml"], LintOptions(select_rules(RULES, ["MEM004", "AX999"]))).diagnostics
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [("MEM004", 6, 10)]
    assert diags[0].fix is None


def test_a_target_string_that_is_no_regular_expression_is_one_finding(tmp_path):
    """`lora_target_modules: '['` (fuzz seed 20261128, case 965): the memory rules matched module paths against it
    and each failed with `re.error`; now it matches nothing there and AX239 says PEFT stops on it."""
    (tmp_path / "c.yml").write_text(BASE.replace("base_model: x", "base_model: NousResearch/Llama-3.2-1B")
                                    + "adapter: lora\nlora_target_modules: '['\n")
    diags = lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics
    assert "AX999" not in {d.code for d in diags}
    assert [(d.code, d.span.line) for d in diags if d.code == "AX239"] == [("AX239", 6)]


def test_a_zero_integer_that_is_not_finite_is_the_schemas(tmp_path):
    """`max_reuse_distance: .nan` in an inline DeepSpeed mapping (fuzz seed 20261128, case 575): DS119 took it for a
    fractional value and failed truncating it; AX011 reports it."""
    (tmp_path / "c.yml").write_text(BASE + "deepspeed:\n  zero_optimization:\n    stage: 3\n"
                                    "    max_reuse_distance: .nan\n    reduce_bucket_size: -.inf\n")
    diags = lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics
    assert "AX999" not in {d.code for d in diags}
    assert [(d.code, d.span.line) for d in diags if d.code in ("AX011", "DS119")] == [("AX011", 8), ("AX011", 9)]


def test_an_rl_list_under_fsdp2_is_the_schemas(tmp_path):
    """`rl: [a]` beside `fsdp_version: 2` (fuzz seed 20261129, case 5295): AX230 looked the list up in a set of
    method names and failed; AX011 reports the list."""
    (tmp_path / "c.yml").write_text(BASE + "fsdp_version: 2\nrl:\n  - a\n")
    diags = lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics
    assert "AX999" not in {d.code for d in diags}
    assert ("AX011", 7) in {(d.code, d.span.line) for d in diags}


# ------------------------------------------------------------------------------------------------ output


def test_a_file_name_that_is_not_utf8_prints_escaped(tmp_path):
    name = os.fsdecode(b"bad-\xff.yml")  # Python keeps the byte as the lone surrogate \udcff
    (tmp_path / name).write_text(BASE + "micro_batch_size: 2\n")
    diags = lint_paths([tmp_path / name], OPTIONS)
    for render in RENDERERS.values():
        render(diags.diagnostics, diags.sources, RULES).encode("utf-8")  # strict: must not raise
    done = run(["check", ".", "--output-format", "concise"], tmp_path)
    assert "bad-\\udcff.yml:5:1: AX001" in done.stdout


def test_printable_escapes_only_lone_surrogates():
    assert printable("é \ud83d x") == "é \\ud83d x"
    assert printable("plain 😀") == "plain 😀"


# ------------------------------------------------------------------------------------------------ line breaks, BOMs


def test_cr_only_line_breaks_insert_the_key_once_in_the_right_block(tmp_path):
    text = (BASE + "deepspeed:\n  zero_optimization:\n    stage: 3\n  train_micro_batch_size_per_gpu: auto\n"
            "bf16: true\n").replace("\n", "\r")
    (tmp_path / "c.yml").write_bytes(text.encode())
    report = fix_paths([tmp_path / "c.yml"], LintOptions(select_rules(RULES, ["DS112"])))
    assert not write_changed(report)
    assert (tmp_path / "c.yml").read_bytes().decode() == text.replace(
        "    stage: 3\r", "    stage: 3\r    stage3_gather_16bit_weights_on_model_save: true\r")


def test_a_deepspeed_json_with_a_bom_is_refused_as_json_load_refuses_it(tmp_path):
    (tmp_path / "ds.json").write_bytes(b'\xef\xbb\xbf{"zero_optimization": {"stage": 2}}')
    (tmp_path / "c.yml").write_text(BASE + "deepspeed: ds.json\n")
    assert {("ds.json", 1, 1, "AX000"), ("c.yml", 5, 12, "DS000")} <= found(tmp_path / "c.yml") | found(
        tmp_path / "ds.json")


# ------------------------------------------------------------------------------------------------ fixes


def test_deepspeed_naming_a_training_yaml_is_an_error_and_that_yaml_is_never_rewritten(tmp_path):
    other = BASE + "deepspeed: ds.json\nwandb_project:\n"
    (tmp_path / "other.yml").write_text(other)
    (tmp_path / "c.yml").write_text(BASE + "deepspeed: other.yml\n")
    diags = [d for d in lint_paths([tmp_path / "c.yml"], OPTIONS).diagnostics if d.code == "DS000"]
    assert [(d.span.line, d.span.col) for d in diags] == [(5, 12)]
    assert "json.load" in diags[0].message
    report = fix_paths([tmp_path / "c.yml"], OPTIONS, unsafe=True)
    assert not write_changed(report)
    assert (tmp_path / "other.yml").read_text() == other


MERGED = ("ds: &ds\n  zero_optimization:\n    stage: 3\n  train_micro_batch_size_per_gpu: auto\n"
          + BASE + "deepspeed:\n  <<: *ds\n  gradient_accumulation_steps: auto\n")


def test_a_deepspeed_block_built_from_a_merge_key_never_loses_its_zero_stage(tmp_path):
    (tmp_path / "c.yml").write_text(MERGED)
    diags = lint_paths([tmp_path / "c.yml"], LintOptions(select_rules(RULES, ["DS112"]))).diagnostics
    assert [(d.code, d.fix) for d in diags] == [("DS112", None)]  # found, but no fix would keep the merged block
    report = fix_paths([tmp_path / "c.yml"], OPTIONS, unsafe=True)
    assert not write_changed(report)
    import yaml

    assert yaml.safe_load((tmp_path / "c.yml").read_text())["deepspeed"]["zero_optimization"] == {"stage": 3}


def test_a_value_shared_through_an_anchor_is_not_edited_for_one_of_its_users(tmp_path):
    text = ("zero: &z\n  stage: 3\n  sub_group_size: 0.5\n" + BASE
            + "deepspeed:\n  zero_optimization: *z\n  train_micro_batch_size_per_gpu: auto\n")
    (tmp_path / "c.yml").write_text(text)
    diags = lint_paths([tmp_path / "c.yml"], LintOptions(select_rules(RULES, ["DS119"]))).diagnostics
    assert [(d.span.line, d.fix) for d in diags] == [(3, None)]
    report = fix_paths([tmp_path / "c.yml"], OPTIONS, unsafe=True)
    assert not write_changed(report)
    assert "  sub_group_size: 0.5\n" in (tmp_path / "c.yml").read_text()


def test_two_typos_of_one_key_get_no_rename(tmp_path):
    (tmp_path / "c.yml").write_text(BASE + "warmup_stepz: 1\nwarmup_stpes: 2\n")
    diags = lint_paths([tmp_path / "c.yml"], LintOptions(select_rules(RULES, ["AX010"]))).diagnostics
    assert [(d.span.line, d.fix) for d in diags] == [(5, None), (6, None)]
    assert all("did you mean `warmup_steps`" in d.message for d in diags)


def test_a_rename_that_would_bring_a_new_error_is_held_back_and_said(tmp_path):
    text = BASE + "flash_atention: 3\n"  # renamed, `flash_attention: 3` is not a bool: a new error
    (tmp_path / "c.yml").write_text(text)
    report = fix_paths([tmp_path / "c.yml"], OPTIONS, unsafe=True)
    assert not report.changed
    assert any("rename `flash_atention` to `flash_attention`" in p and "new AX011 error" in p for p in report.problems)


def test_a_fix_of_thousands_of_keys_is_one_pass(tmp_path):
    text = BASE + "".join(f"unknown_{i}:\n" for i in range(3000))
    (tmp_path / "c.yml").write_text(text)
    report = fix_paths([tmp_path / "c.yml"], LintOptions(select_rules(RULES, ["AX017"])))
    assert report.file(tmp_path / "c.yml").text == BASE and not report.problems


def test_fuzz_failures_leave_no_temp_files(tmp_path):
    shutil.copyfile(ROOT / "fixtures" / "llama3-8b-lora.yml", tmp_path / "c.yml")
    report = fix_paths([tmp_path / "c.yml"], OPTIONS, unsafe=True)
    write_changed(report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yml"]
