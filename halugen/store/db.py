"""Opening the store, applying migrations, and the reads the engine needs.

One DuckDB file per project. Reads happen on the caller's connection; every write goes
through the ``StoreWriter`` thread (see writer.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson

from ..errors import StoreError, StoreInUse, UnusableStore
from .answer_lookup import AnswerRow, StoredAnswers, answer_row
from .failures import damaged_store, is_locked, open_failure, write_error
from .journal import Journal, journal_path, replay
from .key_index import KeyIndex, key_prefix
from .live import LiveConnection, connect_live
from .live_guard import QueryLimits
from .live_server import Action, LiveReadServer
from .migrations import MIGRATIONS
from .views import VIEWS
from .writer import StoreWriter

__all__ = ["RunRow", "Store", "now", "open_store"]


def now() -> datetime:
    """UTC wall time without tzinfo (DuckDB TIMESTAMP)."""
    return datetime.now(UTC).replace(tzinfo=None)


class RunRow(dict[str, Any]):
    """A row of the runs table (a dict with attribute-free access, kept simple)."""


class Store:
    def __init__(self, path: Path, conn: duckdb.DuckDBPyConnection | LiveConnection) -> None:
        self.path = path
        self.conn: Any = conn
        self._writer: StoreWriter | None = None
        self._answers: StoredAnswers | None = None
        self._live_server: LiveReadServer | None = None

    @property
    def is_live(self) -> bool:
        """True when another halugen process holds the file and answers our (read) queries."""
        return isinstance(self.conn, LiveConnection)

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def writer(self) -> StoreWriter:
        if self.is_live:
            raise StoreError(f"store {self.path} is held by a running halugen process: read only")
        if self._writer is None:
            conn = self.conn
            self._writer = StoreWriter(
                conn.cursor(),
                conn.cursor(),
                path=self.path,
                journal=lambda: Journal(self.path, conn.cursor()),
            )
        return self._writer

    @property
    def answers(self) -> StoredAnswers:
        """Stored answers by request key, fetched in groups off the event loop (a store
        held by another process has none to give: ``writer`` refuses it)."""
        if self._answers is None:
            writer = self.writer
            self._answers = StoredAnswers(self.conn.cursor, writer.journaled_answer)
        return self._answers

    @property
    def live_server(self) -> LiveReadServer | None:
        """The server answering other processes' queries, while this process holds the file."""
        return self._live_server

    def serve_reads(self) -> bool:
        """Answer other processes' read-only queries while this one holds the file."""
        if self._live_server is None and not self.is_live:
            server = LiveReadServer(self.conn, self.path, LIVE_QUERY_LIMITS)
            if server.start():
                self._live_server = server
            else:
                logging.getLogger(__name__).warning(
                    "other commands cannot query %s while this one runs: %s",
                    self.path,
                    server.problem,
                )
        return self._live_server is not None

    def offer(self, name: str, action: Action | None) -> bool:
        """Do ``action`` for other processes that ask for ``name`` while this one holds the
        file (``live.ask_holder``; None withdraws it); False when nobody can ask."""
        if self._live_server is None:
            return False
        self._live_server.offer(name, action)
        return True

    def close(self) -> None:
        # Queries that arrive while we close wait, and are released once the file is free:
        # they then open the file themselves instead of failing. Running ones are
        # interrupted first and end while the writer closes; the connection cannot close
        # under a running cursor, so one DuckDB does not give back within
        # ``QUERY_END_WAIT`` closes it when it ends, not this thread (every commit is in
        # the WAL by then: an exit before it loses nothing, the next open replays it).
        server, self._live_server = self._live_server, None
        try:
            if server is not None:
                server.stop_answering()
            if self._answers is not None:
                self._answers.close()
                self._answers = None
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        finally:
            if server is None:
                self.conn.close()
            elif server.wait_ended(QUERY_END_WAIT):
                try:
                    self.conn.close()
                finally:
                    server.close()
            else:
                server.close(free_file=self.conn.close)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads -------------------------------------------------------------------------
    def _caught_up(self) -> None:
        """Feed DuckDB what this process's journal holds, so that its reads see its writes
        (reservations and answers reach DuckDB a moment after they are durable)."""
        writer = self._writer
        if writer is not None and writer.journal is not None and writer.journal.behind:
            writer.journal.flush_blocking()

    def query(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Any SQL: for the named queries of store/ only (a user's: ``user_sql``)."""
        self._caught_up()
        return self.conn.execute(sql, params or []).fetchall()

    def find_run(self, *, config_hash: str, kind: str) -> RunRow | None:
        rows = self.conn.execute(
            "SELECT * FROM runs WHERE config_hash = ? AND kind = ? ORDER BY created_at DESC "
            "LIMIT 1",
            [config_hash, kind],
        ).fetchall()
        return self._run_rows(rows)[0] if rows else None

    def get_run(self, run_id: str) -> RunRow | None:
        rows = self.conn.execute("SELECT * FROM runs WHERE run_id = ?", [run_id]).fetchall()
        return self._run_rows(rows)[0] if rows else None

    def list_runs(self) -> list[RunRow]:
        return self._run_rows(
            self.conn.execute("SELECT * FROM runs ORDER BY created_at").fetchall()
        )

    def _run_rows(self, rows: list[tuple[Any, ...]]) -> list[RunRow]:
        cols = [d[0] for d in self.conn.execute("SELECT * FROM runs LIMIT 0").description]
        return [RunRow(zip(cols, r, strict=True)) for r in rows]

    def spent(self, run_id: str) -> int:
        self._caught_up()
        (value,) = self.conn.execute(
            "SELECT COALESCE(sum(pusd), 0) FROM ledger WHERE run_id = ? "
            "AND event IN ('settle', 'consume', 'lost')",
            [run_id],
        ).fetchone()
        return int(value)

    def open_reservations(self, run_id: str) -> list[tuple[int, int, int]]:
        """(call_id, res_no, pusd) of reservations never closed: in flight at a crash."""
        self._caught_up()
        return self.conn.execute(
            """
            SELECT r.call_id, r.res_no, r.pusd FROM ledger r
            WHERE r.run_id = ? AND r.event = 'reserve' AND NOT EXISTS (
                SELECT 1 FROM ledger c WHERE c.call_id = r.call_id AND c.res_no = r.res_no
                AND c.event <> 'reserve')
            """,
            [run_id],
        ).fetchall()

    def next_call_id(self) -> int:
        self._caught_up()
        (value,) = self.conn.execute(
            "SELECT greatest((SELECT COALESCE(max(call_id), 0) FROM ledger),"
            " (SELECT COALESCE(max(call_id), 0) FROM call_log))"
        ).fetchone()
        return int(value) + 1

    def response_index(self) -> KeyIndex:
        self._caught_up()
        rows = self.conn.execute("SELECT key_prefix FROM call_log WHERE status = 'ok'").fetchall()
        return KeyIndex(r[0] for r in rows)

    def cached_response(self, key: str) -> AnswerRow | None:
        """(response_json, prompt_tokens, completion_tokens, cached_tokens,
        usage_estimated) of a key's stored answer (many at once: ``answers``)."""
        if self._writer is not None:  # durable in the journal, maybe not in DuckDB yet
            row = self._writer.journaled_answer(key)
            if row is not None:
                return answer_row(row)
        return self.conn.execute(
            "SELECT response_json, prompt_tokens, completion_tokens, cached_tokens, "
            "usage_estimated FROM call_log WHERE key_prefix = ? AND key = ? AND status = 'ok' "
            "ORDER BY call_id LIMIT 1",
            [key_prefix(key), key],
        ).fetchone()

    def settled_seeds(self, run_id: str, task: str) -> KeyIndex:
        """Seeds of a run that reached a final outcome (sampled or rejected)."""
        rows = self.conn.execute(
            "SELECT DISTINCT seed_key FROM seed_outcomes WHERE run_id = ? AND task = ? "
            "AND outcome IN ('sampled', 'rejected')",
            [run_id, task],
        ).fetchall()
        return KeyIndex(key_prefix(r[0]) for r in rows)

    def admitted_seeds(self, run_id: str, task: str) -> KeyIndex:
        rows = self.conn.execute(
            "SELECT DISTINCT seed_key FROM seeds WHERE run_id = ? AND task = ?", [run_id, task]
        ).fetchall()
        return KeyIndex(key_prefix(r[0]) for r in rows)

    def pending_seeds(self, run_id: str, task: str) -> list[tuple[Any, ...]]:
        """Admitted seeds whose latest outcome is not final, oldest first: resume finishes
        them first (a seed re-queued after a final outcome counts as pending again)."""
        return self.conn.execute(
            """
            SELECT s.seed_key, s.seed_id, s.dataset, s.source_file, s.source_line, s.fields_json,
                   s.truncated_tokens
            FROM seeds s
            WHERE s.run_id = ? AND s.task = ? AND NOT EXISTS (
                SELECT 1 FROM (
                    SELECT seed_key, outcome FROM seed_outcomes
                    WHERE run_id = s.run_id AND task = s.task
                    QUALIFY row_number() OVER (PARTITION BY seed_key ORDER BY created_at DESC) = 1
                ) o
                WHERE o.seed_key = s.seed_key AND o.outcome IN ('sampled', 'rejected'))
            QUALIFY row_number() OVER (PARTITION BY s.seed_key ORDER BY s.created_at) = 1
            ORDER BY s.created_at, s.source_line
            """,
            [run_id, task],
        ).fetchall()

    def stored_candidates(self, run_id: str, task: str, seed_key: str) -> list[tuple[Any, ...]]:
        return self.conn.execute(
            "SELECT idx, template, template_hash, call_key, text, pattern, status, detail, raw "
            "FROM candidates WHERE run_id = ? AND task = ? AND seed_key = ? ORDER BY idx",
            [run_id, task, seed_key],
        ).fetchall()

    def copy_to(self, query: str, params: list[Any], path: str, options: str) -> None:
        """``COPY (query) TO path (options)``, also on a store another process holds."""
        self._caught_up()
        target = path.replace("'", "''")
        if not self.is_live:
            self.conn.execute(f"COPY ({query}) TO '{target}' ({options})", params)
            return
        local = duckdb.connect(config={"threads": 1})
        try:
            with self.conn.open_reader(query, params) as reader:
                local.register("halugen_live_result", reader)
                local.execute(f"COPY (SELECT * FROM halugen_live_result) TO '{target}' ({options})")
        finally:
            local.close()

    def iter_rows(
        self, sql: str, params: list[Any] | None = None, batch: int = 1000
    ) -> Iterator[tuple[Any, ...]]:
        self._caught_up()
        cur = self.conn.cursor()
        cur.execute(sql, params or [])
        while True:
            rows = cur.fetchmany(batch)
            if not rows:
                return
            yield from rows

    # -- writes (small, infrequent: directly; hot rows go through the writer) -----------
    def create_run(
        self,
        *,
        kind: str,
        config_hash: str,
        config: dict[str, Any],
        tasks: str,
        model: str,
        base_url: str,
        price: dict[str, Any] | None,
        budget_pusd: int | None,
        version: str,
        run_id: str | None = None,
    ) -> str:
        run_id = run_id or f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"
        t = now()
        self.conn.execute(
            "INSERT INTO runs (run_id, kind, config_hash, config_json, tasks, model, base_url,"
            " price_json, budget_pusd, status, status_detail, halugen_version, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', NULL, ?, ?, ?)",
            [
                run_id,
                kind,
                config_hash,
                orjson.dumps(config).decode(),
                tasks,
                model,
                base_url,
                orjson.dumps(price).decode() if price else None,
                budget_pusd,
                version,
                t,
                t,
            ],
        )
        return run_id

    def update_run(self, run_id: str, **values: Any) -> None:
        values["updated_at"] = now()
        sets = ", ".join(f"{k} = ?" for k in values)
        self.conn.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*values.values(), run_id])


