"""The rate limiter on a virtual clock: even pacing, fairness, probing, AIMD, cooldowns,
header learning, and whole runs against quantised and one-at-a-time servers."""

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence

import pytest

from halugen.config import RateLimit
from halugen.errors import CallTimeout, ConnectFailed, RetryableError, UsageError
from halugen.llm.capacity import CAPACITY_MAXIMUM
from halugen.llm.limiter import (
    ADOPT_FRACTION,
    DEFAULT_COOLDOWN_S,
    RateLimiter,
    parse_duration,
)
from halugen.llm.pacing import BURST_S
from halugen.stats import LimiterSnapshot
from tests.virtual_time import run_virtual

from ._servers import FifoServer, capacity_run, quantised_run


def now() -> float:
    return asyncio.get_running_loop().time()


def opened(rate: RateLimit, **kw: object) -> RateLimiter:
    """A limiter past its first answer, as from a server that announces limits, with no
    latency measured (so no need for the pace): the cap is open to the maximum."""
    limiter = RateLimiter(rate, **kw)  # type: ignore[arg-type]
    limiter._control.announced()  # what observing x-ratelimit-limit-* does, without a pace
    limiter._control.success(None)  # an answer without its latency
    return limiter


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


async def drain() -> None:
    """Let all callbacks run so that the limiter reaches a quiet state."""
    for _ in range(5):
        await asyncio.sleep(0)


# -- pacing --------------------------------------------------------------------------------------


def test_requests_are_paced_evenly_and_never_burst_past_a_second() -> None:
    rpm, n = 600.0, 1200  # 10 a second

    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(rpm=rpm, concurrency=10_000)), [1] * n)

    times = [t for t, _ in run_virtual(main())]
    assert len(times) == n
    assert times[-1] == pytest.approx((n - 1) / 10, rel=0.01)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) == pytest.approx(0.1, abs=1e-6)  # evenly: nobody goes early
    assert max_in_window(times, [1] * n, 1.0) <= rpm / 60
    assert max_in_window(times, [1] * n, 60.0) <= rpm + 1


def test_tokens_per_minute_are_spent_evenly() -> None:
    tpm = 60_000.0  # 1,000 a second
    amounts = [50, 200, 800, 120] * 150  # 175,500 tokens in mixed sizes

    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(tpm=tpm, concurrency=10_000)), amounts)

    admitted = run_virtual(main())
    times = [t for t, _ in admitted]
    weights = [amounts[i] for _, i in admitted]
    total = sum(amounts)
    # every token is paid before (or, past the threshold, right after) it goes
    assert times[-1] == pytest.approx(total / 1000, rel=0.01)
    assert max_in_window(times, weights, 1.0) <= 1000 + 2 * 1000 * BURST_S + max(amounts)
    assert max_in_window(times, weights, 60.0) <= tpm + max(amounts)


def test_after_idling_at_most_a_tenth_of_a_second_goes_at_once() -> None:
    async def main() -> list[float]:
        limiter = opened(RateLimit(rpm=60_000, concurrency=100_000))  # 1,000 a second
        await asyncio.sleep(60.0)
        return [t for t, _ in await admit_all(limiter, [1] * 3000)]

    times = run_virtual(main())
    together = sum(1 for t in times if t == times[0])
    assert together <= 1000 * 2 * BURST_S + 1
    assert max_in_window(times, [1] * len(times), 1.0) <= 1000 * (1 + 2 * BURST_S) + 1


def test_an_amount_larger_than_a_tenth_of_a_second_goes_and_its_debt_is_paid() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(tpm=60_000))  # threshold 100 tokens, 1,000/s
        return await admit_all(limiter, [10_000, 1_000])

    admitted = run_virtual(main())
    assert [i for _, i in admitted] == [0, 1]
    assert admitted[0][0] == 0.0  # never too large to go
    assert admitted[1][0] == pytest.approx(10.0, abs=0.01)  # 9,900 owed + its own threshold


