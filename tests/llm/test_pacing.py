"""The pacer on explicit times: even spending, debt for large amounts, corrections, retuning."""

from __future__ import annotations

import itertools
import random

import pytest

from halugen.llm.pacing import BURST_S, Pacer
from halugen.simulate.limits import RateLimits


def spend(pacer: Pacer, amount: float, count: int, start: float = 0.0) -> list[float]:
    """Admit ``count`` amounts as early as the pacer allows; their admission times."""
    now, times = start, []
    for _ in range(count):
        now += pacer.delay(amount, now)
        pacer.take(amount, now)
        times.append(now)
    return times


def test_requests_are_spaced_evenly_after_the_first_threshold() -> None:
    pacer = Pacer(1200, 0.0)  # 20 a second
    times = spend(pacer, 1, 41)
    assert times[0] == times[1] == 0.0  # a fresh pacer holds its threshold: 2 requests here
    gaps = [b - a for a, b in itertools.pairwise(times[1:])]
    assert gaps == pytest.approx([0.05] * len(gaps))
    assert times[-1] == pytest.approx(2.0 - 0.05, abs=0.051)


def test_an_idle_pacer_lets_at_most_a_tenth_of_a_second_go_together() -> None:
    pacer = Pacer(60_000, 0.0)  # 1,000 a second
    pacer.take(pacer.threshold, 0.0)
    together = 0
    while pacer.delay(1, 3600.0) == 0.0:
        pacer.take(1, 3600.0)
        together += 1
    assert together == pytest.approx(1000 * 2 * BURST_S, abs=1)  # threshold + BURST_S of rate
    assert together < 1000  # far less than what a second allows


def test_an_amount_larger_than_the_threshold_goes_into_debt_and_the_next_waits_for_it() -> None:
    pacer = Pacer(60_000, 0.0)  # 1,000 tokens a second, threshold 100
    assert pacer.threshold == pytest.approx(100)
    assert pacer.delay(10_000, 0.0) == 0.0  # holds the threshold: goes at once
    pacer.take(10_000, 0.0)
    assert pacer.level == pytest.approx(-9_900)
    assert pacer.delay(50, 0.0) == pytest.approx(9.95)  # 9,900 owed, then its own 50
    assert pacer.delay(5_000, 0.0) == pytest.approx(10.0)  # owed + the threshold


def test_adjust_gives_back_or_charges_and_never_overfills() -> None:
    pacer = Pacer(60_000, 0.0)
    pacer.take(1_000, 0.0)  # level -900
    pacer.adjust(400, 0.0)  # the server counted 600
    assert pacer.level == pytest.approx(-500)
    pacer.adjust(-100, 0.0)  # it counted more than charged
    assert pacer.level == pytest.approx(-600)
    pacer.adjust(10**9, 0.0)
    assert pacer.level == pytest.approx(pacer.capacity)


def test_lowering_the_rate_keeps_the_debt_and_drops_the_credit() -> None:
    pacer = Pacer(100_000, 0.0)
    lower = pacer.retuned(1_200, 0.0)  # the fresh pacer's credit is not spent at 20/s
    assert lower.level == 0.0
    assert lower.delay(1, 0.0) == pytest.approx(0.05)
    pacer = Pacer(600, 0.0)
    pacer.take(3, 0.0)  # 2 owed = 0.2 s at 10/s
    lower = pacer.retuned(300, 0.0)
    assert lower.delay(1, 0.0) == pytest.approx(0.2 + 0.2)  # same time owed, then 1 at 5/s
    higher = Pacer(600, 0.0).retuned(1200, 0.0)
    assert higher.level == pytest.approx(2.0)  # the full threshold, scaled up


def test_what_the_pacer_admits_a_quantised_provider_admits_whatever_the_sizes_and_pauses() -> None:
    # The simulator's account enforces 120,000 tokens/min over one second (2,000 tokens);
    # it admits a request larger than that only when its bucket is full. Idle spells fill
    # both buckets; a pacer that only kept a tenth of a second then sent the next long
    # prompt before the provider's bucket was full again.
    rng = random.Random(7)
    clock = [0.0]
    provider = RateLimits(None, 120_000, lambda: clock[0], quantum_s=1.0)
    pacer = Pacer(120_000 * 0.97, 0.0)
    now, refused = 0.0, 0
    for _ in range(3000):
        if rng.random() < 0.1:
            now += rng.uniform(0.0, 3.0)  # nothing to send for a while
        amount = rng.randint(50, 3500)
        now += pacer.delay(amount, now)
        pacer.take(amount, now)
        clock[0] = now
        refused += not provider.admit(amount).ok
    assert refused == 0


def test_a_long_prompt_after_an_idle_spell_waits_for_a_full_window() -> None:
    pacer = Pacer(60_000, 0.0)  # 1,000 a second: a window of 1,000, a threshold of 100
    assert pacer.window == pytest.approx(1_000)
    pacer.take(3_000, 100.0)  # after a long idle spell: both buckets were full
    assert pacer.window_level == pytest.approx(-2_000)
    # the next long prompt waits until the window is full again (3 s), not only until the
    # tenth-of-a-second bucket is paid back and holds its threshold (2.9 s)
    assert pacer.delay(2_500, 100.0) == pytest.approx(3.0)
    assert pacer.delay(50, 100.0) == pytest.approx(2.85)  # a short one: the debt and its 50
