"""The budget: the in-memory ledger that decides what fits, and the prompt-token margin.

Amounts are picodollars, priced from the cards in prices.py. The durable side of the ledger
(reservation rows committed before a request leaves) lives in the store; this object
decides what fits.

Reserve -> settle / release / consume:
    reserve(amount)   waits (first come, first served) until amount fits under the budget
                      counting what is spent and what is reserved by calls in flight; raises
                      BudgetExhausted when it cannot fit and nothing is in flight to free money
    leaving(r)        a queued reservation's request leaves (``reserve(..., queued=True)``):
                      from now on the provider may bill it
    settle(r, cost)   the provider reported usage: spend ``cost``, release the rest. A cost
                      above the reservation (the provider's tokenizer counts more than our
                      estimate) is spent all the same and counted as an overshoot
    release(r)        the call was not billed (e.g. 429, 5xx): give the whole amount back
    consume(r)        the outcome is unknown (timeout after sending): count it all as spent

Money in flight is bounded by the budget left: with ``in_flight_share`` (``--in-flight-share``,
25% by default) open reservations together never hold more than that share of what is not
spent yet (budget - spent), so a kill, which counts every reservation it leaves open as spent,
costs a tight budget at most that share. A reservation larger than the share still goes when
it is the only one open (else a call worth more than a quarter of what is left could never
go): a kill then loses at most that one call's worst case.

``reserved`` is every open reservation (what a new one must fit beside); ``queued`` the part
of it whose requests have not left (waiting for a rate-limit slot), which Ctrl-C gives back
at $0 and a kill never counts, so the money at the provider is ``reserved - queued``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from .cost.prices import format_usd
from .errors import BudgetExhausted

__all__ = ["Ledger", "PromptMargin", "Reservation"]


class PromptMargin:
    """How much to inflate our prompt-token estimate when reserving money.

    Starts generous (``initial``, for a tokenizer like ours). Once the provider has reported
    usage it follows the largest reported/estimated ratio seen so far: times ``initial``
    while fewer than ``warmup`` reports are in (one text's ratio says little about the next
    one's), then plus a little, so the reservation stays an upper bound without tying up
    much more money than needed, whatever tokenizer the provider counts with.
    """

    def __init__(self, initial: float = 1.25, *, warmup: int = 8, floor: float = 1.02) -> None:
        self._initial = initial
        self._warmup = warmup
        self._floor = floor
        self._max_ratio = 0.0
        self._seen = 0

    def observe(self, estimated: int, reported: int) -> None:
        if estimated > 0 and reported > 0:
            self._seen += 1
            self._max_ratio = max(self._max_ratio, reported / estimated)

    @property
    def calibrated(self) -> bool:
        """Has the provider reported usage at least once (so the ratio is known)?"""
        return self._seen > 0

    @property
    def ratio(self) -> float:
        """The largest reported/estimated prompt-token ratio seen (0 before any)."""
        return self._max_ratio

    @property
    def factor(self) -> float:
        if self._seen < self._warmup:
            return max(self._initial, self._max_ratio * self._initial)
        return max(self._floor, self._max_ratio * 1.05)

    def reserve_tokens(self, estimated: int) -> int:
        return int(estimated * self.factor) + 8


@dataclass(slots=True, eq=False)
class Reservation:
    amount: int
    done: bool = False
    queued: bool = False  # its request has not left yet


class Ledger:
    """The budget in memory. ``budget`` None means unlimited (still counted)."""

    def __init__(
        self, budget: int | None, *, spent: int = 0, in_flight_share: float | None = None
    ) -> None:
        self.budget = budget
        self.in_flight_share = in_flight_share  # None: open reservations may hold it all
        self.spent = spent
        self.reserved = 0
        self.queued = 0  # the part of ``reserved`` whose requests have not left
        self.exhausted = False
        self.overshoot = 0  # spent above what was reserved, this session
        self.overshoots = 0  # settlements above their reservation, this session
        self._waiters: deque[tuple[int, bool, asyncio.Future[Reservation]]] = deque()

    @property
    def remaining(self) -> int | None:
        if self.budget is None:
            return None
        return self.budget - self.spent - self.reserved

    @property
    def at_provider(self) -> int:
        """Reserved by requests that have left: what the provider may bill."""
        return self.reserved - self.queued

    @property
    def in_flight_cap(self) -> int | None:
        """The most open reservations may hold together now (None: no such bound)."""
        if self.budget is None or self.in_flight_share is None:
            return None
        return int(self.in_flight_share * max(0, self.budget - self.spent))

    def _fits(self, amount: int) -> bool:
        if self.budget is None:
            return True
        if self.spent + self.reserved + amount > self.budget:
            return False
        cap = self.in_flight_cap
        return cap is None or self.reserved == 0 or self.reserved + amount <= cap

    def _take(self, amount: int, queued: bool) -> Reservation:
        self.reserved += amount
        if queued:
            self.queued += amount
        return Reservation(amount, queued=queued)

    async def reserve(self, amount: int, *, queued: bool = False) -> Reservation:
        """Reserve ``amount`` (see the module docstring); ``queued``: its request has not
        left yet, ``leaving`` says when it does."""
        if not self._waiters and self._fits(amount):
            return self._take(amount, queued)
        if not self._waiters and self.reserved == 0:
            self.exhausted = True
            raise BudgetExhausted(f"a call needing {format_usd(amount)} does not fit the budget")
        fut: asyncio.Future[Reservation] = asyncio.get_running_loop().create_future()
        self._waiters.append((amount, queued, fut))
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self.release(fut.result())
            else:
                self._waiters = deque(w for w in self._waiters if w[2] is not fut)
                self._pump()
            raise

    def _pump(self) -> None:
        while self._waiters:
            amount, queued, fut = self._waiters[0]
            if fut.done():
                self._waiters.popleft()
                continue
            if self._fits(amount):
                self._waiters.popleft()
                fut.set_result(self._take(amount, queued))
            elif self.reserved == 0:
                # nothing in flight can free money: this one will never fit
                self._waiters.popleft()
                self.exhausted = True
                fut.set_exception(
                    BudgetExhausted(f"a call needing {format_usd(amount)} does not fit the budget")
                )
            else:
                return  # head of line waits for calls in flight to settle

    def leaving(self, r: Reservation) -> None:
        """The request of a queued reservation leaves: the provider may bill it from now on."""
        if r.queued and not r.done:
            r.queued = False
            self.queued -= r.amount

    def _close(self, r: Reservation, spend: int) -> None:
        if r.done:
            return
        r.done = True
        self.reserved -= r.amount
        if r.queued:
            r.queued = False
            self.queued -= r.amount
        self.spent += spend
        self._pump()

    def settle(self, r: Reservation, cost: int) -> int:
        """Spend ``cost`` for ``r``; returns by how much it exceeds the reservation (0 if not)."""
        over = max(0, cost - r.amount) if not r.done else 0
        if over:
            self.overshoot += over
            self.overshoots += 1
        self._close(r, cost)
        return over

    def release(self, r: Reservation) -> None:
        self._close(r, 0)

    def overshoot_note(self) -> str | None:
        """One line for the end of a run in which calls cost more than was reserved."""
        if not self.overshoots:
            return None
        return (
            f"{self.overshoots} call(s) cost more than was reserved ({format_usd(self.overshoot)} "
            f"over in all: the provider counts more tokens than our estimate, which later "
            f"reservations allow for; see the overshoots view)"
        )

    def consume(self, r: Reservation) -> None:
        self._close(r, r.amount)
