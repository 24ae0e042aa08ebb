"""A call stopped after its request had left counts as spent: the calls view names it
'abandoned_billed', not 'cancelled' (issue 25), and the money views still add up."""

from __future__ import annotations

from halugen.store.db import open_store
from halugen.store.rows import LedgerRow
from tests.export.stores import add_run, insert


def _logged(store, call_id: int, status: str) -> None:
    insert(
        store,
        "call_log",
        {"call_id": call_id, "key": f"k{call_id}", "key_prefix": call_id, "run_id": "r1",
         "stage": "sample", "task": "qa", "model": "m", "status": status, "cost_pusd": 0,
         "reserved_pusd": 0},
    )  # fmt: skip


def _ledger(call_id: int, event: str, pusd: int) -> LedgerRow:
    return LedgerRow(call_id, 1, "r1", event, pusd, f"k{call_id}", "sample", "qa", "m", "s")


def test_a_stopped_call_that_was_billed_is_not_called_cancelled(tmp_path):
    with open_store(tmp_path / "s.duckdb") as store:
        add_run(store, "r1")
        # 1: stopped at the provider (its reservation counted as spent); 2: released at $0
        store.writer.put([_ledger(1, "reserve", 7 * 10**9), _ledger(1, "consume", 7 * 10**9)])
        store.writer.put([_ledger(2, "reserve", 5 * 10**9), _ledger(2, "release", 0)])
        store.writer.flush_blocking()
        _logged(store, 1, "cancelled")
        _logged(store, 2, "cancelled")
        rows = store.query("SELECT call_id, status, cost_usd FROM calls ORDER BY call_id")
        assert rows == [(1, "abandoned_billed", 0.007), (2, "cancelled", 0.0)]
        ((calls, cancelled, cost),) = store.query(
            "SELECT calls, cancelled_calls, cost_usd FROM cost_by_stage WHERE run_id = 'r1'"
        )
        (spent,) = store.query("SELECT spent_usd FROM run_spend WHERE run_id = 'r1'")[0]
        assert (calls, cancelled) == (2, 2)
        assert cost == spent == 0.007
