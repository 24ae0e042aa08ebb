"""Two ways of holding an endpoint's rate limits, behind one ``send``, for bench/ratelimits.py.

- ``PacerGate``: halugen's own (llm/pool.py, llm/limiter.py, llm/pacing.py), as a run uses it.
- ``AiolimiterGate``: aiolimiter's ``AsyncLimiter`` buckets with a period of 0.1 s (the same
  tenth of a second of burst as halugen's pacer; longer when a tenth of a second holds less
  than one request, which ``acquire(1)`` refuses), a semaphore for the concurrency, and, for
  tokens, amounts acquired in chunks no larger than the bucket (``acquire`` refuses more),
  one request's chunks after the other under a FIFO lock (without it, the chunks of all the
  waiting requests interleave and they all leave together at the end). A fleet is routed
  with what aiolimiter exposes: an endpoint whose buckets have capacity now, else the one
  with the fewest requests queued for its rate.

Both are given the same pace (97% of the provider's announced limit, as halugen adopts) and
the same charge per request: halugen's prompt estimate with its reservation margin, plus
``max_tokens``. Only halugen's corrects a charge to what the server counted, and only it
reads the headers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiolimiter import AsyncLimiter

from halugen.config import Endpoint, Timeouts
from halugen.llm.client import ChatClient
from halugen.llm.pool import EndpointPool
from halugen.llm.transport import Transport
from halugen.records import ChatRequest, ChatResult

__all__ = ["PERIOD_S", "AiolimiterGate", "Job", "Pace", "PacerGate"]

PERIOD_S = 0.1  # aiolimiter's time_period: a tenth of a second of rate may go at once


@dataclass(frozen=True, slots=True)
class Job:
    request: ChatRequest
    body: bytes
    estimate: int  # halugen's prompt-token estimate (its tokenizer)


@dataclass(frozen=True, slots=True)
class Pace:
    """What a gate is told for one endpoint: per-minute paces, None for no limit."""

    rpm: float | None
    tpm: float | None


class PacerGate:
    name = "halugen Pacer"

    def __init__(
        self, urls: list[str], paces: list[Pace], transport: Transport, cap: int, count
    ) -> None:
        endpoints = [
            Endpoint(url=u, api_key="bench", rpm=p.rpm, tpm=p.tpm, concurrency=cap)
            for u, p in zip(urls, paces, strict=True)
        ]
        self.pool = EndpointPool(
            endpoints, transport=transport, timeouts=Timeouts(total=120.0), count_tokens=count
        )

    async def send(self, job: Job, charge: int) -> tuple[ChatResult, float]:
        async with self.pool.slot(charge) as attempt:
            sent = asyncio.get_running_loop().time()
            return await attempt.send(job.request, body=job.body), sent


@dataclass(eq=False)
class _Member:
    client: ChatClient
    requests: AsyncLimiter | None
    tokens: AsyncLimiter | None
    slots: asyncio.Semaphore
    weight: float
    chunking: asyncio.Lock = field(default_factory=asyncio.Lock)
    queued: int = 0

    def ready(self, charge: int) -> bool:
        if self.slots.locked():
            return False
        if self.requests is not None and not self.requests.has_capacity(1):
            return False
        return self.tokens is None or self.tokens.has_capacity(min(charge, self.tokens.max_rate))


class AiolimiterGate:
    name = "aiolimiter"

    def __init__(
        self, urls: list[str], paces: list[Pace], transport: Transport, cap: int, count
    ) -> None:
        self.members = []
        for url, pace in zip(urls, paces, strict=True):
            self.members.append(
                _Member(
                    client=ChatClient(
                        base_url=url, api_key="bench", transport=transport, count_tokens=count
                    ),
                    requests=_bucket(pace.rpm),
                    tokens=_bucket(pace.tpm),
                    slots=asyncio.Semaphore(cap),
                    weight=pace.rpm or pace.tpm or 1.0,
                )
            )

    def _route(self, charge: int) -> _Member:
        if len(self.members) == 1:
            return self.members[0]
        ready = [m for m in self.members if m.ready(charge)]
        return min(ready or self.members, key=lambda m: (m.queued + 1) / m.weight)

    async def send(self, job: Job, charge: int) -> tuple[ChatResult, float]:
        member = self._route(charge)
        member.queued += 1
        queued = True
        try:
            async with member.slots:
                if member.tokens is not None:
                    async with member.chunking:
                        left = float(charge)
                        while left > 0:
                            part = min(left, member.tokens.max_rate)
                            await member.tokens.acquire(part)
                            left -= part
                if member.requests is not None:
                    await member.requests.acquire()
                member.queued -= 1
                queued = False
                sent = asyncio.get_running_loop().time()
                return await member.client.send(job.request, body=job.body), sent
        finally:
            if queued:
                member.queued -= 1


def _bucket(per_minute: float | None) -> AsyncLimiter | None:
    """A tenth of a second of rate, or one unit's time when that is longer (``acquire(1)``
    refuses a bucket smaller than 1: 600 requests/min and less)."""
    if per_minute is None:
        return None
    per_s = per_minute / 60.0
    if per_s * PERIOD_S >= 1.0:
        return AsyncLimiter(per_s * PERIOD_S, PERIOD_S)
    return AsyncLimiter(1.0, 1.0 / per_s)
