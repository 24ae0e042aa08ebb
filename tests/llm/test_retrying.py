"""The one retry loop and the one reader of ``retry-after``: what is tried again, how long it
waits, what the server's hint means; the chat client and the limiter read the hint alike."""

from __future__ import annotations

import asyncio
import random

import pytest

from halugen.config import RateLimit, RetryPolicy
from halugen.errors import FatalCallError, RateLimited, RetryableError
from halugen.llm.limiter import RateLimiter
from halugen.llm.retrying import backoff_delay, retry_after_seconds, retrying
from tests.virtual_time import run_virtual

POLICY = RetryPolicy(max_attempts=4, base_delay=1.0, max_delay=5.0)

HEADERS = [
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after": "3"}, 3.0),
    ({"retry-after": " 2.5 "}, 2.5),
    ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
    ({"retry-after-ms": "-1", "retry-after": "4"}, 4.0),  # a bad ms value falls back
    ({"retry-after-ms": "nan", "retry-after": "inf"}, None),
    ({"retry-after": "-3"}, None),
    ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),  # a date: not used
    ({"retry-after": ""}, None),
    ({}, None),
]


@pytest.mark.parametrize(("headers", "seconds"), HEADERS)
def test_retry_after_is_read_one_way(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after_seconds(headers) == seconds


@pytest.mark.parametrize(("headers", "seconds"), HEADERS)
def test_the_limiter_cools_down_for_what_the_reader_says(
    headers: dict[str, str], seconds: float | None
) -> None:
    from halugen.llm.limiter import DEFAULT_COOLDOWN_S

    async def cooldown() -> float:
        limiter = RateLimiter(RateLimit(concurrency=4))
        limiter.observe(429, headers)
        return limiter.snapshot().cooldown_s

    expected = DEFAULT_COOLDOWN_S if seconds is None else seconds
    assert run_virtual(cooldown()) == pytest.approx(expected)


def test_backoff_is_full_jitter_under_an_exponential_cap_and_never_below_the_hint() -> None:
    rng = random.Random(1)
    for attempt, cap in ((0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)):
        draws = [backoff_delay(attempt, POLICY, None, rng) for _ in range(200)]
        assert min(draws) >= 0 and max(draws) <= cap
        assert max(draws) > cap * 0.8  # the whole range is used
    assert all(backoff_delay(0, POLICY, 7.0, rng) == 7.0 for _ in range(20))


def run_loop(outcomes: list[BaseException | str], **kw: object) -> tuple[object, list[float]]:
    waits: list[float] = []
    seen: list[BaseException] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def main() -> object:
        try:
            return await retrying(
                attempt,
                policy=POLICY,
                rng=random.Random(0),
                sleep=sleep,
                on_retry=seen.append,
                **kw,  # type: ignore[arg-type]
            )
        except Exception as exc:  # the loop's verdict, returned for the test to look at
            return exc

    result = asyncio.run(main())
    assert len(seen) == len(waits)
    return result, waits


def test_retryable_errors_are_tried_again_with_the_hint_as_a_floor() -> None:
    result, waits = run_loop([RateLimited("slow", status=429, retry_after=3.0), "answer"])
    assert result == "answer" and waits == [3.0]


def test_the_last_retryable_error_comes_out_when_the_attempts_are_used_up() -> None:
    errors = [RetryableError(f"HTTP 503 #{i}", status=503) for i in range(4)]
    result, waits = run_loop(list(errors))
    assert result is errors[-1] and len(waits) == 3
    result, waits = run_loop([RetryableError("x", status=503), "late"], max_attempts=1)
    assert isinstance(result, RetryableError) and waits == []


def test_other_errors_are_never_tried_again() -> None:
    fatal = FatalCallError("HTTP 400", status=400)
    result, waits = run_loop([fatal, "never"])
    assert result is fatal and waits == []