def test_zero_tokens_and_no_limits_admit_immediately() -> None:
    async def main() -> list[tuple[float, int]]:
        return await admit_all(RateLimiter(RateLimit(concurrency=100_000)), [0, 5, 10**9] * 2000)

    admitted = run_virtual(main())
    assert len(admitted) == 6000
    assert max(t for t, _ in admitted) == 0.0


def test_tiny_rate_still_admits_single_requests() -> None:
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


def test_tokens_the_server_counted_are_given_back_so_the_limit_is_used_to_97_percent() -> None:
    # charged 1,000 at admission, the server counts 500: without the correction the run would
    # go at half the tokens/min limit
    async def main() -> float:
        limiter = RateLimiter(RateLimit(tpm=60_000, concurrency=10))
        spent = 0

        async def one() -> None:
            nonlocal spent
            async with limiter.slot(1_000) as ticket:
                await asyncio.sleep(0.5)
                ticket.counted(500)
                spent += 500

        await asyncio.gather(*(one() for _ in range(600)))
        return spent / now() * 60

    assert run_virtual(main()) == pytest.approx(60_000, rel=0.03)


# -- fairness ------------------------------------------------------------------------------------


def test_long_prompt_queued_first_is_served_before_short_ones() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(tpm=60_000))  # threshold 100 tokens, 1,000/s
        return await admit_all(limiter, [1_500, 5_000] + [10] * 100)

    admitted = run_virtual(main())
    assert [i for _, i in admitted] == list(range(102))
    assert admitted[1][0] == pytest.approx(1.5, abs=0.01)  # once 1,500 - 100 is paid back


def test_arrival_order_is_kept_under_a_requests_limit_too() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = RateLimiter(RateLimit(rpm=120, tpm=1_000_000))
        return await admit_all(limiter, [30_000, *([1] * 20), 40_000, *([1] * 20)])

    assert [i for _, i in run_virtual(main())] == list(range(42))


# -- probing, modes and the cap ------------------------------------------------------------------


def test_only_one_request_goes_until_the_first_answer() -> None:
    async def main() -> tuple[list[int], LimiterSnapshot]:
        limiter = RateLimiter(RateLimit(concurrency=64))
        answer = asyncio.Event()
        inside: list[int] = []

        async def one(i: int) -> None:
            async with limiter.slot(1):
                inside.append(i)
                if i == 0:
                    await answer.wait()
                    limiter.observe(200, {"x-ratelimit-limit-requests": "100000"})
                await asyncio.sleep(1.0)

        tasks = [asyncio.create_task(one(i)) for i in range(20)]
        await asyncio.sleep(0.5)
        before = list(inside)
        answer.set()
        await asyncio.gather(*tasks)
        return before, limiter.snapshot()

    before, snap = run_virtual(main())
    assert before == [0]
    assert snap.concurrency == 64  # the server announced limits: they bind, not the cap


def test_a_user_limit_that_is_too_high_is_brought_down_by_the_first_answer() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(RateLimit(rpm=100_000, concurrency=64))
        times: list[float] = []

        async def one(i: int) -> None:
            async with limiter.slot(1):
                times.append(now())
                await asyncio.sleep(0.2)
                limiter.observe(200, {"x-ratelimit-limit-requests": "1200"})

        await asyncio.gather(*(one(i) for i in range(400)))
        return times

    times = run_virtual(main())
    assert times[1] >= 0.2  # the second waited for the first answer
    pace = 1200 * ADOPT_FRACTION / 60
    assert max_in_window(times, [1] * len(times), 1.0) <= 1200 / 60  # what a second allows
    assert (len(times) - 1) / (times[-1] - times[1]) == pytest.approx(pace, rel=0.02)


def test_concurrency_cap_is_never_exceeded() -> None:
    async def main() -> tuple[int, float]:
        limiter = opened(RateLimit(concurrency=4))
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


