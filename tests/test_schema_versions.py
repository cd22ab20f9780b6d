"""Checking against the schema of a chosen Axolotl / DeepSpeed release: nested findings at their line:col, keys
that exist in one release only, the order in which the release is chosen, and what the output says about it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from axlint.cli import cli
from axlint.schemas import validator as schema_check
from axlint.schemas.validator import bundled, choose_versions, default_choice, load_schema

NESTED = """\
base_model: org/model
datasets:
  - path: org/data
    tpye: alpaca
special_tokens:
  pad_tokn: "<pad>"
optimizer: adamw_torhc_fused
lr_scheduler: cosin
"""


def _check(tmp_path: Path, text: str, *args: str, name: str = "config.yml", settings: str | None = None):
    (tmp_path / name).write_text(text, encoding="utf-8")
    if settings is not None:
        (tmp_path / ".axlint.toml").write_text(settings, encoding="utf-8")
    return CliRunner().invoke(cli, ["check", str(tmp_path / name), "--select", "AX01", *args])


def _findings(result) -> list[tuple[str, int, int, str]]:
    return [(d["code"], d["location"]["line"], d["location"]["column"], d["message"])
            for d in json.loads(result.stdout)]


@pytest.fixture
def nothing_installed(monkeypatch):
    """Neither axolotl nor deepspeed installed (this environment has deepspeed)."""
    monkeypatch.setattr(schema_check, "installed_versions", lambda packages: {})
    default_choice.cache_clear()
    yield
    default_choice.cache_clear()


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Fake distributions in a site folder ahead of the real ones on sys.path (`<name>-<version>.dist-info`, as
    pip writes them): `installed(axolotl="0.14.0")` puts one there."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def put(**versions: str) -> None:
        for name, version in versions.items():
            (site / f"{name}-{version}.dist-info").mkdir()
            (site / f"{name}-{version}.dist-info" / "METADATA").write_text(f"Name: {name}\nVersion: {version}\n")
        default_choice.cache_clear()

    yield put
    default_choice.cache_clear()


def test_nested_unknown_keys_and_bad_values_are_found_at_their_place(tmp_path):
    result = _check(tmp_path, NESTED, "--axolotl-version", "0.18.0", "--output-format", "json")
    found = _findings(result)
    assert [(code, line, col) for code, line, col, _ in found] == [
        ("AX010", 4, 5), ("AX010", 6, 3), ("AX012", 7, 12), ("AX012", 8, 15)]
    assert "did you mean `type`" in found[0][3]
    assert "did you mean `pad_token`" in found[1][3]
    assert "did you mean `adamw_torch_fused`" in found[2][3]
    assert "did you mean `cosine`" in found[3][3]


def _newer_only_key() -> str:
    old = load_schema("axolotl", "0.12.2")["properties"]
    new = load_schema("axolotl", "0.18.0")["properties"]
    return "context_parallel_size" if "context_parallel_size" not in old else sorted(set(new) - set(old))[0]


def test_key_of_a_newer_release_is_unknown_to_an_older_one(tmp_path):
    key = _newer_only_key()
    text = f"base_model: org/model\n{key}: 2\n"
    old = _check(tmp_path, text, "--axolotl-version", "0.12.2", "--output-format", "json")
    assert [(code, line) for code, line, _, _ in _findings(old)] == [("AX010", 2)]
    new = _check(tmp_path, text, "--axolotl-version", "0.18.0", "--output-format", "json")
    assert _findings(new) == []


def test_compute_grad_norm_is_refused_by_deepspeed_018(tmp_path):
    (tmp_path / "ds.json").write_text('{"zero_optimization": {"stage": 2, "compute_grad_norm": true}}',
                                      encoding="utf-8")
    text = "base_model: org/model\ndeepspeed: ds.json\n"
    old = _check(tmp_path, text, "--deepspeed-version", "0.18.9", "--output-format", "json")
    [(code, line, col, message)] = _findings(old)
    assert (code, line, col) == ("AX010", 1, 36) and "the launch fails on it" in message
    new = _check(tmp_path, text, "--deepspeed-version", "0.19.8", "--output-format", "json")
    assert _findings(new) == []


def test_without_installed_packages_the_newest_bundled_release_is_used(nothing_installed):
    newest = bundled("axolotl")[-1]["version"]
    assert (choose_versions().axolotl, choose_versions().axolotl_source) == (newest, "newest bundled")
    assert (choose_versions().deepspeed, choose_versions().deepspeed_source) == (
        "0.18.9", f"allowed by Axolotl {newest}")  # every bundled Axolotl from 0.15 wants DeepSpeed <0.19


def test_choice_order_flag_over_setting_over_installed(tmp_path, installed):
    installed(axolotl="0.14.0", deepspeed="0.19.8")
    assert (choose_versions().axolotl, choose_versions().axolotl_source) == ("0.14.0", "installed")
    assert (choose_versions().deepspeed, choose_versions().deepspeed_source) == ("0.19.8", "installed")
    text = "base_model: org/model\n"
    plain = _check(tmp_path, text)
    assert "schemas of Axolotl 0.14.0 (installed), DeepSpeed 0.19.8 (installed)" in plain.output
    by_setting = _check(tmp_path, text, settings='axolotl-version = "0.13.2"\n')
    assert "schemas of Axolotl 0.13.2 (set), DeepSpeed 0.19.8 (installed)" in by_setting.output
    by_flag = _check(tmp_path, text, "--axolotl-version", "0.17.0", settings='axolotl-version = "0.13.2"\n')
    assert "schemas of Axolotl 0.17.0 (set)" in by_flag.output


def test_installed_versions_reads_each_package_from_the_first_folder_that_has_it(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, names in ((first, ["Axolotl-0.14.0.dist-info", "deep.speed-notes.txt"]),
                          (second, ["axolotl-0.18.0.dist-info", "deep_speed-0.19.8.dist-info", "torch-2.9.dist-info"])):
        for name in names:
            (folder / name).mkdir(parents=True)
    monkeypatch.setattr("sys.path", [str(first), str(tmp_path / "missing"), str(second)])
    assert schema_check.installed_versions(["axolotl", "deepspeed"]) == {"axolotl": "0.14.0"}
    assert schema_check.installed_versions(["Deep-Speed", "peft"]) == {"Deep-Speed": "0.19.8"}
    assert schema_check.installed_versions([]) == {}


def test_release_between_or_before_bundled_ones_says_what_was_used(nothing_installed):
    between = choose_versions("0.18.5")
    assert between.axolotl == "0.18.0"
    assert between.notes == ("Axolotl 0.18.5 (set) has no bundled schema: checked with 0.18.0, the newest bundled "
                             "release before it",)
    older = choose_versions("0.9.0", "0.17.1")
    assert (older.axolotl, older.deepspeed) == ("0.12.2", "0.18.9")
    assert older.notes == ("Axolotl 0.9.0 (set) is older than every bundled schema: checked with 0.12.2",
                           "DeepSpeed 0.17.1 (set) is older than every bundled schema: checked with 0.18.9")


def test_outputs_name_the_versions(tmp_path, nothing_installed):
    text = "base_model: org/model\nzzz_qqq: 1\n"
    full = _check(tmp_path, text, "--axolotl-version", "0.18.3")
    assert ("schemas of Axolotl 0.18.0 (set), DeepSpeed 0.18.9 (allowed by Axolotl 0.18.0); Axolotl 0.18.3 (set) "
            "has no bundled schema") in full.output
    [finding] = json.loads(_check(tmp_path, text, "--axolotl-version", "0.18.0", "--output-format", "json").stdout)
    assert finding["schemas"] == {"axolotl": "0.18.0", "deepspeed": "0.18.9", "axolotl_source": "set",
                                  "deepspeed_source": "allowed by Axolotl 0.18.0"}
    sarif = json.loads(_check(tmp_path, text, "--axolotl-version", "0.18.0", "--output-format", "sarif").stdout)
    assert sarif["runs"][0]["results"][0]["properties"]["schemas"]["axolotl"] == "0.18.0"


def test_bad_version_is_a_usage_error(tmp_path):
    result = _check(tmp_path, "base_model: org/model\n", "--axolotl-version", "latest")
    assert result.exit_code == 2 and "not a release number" in result.output


def test_the_chosen_release_supplies_the_defaults_and_the_known_keys(tmp_path):
    """`--axolotl-version` reaches the run's defaults (`TrainingRun.config`) and the classification of a file."""
    from axlint.kind import ConfigKind, classify_data
    from axlint.lint import LintOptions, lint_text

    options = LintOptions([], schemas=choose_versions("0.12.2", "0.18.9"))
    path = tmp_path / "config.yml"
    path.write_text("base_model: org/model\n", encoding="utf-8")
    [run] = lint_text(path, None, options).runs
    assert run.config["max_prompt_len"] == 512 and "include_tkps" not in run.config  # 0.12.2's defaults
    [run] = lint_text(path, None, LintOptions([], schemas=choose_versions("0.19.0", "0.18.9"))).runs
    assert run.config["include_tkps"] is True and run.config.get("max_prompt_len") is None
    newer_keys = {key: 1 for key in ("eaft_alpha", "eaft_k", "nemo_gym_enabled")}  # none of them in 0.12.2
    assert classify_data(newer_keys, choose_versions("0.19.0")).kind is ConfigKind.AXOLOTL
    assert classify_data(newer_keys, choose_versions("0.12.2")).kind is ConfigKind.OTHER


