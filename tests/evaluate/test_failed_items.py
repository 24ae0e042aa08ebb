"""An eval run whose items failed on call errors ends incomplete (exit 1), never done."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests.e2e.test_eval import run_eval, write_qa


def test_failed_items_end_the_run_incomplete(simulator, tmp_path: Path) -> None:
    data, _ = write_qa(tmp_path / "qa_data.json", 4)
    sim = simulator(fail_rate=1.0, faults=("500",))
    db = tmp_path / "h.duckdb"
    outcome = run_eval(sim.base_url, data, db, concurrency=2)
    assert outcome.status == "incomplete" and outcome.exit_code == 1, outcome.message
    assert "item(s) failed on call errors" in outcome.message and "HTTP 500" in outcome.message
    with duckdb.connect(str(db), read_only=True) as conn:
        status = conn.execute("SELECT status FROM runs WHERE run_id = ?", [outcome.run_id])
        assert status.fetchall() == [("incomplete",)]