def test_without_announced_limits_the_cap_slow_starts_and_429s_halve_it() -> None:
    async def main() -> list[int]:
        limiter = RateLimiter(RateLimit(concurrency=16))
        caps = []

        async def one() -> None:
            async with limiter.slot(1):
                await asyncio.sleep(0.01)
                limiter.observe(200, {})
                caps.append(limiter.snapshot().concurrency)

        await asyncio.gather(*(one() for _ in range(60)))
        assert limiter.mode == "capacity"
        for _ in range(3):
            async with limiter.slot(1):
                limiter.observe(429, {"retry-after-ms": "0"})
            caps.append(limiter.snapshot().concurrency)
        return caps

    caps = run_virtual(main())
    assert caps[:4] == [2, 3, 4, 5]  # +1 per answer while requests wait
    assert caps[-4] == 16
    assert caps[-3:] == [8, 4, 2]
    assert max(caps) == 16


def test_a_burst_of_429s_from_requests_already_in_flight_halves_once() -> None:
    async def main() -> tuple[int, int]:
        limiter = RateLimiter(RateLimit(concurrency=16))
        limiter.observe(200, {})  # capacity mode
        for _ in range(100):
            async with limiter.slot(1):
                limiter.observe(200, {})
        release = asyncio.Event()
        limiter._control.cap = 16  # as if slow start had reached it while requests waited

        async def request() -> None:
            async with limiter.slot(1):
                await release.wait()
                limiter.observe(429, {"retry-after-ms": "0"})

        tasks = [asyncio.create_task(request()) for _ in range(16)]
        await drain()
        assert limiter.snapshot().in_flight == 16
        release.set()
        await asyncio.gather(*tasks)
        after_burst = limiter.snapshot().concurrency

        # a request admitted after the decrease that gets a 429 is news: halve again
        async with limiter.slot(1):
            limiter.observe(429, {"retry-after-ms": "0"})
        return after_burst, limiter.snapshot().concurrency

    assert run_virtual(main()) == (8, 4)


def test_a_timeout_inside_the_slot_halves_the_cap_even_with_announced_limits() -> None:
    async def main() -> list[int]:
        limiter = opened(RateLimit(concurrency=32))
        caps = [limiter.snapshot().concurrency]
        for error in (
            CallTimeout("no answer within 5 s", billed_maybe=True),  # timed out
            ConnectFailed("cannot connect", billed_maybe=False),  # nothing sent: not news
            RetryableError("HTTP 503", status=503),  # an answer: the status says it all
        ):
            with pytest.raises(RetryableError):
                async with limiter.slot(1):
                    raise error
            caps.append(limiter.snapshot().concurrency)
        return caps

    assert run_virtual(main()) == [32, 16, 16, 16]


def test_a_halved_cap_blocks_admissions_until_enough_slots_are_released() -> None:
    async def main() -> list[tuple[float, int]]:
        limiter = opened(RateLimit(concurrency=4))
        started: list[tuple[float, int]] = []

        async def one(i: int) -> None:
            async with limiter.slot(1):
                started.append((now(), i))
                if i == 0:
                    await asyncio.sleep(1.0)  # all four are in by now
                    limiter.finish  # noqa: B018 - (the slot ends below, normally)
                    limiter._control.congested(None)  # cap 4 -> 2, as a timeout does
                await asyncio.sleep(10.0)

        await asyncio.gather(*(one(i) for i in range(6)))
        return started

    started = run_virtual(main())
    # four start at 0 under cap 4; at t=1 the cap drops to 2. At t=10 three leave and one is
    # still inside, so only the 5th starts; the 6th waits for the first to leave at t=11.
    assert [(round(t), i) for t, i in started] == [(0, 0), (0, 1), (0, 2), (0, 3), (10, 4), (11, 5)]


# -- whole runs in virtual time ------------------------------------------------------------------


@pytest.mark.parametrize("quantum_s", [1.0, 60.0])
@pytest.mark.parametrize("user_rpm", [None, 100_000])
def test_requests_bound_run_against_a_quantised_account(
    quantum_s: float, user_rpm: float | None
) -> None:
    out = run_virtual(
        quantised_run(
            rpm=1200, quantum_s=quantum_s, user=RateLimit(rpm=user_rpm), calls=2400, jitter=0.03
        )
    )
    assert out.ok == 2400
    assert out.share_429 <= 0.01
    assert out.per_minute("requests") >= 0.95 * 1200


