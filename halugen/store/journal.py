"""The journal: the durable lane of the call runner, an append-only file beside the store.

A request may leave only once its reservation is durable, and a call is done only once its
answer is. Committing those rows to DuckDB costs a few milliseconds of CPU per commit
(bench/store_floor.py) and stalls for seconds while DuckDB checkpoints; appending them to a
file and syncing it costs microseconds of CPU, and one ``fdatasync`` makes a whole group
durable. So those rows are appended here (``<store>.journal``), counted durable when their
group's sync returns, and fed to DuckDB in bulk by a background thread a moment later:
DuckDB stays the one place users query, at most ``FEED_SECONDS`` (plus one commit) behind.

File format: records, each ``length`` (u32, little-endian) ``crc32`` (u32) ``payload``
(orjson). The first record is the header, ``{"journal": <id>, "version": 1}``; every other
is one group of rows handed over together, ``{"t": <unix microseconds>, "rows": [...]}``,
each row ``[table, *values]`` (``["sql", text, params]`` for a Statement). The stamp is the
moment the group was appended: the rows' ``created_at``, the same whether they are fed at
once or replayed after a crash.

Feeding records how far it got: ``journal_fed`` (migration 0024) holds the journal's id and
the byte position after the last fed group, updated in the same transaction as the rows it
fed, so feeding is idempotent: replaying a journal twice adds nothing twice.

Opening a store for writing replays what a journal left unfed (``replay``: a crash between
a sync and its feed) before anything reads the store. A record cut short or failing its CRC
ends the journal there (a crash in the middle of an append: that group was never durable, so
nobody counted on it): it is dropped, and reported once. Once everything is fed the file is
removed; a journal exists only while a store is open for writing, or after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
import threading
import time
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson

from .failures import resolve_writes, write_error
from .inserting import RowViews, insert_rows
from .rows import RECORDS, CallLogRow, Record, Statement, table_of

__all__ = [
    "FEED_SECONDS",
    "Journal",
    "JournalScan",
    "journal_path",
    "replay",
    "scan",
]

# The feeder commits what the journal synced about this often. A feed costs a few ms of
# CPU whatever its size (an INSERT per table, the fed position, the commit: ~3 ms each
# statement on this machine, against ~8 us a row): at 0.25 s that was 3-4% of a core at
# full speed; at 0.5 s, as often as the bulk lane commits, half of it, and DuckDB stays
# under a second behind the journal.
FEED_SECONDS = 0.5
_FRAME = struct.Struct("<II")  # payload length, CRC32 of the payload
_VERSION = 1
_MAX_RECORD = 256 * 1024 * 1024  # a length above this is garbage, not a record
_RECORD_OF: dict[str, Any] = {table: record for record, table in RECORDS.items()}

log = logging.getLogger(__name__)

# the fed position: one row, replaced in the transaction that feeds
_FED = "SELECT journal_id, position FROM journal_fed"
_CLEAR_FED = "DELETE FROM journal_fed"
_SET_FED = "INSERT INTO journal_fed (journal_id, position) VALUES (?, ?)"


def journal_path(store: Path) -> Path:
    """Where the journal of the store at ``store`` lives."""
    return store.with_name(store.name + ".journal")


# -- records ------------------------------------------------------------------------------------


def _default(value: object) -> object:
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    raise TypeError(f"the journal cannot hold {type(value).__name__} values")


def _frame(payload: bytes) -> bytes:
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def encode_group(rows: Sequence[Record | Statement], stamp_us: int) -> bytes:
    """One framed record holding ``rows``, appended at ``stamp_us``."""
    items: list[list[Any]] = []
    for row in rows:
        table = table_of(row)
        if table is not None:
            items.append([table, *row])
        elif isinstance(row, Statement):
            items.append(["sql", row.sql, list(row.params)])
        else:
            raise TypeError(f"the journal takes records (rows.py) or a Statement: {row!r}")
    payload = orjson.dumps(
        {"t": stamp_us, "rows": items}, default=_default, option=orjson.OPT_PASSTHROUGH_DATETIME
    )
    return _frame(payload)


def _value(value: Any) -> Any:
    if isinstance(value, dict) and "$dt" in value:
        return datetime.fromisoformat(value["$dt"])
    return value


def decode_group(payload: bytes) -> tuple[list[Record | Statement], int]:
    """The rows of a group record and its stamp (unix microseconds)."""
    data = orjson.loads(payload)
    rows: list[Record | Statement] = []
    for item in data["rows"]:
        table = item[0]
        if table == "sql":
            rows.append(Statement(item[1], [_value(v) for v in item[2]]))
        else:
            rows.append(_RECORD_OF[table](*(_value(v) for v in item[1:])))
    return rows, int(data["t"])


@dataclass(frozen=True, slots=True)
class JournalScan:
    """What a journal file holds: its id, its intact groups, and where it is cut."""

    journal_id: str | None  # None: no intact header (an empty or unreadable file)
    groups: list[tuple[int, bytes]]  # (position after the record, payload), in order
    header_end: int  # position after the header
    end: int  # position after the last intact record
    size: int  # the file's size: above ``end`` when a torn or corrupt tail follows


def scan(path: Path) -> JournalScan:
    """Read every intact record of the journal at ``path``, up to the first that is not."""
    data = path.read_bytes()
    size = len(data)
    offset = 0
    records: list[tuple[int, bytes]] = []
    while offset + _FRAME.size <= size:
        length, crc = _FRAME.unpack_from(data, offset)
        start = offset + _FRAME.size
        if length > _MAX_RECORD or start + length > size:
            break
        payload = data[start : start + length]
        if zlib.crc32(payload) != crc:
            break
        offset = start + length
        records.append((offset, payload))
    journal_id: str | None = None
    header_end = 0
    if records:
        try:
            header = orjson.loads(records[0][1])
            journal_id = str(header["journal"])
            header_end = records[0][0]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            records = []
    end = records[-1][0] if records else 0
    return JournalScan(journal_id, records[1:], header_end, end, size)


# -- feeding DuckDB -----------------------------------------------------------------------------


def _feed(
    conn: duckdb.DuckDBPyConnection,
    groups: Sequence[tuple[Sequence[Record | Statement], int]],
    journal_id: str,
    position: int,
    views: RowViews | None = None,
) -> int:
    """Commit ``groups`` (rows, stamp) and the fed position in one transaction; rows fed."""
    by_table: dict[str, tuple[list[tuple[Any, ...]], list[datetime]]] = {}
    statements: list[Statement] = []
    for rows, stamp_us in groups:
        stamp = datetime.fromtimestamp(stamp_us / 1e6, UTC).replace(tzinfo=None)
        for row in rows:
            table = table_of(row)
            if table is None:
                assert isinstance(row, Statement)
                statements.append(row)
                continue
            values, stamps = by_table.setdefault(table, ([], []))
            values.append(row)
            stamps.append(stamp)
    conn.execute("BEGIN TRANSACTION")
    try:
        for table, (values, stamps) in by_table.items():
            insert_rows(conn, table, values, stamps, views=views)
        for sql, params in statements:
            conn.execute(sql, params)
        conn.execute(_CLEAR_FED)
        conn.execute(_SET_FED, [journal_id, position])
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            conn.execute("ROLLBACK")
        raise
    return sum(len(v) for v, _ in by_table.values())


@dataclass(frozen=True, slots=True)
class Replayed:
    groups: int  # groups fed now (unfed when the journal was left)
    dropped_bytes: int  # a torn or corrupt tail, dropped


def replay(conn: duckdb.DuckDBPyConnection, store: Path) -> Replayed:
    """Feed what the store's journal holds beyond the fed position, then remove the journal.

    Called when a store is opened for writing, before anything reads it.
    """
    path = journal_path(store)
    if not path.exists():
        return Replayed(0, 0)
    found = scan(path)
    dropped = found.size - found.end
    if dropped:
        log.warning(
            "the journal of %s ended in %d byte(s) of an unfinished or damaged record "
            "(a crash while appending): dropped; nothing in it had been counted durable",
            store,
            dropped,
        )
    fed = 0
    if found.journal_id is not None and found.groups:
        row = conn.execute(_FED).fetchone()
        start = found.header_end
        if row is not None and row[0] == found.journal_id:
            start = int(row[1])
        todo = [(end, payload) for end, payload in found.groups if end > start]
        if todo:
            groups = [decode_group(payload) for _, payload in todo]
            _feed(conn, groups, found.journal_id, todo[-1][0])
            fed = len(todo)
    path.unlink()
    _sync_dir(path.parent)
    return Replayed(fed, dropped)


def _sync_dir(directory: Path) -> None:
    """Make a file's creation or removal durable (its directory entry)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- the running journal ------------------------------------------------------------------------


