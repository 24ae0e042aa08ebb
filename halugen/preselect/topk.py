"""Streaming selection of the K queries whose responses agree least.

A heap of at most K entries whose root is the worst kept entry (highest score, then highest
key), so each offer costs O(log K) and memory is bounded by K, not by the pool. Ties are
broken by key, which makes the result independent of the order queries are offered in.
"""

from __future__ import annotations

import heapq
import math

from ..errors import UsageError

__all__ = ["LeastSimilar"]


class _Entry:
    """A heap entry ordered so that heapq's min-heap puts the *largest* (score, key) on top."""

    __slots__ = ("key", "score")

    def __init__(self, score: float, key: str) -> None:
        self.score = score
        self.key = key

    def __lt__(self, other: _Entry) -> bool:
        return (self.score, self.key) > (other.score, other.key)


class LeastSimilar:
    """Keeps the ``k`` offered keys with the lowest scores, in O(k) memory.

    A key offered more than once (the same query met twice) counts once, with its lowest
    score. NaN scores (a query with fewer than two responses) are never kept.
    """

    def __init__(self, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise UsageError(f"the number of queries to keep must be a whole number ≥ 0, not {k!r}")
        self._k = k
        self._heap: list[_Entry] = []
        self._kept: dict[str, _Entry] = {}
        self.offered = 0  # offers seen, NaN ones included

    @property
    def k(self) -> int:
        return self._k

    def __len__(self) -> int:
        return len(self._heap)

    def offer(self, key: str, score: float) -> None:
        """Consider ``key`` with ``score``; NaN is never kept."""
        self.offered += 1
        score = float(score)
        if math.isnan(score) or self._k == 0:
            return
        kept = self._kept.get(key)
        if kept is not None:
            if score < kept.score:  # rare: a repeated query scored lower; rebuild is O(k)
                kept.score = score
                heapq.heapify(self._heap)
            return
        entry = _Entry(score, key)
        if len(self._heap) < self._k:
            heapq.heappush(self._heap, entry)
        elif (score, key) < (self._heap[0].score, self._heap[0].key):
            dropped = heapq.heapreplace(self._heap, entry)
            del self._kept[dropped.key]
        else:
            return
        self._kept[key] = entry

    def threshold(self) -> float:
        """The highest kept score once ``k`` are kept (a higher score cannot enter), else inf."""
        if self._k and len(self._heap) == self._k:
            return self._heap[0].score
        return math.inf

    def result(self) -> list[tuple[str, float]]:
        """The kept ``(key, score)`` pairs, ascending by score, ties by key."""
        return [(e.key, e.score) for e in sorted(self._heap, key=lambda e: (e.score, e.key))]
