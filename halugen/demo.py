"""``halugen demo``: the whole path on bundled seeds against the built-in simulator.

Starts the simulator on a free loopback port, runs QA generation over the example seeds
with a small budget (real HTTP, real store, live view), then reads a summary back with SQL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from .config import RateLimit, RetryPolicy, RunConfig, Timeouts
from .engine import RunOutcome, generate
from .store.db import open_store
from .store.queries import demo_summary

__all__ = ["EXAMPLE_SEEDS", "run_demo"]

EXAMPLE_SEEDS = Path(__file__).resolve().parent / "examples" / "qa_seeds.json"

Summary = list[tuple[str, list[str], list[tuple[Any, ...]]]]


async def run_demo(
    *, db: Path, progress: bool = True, console: Console | None = None, latency_ms: float = 250.0
) -> tuple[RunOutcome, Summary]:
    from .simulate import SimConfig, serve

    for path in (db, Path(f"{db}.wal")):  # the demo store is the demo's own: start clean
        path.unlink(missing_ok=True)
    sim = SimConfig(
        latency_ms=latency_ms,
        jitter_ms=latency_ms,
        fail_rate=0.05,
        faults=("500", "503", "malformed"),
        rpm=600,
        tpm=400_000,
    )
    runner, port = await serve(sim, host="127.0.0.1", port=0)
    try:
        cfg = RunConfig(
            tasks=("qa",),
            seeds=(str(EXAMPLE_SEEDS),),
            model="gpt-4o-mini",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="demo",
            db=db,
            budget_usd=0.05,
            rate=RateLimit(concurrency=8),
            retry=RetryPolicy(max_attempts=6, base_delay=0.2, max_delay=2.0),
            timeouts=Timeouts(total=20.0, read=20.0),
            progress=progress,
            fresh=True,
        )
        outcome = await generate(cfg, console=console)
    finally:
        await runner.cleanup()
    with open_store(db, read_only=True) as store:
        summary: Summary = demo_summary(store)
    return outcome, summary
