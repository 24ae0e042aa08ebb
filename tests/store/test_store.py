"""The DuckDB store: migrations, the group-commit writer, the key index, bad files."""

from __future__ import annotations

import asyncio

import duckdb
import pytest

from halugen.errors import StoreError
from halugen.store.db import open_store
from halugen.store.key_index import KeyIndex, key_prefix
from halugen.store.migrations import MIGRATIONS
from halugen.store.rows import TABLE_COLUMNS, BadRecordRow, LedgerRow, SeedOutcomeRow, Statement
from halugen.store.writer import StoreWriter


def test_migrations_are_recorded_once_and_views_exist(tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db):
        pass
    with open_store(db) as store:  # reopening applies nothing twice
        names = [r[0] for r in store.query("SELECT name FROM schema_migrations ORDER BY name")]
        assert names == [name for name, _ in MIGRATIONS]
        views = {
            r[0] for r in store.query("SELECT view_name FROM duckdb_views() WHERE NOT internal")
        }
        assert {"samples", "calls", "cost_by_stage", "seed_progress", "qa_samples"} <= views


def test_store_from_a_newer_halugen_is_refused(tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        store.conn.execute("INSERT INTO schema_migrations VALUES ('9999_future', now())")
    with pytest.raises(StoreError, match="newer halugen"):
        open_store(db)


@pytest.mark.parametrize("content", [b"not a database at all" * 100, b"\x00" * 10])
def test_corrupt_store_is_a_one_line_error(tmp_path, content):
    db = tmp_path / "s.duckdb"
    db.write_bytes(content)
    with pytest.raises(StoreError) as info:
        open_store(db)
    assert str(db) in str(info.value) and "\n" not in str(info.value)


def test_read_only_missing_store(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        open_store(tmp_path / "nope.duckdb", read_only=True)


def test_writer_groups_commit_atomically_and_durable_waits(tmp_path):
    db = tmp_path / "s.duckdb"
    store = open_store(db)
    writer = store.writer

    def outcome(i: int) -> SeedOutcomeRow:
        return SeedOutcomeRow("r", "qa", f"s{i}", "sampled", "filter", None, None)

    async def main() -> None:
        for i in range(500):
            writer.put([outcome(i), BadRecordRow("r", "qa", "f", i, "why")])
        await writer.put_durable([outcome(999)])
        # a durable put is committed when it returns, without waiting for the bulk lane
        durable = store.query("SELECT count(*) FROM seed_outcomes WHERE seed_key = 's999'")
        assert durable[0][0] == 1
        await writer.flush()  # after a flush, everything queued before it is committed
        n = store.query("SELECT count(*) FROM seed_outcomes")[0][0]
        assert n == 501

    asyncio.run(main())
    assert writer.commits < 501  # rows were grouped, not committed one by one
    store.close()
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM bad_records").fetchone()[0] == 500


def test_writer_failure_is_a_store_error(tmp_path):
    store = open_store(tmp_path / "s.duckdb")

    async def main() -> None:
        with pytest.raises(StoreError):
            await store.writer.put_durable([Statement("INSERT INTO no_such_table VALUES (1)", [])])
        with pytest.raises(StoreError):
            width = len(TABLE_COLUMNS["seed_outcomes"]) - 1
            store.writer.put([SeedOutcomeRow(*(("r",) * width))])

    asyncio.run(main())
    with pytest.raises(StoreError):
        store.close()


def test_key_index():
    keys = [f"{i:016x}" + "ab" * 24 for i in (1, 5, 2**63, 2**64 - 1)]
    index = KeyIndex(key_prefix(k) for k in keys[:3])
    assert keys[0] in index and keys[2] in index
    assert keys[3] not in index and f"{7:016x}" + "0" * 48 not in index
    index.add(keys[3])
    assert keys[3] in index and len(index) == 4
    assert key_prefix("f" * 64) == -1


def test_writer_takes_records_and_statements_together_and_nothing_else(tmp_path):
    store = open_store(tmp_path / "s.duckdb", serve_reads=False)
    # the positional form of earlier versions is refused where it is handed over
    positional = ("ledger", (1, 1, "r", "settle", 3, "k", "sample", "qa", "m", None))
    for wrong in (positional, ("sql", ("UPDATE endpoint_facts SET context_window = 1", []))):
        with pytest.raises(TypeError, match="takes records"):
            store.writer.put([LedgerRow(9, 1, "r", "reserve", 1, "k", "s", "qa", "m", None), wrong])
    store.writer.put(
        [
            LedgerRow(1, 1, "r", "reserve", 5, "k", "sample", "qa", "m", None),
            LedgerRow(1, 1, "r", "settle", 3, "k", "sample", "qa", "m", None),
            Statement("INSERT INTO endpoint_facts VALUES (?, ?, ?, ?, now())", ["u", "m", 8, "x"]),
            Statement("UPDATE endpoint_facts SET context_window = ?", [16]),
        ]
    )
    store.writer.flush_blocking()
    assert store.query("SELECT event, pusd FROM ledger ORDER BY pusd") == [
        ("settle", 3),
        ("reserve", 5),
    ]
    assert store.query("SELECT context_window FROM endpoint_facts") == [(16,)]
    store.writer.put([LedgerRow(*([None] * 10))])  # NOT NULL columns: the group fails
    with pytest.raises(StoreError):
        store.writer.flush_blocking()
    with pytest.raises(StoreError):
        store.close()


def test_durable_commits_are_grouped_by_the_writers_waiting(tmp_path):
    """The durable lane commits once every writer that could come is waiting, in one
    transaction, instead of on a clock: here the interval is an hour, so only the waiting
    writers can start the commit (a lane that waited out the clock would time out)."""
    store = open_store(tmp_path / "s.duckdb", serve_reads=False)
    writer = StoreWriter(store.conn.cursor(), store.conn.cursor(), durable_seconds=3600)
    writer.expected_writers = lambda: 3

    async def main() -> None:
        puts = [
            writer.put_durable([LedgerRow(i, 1, "r", "reserve", 5, "k", "sample", "qa", "m", None)])
            for i in range(3)
        ]
        await asyncio.wait_for(asyncio.gather(*puts), 120)

    asyncio.run(main())
    assert writer._durable.commits == 1 and writer._durable.rows_written == 3
    writer.close()
    assert store.query("SELECT count(*) FROM ledger")[0][0] == 3
    store.close()
