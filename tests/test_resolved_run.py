"""One resolved run: odd spellings are read the way the real stack reads them, and every consumer agrees.

Each case writes an Axolotl YAML (and its DeepSpeed JSON), builds the run as `axlint check` does, and compares
what the rules see (`run.facts`, the `facts:` condition prefix, the checks that read them), what the estimator and
the solver see (`read_setup`), what `--simulate` sees (`train_spec` + the ZeRO stage it shards by) and what a
`validate` rank sees (its job dict after a JSON round trip, resolved again in the worker).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from axlint.document import load_document
from axlint.conditions import lookup
from axlint.packs import load_rules, select_rules
from axlint.facts import LossKernel, Origin, ShardingKind, precision_flags, resolve_facts
from axlint.hardware import parse_hardware
from axlint.lint import LintOptions, lint_text
from axlint.memory.setup import read_setup
from axlint.run import build_run
from axlint.training.spec import job_facts, train_spec

BASE = {"base_model": "meta-llama/Llama-3.1-8B", "learning_rate": 2e-5, "micro_batch_size": 1,
        "gradient_accumulation_steps": 1, "datasets": [{"path": "tatsu-lab/alpaca", "type": "alpaca"}]}
ZERO3 = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto",
         "gradient_accumulation_steps": "auto", "bf16": {"enabled": "auto"}}


def _run(tmp_path: Path, config: dict[str, Any], ds: dict[str, Any] | None = None, hardware: str = "8xH100"):
    if ds is not None:
        (tmp_path / "ds.json").write_text(json.dumps(ds), encoding="utf-8")
        config = {**config, "deepspeed": "ds.json"}
    path = tmp_path / "train.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return build_run(load_document(path), hardware=parse_hardware(hardware))


HALF = "a 2-byte dtype"
"""The estimator counts bytes, not dtypes: bf16 and fp16 both read as this."""


def _same(values: list[Any]) -> bool:
    kinds = {HALF if v in ("bfloat16", "float16") else v for v in values}
    return len(kinds) == 1


def _consumers(run) -> dict[str, dict[str, Any]]:
    """What each consumer of the run reads, in one vocabulary."""
    arch = run.arch
    setup = read_setup(run.facts, arch)
    spec = train_spec(run.facts)
    job = json.loads(json.dumps({"model_type": arch.model_type, "model_config": dict(arch.config),
                                 "axolotl": run.raw, "ds_raw": run.ds_raw, "world_size": run.world_size}))
    worker = job_facts(job)
    worker_spec = train_spec(worker)
    return {
        "rules": {"micro_batch_size": lookup(run, "facts:micro_batch_size"),
                  "sequence_len": run.facts.sequence_len.value,
                  "gas": lookup(run, "facts:gradient_accumulation_steps"), "dtype": run.facts.dtype.value,
                  "attention": run.facts.attention, "zero_stage": run.zero_stage,
                  "checkpointing": lookup(run, "facts:gradient_checkpointing"),
                  "quantization": run.facts.quantization.value},
        "estimate": {"micro_batch_size": setup.micro_batch_size, "sequence_len": setup.sequence_len,
                     "gas": setup.gradient_accumulation_steps, "dtype": "float32" if setup.param_bytes == 4 else HALF,
                     "attention": setup.attn_implementation, "zero_stage": setup.sharding.stage,
                     "checkpointing": setup.gradient_checkpointing, "quantization": setup.quantization},
        "simulate": {"micro_batch_size": spec.micro_batch_size, "sequence_len": spec.sequence_len,
                     "gas": spec.gradient_accumulation_steps, "dtype": spec.dtype,
                     "attention": spec.attn_implementation,
                     "zero_stage": run.facts.sharding.stage, "checkpointing": spec.gradient_checkpointing,
                     "quantization": spec.quantization},
        "validate": {"micro_batch_size": worker_spec.micro_batch_size, "sequence_len": worker_spec.sequence_len,
                     "gas": worker_spec.gradient_accumulation_steps, "dtype": worker_spec.dtype,
                     "attention": worker_spec.attn_implementation, "zero_stage": worker.zero_stage.value,
                     "checkpointing": worker_spec.gradient_checkpointing, "quantization": worker_spec.quantization},
    }


ODD = [
    pytest.param({"micro_batch_size": "2", "sequence_len": "4096"}, None,
                 {"micro_batch_size": 2, "sequence_len": 4096}, id="quoted numbers"),
    pytest.param({"micro_batch_size": 2.0, "gradient_checkpointing": "true"}, None,
                 {"micro_batch_size": 2, "checkpointing": True}, id="float batch, quoted boolean"),
    pytest.param({"flash_attention": "true"}, None, {"attention": "flash_attention_2"}, id="quoted legacy flag"),
    pytest.param({"flash_attention": "false"}, None, {"attention": "flash_attention_2"},
                 id="legacy flag read for truthiness"),
    pytest.param({"xformers_attention": True, "flash_attention": True}, None, {"attention": "xformers"},
                 id="legacy flag priority"),
    pytest.param({}, None, {"sequence_len": 512, "attention": "sdpa", "dtype": "bfloat16"}, id="defaults"),
    pytest.param({"gradient_accumulation_steps": None, "batch_size": 32, "micro_batch_size": 4}, None,
                 {"gas": 8, "micro_batch_size": 4}, id="batch_size derives accumulation"),
    pytest.param({"adapter": "lora", "load_in_4bit": True, "load_in_8bit": True}, None, {"quantization": "int8"},
                 id="lora with both quantization flags loads 8-bit"),
    pytest.param({"adapter": "qlora", "load_in_4bit": "yes"}, None, {"quantization": "nf4"}, id="qlora yes"),
    pytest.param({}, {**ZERO3, "zero_optimization": {"stage": "3"}}, {"zero_stage": 3}, id="quoted ZeRO stage"),
    pytest.param({}, {**ZERO3, "zero_optimization": {"stage": 3.0}}, {"zero_stage": 3}, id="float ZeRO stage"),
    pytest.param({"bf16": False, "fp16": False}, None, {"dtype": "float32"}, id="fp32"),
]


@pytest.mark.parametrize(("config", "ds", "expected"), ODD)
def test_every_consumer_reads_the_same_facts(tmp_path: Path, config, ds, expected) -> None:
    run = _run(tmp_path, {k: v for k, v in {**BASE, **config}.items() if v is not None}, ds)
    seen = _consumers(run)
    for name, value in expected.items():
        assert seen["rules"][name] == value, (name, seen["rules"][name])
    for name in seen["rules"]:
        views = {consumer: facts[name] for consumer, facts in seen.items()}
        assert _same(list(views.values())), (name, views)


def test_bf16_auto_follows_the_gpu(tmp_path: Path) -> None:
    """`bf16: auto` (the default) is bf16 on a GPU that has it, fp16 on one that does not (resolve_dtype)."""
    ampere = _run(tmp_path, BASE, hardware="1xA100-80GB").facts
    volta = _run(tmp_path, BASE, hardware="1xV100-32GB").facts
    assert (ampere.bf16.value, ampere.fp16.value, ampere.dtype.value) == (True, False, "bfloat16")
    assert (volta.bf16.value, volta.fp16.value, volta.dtype.value) == (False, True, "float16")


@pytest.mark.parametrize("written", [
    {}, {"bf16": "auto"}, {"bf16": True}, {"bf16": "false"}, {"fp16": True}, {"bf16": "auto", "fp16": False},
    {"bf16": False, "fp16": None}, {"float16": True}, {"bfloat16": True, "fp16": "yes"}, {"load_in_8bit": True},
])
@pytest.mark.parametrize("bf16_capable", [True, False])
def test_precision_flags_are_the_resolved_bf16_and_fp16(written: dict[str, Any], bf16_capable: bool) -> None:
    """DS106 asks for the precision on a GPU without bf16 without resolving every fact: the same answer."""
    facts = resolve_facts(written, bf16_capable=bf16_capable)
    assert precision_flags(written, bf16_capable=bf16_capable) == (facts.bf16.value, facts.fp16.value)


def test_each_fact_keeps_the_key_it_came_from(tmp_path: Path) -> None:
    run = _run(tmp_path, {**BASE, "sdp_attention": True, "batch_size": 16, "gradient_accumulation_steps": None},
               {**ZERO3, "zero_optimization": {"stage": "3"}})
    facts = run.facts
    assert facts.attn_implementation.key == ("sdp_attention",) and facts.attn_implementation.origin is Origin.DERIVED
    assert facts.gradient_accumulation_steps.key == ("batch_size",)
    doc, span = run.ds_span(facts.zero_stage.key)
    assert doc.path.name == "ds.json" and span.line == 1
    assert facts.sequence_len.key is None and facts.sequence_len.origin is Origin.DEFAULT
    assert facts.sharding.kind is ShardingKind.DEEPSPEED and facts.ds["train_micro_batch_size_per_gpu"] == 1


def test_loss_kernel_follows_the_plugins() -> None:
    cce = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"
    liger = "axolotl.integrations.liger.LigerPlugin"
    assert resolve_facts({"plugins": [cce]}).loss.value is LossKernel.CCE
    assert resolve_facts({"plugins": [cce], "cut_cross_entropy": "false"}).loss.value is LossKernel.HF
    assert resolve_facts({"liger_fused_linear_cross_entropy": True}).loss.value is LossKernel.HF
    assert resolve_facts({"plugins": [liger], "liger_fused_linear_cross_entropy": "yes"}).loss.value \
        is LossKernel.LIGER_FLCE


def test_a_check_reads_the_resolved_attention(tmp_path: Path) -> None:
    """`flash_attention: "true"` with packing: Axolotl turns flash attention on, so the packing rule stays quiet;
    with no backend at all it fires."""
    def codes(config: dict[str, Any]) -> set[str]:
        text = yaml.safe_dump({**BASE, **config})
        result = lint_text(tmp_path / "p.yml", text, LintOptions(select_rules(load_rules(), select=["AX107"])))
        return {d.code for d in result.diagnostics}

    assert "AX107" not in codes({"sample_packing": True, "flash_attention": "true"})
    assert "AX107" in codes({"sample_packing": "yes"})


@pytest.mark.parametrize("version", ["0.18.0", "0.19.0"])
def test_the_defaults_facts_assume_are_axolotls(version: str) -> None:
    """The defaults `axlint.facts` applies when a key is not written are the ones in Axolotl's own schema."""
    from axlint.run import axolotl_defaults

    defaults = axolotl_defaults(version)
    facts = resolve_facts({})
    assert facts.sequence_len.value == defaults["sequence_len"]
    assert facts.micro_batch_size.value == defaults["micro_batch_size"]
    assert facts.gradient_accumulation_steps.value == defaults["gradient_accumulation_steps"]
    assert facts.optimizer.value == defaults["optimizer"]
    assert facts.lora.dropout == defaults["lora_dropout"]
    assert defaults["bf16"] == "auto" and facts.bf16.value is True  # auto on a bf16-capable GPU
    assert defaults["cut_cross_entropy"] is True  # the CCE plugin's default that `facts.loss` assumes


