"""The holder's side of live queries (see live.py for the protocol and who may ask what,
live_statements.py for what may run, live_guard.py for how a query is kept from the run)."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import orjson

from ..errors import HalugenError, UsageError
from . import live
from .live_guard import FINISHING, QueryGuard, QueryLimits
from .live_statements import refusal

__all__ = ["Action", "LiveReadServer"]

# A named operation the holder offers other processes: JSON arguments in, a JSON object out.
Action = Callable[[dict[str, Any]], dict[str, Any]]

_MAX_QUERIES_AT_ONCE = 2  # queries share the holder's cores with the run: keep them few
_CLIENT_TIMEOUT = 60.0  # a peer that stops reading or writing is dropped after this
_ACTION_END_WAIT = 10.0  # how long the holder's close lets an action it runs for others end


def _private_dir(path: Path) -> str | None:
    """Create ``path`` as 0700; None when it is (or was already) ours and private."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        return live._not_private(path, os.lstat(path), "directory")
    except OSError as exc:
        return f"cannot make {path}: {exc.strerror}"


class LiveReadServer:
    """Answers queries on ``conn``'s database over a private Unix socket.

    ``conn`` must belong to a database opened with external access disabled and its
    configuration locked (``open_store`` does so): that, not this class, is what keeps a
    query away from files and settings.
    """

    def __init__(
        self, conn: duckdb.DuckDBPyConnection, db: Path, limits: QueryLimits | None = None
    ) -> None:
        self.path = live.socket_path(db)
        self.problem: str | None = None  # why start() refused, for the holder's warning
        self._parent = conn.cursor()  # created here; query cursors are made from it
        self.guard = QueryGuard(conn.cursor(), limits or QueryLimits(256 * 2**20, 2**30))
        self._parent_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(_MAX_QUERIES_AT_ONCE)
        self._state = threading.Condition()
        self._running = 0  # queries between admission and their last byte
        self._parked = 0  # clients told "closing", waiting for the file to be free
        self._closing = False
        self._letting_go = False  # close() was called and the file is not free yet
        self._free_file: Callable[[], None] | None = None  # how to free it, given by close()
        self._file_free = threading.Event()  # set once it is
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.queries = 0
        self._actions: dict[str, Action] = {}
        self._acting = threading.Lock()  # one action at a time

    def start(self) -> bool:
        """Listen; False (and no server) when the socket cannot be made safely here."""
        if not hasattr(socket, "AF_UNIX"):
            self.problem = "this system has no Unix sockets"
            return False
        self.problem = _private_dir(self.path.parent)
        if self.problem is not None:
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
        except OSError as exc:
            sock.close()
            self.problem = f"cannot listen on {self.path}: {exc.strerror}"
            return False
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="halugen-live-sql", daemon=True)
        self._thread.start()
        return True

    # -- actions: what the holder does for others ------------------------------------------
    def offer(self, name: str, action: Action | None) -> None:
        """Offer ``action`` under ``name`` to other processes (None withdraws it).

        The SQL route stays read-only: an action is the holder's own code, run when asked
        by name with JSON arguments it checks itself, never a statement a client wrote.
        """
        with self._state:
            if action is None:
                self._actions.pop(name, None)
            else:
                self._actions[name] = action
        if action is None:
            with self._acting:  # one that was running has ended: its resources may go
                pass

    # -- shutdown, in steps around the closing of the file (see Store.close) ----------------
    def stop_answering(self) -> None:
        """Admit no more queries (later ones wait to be released), interrupt running ones
        without waiting for them (they stop at their next chunk while the holder goes on
        closing), and let a running action end (the holder's own code, which may write)."""
        with self._state:
            self._closing = True
        self.guard.close()
        if self._acting.acquire(timeout=_ACTION_END_WAIT):
            self._acting.release()

    def wait_ended(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for the interrupted queries to end; False when
        one has not (then ``close`` leaves the file to be freed when it does)."""
        deadline = time.monotonic() + timeout
        if not self.guard.wait_ended(timeout):
            return False
        with self._state:
            return self._state.wait_for(
                lambda: self._running == 0, max(0.0, deadline - time.monotonic())
            )

    def close(self, free_file: Callable[[], None] | None = None) -> None:
        """Free the file (``free_file``: the holder's connection closing), release the clients
        waiting for it, then stop listening and remove the socket. Until the file is free the
        socket stays: a client that comes meanwhile is held until it is, never sent to a file
        still locked. A query still running (one DuckDB did not give back when interrupted)
        keeps the file: it is freed when that query ends, on its thread, and never holds the
        holder's exit (the socket goes now; a client then waits for the lock, live.py)."""
        self.stop_answering()
        with self._state:
            self._letting_go, self._free_file = True, free_file
            straggling = self._running
        if straggling:
            logging.getLogger(__name__).warning(
                "%d live quer(ies) did not end when interrupted; the store's file is let go "
                "of when they do",
                straggling,
            )
        else:
            self._let_go()
        self._stop_listening()
        if self._thread is not None:
            self._thread.join(5)

    def _stop_listening(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def _let_go(self) -> None:
        """Free the file, once, and release the clients waiting for it."""
        with self._state:
            if not self._letting_go:
                return
            free_file, self._free_file, self._letting_go = self._free_file, None, False
        try:
            # the watcher leaves once no query runs: its connection must be idle to close
            self.guard.wait_ended(_CLIENT_TIMEOUT)
            with self._parent_lock, contextlib.suppress(duckdb.Error):
                self._parent.close()
            if free_file is not None:
                free_file()
        finally:
            self._file_free.set()

    @property
    def parked(self) -> int:
        """Clients told that the holder is closing, waiting for the file."""
        with self._state:
            return self._parked

    def wait_parked(self, n: int, timeout: float | None = None) -> bool:
        """Wait until ``n`` clients wait for the file (lets a holder hand over on cue)."""
        with self._state:
            return self._state.wait_for(lambda: self._parked >= n, timeout)

    # -- serving ---------------------------------------------------------------------------
    def _serve(self) -> None:
        while self._sock is not None:
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
        with contextlib.suppress(OSError), client:  # a client that went away is no concern
            client.settimeout(_CLIENT_TIMEOUT)
            with client.makefile("rwb") as stream:
                uid = live._peer_uid(client)
                if uid is not None and uid != live._my_uid():
                    _reply_error(stream, "this store's holder answers its own user only", "peer")
                    return
                self._answer_on(stream, client)

    def _answer_on(self, stream: Any, client: socket.socket | None = None) -> None:
        try:
            request = orjson.loads(stream.readline(1 << 24))
            if not isinstance(request, dict):
                raise TypeError("a request is a JSON object")
            action = request.get("action")
            if action is not None:
                args = request.get("args") or {}
                if not isinstance(action, str) or not isinstance(args, dict):
                    raise ValueError("action must be text and args an object")
            else:
                sql, params = request["sql"], request.get("params") or []
                if not isinstance(sql, str) or not isinstance(params, list):
                    raise ValueError("sql must be text and params a list")
                timeout = request.get("timeout")
                if timeout is not None and (
                    not isinstance(timeout, int | float)
                    or isinstance(timeout, bool)
                    or timeout <= 0
                ):
                    raise ValueError("timeout must be a positive number of seconds")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            _reply_error(stream, f"bad request: {exc}", "refused")
            return
        with self._state:
            closing = self._closing
            if not closing:
                self._running += 1
        if closing:
            self._park(stream)
            return
        started = True
        try:
            if action is not None:
                self._act(stream, action, args)
            else:
                with self._slots:
                    started = self._run(stream, sql, params, client, timeout)
        finally:
            with self._state:
                self._running -= 1
                self._state.notify_all()
                last_straggler = self._running == 0 and self._letting_go
            if last_straggler:
                self._let_go()
        if not started:  # it waited for a slot while the holder began to close
            self._park(stream)

    def _park(self, stream: Any) -> None:
        """Tell the client the holder is closing; hold it until the file is free."""
        with self._state:
            self._parked += 1
            self._state.notify_all()
        try:
            _reply_error(stream, "the holder is closing the store", "closing")
            self._file_free.wait(live._RELEASE_TIMEOUT)
        finally:
            with self._state:
                self._parked -= 1

    def _act(self, stream: Any, name: str, args: dict[str, Any]) -> None:
        with self._acting:  # looked up inside: a withdrawn action never starts
            with self._state:
                action = self._actions.get(name)
                offered = sorted(self._actions)
            if action is None:
                what = f"it offers {', '.join(offered)}" if offered else "it offers none"
                _reply_error(
                    stream,
                    f"the process that holds this store (pid {os.getpid()}) does not offer "
                    f"{name!r} ({what}); wait for it to finish",
                    "unavailable",
                )
                return
            try:
                result = action(args)
            except UsageError as exc:
                _reply_error(stream, str(exc), "refused")
                return
            except HalugenError as exc:
                _reply_error(stream, str(exc), "failed")
                return
            except Exception as exc:  # the holder keeps serving; the asker hears what failed
                _reply_error(stream, f"{name} failed in the holder: {exc!r}", "failed")
                return
        stream.write(orjson.dumps({"ok": True, "result": result}) + b"\n")
        stream.flush()

    def _run(
        self,
        stream: Any,
        sql: str,
        params: list[Any],
        client: socket.socket | None = None,
        timeout: float | None = None,
    ) -> bool:
        """Answer one query; False when the holder's closing stopped it (the caller then
        holds the client until the file is free, as for queries that come meanwhile)."""
        refused = refusal(sql)
        if refused is not None:
            _reply_error(stream, refused, "refused")
            return True
        with self._parent_lock:
            cur = self._parent.cursor()  # a fresh session: nothing a query sets outlives it
        try:
            with self.guard.watch(cur, client, timeout) as watched:
                if watched.stopped is not None:
                    return False
                try:
                    cur.execute("BEGIN TRANSACTION READ ONLY")
                    relation = cur.sql(sql, params=params or None)
                    # run it up to its first rows before saying ok: most errors come here
                    reader = (
                        None if relation is None else relation.to_arrow_reader(live._BATCH_ROWS)
                    )
                except duckdb.Error as exc:
                    if watched.stopped == FINISHING:
                        return False  # its client reads the file once it is free
                    if not watched.client_gone:
                        _reply_error(stream, *_query_refusal(exc, str(exc), watched.stopped))
                    return True
                self.queries += 1
                watched.sending = True
                stream.write(b'{"ok":true}\n')
                failure = _write_arrow(stream, reader)
                if failure is None:
                    stream.write(b'{"ok":true}\n')  # the trailer: every row was sent
                    stream.flush()
                elif watched.stopped == FINISHING:
                    return False  # the trailer says "closing"; the client reads the file
                elif not watched.client_gone:
                    _reply_error(stream, *_query_refusal(failure, str(failure), watched.stopped))
            return True
        finally:
            with contextlib.suppress(duckdb.Error):
                cur.close()


def _query_refusal(exc: Exception, message: str, stopped: str | None) -> tuple[str, str]:
    """(message, kind) for a failed query: "refused" when the sandbox stopped it,
    "stopped" when the holder interrupted it (``stopped`` says why)."""
    if stopped is not None:
        return (
            f"the process holding the store interrupted the query: {stopped}",
            "stopped",
        )
    if isinstance(exc, duckdb.PermissionException):
        return (
            f"queries on a store a halugen process holds cannot read or write files "
            f"({message.splitlines()[0]}); use 'halugen export' to write files from it",
            "refused",
        )
    if "read-only mode" in message or "configuration has been locked" in message:
        return (
            f"only read-only queries run while a halugen process holds the store: wait for "
            f"it to finish to change the store or its settings ({message.splitlines()[0]})",
            "refused",
        )
    return message, "sql"  # whole: DuckDB's hints (candidate bindings) included


def _write_arrow(stream: Any, reader: Any) -> Exception | None:
    """Send the result as an Arrow stream; the error that stopped reading it (DuckDB's, for
    a query that fails or is interrupted after its first rows), else None. The stream is
    always ended properly, so the client can read the trailer after it."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    schema = reader.schema if reader is not None else pa.schema([])
    failure: Exception | None = None
    batches = iter(reader or ())
    with ipc.new_stream(stream, schema) as writer:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except Exception as exc:  # DuckDB's error, raised through Arrow (often OSError)
                failure = exc
                break
            writer.write_batch(batch)  # an OSError here: the client went away
    stream.flush()
    return failure


def _reply_error(stream: Any, message: str, kind: str) -> None:
    with contextlib.suppress(OSError):
        stream.write(orjson.dumps({"ok": False, "error": message, "kind": kind}) + b"\n")
        stream.flush()


# -- the client side -----------------------------------------------------------------------
