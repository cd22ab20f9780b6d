"""axlint's memory estimate against published GPU measurements (benchmarks/memory/published.yaml).

Each row is estimated the way ``axlint check`` / ``estimate`` would: a ``config`` dict (and ``ds`` DeepSpeed dict)
is resolved with ``axlint.facts.resolve_facts`` on the row's hardware; a ``config_file`` row is loaded with
``axlint.document.load_document`` + ``axlint.run.build_run``. The metric the source measured is compared:
allocated -> peak_allocated, reserved -> peak_reserved, device -> peak_device; every row's outcome (ran / oom) is
compared with the estimate's fit call (what must stay resident, ``MemoryEstimate.required``, within the GPU's
memory). A row measured on an older stack (``stack``) gets that stack's difference: on the loss of transformers before
4.49 the shifted fp32 logits copy of that loss is added (``old_stack.shifted_logits_extra``) to every figure and to
the fit call; on PEFT before 0.19 the LoRA targets are not converted for transformers 5's MoE experts and every
adapter on experts stored quantized trains (``old_stack.peft_before_0_19``); on transformers 4 with per-expert ``nn.Linear`` experts those are quantized and
wrapped as modules (``old_stack.linear_experts``); on Liger before 0.6.2 its fused linear cross-entropy adds the
lm_head gradient in place (``old_stack.liger_in_place_weight_grad``); with the optional XIELU CUDA package xIELU keeps
only its input (``old_stack.xielu_cuda``); on bitsandbytes before 0.43.2 the 4-bit matmul keeps its input
(``old_stack.bnb_before_0_43_2``); on PEFT before 0.12 the adapters of a bf16 base are bf16 (``old_stack.peft_before_0_12``).
A row may name several stacks. A row whose own training loop keeps the model's
output through backward (``held_logits``: the logits' dtype) gets those logits at every figure
(``old_stack.held_output_logits``). A row whose model reached the GPUs already sharded (``loader:
sharded``: Answer.AI's own training script, or transformers 4, which moved each quantized weight to the CPU or the
meta device under FSDP's cpu_ram_efficient_loading) is estimated without the whole-model load of today's Axolotl
(``old_stack.sharded_load``); one whose script ran PEFT's kbit preparation with nothing casting back (``loader:
peft-kbit``) with fp32 embeddings, norms and residual stream (``old_stack.kbit_prepared_script``).

    python benchmarks/memory/published.py            # prints the report and writes benchmarks/memory/published.md
    python benchmarks/memory/published.py --check    # exit 1 when published.md's figures differ from a fresh run
"""
from __future__ import annotations

import argparse
import datetime
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from axlint.architectures import resolve_architecture  # noqa: E402
from axlint.document import load_document  # noqa: E402
from axlint.facts import resolve_facts  # noqa: E402
from axlint.hardware import parse_hardware  # noqa: E402
from axlint.memory.estimate import estimate_setup  # noqa: E402
from axlint.memory.overhead import resident_bytes  # noqa: E402
from axlint.memory.setup import read_setup  # noqa: E402
from benchmarks.memory.old_stack import (  # noqa: E402
    bnb_before_0_43_2,
    held_output_logits,
    kbit_prepared_script,
    peft_before_0_12,
    outside_axolotl,
    liger_in_place_weight_grad,
    linear_experts,
    sharded_load,
    shifted_logits_extra,
    peft_before_0_19,
    xielu_cuda,
)
from axlint.run import build_run  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "published.yaml"
REPORT = HERE / "published.md"
GIB = 2**30
METRICS = {"allocated": "peak_allocated", "reserved": "peak_reserved", "device": "peak_device"}
SETS = ("calibration", "check")
SUMMARY_BEGIN, SUMMARY_END = "<!-- summary:begin -->", "<!-- summary:end -->"
OLD_LOSS = "transformers<4.49"
SETUP_STACKS = {"peft<0.19": peft_before_0_19, "transformers<5 linear experts": linear_experts,
                "liger<0.6.2": liger_in_place_weight_grad, "xielu-cuda": xielu_cuda,
                "bitsandbytes<0.43.2": bnb_before_0_43_2, "peft<0.12": peft_before_0_12}
