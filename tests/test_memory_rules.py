"""The memory rules (MEM, PERF) beyond their pack cases: the hardware assumption, one estimate per run, what they
say about the bundled fixtures and the corpus, their fixes, and the solver's additions they stand on."""
from __future__ import annotations

from pathlib import Path

import pytest

from axlint.architectures import resolve_architecture
from axlint.checks import memory as mem
from axlint.diagnostics import Severity
from axlint.document import load_document
from axlint.packs import load_rules, select_rules
from axlint.fixes import Applicability
from axlint.hardware import parse_hardware
from axlint.lint import LintOptions, lint_text
from axlint.memory.knobs import Change, Knob, Saver, Step
from axlint.memory.solver import Suggestion, eval_batch_candidates, relax, single_knob_fixes
from axlint.report.memory_text import changes_text, description, step_text, throughput_text
from axlint.run import build_run
from tests.corpus import CORPUS as CORPUS_ROOT
from tests.resolved import facts

ROOT = Path(__file__).resolve().parents[1]
FFT = ROOT / "fixtures" / "llama3-8b-fft-zero3.yml"
LORA = ROOT / "fixtures" / "llama3-8b-lora.yml"
CORPUS = CORPUS_ROOT / "examples"
MEMORY_RULES = select_rules(load_rules(), ["MEM", "PERF"])
L8B = resolve_architecture("meta-llama/Llama-3.1-8B")
LORA_8K = """\
base_model: meta-llama/Llama-3.1-8B
adapter: lora
lora_r: 16
lora_target_linear: true
sequence_len: 8192
sample_packing: true
micro_batch_size: 2
bf16: true
flash_attention: true
plugins:
  - axolotl.integrations.liger.LigerPlugin
liger_fused_linear_cross_entropy: true
"""


def lint(path: Path, hardware: str | None = None, select: tuple[str, ...] = ("MEM", "PERF")):
    rules = select_rules(load_rules(), list(select))
    return lint_text(path, None, LintOptions(rules, parse_hardware(hardware) if hardware else None)).diagnostics


