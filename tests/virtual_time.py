"""A virtual-clock asyncio event loop for tests: time passes only when the loop would wait.

``asyncio.sleep(3600)`` returns at once with ``loop.time()`` 3600 s later, so rate limits,
cooldowns and timeouts can be tested over minutes of virtual time in milliseconds of real time.
Anything that reads the clock through the loop (``loop.time()``, ``asyncio.sleep``, ``call_at``,
``asyncio.timeout``, aiolimiter) sees the virtual clock.

How: the loop's selector is wrapped. When the loop asks it to wait up to ``timeout`` seconds
for I/O (that is how asyncio waits for its next timer), it first polls the real file descriptors
without blocking; if nothing is ready it moves the virtual clock forward by ``timeout`` and
returns empty-handed, so the next timer is due.

Limits, by design:
- Real I/O and threads run in real time while the virtual clock jumps: a timer set around a real
  socket read or ``asyncio.to_thread`` may fire "early". Use it for code that waits on time only.
- With no timer scheduled and no ready callback, only a real event can wake the loop (e.g. a
  worker thread finishing, which writes to the loop's self-pipe). The loop waits ``grace`` real
  seconds for one, then raises ``VirtualTimeDeadlock`` instead of hanging the test run forever.
- A timer already due when the loop polls costs ``QUANTUM`` of virtual time. Real clocks always
  move; without this a callback that keeps re-arming itself "now" (float rounding in a rate
  limiter's arithmetic can do that) would spin forever at one virtual instant.

Use ``run_virtual(coro)`` like ``asyncio.run``; or pass ``VirtualTimeLoop`` as a loop factory
(``asyncio.Runner(loop_factory=VirtualTimeLoop)``; anyio: ``backend_options={"loop_factory":
VirtualTimeLoop}``).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["QUANTUM", "VirtualTimeDeadlock", "VirtualTimeLoop", "run_virtual"]

T = TypeVar("T")

QUANTUM = 1e-6  # virtual seconds charged for a poll when a timer is already due
DEFAULT_GRACE = 2.0  # real seconds to wait for a real event before declaring a deadlock


class VirtualTimeDeadlock(RuntimeError):
    """The loop has nothing scheduled and nothing ready: it would wait forever."""


class _VirtualSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The platform selector, except that waiting advances the loop's virtual clock."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._vloop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if events:
            return events
        loop = self._vloop
        if timeout is None:
            # No timer at all: only another thread (through the self-pipe) can wake us.
            events = super().select(loop.grace)
            if events:
                return events
            raise VirtualTimeDeadlock(
                "the event loop has no timers and no ready callbacks; every task waits on "
                "something that will never happen"
            )
        # asyncio passes 0 both when callbacks are ready (time must not move: no waiting
        # happens) and when the earliest timer is already due (charge a quantum so that
        # self-re-arming timers make progress). Only the loop knows which; ``_ready`` and
        # ``_stopping`` are BaseEventLoop internals, stable since Python 3.4.
        if getattr(loop, "_ready", None) or getattr(loop, "_stopping", False):
            return []
        loop.advance(max(timeout, QUANTUM))
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is virtual and advances only while waiting."""

    def __init__(self, *, start: float = 0.0, grace: float = DEFAULT_GRACE) -> None:
        # time() may be called during base initialisation, so the clock exists first
        self._virtual_now = float(start)
        self.grace = grace
        super().__init__(_VirtualSelector(self))

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move the virtual clock forward (never backward)."""
        if seconds > 0:
            self._virtual_now += seconds


def run_virtual(
    coro: Coroutine[Any, Any, T], *, start: float = 0.0, grace: float = DEFAULT_GRACE
) -> T:
    """Run ``coro`` to completion on a fresh ``VirtualTimeLoop``, then close it (as asyncio.run)."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(start=start, grace=grace)) as runner:
        return runner.run(coro)