def test_removed_keys_are_errors_where_the_release_refuses_them(tmp_path):
    text = "base_model: org/model\nmax_packed_sequence_len: 2048\n"
    new = _findings(_check(tmp_path, text, "--axolotl-version", "0.18.0", "--output-format", "json"))
    assert [code for code, *_ in new] == ["AX016"] and "Axolotl 0.18.0 refuses to start" in new[0][3]
    old = _check(tmp_path, text, "--axolotl-version", "0.12.2", "--output-format", "json", "--fail-on", "error")
    assert [code for code, *_ in _findings(old)] == ["AX013"] and old.exit_code == 0
    refused = _check(tmp_path, text, "--axolotl-version", "0.18.0", "--fail-on", "error")
    assert refused.exit_code == 1
def test_the_generators_write_and_check_release_files(tmp_path, capsys):
    """`tools/schemagen.write_releases`, which both generators use: files and index written, then `--check`
    passes while they are current and fails once one is edited."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "schemagen.py"
    spec = importlib.util.spec_from_file_location("schemagen", path)
    schemagen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(schemagen)
    releases = [({"properties": {"a": {}}, "$defs": {}}, {"version": "1.0", "file": "1.0.schema.json"})]
    assert schemagen.write_releases(tmp_path, "pkg", iter(releases), check=False) == 0
    assert json.loads((tmp_path / "versions.json").read_text()) == {"pkg": [releases[0][1]]}
    assert schemagen.write_releases(tmp_path, "pkg", iter(releases), check=True) == 0
    (tmp_path / "1.0.schema.json").write_text("{}\n")
    assert schemagen.write_releases(tmp_path, "pkg", iter(releases), check=True) == 1
    assert "stale: 1.0.schema.json; run tools/gen_pkg_schema.py" in capsys.readouterr().out


def test_the_adapter_rule_follows_the_chosen_release(tmp_path):
    """AX223 reads the adapters a release's `validate_adapter` takes from that release's schema: 0.18.0 refuses
    `qlroa`; 0.16.1's schema records none (no such validator to mirror), so nothing is said."""
    from axlint.packs import load_rules, select_rules
    from axlint.lint import LintOptions, lint_text

    rules = select_rules(load_rules(), select=["AX223"])
    text = "base_model: x\nadapter: qlroa\n"

    def codes(version: str) -> list[str]:
        options = LintOptions(rules, schemas=choose_versions(axolotl=version, deepspeed="0.18.9"))
        return [d.code for d in lint_text(tmp_path / "c.yml", text, options).diagnostics]

    assert codes("0.18.0") == ["AX223"]
    assert codes("0.16.1") == []
