"""Client-side rate limiting: requests/min, tokens/min, an adaptive concurrency cap, fair queueing.

One ``RateLimiter`` guards one endpoint (one key). Every call does::

    async with limiter.slot(estimated_tokens):
        response = await transport.post(...)
        limiter.observe(response.status, response.headers)

``slot`` admits callers strictly first-come first-served once all of these hold: no cooldown is
running, the requests bucket has 1, the tokens bucket has ``tokens``, and fewer than
``concurrency`` callers are inside. ``observe`` learns from every response:

- ``x-ratelimit-limit-requests`` / ``-tokens`` (per-minute limits, OpenAI's names): when 97% of
  the server's figure is below ours (or we had none), adopt it. The 3% margin absorbs clock skew
  and requests the server counts that we do not see (other clients of the same key).
- ``x-ratelimit-remaining-*`` at 0 with ``x-ratelimit-reset-*`` (Go durations: "1s", "6m0s",
  "120ms", "1m30.5s"): nobody starts until the reset. OpenAI (and our simulator) mean by reset
  the time until the bucket is *full* again, about a minute when it is empty; waiting all of it
  would idle a whole minute. So when the same response also gives the limit, the pause is the
  share of the reset the server needs to refill one burst of ours (``reset * burst / limit``,
  about ``WINDOW_S``); without the limit it is the whole reset. A fixed-window server that
  means "window ends" answers an early burst with 429 + retry-after, which is then honoured.
- 429: cooldown for ``retry-after-ms`` / ``retry-after`` (else 1 s) and halve the concurrency cap
  (floor 1); after every ``cap`` consecutive successes the cap grows by 1 up to the configured
  maximum (AIMD, as TCP does). A burst of 429s from requests that were already in flight when the
  cap was halved says nothing new, so only the first of them halves (when ``observe`` is called
  inside the slot, which tells it when the request started).

Why the buckets hold only ``WINDOW_S`` seconds of rate: aiolimiter's default bucket holds a whole
period, so 10,000 rpm would fire 10,000 requests at start straight into the provider's own bucket.
Two seconds keeps start-up bursts small while absorbing scheduling jitter; over any 60 s the
limiter admits at most ``rate + rate * WINDOW_S / 60``.

Why a gate: aiolimiter keeps its waiters in a heap ordered by amount, so small requests overtake a
long prompt indefinitely. One FIFO ``asyncio.Lock`` around all the waiting means at most one task
waits inside aiolimiter at a time, so its ordering never matters.

A token amount larger than the bucket (a prompt longer than ``WINDOW_S`` seconds of tokens/min)
is taken in bucket-sized parts while holding the gate: it never raises, it goes alone, and every
token is still counted against the limit.

All timing goes through the running loop's clock (``loop.time()``, ``asyncio.sleep``), as
aiolimiter's does, so tests run it on a virtual clock.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from aiolimiter import AsyncLimiter

from ..config import RateLimit
from ..errors import UsageError

__all__ = [
    "ADOPT_FRACTION",
    "DEFAULT_COOLDOWN_S",
    "WINDOW_S",
    "LimiterSnapshot",
    "RateLimiter",
    "parse_duration",
]

WINDOW_S = 2.0  # seconds of rate a bucket holds: the largest burst
ADOPT_FRACTION = 0.97  # share of a server-announced limit we aim for
DEFAULT_COOLDOWN_S = 1.0  # pause after a 429 that carries no retry-after hint

# (limiter, sequence number) of the slot the current task holds, so that ``observe`` can tell
# whether a 429 belongs to a request admitted before the last decrease.
_held: ContextVar[tuple[RateLimiter, int] | None] = ContextVar("halugen_limiter_slot", default=None)


@dataclass(frozen=True, slots=True)
class LimiterSnapshot:
    rpm_limit: float | None
    tpm_limit: float | None
    concurrency: int  # current cap (AIMD)
    max_concurrency: int
    in_flight: int
    waiting: int
    cooldown_s: float  # seconds left of a server-imposed pause, 0 if none
    rate_limited: int  # 429s observed


class RateLimiter:
    """Admission control for one endpoint; see the module docstring."""

    def __init__(self, rate: RateLimit) -> None:
        for name, value in (("rpm", rate.rpm), ("tpm", rate.tpm)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise UsageError(f"{name} must be a positive number, got {value!r}")
        if rate.concurrency < 1:
            raise UsageError(f"concurrency must be at least 1, got {rate.concurrency!r}")
        self._rpm = rate.rpm
        self._tpm = rate.tpm
        self._requests = _bucket(rate.rpm)
        self._tokens = _bucket(rate.tpm)
        self._max_concurrency = rate.concurrency
        self._concurrency = rate.concurrency
        self._in_flight = 0
        self._waiting = 0
        self._cooldown_until = -math.inf  # loop time
        self._rate_limited = 0
        self._successes = 0  # consecutive, towards the next +1
        self._next_seq = 0  # sequence number of the next admitted slot
        self._epoch = 0  # first sequence number admitted after the last decrease
        self._gate = asyncio.Lock()  # FIFO: waiters are served in arrival order
        self._freed = asyncio.Event()  # a slot was released or the cap grew
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- admission -----------------------------------------------------------------------------

    def slot(self, tokens: int) -> AbstractAsyncContextManager[None]:
        """Wait (FIFO) for a request slot worth ``tokens``; hold the concurrency slot until exit."""
        return self._slot(max(0, int(tokens)))

    @asynccontextmanager
    async def _slot(self, tokens: int) -> AsyncIterator[None]:
        self._waiting += 1
        try:
            async with self._gate:
                await self._admit(tokens)
                # No await between the admission check and taking the slot: a cancellation
                # cannot land in between, so a cancelled waiter never leaks a slot.
                self._in_flight += 1
        finally:
            self._waiting -= 1
        seq = self._next_seq
        self._next_seq += 1
        held = _held.set((self, seq))
        try:
            yield
        finally:
            _held.reset(held)
            self._in_flight -= 1
            self._freed.set()

    async def _admit(self, tokens: int) -> None:
        """Wait, holding the gate, until this caller may start."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        need_request = True
        while True:
            while self._in_flight >= self._concurrency:
                self._freed.clear()
                await self._freed.wait()
            while (left := self._cooldown_until - loop.time()) > 0:
                await asyncio.sleep(left)
            if need_request:
                need_request = False
                if (requests := self._requests) is not None:
                    await requests.acquire(1)
            # Buckets are re-read on every pass: ``observe`` may replace them while we wait.
            while tokens > 0 and (bucket := self._tokens) is not None:
                part = min(tokens, bucket.max_rate)
                await bucket.acquire(part)
                tokens -= part
            tokens = 0
            # Waiting on the buckets may have let a 429 halve the cap or start a cooldown: what
            # was paid stays paid (erring slow), but the new pause or cap is still respected.
            if self._in_flight < self._concurrency and self._cooldown_until <= loop.time():
                return

    # -- learning ------------------------------------------------------------------------------

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Learn from one response: its status and its headers (lower-case names).

        Call it from the event loop, ideally inside the slot the request used. Header values
        that do not parse are ignored; this never raises on what a server sends.
        """
        loop = asyncio.get_running_loop()
        self._loop = loop
        now = loop.time()

        limit_requests = _number(headers.get("x-ratelimit-limit-requests"))
        limit_tokens = _number(headers.get("x-ratelimit-limit-tokens"))
        self._adopt_rpm(limit_requests)
        self._adopt_tpm(limit_tokens)
        for kind, limit, bucket in (
            ("requests", limit_requests, self._requests),
            ("tokens", limit_tokens, self._tokens),
        ):
            remaining = _number(headers.get(f"x-ratelimit-remaining-{kind}"))
            reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
            if remaining is not None and remaining <= 0 and reset is not None:
                share = 1.0
                if limit is not None and limit > 0 and bucket is not None:
                    share = min(1.0, bucket.max_rate / limit)
                self._cool_until(now + reset * share)

        if status == 429:
            self._rate_limited += 1
            hint = _retry_after(headers)
            self._cool_until(now + (DEFAULT_COOLDOWN_S if hint is None else hint))
            self._decrease()
        elif status < 400:
            self._increase()
        elif status >= 500:
            self._successes = 0  # the server is struggling: no growth on this run
        # other 4xx are the request's own fault and say nothing about capacity

    def _adopt_rpm(self, server: float | None) -> None:
        if server is not None and server > 0:
            target = server * ADOPT_FRACTION
            if self._rpm is None or target < self._rpm:
                self._rpm = target
                self._requests = _bucket(target)

    def _adopt_tpm(self, server: float | None) -> None:
        if server is not None and server > 0:
            target = server * ADOPT_FRACTION
            if self._tpm is None or target < self._tpm:
                self._tpm = target
                self._tokens = _bucket(target)

    def _cool_until(self, until: float) -> None:
        self._cooldown_until = max(self._cooldown_until, until)

    def _decrease(self) -> None:
        held = _held.get()
        if held is not None and held[0] is self and held[1] < self._epoch:
            return  # admitted before the last decrease: already accounted for
        self._concurrency = max(1, self._concurrency // 2)
        self._successes = 0
        self._epoch = self._next_seq

    def _increase(self) -> None:
        self._successes += 1
        if self._successes >= self._concurrency:
            self._successes = 0
            if self._concurrency < self._max_concurrency:
                self._concurrency += 1
                self._freed.set()

    # -- reporting -----------------------------------------------------------------------------

    def snapshot(self) -> LimiterSnapshot:
        cooldown = 0.0
        loop = self._loop
        if loop is not None and not loop.is_closed():
            cooldown = max(0.0, self._cooldown_until - loop.time())
        return LimiterSnapshot(
            rpm_limit=self._rpm,
            tpm_limit=self._tpm,
            concurrency=self._concurrency,
            max_concurrency=self._max_concurrency,
            in_flight=self._in_flight,
            waiting=self._waiting,
            cooldown_s=cooldown,
            rate_limited=self._rate_limited,
        )


def _bucket(per_minute: float | None) -> AsyncLimiter | None:
    """A bucket refilling at ``per_minute`` that holds ``WINDOW_S`` seconds of it (at least 1)."""
    if per_minute is None:
        return None
    capacity = max(per_minute * WINDOW_S / 60.0, 1.0)  # a single request must always fit
    return AsyncLimiter(max_rate=capacity, time_period=capacity * 60.0 / per_minute)


def _number(text: str | None) -> float | None:
    """A finite float, or None for a missing or garbled header value."""
    if text is None:
        return None
    try:
        value = float(text.strip())
    except (ValueError, AttributeError):
        return None
    return value if math.isfinite(value) else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after``; an HTTP date is not used."""
    ms = _number(headers.get("retry-after-ms"))
    if ms is not None and ms >= 0:
        return ms / 1000.0
    seconds = _number(headers.get("retry-after"))
    if seconds is not None and seconds >= 0:
        return seconds
    return None


_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_DURATION = re.compile(rf"(?:{_PART.pattern})+")


def parse_duration(text: str | None) -> float | None:
    """Seconds in a Go-style duration ("6m0s", "120ms", "1m30.5s"); a bare number is seconds.

    None for anything else (missing, empty, negative, garbled).
    """
    if text is None:
        return None
    text = text.strip()
    if _DURATION.fullmatch(text):
        return sum(float(n) * _UNIT_S[unit] for n, unit in _PART.findall(text))
    value = _number(text)
    return value if value is not None and value >= 0 else None
