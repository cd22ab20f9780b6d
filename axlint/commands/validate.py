"""`axlint validate`: a short real training run of a config that measures every rank's peak memory."""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Iterator

import click

from axlint.commands.common import PATH, UsageError, internal_errors, stdin_text

DEVICES = ("cuda", "cpu")


def default_device() -> tuple[str, str | None]:
    """("cuda", None) when nvidia-smi lists a GPU, else ("cpu", the line that says so)."""
    from axlint.hardware import detect_local_gpus

    if detect_local_gpus() is not None:
        return "cuda", None
    return "cpu", ("axlint validate: nvidia-smi lists no GPU here; running on CPU (a scaled-down copy of the model; "
                   "pass --device to choose)")


@contextlib.contextmanager
def stdin_as_file(name: Path) -> Iterator[Path]:
    """stdin written to a temporary file in the folder of `name` (so relative `deepspeed:` paths resolve), removed
    afterwards."""
    import tempfile

    text = stdin_text()
    folder = name.parent if str(name.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".axlint-stdin-", suffix=name.suffix or ".yml")
    try:
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        yield Path(tmp)
    finally:
        Path(tmp).unlink(missing_ok=True)


@click.command()
@click.argument("config", type=click.Path(path_type=Path, exists=True, dir_okay=False, allow_dash=True))
@click.option("--steps", type=click.IntRange(min=1), default=3, show_default=True,
              help="Measured training steps, after one warm-up step.")
@click.option("--num-gpus", type=click.IntRange(min=1),
              help="Ranks per node: GPUs with cuda (default: all visible), processes with cpu (default 1).")
@click.option("--device", type=click.Choice(DEVICES),
              help="cuda: the real model on the GPUs; cpu: a scaled-down copy with gloo (default: cuda when "
                   "nvidia-smi lists a GPU, else cpu).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format.")
@click.option("--probe", type=click.Choice(["micro_batch_size", "sequence_len"]),
              help="Also search the largest value of this key that runs (a fresh launch per point).")
@click.option("--memory-limit-gib", type=click.FloatRange(min=0, min_open=True),
              help="Cap on the measured peak per rank (GPU device memory; RSS with --device cpu): exit 1 above "
                   "it. Needed by --probe with --device cpu.")
@click.option("--hostfile", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="DeepSpeed hostfile (`host slots=N` lines) for a multi-node run with the deepspeed launcher.")
@click.option("--launcher", type=click.Choice(["auto", "deepspeed", "torchrun"]), default="auto", show_default=True,
              help="auto: the worker directly for one rank, deepspeed for several ranks with a DeepSpeed config or a "
                   "hostfile, torchrun otherwise.")
@click.option("--model-config", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="A Hugging Face config.json for a model the catalog lacks.")
@click.option("--stdin-filename", type=PATH,
              help="Name to read `-` (stdin) under (its folder is where a relative `deepspeed:` path is found).")
@internal_errors
def validate(config: Path, steps: int, num_gpus: int | None, device: str | None, fmt: str, probe: str | None,
             memory_limit_gib: float | None, hostfile: Path | None, launcher: str, model_config: Path | None,
             stdin_filename: Path | None) -> None:
    """Run a few real training steps of CONFIG and measure every rank's peak memory.

    No weights and no data are downloaded: the model is built from its config.json with random weights and
    fed random micro_batch_size x sequence_len batches. Needs the extra: pip install 'axlint[validate]'.

    Exit codes: 0 every rank ran the steps (and stayed within --memory-limit-gib when given); 1 a rank ran out
    of memory or failed, or the measured peak is over --memory-limit-gib (printed as a result); 2 usage error,
    missing extra, or a config that cannot be run.
    """
    from axlint.validate import MissingExtraError, ValidationError, run_validation

    if device is None:
        device, line = default_device()
        if line:
            click.echo(line, err=True)
    options = dict(steps=steps, num_gpus=num_gpus, device=device, probe=probe, hostfile=hostfile,
                   memory_limit_gib=memory_limit_gib, launcher=launcher, model_config=model_config)
    try:
        if str(config) == "-":  # the launched ranks read a file: stdin goes to a temporary one where it is named
            with stdin_as_file(stdin_filename or Path("stdin.yml")) as path:
                report = run_validation(path, **options)
        else:
            report = run_validation(config, **options)
    except (MissingExtraError, ValidationError) as exc:
        raise UsageError(str(exc)) from None
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        click.echo(report.render_text())
    sys.exit(0 if report.status == "ok" and report.within_limit is not False else 1)
