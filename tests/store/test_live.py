"""Read-only SQL, status and export on a store that another process holds."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import orjson
import pytest

from halugen.errors import StoreError, UsageError
from halugen.store import live
from halugen.store.db import open_store
from halugen.store.live import connect_live, socket_path

ROOT = Path(__file__).resolve().parents[2]

# A holder in its own process (DuckDB's file lock is per process): opens the store, writes a
# run, then follows commands on its stdin, one per line, and says when each is done:
#   write  another reserve/settle pair (call_id 2, 3, ...), committed -> "wrote"
#   close  one more pair, then close the store -> "closed"
#   stop   stop answering queries -> "stopped"; once one query waits, one more pair, then
#          close the store -> "closed"
#   slow-close  one more pair, then close the store, pausing as the file is freed: says
#          "letting-go" there and goes on at the next line on stdin -> "closed"
_HOLDER = textwrap.dedent(
    """
    import sys
    from halugen.store.db import open_store
    from halugen.store.rows import LedgerRow

    store = open_store(sys.argv[1])
    store.create_run(kind="generate", config_hash="h", config={}, tasks="qa", model="m",
                     base_url="u", price=None, budget_pusd=10**12, version="t",
                     run_id="held-run")

    def write(call_id):
        store.writer.put([
            LedgerRow(call_id, 1, "held-run", "reserve", 5 * 10**9, "k", "sample", "qa", "m",
                      "s"),
            LedgerRow(call_id, 1, "held-run", "settle", 3 * 10**9, "k", "sample", "qa", "m",
                      "s"),
        ])
        store.writer.flush_blocking()

    call_id = 1
    write(call_id)
    print("ready", flush=True)
    for line in sys.stdin:
        command = line.strip()
        call_id += 1
        if command == "write":
            write(call_id)
            print("wrote", flush=True)
        elif command == "close":
            write(call_id)
            break
        elif command == "slow-close":
            class PausesAsItCloses:  # the server's own connection, held at its close
                def __init__(self, inner):
                    self.inner = inner

                def __getattr__(self, name):
                    return getattr(self.inner, name)

                def close(self):
                    print("letting-go", flush=True)
                    sys.stdin.readline()
                    self.inner.close()

            server = store.live_server
            server._parent = PausesAsItCloses(server._parent)
            write(call_id)
            break
        elif command == "stop":
            store.live_server.stop_answering()
            print("stopped", flush=True)
            assert store.live_server.wait_parked(1, 300)
            write(call_id)
            break
    store.close()
    print("closed", flush=True)
    """
)


class Holder:
    def __init__(self, db: Path) -> None:
        self.db = db
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.expect("ready")

    def expect(self, word: str) -> None:
        line = self.proc.stdout.readline().strip()
        assert line == word, (word, line)

    def command(self, command: str, answer: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        self.expect(answer)

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
        self.proc.wait(60)


@pytest.fixture
def holder(tmp_path) -> Iterator[Holder]:
    h = Holder(tmp_path / "held.duckdb")
    yield h
    h.end()


@pytest.fixture
def held_store(holder) -> Path:
    return holder.db


def _halugen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "halugen", *args], capture_output=True, text=True, env=env
    )


def _ledger_rows(db: Path) -> int:
    done = _halugen("sql", "SELECT count(*) AS n FROM ledger", "--db", str(db), "--format", "csv")
    assert done.returncode == 0, done.stderr
    return int(done.stdout.splitlines()[1])


def test_sql_on_a_held_store_sees_committed_rows(held_store):
    done = _halugen(
        "sql",
        "SELECT run_id, spent_usd FROM run_spend",
        "--db",
        str(held_store),
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    rows = orjson.loads(done.stdout)
    assert rows == [{"run_id": "held-run", "spent_usd": pytest.approx(0.003)}]


def test_status_works_while_held(held_store):
    done = _halugen("status", "--db", str(held_store))
    assert done.returncode == 0, done.stderr
    assert "held-run" in done.stdout


def test_a_write_through_the_holder_is_refused(held_store):
    for statement in ("DELETE FROM runs", "SELECT 1; DROP TABLE runs", "CREATE TABLE x (a INT)"):
        done = _halugen("sql", statement, "--db", str(held_store))
        assert done.returncode == 2, (statement, done.stdout, done.stderr)
        assert "read-only" in done.stderr or "one statement" in done.stderr
        assert "Traceback" not in done.stderr
    again = _halugen(
        "sql", "SELECT count(*) AS n FROM runs", "--db", str(held_store), "--format", "csv"
    )
    assert again.stdout.splitlines() == ["n", "1"]


def test_no_statement_through_the_holder_writes_a_file(held_store, tmp_path):
    # EXPLAIN ANALYZE runs its statement: refusing by statement type let this one through
    targets = [tmp_path / f"leak{i}.csv" for i in range(3)]
    for statement in (
        f"EXPLAIN ANALYZE COPY (SELECT * FROM runs) TO '{targets[0]}'",
        f"COPY runs TO '{targets[1]}'",
        f"EXPORT DATABASE '{tmp_path / 'dump'}'",
        f"SELECT * FROM (EXPLAIN ANALYZE COPY ledger TO '{targets[2]}')",
    ):
        done = _halugen("sql", statement, "--db", str(held_store))
        assert done.returncode == 2, (statement, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    assert not any(t.exists() for t in targets)
    assert not (tmp_path / "dump").exists()
    # the same from Python
    conn = connect_live(held_store)
    assert conn is not None
    with pytest.raises(UsageError, match="COPY is refused"):
        conn.execute(f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{targets[0]}'")
    assert not targets[0].exists()


def test_no_statement_through_the_holder_reads_a_file(held_store, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nhunter2\n")
    conn = connect_live(held_store)
    assert conn is not None
    for statement in (
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM '{secret}'",
        f"SELECT content FROM read_text('{secret}')",
        f"SELECT * FROM glob('{tmp_path}/*')",
        f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
        "SELECT getenv('HOME')",
    ):
        with pytest.raises((UsageError, duckdb.Error)) as info:
            conn.execute(statement)
        assert "hunter2" not in str(info.value), statement
    assert not (tmp_path / "other.duckdb").exists()
    done = _halugen("sql", f"SELECT * FROM read_csv('{secret}')", "--db", str(held_store))
    assert done.returncode == 2
    assert "cannot read or write files" in done.stderr and "hunter2" not in done.stdout


def test_the_holder_keeps_writing_after_hostile_queries(holder):
    # settings are the database's, not a connection's: a query that could change one
    # would change it for the holder's writer too (external access off broke its inserts)
    conn = connect_live(holder.db)
    assert conn is not None
    for statement in (
        "EXPLAIN ANALYZE SET enable_external_access = false",
        "SET enable_external_access = false",
        "SET threads = 4",
        "RESET threads",
        "SET memory_limit = '1MB'",
        "PRAGMA disable_checkpoint_on_shutdown",
        "SET profiling_output = 'profile.json'",
    ):
        with pytest.raises(UsageError, match="read-only queries"):
            conn.execute(statement)
    # these may run or fail; either way they must leave nothing behind
    for statement in (
        "COMMIT",
        "FORCE CHECKPOINT",
        "DETACH held",
        "USE system",
        "SET VARIABLE x = 1",
        "ATTACH ':memory:' AS scratch",
        "CREATE TEMP TABLE t AS SELECT 1",
    ):
        with contextlib.suppress(UsageError, duckdb.Error):
            conn.execute(statement)
    rows = conn.execute(
        "SELECT current_setting('threads'), current_setting('enable_external_access'), "
        "getvariable('x'), (SELECT count(*) FROM runs)"
    ).fetchall()
    assert rows == [(1, False, None, 1)]
    before = _ledger_rows(holder.db)
    holder.command("write", "wrote")  # the holder's writer still commits
    assert _ledger_rows(holder.db) == before + 2


def test_python_clients_read_a_live_store(held_store, tmp_path):
    conn = connect_live(held_store)
    assert conn is not None
    table = conn.execute("SELECT event, pusd FROM ledger ORDER BY event").to_arrow_table()
    assert table.column("event").to_pylist() == ["reserve", "settle"]
    store = open_store(held_store, read_only=True)
    assert store.is_live
    assert store.spent("held-run") == 3 * 10**9
    out = tmp_path / "ledger.parquet"
    store.copy_to("SELECT * FROM ledger", [], str(out), "FORMAT PARQUET")
    assert duckdb.connect().execute(f"SELECT count(*) FROM '{out}'").fetchone() == (2,)
    with pytest.raises(Exception, match="read only"):
        _ = store.writer


def test_a_query_after_the_holder_left_reads_the_file(holder, tmp_path):
    store = open_store(holder.db, read_only=True)
    assert store.is_live
    assert store.spent("held-run") == 3 * 10**9
    holder.command("close", "closed")  # one more settled call, then the file is let go
    holder.end()
    # the same connection, with no holder any more: it opens the freed file
    assert store.spent("held-run") == 6 * 10**9
    assert store.conn.on_file
    out = tmp_path / "ledger.parquet"
    store.copy_to("SELECT * FROM ledger", [], str(out), "FORMAT PARQUET")
    assert duckdb.connect().execute(f"SELECT count(*) FROM '{out}'").fetchone() == (4,)
    store.close()


def test_a_query_arriving_while_the_holder_closes_waits_for_the_file(holder, tmp_path):
    store = open_store(holder.db, read_only=True)
    assert store.is_live
    holder.command("stop", "stopped")  # the holder answers no more queries
    # this query waits; the holder then commits one more call, closes the file and lets it
    # go; only then is the query answered, from the file
    assert store.spent("held-run") == 6 * 10**9
    holder.expect("closed")
    assert store.conn.on_file
    store.close()


def test_the_socket_stays_until_the_file_is_free(holder):
    # a client that comes while the holder frees the file must be held until it is free, not
    # told "no holder" and sent to a file still locked (a failure the docs' pages met: the
    # socket was gone while the holder's last connection still held the lock)
    holder.command("slow-close", "letting-go")
    assert socket_path(holder.db).exists()
    got: dict[str, int] = {}

    def ask() -> None:
        with open_store(holder.db, read_only=True) as store:
            got["spent"] = store.spent("held-run")

    asker = threading.Thread(target=ask)
    asker.start()
    holder.proc.stdin.write("go\n")
    holder.proc.stdin.flush()
    holder.expect("closed")
    asker.join(120)
    assert got == {"spent": 6 * 10**9}
    assert not socket_path(holder.db).exists()


def test_a_lock_left_after_the_holder_let_go_is_waited_out(tmp_path, monkeypatch):
    db = tmp_path / "free.duckdb"
    open_store(db).close()
    real_connect = duckdb.connect
    refusals = iter([True, True, False])

    def connect(*args, **kwargs):
        if next(refusals):
            raise duckdb.IOException(
                f'IO Error: Could not set lock on file "{db}": Conflicting lock'
            )
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(live.duckdb, "connect", connect)
    monkeypatch.setattr(live, "_LOCK_LOOK_EVERY_S", 0.0)
    route = live._Route(socket_path(db), db)
    assert route.open_file().execute("SELECT 1").fetchone() == (1,)
    route.close()


def test_a_lock_that_stays_is_reported(tmp_path, monkeypatch):
    db = tmp_path / "held.duckdb"
    open_store(db).close()

    def connect(*args, **kwargs):
        raise duckdb.IOException(f'IO Error: Could not set lock on file "{db}": Conflicting lock')

    monkeypatch.setattr(live.duckdb, "connect", connect)
    monkeypatch.setattr(live, "_LET_GO_WAIT_S", 0.0)
    with pytest.raises(StoreError, match="let go, and the file cannot be opened now"):
        live._Route(socket_path(db), db).open_file()


def test_the_socket_is_private(held_store):
    path = socket_path(held_store)
    mode = os.stat(path).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) & 0o077 == 0


def test_no_holder_no_socket(tmp_path):
    db = tmp_path / "closed.duckdb"
    with open_store(db) as store:
        assert store.serve_reads()
        assert connect_live(db) is not None
    assert connect_live(db) is None
    assert not socket_path(db).exists()


# -- who may talk to whom ----------------------------------------------------------------


@pytest.fixture
def runtime_dir(monkeypatch) -> Iterator[Path]:
    """A short private $XDG_RUNTIME_DIR (socket paths must stay under ~100 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="hl"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield base
    shutil.rmtree(base, ignore_errors=True)


class FakeHolder:
    """Something listening where a store's holder would, recording what it is sent."""

    def __init__(self, db: Path) -> None:
        self.path = socket_path(db)
        self.path.parent.mkdir(mode=0o700, exist_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        self.sock.listen(4)
        self.received = b""
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with client:
                client.settimeout(5)
                try:
                    self.received += client.recv(65536)
                    # a forged answer, as another user's process could send
                    client.sendall(b'{"ok": true}\n')
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def fake_holder(runtime_dir, tmp_path) -> Iterator[tuple[Path, FakeHolder]]:
    db = tmp_path / "s.duckdb"
    fake = FakeHolder(db)
    yield db, fake
    fake.close()


def _refused_before_sending(db: Path, fake: FakeHolder, match: str) -> None:
    with pytest.raises(StoreError, match=match) as info:
        connect_live(db)
    assert "nothing was sent" in str(info.value)
    conn = live.LiveConnection(socket_path(db), db)
    with pytest.raises(StoreError, match=match):
        conn.execute("SELECT 1")
    assert fake.received == b"" and fake.connections == 0


def test_a_socket_directory_open_to_others_is_refused(fake_holder):
    db, fake = fake_holder
    os.chmod(fake.path.parent, 0o755)
    _refused_before_sending(db, fake, "open to other users")


def test_a_socket_open_to_others_is_refused(fake_holder):
    db, fake = fake_holder
    os.chmod(fake.path, 0o666)
    _refused_before_sending(db, fake, "open to other users")


def test_a_socket_directory_of_another_user_is_refused(fake_holder, monkeypatch):
    db, fake = fake_holder
    # as if another user had made the directory first: it is not ours any more
    monkeypatch.setattr(live, "_my_uid", lambda: os.getuid() + 1)
    _refused_before_sending(db, fake, "belongs to uid")


def test_a_symlinked_socket_directory_is_refused(fake_holder, runtime_dir):
    db, fake = fake_holder
    real = runtime_dir / "elsewhere"
    fake.path.parent.rename(real)
    fake.path.parent.symlink_to(real)
    _refused_before_sending(db, fake, "symbolic link")


def test_a_private_socket_of_ours_is_used(fake_holder):
    db, fake = fake_holder  # the fake set up as a real holder would be: it is asked
    conn = connect_live(db)
    assert conn is not None
    with pytest.raises(StoreError, match="stopped part way"):
        conn.execute("SELECT 1")
    assert b"SELECT 1" in fake.received


def test_the_holder_answers_only_its_own_user(runtime_dir, tmp_path, monkeypatch):
    db = tmp_path / "s.duckdb"
    with open_store(db) as store:
        server = store.live_server
        assert server is not None
        # the holder now runs as "another" uid than the client that connects
        monkeypatch.setattr(live, "_my_uid", lambda: os.getuid() + 1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(server.path))
            sock.sendall(b'{"sql": "SELECT count(*) FROM runs"}\n')
            reply = orjson.loads(sock.makefile("rb").readline())
        assert reply["ok"] is False and reply["kind"] == "peer"
        assert server.queries == 0
