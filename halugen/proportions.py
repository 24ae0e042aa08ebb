"""The confidence interval of a proportion: recognition accuracy (evaluate/metrics.py), the
share of samples a judge flags (label_noise.py), an audit's hit rates (audit/generation.py)."""

from __future__ import annotations

import math

__all__ = ["wilson"]


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
