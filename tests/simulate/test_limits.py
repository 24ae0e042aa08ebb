"""Per-minute token buckets and the x-ratelimit-* header values, on a hand-moved clock."""

from __future__ import annotations

import pytest

from halugen.simulate.limits import RateLimits, format_duration
from halugen.simulate.tokens import count_prompt, count_text, truncate_to_tokens

from ._support import FakeClock


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0ms"),
        (0.12, "120ms"),
        (0.9994, "1000ms"),
        (1.0, "1s"),
        (17.5, "17.5s"),
        (59.25, "59.25s"),
        (60.0, "1m0s"),
        (90.5, "1m30.5s"),
        (360.0, "6m0s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_requests_bucket_refills_continuously() -> None:
    clock = FakeClock()
    limits = RateLimits(60, None, clock)  # one request per second, burst of 60
    assert all(limits.admit(10).ok for _ in range(60))
    refused = limits.admit(10)
    assert not refused.ok and refused.limit == "requests"
    assert refused.retry_after == pytest.approx(1.0)
    assert refused.headers["x-ratelimit-remaining-requests"] == "0"
    assert refused.headers["x-ratelimit-limit-requests"] == "60"
    assert refused.headers["x-ratelimit-reset-requests"] == "1m0s"
    clock.advance(0.5)
    assert not limits.admit(10).ok
    clock.advance(0.5)
    granted = limits.admit(10)
    assert granted.ok
    assert "x-ratelimit-limit-tokens" not in granted.headers


def test_tokens_bucket_and_refusals_take_nothing() -> None:
    clock = FakeClock()
    limits = RateLimits(1000, 6000, clock)  # 100 tokens per second
    assert limits.admit(5000).ok
    refused = limits.admit(2000)  # 1000 left, 1000 short: 10 s
    assert not refused.ok and refused.limit == "tokens"
    assert refused.retry_after == pytest.approx(10.0)
    # the refused request took neither a request nor tokens
    assert refused.headers["x-ratelimit-remaining-requests"] == "999"
    assert refused.headers["x-ratelimit-remaining-tokens"] == "1000"
    assert limits.admit(1000).ok
    assert limits.headers()["x-ratelimit-remaining-tokens"] == "0"
    clock.advance(60)
    assert limits.headers()["x-ratelimit-remaining-tokens"] == "6000"
    assert limits.headers()["x-ratelimit-reset-tokens"] == "0ms"


def test_request_larger_than_the_minute_is_refused_as_too_large() -> None:
    limits = RateLimits(None, 1000, FakeClock())
    refused = limits.admit(5000)
    assert not refused.ok and refused.too_large and refused.limit == "tokens"


def test_no_limits_no_headers() -> None:
    limits = RateLimits(None, None, FakeClock())
    assert limits.admit(10**9).ok
    assert limits.headers() == {}


def test_token_rule() -> None:
    assert count_text("") == 0
    assert count_text("abcd") == 1
    assert count_text("abcde") == 2
    assert count_text("é") == 1  # two bytes
    assert count_prompt(["abcd", "abcdefgh"]) == 3 + (4 + 1) + (4 + 2)
    text, cut = truncate_to_tokens("héllo world", 2)
    assert cut and text.encode() == "héllo world".encode()[:8]
    assert truncate_to_tokens("short", 10) == ("short", False)
    text, cut = truncate_to_tokens("ééé", 1)  # the cut falls inside a character
    assert cut and text == "éé"


# -- quantised limits ------------------------------------------------------------------------


def test_quantised_requests_allow_only_a_second_of_rate_at_once() -> None:
    clock = FakeClock()
    limits = RateLimits(1200, None, clock, quantum_s=1.0)  # 20 a second
    assert all(limits.admit(10).ok for _ in range(20))
    refused = limits.admit(10)
    assert not refused.ok and refused.limit == "requests"
    # the headers still describe the minute: plenty left by their account
    assert refused.headers["x-ratelimit-limit-requests"] == "1200"
    assert int(refused.headers["x-ratelimit-remaining-requests"]) > 1000
    assert refused.retry_after == pytest.approx(0.05)  # one twentieth of a second
    clock.advance(0.05)
    assert limits.admit(10).ok


def test_refused_requests_count_against_a_quantised_limit() -> None:
    clock = FakeClock()
    limits = RateLimits(1200, None, clock, quantum_s=1.0)
    for _ in range(20):
        limits.admit(1)
    clock.advance(0.04)  # 0.8 of a request refilled
    assert not limits.admit(1).ok  # refused, and it took the 0.8
    clock.advance(0.04)
    assert not limits.admit(1).ok  # so this one is refused too (0.8 again, not 1.6)
    clock.advance(0.05)
    assert limits.admit(1).ok  # a client that waits the retry-after gets through
    # without quantisation a refused request takes nothing
    plain = RateLimits(60, None, clock)
    for _ in range(60):
        plain.admit(1)
    clock.advance(0.5)
    assert not plain.admit(1).ok
    clock.advance(0.5)
    assert plain.admit(1).ok


def test_sixty_second_quantum_lets_a_whole_minute_burst() -> None:
    clock = FakeClock()
    limits = RateLimits(1200, None, clock, quantum_s=60.0)
    assert all(limits.admit(1).ok for _ in range(1200))
    assert not limits.admit(1).ok


def test_quantised_tokens_and_a_request_larger_than_the_quantum() -> None:
    clock = FakeClock()
    limits = RateLimits(None, 60_000, clock, quantum_s=1.0)  # 1,000 tokens a second
    assert limits.admit(600).ok
    refused = limits.admit(600)  # 400 left in the second
    assert not refused.ok and refused.limit == "tokens" and not refused.too_large
    clock.advance(10)
    big = limits.admit(3_000)  # more than a second holds: goes when the second is full
    assert big.ok
    assert not limits.admit(1).ok  # and leaves it in debt
    clock.advance(2.0)
    assert not limits.admit(1).ok
    clock.advance(0.01)
    assert limits.admit(1).ok
    assert limits.admit(70_000).too_large  # more than the minute: never
