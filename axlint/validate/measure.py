"""Memory probes for one rank: CUDA allocator counters and device usage, or the process RSS on CPU."""
from __future__ import annotations

import os
import resource
from typing import Any


class Meter:
    """Tracks peak allocated / reserved / device bytes on CUDA, peak and current RSS on CPU.

    The device figure is this process's own GPU memory as NVML reports it (nvidia-smi's per-process column: the
    CUDA context, the caching allocator's segments and what libraries allocate beside it), so other processes on
    the same GPU do not count; where NVML cannot name this process, it is the whole GPU's total − free."""

    def __init__(self, on_cuda: bool) -> None:
        self.on_cuda = on_cuda
        self.peak_device = 0
        self.source = "process"

    def reset_peaks(self) -> None:
        if self.on_cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()

    def sample(self) -> None:
        """Record the device memory held now (the caching allocator only grows it)."""
        if self.on_cuda:
            used = process_device_bytes()
            if used is None:
                import torch

                free, total = torch.cuda.mem_get_info()
                used, self.source = total - free, "device"
            self.peak_device = max(self.peak_device, used)

    def current(self) -> int:
        """Bytes held now: allocated tensors on CUDA, resident set on CPU."""
        if self.on_cuda:
            import torch

            return int(torch.cuda.memory_allocated())
        return current_rss()

    def peaks(self) -> dict[str, Any]:
        if not self.on_cuda:
            return {"peak_rss_bytes": peak_rss()}
        import torch

        self.sample()
        return {"peak_allocated_bytes": int(torch.cuda.max_memory_allocated()),
                "peak_reserved_bytes": int(torch.cuda.max_memory_reserved()),
                "peak_device_bytes": int(self.peak_device), "device_measure": self.source}


def process_device_bytes() -> int | None:
    """GPU memory this process holds on its current device, from NVML's list of compute processes; None when NVML
    (the nvidia-ml-py package) is missing, fails, or does not list this process (some containers hide PIDs)."""
    try:
        import pynvml
        import torch
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(_physical_index(torch.cuda.current_device()))
        used = [p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
                if p.pid == os.getpid() and p.usedGpuMemory is not None]
    except pynvml.NVMLError:
        return None
    return int(sum(used)) if used else None


def _physical_index(device: int) -> int:
    """NVML numbers every GPU of the machine; CUDA_VISIBLE_DEVICES renumbers the visible ones from 0."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if device < len(visible) and visible[device].isdigit():
        return int(visible[device])
    return device


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

    versions: dict[str, str | None] = {}
    for package in ("torch", "transformers", "peft", "accelerate", "deepspeed", "liger-kernel", "bitsandbytes"):
        try:
            versions[package] = metadata.version(package)  # without importing: a DDP run does not need DeepSpeed
        except metadata.PackageNotFoundError:
            versions[package] = None
    info: dict[str, Any] = {"versions": versions}
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