"""Stacks that differ in what is loaded and adapted: the row's TrainSetup is changed before it is estimated."""
STACKS = (OLD_LOSS, *SETUP_STACKS)
LOADERS = {"sharded": sharded_load, "peft-kbit": kbit_prepared_script}
"""Row ``loader`` values: how the model was loaded and reached the GPUs where it was not today's Axolotl load, and
what that changes in the row's TrainSetup."""


@dataclass
class Result:
    row: dict[str, Any]
    estimate: Any

    @property
    def old_loss_bytes(self) -> float:
        """The pre-4.49 loss's shifted fp32 logits copy, for a ``stack: "transformers<4.49"`` row on the HF loss."""
        e = self.estimate
        if OLD_LOSS not in row_stacks(self.row) or e.setup.loss != "hf" or e.components["logits"] == 0:
            return 0.0
        return shifted_logits_extra(e.arch, e.setup.micro_batch_size, e.setup.tokens)

    @property
    def held_logits_bytes(self) -> float:
        """The logits a row's own training loop keeps alive through backward (``held_logits``: their dtype)."""
        dtype = self.row.get("held_logits")
        return held_output_logits(self.estimate.arch, self.estimate.setup.tokens, dtype) if dtype else 0.0

    @property
    def extra_bytes(self) -> float:
        """What the row's older stack or script holds beyond the estimate of today's, at every figure."""
        return self.old_loss_bytes + self.held_logits_bytes

    @property
    def fits(self) -> bool:
        e = self.estimate
        return resident_bytes(e.peak_allocated + self.extra_bytes, e.components["cuda_context"]) <= e.capacity

    @property
    def estimate_gib(self) -> float | None:
        attr = METRICS.get(self.row["metric"])
        return (getattr(self.estimate, attr) + self.extra_bytes) / GIB if attr else None

    @property
    def error(self) -> float | None:
        measured = self.row.get("measured_gib")
        if measured is None or self.estimate_gib is None:
            return None
        return self.estimate_gib / measured - 1

    @property
    def call_right(self) -> bool:
        return self.fits == (self.row["outcome"] == "ran")

    @property
    def exact_tokens(self) -> bool:
        """Every micro batch holds micro_batch_size × sequence_len tokens (packed or padded). Otherwise the estimate
        is the full-length worst case, and a run on shorter samples measures less."""
        return self.estimate.setup.packed_or_padded


def row_stacks(row: dict[str, Any]) -> tuple[str, ...]:
    """The stacks a row was measured on that differ from today's (``stack``: one name or a list of them)."""
    stack = row.get("stack")
    return () if stack is None else (stack,) if isinstance(stack, str) else tuple(stack)


def load_rows(path: Path = DATA) -> list[dict[str, Any]]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["rows"]


def axolotl_run(row: dict[str, Any]) -> bool:
    """The row's figure is of an Axolotl run: its source is in Axolotl's repository (an example's README, a pull
    request); every other source ran a script of its own (``old_stack.outside_axolotl``)."""
    return "github.com/axolotl-ai-cloud/axolotl/" in row.get("source", "")


def estimate_row(row: dict[str, Any]):
    """The MemoryEstimate axlint gives for the row's setting on the row's hardware, on the row's stack
    (``SETUP_STACKS``; today's when it names none)."""
    hw = parse_hardware(row["hardware"])
    if row.get("config_file"):
        run = build_run(load_document(ROOT / row["config_file"]), hardware=hw)
        if run.arch is None:
            raise ValueError(f"{row['id']}: {row['config_file']} does not resolve to a catalog model")
        facts, arch, hw = run.facts, run.arch, run.hardware
    else:
        arch = resolve_architecture(row["model"])
        if arch is None:
            raise ValueError(f"{row['id']}: {row['model']} does not resolve")
        config = {k: v for k, v in row["config"].items() if v is not None}
        facts = resolve_facts(config, row.get("ds"), world_size=hw.count, bf16_capable=hw.bf16 is not False,
                              hidden_size=arch.hidden_size)
    setup = read_setup(facts, arch)
    if not axolotl_run(row):
        setup = outside_axolotl(setup)
    for name in row_stacks(row):
        if (stack := SETUP_STACKS.get(name)) is not None:
            setup = stack(setup, facts)
    if (loader := LOADERS.get(row.get("loader"))) is not None:
        setup = loader(setup)
    return estimate_setup(setup, arch, hw)


