"""The rate limiter on a virtual clock: rates held, fairness, AIMD, cooldowns, header learning."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Mapping, Sequence

import pytest

from halugen.config import RateLimit
from halugen.errors import UsageError
from halugen.llm.limiter import (
    ADOPT_FRACTION,
    DEFAULT_COOLDOWN_S,
    WINDOW_S,
    LimiterSnapshot,
    RateLimiter,
    parse_duration,
)
from tests.virtual_time import run_virtual


def now() -> float:
    return asyncio.get_running_loop().time()


async def admit_all(
    limiter: RateLimiter, amounts: Sequence[int], hold: float = 0.0
) -> list[tuple[float, int]]:
    """Queue one slot per amount, in order; return (admission time, index) in admission order."""
    admitted: list[tuple[float, int]] = []

    async def one(i: int, tokens: int) -> None:
        async with limiter.slot(tokens):
            admitted.append((now(), i))
            if hold:
                await asyncio.sleep(hold)

    async with asyncio.TaskGroup() as tg:
        for i, tokens in enumerate(amounts):
            tg.create_task(one(i, tokens))
            await asyncio.sleep(0)  # each task reaches the queue before the next is created
    return admitted


def max_in_window(times: Sequence[float], weights: Sequence[float], window: float) -> float:
    """The largest total weight admitted in any half-open window [t, t + window)."""
    prefix = [0.0]
    for w in weights:
        prefix.append(prefix[-1] + w)
    best = 0.0
    for i, t in enumerate(times):
        j = bisect.bisect_left(times, t + window)
        best = max(best, prefix[j] - prefix[i])
    return best


async def drain(limiter: RateLimiter) -> None:
    """Let all callbacks run so that the limiter reaches a quiet state."""
    for _ in range(5):
        await asyncio.sleep(0)


# -- rates ---------------------------------------------------------------------------------------


def test_start_up_burst_is_a_few_seconds_of_rate_not_a_minute() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(rpm=10_000, concurrency=100_000))
        return await admit_all(limiter, [1] * 1000)

    at_start = sum(1 for t, _ in run_virtual(main()) if t == 0.0)
    assert 1 <= at_start <= 10_000 / 60 * 5


def test_requests_per_minute_is_held() -> None:
    rpm, n = 600.0, 1200
    burst = rpm * WINDOW_S / 60

    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(rpm=rpm, concurrency=10_000)), [1] * n)

    admitted = run_virtual(main())
    times = [t for t, _ in admitted]
    assert len(times) == n
    # everything after the initial burst is paced at rpm/60 per second
    expected = (n - burst) / (rpm / 60)
    assert times[-1] == pytest.approx(expected, rel=0.01)
    measured_per_min = (n - burst) / times[-1] * 60
    assert measured_per_min == pytest.approx(rpm, rel=0.03)
    assert measured_per_min <= rpm * 1.0001
    assert max_in_window(times, [1] * n, 60.0) <= rpm + burst
    # and it is not gratuitously slow either: a full minute gets at least the limit
    assert max_in_window(times, [1] * n, 60.0) >= rpm


def test_tokens_per_minute_is_held() -> None:
    tpm = 60_000.0
    amounts = [50, 200, 800, 120] * 150  # 175,500 tokens in mixed sizes
    burst = tpm * WINDOW_S / 60

    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(tpm=tpm, concurrency=10_000)), amounts)

    admitted = run_virtual(main())
    times = [t for t, _ in admitted]
    weights = [amounts[i] for _, i in admitted]
    total = sum(amounts)
    # each admission pays before it goes, so the last one finishes paying its own amount
    assert times[-1] == pytest.approx((total - burst) / (tpm / 60), rel=0.02)
    assert total / (times[-1] + burst / (tpm / 60)) * 60 == pytest.approx(tpm, rel=0.03)
    assert max_in_window(times, weights, 60.0) <= tpm + burst


def test_oversize_token_amount_goes_alone_and_is_fully_counted() -> None:
    tpm = 60_000.0  # bucket holds 2,000 tokens; refills 1,000/s

    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(tpm=tpm))
        return await admit_all(limiter, [10_000, 1_000])

    admitted = run_virtual(main())
    assert [i for _, i in admitted] == [0, 1]
    # 10,000 tokens: 2,000 from the full bucket, 8,000 more at 1,000/s
    assert admitted[0][0] == pytest.approx(8.0, abs=0.01)
    # the next one waits for its own 1,000 behind the big one's debt
    assert admitted[1][0] == pytest.approx(9.0, abs=0.01)


def test_zero_tokens_and_no_limits_admit_immediately() -> None:
    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(concurrency=100_000)), [0, 5, 10**9] * 2000)

    admitted = run_virtual(main())
    assert len(admitted) == 6000
    assert max(t for t, _ in admitted) == 0.0


def test_tiny_rate_still_admits_single_requests() -> None:
    # 3 rpm: 2 s of rate is 0.1 request; the bucket must still hold one whole request
    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(rpm=3)), [1] * 4)

    times = [t for t, _ in run_virtual(main())]
    assert times == pytest.approx([0.0, 20.0, 40.0, 60.0], abs=0.01)


def test_invalid_settings_are_usage_errors() -> None:
    for rate in (
        RateLimit(rpm=0),
        RateLimit(tpm=-5),
        RateLimit(rpm=float("nan")),
        RateLimit(concurrency=0),
    ):
        with pytest.raises(UsageError):
            RateLimiter(rate)


# -- fairness ------------------------------------------------------------------------------------


def test_long_prompt_queued_first_is_served_before_short_ones() -> None:
    # aiolimiter alone orders its waiters by amount: the 5,000-token prompt would wait until
    # the 100 short ones had all gone. Behind the FIFO gate it goes first.
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(tpm=60_000))  # bucket 2,000 tokens, 1,000/s
        return await admit_all(limiter, [1_500, 5_000] + [10] * 100)

    admitted = run_virtual(main())
    order = [i for _, i in admitted]
    assert order == list(range(102))
    assert admitted[1][0] == pytest.approx(4.5, abs=0.01)  # 1,500 + 5,000 - 2,000 at 1,000/s


def test_arrival_order_is_kept_under_a_requests_limit_too() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(rpm=120, tpm=1_000_000))
        return await admit_all(limiter, [30_000, *([1] * 20), 40_000, *([1] * 20)])

    assert [i for _, i in run_virtual(main())] == list(range(42))


# -- concurrency and AIMD ------------------------------------------------------------------------


def test_concurrency_cap_is_never_exceeded() -> None:
    async def main() -> tuple[int, float]:
        limiter = RateLimiter(RateLimit(concurrency=4))
        inside = peak = 0

        async def one() -> None:
            nonlocal inside, peak
            async with limiter.slot(1):
                inside += 1
                peak = max(peak, inside)
                assert limiter.snapshot().in_flight == inside
                await asyncio.sleep(1.0)
                inside -= 1

        await asyncio.gather(*(one() for _ in range(50)))
        return peak, now()

    peak, elapsed = run_virtual(main())
    assert peak == 4
    assert elapsed == pytest.approx(13.0, abs=0.01)  # ceil(50 / 4) rounds of 1 s


def test_429_halves_the_cap_down_to_one() -> None:
    async def main() -> list[int]:
        limiter = RateLimiter(RateLimit(concurrency=16))
        caps = [limiter.snapshot().concurrency]
        for _ in range(6):
            limiter.observe(429, {})
            caps.append(limiter.snapshot().concurrency)
        assert limiter.snapshot().rate_limited == 6
        return caps

    assert run_virtual(main()) == [16, 8, 4, 2, 1, 1, 1]


def test_cap_grows_by_one_per_cap_successes_up_to_the_maximum() -> None:
    async def main() -> list[int]:
        limiter = RateLimiter(RateLimit(concurrency=5))
        for _ in range(3):
            limiter.observe(429, {})
        assert limiter.snapshot().concurrency == 1
        caps = []
        for _ in range(30):
            limiter.observe(200, {})
            caps.append(limiter.snapshot().concurrency)
        return caps

    caps = run_virtual(main())
    # cap 1 needs 1 success, cap 2 needs 2, cap 3 needs 3, cap 4 needs 4; then stays at 5
    assert caps[:10] == [2, 2, 3, 3, 3, 4, 4, 4, 4, 5]
    assert set(caps[10:]) == {5}


def test_server_errors_reset_the_growth_run_and_client_errors_do_not() -> None:
    async def main() -> list[int]:
        limiter = RateLimiter(RateLimit(concurrency=8))
        for _ in range(2):
            limiter.observe(429, {})  # cap 2
        caps = []
        for status in (200, 500, 200, 200, 400, 200, 200):
            limiter.observe(status, {})
            caps.append(limiter.snapshot().concurrency)
        return caps

    # 200 (1/2), 500 resets, 200 200 -> 3, 400 neutral, 200 200 (2/3)
    assert run_virtual(main()) == [2, 2, 2, 3, 3, 3, 3]


def test_a_burst_of_429s_from_requests_already_in_flight_halves_once() -> None:
    async def main() -> tuple[int, int]:
        limiter = RateLimiter(RateLimit(concurrency=16))
        release = asyncio.Event()

        async def request() -> None:
            async with limiter.slot(1):
                await release.wait()
                limiter.observe(429, {"retry-after-ms": "0"})

        tasks = [asyncio.create_task(request()) for _ in range(16)]
        await drain(limiter)
        assert limiter.snapshot().in_flight == 16
        release.set()
        await asyncio.gather(*tasks)
        after_burst = limiter.snapshot().concurrency

        # a request admitted after the decrease that gets a 429 is news: halve again
        async with limiter.slot(1):
            limiter.observe(429, {"retry-after-ms": "0"})
        return after_burst, limiter.snapshot().concurrency

    assert run_virtual(main()) == (8, 4)


def test_a_halved_cap_blocks_admissions_until_enough_slots_are_released() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(concurrency=4))
        started: list[tuple[float, int]] = []

        async def one(i: int) -> None:
            async with limiter.slot(1):
                started.append((now(), i))
                if i == 0:
                    await asyncio.sleep(1.0)  # all four are in by now
                    limiter.observe(429, {"retry-after-ms": "0"})  # cap 4 -> 2
                await asyncio.sleep(10.0)

        await asyncio.gather(*(one(i) for i in range(6)))
        return started

    started = run_virtual(main())
    # four start at 0 under cap 4; at t=1 the cap drops to 2. At t=10 three leave and one is
    # still inside, so only the 5th starts; the 6th waits for the first to leave at t=11.
    # (Under the old cap both would have started at t=10.)
    assert [(round(t), i) for t, i in started] == [(0, 0), (0, 1), (0, 2), (0, 3), (10, 4), (11, 5)]


# -- cooldowns -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "pause"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, DEFAULT_COOLDOWN_S),
        ({}, DEFAULT_COOLDOWN_S),
    ],
)
def test_429_cooldown_blocks_every_new_slot(headers: Mapping[str, str], pause: float) -> None:
    async def main() -> tuple[float, list[float]]:
        limiter = RateLimiter(RateLimit(concurrency=64))
        await asyncio.sleep(10.0)
        limiter.observe(429, headers)
        assert limiter.snapshot().cooldown_s == pytest.approx(pause)
        admitted = await admit_all(limiter, [1] * 5)
        assert limiter.snapshot().cooldown_s == 0.0
        return 10.0, [t for t, _ in admitted]

    t0, times = run_virtual(main())
    assert times == pytest.approx([t0 + pause] * 5, abs=1e-3)


def test_cooldown_starting_while_a_caller_waits_on_the_bucket_is_respected() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(RateLimit(rpm=60))  # bucket 2, 1 per second
        times: list[float] = []

        async def one() -> None:
            async with limiter.slot(1):
                times.append(now())

        await one()
        await one()  # bucket now empty; the next waits ~1 s inside aiolimiter
        waiter = asyncio.create_task(one())
        await asyncio.sleep(0.5)
        limiter.observe(429, {"retry-after": "5"})  # until t=5.5
        await waiter
        return times

    times = run_virtual(main())
    assert times[2] == pytest.approx(5.5, abs=1e-3)


# -- learning from headers -----------------------------------------------------------------------


def test_lower_server_request_limit_is_adopted_and_paces_requests() -> None:
    async def main() -> tuple[LimiterSnapshot, list[float]]:
        limiter = RateLimiter(RateLimit(rpm=600, concurrency=10_000))
        limiter.observe(200, {"x-ratelimit-limit-requests": "300"})
        snap = limiter.snapshot()
        admitted = await admit_all(limiter, [1] * 600)
        return snap, [t for t, _ in admitted]

    snap, times = run_virtual(main())
    adopted = 300 * ADOPT_FRACTION
    assert snap.rpm_limit == pytest.approx(adopted)
    burst = adopted * WINDOW_S / 60
    assert times[-1] == pytest.approx((600 - burst) / (adopted / 60), rel=0.01)
    assert max_in_window(times, [1] * 600, 60.0) <= adopted + burst


def test_higher_server_limits_do_not_raise_ours_and_missing_ones_are_learned() -> None:
    async def main() -> LimiterSnapshot:
        limiter = RateLimiter(RateLimit(rpm=100))
        limiter.observe(
            200, {"x-ratelimit-limit-requests": "5000", "x-ratelimit-limit-tokens": "2000000"}
        )
        return limiter.snapshot()

    snap = run_virtual(main())
    assert snap.rpm_limit == 100
    assert snap.tpm_limit == pytest.approx(2_000_000 * ADOPT_FRACTION)


def test_learned_token_limit_paces_tokens() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(RateLimit(concurrency=1000))
        limiter.observe(200, {"x-ratelimit-limit-tokens": "60000"})
        admitted = await admit_all(limiter, [1000] * 100)
        return [t for t, _ in admitted]

    times = run_virtual(main())
    adopted = 60_000 * ADOPT_FRACTION
    burst = adopted * WINDOW_S / 60
    assert times[-1] == pytest.approx((100_000 - burst) / (adopted / 60), rel=0.01)


def test_garbage_header_values_are_ignored() -> None:
    garbage: list[dict[str, str]] = [
        {"x-ratelimit-limit-requests": "lots", "x-ratelimit-limit-tokens": ""},
        {"x-ratelimit-limit-requests": "nan", "x-ratelimit-limit-tokens": "inf"},
        {"x-ratelimit-limit-requests": "-5", "x-ratelimit-limit-tokens": "0"},
        {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "soon"},
        {"x-ratelimit-remaining-tokens": "zero", "x-ratelimit-reset-tokens": "2s"},
        {"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "-2s"},
        {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1x2s"},
        {"retry-after-ms": "-1", "retry-after": "later"},
    ]

    async def main() -> list[LimiterSnapshot]:
        limiter = RateLimiter(RateLimit(rpm=600, tpm=None, concurrency=8))
        snaps = []
        for headers in garbage:
            limiter.observe(200, headers)
            snaps.append(limiter.snapshot())
        return snaps

    for snap in run_virtual(main()):
        assert snap.rpm_limit == 600
        assert snap.tpm_limit is None
        assert snap.cooldown_s == 0.0
        assert snap.concurrency == 8


def test_remaining_zero_pauses_until_the_reset() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(RateLimit(rpm=10_000))
        limiter.observe(
            200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}
        )
        assert limiter.snapshot().cooldown_s == pytest.approx(2.0)
        admitted = await admit_all(limiter, [1] * 3)
        return [t for t, _ in admitted]

    assert run_virtual(main()) == pytest.approx([2.0, 2.0, 2.0], abs=1e-3)


def test_remaining_zero_with_the_limit_pauses_only_to_refill_one_burst() -> None:
    # reset is the time until the server's bucket is full; with the limit known we only wait
    # until it holds one burst of ours (2 s of 97% of 600 rpm = 19.4 of 600).
    async def main() -> float:
        limiter = RateLimiter(RateLimit())
        limiter.observe(
            200,
            {
                "x-ratelimit-limit-requests": "600",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1m0s",
            },
        )
        return limiter.snapshot().cooldown_s

    burst = 600 * ADOPT_FRACTION * WINDOW_S / 60
    assert run_virtual(main()) == pytest.approx(60.0 * burst / 600)


def test_nonzero_remaining_does_not_pause() -> None:
    async def main() -> float:
        limiter = RateLimiter(RateLimit())
        limiter.observe(
            200, {"x-ratelimit-remaining-tokens": "12", "x-ratelimit-reset-tokens": "6m0s"}
        )
        return limiter.snapshot().cooldown_s

    assert run_virtual(main()) == 0.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("120ms", 0.12),
        ("0.5s", 0.5),
        ("1m30.5s", 90.5),
        ("1h2m3s", 3723.0),
        ("250us", 250e-6),
        (" 2s ", 2.0),
        ("3", 3.0),
        ("0", 0.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "soon", "s", "1x", "-1s", "1s2", "nan", "inf", "1 s"])
def test_parse_duration_rejects_garbage(text: str | None) -> None:
    assert parse_duration(text) is None


# -- cancellation --------------------------------------------------------------------------------


def run_cancel_scenario(
    limiter_factory: Callable[[], RateLimiter],
    block: Callable[[RateLimiter], Awaitable[None]],
) -> tuple[list[str], LimiterSnapshot]:
    """A holds a slot, B queues and is cancelled while waiting, C queues behind B."""

    async def main() -> tuple[list[str], LimiterSnapshot]:
        limiter = limiter_factory()
        order: list[str] = []
        release_a = asyncio.Event()

        async def user(name: str, wait: asyncio.Event | None = None) -> None:
            async with limiter.slot(1):
                order.append(name)
                if wait is not None:
                    await wait.wait()

        a = asyncio.create_task(user("A", release_a))
        await drain(limiter)
        await block(limiter)
        b = asyncio.create_task(user("B"))
        await drain(limiter)
        c = asyncio.create_task(user("C"))
        await drain(limiter)
        assert limiter.snapshot().waiting == 2
        b.cancel()
        with pytest.raises(asyncio.CancelledError):
            await b
        release_a.set()
        await asyncio.wait_for(asyncio.gather(a, c), timeout=120)
        return order, limiter.snapshot()

    return run_virtual(main())


def test_cancelled_waiter_on_concurrency_leaks_nothing() -> None:
    async def nothing(limiter: RateLimiter) -> None:
        return None

    order, snap = run_cancel_scenario(lambda: RateLimiter(RateLimit(concurrency=1)), nothing)
    assert order == ["A", "C"]
    assert (snap.in_flight, snap.waiting) == (0, 0)


def test_cancelled_waiter_inside_the_bucket_leaks_nothing() -> None:
    async def empty_bucket(limiter: RateLimiter) -> None:
        async with limiter.slot(1):  # A took 1 of the 2; take the other
            pass

    order, snap = run_cancel_scenario(
        lambda: RateLimiter(RateLimit(rpm=60, concurrency=10)), empty_bucket
    )
    assert order == ["A", "C"]
    assert (snap.in_flight, snap.waiting) == (0, 0)


def test_cancelled_waiter_during_cooldown_leaks_nothing() -> None:
    async def cool(limiter: RateLimiter) -> None:
        limiter.observe(429, {"retry-after": "30"})

    order, snap = run_cancel_scenario(lambda: RateLimiter(RateLimit(concurrency=10)), cool)
    assert order == ["A", "C"]
    assert (snap.in_flight, snap.waiting) == (0, 0)


def test_cancelled_holder_releases_its_slot() -> None:
    async def main() -> tuple[LimiterSnapshot, float]:
        limiter = RateLimiter(RateLimit(concurrency=1))

        async def hold_forever() -> None:
            async with limiter.slot(1):
                await asyncio.sleep(10**6)

        holder = asyncio.create_task(hold_forever())
        await asyncio.sleep(1.0)
        holder.cancel()
        async with limiter.slot(1):
            at = now()
        return limiter.snapshot(), at

    snap, at = run_virtual(main())
    assert at == pytest.approx(1.0, abs=1e-3)
    assert snap.in_flight == 0


def test_snapshot_reports_the_state() -> None:
    async def main() -> LimiterSnapshot:
        limiter = RateLimiter(RateLimit(rpm=120, tpm=9000, concurrency=3))
        async with limiter.slot(10):
            limiter.observe(429, {"retry-after": "4"})
            return limiter.snapshot()

    assert run_virtual(main()) == LimiterSnapshot(
        rpm_limit=120,
        tpm_limit=9000,
        concurrency=1,
        max_concurrency=3,
        in_flight=1,
        waiting=0,
        cooldown_s=4.0,
        rate_limited=1,
    )