# How a process that writes the store opens it. Other processes' queries run on this
# database (live.py), and DuckDB scopes these settings to the whole database, not to a
# connection: with external access off no statement can open a file other than the store
# and its WAL (``COPY ... TO``, ``read_csv``, ``ATTACH``, extensions), and with the
# configuration locked none can change a setting, so the writer's own connections keep
# theirs. halugen itself reads and writes other files with Python or a separate in-memory
# DuckDB, never through the store's database.
WRITER_MEMORY_LIMIT = "64MB"  # the run's own share
# Other processes' queries get a share of their own beside it, and a time limit; the
# holder interrupts a query past either (live_guard.py: DuckDB's limit is one for the
# whole database, so the shares are kept by watching, not by DuckDB).
LIVE_QUERY_LIMITS = QueryLimits(memory_bytes=64 * 2**20, temp_bytes=2 * 2**30, timeout=60.0)
# how long the holder's close waits for the live queries it interrupted to end (DuckDB stops
# one at its next chunk: milliseconds); past it, the last of them closes the store
QUERY_END_WAIT = 1.0
STORE_MEMORY_LIMIT = "128MB"  # the two shares together: DuckDB's memory_limit
_WRITER_CONFIG: dict[str, Any] = {
    "threads": 1,
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
    # DuckDB caches the blocks it reads and writes up to 80% of the machine's memory by
    # default, so a long run's RSS grew with the store (2.2 GB after 100k seeds). Its
    # working set here is small (appends, aggregates, short lookups); larger sorts spill
    # to ``<store>.tmp``. Other processes' queries have a share of their own in it.
    "memory_limit": STORE_MEMORY_LIMIT,
    # a hard stop under the queries' own temp share (2 GB), so that the run keeps room
    "max_temp_directory_size": "4GB",
}
# Text columns are written compressed with zstd. DuckDB's own pick for them (DICT_FSST in
# 2.0) took ~3 s of CPU to checkpoint the 55 MB of request bodies of 11k calls, paid by
# whichever lane commits past the WAL threshold: 15-25% of a run's CPU against a stub server
# (bench/throughput.py --profile). zstd takes ~0.1 s for them and makes the file 5x smaller;
# scans read it faster, a point lookup by key is ~25% slower. Columns of other types keep
# their usual methods. DuckDB has zstd for text from 1.2 on.
if tuple(int(part) for part in re.findall(r"\d+", duckdb.__version__)[:2]) >= (1, 2):
    _WRITER_CONFIG["force_compression"] = "zstd"
