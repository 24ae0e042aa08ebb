"""Servers in virtual time for the limiter tests: quantised rate limits and a FIFO queue.

Both drive a real ``RateLimiter`` the way the call runner does (slot, observe, counted,
retry with backoff) on the virtual clock of tests/virtual_time.py, so minutes of traffic run
in milliseconds and the figures are exact. The quantised server is the simulator's own
``RateLimits`` on the loop's clock; the FIFO server stands for llama.cpp-like servers.
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass, field

from halugen.config import RateLimit
from halugen.crew import crew_size, run_crew
from halugen.errors import CallTimeout, RetryableError
from halugen.llm.limiter import RateLimiter
from halugen.simulate.limits import RateLimits


@dataclass
class Outcome:
    attempts: int = 0
    rate_limited: int = 0
    timeouts: int = 0
    ok: int = 0
    ok_tokens: int = 0  # as the server counted them (prompt + max_tokens)
    first_ok: float = math.inf
    last_ok: float = -math.inf
    elapsed: float = 0.0
    caps: list[int] = field(default_factory=list)  # the cap after every answer
    most_in_flight: int = 0  # requests in flight at once, at most
    admitted: list[tuple[float, int]] = field(default_factory=list)  # (when, tokens) of each ok

    @property
    def share_429(self) -> float:
        return self.rate_limited / self.attempts if self.attempts else 0.0

    def per_minute(self, what: str = "requests") -> float:
        """Server-side rate of admitted requests (or tokens), after the first answer.

        The first request goes alone (the probe) and the rest only once it is answered, so
        the rate runs from the second admission to the last; half of the amounts at either
        end count, as a pace that pays after sending and one that pays before would.
        """
        steady = sorted(self.admitted)[1:]
        if len(steady) < 2:
            return 0.0
        span = steady[-1][0] - steady[0][0]
        amounts = [1 if what == "requests" else n for _, n in steady]
        return (sum(amounts) - (amounts[0] + amounts[-1]) / 2) / span * 60.0


async def backoff(attempt: int, rng: random.Random) -> None:
    await asyncio.sleep(rng.uniform(0, min(60.0, 0.5 * 2**attempt)))


async def quantised_run(
    *,
    rpm: float | None = None,
    tpm: float | None = None,
    quantum_s: float | None = 1.0,
    user: RateLimit = RateLimit(),
    calls: int = 2000,
    latency: float = 0.2,
    jitter: float = 0.02,
    prompt: tuple[int, int] = (600, 1200),
    max_out: int = 256,
    margin: float = 1.25,
    seed: int = 3,
) -> Outcome:
    """``calls`` requests against a quantised account; the client charges ``margin`` x prompt."""
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    server = RateLimits(rpm, tpm, loop.time, quantum_s=quantum_s)
    limiter = RateLimiter(user, timeout=300.0)
    out = Outcome()
    todo = list(range(calls))

    async def worker() -> None:
        while todo:
            todo.pop()
            prompt_tokens = rng.randint(*prompt)
            for attempt in range(12):
                out.attempts += 1
                async with limiter.slot(int(prompt_tokens * margin) + max_out) as ticket:
                    out.most_in_flight = max(out.most_in_flight, limiter.in_flight)
                    await asyncio.sleep(rng.uniform(0, jitter))  # on the way to the server
                    admission = server.admit(prompt_tokens + max_out)
                    if admission.ok:
                        out.admitted.append((loop.time(), prompt_tokens + max_out))
                    await asyncio.sleep(latency if admission.ok else 0.002)
                    headers = dict(admission.headers)
                    if not admission.ok:
                        headers["retry-after-ms"] = str(math.ceil(admission.retry_after * 1000))
                    limiter.observe(200 if admission.ok else 429, headers)
                    if admission.ok:
                        ticket.counted(prompt_tokens + max_out)
                if admission.ok:
                    now = loop.time()
                    out.first_ok = min(out.first_ok, now)
                    out.last_ok = now
                    out.ok += 1
                    out.ok_tokens += prompt_tokens + max_out
                    break
                out.rate_limited += 1
                await backoff(attempt, rng)

    # as many workers as the cap wants, as a run's stages have (halugen/crew.py)
    await run_crew(worker, lambda: crew_size(limiter.cap))
    return out


class FifoServer:
    """``capacity`` requests served at once for ``service`` seconds each; the rest queue.

    A client that gives up leaves its request in the queue: the server serves it anyway.
    ``spread`` > 0 draws service times from a log-normal with that sigma (median ``service``).
    """

    def __init__(self, capacity: int, service: float, spread: float = 0.0, seed: int = 1) -> None:
        self._slots = asyncio.Semaphore(capacity)
        self._service = service
        self._spread = spread
        self._rng = random.Random(seed)
        self._work: set[asyncio.Task[None]] = set()
        self.served = 0

    async def _serve(self) -> None:
        async with self._slots:
            factor = self._rng.lognormvariate(0.0, self._spread) if self._spread else 1.0
            await asyncio.sleep(self._service * factor)
            self.served += 1

    async def request(self) -> None:
        task = asyncio.ensure_future(self._serve())
        self._work.add(task)
        task.add_done_callback(self._work.discard)
        await asyncio.shield(task)


async def capacity_run(
    server: FifoServer,
    *,
    calls: int,
    concurrency: int | None = None,
    timeout: float = 300.0,
    max_attempts: int = 8,
    seed: int = 5,
) -> Outcome:
    """``calls`` requests through a limiter at ``concurrency`` against ``server``."""
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    limiter = RateLimiter(RateLimit(concurrency=concurrency), timeout=timeout)
    out = Outcome()
    todo = list(range(calls))
    started = loop.time()

    async def worker() -> None:
        while todo:
            todo.pop()
            for attempt in range(max_attempts):
                out.attempts += 1
                try:
                    async with limiter.slot(100):
                        out.most_in_flight = max(out.most_in_flight, limiter.in_flight)
                        try:
                            async with asyncio.timeout(timeout):
                                await server.request()
                        except TimeoutError:
                            # what the transports raise: no answer, the work may be under way
                            raise CallTimeout("no answer", billed_maybe=True) from None
                        limiter.observe(200, {})
                        out.caps.append(limiter.snapshot().concurrency)
                except RetryableError:
                    out.timeouts += 1
                    await backoff(attempt, rng)
                    continue
                out.ok += 1
                break

    await run_crew(worker, lambda: crew_size(limiter.cap))
    out.elapsed = loop.time() - started
    return out
