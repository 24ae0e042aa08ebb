"""Read-only SQL on a store while a halugen process holds it.

DuckDB lets one process open a file for writing and no other process open it at all
meanwhile. So the process that holds the store answers queries for the others: a server
thread listens on a Unix socket and streams each result back as Arrow IPC. ``halugen sql``,
``status``, ``export`` and :func:`connect_live` use it whenever the file is locked, so they
see what the holder has committed (its writer commits at least every half second).

    client                                      holder
      {"sql": ..., "params": [...],
       "timeout": seconds (optional)}\\n  ──►   one statement
                                         ◄──   {"ok": true}\\n + Arrow IPC stream + trailer
                                         ◄──   {"ok": false, "kind": ..., "error": "..."}\\n
                                         ◄──   {"ok": false, "kind": "closing"}\\n, then EOF
                                               once the file is free

The trailer, after the Arrow stream's end, is ``{"ok": true}`` when every row was sent, or
the error that stopped the query after its first rows (DuckDB's own message, or why the
holder interrupted it); "closing" there too when the holder finished meanwhile.

Who is trusted, and what a query can do:

- Only the holder's own user. The socket is mode 0600 in a 0700 directory of that user's;
  the holder checks each peer's uid (SO_PEERCRED), and a client checks that the directory
  and the socket are its user's, private and not symlinks, and that the process listening
  runs as its user, before it sends anything: another local user can neither query a
  store nor pose as its holder.
- A query reads the store and nothing else. The holder's DuckDB database is opened with
  external access disabled and its configuration locked (db.py), so no statement can open a
  file (``COPY ... TO``, ``read_csv``, ``ATTACH``, extensions) or change a setting, whatever
  its type or however it is wrapped (``EXPLAIN ANALYZE`` runs its statement). Each query
  runs on a cursor of its own inside a read-only transaction, so it cannot change the
  store's data, and session state it creates dies with it. Only queries are let in
  (live_statements.py: CHECKPOINT, VACUUM, SET, ATTACH, PREPARE, temporary objects ... are
  refused with one line). A query runs at the lowest CPU priority, on one thread, at most
  two at once, within its own share of memory and temporary disk and its time limit, and is
  interrupted when its client goes away or the holder finishes (live_guard.py).

When the holder closes the store, queries that arrive meanwhile are told so and wait; they
are released once the file is free, and the client then opens the file itself. A client
whose holder is gone (killed, or finished between two queries) does the same.

This module is the client side and what both sides share; the holder's is live_server.py.
Why a socket rather than a snapshot file: a copy of the whole store every second costs as
much as the store is large; a query costs what it reads, on a thread of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import stat
import struct
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import orjson

from ..errors import StoreError, StoreInUse, UsageError
from .failures import is_locked

__all__ = [
    "HolderGone",
    "LiveConnection",
    "LiveResult",
    "ask_holder",
    "connect_live",
    "socket_path",
]

_BATCH_ROWS = 10_000  # rows per Arrow batch, on both sides
_RELEASE_TIMEOUT = 600.0  # how long a client waits for a closing holder to let go of the file
_LET_GO_WAIT_S = 10.0  # how long a lock may outlive the holder's "let go" (its exit, a straggler)
_LOCK_LOOK_EVERY_S = 0.05


def socket_path(db: str | os.PathLike[str]) -> Path:
    """Where the holder of ``db`` listens: a short path (sockets allow ~100 bytes)."""
    real = os.path.realpath(os.fspath(db))
    digest = hashlib.sha256(real.encode()).hexdigest()[:20]
    return _socket_dir() / f"{digest}.sock"


def _socket_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"halugen-{os.getuid()}"


def _my_uid() -> int:
    """The uid the socket, its directory and the peer must have (a seam for tests)."""
    return os.getuid()


def _peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where the system
    does not say (then the private directory is the only guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _not_private(path: Path, info: os.stat_result, kind: str) -> str | None:
    """Why ``path`` (lstat ``info``) may not be trusted, or None when it is ours and private."""
    if stat.S_ISLNK(info.st_mode):
        return f"the {kind} {path} is a symbolic link"
    wanted = stat.S_ISDIR if kind == "directory" else stat.S_ISSOCK
    if not wanted(info.st_mode):
        return f"{path} is not a {kind}"
    if info.st_uid != _my_uid():
        return f"the {kind} {path} belongs to uid {info.st_uid}, not to you (uid {_my_uid()})"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"the {kind} {path} is open to other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


class HolderGone(Exception):
    """The holder has let go of the store (or died): the file can be opened instead."""


def _connect(path: Path, db: Path) -> socket.socket | None:
    """A connection to the holder of ``db``, or None when none listens at ``path``.

    Refuses (StoreError), before sending anything, a socket that another user could have
    put there or could listen on.
    """
    if not hasattr(socket, "AF_UNIX"):
        return None
    try:
        problem = _not_private(path.parent, os.lstat(path.parent), "directory")
        if problem is None:
            problem = _not_private(path, os.lstat(path), "socket")
    except FileNotFoundError:
        return None
    if problem is not None:
        raise _unsafe(db, problem)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
        uid = _peer_uid(sock)
    except OSError:
        sock.close()
        return None  # a socket left by a holder that was killed, or one just closing
    if uid is not None and uid != _my_uid():
        sock.close()
        raise _unsafe(db, f"the process listening on {path} runs as uid {uid}")
    return sock


def _unsafe(db: Path, problem: str) -> StoreError:
    return StoreError(
        f"store {db}: {problem}; nothing was sent to it. Another user may be posing as the "
        f"process that holds the store: remove that path if it is yours, or point "
        f"$XDG_RUNTIME_DIR at a private directory of yours for both the run and this command"
    )


def _ask(
    path: Path, db: Path, sql: str, params: list[Any], timeout: float | None = None
) -> tuple[socket.socket, Any]:
    """Send one query; (socket, stream) positioned at the Arrow stream of its answer.

    Raises HolderGone when no holder answers (the caller opens the file instead).
    """
    payload: dict[str, Any] = {"sql": sql, "params": params}
    if timeout is not None:
        payload["timeout"] = timeout
    sock, stream, _ = _request(path, db, payload)
    return sock, stream


def ask_holder(db: str | os.PathLike[str], action: str, args: dict[str, Any]) -> Any:
    """Ask the process that holds ``db`` to do ``action`` (one it offers, see
    ``LiveReadServer.offer``) and return its JSON result; None when no process holds the
    store any more (the caller opens the file itself). ``StoreInUse`` when the holder does
    not offer that action, ``UsageError`` when it refuses the arguments."""
    path = Path(db)
    try:
        sock, stream, head = _request(socket_path(path), path, {"action": action, "args": args})
    except HolderGone:
        return None
    _close(sock, stream)
    return head.get("result")


def _request(path: Path, db: Path, payload: dict[str, Any]) -> tuple[socket.socket, Any, Any]:
    """Send one request; (socket, stream, head) once the holder said ok. HolderGone when no
    holder answers; the holder's refusal raised as the error it names."""
    sock = _connect(path, db)
    if sock is None:
        raise HolderGone
    stream = sock.makefile("rwb")
    try:
        stream.write(orjson.dumps(payload, default=str) + b"\n")
        stream.flush()
        line = stream.readline(1 << 24)
        head = orjson.loads(line) if line else None
    except (OSError, orjson.JSONDecodeError):
        head = None
    if not isinstance(head, dict):  # the holder went away before answering
        _close(sock, stream)
        raise HolderGone
    if head.get("ok"):
        return sock, stream, head
    _raise_refusal(head, sock, stream, db)
    raise AssertionError("unreachable")  # for the type checker


