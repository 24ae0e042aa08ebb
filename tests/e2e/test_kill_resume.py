"""kill -9 in the middle of a run, then the same command again."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import orjson

from halugen.records import canonical_json


def _command(base_url: str, seeds: Path, db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "halugen",
        "run",
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
        "--concurrency",
        "48",
        "--no-progress",
        "--model",
        "gpt-4o-mini",
    ]


def test_kill_9_then_resume_finishes_every_seed_once(simulator, hotpot_file, tmp_path):
    sim = simulator(latency_ms=20, jitter_ms=40)
    seeds = hotpot_file(120)
    db = tmp_path / "h.duckdb"
    cmd = _command(sim.base_url, seeds, db)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # wait (for an event, not a duration) until the run is well under way
    deadline = time.monotonic() + 60
    while sim.stats(keys=False)["ok"] < 120 and proc.poll() is None:
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    billed_at_kill = sim.stats(keys=False)["billed_usd"]
    assert billed_at_kill > 0

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    with duckdb.connect(str(db), read_only=True) as conn:
        n_samples, n_seeds = conn.execute(
            "SELECT count(*), count(DISTINCT seed_key) FROM sample_rows"
        ).fetchone()
        runs = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        lost_keys = {
            r[0]
            for r in conn.execute(
                "SELECT r.key FROM ledger r JOIN ledger l ON l.call_id = r.call_id AND "
                "l.res_no = r.res_no AND l.event = 'lost' WHERE r.event = 'reserve'"
            ).fetchall()
        }
        bodies = dict(
            conn.execute(
                "SELECT key, any_value(request_json) FROM calls WHERE request_json IS NOT NULL "
                "GROUP BY key"
            ).fetchall()
        )
        spent = conn.execute(
            "SELECT sum(pusd) FROM ledger WHERE event IN ('settle','consume','lost')"
        ).fetchone()[0]
    assert runs == 1  # the same command resumed the same run
    assert n_samples == n_seeds  # exactly one sample per seed
    rejected = 120 - n_seeds
    assert rejected < 10  # nearly every seed makes a sample with the simulator

    stats = sim.stats()
    twice = {k for k, v in stats["billed_keys"].items() if v > 1}
    in_flight_at_kill = {
        hashlib.sha256(canonical_json(orjson.loads(bodies[k]))).hexdigest()
        for k in lost_keys
        if k in bodies
    }
    print(f"lost={len(lost_keys)} billed twice={len(twice)} samples={n_samples}")
    assert twice <= in_flight_at_kill, "a request that was not in flight was billed twice"
    assert stats["billed_usd"] <= 1.0
    assert spent / 1e12 >= stats["billed_usd"] - 1e-12


def test_several_kills_at_random_moments_repay_only_what_was_in_flight(
    simulator, hotpot_file, tmp_path
):
    import random

    sim = simulator(latency_ms=10, jitter_ms=30)
    seeds = hotpot_file(150)
    db = tmp_path / "h.duckdb"
    cmd = _command(sim.base_url, seeds, db)
    concurrency = 48  # the most requests at the provider at once
    rng = random.Random()
    points = sorted(rng.sample(range(40, 400), 3))  # answered calls at which to kill
    kills = 0
    for point in points:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while sim.stats(keys=False)["ok"] < point and proc.poll() is None:
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.005)
        if proc.poll() is not None:
            break  # finished before this point: nothing more to kill
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert kills >= 1

    with duckdb.connect(str(db), read_only=True) as conn:
        lost = conn.execute(
            "SELECT r.key, r.pusd FROM ledger r JOIN ledger l ON l.call_id = r.call_id AND "
            "l.res_no = r.res_no AND l.event = 'lost' WHERE r.event = 'reserve'"
        ).fetchall()
        bodies = dict(
            conn.execute(
                "SELECT key, any_value(request_json) FROM calls WHERE status = 'ok' GROUP BY key"
            ).fetchall()
        )
        n_samples, n_seeds = conn.execute(
            "SELECT count(*), count(DISTINCT seed_key) FROM sample_rows"
        ).fetchone()
        (spent,) = conn.execute("SELECT spent_usd FROM run_spend").fetchone()
    stats = sim.stats()
    twice = {k for k, v in stats["billed_keys"].items() if v > 1}
    lost_fingerprints = {
        hashlib.sha256(canonical_json(orjson.loads(bodies[k]))).hexdigest()
        for k, _ in lost
        if bodies.get(k)
    }
    print(f"kills={kills} lost={len(lost)} billed twice={len(twice)} samples={n_samples}")
    assert n_samples == n_seeds
    # only requests in flight at a kill can be paid twice: a reservation is durable only once
    # its request leaves, so each kill leaves at most the concurrency open (not one per
    # worker waiting for a slot), and every request billed twice is one of those
    assert len(lost) <= kills * concurrency
    # (a kill can also drop the last half second of request bodies, which are kept apart
    # from the answers: a request whose body is gone cannot be matched, only counted)
    known = {
        hashlib.sha256(canonical_json(orjson.loads(body))).hexdigest()
        for body in bodies.values()
        if body
    }
    assert twice & known <= lost_fingerprints
    assert len(twice) <= len(lost)
    assert stats["duplicate_bills"] <= len(lost)
    assert stats["billed_usd"] <= spent + 1e-12


def test_sql_status_and_export_work_while_a_run_holds_the_store(simulator, hotpot_file, tmp_path):
    # Some requests hang for an hour (the run waits as long): once one hangs, the run cannot
    # end before the test is done with it, however slow the machine
    sim = simulator(latency_ms=5, fail_rate=0.05, faults=("hang",), hang_s=3600)
    db = tmp_path / "h.duckdb"
    cmd = [*_command(sim.base_url, hotpot_file(200), db), "--timeout", "3600"]
    cmd[cmd.index("48")] = "8"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:  # wait for events (answers, one request hanging), not for a duration
            stats = sim.stats(keys=False)
            if stats["ok"] >= 30 and stats["faults"].get("hang", 0) >= 1:
                break
            assert time.monotonic() < deadline and proc.poll() is None, "the run made no progress"
            time.sleep(0.02)
        base = [sys.executable, "-m", "halugen"]
        sql = subprocess.run(
            [
                *base,
                "sql",
                "SELECT count(*) AS n FROM calls WHERE status = 'ok'",
                "--db",
                str(db),
                "--format",
                "csv",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert sql.returncode == 0, sql.stderr
        assert int(sql.stdout.splitlines()[1]) > 0
        status = subprocess.run(
            [*base, "status", "--db", str(db)], capture_output=True, text=True, timeout=60
        )
        assert status.returncode == 0, status.stderr
        out = tmp_path / "live.jsonl"
        export = subprocess.run(
            [*base, "export", "--format", "jsonl", "--out", str(out), "--db", str(db)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert export.returncode == 0, export.stderr
        assert proc.poll() is None, "the run ended before the queries: they proved nothing"
    finally:
        proc.kill()
        proc.wait()
