"""Read-only SQL on a store while a halugen process holds it.

DuckDB lets one process open a file for writing and no other process open it at all
meanwhile. So the process that holds the store answers read-only queries for the others:
a small server thread listens on a Unix socket that only the same user can reach (the socket
is mode 0600 inside a 0700 directory of that user's), runs each query on its own DuckDB
cursor, inside a read-only transaction, and streams the result back as Arrow IPC.
``halugen sql``, ``status``, ``export`` and :func:`connect_live` use it whenever the file is
locked, so they see what the holder has committed (its writer commits at least every half
second).

    client                                   holder
      {"sql": ..., "params": [...]}\\n  ──►   one statement, SELECT or EXPLAIN only
                                      ◄──   {"ok": true}\\n + Arrow IPC stream
                                      ◄──   {"ok": false, "error": "..."}\\n

Why a socket rather than a snapshot file: a copy of the whole store every second costs as
much as the store is large; a query costs what it reads, on a thread of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import orjson

from ..errors import StoreError, UsageError

__all__ = ["LiveConnection", "LiveReadServer", "connect_live", "socket_path"]

_ALLOWED = ("SELECT", "EXPLAIN")
_MAX_QUERIES_AT_ONCE = 2  # queries share the holder's cores with the run: keep them few
_BATCH_ROWS = 10_000


def socket_path(db: str | os.PathLike[str]) -> Path:
    """Where the holder of ``db`` listens: a short path (sockets allow ~100 bytes)."""
    real = os.path.realpath(os.fspath(db))
    digest = hashlib.sha256(real.encode()).hexdigest()[:20]
    return _socket_dir() / f"{digest}.sock"


def _socket_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"halugen-{os.getuid()}"


def _private_dir(path: Path) -> bool:
    """Create ``path`` as 0700, or check that an existing one is ours, private, not a link."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == os.getuid()
        and stat.S_IMODE(info.st_mode) & 0o077 == 0
    )


class _Refused(Exception):
    pass


def check_read_only(conn: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse anything but one SELECT/EXPLAIN statement (the transaction is read-only too)."""
    statements = conn.extract_statements(sql)  # a duckdb.Error when it does not parse
    if len(statements) != 1:
        raise _Refused("give one statement at a time while a halugen process holds the store")
    kind = statements[0].type.name
    if kind not in _ALLOWED:
        raise _Refused(
            f"only read-only statements (SELECT, EXPLAIN) run while a halugen process holds "
            f"the store; this is {kind}: wait for the run to end to change the store"
        )


class LiveReadServer:
    """Answers read-only queries on ``conn``'s database over a private Unix socket."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, db: Path) -> None:
        self.path = socket_path(db)
        self._cursor = conn.cursor()  # created here, used only by the server's threads
        self._lock = threading.Lock()  # one query on the cursor at a time
        self._slots = threading.BoundedSemaphore(_MAX_QUERIES_AT_ONCE)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self.queries = 0

    def start(self) -> bool:
        """Listen; False (and no server) when the socket cannot be made safely here."""
        if not hasattr(socket, "AF_UNIX") or not _private_dir(self.path.parent):
            return False
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a socket left by a holder that was killed
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            old = os.umask(0o177)
            try:
                sock.bind(str(self.path))
            finally:
                os.umask(old)
            os.chmod(self.path, 0o600)
            sock.listen(16)
        except OSError:
            sock.close()
            return False
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="halugen-live-sql", daemon=True)
        self._thread.start()
        return True

    def close(self) -> None:
        self._closing = True
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        if self._thread is not None:
            self._thread.join(5)
        with self._lock, contextlib.suppress(duckdb.Error):
            self._cursor.close()

    def _serve(self) -> None:
        while not self._closing and self._sock is not None:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(client,), daemon=True).start()

    def _answer(self, client: socket.socket) -> None:
        # The run comes first: on Linux a thread has its own nice value, so queries get the
        # CPU the run leaves over (DuckDB and Arrow release the GIL while they work).
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        with contextlib.suppress(OSError):  # a client that went away is no concern of ours
            self._answer_on(client)

    def _answer_on(self, client: socket.socket) -> None:
        with client, client.makefile("rwb") as stream:
            try:
                request = orjson.loads(stream.readline(1 << 24))
                sql, params = request["sql"], request.get("params") or []
                if not isinstance(sql, str) or not isinstance(params, list):
                    raise ValueError("sql must be text and params a list")
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                _reply_error(stream, f"bad request: {exc}", "refused")
                return
            with self._slots:
                self._run(stream, sql, params)

    def _run(self, stream: Any, sql: str, params: list[Any]) -> None:
        with self._lock:
            cur = self._cursor
            try:
                check_read_only(cur, sql)
                cur.execute("BEGIN TRANSACTION READ ONLY")
                try:
                    reader = cur.sql(sql, params=params or None).to_arrow_reader(_BATCH_ROWS)
                    self.queries += 1
                    stream.write(b'{"ok":true}\n')
                    _write_arrow(stream, reader)
                finally:
                    with contextlib.suppress(duckdb.Error):
                        cur.execute("ROLLBACK")
            except _Refused as exc:
                _reply_error(stream, str(exc), "refused")
            except duckdb.Error as exc:
                _reply_error(stream, str(exc), "sql")  # whole: hints included
            except OSError:
                return  # the client went away


