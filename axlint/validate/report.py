"""ValidationReport: what the ranks measured, next to the analytic estimate, as JSON and as a text table."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GIB = 2**30
CPU_CAVEAT = ("CPU run on a scaled-down copy of the architecture: memory is the process RSS (interpreter, "
              "libraries and tensors), not GPU memory; use it to check the plumbing, not the estimate")


@dataclass
class ValidationReport:
    """One `axlint validate` run. `ranks` are the workers' results; `estimate` the DESIGN.md estimate object."""

    config: str
    model_id: str
    model_type: str
    device: str
    world_size: int
    steps: int
    launcher: str
    scaled_config: dict[str, Any] | None
    ranks: list[dict[str, Any]]
    estimate: dict[str, Any] | None = None
    probe: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    memory_limit_gib: float | None = None

    @property
    def status(self) -> str:
        """"ok" when every rank finished; else the first non-ok status ("oom" or "error")."""
        bad = [r.get("status", "error") for r in self.ranks if r.get("status") != "ok"]
        return bad[0] if bad else ("ok" if self.ranks else "error")

    @property
    def peak_gib(self) -> float | None:
        """The largest measured peak over the ranks: device memory (nvidia-smi's view) on CUDA, RSS on CPU."""
        peaks = [rank_peak_bytes(r) for r in self.ranks if r.get("memory")]
        return max(peaks) / GIB if peaks else None

    @property
    def within_limit(self) -> bool | None:
        """Whether the measured peak stays within `memory_limit_gib`; None without a limit or a measurement."""
        peak = self.peak_gib
        if self.memory_limit_gib is None or peak is None:
            return None
        return peak <= self.memory_limit_gib

    def comparison(self) -> list[dict[str, Any]]:
        """Rows of measured (max over ranks) vs estimated bytes, with the error of the estimate in percent.

        Only a CUDA run is compared: a CPU run measures the process RSS of a scaled-down model, which says whether
        the plumbing works, not whether the GPU estimate of the real model is right."""
        if self.device != "cuda":
            return []
        est = (self.estimate or {}).get("per_gpu") or {}
        comps = est.get("components_gib") or {}
        states = sum(comps.get(k, 0.0) for k in ("weights", "optimizer_states", "master_weights", "sharding_buffers"))
        rows: list[tuple[str, str | None, float | None]] = [
            ("model states after warm-up (weights + optimizer)", "model_states_bytes", states),
            ("activations peak (peak allocated − model states)", "_activations", _minus(est.get("peak_allocated_gib"), states)),
            ("peak allocated", "peak_allocated_bytes", est.get("peak_allocated_gib")),
            ("peak reserved", "peak_reserved_bytes", est.get("peak_reserved_gib")),
            ("peak device (nvidia-smi)", "peak_device_bytes", est.get("peak_device_gib")),
        ]
        return [_row(name, self._measured(key), estimate) for name, key, estimate in rows]

    def _measured(self, key: str | None) -> float | None:
        values = []
        for r in self.ranks:
            mem = r.get("memory") or {}
            if key == "_activations":
                peak, states = mem.get("peak_allocated_bytes"), mem.get("model_states_bytes")
                value = peak - states if peak is not None and states is not None else None
            else:
                value = mem.get(key) if key else None
            if value is not None:
                values.append(value / GIB)
        return max(values) if values else None

    def rank_notes(self) -> list[str]:
        """The ranks' notes (what ran differently from the config), each once, in order of first appearance."""
        return list(dict.fromkeys(n for r in self.ranks for n in r.get("notes", [])))

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config, "model": {"id": self.model_id, "model_type": self.model_type},
            "device": self.device, "world_size": self.world_size, "steps": self.steps, "launcher": self.launcher,
            "status": self.status, "scaled_config": self.scaled_config, "notes": self.notes,
            "ranks": self.ranks, "estimate": self.estimate, "comparison": self.comparison(), "probe": self.probe,
            "peak_gib": _rounded(self.peak_gib), "memory_limit_gib": self.memory_limit_gib,
            "within_limit": self.within_limit,
        }

    def render_text(self) -> str:
        lines = [f"axlint validate {self.config}: {self.status}",
                 f"model {self.model_id} ({self.model_type}), {self.world_size} rank(s) on {self.device}, "
                 f"{self.steps} step(s), launcher {self.launcher}"]
        lines += [f"note: {n}" for n in self.notes + self.rank_notes()]
        for r in self.ranks:
            lines.append(_rank_line(r))
            lines += [f"  | {line}" for line in _log_tail(r)]
        if self.within_limit is not None:
            verdict = "within" if self.within_limit else "OVER"
            lines.append(f"measured peak {_fmt(self.peak_gib)} GiB: {verdict} "
                         f"--memory-limit-gib {self.memory_limit_gib}")
        if self.device != "cuda" and self.peak_gib is not None:
            lines.append(f"measured on CPU: peak RSS {_fmt(self.peak_gib)} GiB per rank at most (the process, not a "
                         "GPU; not compared with the GPU estimate)")
        rows = self.comparison()
        if rows:
            lines.append("")
            lines.append(f"{'component':52} {'measured GiB':>13} {'estimated GiB':>14} {'error':>8}")
            for row in rows:
                lines.append(f"{row['component']:52} {_fmt(row['measured_gib']):>13} {_fmt(row['estimated_gib']):>14} "
                             f"{_pct(row['error_percent']):>8}")
        if self.probe:
            p = self.probe
            lines.append("")
            lines.append(f"probe {p['key']}: largest that ran = {p['largest_fit']} "
                         f"(peak {_fmt(p.get('largest_fit_peak_gib'))} GiB); estimate predicts {p.get('estimated_largest_fit')}")
        return "\n".join(lines)


def rank_peak_bytes(rank: dict[str, Any]) -> int:
    """One rank's peak: device bytes on CUDA, else the RSS (0 when it measured nothing)."""
    mem = rank.get("memory") or {}
    return int(mem.get("peak_device_bytes") or mem.get("peak_rss_bytes") or 0)


def _log_tail(rank: dict[str, Any], lines: int = 15) -> list[str]:
    """The last lines of a failed launch's output (the traceback), for the text report."""
    if rank.get("status") != "error" or not rank.get("log"):
        return []
    return str(rank["log"]).rstrip().splitlines()[-lines:]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _minus(a: float | None, b: float) -> float | None:
    return None if a is None else a - b


def _row(name: str, measured: float | None, estimated: float | None) -> dict[str, Any]:
    error = None
    if measured and estimated is not None:
        error = round(100.0 * (estimated - measured) / measured, 1)
    return {"component": name, "measured_gib": None if measured is None else round(measured, 3),
            "estimated_gib": estimated, "error_percent": error}


def _rank_line(r: dict[str, Any]) -> str:
    if r.get("status") == "oom":
        oom = r.get("oom") or {}
        return f"rank {r.get('rank')}: out of memory at step {oom.get('step')} during {oom.get('phase')}"
    if r.get("status") != "ok":
        return f"rank {r.get('rank')}: {r.get('status')}: {r.get('message', '')}"
    losses = ", ".join(f"{x:.4f}" for x in r.get("losses", []))
    tps = r.get("tokens_per_second") or 0.0
    kind = "device" if (r.get("memory") or {}).get("peak_device_bytes") else "RSS"
    return (f"rank {r['rank']}: {r['steps_completed']} steps, loss [{losses}], {tps:,.0f} tokens/s, "
            f"peak {kind} {_fmt(rank_peak_bytes(r) / GIB)} GiB")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"
