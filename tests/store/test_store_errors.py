"""A store that cannot be used as given: one line naming the file, the cause and what to do,
exit 2; never "a bug in halugen", never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from halugen.errors import StoreError, UnusableStore
from halugen.store.db import open_store
from halugen.store.failures import open_failure, write_error
from tests.store.test_schema import old_store

ROOT = Path(__file__).resolve().parents[2]


def halugen(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "halugen", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def assert_bad_store(done: subprocess.CompletedProcess[str], db: Path, words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), done.stderr
    assert words in lines[-1] and str(db) in lines[-1], lines[-1]
    assert "bug" not in done.stderr and "Traceback" not in done.stderr


def damage(db: Path, table: str) -> None:
    """Overwrite bytes inside the block that holds ``table``'s data (not its header)."""
    with duckdb.connect(str(db), read_only=True) as conn:
        (block_size,) = conn.execute("SELECT block_size FROM pragma_database_size()").fetchone()
        blocks = conn.execute(
            f"SELECT DISTINCT block_id FROM pragma_storage_info('{table}') WHERE block_id >= 0"
        ).fetchall()
    assert blocks, table
    header = 3 * 4096  # DuckDB's file header and its two database headers
    with db.open("r+b") as f:
        f.seek(header + blocks[0][0] * block_size + 100)
        f.write(b"\xff" * 64)


def test_db_naming_a_csv_is_bad_input(tmp_path):
    csv = tmp_path / "samples.csv"
    csv.write_text("question,answer\nwho?,me\n")
    for command in (["status"], ["sql", "SELECT 1"], ["export", "--out", str(tmp_path / "o")]):
        assert_bad_store(halugen(*command, "--db", str(csv)), csv, "is not a DuckDB store")
    assert csv.read_text() == "question,answer\nwho?,me\n"


def test_a_missing_store_to_read_is_bad_input(tmp_path):
    db = tmp_path / "typo.duckdb"
    assert_bad_store(halugen("status", "--db", str(db)), db, "does not exist")
    assert not db.exists()


def test_a_store_damaged_in_the_middle(tmp_path, simulator, hotpot_file):
    db = old_store(tmp_path)
    for table in ("call_log", "ledger", "sample_rows"):
        damage(db, table)
    for command in (
        ["status"],
        ["sql", "SELECT * FROM calls"],
        ["export", "--out", str(tmp_path / "o.jsonl")],
        ["export", "--format", "parquet", "--out", f"{tmp_path / 'pq'}/"],
    ):
        assert_bad_store(halugen(*command, "--db", str(db)), db, "is damaged")
    sim = simulator()
    run = halugen(
        "run",
        "--seeds",
        str(hotpot_file(2)),
        "--base-url",
        sim.base_url,
        "--api-key",
        "k",
        "--model",
        "gpt-4o-mini",
        "--no-progress",
        "--db",
        str(db),
    )
    assert_bad_store(run, db, "is damaged")
    assert "restore it from a copy" in run.stderr.lower()


def test_a_store_in_a_read_only_directory(tmp_path, hotpot_file):
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copy(old_store(tmp_path), ro / "old.duckdb")
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("this user can write to a directory without write permission (root)")
        args = ["--base-url", "http://127.0.0.1:9/v1", "--api-key", "k", "--model", "m"]
        seeds = ["--seeds", str(hotpot_file(1)), "--no-progress"]
        new = halugen("run", *seeds, *args, "--db", str(ro / "new.duckdb"))
        assert_bad_store(new, ro / "new.duckdb", "cannot be created")
        old = halugen("run", *seeds, *args, "--db", str(ro / "old.duckdb"))
        assert old.returncode == 2 and "Traceback" not in old.stderr
        assert "may be damaged" not in old.stderr
        status = halugen("status", "--db", str(ro / "old.duckdb"))
        assert status.returncode == 0, status.stderr
    finally:
        ro.chmod(0o755)


_READ_ONLY_MOUNT = textwrap.dedent(
    """
    set -e
    mount --bind "$1" "$1"
    mount -o remount,bind,ro "$1"
    shift
    exec "$@"
    """
)


def test_a_store_on_a_read_only_file_system(tmp_path, hotpot_file):
    # a real read-only file system, in a mount namespace of its own (root on Linux only)
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a read-only file system")
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copy(old_store(tmp_path), ro / "old.duckdb")
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", _READ_ONLY_MOUNT, "sh", str(ro), "true"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount here: {probe.stderr.decode().strip()[:80]}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "300"}
    seeds = ["--seeds", str(hotpot_file(1)), "--no-progress", "--api-key", "k"]
    args = [*seeds, "--base-url", "http://127.0.0.1:9/v1", "--model", "gpt-4o-mini"]
    for name, words in (("new.duckdb", "cannot be created"), ("old.duckdb", "copy it to")):
        command = [sys.executable, "-m", "halugen", "run", *args, "--db", str(ro / name)]
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", _READ_ONLY_MOUNT, "sh", str(ro), *command],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert_bad_store(done, ro / name, words)
        assert "read-only file system" in done.stderr and "may be damaged" not in done.stderr


@pytest.mark.parametrize(
    ("text", "read_only", "words", "exit_code"),
    [
        ('IO Error: Cannot open file "{p}": Read-only file system', False, "read-only", 2),
        ('IO Error: Cannot open file "{p}": Permission denied', False, "permission denied", 2),
        ('IO Error: Cannot open file "{p}": Permission denied', True, "cannot be read", 2),
        ("Corrupt database file: computed checksum 1 does not match", True, "is damaged", 2),
        ('IO Error: Could not read enough bytes from file "{p}"', True, "is damaged", 2),
    ],
)
def test_open_failures_name_the_cause(tmp_path, text, read_only, words, exit_code):
    db = tmp_path / "s.duckdb"
    error = open_failure(db, duckdb.IOException(text.format(p=db)), read_only=read_only)
    assert isinstance(error, UnusableStore) and error.exit_code == exit_code
    assert words in str(error) and str(db) in str(error) and "\n" not in str(error)


def test_write_failures_name_the_cause(tmp_path):
    db = tmp_path / "s.duckdb"
    full = write_error(db, duckdb.IOException("IO Error: No space left on device"))
    assert "disk holding" in str(full) and full.exit_code == 1
    ro = write_error(db, duckdb.IOException('IO Error: "x": Read-only file system'))
    assert "read-only" in str(ro) and "may be damaged" not in str(ro)
    bad = write_error(db, duckdb.Error("Corrupt database file: computed checksum 1"))
    assert isinstance(bad, UnusableStore) and "is damaged" in str(bad)


def test_a_corrupt_store_is_refused_before_a_run(tmp_path):
    db = tmp_path / "s.duckdb"
    db.write_bytes(b"\x00" * 4096 + b"garbage")
    with pytest.raises(StoreError) as info:
        open_store(db)
    assert info.value.exit_code == 2 and str(db) in str(info.value)
