"""Money figures agree everywhere: calls, cost_by_stage, run_spend and the provider's bill."""

from __future__ import annotations

from pathlib import Path

import anyio
import duckdb
import pytest

from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate

TERMINAL = {
    "ok",
    "cached",
    "content_filter",
    "failed",
    "released",
    "consumed",
    "lost",
    "cancelled",
    "abandoned_billed",
    "budget_exhausted",
}


def _config(base_url: str, seeds: Path, db: Path, **kw: object) -> RunConfig:
    values: dict[str, object] = dict(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="test-key",
        db=db,
        rate=RateLimit(concurrency=8),
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02),
        timeouts=Timeouts(total=0.5, read=0.5),
        progress=False,
    )
    values.update(kw)
    return RunConfig(**values)  # type: ignore[arg-type]


def _check_agreement(db: Path) -> dict[str, float]:
    with duckdb.connect(str(db), read_only=True) as conn:
        per_run = conn.execute(
            "SELECT s.run_id, s.spent_usd, (SELECT COALESCE(sum(cost_usd), 0) FROM calls c"
            " WHERE c.run_id = s.run_id), (SELECT COALESCE(sum(cost_usd), 0) FROM cost_by_stage b"
            " WHERE b.run_id = s.run_id), (SELECT COALESCE(sum(pusd), 0) / 1e12 FROM ledger l"
            " WHERE l.run_id = s.run_id AND l.event IN ('settle', 'consume', 'lost'))"
            " FROM run_spend s"
        ).fetchall()
        statuses = dict(conn.execute("SELECT status, count(*) FROM calls GROUP BY 1").fetchall())
    for run_id, spent, calls_sum, stage_sum, ledger_sum in per_run:
        assert calls_sum == pytest.approx(spent, rel=1e-9, abs=1e-12), run_id
        assert stage_sum == pytest.approx(spent, rel=1e-9, abs=1e-12), run_id
        assert ledger_sum == pytest.approx(spent, rel=1e-9, abs=1e-12), run_id  # none open
    assert set(statuses) <= TERMINAL, statuses
    return statuses


def test_calls_view_adds_up_to_run_spend_under_ambiguous_faults(simulator, hotpot_file, tmp_path):
    # malformed bodies and hangs are consumed (the provider may bill them), 500s released
    sim = simulator(fail_rate=0.4, faults=("malformed", "hang", "500"), hang_s=2.0)
    db = tmp_path / "h.duckdb"
    outcome = anyio.run(lambda: generate(_config(sim.base_url, hotpot_file(24), db)))
    assert outcome.status in ("done", "incomplete"), outcome.message
    statuses = _check_agreement(db)
    assert statuses.get("ok", 0) > 0
    with duckdb.connect(str(db), read_only=True) as conn:
        (spent,) = conn.execute("SELECT spent_usd FROM run_spend").fetchone()
        # a call that failed before it succeeded keeps the reasons of its retries
        retried = conn.execute(
            "SELECT error FROM calls WHERE status = 'ok' AND attempts > 1"
        ).fetchall()
    assert retried and all(r[0] and r[0].startswith("attempts failed: ") for r in retried)
    assert spent >= sim.stats(keys=False)["billed_usd"] - 1e-12


def test_calls_cut_short_by_the_budget_end_with_their_cost(simulator, hotpot_file, tmp_path):
    # retries of consumed attempts use the budget up while calls are between attempts
    sim = simulator(fail_rate=0.5, faults=("malformed",))
    db = tmp_path / "h.duckdb"
    cfg = _config(sim.base_url, hotpot_file(60), db, budget_usd=0.004)
    outcome = anyio.run(lambda: generate(cfg))
    assert outcome.status == "budget_exhausted", outcome.message
    statuses = _check_agreement(db)
    assert "reserved" not in statuses
    with duckdb.connect(str(db), read_only=True) as conn:
        (spent, budget) = conn.execute("SELECT spent_usd, budget_usd FROM run_spend").fetchone()
        (consumed_cost,) = conn.execute(
            "SELECT COALESCE(sum(cost_usd), 0) FROM calls WHERE status <> 'ok'"
        ).fetchone()
    assert spent <= budget + 1e-12
    assert consumed_cost > 0  # consumed malformed replies are counted, not shown at $0
    assert sim.stats(keys=False)["billed_usd"] <= spent + 1e-12
