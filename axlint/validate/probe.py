"""Find the largest value that fits: double from a start value until the first failure, then bisect."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from axlint.search import largest_true


@dataclass
class ProbeOutcome:
    """`largest_fit` (None when even `start` fails) and every tried value with its outcome, in order."""

    largest_fit: int | None
    tried: list[tuple[int, bool]] = field(default_factory=list)


def largest_fitting(fits: Callable[[int], bool], *, start: int = 1, limit: int = 1 << 20,
                    granularity: int = 1) -> ProbeOutcome:
    """Largest v in [start, limit] with fits(v), assuming fits is monotone (true up to a point, then false).

    Bisection stops once the bracket is at most `granularity` wide (values are multiples of it when `start` is).
    """
    outcome = ProbeOutcome(None)

    def check(value: int) -> bool:
        ok = fits(value)
        outcome.tried.append((value, ok))
        return ok

    low, value = None, start
    while value <= limit and check(value):
        low, value = value, value * 2
    if low is None:
        return outcome
    high = min(value, limit + 1)  # first failure, or one past the limit
    step = largest_true(lambda k: check(k * granularity), low // granularity, (high - 1) // granularity)
    outcome.largest_fit = max(low, step * granularity)
    return outcome
