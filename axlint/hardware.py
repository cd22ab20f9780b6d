"""GPU catalog, ``--hardware`` parsing (``8xH100``, ``1xA100-40GB``, ``2x24GiB``) and local detection.

``memory_gib`` is the total a PyTorch process sees (``torch.cuda.mem_get_info()[1]``), i.e. what the driver
reports after its own reservation: nvidia-smi's ``memory.total`` minus ≈0.5 GiB (H100 80GB: nvidia-smi 81559 MiB,
torch 79.2 GiB). Values are recalled from those tools' output on each card, not measured here.
"""
from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import dataclass

from axlint.lazypattern import LazyPattern

# A "<N>GB" card exposes ≈ 99 % of N GiB to a process (80 GB -> 79.2 GiB, 40 GB -> 39.4 GiB, 24 GB -> 23.6 GiB).
MARKETING_GB_USABLE_FRACTION = 0.99
NVIDIA_SMI_TIMEOUT_S = 5
DEFAULT_GPU = "H100-80GB"


@dataclass(frozen=True)
class GPU:
    """One GPU model of the table: its memory, whether it computes in bf16 and has NVLink, the names it goes by."""

    name: str
    memory_gib: float
    bf16: bool
    nvlink: bool
    aliases: tuple[str, ...] = ()


GPUS: tuple[GPU, ...] = (
    GPU("H100-80GB", 79.2, True, True, ("H100", "H100-SXM", "H100-SXM5", "H100-SXM-80GB", "H100-80GB-HBM3")),
    GPU("H100-PCIe-80GB", 79.2, True, False, ("H100-PCIE", "H100-PCIE-80GB")),
    GPU("H100-NVL-94GB", 93.1, True, True, ("H100-NVL", "H100NVL")),
    GPU("H200-141GB", 139.8, True, True, ("H200", "H200-SXM", "H200-NVL", "GH200")),
    GPU("B200-180GB", 178.4, True, True, ("B200",)),
    GPU("GB200-186GB", 184.0, True, True, ("GB200",)),
    GPU("A100-80GB", 79.2, True, True, ("A100", "A100-SXM-80GB", "A100-SXM4-80GB", "A100-PCIE-80GB")),
    GPU("A100-40GB", 39.4, True, True, ("A100-SXM4-40GB", "A100-PCIE-40GB", "A100-40G")),
    GPU("A10G-24GB", 22.1, True, False, ("A10G",)),
    GPU("A10-24GB", 22.1, True, False, ("A10",)),
    GPU("L4-24GB", 22.0, True, False, ("L4",)),
    GPU("L40S-48GB", 44.4, True, False, ("L40S",)),
    GPU("L40-48GB", 44.4, True, False, ("L40",)),
    GPU("A6000-48GB", 47.4, True, True, ("A6000", "RTX-A6000")),
    GPU("RTX6000-Ada-48GB", 47.4, True, False, ("RTX6000-ADA", "RTX-6000-ADA", "6000-ADA")),
    GPU("RTX-PRO-6000-96GB", 94.9, True, False, ("RTX-PRO-6000", "RTXPRO6000")),
    GPU("RTX3090-24GB", 23.6, True, True, ("RTX3090", "3090", "RTX-3090")),
    GPU("RTX4090-24GB", 23.6, True, False, ("RTX4090", "4090", "RTX-4090")),
    GPU("RTX5090-32GB", 31.4, True, False, ("RTX5090", "5090", "RTX-5090")),
    GPU("V100-32GB", 31.7, False, True, ("V100-SXM2-32GB", "V100-32G")),
    GPU("V100-16GB", 15.8, False, True, ("V100", "V100-SXM2-16GB")),
    GPU("T4-16GB", 14.6, False, False, ("T4",)),
    GPU("MI300X-192GB", 191.5, True, True, ("MI300X",)),
    GPU("MI325X-256GB", 255.5, True, True, ("MI325X",)),
    GPU("MI250-64GB", 63.9, True, True, ("MI250", "MI250X")),
)


@dataclass(frozen=True)
class Hardware:
    """``count`` GPUs of one kind. ``assumed`` when nobody said which GPUs (the default); ``note`` says how a
    given spec was read when that is worth saying (an ambiguous name, nvidia-smi detection)."""

    gpu: str
    count: int
    memory_gib: float
    assumed: bool = False
    bf16: bool = True
    nvlink: bool = False
    note: str = ""
    host_memory_gib: float | None = None
    """CPU RAM of one host (`--host-memory`, settings, or read locally with `--hardware local`); None: unknown."""

    @property
    def total_memory_gib(self) -> float:
        return self.count * self.memory_gib

    @property
    def label(self) -> str:
        """``8×H100-80GB``."""
        return f"{self.count}×{self.gpu}"

    def to_json(self) -> dict[str, object]:
        """The DESIGN.md contract's `hardware` object: {"gpu", "count", "memory_gib"}."""
        return {"gpu": self.gpu, "count": self.count, "memory_gib": self.memory_gib}


def _norm(name: str) -> str:
    """Upper case, spaces/underscores to dashes, "NVIDIA"/"TESLA"/"GEFORCE" dropped: "NVIDIA H100 80GB HBM3" ->
    "H100-80GB-HBM3"."""
    name = re.sub(r"\b(NVIDIA|TESLA|GEFORCE|AMD|INSTINCT)\b", " ", name.upper())
    return re.sub(r"[\s_]+", "-", name.strip()).strip("-")


@lru_cache(maxsize=1)
def _index() -> dict[str, GPU]:
    return {_norm(key): g for g in GPUS for key in (g.name, *g.aliases)}


