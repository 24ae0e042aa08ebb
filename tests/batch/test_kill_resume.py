"""A real ``python -m halugen run --batch`` killed (-9) or interrupted while its batches run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from halugen.simulate.batch import with_batch_stats
from halugen.simulate.config import BatchSimConfig
from tests.batch.support import BatchClock


def command(base_url: str, seeds: Path, db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "halugen",
        "run",
        "--batch",
        "--batch-poll",
        "0.05",
        "--seeds",
        str(seeds),
        "--base-url",
        base_url,
        "--api-key",
        "k",
        "--db",
        str(db),
        "--budget",
        "1usd",
        "--no-progress",
        "--max-attempts",
        "4",
        "--model",
        "gpt-4o-mini",
    ]


def stats(handle: Any) -> dict[str, Any]:
    """The simulator's bill, batches included, read on its own loop."""

    async def read() -> dict[str, Any]:
        return with_batch_stats(handle.sim, handle.sim.stats())

    return asyncio.run_coroutine_threadsafe(read(), handle.loop).result(10)


def wait_for(proc: subprocess.Popen, done: Any, what: str) -> None:
    """Wait for an event (not a duration): ``done()`` true while the process still runs."""
    deadline = time.monotonic() + 90
    while not done():
        assert proc.poll() is None, f"the run ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.02)


def start(cmd: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )


def query(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as conn:
        return conn.execute(sql).fetchall()


def check_books(db: Path, handle: Any, seeds: int) -> dict[str, Any]:
    s = stats(handle)
    assert s["duplicate_bills"] == 0, "a request was billed twice"
    assert s["billed_usd"] <= 1.0
    spent = query(db, "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')")
    assert spent[0][0] / 1e12 == pytest.approx(s["billed_usd"], abs=1e-12)
    assert query(db, "SELECT count(*) FROM samples") == [(seeds,)]
    assert query(db, "SELECT count(*) FROM runs") == [(1,)]
    return s


def test_kill_9_while_batches_run_then_the_same_command_resumes_them(
    simulator, hotpot_file, tmp_path
):
    clock = BatchClock(step=0.1, frozen=True)  # 30 looks per batch once it runs
    sim = simulator(batch=BatchSimConfig(clock=clock, duration_s=3.0))
    seeds, db = hotpot_file(30), tmp_path / "h.duckdb"
    cmd = command(sim.base_url, seeds, db)

    # 1: killed while its sampling batch is at the provider (maybe before it knew its id)
    proc = start(cmd)
    wait_for(proc, lambda: stats(sim)["batch"]["batches_created"] == 1, "sampling batch")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert stats(sim)["billed_usd"] == 0

    # 2: the same command polls that batch, then sends the filter batch: killed again there
    clock.frozen = False
    proc = start(cmd)
    wait_for(proc, lambda: stats(sim)["batch"]["batches_created"] == 2, "filter batch")
    clock.frozen = True
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert stats(sim)["batch"]["batches_by_status"].get("completed") == 1

    # 3: and once more, to the end
    clock.frozen = False
    done = subprocess.run(
        cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    s = check_books(db, sim, 30)
    assert s["batch"]["batches_created"] == 2  # neither batch was ever sent again
    assert s["requests"] == 1  # only the structured-output probe went to the chat endpoint
    assert query(db, "SELECT state, count(*) FROM batches GROUP BY 1") == [("collected", 2)]


def test_ctrl_c_without_a_terminal_leaves_the_batches_running(simulator, hotpot_file, tmp_path):
    clock = BatchClock(step=0.5, frozen=True)
    sim = simulator(batch=BatchSimConfig(clock=clock, duration_s=2.0))
    seeds, db = hotpot_file(10), tmp_path / "h.duckdb"
    cmd = command(sim.base_url, seeds, db)
    proc = start(cmd)
    wait_for(proc, lambda: stats(sim)["batch"]["batches_created"] == 1, "sampling batch")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert b"left running at the provider" in err
    assert stats(sim)["batch"]["cancel_requests"] == 0
    clock.frozen = False
    done = subprocess.run(
        cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert check_books(db, sim, 10)["batch"]["batches_created"] == 2
