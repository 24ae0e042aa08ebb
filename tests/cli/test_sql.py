"""``halugen sql``: DuckDB's hints are kept (local store and live socket), and a closed pipe
ends the command quietly."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from halugen.cli import main
from halugen.store.db import open_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.duckdb"
    open_store(path).close()
    return path


def _binder_error(db: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["sql", "SELECT status FROM seed_progress", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err


def test_a_binder_error_keeps_its_candidate_bindings(db, capsys):
    err = _binder_error(db, capsys)
    assert 'Referenced column "status" not found' in err
    assert 'Candidate bindings: "' in err
    assert "DESCRIBE" in err and "LINE 1" not in err
    assert main(["sql", "SELECT * FROM seed_progres", "--db", str(db)]) == 2
    assert 'Did you mean "seed_progress"' in capsys.readouterr().err


# holds the store in another process (DuckDB's lock is per process) until stdin closes
_HOLDER = (
    "import sys\n"
    "from halugen.store.db import open_store\n"
    "store = open_store(sys.argv[1])\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"
    "store.close()\n"
)


def test_the_live_socket_keeps_the_hint_too(db, capsys):
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with open_store(db, read_only=True) as reader:
            assert reader.is_live  # the query goes through the holder's socket
        err = _binder_error(db, capsys)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(60)
    assert 'Candidate bindings: "' in err and "DESCRIBE" in err


def _shell(line: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        ["bash", "-c", f'{line}; echo "status=${{PIPESTATUS[0]}}" >&2'],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_closed_pipe_ends_quietly(db, fmt):
    query = "SELECT range AS n, 'some text' AS t FROM range(5000)"
    halugen = shlex.join(
        [sys.executable, "-m", "halugen", "sql", query, "--db", str(db), "--format", fmt]
    )
    done = _shell(f"{halugen} | head -n 1")
    assert done.stdout.count("\n") == 1
    assert done.stderr.strip() == "status=0", done.stderr


def test_the_store_page_names_every_column_of_every_view(db):
    page = (ROOT / "docs" / "store-and-sql.md").read_text(encoding="utf-8")
    section = page.split("## The store (SQL surface)", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    with open_store(db, read_only=True) as store:
        views = [
            v
            for (v,) in store.conn.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1"
            ).fetchall()
        ]
        missing = []
        for view in views:
            row = next((r for r in rows if f"`{view}`" in r.split("|")[1]), None)
            if row is None:
                missing.append(view)
                continue
            for column, *_rest in store.conn.execute(f"DESCRIBE {view}").fetchall():
                if not re.search(rf"\b{column}\b", row.split("|", 3)[3]):
                    missing.append(f"{view}.{column}")
    assert "seed_progress" in views and not missing, missing