def known_gpu_names() -> list[str]:
    return [g.name for g in GPUS]


def lookup_gpu(name: str) -> GPU | None:
    """Exact (normalised) name or alias; ``-80GB``-style suffixes also accepted as ``80G``."""
    key = _norm(name)
    index = _index()
    return index.get(key) or index.get(re.sub(r"(\d+)G$", r"\1GB", key))


_SPEC = LazyPattern(r"^\s*(\d+)\s*[xX×*]\s*(.+?)\s*$")
_SIZE = LazyPattern(r"^(\d+(?:\.\d+)?)\s*(GIB|GB|G)$", re.IGNORECASE)


def parse_hardware(spec: str) -> Hardware:
    """``N x NAME`` or ``N x SIZE``: ``8xH100``, ``1 x A100-40GB``, ``2x24GiB`` (exact usable GiB), ``4x80GB``
    (a card sold as 80 GB: 0.99 × 80 GiB usable). A bare ``NAME`` or ``SIZE`` means one GPU."""
    match = _SPEC.match(spec)
    count, what = (int(match.group(1)), match.group(2)) if match else (1, spec.strip())
    if count < 1:
        raise ValueError(f"--hardware {spec!r}: the GPU count must be at least 1")
    size = _SIZE.match(what.replace(" ", ""))
    if size:
        value, unit = float(size.group(1)), size.group(2).upper()
        gib = value if unit == "GIB" else round(value * MARKETING_GB_USABLE_FRACTION, 1)
        return Hardware(f"{size.group(1)}{'GiB' if unit == 'GIB' else 'GB'}", count, gib)
    gpu = lookup_gpu(what)
    if gpu is None:
        raise ValueError(f"--hardware {spec!r}: unknown GPU {what!r}. Use N x NAME or N x SIZE (e.g. 8xH100, "
                         f"2x24GiB). Known names: {', '.join(known_gpu_names())}")
    note = "A100 read as the 80 GB card (write A100-40GB for the 40 GB one)" if _norm(what) == "A100" else ""
    return Hardware(gpu.name, count, gpu.memory_gib, bf16=gpu.bf16, nvlink=gpu.nvlink, note=note)


_HOST = LazyPattern(r"^(\d+(?:\.\d+)?)\s*(TIB|TB|T|GIB|GB|G)$", re.IGNORECASE)


def parse_host_memory(spec: str) -> float:
    """`--host-memory`: `1TiB`, `512GiB`, `2TB`, `768G` -> GiB (a TB/GB size is taken as sold: 10**12 / 10**9
    bytes)."""
    match = _HOST.match(spec.strip().replace(" ", ""))
    if match is None:
        raise ValueError(f"--host-memory {spec!r}: expected a size such as 1TiB, 512GiB or 768GB")
    value, unit = float(match.group(1)), match.group(2).upper()
    factor = {"TIB": 1024.0, "GIB": 1.0, "TB": 1e12 / 2**30, "T": 1e12 / 2**30, "GB": 1e9 / 2**30, "G": 1e9 / 2**30}
    return round(value * factor[unit], 1)


def local_host_memory_gib(meminfo: str = "/proc/meminfo") -> float | None:
    """This machine's RAM (`MemTotal` of /proc/meminfo), for `--hardware local`; None where it cannot be read."""
    try:
        with open(meminfo, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _from_smi_name(name: str, memory_mib: float) -> Hardware:
    key = _norm(name)
    index = _index()
    # longest alias contained in the reported name, e.g. "A100-SXM4-80GB" in "A100-SXM4-80GB"
    matches = sorted((k for k in index if re.search(rf"(^|-){re.escape(k)}($|-)", key)), key=len, reverse=True)
    gib = round(memory_mib / 1024 - 0.45, 1)  # driver reservation, see module docstring
    if matches:
        gpu = index[matches[0]]
        if abs(gpu.memory_gib - gib) < 2:
            return Hardware(gpu.name, 1, gpu.memory_gib, bf16=gpu.bf16, nvlink=gpu.nvlink)
    return Hardware(name.strip(), 1, gib)


def detect_local_gpus() -> Hardware | None:
    """Ask ``nvidia-smi`` (no torch import). None when it is absent, fails, or lists no GPU. Mixed GPUs:
    the smallest card is reported (the first to run out of memory)."""
    import shutil  # local detection only: subprocess and shutil stay off the check path
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_smi_output(out)


def parse_smi_output(text: str) -> Hardware | None:
    """Parse ``name, memory.total [MiB]`` lines."""
    cards = []
    for line in text.strip().splitlines():
        name, _, mib = line.rpartition(",")
        try:
            cards.append(_from_smi_name(name, float(mib)))
        except ValueError:
            continue
    if not cards:
        return None
    smallest = min(cards, key=lambda h: h.memory_gib)
    note = f"hardware detected with nvidia-smi: {len(cards)}x {smallest.gpu} ({smallest.memory_gib:.1f} GiB)"
    return Hardware(smallest.gpu, len(cards), smallest.memory_gib, bf16=smallest.bf16, nvlink=smallest.nvlink,
                    note=note)


def default_hardware(distributed: bool) -> Hardware:
    """What to assume when the user said nothing: one 80 GB H100, eight when DeepSpeed/FSDP is configured."""
    gpu = next(g for g in GPUS if g.name == DEFAULT_GPU)  # by its own name: no need to normalise every alias
    return Hardware(gpu.name, 8 if distributed else 1, gpu.memory_gib, assumed=True, bf16=gpu.bf16, nvlink=gpu.nvlink)
