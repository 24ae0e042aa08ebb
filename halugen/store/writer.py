"""The one writer: a thread that appends rows to the store in small groups.

Callers hand over complete groups of rows (``put``); each group lands in one transaction,
so rows that must appear together (a sample and its seed outcome) never half-land. The
thread commits whatever has queued every few milliseconds, so the store keeps up with
thousands of rows per second. ``put_durable`` returns only after the commit — the budget
uses it to make a reservation durable before its request leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import StoreError
from .migrations import TABLE_COLUMNS

__all__ = ["Row", "StoreWriter"]

Row = tuple[str, tuple[Any, ...]]  # (table, values in TABLE_COLUMNS order) or ("sql", (q, params))


class StoreWriter:
    def __init__(
        self, conn: duckdb.DuckDBPyConnection, *, group_seconds: float = 0.005,
        max_rows: int = 5000,
    ) -> None:
        self._conn = conn  # a cursor of its own: DuckDB connections are per thread
        self._group_seconds = group_seconds
        self._max_rows = max_rows
        self._queue: deque[tuple[Sequence[Row], asyncio.Future[None] | None]] = deque()
        self._wake = threading.Event()
        self._idle = threading.Condition()
        self._pending = 0
        self._closing = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="halugen-store-writer",
                                        daemon=True)
        self.commits = 0
        self.rows_written = 0
        self._thread.start()

    # -- producer side (event loop thread) ---------------------------------------------
    def put(self, rows: Sequence[Row]) -> None:
        """Queue rows to be committed together soon."""
        self._check()
        with self._idle:
            self._pending += 1
        self._queue.append((rows, None))
        self._wake.set()

    async def put_durable(self, rows: Sequence[Row]) -> None:
        """Queue rows and wait until they are committed."""
        self._check()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._idle:
            self._pending += 1
        self._queue.append((rows, fut))
        self._wake.set()
        await fut

    async def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        await self.put_durable(())

    def flush_blocking(self, timeout: float | None = None) -> None:
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
        while True:
            self._wake.wait()
            if not self._closing:
                time.sleep(self._group_seconds)  # let a group gather
            self._wake.clear()
            batch: list[tuple[Sequence[Row], asyncio.Future[None] | None]] = []
            n = 0
            while self._queue and n < self._max_rows:
                item = self._queue.popleft()
                batch.append(item)
                n += len(item[0])
            if self._queue:
                self._wake.set()
            if batch:
                self._commit(batch)
            if self._closing and not self._queue:
                return

    def _commit(self, batch: list[tuple[Sequence[Row], asyncio.Future[None] | None]]) -> None:
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
                self._conn.execute("BEGIN TRANSACTION")
                for table, values in by_table.items():
                    self._insert(table, values)
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

    def _insert(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        columns = TABLE_COLUMNS[table]
        arrays = {name: [r[i] for r in rows] for i, name in enumerate(columns)}
        data = pa.table(arrays)  # noqa: F841  (read by DuckDB's replacement scan)
        self._conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT * FROM data"
        )


def _resolve(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for fut in futures:
        if fut.done():
            continue
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(StoreError(f"writing to the store failed: {error}"))
