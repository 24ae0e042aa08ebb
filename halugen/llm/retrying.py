"""The one retry loop: which errors are tried again, how long to wait, and the server's hint.

Every place that tries a step again (a chat call, a Batch API step, a capability probe)
goes through ``retrying``: a ``RetryableError`` (429, 408, 409, 5xx, timeouts, dropped
connections, a 200 whose body is not what was asked) is tried again up to the policy's
attempts, after a wait drawn with full jitter from an exponential cap and never shorter
than the server's ``retry-after``; every other error goes straight to the caller.

``retry_after_seconds`` is the one reader of that hint: ``retry-after-ms`` wins when it is a
number, else ``retry-after`` in seconds. Values must be finite and not negative. An HTTP
date is not used: it needs the server's clock, and the backoff covers the rare server that
sends one.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from ..config import RetryPolicy
from ..errors import RetryableError

__all__ = ["backoff_delay", "header_number", "retry_after_seconds", "retrying"]

T = TypeVar("T")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's wait hint in seconds, or None when it gave none that can be read."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = _seconds(headers.get(name))
        if value is not None:
            return value * scale
    return None


def header_number(text: str | None) -> float | None:
    """A finite number in a response header, or None for a missing or garbled value."""
    if text is None:
        return None
    try:
        value = float(text.strip())
    except (ValueError, AttributeError):
        return None  # an HTTP date, or garbage
    return value if math.isfinite(value) else None


def _seconds(text: str | None) -> float | None:
    value = header_number(text)
    return value if value is not None and value >= 0 else None


def backoff_delay(
    attempt: int, policy: RetryPolicy, retry_after: float | None, rng: random.Random
) -> float:
    """The wait after failed attempt ``attempt`` (0 = the first): full jitter, exponential cap,
    never shorter than the server's retry-after."""
    cap = min(policy.max_delay, policy.base_delay * (2**attempt))
    delay = rng.uniform(0, cap)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    *,
    policy: RetryPolicy,
    rng: random.Random,
    max_attempts: int | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    on_retry: Callable[[RetryableError], None] | None = None,
    counts: Callable[[RetryableError], bool] | None = None,
) -> T:
    """``await attempt()`` until it returns, trying a ``RetryableError`` again.

    ``max_attempts`` overrides the policy's. The last ``RetryableError`` is raised when the
    attempts are used up; ``on_retry`` is told of each one that is tried again. ``counts``
    says whether a failure uses up an attempt (a refused connection to a server being
    restarted does not: llm/reach.py); every failure still lengthens the backoff.
    """
    limit = max(1, max_attempts or policy.max_attempts)
    used = 0  # failures that count against the limit
    tries = 0  # every failure: the backoff's exponent
    while True:
        try:
            return await attempt()
        except RetryableError as exc:
            tries += 1
            if counts is None or counts(exc):
                used += 1
            if used >= limit:
                raise
            if on_retry is not None:
                on_retry(exc)
            await sleep(backoff_delay(tries - 1, policy, exc.retry_after, rng))
