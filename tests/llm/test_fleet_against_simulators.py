"""A fleet of simulators over loopback HTTP: one budget, one store, one run.

Checked from the providers' side (``Simulator.stats``): the 429 share, that every endpoint
served, that what the store spent covers what they billed, and that a resume through another
fleet (also after kill -9) asks again only for what was in flight. No timing assertions;
bench/ratelimits.py prints the rate a fleet achieves.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import duckdb
import orjson
import pytest

from halugen.config import Endpoint, RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate
from halugen.records import canonical_json
from halugen.simulate import SIMULATOR, SimConfig, serve


@dataclass
class Sim:
    url: str
    sim: Any
    loop: asyncio.AbstractEventLoop
    runner: Any
    stopped: bool = False

    def stats(self, *, keys: bool = False) -> dict[str, Any]:
        async def read() -> dict[str, Any]:
            return self.sim.stats(keys=keys)

        return asyncio.run_coroutine_threadsafe(read(), self.loop).result(10)

    def stop(self) -> None:
        """Stop serving: requests under way are cut, new connections are refused."""
        if not self.stopped:
            self.stopped = True
            asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)


@pytest.fixture
def sims() -> Iterator[Callable[..., Sim]]:
    started: list[tuple[Sim, threading.Thread]] = []

    def start(**kwargs: Any) -> Sim:
        loop = asyncio.new_event_loop()
        box: dict[str, Any] = {}
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)

            async def main() -> None:
                box["runner"], box["port"] = await serve(SimConfig(**kwargs), "127.0.0.1", 0)
                ready.set()

            loop.run_until_complete(main())
            loop.run_forever()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        assert ready.wait(10)
        runner = box["runner"]
        sim = Sim(f"http://127.0.0.1:{box['port']}/v1", runner.app[SIMULATOR], loop, runner)
        started.append((sim, thread))
        return sim

    yield start
    for sim, thread in started:
        sim.stop()
        sim.loop.call_soon_threadsafe(sim.loop.stop)
        thread.join(10)
        if not sim.loop.is_running():
            sim.loop.close()


def config(seeds: Path, db: Path, fleet: list[Sim], **kw: object) -> RunConfig:
    defaults: dict[str, object] = dict(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        db=db,
        endpoints=tuple(Endpoint(url=s.url, api_key="k") for s in fleet),
        rate=RateLimit(concurrency=64 * len(fleet)),
        retry=RetryPolicy(max_attempts=8, base_delay=0.05, max_delay=0.5),
        timeouts=Timeouts(total=5.0, read=5.0),
        progress=False,
    )
    defaults.update(kw)
    return RunConfig(**defaults)  # type: ignore[arg-type]


def spent_usd(db: Path) -> float:
    with duckdb.connect(str(db), read_only=True) as conn:
        row = conn.execute("SELECT sum(cost_usd) FROM calls").fetchone()
    return float(row[0] or 0.0) if row else 0.0


def test_three_quantised_accounts_share_one_run_with_almost_no_429s(sims, hotpot_file, tmp_path):
    fleet = [sims(rpm=rpm, quantum_s=1.0, latency_ms=20) for rpm in (600, 1200, 1800)]
    db = tmp_path / "h.duckdb"
    outcome = anyio.run(lambda: generate(config(hotpot_file(60), db, fleet)))
    assert outcome.status == "done", outcome.message
    stats = [s.stats() for s in fleet]
    requests = sum(st["requests"] for st in stats)
    assert sum(st["rate_limited"] for st in stats) <= 0.01 * requests
    assert all(st["ok"] > 0 for st in stats)  # every endpoint served
    assert spent_usd(db) == pytest.approx(sum(st["billed_usd"] for st in stats), rel=1e-9)


def test_stopping_one_endpoint_mid_run_loses_nothing(sims, hotpot_file, tmp_path, capfd):
    fleet = [sims(latency_ms=30) for _ in range(3)]
    db = tmp_path / "h.duckdb"
    budget = 2.0

    def stop_the_second() -> None:  # once it has answered a few
        deadline = time.monotonic() + 60
        while fleet[1].stats()["ok"] < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        fleet[1].stop()

    stopper = threading.Thread(target=stop_the_second)
    stopper.start()
    outcome = anyio.run(lambda: generate(config(hotpot_file(80), db, fleet, budget_usd=budget)))
    stopper.join(60)
    assert fleet[1].stopped
    assert outcome.status == "done", outcome.message
    assert outcome.stats.sampled.get("qa", 0) + outcome.stats.rejected.get("qa", 0) == 80
    billed = sum(s.stats()["billed_usd"] for s in fleet)
    # the store counts at least what the providers billed (requests cut at the stopped one
    # were consumed in full), and that is within the budget
    assert billed <= spent_usd(db) + 1e-12 <= budget
    assert fleet[0].stats()["ok"] > 0 and fleet[2].stats()["ok"] > 0
    assert "out of rotation" in capfd.readouterr().err


def test_a_resume_through_another_fleet_pays_nothing_twice(sims, hotpot_file, tmp_path):
    first, second = [sims(latency_ms=5), sims(latency_ms=5)], [sims(latency_ms=5)]
    db = tmp_path / "h.duckdb"
    seeds = hotpot_file(20)
    one = anyio.run(lambda: generate(config(seeds, db, first, limit=10)))
    assert one.status == "done", one.message
    two = anyio.run(lambda: generate(config(seeds, db, second, limit=20)))
    assert two.status == "done", two.message
    assert two.run_id == one.run_id  # another fleet, the same run
    assert two.stats.already_done.get("qa") == 10
    before = set().union(*(s.stats(keys=True)["billed_keys"] for s in first))
    after = set(second[0].stats(keys=True)["billed_keys"])
    assert after and not (before & after)  # nothing answered before was asked again


def test_kill_9_then_resume_through_another_fleet_pays_at_most_what_was_in_flight(
    sims, hotpot_file, tmp_path
):
    a, b, c = (sims(latency_ms=20, jitter_ms=40) for _ in range(3))
    seeds = hotpot_file(120)
    db = tmp_path / "h.duckdb"

    def command(*fleet: Sim) -> list[str]:
        cmd = [sys.executable, "-m", "halugen", "run", "--seeds", str(seeds), "--db", str(db)]
        cmd += ["--api-key", "k", "--budget", "1usd", "--no-progress", "--model", "gpt-4o-mini"]
        for sim in fleet:
            cmd += ["--endpoint", f"{sim.url},concurrency=24"]
        return cmd

    proc = subprocess.Popen(command(a, b), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while a.stats()["ok"] + b.stats()["ok"] < 120 and proc.poll() is None:
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    done = subprocess.run(command(c, a), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    with duckdb.connect(str(db), read_only=True) as conn:
        runs = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        n_samples, n_seeds = conn.execute(
            "SELECT count(*), count(DISTINCT seed_key) FROM sample_rows"
        ).fetchone()
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
    assert runs == 1  # another fleet resumed the same run
    assert n_samples == n_seeds > 110
    bills: Counter[str] = Counter()
    for sim in (a, b, c):
        bills.update(sim.stats(keys=True)["billed_keys"])
    twice = {k for k, v in bills.items() if v > 1}
    in_flight_at_kill = {
        hashlib.sha256(canonical_json(orjson.loads(bodies[k]))).hexdigest()
        for k in lost_keys
        if bodies.get(k)
    }
    # (a kill can drop the last half second of request bodies, kept apart from the answers:
    # a request whose body is gone cannot be matched, only counted)
    known = {
        hashlib.sha256(canonical_json(orjson.loads(body))).hexdigest()
        for body in bodies.values()
        if body
    }
    assert twice & known <= in_flight_at_kill, "a request not in flight was billed twice"
    assert len(twice) <= len(lost_keys)
    billed = sum(sim.stats()["billed_usd"] for sim in (a, b, c))
    assert c.stats()["ok"] > 0
    assert billed <= 1.0
    assert spent / 1e12 >= billed - 1e-12