def write(tmp_path: Path, text: str, name: str = "config.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------- hardware


@pytest.mark.parametrize(("text", "count"), [
    ("base_model: x\n", 1),
    ("base_model: x\ndeepspeed: deepspeed_configs/zero3_bf16.json\n", 8),
    ("base_model: x\nfsdp_config:\n  reshard_after_forward: true\n", 8),
])
def test_build_run_assumes_80gb_cards_one_or_eight(tmp_path, text, count):
    run = build_run(load_document(write(tmp_path, text)))
    assert (run.hardware.gpu, run.hardware.count, run.hardware.assumed) == ("H100-80GB", count, True)
    assert run.world_size == count and run.world_size_assumed


def test_the_summary_lists_the_assumed_gpus_by_count():
    from axlint.lint import RunScope
    from axlint.report import assumed_hardware

    labels = ["16×H100-80GB", "1×H100-80GB", "8×H100-80GB", "2×H100-80GB"]
    scopes = [RunScope(label, None) for label in labels]
    assert assumed_hardware(scopes, load_rules()) == ["1×H100-80GB", "2×H100-80GB", "8×H100-80GB", "16×H100-80GB"]


def test_mem007_on_one_gpu_names_no_data_parallelism():
    """Mistral Medium 3.5 QLoRA on one H100: the run has no sharding to raise, and ZeRO-3 offload fits."""
    diags = lint(CORPUS_ROOT / "examples/mistral-medium-3_5/qlora-text.yml", select=("MEM007",))
    assert [d.message.split(" does not fit")[0] for d in diags] == ["one GPU without ZeRO or FSDP"]


def test_given_hardware_is_not_assumed(tmp_path):
    run = build_run(load_document(write(tmp_path, "base_model: x\n")), hardware=parse_hardware("2x24GiB"))
    assert (run.hardware.count, run.hardware.memory_gib, run.world_size, run.hardware.assumed) == (2, 24.0, 2, False)


def test_messages_say_the_hardware_is_assumed():
    messages = [d.message for d in lint(FFT)]
    assert messages and all("assuming 8×H100-80GB; pass --hardware" in m for m in messages)
    given = [d.message for d in lint(FFT, "8xH100")]
    assert given and all("on 8×H100-80GB" in m and "assuming" not in m for m in given)


def test_check_never_asks_the_local_gpus(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("nvidia-smi must not run inside check")

    monkeypatch.setattr("axlint.hardware.detect_local_gpus", refuse)
    monkeypatch.setattr("subprocess.run", refuse)
    assert lint(FFT)


# ---------------------------------------------------------------------------------------------------- one estimate


def test_the_estimate_is_computed_once_per_run(monkeypatch):
    import axlint.memory.estimate as estimate_module

    calls = []
    real = estimate_module.estimate_memory
    monkeypatch.setattr(estimate_module, "estimate_memory", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert len({d.code for d in lint(FFT)}) >= 3
    assert len(calls) == 1


# ---------------------------------------------------------------------------------------------------- fixtures


def test_fft_fixture_tells_the_readme_story():
    """Llama 3.1 8B full fine-tune, 4 × 8192 packed tokens, no checkpointing, HF loss, eval batch 8, ZeRO-3."""
    found = {d.code: d for d in lint(FFT)}
    assert set(found) == {"MEM001", "MEM003", "MEM004", "MEM006"}
    oom = found["MEM001"]
    assert oom.severity is Severity.ERROR and "activations" in oom.message and "logits + loss" in oom.message
    assert FFT.read_text().splitlines()[oom.span.line - 1].startswith("gradient_checkpointing: false")
    # the GPUs are assumed (8×H100): the memory fixes are shown, never written
    assert {found[c].fix.applicability for c in found} == {Applicability.DISPLAY_ONLY}
    assert found["MEM001"].fix.title.endswith("(shown, not applied: computed for an assumed 8×H100-80GB; set "
                                              "`hardware`)")
    assert FFT.read_text().splitlines()[found["MEM006"].span.line - 1].startswith("eval_batch_size: 8")
    declared = {d.code: d for d in lint(FFT, "8xH100")}
    assert declared["MEM001"].fix.applicability is Applicability.UNSAFE
    # checkpointing is part of every fix (the fused loss alone leaves Liger 0.8.0's lm_head gradient copies over the
    # GPU at one micro batch): MEM003's safe fix is offered, and says what else the run needs
    assert declared["MEM003"].fix.applicability is Applicability.SAFE
    assert "not enough alone: also plugins += LigerPlugin" in declared["MEM003"].message


def test_lora_fixture_fits_on_one_h100(tmp_path):
    # 2×8192 packed tokens: it lints clean; without checkpointing it needs 75 GiB (Axolotl's LoRA kernels keep no
    # fp32 adapter copies), more than a 48 GB card has
    assert lint(LORA, "1xH100") == []
    without = LORA.read_text().replace("gradient_checkpointing: true", "gradient_checkpointing: false")
    assert {"MEM001", "MEM003"} <= {d.code for d in lint(write(tmp_path, without), "1x48GB")}


def test_a_fix_of_gradient_checkpointing_alone_is_safe(tmp_path):
    one_long = LORA_8K.replace("sequence_len: 8192", "sequence_len: 16384").replace("size: 2", "size: 1")
    found = {d.code: d for d in lint(write(tmp_path, one_long), "1xH100")}
    assert found["MEM001"].fix.applicability is Applicability.SAFE
    assert found["MEM001"].fix.title == "turn on gradient checkpointing"


def test_a_fix_that_spans_the_yaml_and_the_deepspeed_file_is_not_offered(tmp_path):
    write(tmp_path, '{"zero_optimization": {"stage": 1}}', "ds.json")
    run = build_run(load_document(write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\ndeepspeed: ds.json\n")))
    both = Suggestion({"gradient_checkpointing": True}, {"zero_optimization.stage": 3}, 1.0, 1.0, 0.7,
                      (Step(Change.CHECKPOINTING_ON), Step(Change.ZERO_STAGE, 1, 3)))
    assert mem.suggestion_fix(run, both) is None
    ds_only = Suggestion({}, {"zero_optimization.stage": 3}, 1.0, 1.0, 0.9, (Step(Change.ZERO_STAGE, 1, 3),))
    assert mem.suggestion_fix(run, ds_only).path == tmp_path / "ds.json"


def test_plugins_are_appended_not_rewritten(tmp_path):
    run = build_run(load_document(write(tmp_path, "base_model: x\nplugins:\n  - my.Plugin  # keep me\n")))
    fix = mem.suggestion_fix(run, Suggestion({"plugins": ["axolotl.integrations.liger.LigerPlugin", "my.Plugin"]}, {},
                                             1.0, 1.0, 1.0, (Step(Change.LIGER_FLCE),)))
    from axlint.edits import apply_edits

    text, _ = apply_edits(run.axolotl.text, list(fix.edits))
    assert text == "base_model: x\nplugins:\n  - my.Plugin  # keep me\n  - axolotl.integrations.liger.LigerPlugin\n"


# ---------------------------------------------------------------------------------------------------- scope


def test_unpacked_runs_get_the_full_length_warning_not_an_oom_error(tmp_path):
    unpacked = LORA_8K.replace("sample_packing: true\n", "").replace("micro_batch_size: 2", "micro_batch_size: 16")
    codes = {d.code for d in lint(write(tmp_path, unpacked), "1xH100")}
    assert "MEM009" in codes and not codes & {"MEM001", "MEM003", "MEM005"}


def test_settings_outside_the_model_silence_the_memory_rules(tmp_path):
    text = LORA_8K + "tensor_parallel_size: 3\n"  # Llama's 32 heads do not split in 3
    assert [d.code for d in lint(write(tmp_path, text), "6xH100")] == ["MEM010"]


LLAVA_DINOV2 = {
    "model_type": "llava",
    "text_config": {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
                    "tie_word_embeddings": False},
    "vision_config": {"model_type": "dinov2", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "patch_size": 14, "image_size": 518},
}


def test_a_vision_tower_axlint_cannot_size_makes_the_verdict_unknown(tmp_path):
    """A vision tower without a row in vision.TOWERS (here a LLaVA built on DINOv2) is not counted:
    the memory rules stand aside (MEM010 on base_model) instead of claiming an OOM, or a fit, on numbers that leave
    it out."""
    import json

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(LLAVA_DINOV2), encoding="utf-8")
    text = f"base_model: {tmp_path / 'model'}\nsequence_len: 65536\nsample_packing: true\nmicro_batch_size: 8\n"
    found = lint(write(tmp_path, text), "1xH100")
    assert [(d.code, d.span.line, d.span.col) for d in found] == [("MEM010", 1, 1)]
    assert "dinov2 vision tower" in found[0].message
    arch = resolve_architecture(str(tmp_path / "model"))
    assert arch.unsized_vision == "dinov2" and arch.extra_parameters == 0 and arch.vision_linears() == ()


def test_a_qwen2_5_vl_tower_is_sized(tmp_path):
    """Qwen2.5-VL's tower and merger (vision.TOWERS / PROJECTORS) are sized: no MEM010."""
    import json

    config = {"model_type": "qwen2_5_vl",
              "text_config": {"model_type": "qwen2_5_vl_text", "hidden_size": 3584, "intermediate_size": 18944,
                              "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
                              "vocab_size": 152064, "tie_word_embeddings": False},
              "vision_config": {"model_type": "qwen2_5_vl", "depth": 32, "hidden_size": 1280,
                                "intermediate_size": 3420, "out_hidden_size": 3584, "patch_size": 14}}
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    arch = resolve_architecture(str(tmp_path / "model"))
    assert arch.unsized_vision is None and arch.extra_parameters > 0
    assert arch.vision_linears()[0].path == "model.visual.blocks.0.attn.qkv"


def test_a_siglip_tower_is_sized_and_lora_target_linear_adapts_it():
    """Axolotl's lora_target_linear collects the Linear names of the whole model (vision tower included) and PEFT
    adapts every module path ending in one: SigLIP's q/k/v/out_proj and fc1/fc2 in its 27 layers get adapters."""
    from axlint.memory.params import lora_params
    from axlint.memory.setup import read_setup

    arch = resolve_architecture("google/gemma-3-4b-pt")
    assert arch.unsized_vision is None

    def adapters(**lora: object) -> int:
        config = {"base_model": "google/gemma-3-4b-pt", "adapter": "lora", "lora_r": 8, **lora}
        return lora_params(arch, read_setup(facts(config, None, arch), arch))

    h, i, q, kv, vh, vi, r = 2560, 10240, 8 * 256, 4 * 256, 1152, 4304, 8   # text: 34 layers, SigLIP: 27
    assert adapters(lora_target_modules=["gate_proj"]) == 34 * r * (h + i)
    assert adapters(lora_target_modules=["q_proj"]) == 34 * r * (h + q) + 27 * r * (vh + vh)
    text = 34 * r * ((h + q) + 2 * (h + kv) + (q + h) + 3 * (h + i))
    vision = 27 * r * (4 * (vh + vh) + 2 * (vh + vi))
    assert adapters(lora_target_linear=True) == text + vision


def test_unknown_model_is_one_note_and_nothing_else(tmp_path):
    found = lint(write(tmp_path, "base_model: my-org/private-7b\nsequence_len: 131072\nsample_packing: true\n"))
    assert [(d.code, d.severity) for d in found] == [("MEM008", Severity.INFO)]
    assert "--model-config" in found[0].message


def test_a_deepspeed_json_alone_has_no_memory_findings():
    assert lint(ROOT / "fixtures" / "ds_zero3.json") == []


DBRX_LORA = """base_model: LnL-AI/dbrx-base-converted-v2
adapter: lora
lora_r: 8
lora_target_modules: [q_proj, k_proj, v_proj, out_proj, layer]
sequence_len: 512
micro_batch_size: 1
"""


def test_lora_targets_of_remote_code_are_not_checked(tmp_path):
    # transformers' DBRX (models/dbrx/modeling_dbrx.py) has one Wqkv, so q/k/v_proj match nothing there; the
    # checkpoint's auto_map names its own modelling code, which transformers runs under trust_remote_code
    plain = [d.code for d in lint(write(tmp_path, DBRX_LORA), select=("MEM011",))]
    trusted = [d.code for d in lint(write(tmp_path, DBRX_LORA + "trust_remote_code: true\n", "trusted.yml"),
                                     select=("MEM011",))]
    assert plain == ["MEM011"] * 3 and trusted == []


QAT_NVFP4 = "examples/qat_nvfp4/"
CORPUS_ERRORS = {
    **{(f"{QAT_NVFP4}{name}_{kind}.yml", code): why
       for name, why in (("Gemma3-12B", "16 packed × 8096 tokens: 44 GiB of layer checkpoints alone"),
                         ("Math-Gemma3-27B", "16 × 4096 tokens: checkpoints + one recomputed layer ≈ 60 GiB"))
       for kind in ("baseline", "qat") for code in ("MEM001", "MEM005")},
    **{(f"{QAT_NVFP4}{name}_{kind}.yml", "MEM001"): why
       for name, why in (("Math-Qwen2.5-72B", "8 × 4096 tokens of checkpoints (40 GiB) next to 72B states / 8"),
                         ("Qwen2.5-72B", "16 × 8096 tokens: 158 GiB of layer checkpoints, on any GPU"))
       for kind in ("baseline", "qat")},
    ("examples/glm4/qlora-32b.yaml", "MEM011"): "gate_proj / up_proj: GLM-4's MLP is one fused gate_up_proj",
    ("examples/apertus/apertus-8b-qlora.yaml", "MEM011"): "gate_proj: Apertus' MLP is up_proj / down_proj only",
    ("examples/arcee/afm-4.5b-qlora.yaml", "MEM011"): "gate_proj: Arcee's MLP is up_proj / down_proj only",
    **{(f"examples/voxtral/{name}.yml", "MEM011"): "the regex `language_model.model.layers...` names transformers 4's "
       "layout; transformers 5 keeps Voxtral's decoder at model.language_model.layers.N (5.14.1 and 5.24 "
       "modeling_voxtral.py), and PEFT 0.21.2 raises NoMatchingPeftModuleError on a tiny Voxtral built with 5.24"
       for name in ("voxtral-mini-qlora", "voxtral-mini-audio-qlora")},
    **{(f"examples/glm47-flash/{name}.yaml", "MEM011"): "q_proj / k_proj / v_proj: GLM-4.7-Flash's MLA attention is "
       "q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj and o_proj" for name in ("lora", "lora_fsdp", "qlora",
                                                                                  "qlora_fsdp")},
    ("examples/mistral/mixtral/mixtral.yml", "MEM001"): "Mixtral-8x7B QLoRA under ZeRO-2 without "
    "quantize_moe_experts: transformers 5 keeps the routed experts as 3-D parameters, which a 4-bit load leaves in "
    "bf16 (85 GiB per GPU); ZeRO-3 does not help, since the 4-bit load lies whole on every GPU before the engine "
    "partitions it",
    **{("examples/qwen3-next/qwen3-next-80b-a3b-nvfp4-lora.yaml", code): "Qwen3-Next-80B NVFP4 MoE-LoRA on one GPU: "
       "84 GiB must stay resident (its README: ~86 GiB at sequence_len 2048), over an H100-80GB; ZeRO-3 offload fits"
       for code in ("MEM001", "MEM007")},
    **{("examples/mistral4/fft-text.yml", code): "Mistral Small 4 (119B MoE) full fine-tune of the language model "
       "under FSDP2 on 8 GPUs: the sharded bf16 weights, gradients and 8-bit Adam states alone are 83 GiB per GPU "
       "(111 GiB at the peak; 82 GiB for an eval step); Axolotl's README gives its FFT configs as reference only"
       for code in ("MEM001", "MEM006")},
    **{("examples/mistral-medium-3_5/qlora-text.yml", code): "Mistral Medium 3.5 (128B dense) QLoRA on one GPU: "
       "the 4-bit decoder, the bf16 Pixtral tower and the untied bf16 embedding and head alone are 72 GiB; Axolotl's "
       "README measures this config at ~83.1 GiB, over an H100-80GB (axlint: 90.8 GiB); ZeRO-3 offload fits"
       for code in ("MEM001", "MEM007")},
    **{(f"examples/{path}", "MEM001"): f"{model} under FSDP: every GPU loads the whole {load} model ({whole}) "
       "before FSDP shards it (QLoRA: Axolotl's device_map on the local GPU; an 8-bit LoRA: bitsandbytes' quantizer "
       "takes the current GPU; transformers 5 has no CPU path for quantized weights under FSDP)"
       for path, model, load, whole in (
           ("llama-3/qlora-fsdp-405b.yaml", "Llama-3.1-405B QLoRA", "4-bit", "203 GiB"),
           ("llama-4/do-no-use-fa2/maverick-qlora-fsdp1.yaml", "Llama-4 Maverick QLoRA", "4-bit", "196 GiB"),
           ("deepseek-v2/qlora-fsdp-2_5.yaml", "DeepSeek-V2.5 QLoRA", "pre-quantized", "609 GiB"),
           ("mistral/mistral-qlora-fsdp.yml", "Mixtral-8x7B QLoRA", "4-bit, experts bf16,", "85 GiB"),
           ("mistral/mixtral/mixtral-qlora-fsdp.yml", "Mixtral-8x7B QLoRA", "4-bit, experts bf16,", "85 GiB"),
           ("mistral/mixtral/mixtral-8x22b-qlora-fsdp.yml", "Mixtral-8x22B QLoRA", "4-bit, experts bf16,",
            "255 GiB"),
           ("archived/dbrx/8bit-lora.yaml", "DBRX 8-bit LoRA", "8-bit, experts bf16,", "242 GiB"))},
    ("examples/glm_moe_dsa/glm-5.2-nvfp4-lora.yaml", "MEM001"): "GLM-5.2 NVFP4 MoE-LoRA, expert_parallel_size 8 on "
    "8×H100-80GB (the example's own comment; it also names 2×B200): each GPU keeps its 32 experts of 75 layers "
    "packed (47 GiB) beside their fp32 LoRA adapters (4 GiB); 80.5 GiB required, 1.3 GiB over",
}
"""(file, code) -> why, for every error-level memory finding on the corpus with the default 8×H100-80GB assumption.
These NVFP4 QAT examples target bigger cards (on 8×B200 the Gemma and Math-Qwen runs fit); the 72B run at
16 × 8096 tokens does not fit anywhere. The GLM-4, Apertus and AFM LoRA targets name modules those layers do not have
(both layouts checked against the meta-device build in tests/test_families.py); so do the GLM-4.7-Flash examples
(its module names read from transformers 5.24's model built from the catalog entry on the meta device). Mixtral's
experts are `MixtralExperts` parameters, not `nn.Linear` (transformers 5.24), so bitsandbytes leaves them in bf16."""


@pytest.fixture(scope="module")
def corpus_findings():
    import os

    cwd = Path.cwd()
    os.chdir(CORPUS.parent)  # as Axolotl runs them: `deepspeed_configs/...` are the real files
    try:
        paths = sorted(p.relative_to(CORPUS.parent) for p in CORPUS.rglob("*.y*ml"))
        return [d for p in paths for d in lint_text(p, None, LintOptions(MEMORY_RULES)).diagnostics]
    finally:
        os.chdir(cwd)


def test_no_memory_rule_crashes_on_the_corpus(corpus_findings):
    assert not [d for d in corpus_findings if d.code == "AX999"]


def test_error_findings_on_the_corpus_are_exactly_the_listed_ones(corpus_findings):
    got = {(str(d.path), d.code) for d in corpus_findings if d.severity is Severity.ERROR}
    assert got == set(CORPUS_ERRORS), sorted(got ^ set(CORPUS_ERRORS))


# ---------------------------------------------------------------------------------------------------- wording


@pytest.mark.parametrize(("factor", "text"), [(1.0, "same speed"), (0.75, "≈25 % slower"), (1.333, "≈33 % faster"),
                                               (0.229, "≈4.4× slower"), (4.0, "≈4.0× faster")])
def test_throughput_text(factor, text):
    assert throughput_text(factor) == text


def test_changes_text_names_every_edit():
    s = Suggestion({"gradient_checkpointing": True, "plugins": ["axolotl.integrations.liger.LigerPlugin"]},
                   {"zero_optimization.stage": 3}, 1.0, 1.0, 1.0, ())
    assert changes_text(s) == ("gradient_checkpointing: true, plugins += LigerPlugin, "
                              "zero_optimization.stage: 3 (DeepSpeed)")


def test_every_step_reads_as_words():
    steps = (Step(Change.CHECKPOINTING_ON), Step(Change.MICRO_BATCH, (4, 2), (2, 4)), Step(Change.ZERO_STAGE, 2, 3))
    assert description(Suggestion({}, {}, 1.0, 1.0, 1.0, steps)) == (
        "turn on gradient checkpointing; micro_batch_size 4->2 with gradient_accumulation_steps 2->4; ZeRO stage 2->3")
    assert all(step_text(Step(change, (1, 1), (1, 1))) for change in Change)


# ---------------------------------------------------------------------------------------------------- solver additions


@pytest.mark.parametrize(("config", "expected"), [
    ({}, False), ({"val_set_size": 0.0}, False), ({"val_set_size": 0.05}, True),
    ({"test_datasets": [{"path": "x"}]}, True), ({"val_set_size": 0.05, "eval_strategy": "no"}, False),
])
def test_evaluates(config, expected):
    assert facts(config).evaluates is expected


def test_eval_batch_candidates_start_at_the_micro_batch():
    assert eval_batch_candidates(8, 3) == [4, 3, 2, 1]
    assert eval_batch_candidates(2, 2) == [1]


def test_single_knob_fixes_fit_the_training_peak():
    config = {"adapter": "lora", "lora_target_linear": True, "sequence_len": 8192, "sample_packing": True,
              "micro_batch_size": 2, "bf16": True, "flash_attention": True}
    hw = parse_hardware("1xH100")
    fixes = single_knob_fixes(facts(config, None, L8B, hw), L8B, hw)
    assert fixes[Knob.GRADIENT_CHECKPOINTING].changes == {"gradient_checkpointing": True}
    assert all(s.peak_gib <= 79.2 * 0.95 for s in fixes.values())


def test_relax_finds_what_a_small_run_does_not_need():
    ds = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}
    config = {"sequence_len": 2048, "sample_packing": True, "micro_batch_size": 2, "bf16": True,
              "flash_attention": True, "gradient_checkpointing": True}
    arch, hw = resolve_architecture("Qwen/Qwen2.5-0.5B"), parse_hardware("8xH100")
    found = relax(facts(config, ds, arch, hw), arch, hw)
    assert set(found) == {Saver.GRADIENT_CHECKPOINTING, Saver.ZERO3, Saver.OFFLOAD}
    assert found[Saver.ZERO3].ds_changes == {"zero_optimization.stage": 2}
    assert found[Saver.OFFLOAD].ds_changes == {"zero_optimization.offload_optimizer.device": "none"}
    assert all(s.relative_throughput > 1 and s.peak_gib <= 79.2 * 0.85 for s in found.values())


def test_modules_to_save_are_the_modules_whose_path_ends_with_the_name():
    """PEFT 0.19.1 copies every module whose path ends with a listed name (`str.endswith`): `norm` copies the 2 norms
    of each layer and the final norm, `embed_tokens` the embedding; a name no path ends with copies nothing."""
    from axlint.memory.params import modules_to_save_params, unmatched_modules_to_save
    from axlint.memory.setup import read_setup

    arch = resolve_architecture("meta-llama/Llama-3.1-8B")

    def copied(names: list[str]) -> int:
        config = {"base_model": "meta-llama/Llama-3.1-8B", "adapter": "lora", "lora_modules_to_save": names}
        return modules_to_save_params(arch, read_setup(facts(config, None, arch), arch))

    assert copied(["embed_tokens", "lm_head"]) == 2 * 128256 * 4096
    assert copied(["norm"]) == (2 * 32 + 1) * 4096
    assert copied(["okens"]) == 128256 * 4096
    assert copied(["layers.0.mlp"]) == 3 * 4096 * 14336
    assert unmatched_modules_to_save(arch, ("embed_token", "lm_head", "wte")) == ["embed_token", "wte"]


def test_images_left_out_make_a_lower_bound_that_still_claims_an_oom(tmp_path):
    """Qwen3.5-35B-A3B fed images at their own size: the tower's work is left out (MEM010 says so, and that the
    estimate is a lower bound); 8 packed rows of 2048 tokens already exceed one H100, so MEM001 is claimed, without a
    fix and saying the images come on top, and nothing that claims the run fits (PERF) is said."""
    path = write(tmp_path, "base_model: Qwen/Qwen3.5-35B-A3B\nprocessor_type: AutoProcessor\nsequence_len: 2048\n"
                           "sample_packing: true\nmicro_batch_size: 8\nadapter: lora\nlora_target_linear: true\n"
                           "bf16: true\n")
    found = {d.code: d for d in lint(path, "1xH100")}
    assert set(found) == {"MEM001", "MEM010"}
    assert "lower bound, so only a predicted OOM is reported" in found["MEM010"].message
    assert "comes on top" in found["MEM001"].message and found["MEM001"].fix is None


def test_a_lower_bound_offers_no_fix_that_claims_to_fit(tmp_path):
    """Qwen2-VL-7B fed images at their own resolution (no image_size): the estimate is a lower bound. 16 packed rows
    of 2048 tokens are over one H100, so MEM001 stands; a smaller micro batch (MEM005) or ZeRO-3 with offload
    (MEM007) fits only the lower bound, so neither is claimed to fit."""
    path = write(tmp_path, "base_model: Qwen/Qwen2-VL-7B-Instruct\nprocessor_type: AutoProcessor\nsequence_len: 2048\n"
                           "sample_packing: true\nmicro_batch_size: 16\nadapter: lora\nlora_target_linear: true\n"
                           "bf16: true\ngradient_checkpointing: true\n")
    assert {d.code for d in lint(path, "1xH100")} == {"MEM001", "MEM010"}


def test_ax110_prices_each_embedding_copy_as_the_estimate_does(tmp_path):
    """AX110's figure for each copy is what the copy adds to the estimate's peak: the two figures together are the
    estimate with both copies less the estimate with neither."""
    import re

    from axlint.memory.estimate import estimate_setup

    config = write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nlora_target_linear: true\n"
                             "lora_modules_to_save: [embed_tokens, lm_head]\nsequence_len: 2048\nbf16: true\n")
    found = [d for d in lint(config, "1xH100", select=("AX110",))]
    costs = [float(re.search(r"≈([\d.]+) GiB more at the peak", d.message).group(1)) for d in found]
    assert [d.span.line for d in found] == [4, 4] and costs == [2.9, 2.9]
    run = build_run(load_document(config), hardware=parse_hardware("1xH100"))
    e = run.memory.estimate
    neither = estimate_setup(e.setup.with_changes(modules_to_save=()), run.arch, run.hardware)
    assert sum(costs) == pytest.approx((e.peak_allocated - neither.peak_allocated) / 2**30, abs=0.1)