@pytest.mark.parametrize("latency", [2.0, 5.0])
def test_known_limits_with_long_answers_get_as_many_in_flight_as_the_pace_needs(
    latency: float,
) -> None:
    # 6,000 requests/min answered in 5 s need 500 in flight: the old cap of 64 reached 13%
    rpm = 6000
    out = run_virtual(quantised_run(rpm=rpm, calls=6000, latency=latency, jitter=0.05))
    needed = rpm / 60 * latency
    assert out.ok == 6000
    assert out.share_429 <= 0.01
    assert out.most_in_flight > 64
    assert needed * 0.9 <= out.most_in_flight <= needed * 2
    assert out.per_minute("requests") >= 0.95 * rpm


def test_a_lower_j_caps_what_long_answers_need() -> None:
    out = run_virtual(
        quantised_run(rpm=6000, user=RateLimit(concurrency=100), calls=1500, latency=5.0)
    )
    assert out.most_in_flight == 100
    assert out.per_minute("requests") <= 100 / 5.0 * 60 * 1.1  # about 1,200 of the 6,000


@pytest.mark.parametrize("quantum_s", [1.0, 60.0])
@pytest.mark.parametrize("user_tpm", [None, 10**8])
def test_tokens_bound_run_against_a_quantised_account(
    quantum_s: float, user_tpm: float | None
) -> None:
    out = run_virtual(
        quantised_run(rpm=100_000, tpm=300_000, quantum_s=quantum_s, user=RateLimit(tpm=user_tpm))
    )
    assert out.ok == 2000
    assert out.share_429 <= 0.01
    assert out.per_minute("tokens") >= 0.95 * 300_000


def test_prompts_longer_than_the_providers_second_are_never_refused() -> None:
    # 120,000 tokens/min quantised to 1 s holds 2,000 tokens; many summarization prompts are
    # larger and are admitted only when that bucket is full. Paying a debt back to a tenth of
    # a second alone sent them early (429s); the pacer's one-second window does not.
    out = run_virtual(
        quantised_run(
            rpm=100_000, tpm=120_000, calls=300, prompt=(900, 3300), margin=1.07, latency=0.3
        )
    )
    assert out.ok == 300
    assert out.rate_limited == 0
    assert out.per_minute("tokens") >= 0.95 * 120_000


def test_prompts_longer_than_a_quantum_still_get_95_percent_of_the_tokens() -> None:
    # 60,000 tpm quantised to 1 s holds 1,000 tokens; every request is larger
    out = run_virtual(quantised_run(rpm=100_000, tpm=60_000, calls=400))
    assert out.ok == 400
    assert out.share_429 <= 0.01
    assert out.per_minute("tokens") >= 0.95 * 60_000


@pytest.mark.parametrize("concurrency", [None, 4096])
@pytest.mark.parametrize(
    ("service", "timeout"),
    [(10.0, 300.0), (0.25, 5.0), (1.0, 5.0)],
)
def test_a_one_at_a_time_server_at_the_default_settings_never_times_out(
    service: float, timeout: float, concurrency: int | None
) -> None:
    # the default (256 without announced limits) or -j 4096 into one slot: without
    # adaptation the queue would reach that many x service, past the timeout in every case
    # here, and the retries make it longer still
    calls = 60
    server = FifoServer(capacity=1, service=service)
    out = run_virtual(capacity_run(server, calls=calls, concurrency=concurrency, timeout=timeout))
    assert out.ok == calls
    assert out.most_in_flight <= 8  # never flooded
    assert out.timeouts == 0
    assert out.attempts == calls
    assert server.served == calls
    assert out.elapsed <= calls * service * 1.05  # the server's own throughput, nearly


def test_a_server_with_a_few_slots_is_kept_busy_without_a_long_queue() -> None:
    server = FifoServer(capacity=8, service=2.0, spread=0.2)
    out = run_virtual(capacity_run(server, calls=800, timeout=300.0))
    assert out.timeouts == 0 and out.ok == 800
    assert out.elapsed <= 800 * 2.0 / 8 * 1.1
    assert max(out.caps[-200:]) <= 16  # not 64 requests queued behind 8 slots


