"""`run_validation`: resolve the config, launch the ranks, compare with the estimate, optionally probe a limit."""
from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Any, Mapping

from axlint.memory.facts import unwrapped_lora_settings
from axlint.training.spec import job_facts, train_spec
from axlint.validate.extras import require_validate_extras
from axlint.validate.launch import choose_launcher, run_ranks
from axlint.validate.probe import largest_fitting
from axlint.validate.report import CPU_CAVEAT, GIB, ValidationReport, rank_peak_bytes
from axlint.validate.scaling import scale_down

LAUNCHERS = ("auto", "deepspeed", "torchrun")
PROBE_KEYS = {"micro_batch_size": (1, 1), "sequence_len": (256, 256)}  # key -> (start, granularity)


class ValidationError(ValueError):
    """The run cannot be set up (unresolvable model, bad option); the CLI exits 2 with the message."""


def run_validation(config_path: Path, *, steps: int, num_gpus: int | None, device: str, probe: str | None,
                   hostfile: Path | None, memory_limit_gib: float | None = None, launcher: str = "auto",
                   model_config: Path | None = None) -> ValidationReport:
    """Run `steps` real training steps (after one warm-up) of the config and measure every rank.

    `device` "cuda" runs the real architecture on `num_gpus` GPUs per node (default: all visible); "cpu" runs
    a scaled-down copy with DeepSpeed's CPU accelerator and gloo on `num_gpus` processes (default 1). `probe`
    ("micro_batch_size" | "sequence_len") searches the largest value that runs; on CPU it needs
    `memory_limit_gib` (a point fails when its peak RSS exceeds the cap) since a CPU has no OOM to find. With
    `memory_limit_gib` the report also says whether the measured peak stays within it (`within_limit`).
    """
    require_validate_extras()
    _check_options(steps=steps, device=device, probe=probe, hostfile=hostfile, memory_limit_gib=memory_limit_gib,
                   launcher=launcher)
    run = _load(config_path, model_config)
    arch = run.arch
    unwrapped = unwrapped_lora_settings(run.config)
    if unwrapped:
        raise ValidationError(f"`{'`, `'.join(unwrapped)}` is not validated: the validation wraps the model with a "
                              "plain LoRA, which would leave it out")
    if device == "cpu" and train_spec(run.facts).quantized:
        raise ValidationError("a 4-bit or 8-bit load (load_in_4bit / load_in_8bit) needs bitsandbytes on a CUDA GPU; "
                              "it cannot run with --device cpu")
    processes = num_gpus or (_visible_gpus() if device == "cuda" else 1)
    world = _hostfile_slots(hostfile) if hostfile else processes
    model_type, model_config_dict, scaled = model_job(arch, device)
    axolotl, notes = runnable_config(run.raw, run.facts, device, arch.model_type)
    job = {"model_type": model_type, "model_config": model_config_dict,
           "axolotl": axolotl, "ds_raw": run.ds_raw, "world_size": world, "steps": steps, "device": device}
    facts = job_facts(job)
    chosen = choose_launcher(processes, hostfile, facts.ds is not None, launcher)
    ranks = _run(job, processes, chosen, hostfile)
    notes = ([CPU_CAVEAT] if device == "cpu" else []) + notes
    est_arch = _scaled_arch(arch, scaled) if scaled else arch
    estimate, note = _estimate(facts, est_arch, world, config_path, ranks)
    notes += [note] if note else []
    report = ValidationReport(config=str(config_path), model_id=arch.model_id, model_type=job["model_type"],
                              device=device, world_size=world, steps=steps, launcher=chosen, scaled_config=scaled,
                              ranks=ranks, estimate=estimate, notes=notes, memory_limit_gib=memory_limit_gib)
    if probe is not None:
        report.probe = _probe(job, probe, processes, chosen, hostfile, memory_limit_gib, est_arch, world)
    return report


CCE_INSTALL = ('pip install "cut-cross-entropy[transformers] @ '
               'git+https://github.com/axolotl-ai-cloud/ml-cross-entropy.git@5f0c7a7"')
