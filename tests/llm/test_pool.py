"""The endpoint pool in process and on a virtual clock: routing by room and weight, endpoints
taken out of rotation and back, a 401 from one of several, the fleet's snapshot."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter
from collections.abc import Mapping

import pytest

from halugen.config import Endpoint, Timeouts
from halugen.crew import crew_size, run_crew
from halugen.errors import AuthError, ConnectFailed, RetryableError
from halugen.llm.capacity import NEED_HEADROOM, NEED_MARGIN
from halugen.llm.pool import FAILURES_IN_A_ROW, OUT_OF_ROTATION_S, EndpointPool
from halugen.llm.transport import HandlerTransport, HttpResponse
from halugen.records import ChatRequest
from halugen.simulate import SimConfig, Simulator
from tests.virtual_time import run_virtual


def request(i: int) -> ChatRequest:
    return ChatRequest(
        model="sim-model",
        messages=({"role": "user", "content": f"Say something about item {i}."},),
        temperature=0.0,
        max_tokens=16,
    )


class Fleet:
    """In-process simulators behind one transport, by host; a host can refuse connections."""

    def __init__(self, **sims: Simulator) -> None:
        self.sims = sims
        self.refusing: set[str] = set()
        self.sent: Counter[str] = Counter()

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse:
        host = url.split("://", 1)[1].split("/", 1)[0]
        if host in self.refusing:
            raise ConnectFailed("cannot connect: refused", billed_maybe=False)
        self.sent[host] += 1
        return await HandlerTransport(self.sims[host].handle).post(url, headers, body, timeouts)

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        return HttpResponse(404, {}, b"{}")

    async def aclose(self) -> None:
        return None


def pool_of(fleet: Fleet, *endpoints: Endpoint, notes: list[str] | None = None) -> EndpointPool:
    return EndpointPool(
        endpoints,
        transport=fleet,
        timeouts=Timeouts(total=30.0),
        notify=(notes.append if notes is not None else None),
    )


async def send(pool: EndpointPool, i: int) -> object:
    req = request(i)
    return await pool.send(req, body=pool.body(req), tokens=100)


def test_calls_go_where_there_is_room_and_share_by_weight() -> None:
    async def main() -> tuple[Counter[str], Counter[str]]:
        fleet = Fleet(
            a=Simulator(SimConfig(latency_ms=1000)),
            b=Simulator(SimConfig(latency_ms=1000)),
            c=Simulator(SimConfig(latency_ms=1000)),
        )
        pool = pool_of(
            fleet,
            Endpoint(url="http://a/v1", concurrency=1),
            Endpoint(url="http://b/v1", concurrency=64, weight=3),
            Endpoint(url="http://c/v1", concurrency=64, weight=1),
        )
        await send(pool, 0)
        first = Counter(fleet.sent)  # all have room: the least loaded for its weight
        await asyncio.gather(*(send(pool, i) for i in range(1, 400)))  # caps grow
        fleet.sent.clear()
        await asyncio.gather(*(send(pool, i) for i in range(1000, 1040)))  # 40 at once
        return first, fleet.sent

    first, at_once = run_virtual(main())
    assert first == {"b": 1}
    assert at_once["a"] == 1  # its cap: no room for more
    assert at_once["b"] == pytest.approx(3 * at_once["c"], abs=3)  # the rest by weight


def test_every_endpoint_learns_its_own_limits() -> None:
    async def main() -> EndpointPool:
        fleet = Fleet(a=Simulator(SimConfig(rpm=600)), b=Simulator(SimConfig(rpm=1200)))
        pool = pool_of(fleet, Endpoint(url="http://a/v1"), Endpoint(url="http://b/v1"))
        await asyncio.gather(*(send(pool, i) for i in range(30)))
        return pool

    pool = run_virtual(main())
    a, b = (m.limiter.snapshot().rpm_limit for m in pool.members)
    assert (a, b) == (pytest.approx(600 * 0.97), pytest.approx(1200 * 0.97))
    assert pool.snapshot().rpm_limit == pytest.approx(1800 * 0.97)


def test_a_refusing_endpoint_is_taken_out_then_tried_again_later() -> None:
    async def main() -> tuple[list[str], Counter[str], list[str]]:
        fleet = Fleet(a=Simulator(SimConfig()), b=Simulator(SimConfig()))
        notes: list[str] = []
        pool = pool_of(fleet, Endpoint(url="http://a/v1"), Endpoint(url="http://b/v1"), notes=notes)
        fleet.refusing.add("a")
        outcomes = []
        for i in range(20):
            try:
                await send(pool, i)
                outcomes.append("ok")
            except RetryableError:
                outcomes.append("retry")  # the call runner would try it again elsewhere
        during = list(notes)
        fleet.refusing.clear()
        fleet.sent.clear()
        await asyncio.sleep(OUT_OF_ROTATION_S)
        for i in range(20, 40):
            await send(pool, i)
        return outcomes, fleet.sent, during + notes[len(during) :]

    outcomes, after, notes = run_virtual(main())
    assert outcomes.count("retry") == 1  # one refused connection, then b alone
    assert "out of rotation for 5 s" in notes[0] and "http://a/v1" in notes[0]
    assert "the other endpoints carry on" in notes[0]
    assert after["a"] > 0  # tried again after the pause, and answered
    assert notes[-1] == "endpoint http://a/v1 is back in rotation"


def test_a_burst_of_server_errors_takes_an_endpoint_out() -> None:
    async def main() -> tuple[Counter[str], list[str]]:
        fleet = Fleet(
            a=Simulator(SimConfig(fail_rate=1.0, faults=("503",))),
            b=Simulator(SimConfig()),
        )
        notes: list[str] = []
        pool = pool_of(fleet, Endpoint(url="http://a/v1"), Endpoint(url="http://b/v1"), notes=notes)
        for i in range(30):
            with contextlib.suppress(RetryableError):
                await send(pool, i)
        return fleet.sent, notes

    sent, notes = run_virtual(main())
    assert sent["a"] == FAILURES_IN_A_ROW
    assert sent["b"] == 30 - FAILURES_IN_A_ROW
    assert len(notes) == 1 and f"{FAILURES_IN_A_ROW} failures in a row" in notes[0]


def test_a_401_from_one_endpoint_is_retried_elsewhere_and_from_the_last_one_stops() -> None:
    async def main() -> tuple[list[str], str]:
        fleet = Fleet(
            a=Simulator(SimConfig(api_key="right")),
            b=Simulator(SimConfig(api_key="right")),
        )
        pool = pool_of(
            fleet,
            Endpoint(url="http://a/v1", api_key="wrong"),
            Endpoint(url="http://b/v1", api_key="right"),
        )
        outcomes = []
        for i in range(6):
            try:
                await send(pool, i)
                outcomes.append("ok")
            except AuthError:
                outcomes.append("auth")
            except RetryableError:
                outcomes.append("retry")
        lone = pool_of(Fleet(a=fleet.sims["a"]), Endpoint(url="http://a/v1", api_key="wrong"))
        try:
            await send(lone, 99)
            last = "ok"
        except AuthError:
            last = "auth"
        return outcomes, last

    outcomes, last = run_virtual(main())
    assert outcomes.count("retry") == 1 and "auth" not in outcomes
    assert last == "auth"  # nowhere else to go: the run stops, as with one endpoint


def test_a_single_endpoint_is_never_taken_out() -> None:
    async def main() -> tuple[list[str], list[str]]:
        fleet = Fleet(a=Simulator(SimConfig()))
        fleet.refusing.add("a")
        notes: list[str] = []
        pool = pool_of(fleet, Endpoint(url="http://a/v1"), notes=notes)
        outcomes = []
        for i in range(5):
            try:
                await send(pool, i)
            except RetryableError:
                outcomes.append("retry")
        return outcomes, notes

    outcomes, notes = run_virtual(main())
    assert outcomes == ["retry"] * 5 and notes == []


def test_azure_style_endpoint_in_a_fleet() -> None:
    async def main() -> Counter[str]:
        fleet = Fleet(
            a=Simulator(SimConfig(api_key="k1", latency_ms=100)),
            b=Simulator(SimConfig(api_key="k2", auth="api-key", latency_ms=100)),
        )
        pool = pool_of(
            fleet,
            Endpoint(url="http://a/v1", api_key="k1"),
            Endpoint(url="http://b/v1", api_key="k2", auth="api-key"),
        )
        await asyncio.gather(*(send(pool, i) for i in range(20)))
        return Counter({h: s.stats()["ok"] for h, s in fleet.sims.items()})

    answered = run_virtual(main())
    assert answered["a"] > 0 and answered["b"] > 0
    assert answered["a"] + answered["b"] == 20


def test_the_snapshot_counts_the_pools_waiters_and_sums_the_fleet() -> None:
    async def main() -> tuple[object, object]:
        one = pool_of(Fleet(a=Simulator(SimConfig(latency_ms=1000))), Endpoint(url="http://a/v1"))
        tasks = [asyncio.create_task(send(one, i)) for i in range(5)]
        await asyncio.sleep(0.5)  # the first is in flight (probing), four wait
        single = one.snapshot()
        await asyncio.gather(*tasks)
        fleet = pool_of(
            Fleet(a=Simulator(SimConfig(rpm=600)), b=Simulator(SimConfig())),
            Endpoint(url="http://a/v1", concurrency=8),
            Endpoint(url="http://b/v1", concurrency=4),
        )
        await asyncio.gather(*(send(fleet, i) for i in range(4)))
        return single, fleet.snapshot()

    single, fleet = run_virtual(main())
    assert (single.in_flight, single.waiting) == (1, 4)  # type: ignore[attr-defined]
    assert fleet.max_concurrency == 12  # type: ignore[attr-defined]
    assert fleet.rpm_limit == pytest.approx(600 * 0.97)  # type: ignore[attr-defined]


# -- concurrency that follows the limits, and what binds the pace ----------------------------------


async def drive(pool: EndpointPool, calls: int) -> tuple[int, list[str]]:
    """``calls`` calls with workers as the stages have them (halugen/crew.py); returns the
    most in flight at once and what bound the pace, read once a second."""
    todo = iter(range(calls))
    peak = 0
    verdicts: list[str] = []

    async def worker() -> None:
        nonlocal peak
        for i in todo:
            req = request(i)
            async with pool.slot(100) as attempt:
                peak = max(peak, sum(m.limiter.in_flight for m in pool.members))
                await attempt.send(req, body=pool.body(req))

    async def watch() -> None:
        while True:
            await asyncio.sleep(1.0)
            verdicts.append(pool.snapshot().bound_by)

    watcher = asyncio.create_task(watch())
    await run_crew(worker, lambda: crew_size(pool.wanted()))
    watcher.cancel()
    return peak, verdicts


def quantised(rpm: float, latency_ms: float) -> Simulator:
    clock = asyncio.get_running_loop().time
    return Simulator(SimConfig(rpm=rpm, quantum_s=1.0, latency_ms=latency_ms, clock=clock))


def test_known_limits_and_long_answers_take_as_many_in_flight_as_the_limit_needs() -> None:
    # 6,000 requests/min answered in 5 s need 500 in flight; 64 at once reached 13%
    async def main() -> tuple[int, list[str], dict]:
        fleet = Fleet(a=quantised(6000, 5000))
        pool = pool_of(fleet, Endpoint(url="http://a/v1"))
        peak, verdicts = await drive(pool, 4000)
        return peak, verdicts, fleet.sims["a"].stats(keys=False)

    peak, verdicts, stats = run_virtual(main())
    assert stats["rate_limited"] == 0
    assert 450 <= peak <= 1000  # 500 needed
    steady = verdicts[10:-10]  # past the first answer and the ramp, before the tail
    assert steady and all(v == "limit" for v in steady), verdicts


def test_a_lower_j_binds_and_is_reported_as_binding() -> None:
    async def main() -> tuple[int, list[str]]:
        pool = pool_of(Fleet(a=quantised(6000, 5000)), Endpoint(url="http://a/v1", concurrency=100))
        return await drive(pool, 1500)

    peak, verdicts = run_virtual(main())
    assert peak == 100
    steady = verdicts[10:-10]
    assert steady and all(v == "-j" for v in steady), verdicts


def test_a_one_slot_server_is_not_flooded_and_its_capacity_is_reported_as_binding() -> None:
    async def main() -> tuple[int, list[str], dict]:
        fleet = Fleet(a=Simulator(SimConfig(capacity=1, honour_n=False, latency_ms=250)))
        pool = pool_of(fleet, Endpoint(url="http://a/v1"))
        peak, verdicts = await drive(pool, 120)
        return peak, verdicts, fleet.sims["a"].stats(keys=False)

    peak, verdicts, stats = run_virtual(main())
    assert peak <= 12  # slow start stops once 250 ms answers queue past a second
    assert stats["abandoned"] == 0 and stats["requests"] == 120
    steady = verdicts[5:-5]
    assert steady and all(v == "server" for v in steady), verdicts


def test_the_workers_follow_the_caps() -> None:
    async def main() -> tuple[int, int]:
        fleet = Fleet(a=quantised(6000, 5000), b=quantised(600, 5000))
        pool = pool_of(fleet, Endpoint(url="http://a/v1"), Endpoint(url="http://b/v1"))
        before = pool.wanted()  # both probing: one each
        await drive(pool, 200)
        return before, pool.wanted()

    before, after = run_virtual(main())
    assert before == 2
    needs = [math.ceil(NEED_MARGIN * rpm * 0.97 / 60 * 5.0) + NEED_HEADROOM for rpm in (6000, 600)]
    assert after == pytest.approx(sum(needs), abs=20)
