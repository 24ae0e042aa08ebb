"""Streaming least-similar selection: same answer as sorting everything, in O(K) memory."""

from __future__ import annotations

import math
import random

import pytest

from halugen.errors import UsageError
from halugen.preselect.topk import LeastSimilar


def reference(pairs: list[tuple[str, float]], k: int) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for key, score in pairs:
        if not math.isnan(score):
            best[key] = min(score, best.get(key, math.inf))
    return sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[:k]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [0, 1, 7, 100, 5000])
def test_random_scores_match_sorted(seed: int, k: int) -> None:
    rng = random.Random(seed)
    pairs = [(f"q{i:05d}", rng.random()) for i in range(2000)]
    top = LeastSimilar(k)
    for key, score in pairs:
        top.offer(key, score)
        assert len(top) <= k
    assert top.result() == reference(pairs, k)
    assert top.offered == len(pairs)


@pytest.mark.parametrize("seed", range(5))
def test_many_ties_match_sorted(seed: int) -> None:
    rng = random.Random(seed)
    pairs = [(f"q{rng.randrange(10**6):06d}", rng.randrange(5) / 4) for _ in range(1000)]
    top = LeastSimilar(37)
    for key, score in pairs:
        top.offer(key, score)
    assert top.result() == reference(pairs, 37)


def test_memory_is_bounded_by_k() -> None:
    top = LeastSimilar(10)
    rng = random.Random(1)
    for i in range(50_000):
        top.offer(f"k{i}", rng.random())
        assert len(top) <= 10
    assert len(top._kept) == 10 and len(top._heap) == 10
    scores = [s for _, s in top.result()]
    assert scores == sorted(scores) and scores[-1] < 0.001  # the 10 lowest of 50,000


def test_ties_are_broken_by_key_whatever_the_order() -> None:
    pairs = [("d", 0.5), ("b", 0.5), ("a", 0.7), ("c", 0.5), ("e", 0.1)]
    expected = [("e", 0.1), ("b", 0.5), ("c", 0.5)]
    for order in (pairs, pairs[::-1], sorted(pairs)):
        top = LeastSimilar(3)
        for key, score in order:
            top.offer(key, score)
        assert top.result() == expected
    # A tie at the boundary: the smaller key wins even when it comes last.
    for order in (["b", "a"], ["a", "b"]):
        top = LeastSimilar(1)
        for key in order:
            top.offer(key, 0.5)
        assert top.result() == [("a", 0.5)]


def test_nan_is_never_kept_and_infinities_order() -> None:
    top = LeastSimilar(3)
    for key, score in [
        ("n1", math.nan),
        ("hi", math.inf),
        ("lo", -math.inf),
        ("n2", math.nan),
        ("mid", 0.2),
    ]:
        top.offer(key, score)
    assert top.result() == [("lo", -math.inf), ("mid", 0.2), ("hi", math.inf)]
    assert top.offered == 5


def test_a_repeated_key_counts_once_with_its_lowest_score() -> None:
    top = LeastSimilar(2)
    for key, score in [("a", 0.9), ("b", 0.5), ("a", 0.3), ("a", 0.8), ("c", 0.4), ("b", 0.1)]:
        top.offer(key, score)
    assert top.result() == [("b", 0.1), ("a", 0.3)]
    pairs = [(f"q{i % 50}", random.Random(i).random()) for i in range(500)]
    top = LeastSimilar(20)
    for key, score in pairs:
        top.offer(key, score)
    assert top.result() == reference(pairs, 20)


def test_threshold_and_bad_k() -> None:
    top = LeastSimilar(2)
    assert top.threshold() == math.inf
    top.offer("a", 0.4)
    assert top.threshold() == math.inf
    top.offer("b", 0.6)
    assert top.threshold() == 0.6
    top.offer("c", 0.5)
    assert top.threshold() == 0.5
    assert LeastSimilar(0).threshold() == math.inf
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(UsageError):
            LeastSimilar(bad)  # type: ignore[arg-type]
