"""The real stack as the judge: Axolotl 0.18.0's start-up validation (tests/oracle) against axlint's errors.

The vendored corpus and `COUNT` seeded mutations of it are written to a scratch folder laid out like Axolotl's
repository (so `deepspeed: deepspeed_configs/...` resolves as it does there) and judged twice: by the real
Axolotl, run in its own pinned venv (`load_cfg`'s steps: plugins, then `validate_config` with the capabilities of
axlint's default hardware, 8×H100), and by `axlint check` with every rule except the memory estimate (whose
verdicts are judged against GPU measurements elsewhere: start-up validation allocates nothing).

- Every config Axolotl refuses gets an axlint error, at the key the refusal names where it names one, or its
  refusal matches an entry of `KNOWN_MISSES`, each with the reason axlint does not catch it.
- Every axlint error on a config Axolotl accepts belongs to a rule whose docs say, under `silent_failure`, what
  the stack silently does instead (a typo'd key dropped, a DeepSpeed setting ignored, weights saved empty).
The confusion table is written to build/oracle/confusion.md, every record to build/oracle/confusion-records.json.
"""
from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from axlint.diagnostics import Severity
from axlint.packs import load_rules, select_rules
from axlint.lint import LintOptions, lint_text
from axlint.schemas.validator import choose_versions
from tests.corpus import CORPUS
from tests.oracle.compare import known_miss, later_stage, write_table
from tests.oracle.mutations import mutate
from tests.oracle.venv import judge, oracle_python

SEED = 20261123
COUNT = 2000
CAPABILITIES = {"bf16": True, "fp8": True, "n_gpu": 8, "n_node": 1, "compute_capability": "sm_90"}
"""What Axolotl's `gpu_capabilities()` reports on axlint's default hardware, 8×H100-80GB on one node."""

SCHEMAS = choose_versions(axolotl="0.18.0", deepspeed="0.18.9")
"""axlint checks against the schemas of the releases that judge it."""
RULES = select_rules(load_rules(), ignore=["MEM"])
SILENT = {r.code for r in RULES if r.docs.get("silent_failure")}

KNOWN_MISSES: dict[str, str] = {
    r"'EBFTConfig' object has no attribute 'get'": "a bug in Axolotl 0.18.0 itself: its EBFT validator calls "
                                                   "`.get` on the parsed `ebft:` block, so every `rl: ebft` config "
                                                   "crashes validation",
    r"^Value error, GRPO with world_size=": "GRPO's one-group-per-GPU check depends on the GPU count: the oracle "
                                            "judges with 8 GPUs, while axlint assumes one GPU for a config without "
                                            "DeepSpeed or FSDP; AX215 applies it with `--hardware`",
}
"""Regex over Axolotl's refusal -> why axlint does not report it. Every entry must still match a refusal."""

KERNEL_PATCH_STAGE: dict[tuple[str, str], str] = {
    ("AX233", ""): "`validate_config` turns Axolotl's LoRA kernels on; the run stops a step later, before the weights "
                   "load, where the QKV / O kernels' rewrite of the model's attention fails (`patch_self_attn_lora`; "
                   "judged for every catalogued model type in tests/test_oracle_lora_kernel_patch.py)",
    ("AX234", ""): "`validate_config` turns Axolotl's LoRA kernels on for a reward model; the run stops after the "
                   "model loads, where the kernel patch refuses PEFT's classification model "
                   "(tests/test_oracle_lora_kernel_patch.py)",
    ("AX235", ""): "`validate_config` accepts a written `lora_mlp_kernel: true` on a model whose layers are not at "
                   "`model.layers`; the run stops after the model loads, where the kernel patch cannot find them "
                   "(tests/test_oracle_lora_kernel_patch.py)",
    ("AX237", ""): "`validate_config` turns Axolotl's LoRA kernels on for a QLoRA whose MLP activation CUDA's "
                   "autocast makes fp32; the run stops at its first training step, where the QKV kernel gets fp32 "
                   "hidden states (tests/test_oracle_lora_qkv_dtype.py; measured on an H200)",
    ("AX238", ""): "`validate_config` accepts packed sdpa for a QLoRA whose MLP activation CUDA's autocast makes "
                   "fp32; the run stops at its first training step, where PyTorch's variable-length attention gets "
                   "fp32 queries (tests/test_oracle_lora_qkv_dtype.py; measured on an H200)",
    ("AX243", ""): "`validate_config` accepts a written `lora_mlp_kernel: true` on a QLoRA whose LayerNorm CUDA's "
                   "autocast runs in fp32; the run stops at its first training step, where the MLP kernel gets fp32 "
                   "hidden states (tests/test_oracle_lora_qkv_dtype.py)",
}
"""Errors of the rules whose launch failure is in Axolotl's kernel patching or kernels, after start-up
validation."""