class Journal:
    """Appends groups, syncs them in batches (one thread), feeds them to DuckDB (another).

    ``append`` is called on the event loop and returns once the group is durable. Every
    append waiting while a sync runs goes into the next one, so a busy run pays one
    ``fdatasync`` for many groups and a quiet one does not wait for company.
    """

    def __init__(
        self,
        store: Path,
        feed_conn: duckdb.DuckDBPyConnection,
        *,
        feed_seconds: float = FEED_SECONDS,
        path_for_errors: object = None,
    ) -> None:
        self.path = journal_path(store)
        self.journal_id = uuid.uuid4().hex
        self.error: BaseException | None = None
        self.syncs = 0  # fdatasync calls
        self.feeds = 0  # DuckDB commits
        self.rows_fed = 0
        self._store_name = path_for_errors if path_for_errors is not None else store
        self._conn = feed_conn
        self._views: RowViews = {}
        self._feed_seconds = feed_seconds
        self._closing = False
        # appended, not yet synced: (framed bytes, rows, stamp, future or None)
        self._pending: list[tuple[bytes, Sequence[Record | Statement], int, Any]] = []
        self._wake_sync = threading.Condition()
        # synced, not yet fed: (rows, stamp, position after the group)
        self._unfed: list[tuple[Sequence[Record | Statement], int, int]] = []
        self._wake_feed = threading.Condition()
        self._hurry = False  # someone waits for the feed (``flush_blocking``): feed each sync
        self._appended = 0  # groups handed over
        self._fed_groups = 0
        # answers synced but maybe not fed yet, by request key: a call that finds its key
        # answered must find the answer although DuckDB may not have it yet
        self._answers: dict[str, CallLogRow] = {}
        self._fd = self._create()
        self._position = os.fstat(self._fd).st_size
        self._syncer = threading.Thread(target=self._sync_loop, name="halugen-journal", daemon=True)
        self._feeder = threading.Thread(target=self._feed_loop, name="halugen-feed", daemon=True)
        self._syncer.start()
        self._feeder.start()

    def _create(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        header = _frame(orjson.dumps({"journal": self.journal_id, "version": _VERSION}))
        os.write(fd, header)
        os.fdatasync(fd)
        _sync_dir(self.path.parent)
        return fd

    # -- the event loop's side ------------------------------------------------------------------

    async def append(self, rows: Sequence[Record | Statement]) -> None:
        """Append ``rows`` as one group; returns once they are durable."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._hand_over(rows, fut)
        await fut

    def append_nowait(self, rows: Sequence[Record | Statement]) -> None:
        """Append ``rows`` as one group without waiting for the sync (unwinding code)."""
        self._hand_over(rows, None)

    def _hand_over(self, rows: Sequence[Record | Statement], fut: Any) -> None:
        self._check()
        stamp = time.time_ns() // 1000
        record = encode_group(rows, stamp)
        for row in rows:
            if type(row) is CallLogRow and row.status == "ok":
                self._answers[row.key] = row
        with self._wake_sync:
            self._pending.append((record, rows, stamp, fut))
            self._appended += 1
            if len(self._pending) == 1:
                self._wake_sync.notify()

    def answer(self, key: str) -> CallLogRow | None:
        """The answer of ``key`` if it is in the journal and maybe not fed yet."""
        return self._answers.get(key)

    async def flush(self) -> None:
        """Wait until everything appended so far is synced and fed."""
        await asyncio.to_thread(self.flush_blocking)

    def flush_blocking(self, timeout: float | None = None) -> None:
        target = self._appended
        with self._wake_feed:
            self._hurry = True
            self._wake_feed.notify_all()
            self._wake_feed.wait_for(
                lambda: self._fed_groups >= target or self.error is not None, timeout
            )
            self._hurry = False
        self._check()

    @property
    def behind(self) -> int:
        """Groups appended but not fed to DuckDB yet."""
        return self._appended - self._fed_groups

    def close(self) -> None:
        """Sync and feed everything, stop the threads, remove the file (all of it is fed)."""
        self._closing = True
        with self._wake_sync:
            self._wake_sync.notify()
        self._syncer.join()
        with self._wake_feed:
            self._wake_feed.notify()
        self._feeder.join()
        os.close(self._fd)
        if self.error is None and self._fed_groups >= self._appended:
            with contextlib.suppress(OSError):
                self.path.unlink()
                _sync_dir(self.path.parent)
        self._check()

    def _check(self) -> None:
        if self.error is not None:
            raise write_error(self._store_name, self.error) from self.error

    # -- the sync thread ------------------------------------------------------------------------

    def _sync_loop(self) -> None:
        while True:
            with self._wake_sync:
                while not self._pending and not self._closing:
                    self._wake_sync.wait()
                batch, self._pending = self._pending, []
            if not batch:
                return  # closing, nothing left
            error = self.error
            if error is None:
                try:
                    data = b"".join(item[0] for item in batch)
                    view = memoryview(data)
                    while view:
                        view = view[os.write(self._fd, view) :]
                    os.fdatasync(self._fd)
                    self.syncs += 1
                except OSError as exc:  # disk full, I/O error: nothing more is durable
                    error = self.error = exc
            if error is None:
                with self._wake_feed:
                    position = self._position
                    for record, rows, stamp, _ in batch:
                        position += len(record)
                        self._unfed.append((rows, stamp, position))
                    self._position = position
                    if self._hurry:
                        self._wake_feed.notify_all()
            futures = [item[3] for item in batch if item[3] is not None]
            if futures:
                with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                    futures[0].get_loop().call_soon_threadsafe(
                        resolve_writes, futures, error, self._store_name
                    )
            if error is not None:
                with self._wake_feed:
                    self._wake_feed.notify_all()

    # -- the feed thread ------------------------------------------------------------------------

    def _feed_loop(self) -> None:
        while True:
            with self._wake_feed:
                if not self._closing and not (self._hurry and self._unfed):
                    self._wake_feed.wait(self._feed_seconds)
                batch, self._unfed = self._unfed, []
                done = self._closing and not self._syncer.is_alive()
            if batch and self.error is None:
                try:
                    self.rows_fed += _feed(
                        self._conn,
                        [(rows, stamp) for rows, stamp, _ in batch],
                        self.journal_id,
                        batch[-1][2],
                        self._views,
                    )
                    self.feeds += 1
                except BaseException as exc:  # disk full, a damaged file: fatal for the run
                    self.error = exc
                for rows, _, _ in batch:
                    for row in rows:
                        if type(row) is CallLogRow and self._answers.get(row.key) is row:
                            del self._answers[row.key]
            with self._wake_feed:
                self._fed_groups += len(batch)
                self._wake_feed.notify_all()
            if done and not batch:
                return
