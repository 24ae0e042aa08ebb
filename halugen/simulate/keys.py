"""Deterministic randomness for the simulator: every "random" choice is a hash.

``key64`` hashes text and bytes (blake2b, stable across processes and Python versions);
``mix`` derives further independent 64-bit values from a key with integer arithmetic
(splitmix64), which is what the per-request hot path uses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["key64", "mix", "pick", "unit"]

T = TypeVar("T")
_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def key64(*parts: str | bytes | int) -> int:
    """A 64-bit hash of the parts, in order."""
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        if isinstance(part, int):
            part = str(part)
        if isinstance(part, str):
            part = part.encode("utf-8", errors="surrogatepass")
        h.update(part)
        h.update(b"\x1f")
    return int.from_bytes(h.digest(), "big")


def mix(key: int, salt: int) -> int:
    """A 64-bit value derived from ``key`` and ``salt`` (splitmix64's finaliser)."""
    z = (key + (salt + 1) * _GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def unit(key: int, salt: int = 0) -> float:
    """A number in [0, 1) from a key (a salt gives an independent draw)."""
    if salt:
        key = mix(key, salt)
    return (key >> 11) / float(1 << 53)


def pick(seq: Sequence[T], key: int, salt: int = 0) -> T:
    """An element of ``seq`` chosen by ``key`` and ``salt``."""
    return seq[mix(key, salt) % len(seq)]
