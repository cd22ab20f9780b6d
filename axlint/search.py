"""Searching a monotone predicate: the one bisection that the memory rules and `validate --probe` share."""
from __future__ import annotations

from typing import Callable


def largest_true(holds: Callable[[int], bool], low: int, high: int) -> int:
    """The largest k in [low, high] for which `holds(k)`, for a predicate that holds up to some k and fails after
    it; `low` itself is never asked (it is the answer when nothing above it holds). About log2(high - low) calls."""
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if holds(mid) else (low, mid - 1)
    return low