def test_a_zero_hyperparameter_stays_zero() -> None:
    """`adam_beta1: 0` or `weight_decay: 0` is a value, not "unset": the DeepSpeed "auto" fill gets 0."""
    facts = resolve_facts({"adam_beta1": 0, "adam_epsilon": "1e-6", "max_grad_norm": 0.0},
                          {"optimizer": {"params": {"betas": "auto", "eps": "auto"}}, "gradient_clipping": "auto"})
    assert facts.adam_betas == (0.0, 0.999) and facts.adam_epsilon == 1e-6 and facts.max_grad_norm == 0.0
    assert facts.ds["optimizer"]["params"] == {"betas": [0.0, 0.999], "eps": 1e-6}
    assert facts.ds["gradient_clipping"] == 0.0


@pytest.mark.parametrize(("written", "kernels"), [
    ({"expert_backend": "sonicmoe"}, ("sonicmoe",)), ({"expert_backend": "ScatterMoE"}, ("scattermoe",)),
    ({"use_scattermoe": True}, ("scattermoe",)), ({"expert_backend": "eager"}, ()),
])
def test_the_expert_backend_turns_its_kernel_path_on_as_axolotl_canonicalizes_it(written, kernels):
    """Axolotl writes `expert_backend` onto use_scattermoe / use_sonicmoe (`_canonicalize_expert_backend`); without
    the Kernels plugin listed none of them does anything."""
    plugin = {"plugins": ["axolotl.integrations.kernels.KernelsPlugin"]}
    assert resolve_facts({**plugin, **written}).expert_kernels == kernels
    assert resolve_facts(written).expert_kernels == ()