def _write_arrow(stream: Any, reader: Any) -> None:
    import pyarrow.ipc as ipc

    with ipc.new_stream(stream, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
    stream.flush()


def _reply_error(stream: Any, message: str, kind: str) -> None:
    with contextlib.suppress(OSError):
        stream.write(orjson.dumps({"ok": False, "error": message, "kind": kind}) + b"\n")
        stream.flush()


class LiveResult:
    """The answer to one query, shaped like the DuckDB result the readers use."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._rows: list[tuple[Any, ...]] | None = None
        self._pos = 0
        self.description = [
            (f.name, str(f.type), None, None, None, None, None) for f in table.schema
        ]

    def _all(self) -> list[tuple[Any, ...]]:
        if self._rows is None:
            columns = [c.to_pylist() for c in self._table.columns]
            self._rows = list(zip(*columns, strict=True)) if columns else []
        return self._rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._all()[self._pos :]
        self._pos = len(self._all())
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._all()
        if self._pos >= len(rows):
            return None
        self._pos += 1
        return rows[self._pos - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        rows = self._all()[self._pos : self._pos + size]
        self._pos += len(rows)
        return rows

    def to_arrow_table(self) -> Any:
        return self._table

    arrow = fetch_arrow_table = to_arrow_table

    def df(self) -> Any:
        return self._table.to_pandas()

    fetchdf = df


class LiveConnection:
    """A read-only stand-in for a DuckDB connection, answered by the store's holder."""

    def __init__(self, path: Path, db: Path) -> None:
        self.path = path
        self.db = db
        self._last: LiveResult | None = None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> LiveConnection:
        self._last = LiveResult(self._query(sql, list(params or [])))
        return self

    def sql(self, sql: str) -> LiveResult:
        return LiveResult(self._query(sql, []))

    # result methods on the connection itself, as DuckDB's execute() allows
    @property
    def description(self) -> list[tuple[Any, ...]]:
        return self._result().description

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._result().fetchall()

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._result().fetchone()

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        return self._result().fetchmany(size)

    def df(self) -> Any:
        return self._result().df()

    fetchdf = df

    def to_arrow_table(self) -> Any:
        return self._result().to_arrow_table()

    arrow = fetch_arrow_table = to_arrow_table

    def cursor(self) -> LiveConnection:
        return LiveConnection(self.path, self.db)

    def close(self) -> None:
        self._last = None

    def _result(self) -> LiveResult:
        if self._last is None:
            raise StoreError("no query has been run on this connection")
        return self._last

    def _query(self, sql: str, params: list[Any]) -> Any:
        with self.open_reader(sql, params) as reader:
            return reader.read_all()

    @contextlib.contextmanager
    def open_reader(self, sql: str, params: Sequence[Any] | None = None) -> Iterator[Any]:
        """A pyarrow RecordBatchReader over the result, read as it arrives (any size)."""
        params = list(params or [])
        import pyarrow.ipc as ipc

        sock = _connect(self.path)
        if sock is None:
            raise StoreError(
                f"store {self.db}: the halugen process that held it has stopped answering; "
                f"run the command again"
            )
        with sock, sock.makefile("rwb") as stream:
            try:
                stream.write(orjson.dumps({"sql": sql, "params": params}, default=str) + b"\n")
                stream.flush()
                head = orjson.loads(stream.readline(1 << 20) or b"{}")
            except (OSError, orjson.JSONDecodeError):
                raise StoreError(
                    f"store {self.db}: the halugen process holding it broke off the query"
                ) from None
            if not head.get("ok"):
                message = head.get("error") or "the store's holder refused the query"
                if head.get("kind") == "sql":
                    raise duckdb.Error(message)  # as a local query's error would be
                raise UsageError(message)
            try:
                yield ipc.open_stream(stream)
            except OSError:
                raise StoreError(
                    f"store {self.db}: the halugen process holding it broke off the query"
                ) from None


def _connect(path: Path) -> socket.socket | None:
    if not hasattr(socket, "AF_UNIX"):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def connect_live(db: str | os.PathLike[str]) -> LiveConnection | None:
    """A read-only connection to a store a running halugen process holds, or None.

    ``connect_live("halugen.duckdb").execute("SELECT * FROM calls").df()`` works in a
    notebook while a run is going; with no run holding the file, open it with DuckDB itself.
    """
    path = socket_path(db)
    sock = _connect(path)
    if sock is None:
        return None
    sock.close()
    return LiveConnection(path, Path(db))
