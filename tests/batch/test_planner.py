"""A planning pass keeps out of the store what the stages write about a deferred seed."""

from __future__ import annotations

from pathlib import Path

from halugen.batch.plan import PassPlan
from halugen.batch.planner import PlanningRunner
from halugen.stats import RunStats
from halugen.store.db import open_store
from halugen.store.rows import (
    CandidateRow,
    FilterDecisionRow,
    SeedOutcomeRow,
    SeedRow,
)


def test_rows_about_a_deferred_seed_are_dropped_and_its_failure_is_not_counted(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "p.duckdb")
    try:
        stats = RunStats()
        plan = PassPlan(run_id="r1", deferred_seeds={("qa", "s-deferred")})
        planner = PlanningRunner(
            object(),  # the call runner: seed_rows never asks it
            store=store,
            run_id="r1",
            plan=plan,
            stats=stats,
        )
        stats.bump(stats.failed, "qa")  # what the sink counted for the deferred seed
        deferred = [
            CandidateRow("r1", "qa", "s-deferred", 0, "t", "h", "k1", None, None,
                         "call_failed", "waiting for a batch", None),
            FilterDecisionRow("r1", "qa", "s-deferred", None, None, "call_failed", "k2",
                              "h", None, "waiting for a batch"),
            SeedOutcomeRow("r1", "qa", "s-deferred", "failed", "sample", "call_failed", None),
        ]  # fmt: skip
        answered = [
            SeedRow("r1", "qa", "s-deferred", "id", "d", "f", 1, "{}", None),  # not a stage's
            CandidateRow("r1", "qa", "s-done", 0, "t", "h", "k3", "text", "p", "ok", None, None),
            SeedOutcomeRow("r1", "qa", "s-done", "sampled", "filter", None, None),
            SeedOutcomeRow("r1", "other", "s-deferred", "failed", "sample", "call_failed", None),
        ]
        kept = planner.seed_rows([*deferred, *answered])
        assert list(kept) == answered
        assert stats.failed == {"qa": 0}  # pending, not failed
    finally:
        store.close()
