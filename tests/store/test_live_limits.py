"""Live queries cannot hurt the run that holds the store: their own memory share, time
limit, interruption when their client goes or the holder finishes, SELECT-shaped
statements only, and DuckDB's own errors passed through (issue 25)."""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import orjson
import pytest

from halugen.errors import StoreError, UsageError
from halugen.store import db as store_db
from halugen.store.db import Store, open_store
from halugen.store.live import connect_live
from halugen.store.live_guard import QueryLimits
from halugen.store.live_statements import refusal
from halugen.store.rows import LedgerRow

# hours of work for DuckDB, checked for interruption at every chunk
ENDLESS = "SELECT sum(hash(x)) FROM range(300000000000) t(x)"
# a window sort that takes far more than a few MB (it would spill past the run's share)
WINDOW_SORT = (
    "SELECT max(rn) FROM (SELECT row_number() OVER (ORDER BY hash(i)) AS rn "
    "FROM range(3000000) t(i))"
)


@pytest.fixture
def runtime_dir(monkeypatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="hl"))  # socket paths stay under ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def held(runtime_dir, tmp_path, monkeypatch) -> Iterator[Store]:
    """A store this process holds, answering others with a small memory share for queries."""
    monkeypatch.setattr(
        store_db, "LIVE_QUERY_LIMITS", QueryLimits(memory_bytes=8 * 2**20, temp_bytes=2**30)
    )
    store = open_store(tmp_path / "s.duckdb")
    store.create_run(kind="generate", config_hash="h", config={}, tasks="qa", model="m",
                     base_url="u", price=None, budget_pusd=10**12, version="t",
                     run_id="held-run")  # fmt: skip
    assert store.live_server is not None
    try:
        yield store
    finally:
        store.close()


def _write(store: Store, call_id: int) -> None:
    store.writer.put(
        [LedgerRow(call_id, 1, "held-run", "reserve", 5, "k", "sample", "qa", "m", "s")]
    )
    store.writer.flush_blocking()


def _ledger_rows(store: Store) -> int:
    return store.query("SELECT count(*) FROM ledger WHERE run_id = 'held-run'")[0][0]


def _ask_raw(store: Store, sql: str) -> socket.socket:
    """A client that sends ``sql`` and reads nothing yet."""
    assert store.live_server is not None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(store.live_server.path))
    sock.sendall(orjson.dumps({"sql": sql}) + b"\n")
    return sock


def test_a_query_past_its_memory_share_fails_alone_while_the_holder_writes(held):
    outcome: list[BaseException | str] = []

    def ask() -> None:
        conn = connect_live(held.path)
        assert conn is not None
        try:
            conn.execute(WINDOW_SORT).fetchall()
            outcome.append("answered")
        except BaseException as exc:  # what the client is told
            outcome.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    assert held.live_server is not None
    held.live_server.guard.wait_running(1, 60)
    call_id = 0
    while asker.is_alive():  # the run keeps writing all the while
        call_id += 1
        _write(held, call_id)
    asker.join()
    _write(held, call_id + 1)
    assert _ledger_rows(held) == call_id + 1
    (told,) = outcome
    assert isinstance(told, StoreError), told
    assert "needed more memory than queries get beside the run" in str(told)


def test_a_query_is_interrupted_when_its_client_goes_away(held):
    assert held.live_server is not None
    guard = held.live_server.guard
    client = _ask_raw(held, ENDLESS)
    assert guard.wait_running(1, 60)
    client.close()  # the user's process was killed
    assert guard.wait_running(0, 60)
    _write(held, 1)  # and the holder carries on
    assert _ledger_rows(held) == 1


def test_the_holders_exit_interrupts_running_queries_and_says_so(held, caplog):
    assert held.live_server is not None
    guard = held.live_server.guard
    clients = [_ask_raw(held, ENDLESS) for _ in range(2)]
    assert guard.wait_running(2, 60)
    closer = threading.Thread(target=held.close)
    with caplog.at_level(logging.WARNING):
        closer.start()
        closer.join(60)
        assert not closer.is_alive()  # the exit did not wait for the queries
    assert "interrupted 2 live queries from other processes" in caplog.text
    for client in clients:
        # each is told the holder closed, then let go once the file is free: it reads that
        reply = orjson.loads(client.makefile("rb").readline())
        assert reply["kind"] == "closing"
        client.close()


