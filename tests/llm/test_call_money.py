"""The call runner's money at the edges, against an in-process simulator:

- a reservation is durable only once its request leaves (after its rate-limit slot), so the
  open reservations a kill would leave are the requests at the provider;
- closing the outbox (the first Ctrl-C) releases every queued call at $0 and sends nothing
  more, while the requests at the provider finish;
- the first call goes alone, so a provider that counts more tokens than we estimate
  overshoots one reservation, not a whole wave of them; the overshoot is recorded;
- a provider that stays unreachable stops the run after a window of failed connections
  (counted on a fake clock, not timed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from halugen.budget import Ledger, PromptMargin
from halugen.config import Endpoint, RetryPolicy
from halugen.cost.prices import find_price
from halugen.errors import EndpointUnreachable, Interrupted
from halugen.llm.calls import CallFailure, CallRunner
from halugen.llm.pool import EndpointPool
from halugen.llm.transport import HandlerTransport
from halugen.records import ChatRequest, ChatResult
from halugen.simulate import SimConfig, Simulator
from halugen.stats import RunStats
from halugen.store.db import Store, open_store
from halugen.tokens import get_counter

RUN = "r-money"


class Gate:
    """The simulator's latency: after the first request (the limiter sends one alone until
    the server has answered), each request waits until the test opens the gate."""

    def __init__(self, want: int) -> None:
        self.open = asyncio.Event()
        self.entered = 0
        self.want = want
        self.reached = asyncio.Event()  # ``want`` requests wait inside the simulator

    async def __call__(self, seconds: float) -> None:
        self.entered += 1
        if self.entered == 1:
            return
        if self.entered - 1 >= self.want:
            self.reached.set()
        await self.open.wait()


def _runner(
    sim: Simulator,
    store: Store,
    *,
    concurrency: int,
    budget: int | None = None,
    margin: PromptMargin | None = None,
    retry: RetryPolicy = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.002),
    clock: Callable[[], float] | None = None,
    notes: list[str] | None = None,
) -> CallRunner:
    pool = EndpointPool(
        [Endpoint(url="http://sim/v1", api_key="k", concurrency=concurrency)],
        transport=HandlerTransport(sim.handle),
    )
    price = find_price("gpt-4o-mini")
    assert price is not None
    return CallRunner(
        run_id=RUN,
        pool=pool,
        ledger=Ledger(budget),
        price=price,
        counter=get_counter(price.tokenizer),
        store=store,
        stats=RunStats(),
        retry=retry,
        margin=margin,
        clock=clock,
        notify=(notes.append if notes is not None else None),
    )


def _calibrated() -> PromptMargin:
    margin = PromptMargin()
    margin.observe(100, 100)  # as if an earlier answer had taught the ratio
    return margin


def _request(i: int, max_tokens: int = 64) -> ChatRequest:
    text = (
        f"Question {i}: which river flows through the town of Vallona{i}, where the painter "
        f"Aldo Brun{i} was born? Knowledge: the Serin{i} flows through Vallona{i}."
    )
    return ChatRequest(
        model="gpt-4o-mini",
        messages=({"role": "user", "content": text},),
        max_tokens=max_tokens,
        index=i,
    )


def _run(tmp_path: Path, scenario: Callable[[Store], Any]) -> Any:
    store = open_store(tmp_path / "h.duckdb")
    try:
        return asyncio.run(scenario(store))
    finally:
        store.close()


async def _six_calls_two_at_the_provider(
    sim: Simulator, gate: Gate, store: Store
) -> tuple[CallRunner, list[asyncio.Task[ChatResult | CallFailure]]]:
    """Six calls through a concurrency of 2: two wait inside the simulator, four for a slot.

    One call goes first and alone: the limiter sends one request until the server has
    answered (and announced its limits, which opens the cap to the concurrency).
    """
    runner = _runner(sim, store, concurrency=2, margin=_calibrated())
    await runner.call(_request(100), stage="sample", task="qa")
    calls = [
        asyncio.create_task(runner.call(_request(i), stage="sample", task="qa")) for i in range(6)
    ]
    await gate.reached.wait()
    return runner, calls


def _gated() -> tuple[Gate, Simulator]:
    gate = Gate(want=2)
    return gate, Simulator(SimConfig(latency_ms=1, sleep=gate, rpm=1e6))


def test_reservations_are_durable_only_for_requests_at_the_provider(tmp_path: Path) -> None:
    gate, sim = _gated()

    async def scenario(store: Store) -> None:
        runner, calls = await _six_calls_two_at_the_provider(sim, gate, store)
        # two requests at the simulator (the concurrency), four waiting for a slot: what a
        # kill -9 now would leave counted as spent is the two, not the six
        assert sim.stats(keys=False)["in_flight"] == 2
        assert runner.outbox.at_provider == 2 and runner.outbox.waiting == 4
        # the durable writers the store's writer waits for: the two between slot and answer
        assert runner.writing == 2
        assert len(store.open_reservations(RUN)) == 2
        assert runner.ledger.queued > 0  # the four hold money in memory only
        assert runner.ledger.at_provider == sum(r[2] for r in store.open_reservations(RUN))
        gate.open.set()
        results = await asyncio.gather(*calls)
        assert all(isinstance(r, ChatResult) for r in results)
        store.writer.flush_blocking()
        assert store.open_reservations(RUN) == []
        assert runner.ledger.reserved == 0 and runner.ledger.queued == 0
        assert runner.writing == 0

    _run(tmp_path, scenario)
    assert sim.stats(keys=False)["billed_requests"] == 1 + 6


def test_closing_the_outbox_releases_queued_calls_and_sends_nothing_more(tmp_path: Path) -> None:
    gate, sim = _gated()

    async def scenario(store: Store) -> None:
        runner, calls = await _six_calls_two_at_the_provider(sim, gate, store)
        at_provider, released = runner.outbox.close()
        assert (at_provider, released) == (2, 4)
        # the four queued calls end at once, before the two at the provider are answered
        for _ in range(1000):  # turns of the event loop, not time: nothing real is awaited
            if sum(t.done() for t in calls) >= 4:
                break
            await asyncio.sleep(0)
        stopped = [t for t in calls if t.done()]
        assert len(stopped) == 4 and all(isinstance(t.exception(), Interrupted) for t in stopped)
        assert runner.ledger.queued == 0
        assert runner.ledger.reserved == runner.ledger.at_provider > 0
        with pytest.raises(Interrupted):  # nothing new starts either
            await runner.call(_request(99), stage="sample", task="qa")
        gate.open.set()
        answered = [await t for t in calls if t not in stopped]
        assert len(answered) == 2 and all(isinstance(r, ChatResult) for r in answered)
        store.writer.flush_blocking()
        rows = store.query(
            "SELECT status, count(*), sum(cost_usd), sum(reserved_usd) FROM calls "
            "WHERE run_id = ? GROUP BY status ORDER BY status",
            [RUN],
        )
        assert [(r[0], r[1]) for r in rows] == [("cancelled", 4), ("ok", 1 + 2)]
        assert rows[0][2] == 0 and rows[0][3] == 0  # released at $0, nothing reserved durably
        assert store.open_reservations(RUN) == []

    _run(tmp_path, scenario)
    stats = sim.stats(keys=False)
    assert stats["requests"] == 1 + 2 and stats["billed_requests"] == 1 + 2  # nothing more


def test_the_first_call_goes_alone_so_only_it_overshoots(tmp_path: Path) -> None:
    # the provider counts 1.6x our tokens; replies are cut at max_tokens, so a reservation's
    # output part leaves no slack and every uncalibrated reservation is too small
    sim = Simulator(SimConfig(usage_scale=1.6))
    notes: list[str] = []

    async def scenario(store: Store) -> CallRunner:
        runner = _runner(sim, store, concurrency=8, notes=notes)
        results = await asyncio.gather(
            *(runner.call(_request(i, max_tokens=4), stage="sample", task="qa") for i in range(8))
        )
        assert all(isinstance(r, ChatResult) for r in results)
        store.writer.flush_blocking()
        over = store.query(
            "SELECT count(*), sum(overshoot_usd), min(prompt_ratio) FROM overshoots "
            "WHERE run_id = ?",
            [RUN],
        )[0]
        assert over[0] == 1 and over[1] > 0 and over[2] > 1.5
        return runner

    runner = _run(tmp_path, scenario)
    assert runner.ledger.overshoots == 1 and runner.ledger.overshoot > 0
    assert runner.margin.ratio > 1.5
    assert len(notes) == 1 and "prompt tokens where" in notes[0]
    note = runner.ledger.overshoot_note()
    assert note is not None and "1 call(s) cost more than was reserved" in note
    # every bill is the simulator's: what it billed is what the ledger spent
    billed = round(sim.stats(keys=False)["billed_usd"] * 1e12)
    assert abs(runner.ledger.spent - billed) <= 8  # rounding of per-token prices


def test_an_endpoint_gone_for_good_stops_after_the_window(tmp_path: Path) -> None:
    sim = Simulator(SimConfig(down_after=1))
    ticks = iter(range(0, 10_000, 10))  # every reading of the clock is 10 s later

    async def scenario(store: Store) -> None:
        retry = RetryPolicy(max_attempts=1000, base_delay=0.0, max_delay=0.0, unreachable_after=60)
        runner = _runner(sim, store, concurrency=1, retry=retry, clock=lambda: float(next(ticks)))
        first = await runner.call(_request(0), stage="sample", task="qa")
        assert isinstance(first, ChatResult)  # reached once: from now on it is "gone"
        with pytest.raises(EndpointUnreachable) as info:
            await runner.call(_request(1), stage="sample", task="qa")
        assert "stopped answering" in str(info.value) and "kept" in str(info.value)

    _run(tmp_path, scenario)
    # failures at 0, 10, ..., 60 s: the seventh is 60 s after the first
    assert sim.stats(keys=False)["refused"] == 7


def test_an_answer_restarts_the_window(tmp_path: Path) -> None:
    from halugen.errors import ConnectFailed
    from halugen.llm.reach import Reachability

    now = [0.0]
    reach = Reachability("http://x/v1", window=60, clock=lambda: now[0])
    refused = ConnectFailed("refused")
    reach.connect_failed(refused)  # never reached: not this check's business
    reach.answered()
    for t in (10.0, 50.0):
        now[0] = t
        reach.connect_failed(refused)
    now[0] = 65.0
    reach.answered()  # one worker got an answer: the provider is there
    now[0] = 100.0
    reach.connect_failed(refused)
    now[0] = 159.0
    reach.connect_failed(refused)
    now[0] = 160.0
    with pytest.raises(EndpointUnreachable):
        reach.connect_failed(refused)


def test_a_failed_call_is_a_value_not_a_stop(tmp_path: Path) -> None:
    # the server answers, with errors: the call fails on its attempts and the run goes on
    # (refused connections no longer use up attempts while the window runs: test_reach.py)
    sim = Simulator(SimConfig(fail_rate=1.0, faults=("503",)))
    ticks = iter(range(10_000))

    async def scenario(store: Store) -> None:
        retry = RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0, unreachable_after=60)
        runner = _runner(sim, store, concurrency=1, retry=retry, clock=lambda: float(next(ticks)))
        failed = await runner.call(_request(1), stage="sample", task="qa")
        assert isinstance(failed, CallFailure) and failed.status == 503
        assert runner.writing == 0  # its attempts closed their reservations and stopped

    _run(tmp_path, scenario)
