"""Wiring of the generation stages: one task group, bounded streams, shutdown by closing.

    seeds ──► sample workers ──► filter workers ──► sink
          (Seed)          (Seed, candidates)   (Sample | Rejected)

Each arrow is an anyio memory object stream with a small buffer, so a slow stage holds
back the ones before it (backpressure) and memory stays flat. When the seed stage runs out
(or stops admitting), it closes its stream; each stage ends when its input is closed and
drained, and closes its own output in turn. The sample and filter stages have as many
workers as the endpoints take calls at once, and more as that grows (halugen/crew.py).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from ..crew import crew_size, run_crew
from ..records import Candidate, Rejected, Sample, Seed
from .context import GenContext
from .filter import run_filter_stage
from .sample import run_sample_stage
from .seeds import SeedSource, run_seed_stage
from .sink import run_sink

__all__ = ["run_pipeline"]


async def run_pipeline(
    ctx: GenContext,
    sources: list[SeedSource],
    *,
    wanted: Callable[[], int],
    buffer: int = 16,
) -> None:
    """``wanted()``: how many calls the endpoints take at once now (``EndpointPool.wanted``).
    A seed's calls are mostly sampling (two of them) and one filter call, so the filter
    stage gets half the sample stage's workers."""
    seed_tx, seed_rx = anyio.create_memory_object_stream[Seed](buffer)
    cand_tx, cand_rx = anyio.create_memory_object_stream[tuple[Seed, list[Candidate]]](buffer)
    out_tx, out_rx = anyio.create_memory_object_stream[Sample | Rejected](buffer)

    async def samplers() -> None:
        async with seed_rx, cand_tx:
            await run_crew(
                lambda: run_sample_stage(ctx, seed_rx.clone(), cand_tx.clone()),
                lambda: crew_size(wanted()),
            )

    async def filters() -> None:
        async with cand_rx, out_tx:
            await run_crew(
                lambda: run_filter_stage(ctx, cand_rx.clone(), out_tx.clone()),
                lambda: crew_size(wanted(), 0.5),
            )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_seed_stage, ctx, sources, seed_tx)
        tg.start_soon(samplers)
        tg.start_soon(filters)
        tg.start_soon(run_sink, ctx, out_rx)