def test_a_query_past_its_time_limit_is_interrupted(held):
    conn = connect_live(held.path, query_timeout=0.2)
    assert conn is not None
    with pytest.raises(StoreError, match=r"time limit of 0.2 s \(--query-timeout raises it\)"):
        conn.execute(ENDLESS)
    again = connect_live(held.path)  # the holder answers the next query as before
    assert again is not None
    assert again.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]


REFUSED = {
    "CHECKPOINT": "CHECKPOINT",
    "FORCE CHECKPOINT": "FORCE CHECKPOINT",
    "VACUUM": "VACUUM",
    "ANALYZE": "ANALYZE",
    "ANALYZE ledger": "ANALYZE",
    "ATTACH 'other.duckdb' AS o": "ATTACH",
    "DETACH o": "DETACH",
    "SET threads = 4": "SET",
    "SET VARIABLE x = 1": "SET VARIABLE",
    "RESET threads": "RESET",
    "PREPARE p AS SELECT 1": "PREPARE",
    "EXECUTE p": "EXECUTE",
    "CREATE TEMP TABLE t AS SELECT 1": "CREATE TEMP",
    "CREATE TEMPORARY VIEW v AS SELECT 1": "CREATE TEMPORARY",
    "CREATE TEMP MACRO m() AS 1": "CREATE TEMP",
    "COPY ledger TO 'x.csv'": "COPY",
    "EXPORT DATABASE 'dump'": "EXPORT",
    "INSTALL httpfs": "INSTALL",
    "LOAD httpfs": "LOAD",
    "PRAGMA force_checkpoint": "PRAGMA force_checkpoint",
    "PRAGMA memory_limit = '8GB'": "PRAGMA",
    "EXPLAIN ANALYZE CHECKPOINT": "CHECKPOINT",
    "SELECT * FROM checkpoint()": "a query calling checkpoint()",
    "SELECT (SELECT 1 FROM force_checkpoint())": "a query calling force_checkpoint()",
    "FROM query('CHECKPOINT')": "a query calling query()",
    "/* a comment */ VACUUM": "VACUUM",
}


@pytest.mark.parametrize("statement", sorted(REFUSED))
def test_statements_other_than_queries_are_refused(statement):
    message = refusal(statement)
    assert message is not None
    assert message.startswith(f"{REFUSED[statement]} is refused")
    assert "\n" not in message


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 1",
        "FROM ledger",
        "WITH a AS (SELECT 1) SELECT * FROM a",
        "VALUES (1)",
        "SHOW TABLES",
        "DESCRIBE ledger",
        "SUMMARIZE ledger",
        "EXPLAIN SELECT 1",
        "EXPLAIN ANALYZE SELECT 1",
        "PRAGMA table_info('ledger')",
        "SELECT query FROM calls",  # a column of that name is no call
        "SELEC 1",  # DuckDB's own syntax error says more than a refusal would
    ],
)
def test_queries_pass(statement):
    assert refusal(statement) is None


def test_a_refused_statement_never_reaches_the_held_store(held):
    before = held.path.stat().st_mtime_ns
    conn = connect_live(held.path)
    assert conn is not None
    for statement in ("CHECKPOINT", "FORCE CHECKPOINT", "VACUUM", "ANALYZE"):
        with pytest.raises(UsageError, match=f"^{statement} is refused"):
            conn.execute(statement)
    assert held.path.stat().st_mtime_ns == before


def test_an_error_after_the_first_rows_reaches_the_client_as_duckdbs_own(held):
    conn = connect_live(held.path)
    assert conn is not None
    late = "SELECT CASE WHEN i > 50000 THEN 'x'::INT ELSE i END FROM range(100000) t(i)"
    with pytest.raises(duckdb.Error, match="Could not convert string 'x' to INT32"):
        conn.execute(late)
    with (
        pytest.raises(duckdb.Error, match="Could not convert string 'x' to INT32"),
        conn.open_reader(late) as reader,
    ):
        reader.read_all()
    # and one that fails before any row, as before
    with pytest.raises(duckdb.Error, match='Referenced column "nope" not found'):
        conn.execute("SELECT nope FROM ledger")
