"""Money at the edges of a run, measured at the simulator (its own bill and its request count):
the first Ctrl-C sends nothing more, a foreign tokenizer does not take the bill past the
budget, a provider gone for good stops the run with what was answered kept."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import duckdb

from halugen.config import RateLimit, RetryPolicy, RunConfig, Sampling, Timeouts
from halugen.engine import generate
from halugen.llm.transport import HandlerTransport
from halugen.simulate import SimConfig, Simulator
from tests.e2e.test_money import _config as money_config

_STOPPING = re.compile(
    r"stopping: (?:(\d+) request\(s\) at the provider will finish|nothing is at the provider)"
    r".*?(?:(\d+) queued call\(s\) released at \$0|nothing was queued)"
)


def _config(seeds: Path, db: Path, **kw: object) -> RunConfig:
    return money_config("http://sim/v1", seeds, db, **{"timeouts": Timeouts(total=5), **kw})


def test_first_ctrl_c_sends_nothing_more_than_what_is_at_the_provider(
    simulator, hotpot_file, tmp_path
):
    # requests/min far below what the workers want: most calls wait for a rate-limit slot
    sim = simulator(latency_ms=300)
    db = tmp_path / "h.duckdb"
    cmd = [
        sys.executable, "-m", "halugen", "run", "--seeds", str(hotpot_file(60)),
        "--base-url", sim.base_url, "--api-key", "k", "--db", str(db), "--no-progress",
        "--model", "gpt-4o-mini", "--rpm", "120", "--concurrency", "16", "--budget", "1usd",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while sim.stats(keys=False)["requests"] < 6:  # an event: the run is paced, queue full
        assert proc.poll() is None and time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    while line and not line.startswith("stopping"):
        line = proc.stderr.readline()
    sent_when_said = sim.stats(keys=False)["requests"]  # the outbox is closed by now
    found = _STOPPING.search(line)
    assert found, line
    at_provider, released = int(found.group(1) or 0), int(found.group(2) or 0)
    rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, rest
    sent_after = sim.stats(keys=False)["requests"] - sent_when_said
    # only requests that had already left may still arrive (in transit when it was said)
    assert sent_after <= at_provider, (sent_after, line)
    assert released > 0, line  # calls were waiting for a slot, and were let go
    closing = rest.strip().splitlines()[-1]
    assert "interrupted" in closing and f"{released} queued call(s) released at $0" in closing
    with duckdb.connect(str(db), read_only=True) as conn:
        (cancelled, cancelled_cost) = conn.execute(
            "SELECT count(*), COALESCE(sum(cost_usd), 0) FROM calls WHERE status = 'cancelled'"
        ).fetchone()
        (spent,) = conn.execute("SELECT spent_usd FROM run_spend").fetchone()
        (open_reservations,) = conn.execute(
            "SELECT count(*) FROM calls WHERE status IN ('reserved', 'unsettled')"
        ).fetchone()
    assert cancelled >= released and cancelled_cost == 0  # released at $0, as said
    assert open_reservations == 0
    assert sim.stats(keys=False)["billed_usd"] <= spent + 1e-12


def test_a_provider_counting_more_tokens_stays_within_the_budget(tmp_path, hotpot_file):
    # the provider's tokenizer counts 1.6x ours and replies fill max_tokens: every
    # reservation made before its first answer is too small
    sim = Simulator(SimConfig(usage_scale=1.6))
    db = tmp_path / "h.duckdb"
    budget = 0.002
    cfg = _config(
        hotpot_file(60),
        db,
        budget_usd=budget,
        sampling=Sampling(max_tokens=12),
        judge=Sampling(temperature=0.0, max_tokens=12),
    )
    outcome = anyio.run(lambda: generate(cfg, transport=HandlerTransport(sim.handle)))
    assert outcome.status == "budget_exhausted", outcome.message
    billed = sim.stats(keys=False)["billed_usd"]
    assert billed <= budget  # the provider's own bill
    with duckdb.connect(str(db), read_only=True) as conn:
        (spent,) = conn.execute("SELECT spent_usd FROM run_spend").fetchone()
        (overshoots, over_usd) = conn.execute(
            "SELECT count(*), COALESCE(sum(overshoot_usd), 0) FROM overshoots"
        ).fetchone()
    assert billed <= spent + 1e-12 <= budget + 1e-12
    assert overshoots >= 1 and over_usd > 0  # the calibrating call overshot, on record
    assert any("cost more than was reserved" in note for note in outcome.notes), outcome.notes


def test_a_provider_gone_for_good_stops_the_run_and_keeps_the_answers(tmp_path, hotpot_file):
    # 20 requests answered, then the server is gone: every later connection is refused
    sim = Simulator(SimConfig(down_after=20))
    db = tmp_path / "h.duckdb"
    retry = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, unreachable_after=0.5)
    cfg = _config(hotpot_file(400), db, retry=retry, rate=RateLimit(concurrency=4))
    outcome = anyio.run(lambda: generate(cfg, transport=HandlerTransport(sim.handle)))
    assert outcome.status == "failed" and outcome.exit_code == 1, outcome.message
    assert "\n" not in outcome.message
    assert "stopped answering" in outcome.message and "What was answered is kept" in outcome.message
    stats = sim.stats(keys=False)
    assert stats["ok"] == 20 and stats["refused"] > 0
    with duckdb.connect(str(db), read_only=True) as conn:
        (answered,) = conn.execute("SELECT count(*) FROM calls WHERE status = 'ok'").fetchone()
        (samples,) = conn.execute("SELECT count(*) FROM sample_rows").fetchone()
        (pending,) = conn.execute(
            "SELECT count(*) FROM seed_progress WHERE outcome IN ('pending', 'failed')"
        ).fetchone()
    assert answered == 20  # every answer the provider gave is in the store
    assert samples >= 1 and pending > 0  # the rest waits for the next run