def _raise_refusal(head: dict[str, Any], sock: socket.socket, stream: Any, db: Path) -> None:
    """Raise what the holder's ``{"ok": false, ...}`` line says, as the error it names."""
    kind = head.get("kind")
    if kind == "closing":
        # the holder closes the connection once the file is free (or dies): wait for that
        with contextlib.suppress(OSError):
            sock.settimeout(_RELEASE_TIMEOUT)
            while stream.read(4096):
                pass
        _close(sock, stream)
        raise HolderGone
    _close(sock, stream)
    message = head.get("error") or "the store's holder refused the query"
    if kind == "sql":
        raise duckdb.Error(message)  # as a local query's error would be
    if kind == "peer":
        raise StoreError(f"store {db}: {message}")
    if kind == "unavailable":
        raise StoreInUse(f"store {db} is in use by another process: {message}")
    if kind in ("failed", "stopped"):
        raise StoreError(f"store {db}: {message}")
    raise UsageError(message)


def _close(sock: socket.socket, stream: Any) -> None:
    with contextlib.suppress(OSError):
        stream.close()
    sock.close()


class _Route:
    """Where the queries of a live connection (and its cursors) go: to the holder while it
    answers, then to the file, opened read-only, once the holder has let go of it."""

    def __init__(self, path: Path, db: Path) -> None:
        self.path = path
        self.db = db
        self.local: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def open_file(self) -> duckdb.DuckDBPyConnection:
        """The file, opened read-only. The holder has let go of it or is going: a lock still
        on it (a holder freeing it after a straggling query, an exit under way) is waited out
        for up to ``_LET_GO_WAIT_S``."""
        with self._lock:
            deadline = time.monotonic() + _LET_GO_WAIT_S
            while self.local is None:
                try:
                    self.local = duckdb.connect(str(self.db), read_only=True, config={"threads": 1})
                except duckdb.Error as exc:
                    if is_locked(exc) and time.monotonic() < deadline:
                        time.sleep(_LOCK_LOOK_EVERY_S)
                        continue
                    raise StoreError(
                        f"store {self.db}: the halugen process that held it let go, and the "
                        f"file cannot be opened now ({str(exc).splitlines()[0]}); run the "
                        f"command again"
                    ) from None
            return self.local

    def close(self) -> None:
        with self._lock:
            if self.local is not None:
                self.local.close()
                self.local = None


