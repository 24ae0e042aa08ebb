"""Intervals on a proportion (an accuracy, a flagged share), and what a sample of a given size
can claim about one.

Ground-floor arithmetic shared by evaluation (``wilson`` around an accuracy), the label-noise
figures, and the audit (how many items a "within 5 points of chance" claim needs). A 95%
interval on an accuracy near 50% over ``n`` items is about ±0.98/sqrt(n): ±5 points takes 385
items, and 13 items give ±27.
"""

from __future__ import annotations

import math

__all__ = [
    "CHANCE_BAND",
    "SIZE_FLOOR",
    "Z95",
    "exact_at_bound",
    "half_width",
    "size_line",
    "wilson",
]

Z95 = 1.959964

CHANCE_BAND = 0.05  # "within 5 points of chance": the whole interval in [45%, 55%]

# the fewest items whose interval is ±5 points or narrower: 385
SIZE_FLOOR = math.ceil((Z95 * 0.5 / CHANCE_BAND) ** 2)


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


def half_width(n: int) -> float:
    """The half-width of a 95% interval on a proportion near 50% over ``n`` items."""
    return Z95 * 0.5 / math.sqrt(max(1, n))


def size_line(n: int) -> str:
    """One line: what ``n`` items can and cannot show about an accuracy beside 50%."""
    half = half_width(n) * 100
    points = f"±{half:.1f}" if half < 10 else f"±{half:.0f}"
    band = CHANCE_BAND * 100
    if half <= band:
        return (
            f"n={n}: a 95% interval of {points} points; can tell {50 + band:g}% from chance "
            f"and certify a figure within {band:g} points of it"
        )
    return (
        f"n={n}: a 95% interval of {points} points; cannot tell {50 + band:g}% from chance "
        f"(only {math.ceil(50 + half)}% or more), nor certify any figure within {band:g} "
        f"points of it"
    )