LATER_STAGE: dict[tuple[str, str], str] = {
    ("DS000", ""): "a `deepspeed:` file that does not exist passes Axolotl's validation; the HF Trainer fails to "
                   "open it a step later, at launch",
    ("AX132", ""): "new `tokens` with an adapter pass `validate_config`; Axolotl refuses them a step later, in "
                   "`check_model_config` (loaders/utils.py) once it has read the model's config.json, before the "
                   "weights load",
    ("AX011", "flash_attention"): "legacy attention flags are read for truthiness and removed before pydantic "
                                  "checks their type, so a list there still turns flash attention on",
    ("AX012", "optimizer"): "Axolotl types `optimizer` as any string; an unknown name passes `validate_config` and "
                            "stops the launch when the trainer builds TrainingArguments (\"is not a valid "
                            "OptimizerNames\", transformers 5.14.1), after the model and the data are loaded",
    ("AX012", "lr_scheduler"): "Axolotl types `lr_scheduler` as any string; an unknown name stops the launch when the "
                               "trainer builds TrainingArguments (\"is not a valid SchedulerType\", transformers "
                               "5.14.1), after the model and the data are loaded",
    ("AX236", ""): "the model type is not known at `validate_config`; the Cut Cross Entropy or Liger plugin refuses "
                   "a model type its support declares unsupported a step later, in `pre_model_load`, before the "
                   "weights load (tests/test_oracle_model_support.py)",
    ("AX239", ""): "`validate_config` accepts LoRA targets whatever they reach; the run stops after the model loads, "
                   "where PEFT wraps it and refuses a target (tests/test_oracle_lora_targets.py)",
    **KERNEL_PATCH_STAGE,
}
"""(code, key the error is at, "" for any) of errors on accepted configs that are right for another reason than
a silent failure, with that reason."""


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> list[dict]:
    """One record per judged config: path, how it was made, Axolotl's verdict, axlint's errors."""
    root = tmp_path_factory.mktemp("oracle")
    shutil.copytree(CORPUS / "deepspeed_configs", root / "deepspeed_configs")
    made: dict[str, str] = {}
    bases: dict[str, dict] = {}
    for path in sorted([*CORPUS.glob("examples/**/*.yml"), *CORPUS.glob("examples/**/*.yaml")]):
        rel = path.relative_to(CORPUS).as_posix()
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "base_model" in data:  # the cloud launchers' YAMLs are not training configs
            bases[rel] = data
            made[rel] = "corpus"
    python = oracle_python()
    first = judge(python, [{"id": rel, "capabilities": CAPABILITIES} for rel in made], root)
    accepted = {rel: cfg for rel, cfg in bases.items() if first[rel]["verdict"] == "accepted"}
    for i, m in enumerate(mutate(accepted, COUNT, SEED)):
        rel = f"mutations/{i:04d}.yml"
        (root / "mutations").mkdir(exist_ok=True)
        (root / rel).write_text(yaml.safe_dump(m.config, sort_keys=False), encoding="utf-8")
        made[rel] = f"{m.base}: {m.name}"
    second = judge(python, [{"id": rel, "capabilities": CAPABILITIES} for rel in made if rel.startswith("mut")], root)
    options = LintOptions(RULES, schemas=SCHEMAS)
    records = []
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        for rel, how in made.items():
            verdict = first.get(rel) or second[rel]
            result = lint_text(Path(rel), None, options)
            errors = [d for d in result.diagnostics if d.severity is Severity.ERROR]
            text = (root / rel).read_text(encoding="utf-8")
            records.append({"path": rel, "how": how, **verdict, "text": text,
                            "errors": [(d.code, d.path.as_posix(), d.span.line, _key_at(text, d))
                                       for d in errors]})
    write_table(records, f"axlint against Axolotl 0.18.0's start-up validation ({len(records)} configs, seed {SEED})",
                "confusion")
    return records


