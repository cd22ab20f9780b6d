"""Memory probes for one rank: CUDA allocator counters and device usage, or the process RSS on CPU."""
from __future__ import annotations

import resource
from typing import Any


class Meter:
    """Tracks peak allocated / reserved / device bytes on CUDA, peak and current RSS on CPU."""

    def __init__(self, on_cuda: bool) -> None:
        self.on_cuda = on_cuda
        self.peak_device = 0

    def reset_peaks(self) -> None:
        if self.on_cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()

    def sample(self) -> None:
        """Record device usage now (nvidia-smi's view: total − free); the caching allocator only grows it."""
        if self.on_cuda:
            import torch

            free, total = torch.cuda.mem_get_info()
            self.peak_device = max(self.peak_device, total - free)

    def current(self) -> int:
        """Bytes held now: allocated tensors on CUDA, resident set on CPU."""
        if self.on_cuda:
            import torch

            return int(torch.cuda.memory_allocated())
        return current_rss()

    def peaks(self) -> dict[str, int]:
        if not self.on_cuda:
            return {"peak_rss_bytes": peak_rss()}
        import torch

        self.sample()
        return {"peak_allocated_bytes": int(torch.cuda.max_memory_allocated()),
                "peak_reserved_bytes": int(torch.cuda.max_memory_reserved()),
                "peak_device_bytes": int(self.peak_device)}


def peak_rss() -> int:
    """Peak resident set size of this process in bytes (Linux reports kilobytes)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def current_rss() -> int:
    """Resident set size of this process now, in bytes."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def device_name(on_cuda: bool) -> dict[str, Any]:
    """GPU name, driver and library versions (or the CPU) for the report."""
    from importlib import metadata

    import torch

    info: dict[str, Any] = {"torch": torch.__version__}
    try:
        info["deepspeed"] = metadata.version("deepspeed")  # without importing it: a DDP run does not need it
    except metadata.PackageNotFoundError:
        info["deepspeed"] = None
    if on_cuda:
        info["gpu"] = torch.cuda.get_device_name()
        info["memory_bytes"] = int(torch.cuda.get_device_properties(0).total_memory)
        info["cuda"] = torch.version.cuda
        info["driver"] = _driver_version()
    else:
        info["gpu"] = None
    return info


def _driver_version() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None
