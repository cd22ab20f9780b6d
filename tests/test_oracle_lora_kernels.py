"""Which fused LoRA kernels a run gets (``RunFacts.lora_kernels``), held to Axolotl 0.18.0's start-up
validation (the oracle venv of tests/oracle), which turns them on by itself for most LoRA and QLoRA runs: every
vendored example config with an adapter, and the cases that turn the default off, on one GPU and on eight."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from axlint.facts import resolve_facts
from tests.oracle.venv import judge, oracle_python
from tests.test_oracle import CAPABILITIES
from tests.test_oracle_rule_cases import BASE

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "fixtures" / "axolotl" / "examples"

CASES = {
    "qlora": {"adapter": "qlora", "load_in_4bit": True},
    "lora": {"adapter": "lora"},
    "lora 8-bit": {"adapter": "lora", "load_in_8bit": True},
    "qlora, mlp kernel off": {"adapter": "qlora", "load_in_4bit": True, "lora_mlp_kernel": False},
    "lora, qkv kernel on": {"adapter": "lora", "lora_qkv_kernel": True},
    "lora, remote code": {"adapter": "lora", "trust_remote_code": True},
    "lora, FSDP1": {"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}, "fsdp_version": 1},
    "lora, FSDP2": {"adapter": "lora", "fsdp_config": {"reshard_after_forward": True}, "fsdp_version": 2},
    "full fine-tune": {},
    "lora reward model": {"adapter": "lora", "reward_model": True},
}


def _examples() -> list[Path]:
    out = []
    for path in sorted([*EXAMPLES.rglob("*.yml"), *EXAMPLES.rglob("*.yaml")]):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and raw.get("adapter") in ("lora", "qlora"):
            out.append(path)
    return out


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[tuple[str, int], tuple[dict, dict]]:
    """(name, GPUs) -> (the config as written, Axolotl's answer)."""
    root = tmp_path_factory.mktemp("kernels")
    configs: dict[str, dict] = {}
    for i, (name, keys) in enumerate(CASES.items()):
        configs[name] = {**BASE, **keys}
        (root / f"case{i:02d}.yml").write_text(yaml.safe_dump(configs[name], sort_keys=False), encoding="utf-8")
    files = {name: f"case{i:02d}.yml" for i, name in enumerate(CASES)}
    for path in _examples():
        name = str(path.relative_to(EXAMPLES))
        configs[name] = yaml.safe_load(path.read_text(encoding="utf-8"))
        files[name] = str(path)
    out = {}
    for gpus in (1, 8):
        caps = {**CAPABILITIES, "n_gpu": gpus}
        judged = judge(oracle_python(), [{"id": f, "capabilities": caps} for f in files.values()], root,
                       script="kernels_judge.py")
        out.update({(name, gpus): (configs[name], judged[f]) for name, f in files.items()})
    return out


def test_the_cases_and_the_examples_get_the_kernels_axolotl_turns_on(answers) -> None:
    compared = [(name, gpus, resolve_facts(raw, world_size=gpus).lora_kernels, tuple(answer["kernels"]))
                for (name, gpus), (raw, answer) in answers.items() if not answer["error"]]
    wrong = [f"{name} on {gpus} GPU(s): axlint {mine}, Axolotl {theirs}" for name, gpus, mine, theirs in compared
             if mine != theirs]
    assert not wrong, "\n".join(wrong)
    assert len(compared) >= 150  # the cases and most examples are accepted by Axolotl and compared
    by_case = {(name, gpus): theirs for name, gpus, _, theirs in compared if name in CASES}
    assert by_case[("qlora", 1)] == ("mlp", "qkv", "o", "embedding")
    assert by_case[("lora 8-bit", 1)] == () and by_case[("lora, FSDP1", 8)] == ()
    assert by_case[("lora, FSDP1", 1)] == by_case[("lora, FSDP2", 8)] == ("mlp", "qkv", "o", "embedding")
    assert by_case[("qlora, mlp kernel off", 1)] == () and by_case[("lora, qkv kernel on", 8)] == ("qkv",)
    assert by_case[("lora reward model", 1)] == ("mlp", "qkv", "o", "embedding")  # AX234: the patch then refuses it