"""Axolotl's fork of Cut Cross-Entropy at the commit Axolotl 0.18.0 installs."""


def runnable_config(raw: Mapping[str, Any], facts: Any, device: str, model_type: str = "") -> tuple[dict[str, Any],
                                                                                               list[str]]:
    """The config the ranks run, and a note for each setting turned off because validate cannot run it: Axolotl's
    fused LoRA kernels for a model of `model_type` (``facts.fused_lora_kernel_flags``; the ranks run PEFT's LoRA
    layers, which the estimate counts);
    Cut Cross-Entropy without its package on a GPU runs (and is estimated with) transformers' own loss."""
    from axlint.facts import LORA_KERNEL_FLAGS, LossKernel, fused_lora_kernel_flags

    config, notes = dict(raw), []
    fused = fused_lora_kernel_flags(facts, model_type)
    if fused:
        config.update({flag: False for flag in LORA_KERNEL_FLAGS})
        notes.append(f"Axolotl would run its fused LoRA kernels ({', '.join(fused)}); validate runs PEFT's LoRA "
                     "layers, which keep more for backward, and estimates those")
    if (device == "cuda" and facts.loss.value is LossKernel.CCE
            and importlib.util.find_spec("cut_cross_entropy") is None):
        config["cut_cross_entropy"] = False
        notes.append("Cut Cross-Entropy is not installed here, so this run and its estimate use transformers' own "
                     f"loss, which holds the logits; to measure the configured loss, {CCE_INSTALL}")
    return config, notes


def _check_options(*, steps: int, device: str, probe: str | None, hostfile: Path | None,
                   memory_limit_gib: float | None, launcher: str) -> None:
    """Reject option combinations that cannot run, with the message the CLI prints (exit 2)."""
    if steps < 1:
        raise ValidationError(f"--steps must be at least 1, not {steps}")
    if device not in ("cuda", "cpu"):
        raise ValidationError(f"--device must be cuda or cpu, not {device!r}")
    if probe is not None and probe not in PROBE_KEYS:
        raise ValidationError(f"--probe takes {' or '.join(PROBE_KEYS)}, not {probe!r}")
    if probe is not None and device == "cpu" and memory_limit_gib is None:
        raise ValidationError("--probe on --device cpu needs --memory-limit-gib: a CPU run never runs out of GPU "
                              "memory, so the cap on the peak RSS decides what fits")
    if launcher not in LAUNCHERS:
        raise ValidationError(f"--launcher takes {', '.join(LAUNCHERS)}, not {launcher!r}")
    if hostfile is not None and launcher == "torchrun":
        raise ValidationError("--hostfile needs the deepspeed launcher (torchrun here starts one node)")


def _run(job: dict[str, Any], processes: int, launcher: str, hostfile: Path | None) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="axlint-validate-") as tmp:
        ranks, _ = run_ranks(job, Path(tmp), processes=processes, launcher=launcher, hostfile=hostfile)
    return ranks


def _load(config_path: Path, model_config: Path | None) -> Any:
    """The TrainingRun of the config, its DeepSpeed file loaded and its architecture resolved."""
    from axlint.document import DocumentError, load_document
    from axlint.run import build_run

    try:
        doc = load_document(Path(config_path))
    except DocumentError as exc:
        raise ValidationError(f"{config_path}: {exc.message}") from None
    except OSError as exc:
        raise ValidationError(f"{config_path}: cannot read: {exc.strerror}") from None
    run = build_run(doc, world_size=1, model_config_path=model_config)
    if run.axolotl is None:
        raise ValidationError(f"{config_path}: a DeepSpeed config; validate takes the Axolotl YAML that references it")
    if run.ds_error is not None:
        raise ValidationError(str(run.ds_error.message))
    if run.arch is None:
        raise ValidationError(f"cannot resolve base_model {run.raw.get('base_model')!r} to an architecture; "
                              "pass --model-config PATH/config.json")
    return run


