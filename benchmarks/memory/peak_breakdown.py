"""What is allocated at a run's peak, by the code that allocated it, from PyTorch's CUDA memory history.

    AXLINT_MEMORY_HISTORY=DIR axlint validate CONFIG --device cuda   # writes DIR/memory-rank0.pickle
    python benchmarks/memory/peak_breakdown.py DIR/memory-rank0.pickle [--base-bytes N] [--top 30]

The history (`torch.cuda.memory._record_memory_history`, Python stacks) lists every allocation and free of the
training steps. Replaying it finds the moment the allocated bytes peak; the blocks alive then are grouped by the
first frame outside torch (the model, PEFT, DeepSpeed or Liger line that asked for them) and the innermost frame,
largest first. What was allocated before the history started (the weights, `--base-bytes`, which the validate
report gives as `history_base_bytes`) is one line. A block allocated by the autograd engine has no Python frame.
"""
from __future__ import annotations

import argparse
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

GIB = 2**30
NO_FRAME = "<no Python frame: autograd engine or C++>"


def _frees(events: list[dict[str, Any]]) -> str:
    """The action that returns a block: `free_completed` where the history has it, else `free_requested`."""
    return "free_completed" if any(e.get("action") == "free_completed" for e in events) else "free_requested"


def peak_index(events: list[dict[str, Any]]) -> tuple[int, int]:
    """(index of the event after which the allocated bytes peak, the bytes allocated then above the start)."""
    free = _frees(events)
    live: dict[int, int] = {}
    total = best = 0
    at = -1
    for i, e in enumerate(events):
        action = e.get("action")
        if action == "alloc":
            live[e["addr"]] = e["size"]
            total += e["size"]
            if total > best:
                best, at = total, i
        elif action == free and e["addr"] in live:
            total -= live.pop(e["addr"])
    return at, best


def live_at(events: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """The allocations made in the history and not yet freed after event `index`."""
    free = _frees(events)
    live: dict[int, dict[str, Any]] = {}
    for e in events[: index + 1]:
        if e.get("action") == "alloc":
            live[e["addr"]] = e
        elif e.get("action") == free:
            live.pop(e["addr"], None)
    return list(live.values())


def package_path(filename: str) -> str:
    """The part of a frame's file name below its installation folder (``site-packages`` / ``dist-packages``), so
    that an environment whose own path has a folder named torch does not read as torch."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in filename:
            return filename.rsplit(marker, 1)[1]
    return filename


def in_torch(frame: dict[str, Any]) -> bool:
    path = package_path(frame.get("filename", ""))
    return path.startswith("torch/") or "/torch/" in path


def label(frames: Iterable[dict[str, Any]]) -> str:
    """`file:line function [innermost function]`, the file being the first frame outside torch (innermost first)."""
    frames = list(frames)
    if not frames:
        return NO_FRAME
    outside = next((f for f in frames if not in_torch(f)), frames[-1])
    where = "/".join(Path(outside.get("filename", "?")).parts[-3:])
    inner = frames[0].get("name", "?")
    text = f"{where}:{outside.get('line')} {outside.get('name')}"
    return text if inner == outside.get("name") else f"{text} [{inner}]"


def breakdown(events: list[dict[str, Any]], base_bytes: int = 0) -> tuple[int, list[tuple[str, int, int]]]:
    """(peak allocated bytes including `base_bytes`, [(label, bytes, blocks)] alive at the peak, largest first)."""
    index, peak = peak_index(events)
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for block in live_at(events, index):
        group = groups[label(block.get("frames") or [])]
        group[0] += block["size"]
        group[1] += 1
    rows = sorted(((name, size, count) for name, (size, count) in groups.items()), key=lambda r: -r[1])
    if base_bytes:
        rows.insert(0, ("allocated before the steps (weights, adapters, buffers)", base_bytes, 0))
    return peak + base_bytes, rows


def stack(frames: Iterable[dict[str, Any]], depth: int = 8) -> str:
    """The frames outside torch of one allocation, innermost first: ``package/path:line function`` joined by `` < ``."""
    outside = [f for f in frames if not in_torch(f)]
    return " < ".join(f"{package_path(f.get('filename', '?'))}:{f.get('line')} {f.get('name')}"
                      for f in outside[:depth]) or NO_FRAME


def largest_blocks(events: list[dict[str, Any]], count: int) -> list[str]:
    """The ``count`` largest blocks alive at the peak, each with its size and stack (``stack``), and where in the
    history the peak falls."""
    index, _ = peak_index(events)
    blocks = sorted(live_at(events, index), key=lambda b: -b["size"])[:count]
    head = f"peak after event {index + 1} of {len(events)}"
    return [head] + [f"{b['size'] / GIB:9.3f} GiB  {stack(b.get('frames') or [])}" for b in blocks]


def render(peak: int, rows: list[tuple[str, int, int]], top: int) -> str:
    lines = [f"peak allocated {peak / GIB:.3f} GiB"]
    lines += [f"{size / GIB:9.3f} GiB {count:6d}  {name}" for name, size, count in rows[:top]]
    rest = rows[top:]
    if rest:
        lines.append(f"{sum(r[1] for r in rest) / GIB:9.3f} GiB {sum(r[2] for r in rest):6d}  ({len(rest)} more)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshot", type=Path)
    ap.add_argument("--base-bytes", type=int, default=0)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=0, help="also list this many of the largest blocks, with stacks")
    args = ap.parse_args(argv)
    snapshot = pickle.loads(args.snapshot.read_bytes())
    events = [e for trace in snapshot.get("device_traces", []) for e in trace]
    print(render(*breakdown(events, args.base_bytes), args.top))
    if args.blocks:
        print("\n".join(largest_blocks(events, args.blocks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
