"""Workers that grow with what the endpoints can take at once.

A stage's worker carries one call at a time, so a stage needs about as many workers as the
endpoints take calls at once: with known limits that is the pace times the latency (2,500 at
30,000 requests/min answered in 5 s), against a llama.cpp server it is 2. Starting the most
there could ever be would hold a rendered request in every idle worker (about 7 KB per idle
worker and 16 KB per waiting request, measured: bench/README.md); so a crew starts a few and
adds workers as the endpoint pool's caps grow (``EndpointPool.wanted``), keeping a quarter
more (and ``SPARE`` more) than the caps, so that the caps stay full. Workers are never
stopped: they end when their input ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

__all__ = ["LOOK_EVERY_S", "SPARE", "crew_size", "run_crew"]

SPARE = 8  # workers beyond the caps' sum and its quarter: some are busy between calls
LOOK_EVERY_S = 0.25  # how often the crew looks at the caps


def crew_size(wanted: int, share: float = 1.0) -> int:
    """Workers for a stage that makes ``share`` of the calls when ``wanted`` fit at once."""
    return max(1, int((wanted + wanted // 4) * share) + SPARE)


async def run_crew(
    worker: Callable[[], Awaitable[None]],
    size: Callable[[], int],
    *,
    look_every_s: float = LOOK_EVERY_S,
) -> None:
    """Run ``worker()`` as many times at once as ``size()`` says (re-read as it grows) until
    one of them returns: the stage's input is then drained, so no more are started, and this
    returns when all have.

    ``worker`` takes its streams' clones when called, so the caller keeps the originals open
    around this call and closes them after it.
    """
    drained = anyio.Event()

    async def one() -> None:
        try:
            await worker()
        finally:
            drained.set()

    started = 0
    async with anyio.create_task_group() as tg:
        while not drained.is_set():
            for _ in range(max(0, size() - started)):
                tg.start_soon(one)
                started += 1
            with anyio.move_on_after(look_every_s):
                await drained.wait()