class LiveResult:
    """The answer to one query, shaped like the DuckDB result the readers use."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self._rows: list[tuple[Any, ...]] | None = None
        self._pos = 0
        self.description: list[tuple[Any, ...]] | None = [
            (f.name, str(f.type), None, None, None, None, None) for f in table.schema
        ] or None

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
    """A read-only stand-in for a DuckDB connection, answered by the store's holder (and
    by the file itself once the holder has let go of it)."""

    def __init__(
        self,
        path: Path,
        db: Path,
        route: _Route | None = None,
        *,
        query_timeout: float | None = None,
    ) -> None:
        self.path = path
        self.db = db
        self._route = route or _Route(path, db)
        self._last: LiveResult | None = None
        # seconds the holder lets each query run (None: the holder's default, 60)
        self.query_timeout = query_timeout

    @property
    def on_file(self) -> bool:
        """True once the holder has let go and queries read the file directly."""
        return self._route.local is not None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> LiveConnection:
        self._last = LiveResult(self._query(sql, list(params or [])))
        return self

    def sql(self, sql: str) -> LiveResult:
        return LiveResult(self._query(sql, []))

    # result methods on the connection itself, as DuckDB's execute() allows
    @property
    def description(self) -> list[tuple[Any, ...]] | None:
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
        return LiveConnection(self.path, self.db, self._route, query_timeout=self.query_timeout)

    def close(self) -> None:
        self._last = None
        self._route.close()

    def _result(self) -> LiveResult:
        if self._last is None:
            raise StoreError("no query has been run on this connection")
        return self._last

    def _query(self, sql: str, params: list[Any]) -> Any:
        try:
            with self.open_reader(sql, params) as reader:
                return reader.read_all()
        except HolderGone:  # it finished while answering: read the file now it is free
            self._route.open_file()
            with self.open_reader(sql, params) as reader:
                return reader.read_all()

    @contextlib.contextmanager
    def open_reader(self, sql: str, params: Sequence[Any] | None = None) -> Iterator[Any]:
        """A pyarrow RecordBatchReader over the result, read as it arrives (any size)."""
        params = list(params or [])
        if self._route.local is None:
            try:
                sock, stream = _ask(self.path, self.db, sql, params, self.query_timeout)
            except HolderGone:
                self._route.open_file()
            else:
                with contextlib.closing(sock), contextlib.closing(stream):
                    yield _arrow_stream(sock, stream, self.db)
                return
        local = self._route.open_file().cursor()
        try:
            relation = local.sql(sql, params=params or None)
            yield _empty_reader() if relation is None else relation.to_arrow_reader(_BATCH_ROWS)
        finally:
            local.close()


def _empty_reader() -> Any:
    """What a statement without a result gives: no columns, no rows."""
    import pyarrow as pa

    return pa.RecordBatchReader.from_batches(pa.schema([]), [])


def _arrow_stream(sock: socket.socket, stream: Any, db: Path) -> Any:
    """The answer's rows as a RecordBatchReader; once they are read, the trailer that says
    whether they were all (else its error is raised, as the holder's first line would be)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    try:
        source = ipc.open_stream(stream)
    except (OSError, pa.ArrowInvalid):
        raise _broke_off(db) from None

    def batches() -> Iterator[Any]:
        while True:
            try:
                batch = source.read_next_batch()
            except StopIteration:
                break
            except (OSError, pa.ArrowInvalid):
                raise _broke_off(db) from None
            yield batch
        try:
            line = stream.readline(1 << 24)
            trailer = orjson.loads(line) if line else {"ok": True}  # an older holder: none
        except (OSError, orjson.JSONDecodeError):
            raise _broke_off(db) from None
        if not isinstance(trailer, dict):
            raise _broke_off(db)
        if not trailer.get("ok"):
            _raise_refusal(trailer, sock, stream, db)

    return pa.RecordBatchReader.from_batches(source.schema, batches())


def _broke_off(db: Path) -> StoreError:
    """The holder's answer stopped mid-way with no word why: it died, or the link broke."""
    return StoreError(
        f"store {db}: the answer from the halugen process holding it stopped part way (did "
        f"that process end?); run the command again"
    )


def connect_live(
    db: str | os.PathLike[str], *, query_timeout: float | None = None
) -> LiveConnection | None:
    """A read-only connection to a store a running halugen process holds, or None.

    ``connect_live("halugen.duckdb").execute("SELECT * FROM calls").df()`` works in a
    notebook while a run is going; with no run holding the file, open it with DuckDB itself.
    ``query_timeout``: seconds the holder lets each query run (default: its own, 60).
    Raises StoreError when the socket found is not private to this user (nothing is sent).
    """
    path = socket_path(db)
    sock = _connect(path, Path(db))
    if sock is None:
        return None
    sock.close()
    return LiveConnection(path, Path(db), query_timeout=query_timeout)
