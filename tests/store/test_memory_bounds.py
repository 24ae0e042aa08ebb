"""What keeps a long run's memory flat in the work done: DuckDB's cache is capped in the
writing process, the key indexes stay near 8 bytes per key, and the end of a run asks the
store for aggregates, never for a table's rows."""

from __future__ import annotations

import contextlib
import hashlib
from types import SimpleNamespace

import duckdb

from halugen.budget import Ledger
from halugen.engine import _finish
from halugen.stats import RunStats
from halugen.store.db import STORE_MEMORY_LIMIT, open_store
from halugen.store.key_index import KeyIndex
from halugen.store.rows import LedgerRow, SeedOutcomeRow, SeedRow


def _key(i: int) -> str:
    return hashlib.sha256(str(i).encode()).hexdigest()


def _bytes(setting: str) -> float:
    number, unit = setting.split()
    return float(number) * {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "MB": 1e6, "GB": 1e9}[unit]


def test_the_writing_process_caps_duckdbs_memory(tmp_path):
    with open_store(tmp_path / "s.duckdb", serve_reads=False) as store:
        (limit,) = store.query("SELECT current_setting('memory_limit')")[0]
        # DuckDB's default is 80% of the machine's memory; ours is the run's share plus
        # the share other processes' queries get (live_guard.py): a few tens of MB each
        assert _bytes(limit) <= _bytes(STORE_MEMORY_LIMIT.replace("MB", " MB")) * 1.05
        # nothing the store runs can raise it again
        cursor = store.conn.cursor()
        with contextlib.suppress(duckdb.Error):
            cursor.execute("SET memory_limit = '8GB'")
        (after,) = store.query("SELECT current_setting('memory_limit')")[0]
        assert after == limit


def test_key_index_merges_added_keys_into_its_array():
    index = KeyIndex(())
    keys = [_key(i) for i in range(3 * KeyIndex.MERGE_EVERY + 17)]
    for key in keys:
        index.add(key)
        # the set of Python ints (about 70 bytes a key) never holds more than a merge's worth
        assert len(index._added) < KeyIndex.MERGE_EVERY
    assert len(index) == len(keys)
    assert len(index._sorted) == 3 * KeyIndex.MERGE_EVERY
    assert list(index._sorted) == sorted(index._sorted)
    assert all(key in index for key in keys)
    assert not any(_key(-i) in index for i in range(1, 500))


class _CountingStore:
    """A real store that records how many rows each of the finishing code's reads returns."""

    def __init__(self, store):
        self._store = store
        self.reads: list[tuple[str, int]] = []

    def query(self, sql, params=None):
        rows = self._store.query(sql, params)
        self.reads.append((sql, len(rows)))
        return rows

    def spent(self, run_id):
        self.reads.append(("spent", 1))
        return self._store.spent(run_id)

    def update_run(self, run_id, **values):
        self._store.update_run(run_id, **values)


def test_the_end_of_a_run_reads_aggregates_only(tmp_path):
    n = 300
    with open_store(tmp_path / "s.duckdb", serve_reads=False) as store:
        run_id = store.create_run(
            kind="generate", config_hash="h", config={}, tasks="qa", model="m", base_url="u",
            price=None, budget_pusd=None, version="t",
        )  # fmt: skip
        rows: list = []
        for i in range(n):
            key = _key(i)
            rows.append(SeedRow(run_id, "qa", key, str(i), "d", "f", i, "{}", None))
            outcome = "failed" if i % 3 == 0 else "sampled"
            rows.append(SeedOutcomeRow(run_id, "qa", key, outcome, "filter", None, None))
            rows.append(LedgerRow(i + 1, 1, run_id, "settle", 7, key, "sample", "qa", "m", key))
        store.writer.put(rows)
        store.writer.flush_blocking()
        stats = RunStats(run_id=run_id)
        counting = _CountingStore(store)
        ctx = SimpleNamespace(stats=stats, run_id=run_id)
        outcome = _finish(counting, ctx, Ledger(None), "done", "", [])  # type: ignore[arg-type]
        assert outcome.status == "incomplete" and "100 seed(s) failed" in outcome.message
        assert outcome.spent_pusd == 7 * n
        assert counting.reads, "the end of a run reads nothing?"
        for sql, returned in counting.reads:
            assert returned == 1, f"the end of a run fetched {returned} rows: {sql}"
