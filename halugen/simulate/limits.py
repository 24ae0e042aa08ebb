"""The simulated account's rate limits: per-minute token buckets and OpenAI's headers.

Each limit is a bucket whose capacity is the per-minute figure and which refills
continuously (capacity / 60 per second), the way OpenAI describes its limiter. A request
is admitted only when both buckets hold enough; a refused request takes nothing.

Quantised (``quantum_s``): OpenAI announces per-minute limits but enforces them over short
windows: 1,200 requests/min behaves like 20 per second, and a burst above that is refused
although the minute is far from used up. Each limit then also has a bucket holding only
``quantum_s`` seconds of its rate (refilled at the same rate), which must hold the request
too; and a refused request still counts, as OpenAI's do: it takes what it asked for from
every bucket, down to empty, so a client that hammers a full bucket keeps it empty. The
headers still describe the minute (limit, remaining, time until full), which is why a
client that only reads them is surprised. ``quantum_s=60`` is the minute bucket alone with
refused requests counting: a full minute may burst.

A request larger than a quantum bucket (but within the minute) goes when that bucket is
full and leaves it in debt; one larger than the minute is refused as too large.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Admission", "RateLimits", "TokenBucket", "format_duration"]


def format_duration(seconds: float) -> str:
    """Go-style durations as OpenAI sends them: "120ms", "1s", "17.5s", "6m0s"."""
    if seconds < 1.0:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60.0)
    secs = f"{rest:.3f}".rstrip("0").rstrip(".")
    if minutes >= 1:
        return f"{int(minutes)}m{secs}s"
    return f"{secs}s"


def _figure(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}".rstrip("0")


class TokenBucket:
    """Capacity = the per-minute limit; refilled continuously; starts full."""

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, per_minute: float, now: float) -> None:
        self.capacity = float(per_minute)
        self.rate = self.capacity / 60.0  # units per second
        self.level = self.capacity
        self.stamp = now

    def refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (after ``refill``)."""
        short = min(amount, self.capacity) - self.level
        if short <= 1e-9 * max(1.0, amount):  # float slack: refilled exactly is enough
            return 0.0
        # a request larger than the whole bucket goes when it is full; report the time to full
        return short / self.rate

    def spend_refused(self, amount: float) -> None:
        """A refused request that still counts: take ``amount``, but never below empty."""
        self.level = max(min(self.level, 0.0), self.level - amount)

    def reset_after(self) -> float:
        """Seconds until the bucket is full again (OpenAI's x-ratelimit-reset-*)."""
        return (self.capacity - self.level) / self.rate if self.rate > 0 else 0.0


@dataclass(frozen=True, slots=True)
class Admission:
    ok: bool
    headers: dict[str, str]
    retry_after: float = 0.0  # seconds, when refused
    limit: str = ""  # "requests" | "tokens": which bucket refused
    too_large: bool = False  # the request alone exceeds the tokens-per-minute limit


class RateLimits:
    """Requests and tokens buckets of one simulated account (see the module docstring)."""

    def __init__(
        self,
        rpm: float | None,
        tpm: float | None,
        clock: Callable[[], float],
        *,
        quantum_s: float | None = None,
    ) -> None:
        self._rpm = rpm
        self._tpm = tpm
        self._clock = clock
        self._quantum_s = quantum_s
        self.reset()

    @property
    def active(self) -> bool:
        return self._requests is not None or self._tokens is not None

    def reset(self) -> None:
        now = self._clock()
        self._requests = TokenBucket(self._rpm, now) if self._rpm else None
        self._tokens = TokenBucket(self._tpm, now) if self._tpm else None
        # (name, bucket) pairs that must hold a request: the minute, and the quantum if any
        self._enforcing: list[tuple[str, TokenBucket]] = []
        for name, per_minute, minute in (
            ("requests", self._rpm, self._requests),
            ("tokens", self._tpm, self._tokens),
        ):
            if minute is None or per_minute is None:
                continue
            self._enforcing.append((name, minute))
            q = self._quantum_s
            if q is not None and q < 60.0:
                quantum = TokenBucket(per_minute, now)
                quantum.capacity = quantum.level = max(1.0, per_minute * q / 60.0)
                self._enforcing.append((name, quantum))

    def admit(self, tokens: int) -> Admission:
        """Take one request and ``tokens`` tokens, or refuse and say how long to wait."""
        now = self._clock()
        wait = 0.0
        limit = ""
        too_large = self._tokens is not None and tokens > self._tokens.capacity
        for name, bucket in self._enforcing:
            bucket.refill(now)
            w = bucket.wait_for(1.0 if name == "requests" else tokens)
            if w > wait:
                wait, limit = w, name
        if too_large and not limit:
            limit = "tokens"
        if limit:
            if self._quantum_s is not None and not too_large:  # refused ones count too
                for name, bucket in self._enforcing:
                    bucket.spend_refused(1.0 if name == "requests" else tokens)
                wait = max(
                    bucket.wait_for(1.0 if name == "requests" else tokens)
                    for name, bucket in self._enforcing
                )
            return Admission(
                ok=False,
                headers=self._headers(),
                retry_after=wait,
                limit=limit,
                too_large=too_large,
            )
        for name, bucket in self._enforcing:
            bucket.level -= 1.0 if name == "requests" else tokens
        return Admission(ok=True, headers=self._headers())

    def headers(self) -> dict[str, str]:
        """The current x-ratelimit-* headers without taking anything."""
        if not self.active:
            return {}
        now = self._clock()
        for bucket in (self._requests, self._tokens):
            if bucket is not None:
                bucket.refill(now)
        return self._headers()

    def _headers(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name, bucket in (("requests", self._requests), ("tokens", self._tokens)):
            if bucket is None:
                continue
            out[f"x-ratelimit-limit-{name}"] = _figure(bucket.capacity)
            out[f"x-ratelimit-remaining-{name}"] = str(max(0, math.floor(bucket.level)))
            out[f"x-ratelimit-reset-{name}"] = format_duration(bucket.reset_after())
        return out
