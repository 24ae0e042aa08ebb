"""The simulated account's rate limits: per-minute token buckets and OpenAI's headers.

Each limit is a bucket whose capacity is the per-minute figure and which refills
continuously (capacity / 60 per second), the way OpenAI describes its limiter. A request
is admitted only when both buckets hold enough; a refused request takes nothing.
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
        if amount <= self.level:
            return 0.0
        # a request larger than the whole bucket never fits; report the time to full
        return (min(amount, self.capacity) - self.level) / self.rate

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
    """Requests and tokens buckets of one simulated account."""

    def __init__(self, rpm: float | None, tpm: float | None, clock: Callable[[], float]) -> None:
        self._rpm = rpm
        self._tpm = tpm
        self._clock = clock
        self.reset()

    @property
    def active(self) -> bool:
        return self._requests is not None or self._tokens is not None

    def reset(self) -> None:
        now = self._clock()
        self._requests = TokenBucket(self._rpm, now) if self._rpm else None
        self._tokens = TokenBucket(self._tpm, now) if self._tpm else None

    def admit(self, tokens: int) -> Admission:
        """Take one request and ``tokens`` tokens, or refuse and say how long to wait."""
        now = self._clock()
        req, tok = self._requests, self._tokens
        wait = 0.0
        limit = ""
        too_large = False
        if req is not None:
            req.refill(now)
            w = req.wait_for(1.0)
            if w > wait:
                wait, limit = w, "requests"
        if tok is not None:
            tok.refill(now)
            w = tok.wait_for(tokens)
            too_large = tokens > tok.capacity
            if w > wait or (too_large and not limit):
                wait, limit = w, "tokens"
        if limit:
            return Admission(
                ok=False,
                headers=self._headers(),
                retry_after=wait,
                limit=limit,
                too_large=too_large,
            )
        if req is not None:
            req.level -= 1.0
        if tok is not None:
            tok.level -= tokens
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
