"""Workers that grow with the endpoints' caps (halugen/crew.py), on a virtual clock."""

from __future__ import annotations

import asyncio

import anyio

from halugen.crew import SPARE, crew_size, run_crew
from tests.virtual_time import run_virtual


def test_crew_size_keeps_a_quarter_and_a_few_more_than_the_caps() -> None:
    assert crew_size(1) == 1 + SPARE
    assert crew_size(400) == 500 + SPARE
    assert crew_size(400, 0.5) == 250 + SPARE


def test_the_crew_grows_with_the_size_and_ends_when_the_input_is_drained() -> None:
    async def main() -> tuple[list[int], int, int]:
        send, receive = anyio.create_memory_object_stream[int](0)
        wanted = 4
        busy = peak = done = 0
        sizes: list[int] = []

        async def worker(items: anyio.abc.ObjectReceiveStream[int]) -> None:
            nonlocal busy, peak, done
            async with items:
                async for _ in items:
                    busy += 1
                    peak = max(peak, busy)
                    await asyncio.sleep(10.0)
                    busy -= 1
                    done += 1

        async def feed() -> None:
            nonlocal wanted
            async with send:
                for i in range(300):
                    await send.send(i)
                    if i == 50:
                        wanted = 40  # the caps grew
                        sizes.append(wanted)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            async with receive:
                await run_crew(lambda: worker(receive.clone()), lambda: wanted)
        return sizes, peak, done

    sizes, peak, done = run_virtual(main())
    assert sizes == [40]
    assert peak == 40  # grew from 4 to 40 workers, never more
    assert done == 300  # every item handled; the crew returned once the input ended
