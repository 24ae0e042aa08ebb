"""The virtual-clock loop other tests run on: waiting is instant, order and arithmetic exact."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.virtual_time import QUANTUM, VirtualTimeDeadlock, VirtualTimeLoop, run_virtual


def test_an_hour_of_sleep_takes_no_real_time() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        before = loop.time()
        await asyncio.sleep(3600)
        return before, loop.time()

    started = time.monotonic()
    before, after = run_virtual(main())
    assert time.monotonic() - started < 5.0  # generous: CI machines stall; a real wait is 3600
    assert after - before == pytest.approx(3600.0, abs=1e-6)


def test_start_time_is_configurable() -> None:
    async def now() -> float:
        return asyncio.get_running_loop().time()

    assert run_virtual(now(), start=1000.0) == 1000.0


def test_timers_fire_in_order_of_their_deadlines() -> None:
    async def main() -> list[tuple[float, float]]:
        loop = asyncio.get_running_loop()
        fired: list[tuple[float, float]] = []

        async def sleeper(delay: float) -> None:
            await asyncio.sleep(delay)
            fired.append((delay, loop.time()))

        await asyncio.gather(*(sleeper(d) for d in (5, 1, 3, 0.001, 2, 3600, 0.5)))
        return fired

    fired = run_virtual(main())
    assert [d for d, _ in fired] == [0.001, 0.5, 1, 2, 3, 5, 3600]
    for delay, at in fired:
        assert at == pytest.approx(delay, abs=1e-5)


def test_asyncio_timeout_uses_the_virtual_clock() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(30):
                await asyncio.sleep(600)
        return loop.time()

    assert run_virtual(main()) == pytest.approx(30.0, abs=1e-5)


def test_ready_callbacks_do_not_move_the_clock() -> None:
    async def main() -> float:
        for _ in range(1000):
            await asyncio.sleep(0)
        return asyncio.get_running_loop().time()

    assert run_virtual(main()) == 0.0


def test_a_timer_that_keeps_rearming_now_makes_progress() -> None:
    # A callback re-scheduling itself at the current instant would spin forever on a clock
    # that never moves; each poll of a due timer costs QUANTUM instead.
    async def main() -> float:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        count = 0

        def tick() -> None:
            nonlocal count
            count += 1
            if count == 100:
                done.set_result(loop.time())
            else:
                loop.call_at(loop.time(), tick)

        loop.call_at(loop.time(), tick)
        return await done

    at = run_virtual(main())
    assert 0 < at <= 100 * QUANTUM * 1.01


def test_waiting_on_nothing_raises_instead_of_hanging() -> None:
    async def main() -> None:
        await asyncio.get_running_loop().create_future()  # nobody will ever set it

    with pytest.raises(VirtualTimeDeadlock):
        run_virtual(main(), grace=0.0)


def test_a_worker_thread_can_still_wake_the_loop() -> None:
    async def main() -> int:
        return await asyncio.to_thread(lambda: 42)

    assert run_virtual(main()) == 42


def test_loop_factory_works_with_asyncio_runner() -> None:
    async def main() -> float:
        await asyncio.sleep(7)
        return asyncio.get_running_loop().time()

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        assert runner.run(main()) == pytest.approx(7.0)
