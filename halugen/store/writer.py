"""The writer: two threads that append rows to the store in groups.

Callers hand over complete groups of rows; each group lands in one transaction, so rows
that must appear together (a sample and its seed outcome) never half-land. Two lanes, each
with its own thread and DuckDB connection, so neither waits behind the other:

- durable (``put_durable``: reservations, answers): the caller waits for the commit,
  because a request may only leave once its reservation is durable and a call is done only
  once its answer is. Commits are grouped by the writers waiting, not by a clock: the lane
  sleeps while nobody waits; when someone does, it commits as soon as every writer that
  could come is waiting (``expected_writers``: the calls between their rate-limit slot
  and their answer, unless a call waiting only for its paced moment is about to join:
  ``more_coming``), or ``GROUP_WRITERS`` wait, or the first has waited ``durable_seconds``. A
  commit costs the same for one row as for a hundred (a few milliseconds of CPU, mostly
  fixed), so a paced run of 20 calls/s groups several calls' rows in one transaction
  instead of paying one per row, and a fast run commits big groups.
- bulk (``put``, everything else): big groups committed about every half second, because a
  commit's cost is mostly fixed (statement setup, the WAL write and sync). A crash can lose
  the last moments of these rows; the ledger is built so that this only ever counts more
  money as spent, never less.

``created_at`` is filled in at commit time (one clock read per group, not per row).

The call runner's reservations and answers take a third way (``put_journaled``): the journal
(journal.py), an append-only file made durable by grouped ``fdatasync`` and fed to DuckDB in
bulk a moment later, so no request waits for a DuckDB commit or checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import duckdb

from .failures import resolve_writes, write_error
from .inserting import RowViews, insert_rows
from .journal import Journal
from .rows import CallLogRow, Record, Statement, table_of

__all__ = ["StoreWriter", "WriterRow"]

# What a caller hands the writer: a record (rows.py) or a Statement.
WriterRow = Record | Statement
_Item = tuple[Sequence[WriterRow], asyncio.Future[None] | None]

# the durable lane commits at once when this many writers wait (see the module docstring)
GROUP_WRITERS = 64


class _Lane:
    """One queue, one thread, one connection; commits what queued every ``interval``."""

    def __init__(
        self,
        name: str,
        conn: duckdb.DuckDBPyConnection,
        interval: float,
        max_rows: int,
        owner: StoreWriter,
        *,
        grouped: bool = False,
    ) -> None:
        self._conn = conn
        self._views: RowViews = {}  # this lane's column buffers (inserting.py)
        self._interval = interval
        self._max_rows = max_rows
        self._owner = owner
        # grouped (the durable lane): asleep while nothing waits, then a group per waiters
        self.grouped = grouped
        self.queue: deque[_Item] = deque()
        self.rows = 0
        self.flush_requested = False
        self.wake = threading.Event()
        self.commits = 0
        self.rows_written = 0
        self._thread = threading.Thread(target=self._run, name=f"halugen-store-{name}", daemon=True)
        self._thread.start()

    def join(self) -> None:
        self.wake.set()
        self._thread.join()

    def group_complete(self) -> bool:
        """Whether waiting longer could add nobody: every writer that could come waits, or
        a group's worth does. Asked on the event loop (each put) and on the lane's thread."""
        waiting = len(self.queue)
        if waiting >= GROUP_WRITERS or self.flush_requested:
            return True
        owner = self._owner
        expected = owner.expected_writers
        if expected is None or waiting < expected():
            return False
        return owner.more_coming is None or not owner.more_coming()

    def _gather(self) -> None:
        """Grouped lane: sleep until a writer waits, then until the group is complete or
        its first writer has waited the interval."""
        owner = self._owner
        while not self.queue and not owner.closing:
            self.wake.wait()
            self.wake.clear()
        deadline = time.monotonic() + self._interval
        while not owner.closing and not self.group_complete():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.wake.wait(left)
            self.wake.clear()

    def _run(self) -> None:
        owner = self._owner
        while True:
            if self.grouped:
                self._gather()
            else:
                # sleep out the interval unless asked to hurry (flush, close, a full queue);
                # once closing, never: the wake that asked for the last commit is used up
                if not owner.closing:
                    self.wake.wait(self._interval)
                self.wake.clear()
            batch: list[_Item] = []
            n = 0
            while self.queue and n < self._max_rows:
                item = self.queue.popleft()
                n += len(item[0])
                batch.append(item)
            self.rows = max(0, self.rows - n)
            if self.queue:
                self.wake.set()
            self.flush_requested = False
            if batch:
                self._commit(batch)
            elif owner.closing and not self.queue:
                return
            if not self.wake.is_set() and not owner.closing:
                time.sleep(0)  # give the event loop the GIL back between groups

    def _commit(self, batch: list[_Item]) -> None:
        owner = self._owner
        error: BaseException | None = owner.error
        if error is None:
            by_table: dict[str, list[tuple[Any, ...]]] = {}
            statements: list[tuple[str, Any]] = []
            for rows, _ in batch:
                for row in rows:
                    table, values = _table_and_values(row)
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
                owner.error = exc
        futures = [f for _, f in batch if f is not None]
        if futures:
            loop = futures[0].get_loop()
            # a closed loop means nobody is waiting any more
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(resolve_writes, futures, error, owner.path)
        owner.done(len(batch))

    def _insert(self, table: str, rows: list[tuple[Any, ...]], stamp: datetime) -> None:
        insert_rows(self._conn, table, rows, stamp, views=self._views)


class StoreWriter:
    def __init__(
        self,
        durable_conn: duckdb.DuckDBPyConnection,
        bulk_conn: duckdb.DuckDBPyConnection,
        *,
        durable_seconds: float = 0.05,
        bulk_seconds: float = 0.5,
        max_rows: int = 50_000,
        path: object = "the store",
        journal: Callable[[], Journal] | None = None,
    ) -> None:
        self.path = path
        # opens the journal on first use (a command that never calls leaves no journal);
        # None: ``put_journaled`` takes the durable lane instead
        self._open_journal = journal
        self.journal: Journal | None = None
        self.error: BaseException | None = None
        self.closing = False
        # how many durable writers could be waiting now (the run's calls that hold a
        # rate-limit slot or are at the provider, set by the session): when all of them
        # wait, nobody else can join the group, so it is committed at once. None: not
        # known, wait out the interval.
        self.expected_writers: Callable[[], int] | None = None
        # whether another writer is about to come although all expected ones wait (a call
        # waiting only for its paced moment): then the group waits out the interval
        self.more_coming: Callable[[], bool] | None = None
        self._idle = threading.Condition()
        self._pending = 0
        self._durable = _Lane(
            "durable", durable_conn, durable_seconds, max_rows, self, grouped=True
        )
        self._bulk = _Lane("bulk", bulk_conn, bulk_seconds, max_rows, self)

    @property
    def commits(self) -> int:
        return self._durable.commits + self._bulk.commits

    @property
    def rows_written(self) -> int:
        return self._durable.rows_written + self._bulk.rows_written

    # -- producer side (event loop thread) ---------------------------------------------
    def put(self, rows: Sequence[WriterRow]) -> None:
        """Queue rows to be committed together, soon."""
        self._check()
        self._enqueue(self._bulk, rows, None)

    async def put_durable(self, rows: Sequence[WriterRow]) -> None:
        """Queue rows and wait until they are committed."""
        self._check()
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(self._durable, rows, fut)
        await fut

    async def put_journaled(self, rows: Sequence[WriterRow]) -> None:
        """Make rows durable in the journal (DuckDB gets them a moment later); wait for it."""
        journal = self._journal()
        if journal is None:
            await self.put_durable(rows)
            return
        self._check()
        await journal.append(rows)

    def put_journaled_nowait(self, rows: Sequence[WriterRow]) -> None:
        """Hand rows to the journal without waiting (for code that is unwinding)."""
        journal = self._journal()
        if journal is None:
            self.put(rows)
            return
        self._check()
        journal.append_nowait(rows)

    def journaled_answer(self, key: str) -> CallLogRow | None:
        """The answer of ``key`` if the journal holds it and DuckDB may not have it yet."""
        return self.journal.answer(key) if self.journal is not None else None

    def _journal(self) -> Journal | None:
        if self.journal is None and self._open_journal is not None and not self.closing:
            try:
                self.journal = self._open_journal()
            except OSError as exc:  # a read-only directory, a full disk
                raise write_error(self.path, exc) from exc
        return self.journal

    def _enqueue(
        self, lane: _Lane, rows: Sequence[WriterRow], fut: asyncio.Future[None] | None
    ) -> None:
        for row in rows:  # our own code's mistake, told where it is made, not in a lane
            if table_of(row) is None and not isinstance(row, Statement):
                raise TypeError(f"the store writer takes records (rows.py) or a Statement: {row!r}")
        with self._idle:
            self._pending += 1
        lane.queue.append((rows, fut))
        lane.rows += len(rows)
        if lane.rows >= 5000:
            lane.wake.set()
        elif lane.grouped and (len(lane.queue) == 1 or lane.group_complete()):
            lane.wake.set()  # the first writer starts the lane's wait; a full group ends it

    async def flush(self) -> None:
        """Wait until everything queued so far is committed (both lanes and the journal)."""
        if self.journal is not None:
            await self.journal.flush()
        loop = asyncio.get_running_loop()
        futs = []
        for lane in (self._bulk, self._durable):
            fut: asyncio.Future[None] = loop.create_future()
            lane.flush_requested = True
            self._enqueue(lane, (), fut)
            lane.wake.set()
            futs.append(fut)
        await asyncio.gather(*futs)
        self._check()

    def flush_blocking(self, timeout: float | None = None) -> None:
        if self.journal is not None:
            self.journal.flush_blocking(timeout)
        for lane in (self._bulk, self._durable):
            lane.flush_requested = True
            lane.wake.set()
        with self._idle:
            self._idle.wait_for(lambda: self._pending == 0 or self.error is not None, timeout)
        self._check()

    def close(self) -> None:
        """Commit what is queued, then stop the threads."""
        self.closing = True
        try:
            if self.journal is not None:
                self.journal.close()
        finally:
            self._durable.join()
            self._bulk.join()
        self._check()

    def done(self, items: int) -> None:
        with self._idle:
            self._pending -= items
            self._idle.notify_all()

    def _check(self) -> None:
        if self.error is not None:
            raise write_error(self.path, self.error) from self.error


def _table_and_values(row: WriterRow) -> tuple[str, Any]:
    table = table_of(row)
    if table is not None:  # a record
        return table, row
    return "sql", row  # a Statement: _enqueue let nothing else in
