"""What keeps other processes' queries from hurting the run that holds the store.

DuckDB's memory limit belongs to the database, not to a connection, and a sort or a window
takes all the memory it is allowed (``operator_memory_limit``, the per-connection cap DuckDB
2 offers, is not honoured by window operators: measured). So a query on the holder's
database shared the writer's memory, and a 30-million-row window sort pinned all of it: the
query spilled and finished, the writer failed to pin a block and the run died.

Here the database's limit is the writer's share plus the queries' share (db.py), and a
watcher keeps the queries inside theirs. While a query runs it looks, several times a
second, at what DuckDB reports it holds (``duckdb_memory()``): memory outside the store's
own cached blocks (evictable at any time, so never a threat) and spilled temporary data. A
query past its share is interrupted through its connection, and says why; so is one past
its time limit, and one whose client has gone away (nobody will read its answer). When the
holder closes the store it interrupts every query still running and says so in one line, so
a query never delays the end of a run.

Interrupting is DuckDB's ``interrupt()`` on the query's own connection: the query stops at
its next chunk of rows and raises there; nothing else in the database notices.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import duckdb

__all__ = ["FINISHING", "QueryGuard", "QueryLimits", "RunningQuery"]

_log = logging.getLogger(__name__)

# the store's own blocks, cached: DuckDB drops them whenever it needs the room
_CACHE_TAGS = ("BASE_TABLE", "METADATA", "EXTERNAL_FILE_CACHE", "OBJECT_CACHE")
_USAGE_SQL = (
    "SELECT coalesce(sum(memory_usage_bytes) FILTER (WHERE tag NOT IN "
    f"({', '.join(repr(t) for t in _CACHE_TAGS)})), 0)::BIGINT, "
    "coalesce(sum(temporary_storage_bytes), 0)::BIGINT FROM duckdb_memory()"
)
# why queries are interrupted when the holder closes the store (their clients then read the
# file itself, once it is free)
FINISHING = "the process holding the store is finishing"
_LOOK_EVERY = 0.02  # seconds between two looks while a query runs (a sort fills ~10 MB/s here)


@dataclass(frozen=True)
class QueryLimits:
    """What other processes' queries may use of the holder, all of them together."""

    memory_bytes: int  # memory outside the store's cached blocks
    temp_bytes: int  # data spilled to ``<store>.tmp``
    timeout: float = 60.0  # seconds, when the client names no time limit of its own


@dataclass
class RunningQuery:
    cursor: duckdb.DuckDBPyConnection
    client: socket.socket | None
    deadline: float
    timeout: float
    stopped: str | None = None  # why it was interrupted, in the user's words
    client_gone: bool = False
    # its rows are being written to the client: only then can a client that stopped
    # reading hold the query's thread (an interrupt does not reach a blocked write)
    sending: bool = False
    _stop_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def stop(self, reason: str) -> bool:
        """Interrupt the query (once); False when it had been stopped already."""
        with self._stop_lock:
            if self.stopped is not None:
                return False
            self.stopped = reason
        with contextlib.suppress(duckdb.Error):
            self.cursor.interrupt()
        return True


