"""Read-only SQL, status and export on a store that another process holds."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest

from halugen.store.db import open_store
from halugen.store.live import connect_live, socket_path

# A holder in its own process (DuckDB's file lock is per process): opens the store, writes a
# run, and keeps the file until its stdin closes.
_HOLDER = textwrap.dedent(
    """
    import sys
    from halugen.store.db import open_store
    store = open_store(sys.argv[1])
    store.create_run(kind="generate", config_hash="h", config={}, tasks="qa", model="m",
                     base_url="u", price=None, budget_pusd=10**12, version="t",
                     run_id="held-run")
    store.writer.put([("ledger", (1, 1, "held-run", "reserve", 5 * 10**9, "k", "sample", "qa",
                                  "m", "s"))])
    store.writer.put([("ledger", (1, 1, "held-run", "settle", 3 * 10**9, "k", "sample", "qa",
                                  "m", "s"))])
    store.writer.flush_blocking()
    print("ready", flush=True)
    sys.stdin.read()
    store.close()
    """
)


@pytest.fixture
def held_store(tmp_path):
    db = tmp_path / "held.duckdb"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline().strip() == "ready"
    yield db
    proc.stdin.close()
    proc.wait(30)


def _halugen(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "halugen", *args], capture_output=True, text=True, env=env
    )


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
    for statement in ("DELETE FROM runs", "SELECT 1; DROP TABLE runs", "COPY runs TO 'x.csv'"):
        done = _halugen("sql", statement, "--db", str(held_store))
        assert done.returncode == 2, (statement, done.stdout, done.stderr)
        assert "read-only" in done.stderr or "one statement" in done.stderr
        assert "Traceback" not in done.stderr
    again = _halugen(
        "sql", "SELECT count(*) AS n FROM runs", "--db", str(held_store), "--format", "csv"
    )
    assert again.stdout.splitlines() == ["n", "1"]


def test_a_bad_query_is_a_usage_error(held_store):
    done = _halugen("sql", "SELEC nonsense", "--db", str(held_store))
    assert done.returncode == 2
    assert "SQL error" in done.stderr


def test_python_clients_read_a_live_store(held_store, tmp_path):
    live = connect_live(held_store)
    assert live is not None
    table = live.execute("SELECT event, pusd FROM ledger ORDER BY event").to_arrow_table()
    assert table.column("event").to_pylist() == ["reserve", "settle"]
    store = open_store(held_store, read_only=True)
    assert store.is_live
    assert store.spent("held-run") == 3 * 10**9
    out = tmp_path / "ledger.parquet"
    store.copy_to("SELECT * FROM ledger", [], str(out), "FORMAT PARQUET")
    import duckdb

    assert duckdb.connect().execute(f"SELECT count(*) FROM '{out}'").fetchone() == (2,)
    with pytest.raises(Exception, match="read only"):
        _ = store.writer


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
