"""The schema: table migrations, views defined once, records that match their tables, and a
store written by an earlier schema opened with today's code."""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import orjson
import pytest

from halugen.store.db import open_store
from halugen.store.migrations import MIGRATIONS
from halugen.store.rows import RECORDS, TABLE_COLUMNS, LedgerRow, SampleRow
from halugen.store.views import VIEWS

FIXTURES = Path(__file__).parent / "fixtures"


def old_store(tmp_path: Path, name: str = "store-0014") -> Path:
    """A copy of a checked-in store written by an earlier halugen (make_old_store.py)."""
    db = tmp_path / f"{name}.duckdb"
    with gzip.open(FIXTURES / f"{name}.duckdb.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


def test_every_record_matches_its_table(tmp_path):
    with open_store(tmp_path / "s.duckdb", serve_reads=False) as store:
        for record, table in RECORDS.items():
            columns = [
                r[0]
                for r in store.query(
                    "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
                    "ORDER BY column_index",
                    [table],
                )
            ]
            assert "created_at" in columns, table
            assert list(record._fields) == [c for c in columns if c != "created_at"], table
        assert set(TABLE_COLUMNS) == set(RECORDS.values())


def test_views_are_defined_once_and_never_by_a_migration():
    names = [name for name, _ in VIEWS]
    assert len(names) == len(set(names))
    for name, sql in MIGRATIONS:
        assert not re.search(r"\bCREATE\s+(OR\s+REPLACE\s+)?VIEW\b", sql, re.I), name


def test_a_store_opened_for_writing_gets_the_current_views(tmp_path):
    db = tmp_path / "s.duckdb"
    with open_store(db, serve_reads=False) as store:
        store.conn.execute("DROP VIEW cost_by_stage")
        store.conn.execute("CREATE OR REPLACE VIEW calls AS SELECT 1 AS stale")
    with open_store(db, serve_reads=False) as store:
        views = dict(
            store.query("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal")
        )
        assert set(views) == {name for name, _ in VIEWS}
        # each carries the digest of its definition: an up-to-date store is not rewritten
        assert all(comment.startswith("halugen:") for comment in views.values())
        assert "cost_usd" in [d[0] for d in store.conn.execute("SELECT * FROM calls").description]


# stores written by main at 552b6fa (migrations up to 0010: no call_requests, batches...)
# and at 4886af1 (up to 0014), each with a run ended and a run killed (make_old_store.py)
@pytest.mark.parametrize("name", ["store-0010", "store-0014"])
def test_a_store_of_an_earlier_schema_keeps_its_views_and_money(tmp_path, name):
    recorded = orjson.loads((FIXTURES / f"{name}.json").read_bytes())
    expected = recorded["figures"]
    db = old_store(tmp_path, name)
    with open_store(db, serve_reads=False) as store:
        got = {
            label: orjson.loads(orjson.dumps([list(r) for r in store.query(sql)], default=str))
            for label, sql in recorded["queries"].items()
        }
        # the migrations it had stay recorded; the ones it lacked come after them
        current = [name for name, _ in MIGRATIONS]
        old = [m[0] for m in expected.pop("migrations")]
        assert current[: len(old)] == old
        assert got.pop("migrations") == [[name] for name in current]
        # today's views give what the views of the code that wrote it gave
        assert got == expected
        views = {
            r[0] for r in store.query("SELECT view_name FROM duckdb_views() WHERE NOT internal")
        }
        assert views == {name for name, _ in VIEWS}

        # money adds up to the ledger: settled, consumed and lost amounts, plus each
        # reservation nobody closed (the killed run's calls in flight) at its full amount
        ledger = {
            run: (charged, open_reserved)
            for run, charged, open_reserved in store.query(
                """
                SELECT run_id,
                       sum(pusd) FILTER (WHERE event IN ('settle', 'consume', 'lost')),
                       COALESCE(sum(pusd) FILTER (WHERE event = 'reserve' AND NOT EXISTS (
                           SELECT 1 FROM ledger c WHERE c.call_id = l.call_id
                           AND c.res_no = l.res_no AND c.event <> 'reserve')), 0)
                FROM ledger l GROUP BY run_id
                """
            )
        }
        spend = {
            r[0]: r[1:]
            for r in store.query("SELECT run_id, spent_usd, unsettled_usd FROM run_spend")
        }
        calls = dict(store.query("SELECT run_id, sum(cost_usd) FROM calls GROUP BY run_id"))
        assert set(ledger) == set(spend) == set(calls) and len(ledger) == 2
        for run, (charged, open_reserved) in ledger.items():
            assert spend[run][0] == pytest.approx((charged + open_reserved) / 1e12)
            assert spend[run][1] == pytest.approx(open_reserved / 1e12)
            assert calls[run] == pytest.approx((charged + open_reserved) / 1e12)
        assert sum(o for _, o in ledger.values()) > 0  # the killed run left some open

        # today's records go into the old store's tables, and the views count them
        (run,) = [r[0] for r in expected["runs"] if r[2] == "done"]
        old_spent = {r[0]: r[3] for r in expected["run_spend"]}[run]
        store.writer.put(
            [
                LedgerRow(9999, 1, run, "reserve", 10**9, "k", "sample", "qa", "m", None),
                LedgerRow(9999, 1, run, "settle", 4 * 10**8, "k", "sample", "qa", "m", None),
                SampleRow(
                    **{
                        **dict.fromkeys(SampleRow._fields),
                        "run_id": run,
                        "task": "qa",
                        "seed_key": "new",
                    }
                ),
            ]
        )
        store.writer.flush_blocking()
        (spent,) = store.query("SELECT spent_usd FROM run_spend WHERE run_id = ?", [run])[0]
        assert spent == pytest.approx(old_spent + 4e-4)
        (n,) = store.query("SELECT count(*) FROM qa_samples WHERE run_id = ?", [run])[0]
        assert n == 1 + sum(r[2] for r in expected["samples"] if r[0] == run)


@pytest.mark.parametrize("name", ["store-0014", "store-0010"])
def test_a_read_only_command_brings_an_earlier_store_up_to_date(tmp_path, name):
    """``status``/``export`` open the store read-only, yet query tables and views of today's
    schema: an older store is migrated first (the file is free), never left to fail."""
    db = old_store(tmp_path, name)
    with open_store(db, read_only=True) as store:
        applied = {r[0] for r in store.query("SELECT name FROM schema_migrations")}
        assert applied == {name for name, _ in MIGRATIONS}
        assert store.query("SELECT count(*) FROM task_folders") == [(0,)]
        assert store.query("SELECT count(*) FROM overshoots")[0][0] >= 0