class QueryGuard:
    """Watches the queries the holder runs for others; see the module docstring."""

    def __init__(
        self,
        monitor: duckdb.DuckDBPyConnection,
        limits: QueryLimits,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self._monitor = monitor  # a connection of its own: reads duckdb_memory() only
        self._clock = clock
        self._running: list[RunningQuery] = []
        self._lock = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watch(
        self,
        cursor: duckdb.DuckDBPyConnection,
        client: socket.socket | None,
        timeout: float | None = None,
    ) -> Iterator[RunningQuery]:
        """Watch the query about to run on ``cursor`` for ``client`` until the block ends."""
        seconds = self.limits.timeout if timeout is None else timeout
        query = RunningQuery(cursor, client, self._clock() + seconds, seconds)
        with self._lock:
            if self._closed:
                query.stop("the process holding the store is finishing")
            self._running.append(query)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._watch_loop, name="halugen-live-guard", daemon=True
                )
                self._thread.start()
            self._lock.notify_all()
        try:
            yield query
        finally:
            with self._lock:
                self._running.remove(query)
                self._lock.notify_all()

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def wait_running(self, n: int, timeout: float | None = None) -> bool:
        """Wait until exactly ``n`` queries run (lets a caller act on cue, not on a clock)."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._running) == n, timeout)

    def interrupt_all(self, reason: str) -> int:
        """Interrupt every running query; how many were running."""
        with self._lock:
            queries = list(self._running)
        for query in queries:
            query.stop(reason)
        return len(queries)

    def close(self) -> int:
        """Interrupt what still runs, say so, and stop watching; how many were interrupted.
        Waits for nothing: the queries stop at their next chunk while the holder goes on
        closing (``wait_ended``, just before its connection closes, is the only wait)."""
        with self._lock:
            if self._closed:
                return 0
            self._closed = True
            started = self._thread is not None
            self._lock.notify_all()
        n = self.interrupt_all(FINISHING)
        if n:
            _log.warning(
                "interrupted %d live quer%s from other processes: this process is finishing",
                n,
                "y" if n == 1 else "ies",
            )
        if not started:  # else the watcher closes its connection as it leaves
            with contextlib.suppress(duckdb.Error):
                self._monitor.close()
        return n

    def wait_ended(self, timeout: float) -> bool:
        """After ``close``: wait at most ``timeout`` seconds for the interrupted queries and
        the watcher to end (the store's connection cannot close under a running cursor);
        False when one has not (DuckDB did not give its thread back)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if not self._lock.wait_for(lambda: not self._running, timeout / 2):
                # one stuck sending to a client that stopped reading: cut the client off.
                # Only a sending one: a query still at work in DuckDB (a loaded machine
                # reaches its next chunk late) keeps its client, who is then told "closing"
                for query in self._running:
                    if query.sending and query.client is not None:
                        with contextlib.suppress(OSError):
                            query.client.shutdown(socket.SHUT_RDWR)
                if not self._lock.wait_for(
                    lambda: not self._running, max(0.0, deadline - time.monotonic())
                ):
                    return False
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))
            return not self._thread.is_alive()
        return True

    # -- the watcher -------------------------------------------------------------------------
    def check(self) -> None:
        """One look at every running query: its client, its time, the memory they hold."""
        with self._lock:
            queries = list(self._running)
        if not queries:
            return
        now = self._clock()
        for query in queries:
            if query.stopped is not None:
                # again: an interrupt that came just before DuckDB began the query is lost
                with contextlib.suppress(duckdb.Error):
                    query.cursor.interrupt()
            elif query.client is not None and _client_gone(query.client):
                query.client_gone = True
                query.stop("its client went away")
            elif now >= query.deadline:
                query.stop(
                    f"it ran past its time limit of {query.timeout:g} s (--query-timeout raises it)"
                )
        try:
            memory, temp = self._usage()
        except duckdb.Error:
            return
        over = None
        if memory > self.limits.memory_bytes:
            over = (
                f"it needed more memory than queries get beside the run "
                f"({_mb(self.limits.memory_bytes)}; {_mb(memory)} in use)"
            )
        elif temp > self.limits.temp_bytes:
            over = (
                f"it spilled more to disk than queries may beside the run "
                f"({_mb(self.limits.temp_bytes)}; {_mb(temp)} spilled)"
            )
        if over is not None:
            for query in queries:  # which one holds it DuckDB does not say: all of them
                query.stop(over)

    def _usage(self) -> tuple[int, int]:
        # fetchall, not fetchone: DuckDB keeps a ``duckdb_memory()`` read's autocommit
        # transaction open until its result is consumed, and an open transaction makes it
        # refuse every checkpoint; the WAL then grew for the rest of the run and the close's
        # checkpoint took seconds (measured: 56 MB, 3-5 s after the last seed)
        rows = self._monitor.execute(_USAGE_SQL).fetchall()
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def _watch_loop(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._running or self._closed)
                if self._closed and not self._running:
                    break
            self.check()
            with self._lock:
                self._lock.wait(_LOOK_EVERY)
        with contextlib.suppress(duckdb.Error):
            self._monitor.close()


def _client_gone(client: socket.socket) -> bool:
    """Has the client closed its end? It sends its request and then only reads, so any
    readable event on its socket is the end of it (or a protocol breach: also the end)."""
    try:
        readable, _, _ = select.select([client], [], [], 0)
        if not readable:
            return False
        return client.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"
