"""Paired tests of two judges on the same items: is A more often right than B?

- ``mcnemar_exact``: the exact McNemar test, a two-sided binomial test on the discordant
  items (A right and B wrong against B right and A wrong; an item both get right or both
  get wrong says nothing about which is better);
- ``paired_difference``: A's accuracy minus B's on the paired items, with a percentile
  interval from a bootstrap that resamples whole clusters (the replies of one dialogue
  together), the one cluster bootstrap of ``metrics``;
- ``holm``: Holm's step-down adjustment of p-values for many pairs at once (it keeps the
  chance of any false "A differs from B" under the level, without assuming independence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .metrics import BOOTSTRAP_ROUNDS, cluster_bootstrap

__all__ = ["holm", "mcnemar_exact", "paired_difference"]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: P(a result at least this lopsided) under "A and B are
    equally often right", i.e. min(1, 2 P(X <= min)) for X ~ Binomial(a_only + b_only, 1/2);
    1.0 when no item tells them apart."""
    if a_only < 0 or b_only < 0:
        raise ValueError("discordant counts must not be negative")
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    # exact integer arithmetic: no rounding however many items
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**n)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given: the i-th smallest of m is multiplied by
    m - i + 1, kept from falling below the one before it, and capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_difference(
    clusters: Sequence[tuple[int, int, int]], *, rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """(A's accuracy - B's, its 95% interval) over paired items.

    ``clusters`` holds (A right, B right, items) per cluster (an item alone is its own
    cluster). The interval resamples whole clusters, seeded: the same items give the same
    interval every time.
    """
    items = sum(m for _, _, m in clusters)
    if not items:
        return 0.0, (-1.0, 1.0)
    diffs = [(a - b, m) for a, b, m in clusters]
    difference = sum(d for d, _ in diffs) / items
    return difference, cluster_bootstrap(diffs, rounds=rounds, seed=seed)
