"""Request keys by their first 8 bytes: the prefix the store indexes, and a compact set of
them held in memory."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable

__all__ = ["KeyIndex", "key_prefix"]


def key_prefix(key: str) -> int:
    """First 8 bytes of a hex key as a signed 64-bit integer."""
    v = int(key[:16], 16)
    return v - (1 << 64) if v >= (1 << 63) else v


class KeyIndex:
    """A sorted array of 64-bit key prefixes: 8 bytes per key, membership in O(log n).

    Used to know, without a query, whether the store may hold something for a key; a hit
    is confirmed against the full key in the store.

    Keys added while a run goes wait in a small set (a Python int in a set costs about
    70 bytes) and are merged into the array every ``MERGE_EVERY`` keys, so a run that adds
    a key per call or per seed stays at about 8 bytes per key.
    """

    MERGE_EVERY = 4096

    def __init__(self, prefixes: Iterable[int] = ()) -> None:
        self._sorted = array("q", sorted(prefixes))
        self._added: set[int] = set()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._added)

    def add(self, key: str) -> None:
        self._added.add(key_prefix(key))
        if len(self._added) >= self.MERGE_EVERY:
            self._merge()

    def _merge(self) -> None:
        import numpy as np  # loaded by the store writer already; not by `import halugen`

        added = np.fromiter(self._added, dtype=np.int64, count=len(self._added))
        merged = np.concatenate((np.frombuffer(self._sorted, dtype=np.int64), added))
        merged.sort(kind="stable")
        self._sorted = array("q", merged.tobytes())
        self._added = set()

    def __contains__(self, key: str) -> bool:
        p = key_prefix(key)
        if p in self._added:
            return True
        i = bisect_left(self._sorted, p)
        return i < len(self._sorted) and self._sorted[i] == p