def test_a_server_with_room_gets_the_whole_concurrency() -> None:
    server = FifoServer(capacity=1024, service=3.0, spread=0.5)
    out = run_virtual(capacity_run(server, calls=2000, timeout=300.0))
    assert out.timeouts == 0
    assert out.caps[-1] == CAPACITY_MAXIMUM  # the default most without announced limits


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
        limiter = opened(RateLimit(concurrency=64))
        await asyncio.sleep(10.0)
        limiter.observe(429, headers)
        assert limiter.snapshot().cooldown_s == pytest.approx(pause)
        admitted = await admit_all(limiter, [1] * 5)
        assert limiter.snapshot().cooldown_s == 0.0
        return 10.0, [t for t, _ in admitted]

    t0, times = run_virtual(main())
    assert times == pytest.approx([t0 + pause] * 5, abs=1e-3)


def test_cooldown_starting_while_a_caller_waits_on_the_pace_is_respected() -> None:
    async def main() -> list[float]:
        limiter = RateLimiter(RateLimit(rpm=60))  # 1 a second
        times: list[float] = []

        async def one() -> None:
            async with limiter.slot(1):
                times.append(now())

        await one()  # the next waits ~1 s for the pace
        waiter = asyncio.create_task(one())
        await asyncio.sleep(0.5)
        limiter.observe(429, {"retry-after": "5"})  # until t=5.5
        await waiter
        return times

    times = run_virtual(main())
    assert times[1] == pytest.approx(5.5, abs=1e-3)


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
    assert times[-1] == pytest.approx(600 / (adopted / 60), rel=0.01)
    assert max_in_window(times, [1] * 600, 60.0) <= adopted + 1


def test_user_limits_cap_what_the_server_announces_and_missing_ones_are_learned() -> None:
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
    # learned from an answer: the pace starts empty, so the first of these waits too
    assert times[-1] == pytest.approx(100_000 / (adopted / 60), rel=0.01)


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
        limiter = opened(RateLimit(rpm=600, tpm=None, concurrency=8))
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
        limiter = opened(RateLimit(rpm=10_000))
        limiter.observe(
            200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"}
        )
        assert limiter.snapshot().cooldown_s == pytest.approx(2.0)
        admitted = await admit_all(limiter, [1] * 3)
        return [t for t, _ in admitted]

    times = run_virtual(main())
    assert times[0] == pytest.approx(2.0, abs=1e-3)
    assert times[-1] < 2.1


def test_remaining_zero_with_the_limit_pauses_only_to_refill_one_burst() -> None:
    # reset is the time until the server's bucket is full; with the limit known we only wait
    # until it holds what our pacer can let go at once
    async def main() -> tuple[float, float]:
        limiter = RateLimiter(RateLimit())
        limiter.observe(
            200,
            {
                "x-ratelimit-limit-requests": "600",
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1m0s",
            },
        )
        assert limiter._requests is not None
        return limiter.snapshot().cooldown_s, limiter._requests.capacity

    cooldown, burst = run_virtual(main())
    assert cooldown == pytest.approx(60.0 * burst / 600)
    assert cooldown < 1.0


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
        await drain()
        await block(limiter)
        b = asyncio.create_task(user("B"))
        await drain()
        c = asyncio.create_task(user("C"))
        await drain()
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

    order, snap = run_cancel_scenario(lambda: opened(RateLimit(concurrency=1)), nothing)
    assert order == ["A", "C"]
    assert (snap.in_flight, snap.waiting) == (0, 0)


def test_cancelled_waiter_on_the_pace_leaks_nothing() -> None:
    async def nothing(limiter: RateLimiter) -> None:
        return None  # A took the one request the pace had: B and C wait for the next

    order, snap = run_cancel_scenario(lambda: opened(RateLimit(rpm=60, concurrency=10)), nothing)
    assert order == ["A", "C"]
    assert (snap.in_flight, snap.waiting) == (0, 0)


def test_cancelled_waiter_during_cooldown_leaks_nothing() -> None:
    async def cool(limiter: RateLimiter) -> None:
        limiter.observe(429, {"retry-after": "30"})

    order, snap = run_cancel_scenario(lambda: opened(RateLimit(concurrency=10)), cool)
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