def evaluate(rows: list[dict[str, Any]] | None = None) -> list[Result]:
    return [Result(row, estimate_row(row)) for row in (rows if rows is not None else load_rows())]


def _percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 1]."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(results: list[Result]) -> dict[str, dict[str, Any]]:
    """Per set: rows, rows with a figure, median and p90 |error| in %, fit calls right / total, wrong call ids."""
    out: dict[str, dict[str, Any]] = {}
    for name in SETS:
        rs = [r for r in results if r.row["set"] == name]
        errs = [abs(r.error) * 100 for r in rs if r.error is not None]
        exact = [abs(r.error) * 100 for r in rs if r.error is not None and r.exact_tokens]
        bounds = [r.error >= 0 for r in rs if r.error is not None and not r.exact_tokens]
        out[name] = {
            "rows": len(rs),
            "with_figure": len(errs),
            "median_abs_error_pct": round(_percentile(errs, 0.5), 1),
            "p90_abs_error_pct": round(_percentile(errs, 0.9), 1),
            "calls_right": sum(r.call_right for r in rs),
            "wrong_calls": [r.row["id"] for r in rs if not r.call_right],
            "exact_with_figure": len(exact),
            "exact_median_abs_error_pct": round(_percentile(exact, 0.5), 1),
            "exact_p90_abs_error_pct": round(_percentile(exact, 0.9), 1),
            "bounds_held": sum(bounds),
            "bound_rows": len(bounds),
        }
    return out