_READER_CONFIG: dict[str, Any] = {"threads": 1}


def open_store(
    path: str | os.PathLike[str],
    *,
    read_only: bool = False,
    serve_reads: bool = True,
    query_timeout: float | None = None,
) -> Store:
    """Open (or create) the store at ``path`` and bring its schema up to date.

    Read-only opens of a file another halugen process holds go through that process
    (``live.py``; ``query_timeout``: seconds it lets each of our queries run, default 60).
    A read-write open answers such queries for others while it is open.
    """
    p = Path(path)
    if read_only and not p.exists():
        raise UnusableStore(
            f"store {p} does not exist (run 'halugen run' or 'halugen demo' first, or check --db)"
        )
    _check_is_store(p)
    config = _READER_CONFIG if read_only else _WRITER_CONFIG
    holder = ""
    # A holder can let go of the file between our two looks (the lock, then its socket):
    # then the file is free, so look again rather than report it busy.
    for _attempt in range(3):
        try:
            conn = duckdb.connect(str(p), read_only=read_only, config=config)
            break
        except duckdb.Error as exc:
            if not is_locked(exc):
                raise open_failure(p, exc, read_only=read_only) from None
            msg = str(exc).splitlines()[0]
            holder = f" ({m.group(0)})" if (m := re.search(r"PID \d+", msg)) else ""
            if not read_only:
                raise StoreInUse(
                    f"store {p} is in use by another process{holder}; wait for it to finish "
                    f"or use another --db"
                ) from None
            live = connect_live(p, query_timeout=query_timeout)
            if live is not None:
                return Store(p, live)
    else:
        raise StoreError(
            f"store {p} is in use by another process{holder} that does not answer queries; "
            f"wait for it to finish"
        )
    try:
        if not read_only:
            _migrate(conn, p)
            # what a crash left durable in the journal but not in DuckDB, before any read
            try:
                replay(conn, p)
            except (OSError, duckdb.Error) as exc:
                raise write_error(p, exc) from None
        elif (_outdated(conn) or journal_path(p).exists()) and os.access(p, os.W_OK):
            # written by an earlier halugen, or left with a journal to replay by a crash:
            # bring it up to date once (the file is free, we just opened it), so a read-only
            # command sees the tables, views and rows it queries
            conn.close()
            open_store(p, serve_reads=False).close()
            conn = duckdb.connect(str(p), read_only=True, config=config)
    except BaseException:
        conn.close()
        raise
    store = Store(p, conn)
    if not read_only and serve_reads:
        store.serve_reads()
    return store


