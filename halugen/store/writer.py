"""The one writer: a thread that appends rows to the store in groups.

Callers hand over complete groups of rows; each group lands in one transaction, so rows
that must appear together (a sample and its seed outcome) never half-land. Two lanes:

- ``put_durable`` (budget reservations): small, committed within a few milliseconds; the
  caller waits for the commit, because a request may only leave once its reservation is
  durable.
- ``put`` (everything else): committed in bigger, less frequent groups, because a commit's
  cost is mostly fixed (the WAL write and sync) and these rows need no wait. A crash can lose
  the last fraction of a second of them; the ledger is built so that this only ever counts
  more money as spent, never less.

``created_at`` is filled in at commit time (one clock read per group, not per row).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import StoreError
from .migrations import TABLE_COLUMNS

__all__ = ["Row", "StoreWriter"]

# (table, values in TABLE_COLUMNS order without the trailing created_at), or ("sql", (q, p))
Row = tuple[str, tuple[Any, ...]]
_Item = tuple[Sequence[Row], asyncio.Future[None] | None]


class StoreWriter:
    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection,
        *,
        durable_seconds: float = 0.002,
        bulk_seconds: float = 0.2,
        max_rows: int = 20_000,
    ) -> None:
        self._conn = conn  # a cursor of its own: DuckDB connections are per thread
        self._durable_seconds = durable_seconds
        self._bulk_seconds = bulk_seconds
        self._max_rows = max_rows
        self._durable: deque[_Item] = deque()
        self._bulk: deque[_Item] = deque()
        self._bulk_rows = 0
        self._flush_requested = False
        self._wake = threading.Event()
        self._idle = threading.Condition()
        self._pending = 0
        self._closing = False
        self._error: BaseException | None = None
        self.commits = 0
        self.rows_written = 0
        self._thread = threading.Thread(target=self._run, name="halugen-store-writer",
                                        daemon=True)
        self._thread.start()

    # -- producer side (event loop thread) ---------------------------------------------
    def put(self, rows: Sequence[Row]) -> None:
        """Queue rows to be committed together, soon."""
        self._check()
        with self._idle:
            self._pending += 1
        self._bulk.append((rows, None))
        self._bulk_rows += len(rows)
        if self._bulk_rows >= self._max_rows:
            self._wake.set()

    async def put_durable(self, rows: Sequence[Row]) -> None:
        """Queue rows and wait until they are committed."""
        self._check()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._idle:
            self._pending += 1
        self._durable.append((rows, fut))
        self._wake.set()
        await fut

    async def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        self._flush_requested = True
        await self.put_durable(())

    def flush_blocking(self, timeout: float | None = None) -> None:
        self._flush_requested = True
        self._wake.set()
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0 or self._error is not None, timeout)
        self._check()

    def close(self) -> None:
        """Commit what is queued, then stop the thread."""
        self._closing = True
        self._wake.set()
        self._thread.join()
        self._check()

    def _check(self) -> None:
        if self._error is not None:
            raise StoreError(f"writing to the store failed: {self._error}") from self._error

    # -- writer thread -----------------------------------------------------------------
    def _run(self) -> None:
        last_bulk = time.monotonic()
        while True:
            self._wake.wait(self._bulk_seconds)
            if self._durable and not self._closing:
                time.sleep(self._durable_seconds)  # let a group of reservations gather
            self._wake.clear()
            batch: list[_Item] = []
            while self._durable:
                batch.append(self._durable.popleft())
            now = time.monotonic()
            if (self._closing or self._flush_requested or now - last_bulk >= self._bulk_seconds
                    or self._bulk_rows >= self._max_rows):
                self._flush_requested = False
                last_bulk = now
                n = 0
                while self._bulk and n < self._max_rows:
                    item = self._bulk.popleft()
                    n += len(item[0])
                    batch.append(item)
                self._bulk_rows = max(0, self._bulk_rows - n)
                if self._bulk:
                    self._wake.set()
            if batch:
                self._commit(batch)
            if self._closing and not self._bulk and not self._durable:
                return

    def _commit(self, batch: list[_Item]) -> None:
        error: BaseException | None = None
        if self._error is None:
            by_table: dict[str, list[tuple[Any, ...]]] = {}
            statements: list[tuple[str, Any]] = []
            for rows, _ in batch:
                for table, values in rows:
                    if table == "sql":
                        statements.append(values)
                    else:
                        by_table.setdefault(table, []).append(values)
            try:
                stamp = datetime.now(UTC).replace(tzinfo=None)
                self._conn.execute("BEGIN TRANSACTION")
                for table, values in by_table.items():
                    self._insert(table, values, stamp)
                for sql, params in statements:
                    self._conn.execute(sql, params)
                self._conn.execute("COMMIT")
                self.commits += 1
                self.rows_written += sum(len(v) for v in by_table.values())
            except BaseException as exc:  # disk full, corrupt file, schema bug: fatal
                error = exc
                with contextlib.suppress(duckdb.Error):
                    self._conn.execute("ROLLBACK")
                self._error = exc
        else:
            error = self._error
        futures = [f for _, f in batch if f is not None]
        if futures:
            loop = futures[0].get_loop()
            # a closed loop means nobody is waiting any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve, futures, error)
        with self._idle:
            self._pending -= len(batch)
            self._idle.notify_all()

    def _insert(self, table: str, rows: list[tuple[Any, ...]], stamp: datetime) -> None:
        columns = TABLE_COLUMNS[table]
        width = len(columns) - 1  # created_at comes from the commit
        for r in rows:
            if len(r) != width:
                raise ValueError(f"{table} row has {len(r)} values, expected {width}")
        arrays = [pa.array([r[i] for r in rows]) for i in range(width)]
        arrays.append(pa.array([stamp] * len(rows), pa.timestamp("us")))
        data = pa.Table.from_arrays(arrays, names=list(columns))
        self._conn.register("_halugen_rows", data)
        try:
            self._conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM _halugen_rows"
            )
        finally:
            self._conn.unregister("_halugen_rows")


def _resolve(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for fut in futures:
        if fut.done():
            continue
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(StoreError(f"writing to the store failed: {error}"))