def _key_at(text: str, diag) -> str:
    """The top-level key whose block holds the finding's line ("" when it is not in that file)."""
    if diag.path.as_posix().endswith(".json"):
        return ""
    for line in reversed(text.splitlines()[: diag.span.line]):
        match = re.match(r"([A-Za-z_][\w-]*)\s*:", line)
        if match:
            return match.group(1)
    return ""


def _later_stage(code: str, key: str) -> bool:
    return later_stage(code, key, LATER_STAGE)


def _known_miss(error: str) -> str | None:
    return known_miss(error, KNOWN_MISSES)


def _key_lines(text: str, key: str) -> range | None:
    """Lines (1-based) of top-level `key` and its block in a YAML text, None when it is not there."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(rf"{re.escape(key)}\s*:", line)), None)
    if start is None:
        return None
    end = next((j for j in range(start + 1, len(lines)) if lines[j][:1] not in ("", " ", "-", "#")), len(lines))
    return range(start + 1, end + 1)


def test_the_oracle_judged_the_corpus_and_the_mutations(verdicts):
    counts = Counter(r["verdict"] for r in verdicts)
    assert len(verdicts) >= COUNT + 240
    assert {r["path"] for r in verdicts if r["how"] == "corpus"} >= {"examples/llama-3/lora-1b.yml"}
    assert counts["accepted"] > 0 and counts["refused"] > 200, counts


def test_every_refused_config_gets_an_error(verdicts):
    missed = [f"{r['path']} ({r['how']}): {r['error']}" for r in verdicts
              if r["verdict"] == "refused" and not r["errors"] and _known_miss(r["error"]) is None]
    assert not missed, f"{len(missed)} configs Axolotl refuses pass axlint:\n" + "\n".join(missed[:60])


def test_the_error_is_at_the_key_axolotl_names(verdicts):
    wrong = []
    for r in verdicts:
        if r["verdict"] != "refused" or not r["errors"] or not r["locs"] or not r["locs"][0]:
            continue
        lines = _key_lines(r["text"], r["locs"][0][0])
        if _known_miss(r["error"]) is not None:
            continue
        own = [line for _, path, line, _ in r["errors"] if path == r["path"]]
        if lines is not None and own and not any(line in lines for line in own):
            wrong.append(f"{r['path']} ({r['how']}): Axolotl names `{'.'.join(r['locs'][0])}`, "
                         f"axlint's errors are at lines {own}")
    assert not wrong, "\n".join(wrong[:40])


def test_errors_on_accepted_configs_name_the_silent_failure(verdicts):
    unexplained = [f"{r['path']} ({r['how']}): {code}" for r in verdicts if r["verdict"] == "accepted"
                   for code, _, _, key in r["errors"] if code not in SILENT and not _later_stage(code, key)]
    assert not unexplained, (f"{len(unexplained)} errors on configs Axolotl accepts, from rules whose docs name "
                             "no silent failure:\n" + "\n".join(unexplained[:60]))


def test_every_known_miss_still_happens(verdicts):
    used = {_known_miss(r["error"]) for r in verdicts if r["verdict"] == "refused" and not r["errors"]}
    assert set(KNOWN_MISSES) <= used, set(KNOWN_MISSES) - used
