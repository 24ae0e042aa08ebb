"""Transient provider faults never change the dataset: they leave seeds 'failed' for a rerun."""

from __future__ import annotations

from pathlib import Path

import anyio
import duckdb

from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate


def _config(base_url: str, seeds: Path, db: Path, attempts: int) -> RunConfig:
    return RunConfig(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="test-key",
        db=db,
        rate=RateLimit(concurrency=8),
        retry=RetryPolicy(max_attempts=attempts, base_delay=0.01, max_delay=0.02),
        timeouts=Timeouts(total=5.0, read=5.0),
        progress=False,
        run_seed=3,
    )


def _samples(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(
            "SELECT seed_id, pattern, hallucinated_answer, selected_by FROM samples"
            " ORDER BY seed_id"
        ).fetchall()


def test_a_5xx_storm_then_a_healthy_rerun_gives_the_fault_free_samples(
    simulator, hotpot_file, tmp_path
):
    seeds = hotpot_file(40)
    clean = simulator()
    reference = tmp_path / "clean.duckdb"
    outcome = anyio.run(lambda: generate(_config(clean.base_url, seeds, reference, 3)))
    assert outcome.status == "done", outcome.message

    stormy = simulator(fail_rate=0.5, faults=("500", "503"))
    db = tmp_path / "storm.duckdb"
    first = anyio.run(lambda: generate(_config(stormy.base_url, seeds, db, 1)))
    assert first.status == "incomplete"  # some seeds failed on call errors
    with duckdb.connect(str(db), read_only=True) as conn:
        # no seed was decided from one candidate because its other call failed
        (only_valid_after_failure,) = conn.execute(
            "SELECT count(*) FROM filter_decisions f JOIN candidates c"
            " ON c.run_id = f.run_id AND c.seed_key = f.seed_key"
            " WHERE c.status = 'call_failed'"
        ).fetchone()
        (failed,) = conn.execute(
            "SELECT count(*) FROM seed_progress WHERE outcome = 'failed'"
        ).fetchone()
    assert only_valid_after_failure == 0
    assert failed > 0
    assert stormy.stats()["faults"]  # it was a storm

    healthy = simulator()
    second = anyio.run(lambda: generate(_config(healthy.base_url, seeds, db, 3)))
    assert second.status == "done", second.message
    assert second.run_id == first.run_id
    assert _samples(db) == _samples(reference)