def summary_lines(s: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["| set | rows | rows with a figure | median abs error | p90 abs error | fit/OOM calls right |",
             "|---|---|---|---|---|---|"]
    for name in SETS:
        x = s[name]
        lines.append(f"| {name} | {x['rows']} | {x['with_figure']} | {x['median_abs_error_pct']:.1f} % "
                     f"| {x['p90_abs_error_pct']:.1f} % | {x['calls_right']} / {x['rows']} |")
    lines += ["", "The same rows split by what the estimate can know of the tokens: packed or padded rows, whose micro "
              "batches hold exactly micro_batch_size × sequence_len tokens, and unpacked rows, whose estimate is the "
              "full-length worst case that a run on shorter samples stays under.", "",
              "| set | packed or padded rows with a figure | median abs error | p90 abs error "
              "| unpacked rows: estimate ≥ measured |", "|---|---|---|---|---|"]
    for name in SETS:
        x = s[name]
        median = f"{x['exact_median_abs_error_pct']:.1f} %" if x["exact_with_figure"] else "–"
        p90 = f"{x['exact_p90_abs_error_pct']:.1f} %" if x["exact_with_figure"] else "–"
        bounds = f"{x['bounds_held']} / {x['bound_rows']}"
        lines.append(f"| {name} | {x['exact_with_figure']} | {median} | {p90} | {bounds} |")
    for name in SETS:
        wrong = ", ".join(f"`{i}`" for i in s[name]["wrong_calls"]) or "none"
        lines.append("")
        lines.append(f"Wrong fit calls ({name}): {wrong}")
    return lines


def _setting(row: dict[str, Any]) -> str:
    if row.get("config_file"):
        return f"`{row['config_file'].split('examples/', 1)[-1]}`"
    c, ds = row["config"], row.get("ds") or {}
    parts = [c.get("adapter") or "full"]
    if c.get("lora_r"):
        parts.append(f"r{c['lora_r']}")
    parts.append(f"seq {c.get('sequence_len')} × mbs {c.get('micro_batch_size', 1)}")
    parts.append("GC" if c.get("gradient_checkpointing") else "no GC")
    names = {"LigerPlugin": "Liger", "CutCrossEntropyPlugin": "CCE"}
    parts += [names.get(plugin.rsplit(".", 1)[-1], plugin.rsplit(".", 1)[-1]) for plugin in c.get("plugins") or ()]
    zero = ds.get("zero_optimization") or {}
    if zero:
        off = [k.split("_")[1] for k in ("offload_optimizer", "offload_param")
               if (zero.get(k) or {}).get("device") not in (None, "none")]
        parts.append(f"ZeRO-{zero.get('stage')}" + (f" offload {'+'.join(off)}" if off else ""))
    fsdp = c.get("fsdp_config") or {}
    if fsdp:
        parts.append(f"FSDP {fsdp.get('fsdp_sharding_strategy', 'FULL_SHARD')}"
                     + (" offload" if fsdp.get("fsdp_offload_params") else ""))
    if c.get("activation_offloading"):
        parts.append("act offload")
    return ", ".join(parts)


def table_lines(results: list[Result], name: str) -> list[str]:
    lines = ["| id | model | setting | hardware | metric | measured GiB | estimate GiB | error | ran/oom | est. fits |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.row["set"] != name:
            continue
        row, m = r.row, r.row.get("measured_gib")
        est = r.estimate_gib
        lines.append(
            f"| {row['id']} | {row['model']} | {_setting(row)} | {row['hardware']} | {row['metric']} "
            f"| {'' if m is None else f'{m:.2f}'} | {'' if est is None else f'{est:.2f}'} "
            f"| {'' if r.error is None else f'{r.error:+.1%}'} | {row['outcome']} "
            f"| {'yes' if r.fits else 'no'}{'' if r.call_right else ' ✗'} |")
    return lines


def render(results: list[Result]) -> str:
    s = summary(results)
    sources = sorted({r.row["source"].split(" ", 1)[0] for r in results if r.row["set"] == "check"})
    head = [
        "# axlint memory estimate vs published measurements",
        "",
        f"Written by `benchmarks/memory/published.py` from `published.yaml` on {datetime.date.today().isoformat()} "
        f"({platform.system()} {platform.machine()}, Python {platform.python_version()}; the estimate is analytic, "
        "no GPU is used). Error = estimate / measured − 1 on the metric the source measured (allocated, reserved "
        "or device); a fit call is right when the estimate fits ⇔ the run ran.",
        "",
        "`calibration`: the points axlint's constants were tuned on (tests/test_memory_calibration.py). `check`: "
        "published figures axlint was not tuned on. Rows measured on an older stack (`stack`) get its difference: "
        "on the loss of transformers before 4.49 its shifted fp32 logits copy is added, as the calibration test does; "
        "on PEFT before 0.19 the LoRA targets are not converted for transformers 5's 3-D experts; on transformers 4 "
        "with per-expert `nn.Linear` experts (`transformers<5 linear experts`) those are quantized by a 4/8-bit "
        "load and wrapped by module targets; on Liger before 0.6.2 (`liger<0.6.2`) its fused linear cross-entropy "
        "adds the lm_head gradient in place; with the XIELU CUDA package (`xielu-cuda`) xIELU keeps only its "
        "input; on bitsandbytes before 0.43.2 (`bitsandbytes<0.43.2`) the 4-bit matmul keeps its input for "
        "backward; on PEFT before 0.12 (`peft<0.12`) the adapters of a bf16 base train in bf16; a row whose own training loop keeps the model's output through backward (`held_logits`, "
        "Answer.AI's script) holds its logits at every figure; a row whose model reached the GPUs already sharded (`loader: sharded`: "
        "Answer.AI's script, or transformers 4 under cpu_ram_efficient_loading or ZeRO-3) has no whole-model load; "
        "a row whose script ran PEFT's kbit preparation with nothing casting back (`loader: peft-kbit`) trains "
        "with fp32 embeddings, norms and residual stream (benchmarks/memory/old_stack.py).",
        "",
        SUMMARY_BEGIN, *summary_lines(s), SUMMARY_END,
        "",
        f"Check-set sources ({len(sources)} pages): " + ", ".join(sources),
    ]
    body: list[str] = []
    for name in SETS:
        body += ["", f"## {name}", "", *table_lines(results, name)]
    return "\n".join(head + body) + "\n"


def comparable(text: str) -> str:
    """The report without its "Written by ... on DATE (machine)" line: what a fresh run must reproduce, every row's
    figures included."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("Written by ")).strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare published.md with a fresh run (all but its date)")
    args = ap.parse_args(argv)
    results = evaluate()
    text = render(results)
    if args.check:
        ok = REPORT.exists() and comparable(REPORT.read_text(encoding="utf-8")) == comparable(text)
        print("published.md is up to date" if ok else "published.md is stale: run benchmarks/memory/published.py")
        return 0 if ok else 1
    REPORT.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
