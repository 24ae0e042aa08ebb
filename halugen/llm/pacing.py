"""Spending a per-minute allowance evenly: the requests and tokens pacers of one endpoint.

Providers announce limits per minute but enforce them over short windows (OpenAI: about one
second), so a client that fires a second's worth at once is answered 429 although it is far
below the minute's figure. A ``Pacer`` therefore never holds more than ``BURST_S`` seconds of
rate: requests go out evenly spaced, and after an idle spell at most a tenth of a second's worth
leaves together.

It is a bucket refilled continuously at ``per_minute / 60`` per second. An amount goes when the
bucket holds it, or, for an amount larger than ``threshold`` (a long prompt against a small
tokens/min limit), as soon as the bucket holds ``threshold``: the level then goes negative and
whoever comes next waits for the debt, so every unit is still paid for and nothing is too large
to ever go. The bucket holds ``BURST_S`` seconds more than ``threshold`` so that a waiter the
event loop wakes a little late does not lose the time it overslept.

A second bucket holds ``WINDOW_S`` (one second) of rate, as the provider's own does: an
amount needs that much of it (all of it, for an amount larger than a second's worth). The
provider admits a request larger than its one-second bucket only when that bucket is full, so
a pacer that only paid its debt to a tenth of a second sent the next long prompt while the
provider's bucket was short of full, and got a 429 (bench/ratelimits.py: 1-3 in 80 s with
summarization prompts against 120,000 tokens/min). Spending no faster than the provider
refills, from no fuller a bucket, the window's shortfall is never smaller than the
provider's, so what it admits the provider admits.

``adjust`` corrects a charge after the fact: the tokens a request was charged at admission are
a worst-case estimate; when the server reports what it counted, the difference comes back (or
is charged). Time is passed in (``now``), so this module never reads a clock.
"""

from __future__ import annotations

__all__ = ["BURST_S", "WINDOW_S", "Pacer"]

BURST_S = 0.1  # seconds of rate a bucket holds beyond one admission's worth
WINDOW_S = 1.0  # seconds over which providers enforce a per-minute limit (OpenAI: about one)
_EPS = 1e-9  # float slack: a level short of the need by rounding only counts as enough


class Pacer:
    """An evenly spending bucket for one per-minute limit; see the module docstring."""

    __slots__ = (
        "capacity",
        "level",
        "per_minute",
        "rate",
        "stamp",
        "threshold",
        "window",
        "window_level",
    )

    def __init__(self, per_minute: float, now: float) -> None:
        self.per_minute = float(per_minute)
        self.rate = self.per_minute / 60.0  # units per second
        self.threshold = max(1.0, self.rate * BURST_S)
        self.capacity = self.threshold + self.rate * BURST_S
        self.level = self.threshold  # a fresh pacer lets one admission's worth go at once
        self.window = max(1.0, self.rate * WINDOW_S)
        self.window_level = self.window
        self.stamp = now

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            gained = (now - self.stamp) * self.rate
            self.level = min(self.capacity, self.level + gained)
            self.window_level = min(self.window, self.window_level + gained)
            self.stamp = now

    def delay(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` may go (0.0: now)."""
        self._refill(now)
        need = min(amount, self.threshold)
        need_window = min(amount, self.window)
        short = max(need - self.level, need_window - self.window_level)
        if short <= _EPS * max(1.0, need_window):
            return 0.0
        return short / self.rate

    def take(self, amount: float, now: float) -> None:
        """Spend ``amount`` (after ``delay`` said 0); the levels may go negative."""
        self._refill(now)
        self.level -= amount
        self.window_level -= amount

    def adjust(self, amount: float, now: float) -> None:
        """Give back ``amount`` (negative: charge more) for an admission already made."""
        self._refill(now)
        self.level = min(self.capacity, self.level + amount)
        self.window_level = min(self.window, self.window_level + amount)

    def empty(self) -> None:
        """Nothing left to spend now (a window some requests already went into)."""
        self.level = 0.0
        self.window_level = 0.0

    def retuned(self, per_minute: float, now: float) -> Pacer:
        """A pacer at another rate that keeps this one's debt as time owed.

        Credit is kept only when the rate goes up: a pace lowered because the server said so
        (``--rpm 100000`` against 1,200) must not first spend what the old pace had saved.
        """
        self._refill(now)
        new = Pacer(per_minute, now)
        up = new.rate > self.rate
        scaled = self.level * new.rate / self.rate
        new.level = min(new.capacity, scaled) if up else min(0.0, scaled)
        scaled = self.window_level * new.rate / self.rate
        new.window_level = min(new.window, scaled) if up else min(0.0, scaled)
        return new
