"""Calls on their way out, so that the first Ctrl-C sends nothing more.

Each attempt of a call waits in a ``Place`` (for its money, its rate-limit slot, the backoff
before a retry) until its request is about to leave; ``leave()`` then puts it at the provider,
where it only finishes or, on a second Ctrl-C, is abandoned. ``Outbox.close()`` releases
every attempt still waiting at once: their waits are cancelled and the calls raise
``Interrupted`` (their reservations released at $0, nothing sent); after it, no attempt may
start waiting or leave. So what reaches the provider after the first Ctrl-C is only what
was already at it.

A place is an anyio cancel scope that only ``close()`` cancels: a cancellation from outside
(the second Ctrl-C, a failing task group) passes through it unchanged.
"""

from __future__ import annotations

from types import TracebackType

import anyio

from ..errors import Interrupted

__all__ = ["Outbox", "Place"]

_RELEASED = "released by Ctrl-C before its request left (nothing was sent)"


class Outbox:
    """Where a run's calls wait before they leave, and how many are at the provider."""

    def __init__(self) -> None:
        self.closed = False
        self.at_provider = 0  # requests that have left and not finished
        self.released = 0  # attempts released by ``close()``
        self._waiting: set[Place] = set()
        # the running backend's cancel scope class, found by the first place: creating one
        # through ``anyio.CancelScope()`` looks the backend up every time (a third of the
        # cost of a place, which every attempt takes)
        self._scope_type: type[anyio.CancelScope] | None = None

    @property
    def waiting(self) -> int:
        """Attempts waiting now (for money, a rate-limit slot or a retry)."""
        return len(self._waiting)

    def place(self) -> Place:
        """``with outbox.place() as place:`` one attempt's wait, then ``place.leave()``."""
        return Place(self)

    def check(self) -> None:
        """Raise ``Interrupted`` once closed: a call that has not started waiting does not."""
        if self.closed:
            raise Interrupted(_RELEASED)

    def close(self) -> tuple[int, int]:
        """Release every waiting attempt; returns (requests at the provider, released)."""
        if self.closed:
            return self.at_provider, 0
        self.closed = True
        waiting = list(self._waiting)
        self._waiting.clear()
        for place in waiting:
            place.release()
        self.released += len(waiting)
        return self.at_provider, len(waiting)


class Place:
    """One attempt's wait in the outbox (a context manager; see the module docstring)."""

    __slots__ = ("_box", "_left", "_released", "_scope")

    def __init__(self, box: Outbox) -> None:
        self._box = box
        if box._scope_type is None:
            self._scope = anyio.CancelScope()
            box._scope_type = type(self._scope)
        else:
            self._scope = box._scope_type()
        self._left = False
        self._released = False

    def __enter__(self) -> Place:
        self._box.check()
        self._scope.__enter__()
        self._box._waiting.add(self)
        return self

    def release(self) -> None:
        self._released = True
        self._scope.cancel()

    def leave(self) -> None:
        """The request is about to go: from now on it is at the provider, not waiting."""
        box = self._box
        box._waiting.discard(self)
        if box.closed or self._released:
            self._released = True
            raise Interrupted(_RELEASED)
        self._left = True
        box.at_provider += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        box = self._box
        box._waiting.discard(self)
        if self._left:
            box.at_provider -= 1
        swallowed = self._scope.__exit__(kind, error, tb)
        if swallowed and self._released:
            raise Interrupted(_RELEASED)  # the wait was cancelled by close()
        return bool(swallowed)