def model_job(arch: Any, device: str) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """(model_type, config.json dict, the scaled-down config or None) of the model the worker builds. On CUDA the
    model Axolotl loads: the whole config under its own model_type (``Architecture.build_config``), so that a
    multimodal model is built with its tower (``training.model.model_class``). On CPU the decoder alone, scaled down
    (``scale_down``): a check of the plumbing, not of the memory."""
    if device == "cpu":
        scaled = scale_down(dict(arch.config))
        return str(arch.config.get("model_type") or arch.model_type), scaled, scaled
    return arch.model_type, arch.build_config, None


def _scaled_arch(arch: Any, scaled: dict[str, Any]) -> Any:
    from axlint.architectures import Architecture

    return Architecture.from_config(f"{arch.model_id} (scaled down)", arch.source, {**scaled})


def _estimate(facts: Any, arch: Any, world: int, config_path: Path, ranks: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:
    """The analytic estimate for the hardware that ran (measured GPU memory, or a nominal 80 GiB on CPU)."""
    from axlint.hardware import parse_hardware
    from axlint.memory.estimate import estimate_memory

    env = next((r.get("environment") for r in ranks if r.get("environment")), {}) or {}
    mem = env.get("memory_bytes")
    hw = parse_hardware(f"{world}x{mem / GIB:.1f}GiB" if mem else f"{world}x80GiB")
    try:
        return estimate_memory(facts, arch, hw).to_json(str(config_path)), None
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"no estimate: {exc}"


def _probe(job: dict[str, Any], key: str, processes: int, launcher: str, hostfile: Path | None,
           limit_gib: float | None, arch: Any, world: int) -> dict[str, Any]:
    """Largest `key` that runs (a fresh launch per point) and the largest the estimate says fits."""
    start, granularity = PROBE_KEYS[key]
    peaks: dict[int, float] = {}

    def runs(value: int) -> bool:
        point = {**job, "steps": 1, "axolotl": {**job["axolotl"], key: value}}
        ranks = _run(point, processes, launcher, hostfile)
        peak = max((rank_peak_bytes(r) for r in ranks), default=0) / GIB
        peaks[value] = peak
        ok = all(r.get("status") == "ok" for r in ranks) and bool(ranks)
        return ok and (limit_gib is None or peak <= limit_gib)

    limit = int(arch.config.get("max_position_embeddings") or 131072) if key == "sequence_len" else 4096
    measured = largest_fitting(runs, start=start, limit=limit, granularity=granularity)
    predicted = _predicted_fit(job, arch, world, key, start, limit, granularity, limit_gib)
    return {"key": key, "largest_fit": measured.largest_fit,
            "largest_fit_peak_gib": round(peaks.get(measured.largest_fit or -1, 0.0), 3) or None,
            "tried": [{"value": v, "fits": ok, "peak_gib": round(peaks.get(v, 0.0), 3)} for v, ok in measured.tried],
            "estimated_largest_fit": predicted}


def _predicted_fit(job: Mapping[str, Any], arch: Any, world: int, key: str, start: int, limit: int,
                   granularity: int, limit_gib: float | None) -> int | None:
    """The same search over the analytic estimate (peak device memory against the GPU or the CPU cap)."""
    from axlint.hardware import detect_local_gpus, parse_hardware
    from axlint.memory.estimate import estimate_memory

    local = detect_local_gpus()
    hw = parse_hardware(f"{world}x{limit_gib}GiB") if limit_gib else (local or parse_hardware(f"{world}x80GiB"))

    def fits(value: int) -> bool:
        point = {**job, "axolotl": {**job["axolotl"], key: value}}
        return bool(estimate_memory(job_facts(point), arch, hw).fits)

    return largest_fitting(fits, start=start, limit=limit, granularity=granularity).largest_fit


def _visible_gpus() -> int:
    import torch

    return max(1, torch.cuda.device_count())


def _hostfile_slots(hostfile: Path) -> int:
    """Total `slots=N` over the hosts of a DeepSpeed hostfile."""
    total = 0
    for line in Path(hostfile).read_text().splitlines():
        for part in line.split("#", 1)[0].split():
            if part.startswith("slots="):
                total += int(part.split("=", 1)[1])
    return total
