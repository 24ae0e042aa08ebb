"""Whole generation runs over loopback HTTP against the simulator's quantised and capacity modes.

No timing assertions: what is checked is the share of 429s the simulator counted, the
attempts per call, that nothing timed out and that every seed was done. The rates achieved
are printed by bench/ratelimits.py; the virtual-time tests in test_limiter.py check them.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import duckdb
import pytest

from halugen.config import RateLimit, RetryPolicy, RunConfig, Timeouts
from halugen.engine import generate


def config(base_url: str, seeds: Path, db: Path, **kw: object) -> RunConfig:
    defaults: dict[str, object] = dict(
        tasks=("qa",),
        seeds=(str(seeds),),
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="test-key",
        db=db,
        retry=RetryPolicy(max_attempts=8, base_delay=0.05, max_delay=1.0),
        timeouts=Timeouts(total=5.0, read=5.0),
        progress=False,
    )
    defaults.update(kw)
    return RunConfig(**defaults)  # type: ignore[arg-type]


def calls(db: Path) -> tuple[int, int, int]:
    """(calls, largest attempts of one call, calls that failed)."""
    with duckdb.connect(str(db), read_only=True) as conn:
        row = conn.execute(
            "SELECT count(*), max(attempts), count(*) FILTER (WHERE status = 'failed') FROM calls"
        ).fetchone()
    assert row is not None
    return row


@pytest.mark.parametrize(
    ("limits", "user"),
    [
        ({"rpm": 2400}, RateLimit()),  # learned from the headers
        ({"rpm": 2400}, RateLimit(rpm=100_000)),  # a user limit far too high
        ({"rpm": 100_000, "tpm": 2_000_000}, RateLimit()),  # tokens bound
        ({"rpm": 100_000, "tpm": 2_000_000}, RateLimit(tpm=10**9)),
    ],
    ids=["rpm-learned", "rpm-too-high", "tpm-learned", "tpm-too-high"],
)
def test_a_run_against_one_second_quantisation_gets_almost_no_429s(
    simulator, hotpot_file, tmp_path, limits, user
):
    # 2,400 rpm quantised to a second is 40 a second: firing the default 64 at once (or
    # pacing to 100,000 rpm) is answered 429 at once
    sim = simulator(quantum_s=1.0, latency_ms=20, **limits)
    db = tmp_path / "h.duckdb"
    outcome = anyio.run(lambda: generate(config(sim.base_url, hotpot_file(50), db, rate=user)))
    assert outcome.status == "done", outcome.message
    stats = sim.stats(keys=False)
    assert stats["rate_limited"] <= 0.01 * stats["requests"]
    n, _, failed = calls(db)
    assert failed == 0
    assert n == stats["ok"] > 100


def test_a_one_at_a_time_server_at_the_default_concurrency_never_times_out(
    simulator, hotpot_file, tmp_path
):
    # llama.cpp's server: one slot, n ignored. 32 seeds put 32 requests in flight at the
    # default concurrency; at 50 ms each the last would queue for 1.6 s, past a 1 s timeout,
    # and every retry would queue behind the abandoned ones. (test_limiter.py runs the same
    # in virtual time against --timeout 300 with 10 s per request.)
    sim = simulator(capacity=1, honour_n=False, latency_ms=50)
    db = tmp_path / "h.duckdb"
    cfg = config(
        sim.base_url,
        hotpot_file(32),
        db,
        rate=RateLimit(concurrency=64),
        timeouts=Timeouts(total=1.0, read=1.0),
    )
    outcome = anyio.run(lambda: generate(cfg))
    assert outcome.status == "done", outcome.message
    stats = sim.stats(keys=False)
    assert stats["abandoned"] == 0  # no client gave up on a queued request
    assert stats["max_busy"] == 1
    n, most_attempts, failed = calls(db)
    assert (failed, most_attempts) == (0, 1)  # no timeouts, no retries
    assert stats["requests"] == stats["billed_requests"] == n


@pytest.mark.parametrize("announce", [True, False], ids=["slots-said", "slots-unsaid"])
def test_a_server_that_says_its_slots_gets_no_more_than_them(
    simulator, hotpot_file, tmp_path, announce
):
    # llama.cpp with -np 2: GET /props says total_slots 2; requests beyond wait in its queue
    sim = simulator(capacity=2, announce_slots=announce, latency_ms=30)
    db = tmp_path / "h.duckdb"
    outcome = anyio.run(lambda: generate(config(sim.base_url, hotpot_file(24), db)))
    assert outcome.status == "done", outcome.message
    stats = sim.stats(keys=False)
    # (a request passes the queue on its way to a free slot: 1 is no wait)
    if announce:
        assert stats["max_queued"] <= 1  # never more in flight than it serves at once
    else:
        assert stats["max_queued"] > 1, stats  # the cap found the slots by queueing past them
