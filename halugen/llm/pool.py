"""A fleet of endpoints behind one ``send``: a call goes to whichever endpoint has room first.

Every endpoint (an account, a key, a replica of the same model) has its own client and its own
limiter, which learns that endpoint's limits from that endpoint's headers. One budget, one
store, one run: the call runner reserves and settles as for a single endpoint, and the request
key does not name the endpoint, so an answer from any of them is the same stored answer and a
resume through another fleet pays nothing twice. A single endpoint is a pool of one.

Admission: waiters are served first come, first served (one FIFO gate for the whole pool). The
head of the queue goes to an endpoint whose limiter would admit it now; when several would, to
the least loaded for its weight (``(in flight + 1) / weight``); when none would, it waits for
the earliest of them (a pace, a cooldown, a slot freed, an endpoint back in rotation).

An endpoint that fails is taken out of rotation, with a one-line message, while another one
is in rotation: at once when it refuses connections or rejects its key (401, or 429
``insufficient_quota``), after ``FAILURES_IN_A_ROW`` failures in a row otherwise (5xx,
timeouts, dropped connections; a 429 is not a failure, its limiter deals with it). It is
tried again after ``OUT_OF_ROTATION_S`` seconds, doubling each time up to
``MAX_OUT_OF_ROTATION_S``, one request at a time until one is answered. Answers to requests
sent before it was taken out say nothing about it now and are not counted either way. A call
that failed there is retried by the call runner, which sends it to another endpoint; a 401
from one endpoint of several therefore does not stop the run (it does when it is the last
one in rotation).

Also measured here: how long the head of the queue waits and for what, which says what binds
the run's pace (llm/binding.py); how many calls the endpoints could take at once (``wanted``),
which the stages size their workers by (halugen/crew.py); and the room the open-file limit
leaves for connections (llm/sockets.py), which caps the endpoints' concurrency.

The first Ctrl-C releases the callers still waiting for a slot through the run's ``Outbox``
(llm/outbox.py), which cancels their wait here: nothing of theirs is sent.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from contextvars import Token
from dataclasses import dataclass, replace

from ..config import Endpoint, RateLimit, Timeouts
from ..errors import AuthError, ConnectFailed, FatalCallError, RetryableError
from ..records import ChatRequest, ChatResult
from ..stats import LimiterSnapshot
from .binding import LABELS, PaceGauge
from .capacity import LIMITS_MAXIMUM
from .client import ChatClient
from .endpoint import announced_slots
from .limiter import SERVER, RateLimiter, Ticket, wait_for_change
from .sockets import connection_room
from .transport import Transport

__all__ = [
    "FAILURES_IN_A_ROW",
    "MAX_OUT_OF_ROTATION_S",
    "OUT_OF_ROTATION_S",
    "Attempt",
    "EndpointPool",
    "Member",
]

FAILURES_IN_A_ROW = 3  # 5xx, timeouts or dropped connections that take an endpoint out
OUT_OF_ROTATION_S = 5.0  # first pause; doubles on every new failure
MAX_OUT_OF_ROTATION_S = 60.0


@dataclass(eq=False)
class Member:
    """One endpoint of the pool and its state."""

    endpoint: Endpoint
    client: ChatClient
    limiter: RateLimiter
    failures: int = 0  # in a row
    downs: int = 0  # times taken out of rotation, for the doubling pause
    down_until: float = -math.inf  # loop time
    out_at: float = -math.inf  # when it was last taken out: older requests say nothing new
    trial: bool = False  # back from a pause: one request at a time until one is answered
    answered: int = 0

    @property
    def name(self) -> str:
        return self.endpoint.url


class EndpointPool:
    """The endpoints of a run; see the module docstring."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        *,
        transport: Transport,
        timeouts: Timeouts = Timeouts(),
        count_tokens: Callable[[str], int] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("a pool needs at least one endpoint")
        self._freed = asyncio.Event()  # shared by every member's limiter
        self._gate = asyncio.Lock()
        self._waiting = 0
        self._notify = notify or (lambda message: None)
        self._transport = transport
        self.gauge = PaceGauge()
        rooms = self._rooms(endpoints)
        self.members: list[Member] = []
        for endpoint, room in zip(endpoints, rooms, strict=True):
            limiter = RateLimiter(
                RateLimit(rpm=endpoint.rpm, tpm=endpoint.tpm, concurrency=endpoint.concurrency),
                timeout=timeouts.total,
                freed=self._freed,
                backlog=lambda: self._waiting,
                room=room,
            )
            client = ChatClient(
                base_url=endpoint.url,
                api_key=endpoint.api_key,
                transport=transport,
                timeouts=timeouts,
                observe=limiter.observe,
                count_tokens=count_tokens,
                auth=endpoint.auth,
            )
            self.members.append(Member(endpoint, client, limiter))

    async def ask_slots(self) -> None:
        """Ask each endpoint how many requests it serves at once (llm/endpoint.py); those
        that say keep their concurrency to it."""
        for member in self.members:
            endpoint = member.endpoint
            slots = await announced_slots(self._transport, endpoint.url, endpoint.api_key)
            if slots is not None:
                member.limiter.slots_announced(slots)

    def _rooms(self, endpoints: Sequence[Endpoint]) -> list[int | None]:
        """Each endpoint's share of the connections the open-file limit leaves (None: all
        it may want), with one line when that is fewer than the endpoints may want."""
        wanted = [e.concurrency or LIMITS_MAXIMUM for e in endpoints]
        total = sum(wanted)
        room = connection_room(total)
        if room >= total:
            return [None] * len(endpoints)
        shares = [max(1, w * room // total) for w in wanted]
        self._notify(
            f"at most {sum(shares):,} requests in flight: the open-file limit leaves room for "
            f"{room:,} connections (raise it with ulimit -n to go further)"
        )
        return list(shares)

    @property
    def url(self) -> str:
        """Where calls go, for messages."""
        if len(self.members) == 1:
            return self.members[0].client.url
        return ", ".join(m.name for m in self.members)

    def body(self, request: ChatRequest) -> bytes:
        """The request body; the same for every endpoint (one model, one request key)."""
        return self.members[0].client.body(request)

    # -- sending ----------------------------------------------------------------------------------

    def slot(self, tokens: int) -> Attempt:
        """``async with pool.slot(tokens) as attempt``: wait (FIFO) for an endpoint with room
        for a request worth ``tokens``, and hold its slot inside.

        Inside, the request may be sent (``await attempt.send(...)``); waiting to enter sends
        nothing, so a cancellation before entering costs nothing.
        """
        return Attempt(self, max(0, int(tokens)))

    async def send(self, request: ChatRequest, *, body: bytes, tokens: int) -> ChatResult:
        """One attempt of ``request`` at the first endpoint with room; errors as the client's."""
        async with self.slot(tokens) as attempt:
            return await attempt.send(request, body=body)

    def wanted(self) -> int:
        """How many calls the endpoints could take at once now: the sum of their caps (one
        for an endpoint on trial, none for one out of rotation). Stages size their workers
        by it (halugen/crew.py)."""
        try:
            now = asyncio.get_running_loop().time()
        except RuntimeError:
            now = -math.inf
        total = 0
        for member in self.members:
            if member.down_until > now:
                continue
            total += 1 if member.trial else member.limiter.cap
        return max(1, total)

    def _holding_back(self, tokens: int, now: float) -> str:
        """What the head of the queue waits for: the cause at the endpoint it waits on first
        (LIMIT, CAP or SERVER; SERVER when every endpoint is out of rotation or on trial)."""
        first: Member | None = None
        soonest = math.inf
        for member in self.members:
            if member.down_until > now or (member.trial and member.limiter.in_flight > 0):
                continue
            delay = member.limiter.delay(tokens, now)
            if first is None or delay < soonest:
                first, soonest = member, delay
        if first is None:
            return SERVER
        return first.limiter.holding_back(tokens, now)

    async def _admit(self, tokens: int, loop: asyncio.AbstractEventLoop) -> tuple[Member, Ticket]:
        while True:
            now = loop.time()
            best: Member | None = None
            best_load = math.inf
            wait = math.inf
            for member in self.members:
                if member.down_until > now:
                    wait = min(wait, member.down_until - now)
                    continue
                limiter = member.limiter
                if member.trial and limiter.in_flight > 0:
                    continue  # one at a time until it answers; its finish wakes us
                delay = limiter.delay(tokens, now)
                if delay > 0:
                    wait = min(wait, delay)
                    continue
                load = (limiter.in_flight + 1) / member.endpoint.weight
                if load < best_load:
                    best, best_load = member, load
            if best is not None:
                return best, best.limiter.start(tokens, now)
            cause = self._holding_back(tokens, now)
            await wait_for_change(self._freed, wait)
            self.gauge.waited_for(cause, loop.time() - now)

    async def _send(
        self, member: Member, ticket: Ticket, request: ChatRequest, body: bytes
    ) -> ChatResult:
        loop = asyncio.get_running_loop()
        fresh = ticket.started >= member.out_at  # sent after its last time out of rotation
        try:
            result = await member.client.send(request, body=body)
        except AuthError as exc:
            if fresh and not self._take_out(member, loop.time(), "it rejected the key"):
                raise  # the last endpoint in rotation: the run stops, as with one endpoint
            # another endpoint may take it: let the call runner try again (nothing was billed)
            raise RetryableError(f"{member.name}: {exc}", status=exc.status) from None
        except RetryableError as exc:
            if fresh:
                self._failed(member, exc, loop.time())
            raise
        except FatalCallError:
            if fresh:
                self._answered(member)  # a 4xx is the request's fault: the endpoint is fine
            raise
        if fresh:
            self._answered(member)
        if not result.usage_estimated:  # tokens/min: correct the charge to what was counted
            ticket.counted(result.prompt_tokens + request.n * request.max_tokens)
        return result

    # -- health -----------------------------------------------------------------------------------

    def _answered(self, member: Member) -> None:
        member.failures = 0
        member.answered += 1
        if member.trial:
            member.trial = False
            member.downs = 0
            self._notify(f"endpoint {member.name} is back in rotation")

    def _failed(self, member: Member, exc: RetryableError, now: float) -> None:
        if exc.status == 429:
            return  # rate limited: its limiter slows down, the endpoint is fine
        member.failures += 1
        if isinstance(exc, ConnectFailed):  # nothing was sent at all
            self._take_out(member, now, f"it refused the connection ({exc})")
        elif member.failures >= FAILURES_IN_A_ROW:
            self._take_out(member, now, f"{member.failures} failures in a row (last: {exc})")

    def _take_out(self, member: Member, now: float, reason: str) -> bool:
        """Take ``member`` out of rotation if another one is in it; says whether it did."""
        others = [m for m in self.members if m is not member and m.down_until <= now]
        if not others:
            return False
        member.downs += 1
        member.failures = 0
        member.trial = True
        member.out_at = now
        pause = min(MAX_OUT_OF_ROTATION_S, OUT_OF_ROTATION_S * 2 ** (member.downs - 1))
        member.down_until = now + pause
        self._notify(
            f"endpoint {member.name} is out of rotation for {pause:g} s: {reason}; "
            f"the other endpoints carry on"
        )
        self._freed.set()  # waiters planned with it: let them plan again
        return True

    def paced_waiters(self) -> bool:
        """Whether calls wait at the gate while an endpoint has a free concurrency place:
        they wait for the pace, not for a call to finish, so one leaves soon (the store's
        durable lane holds its group for it)."""
        return self._waiting > 0 and any(m.limiter.in_flight < m.limiter.cap for m in self.members)

    # -- reporting --------------------------------------------------------------------------------

    def snapshot(self) -> LimiterSnapshot:
        """The whole fleet as one limiter: limits, caps and counts summed."""
        snaps = [m.limiter.snapshot() for m in self.members]
        bound_by = LABELS.get(self.gauge.verdict(), "")
        if len(snaps) == 1:  # waiters queue here, at the pool's gate
            return replace(snaps[0], waiting=self._waiting, bound_by=bound_by)

        def total(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return sum(known) if known else None

        return LimiterSnapshot(
            rpm_limit=total([s.rpm_limit for s in snaps]),
            tpm_limit=total([s.tpm_limit for s in snaps]),
            concurrency=sum(s.concurrency for s in snaps),
            max_concurrency=sum(s.max_concurrency for s in snaps),
            in_flight=sum(s.in_flight for s in snaps),
            waiting=self._waiting,
            cooldown_s=min(s.cooldown_s for s in snaps),
            rate_limited=sum(s.rate_limited for s in snaps),
            bound_by=bound_by,
        )


class Attempt:
    """One request's slot at one endpoint of the pool (``async with pool.slot(tokens)``).

    A class rather than a generator-based context manager: it is entered once per call, at
    thousands of calls a second.
    """

    __slots__ = ("_held", "_member", "_pool", "_ticket", "_tokens")

    def __init__(self, pool: EndpointPool, tokens: int) -> None:
        self._pool = pool
        self._tokens = tokens
        self._member: Member | None = None
        self._ticket: Ticket | None = None
        self._held: Token[Ticket | None] | None = None

    async def __aenter__(self) -> Attempt:
        pool = self._pool
        pool._waiting += 1
        try:
            async with pool._gate:
                member, ticket = await pool._admit(self._tokens, asyncio.get_running_loop())
        finally:
            pool._waiting -= 1
        self._member, self._ticket = member, ticket
        self._held = member.limiter.hold(ticket)
        return self

    async def __aexit__(self, kind: object, error: BaseException | None, tb: object) -> None:
        assert self._member is not None and self._ticket is not None and self._held is not None
        self._member.limiter.release(self._ticket, self._held, error)

    @property
    def endpoint(self) -> Endpoint:
        assert self._member is not None
        return self._member.endpoint

    async def departure(self) -> None:
        """Wait until the request may leave at the endpoint's pace (``send`` does it too;
        the call runner waits here first, while a Ctrl-C can still release the call)."""
        assert self._member is not None and self._ticket is not None
        await self._member.limiter.departure(self._ticket)

    async def send(self, request: ChatRequest, *, body: bytes) -> ChatResult:
        """Send the request here; the errors are the client's (a 401 of one endpoint among
        several becomes retryable: another endpoint may take the call)."""
        assert self._member is not None and self._ticket is not None
        await self._member.limiter.departure(self._ticket)
        # the request's latency counts from here, not from when its slot was taken: what the
        # caller does in between (the call runner commits its reservation) is not the server's
        self._ticket.started = asyncio.get_running_loop().time()
        return await self._pool._send(self._member, self._ticket, request, body)
