"""A kill on a tight budget loses at most the in-flight share of it (the simulator's bill)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from halugen.store.db import open_store

BUDGET_USD = 0.02


def _command(base_url: str, seeds: object, db: object, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "halugen", "run", "--seeds", str(seeds), "--base-url", base_url,
        "--api-key", "k", "--db", str(db), "--budget", f"{BUDGET_USD}usd", "--concurrency", "64",
        "--no-progress", "--model", "gpt-4o-mini", "--max-tokens", "2048", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize("share", [0.25, 0.5])
def test_a_kill_on_a_tight_budget_loses_at_most_the_in_flight_share(
    simulator, hotpot_file, tmp_path, share
):
    # announced limits: the cap goes at once to what the pace needs at this latency (-j 64)
    sim = simulator(latency_ms=1000, jitter_ms=100, rpm=12_000)
    db = tmp_path / "h.duckdb"
    cmd = _command(sim.base_url, hotpot_file(200), db, "--in-flight-share", str(share))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # wait for events: answers in, and many requests at the provider at once
    while not (sim.stats(keys=False)["ok"] >= 1 and sim.stats(keys=False)["in_flight"] >= 3):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    while sim.stats(keys=False)["in_flight"]:  # what was sent is answered (and billed)
        assert time.monotonic() < deadline + 60
        time.sleep(0.01)
    billed = sim.stats(keys=False)["billed_usd"]
    open_store(db, serve_reads=False).close()  # what the kill left in the journal is fed
    with duckdb.connect(str(db), read_only=True) as conn:
        # what the store counts as spent after the kill: closed money, and every reservation
        # left open (a resume counts those as spent: the provider may have billed them)
        closed, still_open = conn.execute(
            "SELECT coalesce(sum(pusd) FILTER (WHERE event IN ('settle', 'consume')), 0), "
            "coalesce(sum(pusd) FILTER (WHERE event = 'reserve' AND NOT EXISTS ("
            "  SELECT 1 FROM ledger c WHERE c.call_id = ledger.call_id "
            "  AND c.res_no = ledger.res_no AND c.event <> 'reserve')), 0) FROM ledger"
        ).fetchone()
    counted = (closed + still_open) / 1e12
    assert billed <= counted + 1e-12  # the money contract: nothing billed goes uncounted
    assert still_open > 0, "nothing was in flight at the kill: it proved nothing"
    # counted as spent without being billed: at most the share of the budget
    assert counted - billed <= share * BUDGET_USD + 1e-12