def _check_is_store(p: Path) -> None:
    """Refuse a path that is not a DuckDB file before DuckDB sees it.

    DuckDB 2 opens a file it does not recognise (a CSV, a Parquet file) as an empty
    in-memory database: a run would then "succeed" and store nothing.
    """
    if not p.exists():
        return
    if p.is_dir():
        raise UnusableStore(f"store {p} is a directory; give --db a file path")
    if not p.is_file():
        raise UnusableStore(
            f"store {p} is not a regular file (a pipe or a device?); give --db a file path"
        )
    try:
        with p.open("rb") as f:
            head = f.read(12)
    except OSError as exc:
        raise UnusableStore(f"store {p} cannot be read: {exc.strerror}") from None
    if not head:
        raise UnusableStore(
            f"store {p} is an empty file, not a DuckDB store; delete it or give another --db"
        )
    if len(head) < 12 or head[8:12] != b"DUCK":
        raise UnusableStore(
            f"{p} is not a DuckDB store (it holds other data); give --db a new file name or an "
            f"existing halugen store"
        )


def _outdated(conn: duckdb.DuckDBPyConnection) -> bool:
    """Does the store lack a migration this halugen knows (an older halugen wrote it)?"""
    try:
        applied = {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
    except duckdb.Error:
        return False  # not a store halugen migrated: left to the queries to say
    return any(name not in applied for name, _ in MIGRATIONS)


def _migrate(conn: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Apply the missing table migrations, then (re)create every view as defined now."""
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
        )
        applied = {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
        known = {name for name, _ in MIGRATIONS}
        unknown = applied - known
        if unknown:
            raise UnusableStore(
                f"store {path} was written by a newer halugen (migrations {sorted(unknown)}); "
                f"upgrade halugen to use it"
            )
        migrated = False
        for name, sql in MIGRATIONS:
            if name in applied:
                continue
            conn.execute("BEGIN TRANSACTION")
            if sql.strip():
                conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", [name, now()])
            conn.execute("COMMIT")
            migrated = True
        _apply_views(conn, force=migrated)
    except duckdb.Error as exc:
        with contextlib.suppress(duckdb.Error):
            conn.execute("ROLLBACK")
        damaged = damaged_store(path, exc)
        if damaged is not None:
            raise damaged from None
        raise StoreError(
            f"store {path}: cannot apply schema ({str(exc).splitlines()[0]})"
        ) from None


def _apply_views(conn: duckdb.DuckDBPyConnection, *, force: bool) -> None:
    """(Re)create every view as ``VIEWS`` defines it, in one transaction.

    Each view carries the digest of its definition as its comment, so an open that finds
    them all current (the usual case) skips the ~0.1 s of re-creating them.
    """
    wanted = {
        name: "halugen:" + hashlib.sha256(select.encode()).hexdigest()[:16]
        for name, select in VIEWS
    }
    found = dict(
        conn.execute(
            "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal "
            "AND schema_name = 'main'"
        ).fetchall()
    )
    if not force and all(found.get(name) == digest for name, digest in wanted.items()):
        return
    conn.execute("BEGIN TRANSACTION")
    for name, select in VIEWS:
        conn.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")
        conn.execute(f"COMMENT ON VIEW {name} IS '{wanted[name]}'")
    conn.execute("COMMIT")
