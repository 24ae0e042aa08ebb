"""The first call of a session goes alone, so that the money reserved for the others is
counted by the provider's tokenizer, not only by ours.

A reservation is worth our estimate of the prompt's tokens times ``PromptMargin``'s factor.
A provider whose tokenizer counts more (another model family, a gateway that adds a system
prompt) bills more than was reserved, and with many requests out at once before anyone
knows, together more than the budget. So until the provider has answered once, one attempt
at a time goes out; its reported usage calibrates the margin (``PromptMargin.observe``) and
every later reservation is an upper bound again. The cost is one request's latency at the
start of a session. An answer without usage teaches nothing and ends the wait all the same.
"""

from __future__ import annotations

import asyncio

from ..budget import PromptMargin

__all__ = ["FirstCallAlone"]


class FirstCallAlone:
    """``alone = await gate.turn()`` before reserving; ``gate.done(alone, answered)`` after."""

    def __init__(self, margin: PromptMargin) -> None:
        self.finished = margin.calibrated  # a resumed ratio needs no calibration
        self._busy = False
        self._wake: asyncio.Event | None = None

    async def turn(self) -> bool:
        """Wait until this attempt may go; True if it goes alone to calibrate."""
        while not self.finished:
            if not self._busy:
                self._busy = True
                return True
            if self._wake is None:
                self._wake = asyncio.Event()
            await self._wake.wait()
        return False

    def done(self, alone: bool, answered: bool) -> None:
        """The attempt ended; ``answered``: the provider answered it (usage observed)."""
        if not alone:
            return
        self._busy = False
        if answered:
            self.finished = True
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.set()  # the next one calibrates (or, once finished, everyone goes)
