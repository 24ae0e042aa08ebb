"""Client-side admission control for one endpoint: requests/min, tokens/min, the concurrency cap.

Every call does::

    async with limiter.slot(estimated_tokens) as ticket:
        response = await transport.post(...)
        limiter.observe(response.status, response.headers)
        ticket.counted(tokens_the_server_counted)      # when the usage is known

``slot`` admits callers strictly first-come first-served once all of these hold: no cooldown is
running, the requests pacer has 1, the tokens pacer has ``tokens`` (llm/pacing.py: per-minute
rates spent evenly, never more than a tenth of a second's worth at once), and fewer than the cap
(llm/capacity.py) are inside. The parts are checked together and taken together, with no await
in between, so nothing is paid for a request that then waits for something else.

``observe`` learns from every response:

- ``x-ratelimit-limit-requests`` / ``-tokens`` (per-minute limits, OpenAI's names): the pace
  becomes 97% of the server's figure, or the user's limit when that is lower. The 3% margin
  absorbs clock skew and requests the server counts that we do not see. A user limit that is
  too high (``--rpm 100000``) is thus brought down by the first answer, before a second request
  leaves: the cap is 1 until then.
- ``x-ratelimit-remaining-*`` at 0 with ``x-ratelimit-reset-*`` (Go durations: "1s", "6m0s",
  "120ms", "1m30.5s"): nobody starts until the reset. OpenAI (and our simulator) mean by reset
  the time until the bucket is *full* again, about a minute when it is empty; waiting all of it
  would idle a whole minute. So when the same response also gives the limit, the pause is the
  share of the reset the server needs to refill one burst of ours (``reset * burst / limit``);
  without the limit it is the whole reset.
- 429: a cooldown for ``retry-after-ms`` / ``retry-after`` (else 1 s); the controller decides
  what it means for the cap.
- the latency of every success, and timeouts seen when a slot ends in one (a
  ``RetryableError`` without an HTTP status, after the request may have been sent), feed the
  concurrency controller (llm/capacity.py): with known limits the cap is what the pace needs
  at that latency (requests a second x latency, with a margin), so a run reaches its limit
  however slow the answers; a server that announces no limits gets as many requests at once
  as it can serve without queueing them. The pace in requests a second is the requests/min
  pace, or the tokens/min pace over the mean tokens a request was charged, whichever is
  lower.

A request leaves when its bytes do, which is later than its slot: the call runner makes its
reservation durable in between, and anything that pauses that (a checkpoint, a slow disk, a
GC) would hold requests admitted at an even pace and then let them all go at once, a burst the
provider answers with 429s. So a request also passes a second pair of pacers as it leaves
(``departure``: the same rates, the same tenth-of-a-second bucket): in steady state it never
binds (departures follow admissions a few milliseconds later), and after a pause those that
piled up leave at the pace again, never more than the bucket together.

``ticket.counted(n)`` corrects the tokens charged at admission (a worst-case estimate) to what
the server counted, so a tokens/min limit is used to 97% and not to the estimate's margin.

Why a gate: one FIFO ``asyncio.Lock`` around all the waiting means waiters are served in
arrival order, so small requests never overtake a long prompt.

The admission core is also usable without waiting: ``delay(tokens, now)`` says how long until a
request could start (``inf`` while the cap is full) and ``start(tokens, now)`` takes it. The
endpoint pool (llm/pool.py) uses those to send each call to whichever endpoint can take it
first. All timing goes through the running loop's clock (``loop.time()``, ``asyncio.sleep``),
so tests run it on a virtual clock.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar, Token

from ..config import RateLimit
from ..errors import CallTimeout, ConnectFailed, RetryableError, UsageError
from ..stats import LimiterSnapshot
from .capacity import ANNOUNCED, PROBING, ConcurrencyControl
from .pacing import Pacer
from .retrying import header_number, retry_after_seconds

__all__ = [
    "ADOPT_FRACTION",
    "CAP",
    "DEFAULT_COOLDOWN_S",
    "LIMIT",
    "SERVER",
    "RateLimiter",
    "Ticket",
    "parse_duration",
    "wait_for_change",
]

ADOPT_FRACTION = 0.97  # share of a server-announced limit we aim for
DEFAULT_COOLDOWN_S = 1.0  # pause after a 429 that carries no retry-after hint
TOKENS_WEIGHT = 0.05  # of each request in the running mean of the tokens charged

# What holds a request back (``RateLimiter.holding_back``)
LIMIT = "limit"  # the provider's limits: the pace, a cooldown, or the cap the pace needs
CAP = "cap"  # the concurrency cap at its maximum (-j)
SERVER = "server"  # the cap the server's capacity allows, below the maximum

# The ticket of the slot the current task holds, so that ``observe`` knows which request an
# answer belongs to (when it started, how many were in flight, which burst it was part of).
_held: ContextVar[Ticket | None] = ContextVar("halugen_limiter_slot", default=None)


class Ticket:
    """One admitted request: what it was charged and how to correct that."""

    __slots__ = ("_limiter", "charged", "departed", "in_flight", "seq", "started")

    def __init__(
        self, limiter: RateLimiter, seq: int, in_flight: int, started: float, charged: int
    ) -> None:
        self._limiter = limiter
        self.seq = seq
        self.in_flight = in_flight  # requests in flight when this one started, itself included
        self.started = started  # loop time
        self.charged = charged  # tokens taken from the tokens pacer
        self.departed = False  # passed the departure pacers (``RateLimiter.departure``)

    def counted(self, tokens: int) -> None:
        """The server counted ``tokens`` for this request: give back (or charge) the difference."""
        limiter = self._limiter
        diff = self.charged - max(0, int(tokens))
        if diff and limiter._tokens is not None:
            now = asyncio.get_running_loop().time()
            limiter._tokens.adjust(diff, now)
            if self.departed and limiter._leaving_tokens is not None:
                limiter._leaving_tokens.adjust(diff, now)
            if diff > 0:
                limiter._freed.set()  # the head of the queue may go sooner than it planned
        self.charged -= diff


class RateLimiter:
    """Admission control for one endpoint; see the module docstring."""

    def __init__(
        self,
        rate: RateLimit,
        *,
        timeout: float | None = None,
        freed: asyncio.Event | None = None,
        backlog: Callable[[], int] | None = None,
        room: int | None = None,
    ) -> None:
        """``timeout``: seconds one attempt may take; the cap keeps latency well under it.

        ``freed`` and ``backlog`` are for a pool of endpoints: an event it shares among its
        limiters, and how many requests wait in its own queue (the cap only grows when it
        holds requests back). ``room``: the most connections this endpoint may hold open
        (llm/sockets.py); the cap stays under it.
        """
        for name, value in (("rpm", rate.rpm), ("tpm", rate.tpm)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise UsageError(f"{name} must be a positive number, got {value!r}")
        if rate.concurrency is not None and rate.concurrency < 1:
            raise UsageError(f"concurrency must be at least 1, got {rate.concurrency!r}")
        self._user = {"requests": rate.rpm, "tokens": rate.tpm}
        self._rpm = rate.rpm  # the pace, per minute
        self._tpm = rate.tpm
        self._requests: Pacer | None = None  # made on first use, from the loop's clock
        self._tokens: Pacer | None = None
        # the same limits again, paid as requests leave (``departure``)
        self._leaving_requests: Pacer | None = None
        self._leaving_tokens: Pacer | None = None
        self._control = ConcurrencyControl(rate.concurrency, deadline_s=timeout, room=room)
        self._tokens_mean: float | None = None  # charged per request, after corrections
        self._control.paced(self._pace_rps())
        self._in_flight = 0
        self._waiting = 0
        self._cooldown_until = -math.inf  # loop time
        self._rate_limited = 0
        self._gate = asyncio.Lock()  # FIFO: waiters are served in arrival order
        # set when a slot is released or the cap grows; a pool shares one among its limiters
        self._freed = freed if freed is not None else asyncio.Event()
        self._backlog = backlog if backlog is not None else (lambda: self._waiting)
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- admission without waiting ----------------------------------------------------------------

    def delay(self, tokens: int, now: float) -> float:
        """Seconds until a request worth ``tokens`` could start; ``inf`` while the cap is full."""
        if self._in_flight >= self._control.cap:
            return math.inf
        return self._paced_delay(tokens, now)

    def _paced_delay(self, tokens: float, now: float) -> float:
        """Seconds the limits (pace and cooldown) hold a request worth ``tokens`` back."""
        wait = self._cooldown_until - now
        requests, tokens_pacer = self._pacers(now)
        if requests is not None:
            wait = max(wait, requests.delay(1, now))
        if tokens_pacer is not None and tokens > 0:
            wait = max(wait, tokens_pacer.delay(tokens, now))
        return max(0.0, wait)

    def holding_back(self, tokens: int, now: float) -> str:
        """What holds a request worth ``tokens`` back now: ``LIMIT``, ``CAP``, ``SERVER``, or
        "" when it could start at once or the first answer is awaited (nothing known yet)."""
        control = self._control
        if control.mode == PROBING:
            return ""
        if self._in_flight >= control.cap:
            if control.cap >= control.maximum:
                return CAP
            return LIMIT if control.mode == ANNOUNCED else SERVER
        return LIMIT if self._paced_delay(tokens, now) > 0 else ""

    def start(self, tokens: int, now: float) -> Ticket:
        """Take a request slot worth ``tokens`` now (after ``delay`` said 0)."""
        requests, tokens_pacer = self._pacers(now)
        if requests is not None:
            requests.take(1, now)
        charged = 0
        if tokens_pacer is not None and tokens > 0:
            tokens_pacer.take(tokens, now)
            charged = tokens
        self._in_flight += 1
        return Ticket(self, self._control.admitted(), self._in_flight, now, charged)

    def finish(self, ticket: Ticket, error: BaseException | None = None) -> None:
        """The request of ``ticket`` is over (``error``: how it ended, if it failed)."""
        self._in_flight -= 1
        if self._tpm is not None and ticket.charged > 0:
            mean = self._tokens_mean
            charged = ticket.charged
            self._tokens_mean = charged if mean is None else mean + TOKENS_WEIGHT * (charged - mean)
        if error is not None and _congestion(error):
            self._control.congested(ticket.seq)
        self._freed.set()

    def _pace_rps(self) -> float | None:
        """Requests a second the known limits allow (None: no limit is known)."""
        paces = []
        if self._rpm is not None:
            paces.append(self._rpm / 60.0)
        if self._tpm is not None and self._tokens_mean:
            paces.append(self._tpm / 60.0 / self._tokens_mean)
        return min(paces) if paces else None

    def _pacers(self, now: float) -> tuple[Pacer | None, Pacer | None]:
        if self._requests is None and self._rpm is not None:
            self._requests = Pacer(self._rpm, now)
        if self._tokens is None and self._tpm is not None:
            self._tokens = Pacer(self._tpm, now)
        return self._requests, self._tokens

    def _leaving_pacers(self, now: float) -> tuple[Pacer | None, Pacer | None]:
        if self._leaving_requests is None and self._rpm is not None:
            self._leaving_requests = Pacer(self._rpm, now)
        if self._leaving_tokens is None and self._tpm is not None:
            self._leaving_tokens = Pacer(self._tpm, now)
        return self._leaving_requests, self._leaving_tokens

    # -- leaving ----------------------------------------------------------------------------------

    def departure_delay(self, ticket: Ticket, now: float) -> float:
        """Seconds until the request of ``ticket`` may leave (0.0: now, or it has left)."""
        if ticket.departed:
            return 0.0
        wait = self._cooldown_until - now
        requests, tokens = self._leaving_pacers(now)
        if requests is not None:
            wait = max(wait, requests.delay(1, now))
        if tokens is not None and ticket.charged > 0:
            wait = max(wait, tokens.delay(ticket.charged, now))
        return max(0.0, wait)

    def depart(self, ticket: Ticket, now: float) -> None:
        """The request of ``ticket`` leaves now (after ``departure_delay`` said 0)."""
        if ticket.departed:
            return
        ticket.departed = True
        requests, tokens = self._leaving_pacers(now)
        if requests is not None:
            requests.take(1, now)
        if tokens is not None and ticket.charged > 0:
            tokens.take(ticket.charged, now)

    async def departure(self, ticket: Ticket) -> None:
        """Wait until the request of ``ticket`` may leave at the pace, and mark it gone.

        Only a pause between the slot and the send (see the module docstring) makes this
        wait; a cancellation while waiting sends nothing.
        """
        loop = asyncio.get_running_loop()
        while (wait := self.departure_delay(ticket, loop.time())) > 0:
            await asyncio.sleep(wait)
        self.depart(ticket, loop.time())

    # -- admission with waiting -------------------------------------------------------------------

    def slot(self, tokens: int) -> AbstractAsyncContextManager[Ticket]:
        """Wait (FIFO) for a request slot worth ``tokens``; hold the concurrency slot until exit."""
        return self._slot(max(0, int(tokens)))

    @asynccontextmanager
    async def _slot(self, tokens: int) -> AsyncIterator[Ticket]:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._waiting += 1
        try:
            async with self._gate:
                await self._wait(tokens, loop)
                # No await between the last check and taking the slot: a cancellation cannot
                # land in between, so a cancelled waiter never leaks a slot.
                ticket = self.start(tokens, loop.time())
        finally:
            self._waiting -= 1
        with self.holding(ticket):
            yield ticket

    @contextmanager
    def holding(self, ticket: Ticket) -> Iterator[Ticket]:
        """Hold the slot of ``ticket`` (from ``start``) while the request is under way.

        ``observe`` inside knows which request an answer belongs to; on exit the slot is
        released and an exception that says "timed out" halves the cap. (``hold`` and
        ``release`` are the same in two calls, for a context manager written as a class.)
        """
        held = self.hold(ticket)
        try:
            yield ticket
        except BaseException as exc:
            self.release(ticket, held, exc)
            raise
        else:
            self.release(ticket, held, None)

    def hold(self, ticket: Ticket) -> Token[Ticket | None]:
        """Mark ``ticket`` as the current task's request; returns what ``release`` needs."""
        return _held.set(ticket)

    def release(
        self, ticket: Ticket, held: Token[Ticket | None], error: BaseException | None
    ) -> None:
        """End what ``hold`` began: the slot is free, ``error`` (if any) is looked at."""
        try:
            self.finish(ticket, error)
        finally:
            _held.reset(held)

    async def _wait(self, tokens: int, loop: asyncio.AbstractEventLoop) -> None:
        while (wait := self.delay(tokens, loop.time())) > 0:
            await wait_for_change(self._freed, wait)

    # -- learning ---------------------------------------------------------------------------------

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Learn from one response: its status and its headers (lower-case names).

        Call it from the event loop, ideally inside the slot the request used. Header values
        that do not parse are ignored; this never raises on what a server sends.
        """
        loop = asyncio.get_running_loop()
        self._loop = loop
        now = loop.time()
        control = self._control
        cap_before = control.cap

        limit_requests = header_number(headers.get("x-ratelimit-limit-requests"))
        limit_tokens = header_number(headers.get("x-ratelimit-limit-tokens"))
        if (limit_requests is not None and limit_requests > 0) or (
            limit_tokens is not None and limit_tokens > 0
        ):
            control.announced()
            self._adopt("requests", limit_requests, now)
            self._adopt("tokens", limit_tokens, now)
        for kind, limit, pacer in (
            ("requests", limit_requests, self._requests),
            ("tokens", limit_tokens, self._tokens),
        ):
            remaining = header_number(headers.get(f"x-ratelimit-remaining-{kind}"))
            if remaining is None or remaining > 0:
                continue
            reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
            if reset is not None:
                share = 1.0
                if limit is not None and limit > 0 and pacer is not None:
                    share = min(1.0, pacer.capacity / limit)
                self._cool_until(now + reset * share)

        control.paced(self._pace_rps())
        ticket = _held.get()
        if ticket is not None and ticket._limiter is not self:
            ticket = None
        seq = ticket.seq if ticket is not None else None
        if status == 429:
            self._rate_limited += 1
            hint = retry_after_seconds(headers)
            self._cool_until(now + (DEFAULT_COOLDOWN_S if hint is None else hint))
            control.rate_limited(seq)
        elif status < 400:
            if ticket is None:
                control.success(None)
            else:
                # the cap binds when it is full, or when requests wait that the limits would
                # let go (a pace that holds them back is not the cap's doing)
                binding = self._in_flight >= control.cap or (
                    self._backlog() > 0 and self._paced_delay(self._tokens_mean or 0, now) <= 0
                )
                control.success(seq, ticket.in_flight, now - ticket.started, binding=binding)
        elif status >= 500:
            control.server_error()
        # other 4xx are the request's own fault and say nothing about capacity
        if control.cap > cap_before:
            self._freed.set()

    def _adopt(self, kind: str, server: float | None, now: float) -> None:
        if server is None or server <= 0:
            return
        target = server * ADOPT_FRACTION
        user = self._user[kind]
        if user is not None:
            target = min(target, user)
        if kind == "requests":
            if target != self._rpm:
                self._rpm = target
                self._requests = self._retuned(self._requests, target, now)
                self._leaving_requests = self._retuned(self._leaving_requests, target, now)
        elif target != self._tpm:
            self._tpm = target
            self._tokens = self._retuned(self._tokens, target, now)
            self._leaving_tokens = self._retuned(self._leaving_tokens, target, now)

    @staticmethod
    def _retuned(pacer: Pacer | None, per_minute: float, now: float) -> Pacer:
        if pacer is not None:
            return pacer.retuned(per_minute, now)
        # Learned from an answer: a request already went (the probe), so the server's window
        # is not fresh; start empty rather than with one admission's worth.
        fresh = Pacer(per_minute, now)
        fresh.empty()
        return fresh

    def _cool_until(self, until: float) -> None:
        self._cooldown_until = max(self._cooldown_until, until)

    def slots_announced(self, slots: int) -> None:
        """The server says it serves ``slots`` requests at once (llm/capacity.py)."""
        self._control.slots_announced(slots)
        self._freed.set()

    # -- reporting --------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        """ "probing" (no answer yet), "announced" (the server's limits bind) or "capacity"."""
        return self._control.mode

    @property
    def announced(self) -> bool:
        return self._control.mode == ANNOUNCED

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def cap(self) -> int:
        """Requests this endpoint may have in flight now."""
        return self._control.cap

    def snapshot(self) -> LimiterSnapshot:
        cooldown = 0.0
        loop = self._loop
        if loop is not None and not loop.is_closed():
            cooldown = max(0.0, self._cooldown_until - loop.time())
        return LimiterSnapshot(
            rpm_limit=self._rpm,
            tpm_limit=self._tpm,
            concurrency=self._control.cap,
            max_concurrency=self._control.maximum,
            in_flight=self._in_flight,
            waiting=self._waiting,
            cooldown_s=cooldown,
            rate_limited=self._rate_limited,
        )


async def wait_for_change(event: asyncio.Event, seconds: float) -> None:
    """Wait until ``event`` is set or ``seconds`` pass (``inf``: no time limit).

    The event is cleared first, so only a change after this call wakes the waiter. Whoever
    wakes re-checks everything: a slot freed, a cap grown, tokens given back, or the time up.
    """
    event.clear()
    if seconds == math.inf:
        await event.wait()
        return
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass


def _congestion(error: BaseException) -> bool:
    """A timeout or a connection lost after sending: no HTTP answer, the work may be under way.

    (Not ``ConnectFailed``: a connection never made says the server is down, not busy.)
    """
    if isinstance(error, CallTimeout):
        return True
    return (
        isinstance(error, RetryableError)
        and not isinstance(error, ConnectFailed)
        and error.status == 0
        and error.billed_maybe
    )


_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_DURATION = re.compile(rf"(?:{_PART.pattern})+")


def parse_duration(text: str | None) -> float | None:
    """Seconds in a Go-style duration ("6m0s", "120ms", "1m30.5s"); a bare number is seconds.

    None for anything else (missing, empty, negative, garbled).
    """
    if text is None:
        return None
    text = text.strip()
    if _DURATION.fullmatch(text):
        return sum(float(n) * _UNIT_S[unit] for n, unit in _PART.findall(text))
    value = header_number(text)
    return value if value is not None and value >= 0 else None
