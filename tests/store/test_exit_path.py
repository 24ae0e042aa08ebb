"""The end of a run that holds the store: nothing a live query leaves behind may keep DuckDB
from checkpointing (a WAL that only grows makes the final checkpoint, at exit, take seconds),
and the holder never waits for a query that does not stop (issue 25)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from halugen.store.db import Store, open_store


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
    assert held.live_server is not None
    guard = held.live_server.guard
    with guard.watch(held.conn.cursor(), None):
        guard.check()  # one look, as the watcher takes several times a second
    held.conn.execute("CREATE TABLE t AS SELECT 1 AS x")
    held.conn.cursor().execute("CHECKPOINT")  # raised TransactionException before
