"""``status``: calls stopped by Ctrl-C or by the budget are counted apart from failed ones."""

from __future__ import annotations

import json

from halugen.cli import main
from halugen.store.db import open_store
from tests.export.stores import add_run, insert


def _call(store, n: int, status: str) -> None:
    insert(
        store,
        "call_log",
        {
            "call_id": n,
            "key": f"k{n}",
            "key_prefix": n,
            "run_id": "r1",
            "stage": "sample",
            "task": "qa",
            "model": "gpt-4o-mini",
            "status": status,
            "cost_pusd": 0,
            "reserved_pusd": 0,
        },
    )


def test_status_counts_cancelled_calls_apart_from_failed(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    store = open_store(db)
    add_run(store, "r1")
    statuses = ["ok", "ok", "cached", "failed", "cancelled", "cancelled", "budget_exhausted"]
    for n, status in enumerate(statuses):
        _call(store, n, status)
    store.close()
    capsys.readouterr()
    assert main(["status", "--db", str(db), "--format", "json"]) == 0
    tables = json.loads(capsys.readouterr().out)
    (row,) = tables["spend_per_stage"]
    assert (row["calls"], row["cached"], row["failed"], row["cancelled"]) == (7, 1, 1, 3)
    assert list(row)[:7] == ["run_id", "task", "stage", "calls", "cached", "failed", "cancelled"]
