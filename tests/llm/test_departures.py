"""No burst after a pause: requests held between their slot and their send (a checkpoint, a
slow disk, a GC) leave at the pace again, on the virtual clock of tests/virtual_time.py."""

from __future__ import annotations

import asyncio
import bisect
import math

import pytest

from halugen.config import RateLimit
from halugen.crew import crew_size, run_crew
from halugen.llm.limiter import RateLimiter
from halugen.llm.pacing import BURST_S
from halugen.simulate.limits import RateLimits
from tests.virtual_time import run_virtual

RPM = 1200  # 20 a second, quantised to one second by the provider
PAUSE = (5.0, 7.0)  # the durable write stalls for 2 s


async def paused_run(calls: int = 400, latency: float = 1.0) -> tuple[list[float], int]:
    """``calls`` requests through slot -> durable write -> departure -> send, with the
    durable write stalled during ``PAUSE``; their departure times and the provider's 429s."""
    loop = asyncio.get_running_loop()
    server = RateLimits(RPM, None, loop.time, quantum_s=1.0)
    limiter = RateLimiter(RateLimit(concurrency=256), timeout=300.0)
    store_free = asyncio.Event()
    store_free.set()
    left: list[float] = []
    refused = 0
    todo = list(range(calls))

    async def stall() -> None:
        await asyncio.sleep(PAUSE[0])
        store_free.clear()
        await asyncio.sleep(PAUSE[1] - PAUSE[0])
        store_free.set()

    async def worker() -> None:
        nonlocal refused
        while todo:
            todo.pop()
            async with limiter.slot(0) as ticket:
                await asyncio.sleep(0.001)  # the reservation's commit
                await store_free.wait()  # ... unless the store is stalled
                await limiter.departure(ticket)
                left.append(loop.time())
                admission = server.admit(1)
                refused += not admission.ok
                await asyncio.sleep(latency)
                limiter.observe(200 if admission.ok else 429, dict(admission.headers))

    staller = asyncio.ensure_future(stall())
    await run_crew(worker, lambda: crew_size(limiter.cap))
    await staller
    return left, refused


def most_in_window(times: list[float], seconds: float) -> int:
    times = sorted(times)
    return max(bisect.bisect_right(times, t + seconds - 1e-9) - i for i, t in enumerate(times))


def test_requests_held_by_a_pause_leave_at_the_pace_when_it_ends() -> None:
    left, refused = run_virtual(paused_run())
    assert len(left) == 400
    after = [t for t in left if t >= PAUSE[1]]
    assert after and min(after) == pytest.approx(PAUSE[1], abs=0.01)  # the pause did hold some
    per_second = RPM / 60
    # at once: no more than the pacer's bucket (a tenth of a second beyond one admission)
    assert most_in_window(after, 1e-6) <= math.ceil(2 * BURST_S * per_second)
    # in any second: the per-second limit, plus at most that bucket
    assert most_in_window(left, 1.0) <= per_second * (1 + 2 * BURST_S)
    assert refused == 0  # the provider's one-second bucket admitted every one
