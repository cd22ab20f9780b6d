"""Text renderings of `axlint estimate`: the per-GPU breakdown with bars, the fit grid, the simulation side by side.

Bars are scaled to the GPU's memory: BAR_WIDTH cells of unicode eighth blocks are one GPU; a value beyond it is
cut at the edge and marked with ▶. Pure functions of their inputs: no I/O, no terminal queries.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from axlint.report.memory_text import (
    LABELS,
    LOSS_NAMES,
    changes_text,
    description,
    speed_text,
    throughput_text,
)

if TYPE_CHECKING:
    from axlint.memory.estimate import MemoryEstimate
    from axlint.memory.solver import FitGrid, Suggestion

GIB = 2**30
BAR_WIDTH = 32
ASSUMED = " (assumed: pass --hardware)"
"""After a hardware label that nobody gave: the default was used."""
EIGHTHS = " ▏▎▍▌▋▊▉"
OVERFLOW = "▶"
LABEL_WIDTH = 22
GRID_CORNER = "mbs \\ seq"


def bar(value: float, capacity: float, width: int = BAR_WIDTH) -> str:
    """`value` out of `capacity` as `width` cells of eighth blocks (padded); ▶ in the last cell when it overflows."""
    if capacity <= 0 or value <= 0:
        return " " * width
    if value > capacity:
        return "█" * (width - 1) + OVERFLOW
    eighths = round(value / capacity * width * 8)
    full, rest = divmod(eighths, 8)
    return ("█" * full + (EIGHTHS[rest] if rest else "")).ljust(width)


def _row(label: str, value: float, capacity: float, note: str = "", with_bar: bool = True) -> str:
    cells = bar(value, capacity) if with_bar else " " * BAR_WIDTH
    share = f"{value / capacity * 100:5.0f} %" if with_bar and capacity > 0 else " " * 7
    return f"  {label:<{LABEL_WIDTH}} {cells} {value / GIB:8.2f}  {share}{'  ' + note if note else ''}".rstrip()


def _count(n: int) -> str:
    """8030261248 -> `8.03 B`, 41943040 -> `41.9 M`."""
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


def _describe_run(e: "MemoryEstimate") -> str:
    s = e.setup
    kind = {"lora": "LoRA", "qlora": "QLoRA"}.get(s.adapter, s.adapter) if s.adapter else "full fine-tune"
    sh = s.sharding
    sharding = {"single": "one GPU", "ddp": f"data parallel over {sh.world} GPUs",
                "deepspeed": f"DeepSpeed ZeRO-{sh.stage} over {sh.world} GPUs",
                "fsdp": f"FSDP (ZeRO-{sh.stage}-like) over {sh.world} GPUs"}[sh.kind]
    offload = [w for w, on in (("optimizer", sh.offload_optimizer), ("parameters", sh.offload_param)) if on]
    if offload:
        sharding += f", {' and '.join(offload)} offloaded to CPU"
    checkpointing = ("offloaded gradient checkpointing" if s.offload_checkpoints else "gradient checkpointing") \
        if s.gradient_checkpointing else "no gradient checkpointing"
    loss = LOSS_NAMES[s.loss] if s.head == "lm" else f"score head ({s.num_labels} label{'s' * (s.num_labels > 1)})"
    batch = f"{s.pair_factor}×{s.micro_batch_size}" if s.pair_factor > 1 else f"{s.micro_batch_size}"
    return (f"{batch} × {s.sequence_len} tokens per micro batch · {kind} · {sharding} · "
            f"{checkpointing} · {s.attn_implementation} · {loss} · {s.optimizer}")


def _verdict(label: str, peak: float, capacity: float, coverage: str) -> str:
    """The verdict line of one peak. An estimate that covers the run partly says no more than its number; a lower
    bound says that the run does not fit, never that it does (``MemoryFacts.coverage``)."""
    gap, of = capacity - peak, f"{peak / GIB:.2f} of {capacity / GIB:.2f} GiB per GPU"
    if coverage == "partial":
        return f"{label}UNKNOWN: the estimate reads {of}, but it does not cover all this run does (see the assumptions)"
    if gap >= 0 and coverage == "lower bound":
        return f"{label}AT LEAST {of}: the work the estimate leaves out comes on top (see the assumptions), so " \
               "whether the run fits is not known"
    if gap >= 0:
        return f"{label}FITS: {of}, {gap / GIB:.2f} GiB headroom ({gap / capacity * 100:.1f} %)"
    least = "at least " if coverage == "lower bound" else ""
    return f"{label}DOES NOT FIT: {least}{peak / GIB:.2f} GiB > {capacity / GIB:.2f} GiB per GPU " \
           f"({least}{-gap / GIB:.2f} GiB over)"


def render_estimate(e: "MemoryEstimate", config: str, *, evaluating: bool, suggestions: list["Suggestion"],
                    notes: list[str], unneeded: list["Suggestion"], scale_out: str = "",
                    coverage: str = "full") -> str:
    """The breakdown of one estimate: header, a bar per component, peaks, verdicts (as far as the estimate covers
    the run, ``coverage``), assumptions, then the solver's suggestions when the run does not fit (with the CPU RAM an
    offload needs), or what fits on more GPUs when nothing does here (`scale_out`, already worded), or the memory
    savers it does not need when it fits. A lower bound offers no change: it says why instead."""
    from axlint.memory.constants import SAFETY_MARGIN
    from axlint.memory.estimate import COMPONENTS
    from axlint.memory.solver import RELAX_MARGIN

    cap = e.hw.memory_gib * GIB
    arch = e.arch
    lines = [f"axlint estimate: {config}",
             f"model     {arch.model_id} · {_count(arch.total_params)} parameters, {_count(e.trainable_params)} "
             f"trainable · from {arch.source}",
             f"hardware  {e.hw.count} × {e.hw.gpu}, {e.hw.memory_gib:.1f} GiB per GPU"
             f"{ASSUMED if e.hw.assumed else ''}",
             f"run       {_describe_run(e)}",
             "",
             f"  {'per GPU, ' + e.phase + ' peak':<{LABEL_WIDTH + BAR_WIDTH + 1}} {'GiB':>8}  {'of GPU':>7}"]
    lines += [_row(LABELS[k], e.components[k], cap) for k in COMPONENTS]
    lines.append("  " + "─" * (LABEL_WIDTH + BAR_WIDTH + 19))
    lines += [_row("peak allocated", e.peak_allocated, cap, with_bar=False),
              _row("peak reserved", e.peak_reserved, cap, with_bar=False),
              _row("peak device", e.peak_device, cap, "what nvidia-smi shows"),
              _row("required", e.required, cap, "allocated + fragmentation + context: decides the fit"),
              _row("eval required", e.eval_required, cap,
                   f"eval_batch_size {e.setup.eval_batch_size} × {e.setup.eval_sequence_len} tokens"
                   + ("" if evaluating else "; the run does not evaluate"))]
    lines.append(f"  {'CPU RAM for offload':<{LABEL_WIDTH}} {'':{BAR_WIDTH}} {e.cpu_offload / GIB:8.2f}  "
                 "all ranks of a node together")
    lines += ["", _verdict("", e.required, cap, coverage)]
    if e.fits and e.peak_device > cap:
        lines.append("  (the allocator's cache would pass the GPU's memory; PyTorch frees it and retries before it "
                     "raises)")
    if evaluating:
        lines.append(_verdict("eval: ", e.eval_required, cap, coverage))
    lines += ["", "assumptions"] + [f"  - {note}" for note in [*e.assumptions, *notes]]
    if suggestions:
        lines += ["", f"suggestions, fastest first (each fits within {(1 - SAFETY_MARGIN) * 100:.0f} % of the GPU"
                      f"{', eval included' if evaluating else ''})"]
        for i, s in enumerate(suggestions, start=1):
            lines.append(f"  {i}. {description(s)}")
            lines.append(f"     {changes_text(s)}")
            lines.append(f"     peak {s.peak_gib:.2f} GiB · saves {s.saving_gib:.2f} GiB · throughput "
                         f"{s.relative_throughput:.2f}× ({speed_text(s)})")
            if s.host_gib:
                have = f"the host has {e.hw.host_memory_gib:.0f} GiB" if e.hw.host_memory_gib else \
                    "host RAM not given: pass --host-memory"
                lines.append(f"     CPU RAM for the offload: {s.host_gib:.1f} GiB per host ({have})")
    elif coverage != "full" and (not e.fits or (evaluating and not e.eval_fits)):
        lines += ["", "suggestions: none, as the estimate is only a lower bound here (see the assumptions)"
                  if coverage == "lower bound" else
                  "suggestions: none, as the estimate does not cover all this run does (see the assumptions)"]
    elif not e.fits or (evaluating and not e.eval_fits):
        lines += ["", "suggestions: none of the settings axlint varies makes this run fit on this hardware"]
        if scale_out:
            lines.append(f"  {scale_out}")
    if unneeded:
        lines += ["", f"not needed here (the run still fits within {(1 - RELAX_MARGIN) * 100:.0f} % of the GPU "
                      "without it)"]
        lines += [f"  - {description(s)} ({changes_text(s)}): peak {s.peak_gib:.2f} GiB, "
                  f"{throughput_text(s.relative_throughput)}" for s in unneeded]
    return "\n".join(lines) + "\n"


def render_fit_grid(grid: "FitGrid", config: str, current: tuple[int, int], hardware: str) -> str:
    """micro_batch_size (rows) × sequence_len (columns): the memory a GPU must hold at the training peak in GiB
    (``MemoryEstimate.required``), `OOM` before it where it does not fit, the configured cell in brackets."""
    width = max(12, *(len(str(s)) + 2 for s in grid.sequence_lens))
    head = f"{GRID_CORNER:>10}" + "".join(f"{s:>{width}}" for s in grid.sequence_lens)
    lines = [f"axlint estimate --fit: {config}", f"GiB each GPU must hold at the training peak on {hardware}, "
             f"{grid.capacity_gib:.1f} GiB each; OOM = does not fit; [ ] = the config", "", head]
    for i, mbs in enumerate(grid.micro_batch_sizes):
        cells = []
        for j, seq in enumerate(grid.sequence_lens):
            peak = grid.required_gib[i][j]
            text = f"{peak:.1f}" if grid.fits(i, j) else f"OOM {peak:.0f}"
            cells.append(f"{f'[{text}]' if (mbs, seq) == current else text:>{width}}")
        lines.append(f"{mbs:>10}" + "".join(cells))
    return "\n".join(lines) + "\n"


def fit_grid_json(grid: "FitGrid", config: str, hardware: Mapping[str, Any]) -> dict[str, Any]:
    """The grid as one JSON object: axes, capacity and a row of cells per micro batch size."""
    return {"config": config, "hardware": dict(hardware), "micro_batch_sizes": list(grid.micro_batch_sizes),
            "sequence_lens": list(grid.sequence_lens), "capacity_gib": grid.capacity_gib,
            "required_gib": [list(row) for row in grid.required_gib],
            "fits": [[grid.fits(i, j) for j in range(len(grid.sequence_lens))]
                     for i in range(len(grid.micro_batch_sizes))]}


SIMULATION_MAP = {"weights": ("parameters", "buffers"), "gradients": ("gradients",),
                  "optimizer_states": ("optimizer_states",), "master_weights": ("master_weights",),
                  "activations + logits": ("activations", "temporaries"), "other": ("other",)}
"""Analytic components next to the simulated categories they correspond to."""


def render_simulation(e: "MemoryEstimate", per_gpu_bytes: Mapping[str, int], seconds: float, notes: list[str]) -> str:
    """Simulated (FakeTensorMode) peak allocated per category next to the analytic components of the peak phase."""
    analytic = {"weights": e.components["weights"], "gradients": e.components["gradients"],
                "optimizer_states": e.components["optimizer_states"], "master_weights": e.components["master_weights"],
                "activations + logits": e.components["activations"] + e.components["logits"],
                "other": e.components["sharding_buffers"]}
    lines = ["", f"simulation (real model code on fake tensors, {seconds:.1f} s) vs analytic, GiB per GPU",
             f"  {'':<{LABEL_WIDTH}} {'simulated':>10} {'analytic':>10}"]
    for label, keys in SIMULATION_MAP.items():
        simulated = sum(per_gpu_bytes.get(k, 0) for k in keys)
        lines.append(f"  {label.replace('_', ' '):<{LABEL_WIDTH}} {simulated / GIB:10.2f} "
                     f"{analytic[label] / GIB:10.2f}")
    total = sum(per_gpu_bytes.values())
    lines.append(f"  {'peak allocated':<{LABEL_WIDTH}} {total / GIB:10.2f} {e.peak_allocated / GIB:10.2f}")
    lines += [f"  - {note}" for note in notes]
    return "\n".join(lines) + "\n"
