"""A session opening a run counts the reservations its last session never closed as spent.

Only the slow kill -9 e2e tests exercised this before; here the ledger is written directly:
an open reservation (the request was at the provider when the process died), a settled one,
and another run's open one, which is none of this run's business.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from halugen.store.db import open_store
from halugen.store.rows import LedgerRow
from halugen.store.run_open import mark_lost_reservations

USD = 10**12


def _run(store, run_id: str) -> None:
    store.create_run(
        kind="generate", config_hash=run_id, config={}, tasks="qa", model="m", base_url="u",
        price=None, budget_pusd=10 * USD, version="t", run_id=run_id,
    )  # fmt: skip


def _row(call_id: int, run_id: str, event: str, pusd: int) -> LedgerRow:
    return LedgerRow(call_id, 1, run_id, event, pusd, "k", "sample", "qa", "m", "s")


def test_open_reservations_of_a_crashed_session_count_as_spent_once(tmp_path: Path) -> None:
    db = tmp_path / "h.duckdb"
    store = open_store(db)
    _run(store, "r1")
    _run(store, "r2")

    async def write() -> None:  # as the call runner does: durable in the journal
        await store.writer.put_journaled(
            [
                _row(1, "r1", "reserve", 3 * USD),  # at the provider when the session died
                _row(2, "r1", "reserve", 2 * USD),
                _row(2, "r1", "settle", USD),
                _row(3, "r2", "reserve", 4 * USD),  # another run's
            ]
        )

    asyncio.run(write())
    store.writer.flush_blocking()
    store.close()

    with open_store(db) as store:  # the next session
        assert store.spent("r1") == USD
        assert mark_lost_reservations(store, "r1") == 1
        assert store.spent("r1") == USD + 3 * USD
        assert mark_lost_reservations(store, "r1") == 0  # counted once
        assert store.spent("r2") == 0  # the other run is left alone
