"""The end of a run that holds the store: nothing a live query leaves behind may keep DuckDB
from checkpointing (a WAL that only grows makes the final checkpoint, at exit, take seconds),
and the holder never waits for a query that does not stop (issue 25)."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import orjson
import pytest

from halugen.store import db as store_db
from halugen.store.db import Store, open_store
from halugen.store.live_guard import QueryGuard, QueryLimits
from halugen.store.live_server import LiveReadServer


@pytest.fixture
def held(monkeypatch) -> Iterator[Store]:
    base = Path(tempfile.mkdtemp(prefix="hl"))  # socket paths stay under ~100 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    store = open_store(base / "s.duckdb")
    assert store.live_server is not None
    try:
        yield store
    finally:
        store.close()
        shutil.rmtree(base, ignore_errors=True)


def test_the_guards_look_at_memory_leaves_no_transaction_open(held):
    """Its ``duckdb_memory()`` read, left unconsumed, kept an autocommit transaction open on
    the guard's connection from the first live query to the end of the run: DuckDB then
    refused every checkpoint ("other write transactions active") and the WAL grew to
    56 MB, which the store's close then had to checkpoint (3-5 s after the last seed)."""
    guard = QueryGuard(held.conn.cursor(), QueryLimits(2**30, 2**30))
    assert guard._usage() is not None  # one look, as its watcher takes many a second
    held.conn.execute("CREATE TABLE t AS SELECT 1 AS x")
    held.conn.cursor().execute("CHECKPOINT")  # raised TransactionException before


def test_the_holder_does_not_wait_for_a_query_that_does_not_stop(held, monkeypatch):
    """A query DuckDB does not give back when interrupted: the holder's close returns at
    once (it waited up to 16 s before), leaves the connection open under that query's
    cursor (closing it there fails: "connection is busy"), and the query's own thread
    frees the file, and releases the clients waiting for it, when it ends."""
    server = held.live_server
    assert server is not None
    monkeypatch.setattr(store_db, "QUERY_END_WAIT", 0.0)
    ends = threading.Event()
    interrupted = threading.Event()

    def stuck(self, stream, sql, params, client=None, timeout=None):
        cur = self._parent.cursor()
        try:
            with self.guard.watch(cur, client, timeout) as watched:
                ends.wait(60)
                if watched.stopped is not None:
                    interrupted.set()
        finally:
            cur.close()
        return True

    monkeypatch.setattr(LiveReadServer, "_run", stuck)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(server.path))
    client.sendall(orjson.dumps({"sql": "SELECT 1"}) + b"\n")
    assert server.guard.wait_running(1, 60)
    held.close()  # returns although the query still runs
    assert not ends.is_set()
    assert held.conn.execute("SELECT 42").fetchone() == (42,)  # not closed under it
    ends.set()
    assert server._file_free.wait(60)  # the query's end freed the file
    assert interrupted.is_set()  # it had been told to stop
    with pytest.raises(duckdb.ConnectionException):
        held.conn.execute("SELECT 42")
    duckdb.connect(str(held.path)).close()  # free for others
    client.close()


def _watched_until_released(
    guard: QueryGuard, cur: duckdb.DuckDBPyConnection, client: socket.socket, sending: bool
) -> tuple[threading.Thread, threading.Event]:
    """A query the guard watches for ``client``, at work in DuckDB or sending its rows,
    that does not end until released (as one on a loaded machine reaches its chunk late)."""
    release = threading.Event()

    def query() -> None:
        with guard.watch(cur, client) as watched:
            watched.sending = sending
            release.wait(60)

    thread = threading.Thread(target=query)
    thread.start()
    assert guard.wait_running(1, 60)
    return thread, release


@pytest.mark.parametrize("sending", [False, True])
def test_the_holders_close_cuts_off_only_a_client_its_rows_are_sent_to(held, sending):
    """The close waits briefly for interrupted queries, then cuts off the clients of those
    still sending (one that stopped reading holds a blocked write: no interrupt reaches
    it). A query still at work must keep its client: on a loaded machine it ends after
    that wait, and its client is then told "closing" and reads the file once it is free;
    cut off, it heard nothing (a full run under load, 1 of 2,786 tests)."""
    guard = QueryGuard(held.conn.cursor(), QueryLimits(2**30, 2**30))
    ours, theirs = socket.socketpair()
    cur = held.conn.cursor()
    thread, release = _watched_until_released(guard, cur, ours, sending)
    try:
        guard.close()
        assert not guard.wait_ended(0.1)  # it has not ended yet
        if sending:
            assert theirs.recv(16) == b""  # cut off: the end of the stream
        else:
            ours.sendall(b"closing\n")  # what the holder tells it once the query ends
            assert theirs.recv(16) == b"closing\n"
    finally:
        release.set()
        thread.join(60)
        cur.close()
        ours.close()
        theirs.close()
    assert guard.wait_ended(60)
