"""A provider that is gone or frozen stops the run; one being restarted does not fail calls.

Counted on fake clocks (every reading of the clock is a tick later), never timed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from halugen.budget import Ledger
from halugen.config import Endpoint, RetryPolicy
from halugen.cost.prices import find_price
from halugen.errors import CallTimeout, ConnectFailed, EndpointUnreachable
from halugen.llm.calls import CallFailure, CallRunner
from halugen.llm.pool import EndpointPool
from halugen.llm.reach import FROZEN_AFTER, Reachability
from halugen.llm.transport import HandlerTransport
from halugen.records import ChatRequest, ChatResult
from halugen.simulate import SimConfig, Simulator
from halugen.stats import RunStats
from halugen.store.db import open_store
from halugen.tokens import get_counter


def _timeout(waited: float) -> CallTimeout:
    return CallTimeout(f"timeout: no answer within {waited:g} s (raise --timeout)", waited=waited)


def test_timeouts_in_a_row_with_nothing_answered_for_the_window_mean_frozen() -> None:
    now = [0.0]
    reach = Reachability("http://x/v1", window=60, clock=lambda: now[0])
    for step in range(FROZEN_AFTER - 1):
        now[0] = 100.0 + step
        reach.timed_out(_timeout(50))  # silent since 50 s: past the window, too few yet
    now[0] = 120.0
    with pytest.raises(EndpointUnreachable) as info:
        reach.timed_out(_timeout(50))
    message = str(info.value)
    assert "http://x/v1 accepted connections but answered none of the last" in message
    assert f"last {FROZEN_AFTER} requests" in message and "within 50 s" in message
    assert "--unreachable-after" in message and "\n" not in message


def test_an_answer_between_timeouts_says_the_server_is_there() -> None:
    now = [0.0]
    reach = Reachability("http://x/v1", window=60, clock=lambda: now[0])
    for t in range(100, 1000, 10):
        now[0] = float(t)
        reach.timed_out(_timeout(300))  # a slow server: its other requests are answered
        if t % 20 == 0:
            reach.answered()


def test_many_timeouts_inside_the_window_are_not_frozen() -> None:
    now = [0.0]
    reach = Reachability("http://x/v1", window=60, clock=lambda: now[0])
    reach.answered()
    for step in range(50):  # 50 timeouts of 0.5 s, all within 30 s of the last answer
        now[0] = 5.0 + step * 0.5
        reach.timed_out(_timeout(0.5))


def test_refusals_count_against_attempts_only_before_the_first_answer() -> None:
    reach = Reachability("http://x/v1", window=60, clock=lambda: 0.0)
    refused = ConnectFailed("refused")
    assert reach.counts_attempt(refused)  # a wrong --base-url still stops soon
    reach.answered()
    assert not reach.counts_attempt(refused)  # a restart: the window decides
    assert reach.counts_attempt(_timeout(1))


def test_a_server_restarted_inside_the_window_fails_no_call(tmp_path: Path) -> None:
    # it answers once, then refuses 6 connections and is back; 3 attempts a call
    sim = Simulator(SimConfig(down_after=1, back_after=6))
    ticks = iter(range(10_000))
    retry = RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0, unreachable_after=60)
    price = find_price("gpt-4o-mini")
    assert price is not None
    store = open_store(tmp_path / "h.duckdb")

    def request(i: int) -> ChatRequest:
        content = f"Question {i}: which river flows through Vallona{i}?"
        return ChatRequest(
            model="gpt-4o-mini", messages=({"role": "user", "content": content},), index=i
        )

    async def scenario() -> tuple[ChatResult | CallFailure, ChatResult | CallFailure]:
        runner = CallRunner(
            run_id="r-reach",
            pool=EndpointPool(
                [Endpoint(url="http://sim/v1", api_key="k", concurrency=1)],
                transport=HandlerTransport(sim.handle),
            ),
            ledger=Ledger(None),
            price=price,
            counter=get_counter(price.tokenizer),
            store=store,
            stats=RunStats(),
            retry=retry,
            clock=lambda: float(next(ticks)),
        )
        first = await runner.call(request(0), stage="sample", task="qa")
        second = await runner.call(request(1), stage="sample", task="qa")
        return first, second

    try:
        first, second = asyncio.run(scenario())
    finally:
        store.close()
    assert isinstance(first, ChatResult)
    assert isinstance(second, ChatResult), second  # not failed after its 3 attempts
    assert sim.stats(keys=False)["refused"] == 6
