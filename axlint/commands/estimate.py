"""`axlint estimate`: the per-GPU peak memory of one config, what fits (`--fit`), the simulated peak (`--simulate`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from axlint.commands.common import (
    FILE,
    HOST_MEMORY_HELP,
    PATH,
    UsageError,
    host_memory_option,
    internal_errors,
    parse_hardware_option,
    stdin_text,
)

if TYPE_CHECKING:
    from axlint.hardware import Hardware
    from axlint.memory.facts import MemoryFacts
    from axlint.run import TrainingRun

SIMULATE_PACKAGES = ("torch", "transformers", "peft")


def int_list(text: str, option: str) -> tuple[int, ...]:
    """`1,2,4,8` -> (1, 2, 4, 8), sorted and without repeats; anything else is a usage error."""
    try:
        values = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UsageError(f"{option}: expected comma-separated integers, got {text!r}") from None
    if not values or values[0] < 1:
        raise UsageError(f"{option}: expected positive integers, got {text!r}")
    return tuple(values)


def load_run(config: Path, hardware: "Hardware | None", model_config: Path | None, online: bool,
             text: str | None = None, host_memory_gib: float | None = None) -> "TrainingRun":
    """The TrainingRun of an Axolotl YAML (`text` given: stdin under the name `config`) with a resolved
    architecture; every problem is a usage error (exit 2)."""
    from axlint.architectures import resolve_architecture
    from axlint.document import DocumentError, load_document
    from axlint.run import build_run

    try:
        doc = load_document(config, text)
    except DocumentError as exc:
        raise UsageError(f"{config}: {exc.message}") from None
    except OSError as exc:
        raise UsageError(f"{config}: cannot read: {exc.strerror}") from None
    run = build_run(doc, hardware=hardware, model_config_path=model_config, host_memory_gib=host_memory_gib)
    if run.axolotl is None:
        raise UsageError(f"{config}: a DeepSpeed config; estimate takes the Axolotl YAML that references it")
    if run.ds_error is not None:
        raise UsageError(run.ds_error.message)
    model = run.raw.get("base_model_config") or run.raw.get("base_model")
    if run.arch is None and online and isinstance(model, str):
        run.arch = resolve_architecture(model, search_paths=[config.parent], online=True)
    if run.arch is None:
        name = f"`{model}`" if isinstance(model, str) else "the model (no base_model)"
        if online and isinstance(model, str):
            raise UsageError(f"cannot resolve the architecture of {name}: not a local folder, not in the Hugging "
                             "Face cache, not in axlint's catalog, and its config.json could not be fetched from the "
                             "Hub (no network, a private or gated model without HF_TOKEN, or not a repo id); pass "
                             "--model-config path/to/config.json")
        raise UsageError(f"cannot resolve the architecture of {name}: not a local folder, not in the Hugging Face "
                         "cache, not in axlint's catalog; pass --model-config path/to/config.json (or --online)")
    return run


def run_notes(facts: "MemoryFacts") -> list[str]:
    """Assumptions the estimate itself does not state: settings it does not model, whether the run evaluates."""
    from axlint.memory.facts import layout_problem, left_out, not_modelled, unsized_parts

    sharding = facts.run.sharding
    on_top = left_out(facts.config, facts.arch)
    notes = [f"{setting} ({why}) is not modelled: the estimate leaves that work out, so the peak is unknown (at least "
             "the numbers above)" if setting in on_top else
             f"{setting} ({why}) is not modelled: the estimate holds it whole on every GPU and overstates the peak"
             for setting, why in not_modelled(facts.config, sharding, facts.arch).items()]
    notes += [f"{setting}: {why}; the estimate ignores the parallel sizes" for setting, why in
              layout_problem(facts.config, sharding).items()]
    notes += [f"{part} has {what}: its memory is left out, so the peak is unknown (at least the numbers above)"
              for part, what in unsized_parts(facts.arch).items()]
    checkpoint = facts.estimate.setup.prequantized
    if checkpoint is not None and checkpoint.unsized:
        notes.append(f"base_model: {facts.arch.model_id} is {checkpoint.unsized}: the numbers above take its weights "
                     "in the load dtype, so the peak is unknown")
    if not facts.evaluating:
        notes.append("no evaluation (val_set_size 0, no test_datasets): the eval peak does not count")
    return notes


def simulate_run(run: "TrainingRun") -> Any:
    """`axlint.simulate.simulate` on the run; the simulate extra missing or a failed simulation is exit 2."""
    import importlib.util

    missing = [name for name in SIMULATE_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"--simulate needs {', '.join(missing)}: pip install 'axlint[simulate]'")
    from axlint.memory.facts import unwrapped_lora_settings
    from axlint.simulate import NotSimulated, simulate

    unsimulated = unwrapped_lora_settings(run.config)
    if unsimulated:
        raise UsageError(f"--simulate: `{'`, `'.join(unsimulated)}` is not simulated: the simulation wraps the model "
                         "with a plain LoRA, which would leave it out")
    try:
        return simulate(run.facts, run.arch, run.hardware)
    except NotSimulated as exc:
        raise UsageError(f"--simulate: {exc}") from None
    except Exception as exc:  # the model code of any architecture runs here: report, do not trace back
        raise UsageError(f"--simulate failed: {type(exc).__name__}: {exc}") from None


@click.command()
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("--hardware", help="GPUs of the run: 8xH100, 1xA100-40GB, 2x24GiB, or `local` (ask nvidia-smi). "
                                 "Default: the settings' value, else 1×H100-80GB (8 with DeepSpeed/FSDP), assumed.")
@click.option("--host-memory", help=HOST_MEMORY_HELP)
@click.option("--model-config", type=FILE,
              help="A Hugging Face config.json for a model the catalog lacks.")
@click.option("--online", is_flag=True,
              help="Fetch the model's config.json from the Hugging Face Hub if not found locally.")
@click.option("--settings", "settings_path", type=FILE,
              help="Settings file (default: closest .axlint.toml or pyproject.toml [tool.axlint]).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="json: one machine-readable object (stable keys).")
@click.option("--fit", is_flag=True, help="Grid of micro_batch_size × sequence_len: the training peak, fits or OOM.")
@click.option("--micro-batch-sizes", default="1,2,4,8", show_default=True, help="Rows of the --fit grid.")
@click.option("--sequence-lens", default="1024,2048,4096,8192,16384", show_default=True,
              help="Columns of the --fit grid.")
@click.option("--simulate", "with_simulation", is_flag=True,
              help="Also run the real model code on fake tensors (CPU, seconds; needs the simulate extra).")
@click.option("--stdin-filename", type=PATH,
              help="Name to read `-` (stdin) under (its folder is where a relative `deepspeed:` path is found).")
@internal_errors
def estimate(config: Path, hardware: str | None, host_memory: str | None, model_config: Path | None, online: bool,
             settings_path: Path | None, fmt: str, fit: bool, micro_batch_sizes: str, sequence_lens: str,
             with_simulation: bool, stdin_filename: Path | None) -> None:
    """Estimate the per-GPU peak memory of an Axolotl config (and its DeepSpeed JSON); `-` reads stdin.

    Exit codes: 0 fits, 1 does not fit (training, or evaluation when the run evaluates), 2 usage error (unknown
    model included).
    """
    from axlint.memory.facts import compute_facts
    from axlint.memory.overhead import expandable_segments_enabled
    from axlint.settings import SettingsError, find_settings_file, load_settings

    if fit and with_simulation:
        raise UsageError("--fit and --simulate answer different questions; give one of them")
    try:
        settings = load_settings(settings_path or find_settings_file(config))
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    grid_axes = (int_list(micro_batch_sizes, "--micro-batch-sizes"), int_list(sequence_lens, "--sequence-lens"))
    hw = parse_hardware_option(hardware or settings.hardware)
    model_path = model_config or (settings.resolve(settings.model_config) if settings.model_config else None)
    text = None
    if str(config) == "-":
        config, text = stdin_filename or Path("stdin.yml"), stdin_text()
    host = host_memory_option(host_memory or settings.host_memory, hardware or settings.hardware)
    run = load_run(config, hw, model_path, online, text, host)
    expandable = expandable_segments_enabled()
    facts = compute_facts(run, expandable_segments=expandable)
    assert facts is not None  # load_run resolved the architecture
    notes = run_notes(facts)
    if expandable:
        notes.append("PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True (5 % allocator slack instead of 15 %)")
    fits = facts.estimate.fits and facts.eval_fits
    if fit:
        _print_grid(facts, str(config), grid_axes, fmt)
        sys.exit(0 if fits else 1)
    simulation = simulate_run(run) if with_simulation else None
    _print_estimate(facts, str(config), notes, fmt, simulation)
    sys.exit(0 if fits else 1)


def _print_estimate(facts: "MemoryFacts", config: str, notes: list[str], fmt: str, simulation: Any) -> None:
    """The DESIGN.md JSON object (with the simulation under "simulation" when asked), or the table."""
    from axlint.memory.estimate import estimate_setup
    from axlint.report.estimate_table import render_estimate, render_simulation
    from axlint.report.memory_text import scale_out_text

    e = facts.estimate
    if fmt == "json":
        data = e.to_json(config)
        data["assumptions"] += notes
        data["verdict"] = facts.verdict(e.fits)
        if simulation is not None:
            data["simulation"] = simulation.to_json()
        click.echo(json.dumps(data, indent=2))
        return
    fits = e.fits and facts.eval_fits
    sized = facts.coverage == "full"  # a change sized from a partial estimate could be wrong either way: none offered
    wider = scale_out_text(facts.scale_out, facts.hw) if not fits and not facts.suggestions and sized else ""
    click.echo(render_estimate(e, config, evaluating=facts.evaluating,
                               suggestions=facts.suggestions if not fits and sized else [], notes=notes,
                               unneeded=list(facts.relaxations.values()) if fits and sized else [],
                               scale_out=wider, coverage=facts.coverage), nl=False)
    if simulation is not None:
        # the analytic column is the estimate of the run the simulation ran (``simulate.simulated_setup``)
        analytic = e if simulation.setup in (None, e.setup) else estimate_setup(simulation.setup, e.arch, e.hw)
        click.echo(render_simulation(analytic, simulation.per_gpu_bytes, simulation.seconds, simulation.notes),
                   nl=False)


def _print_grid(facts: "MemoryFacts", config: str, axes: tuple[tuple[int, ...], tuple[int, ...]], fmt: str) -> None:
    from axlint.memory.solver import fit_grid
    from axlint.report.estimate_table import ASSUMED, fit_grid_json, render_fit_grid

    grid = fit_grid(facts.run, facts.arch, facts.hw, *axes)
    hw = facts.hw
    if fmt == "json":
        click.echo(json.dumps(fit_grid_json(grid, config, hw.to_json()), indent=2))
    else:
        current = (facts.estimate.setup.micro_batch_size, facts.estimate.setup.sequence_len)
        label = f"{hw.label}{ASSUMED if hw.assumed else ''}"
        click.echo(render_fit_grid(grid, config, current, label), nl=False)
