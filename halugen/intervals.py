"""Confidence intervals of a proportion (successes of n): what an accuracy or a flagged share
is reported with."""

from __future__ import annotations

import math

__all__ = ["exact_at_bound", "wilson"]


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a proportion; (0.0, 1.0) when n is 0 (nothing is known).

    Chosen over the normal approximation because it stays inside [0, 1] and behaves at
    accuracies near 0 or 1 and at small n.
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n ({successes} of {n})")
    p = successes / n
    z2 = z * z
    den = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / den
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def exact_at_bound(successes: int, n: int, level: float = 0.95) -> tuple[float, float] | None:
    """The exact (Clopper-Pearson) interval of a proportion at 0 or n successes, where it
    has a closed form; None anywhere in between.

    At 0/n every resample of a bootstrap is 0/n too, so its interval shrinks to a point
    ([0.0, 0.0]) that claims a certainty no finite sample gives: this one does not.
    """
    if n <= 0:
        return 0.0, 1.0
    edge = ((1.0 - level) / 2) ** (1.0 / n)
    if successes == 0:
        return 0.0, 1.0 - edge
    if successes == n:
        return edge, 1.0
    return None
