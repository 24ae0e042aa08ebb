"""Signals delivered to the running event loop: one way to install, remove and wait for them.

A handler can only be installed from the main thread of a process with an asyncio loop (and
not on Windows); elsewhere the caller stops the work by other means, so installing is best
effort and says whether it happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator

__all__ = ["on_signals", "until_signalled"]


@contextlib.contextmanager
def on_signals(handler: Callable[[], None], *signals: signal.Signals) -> Iterator[bool]:
    """Call ``handler`` on each of ``signals`` (SIGINT by default) inside the block; yields
    whether the handlers could be installed. They are removed when the block ends."""
    loop = asyncio.get_running_loop()
    installed = []
    for sig in signals or (signal.SIGINT,):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, handler)
            installed.append(sig)
    try:
        yield bool(installed)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def until_signalled() -> None:
    """Return on SIGINT or SIGTERM (a server's ``serve until stopped``)."""
    stop = asyncio.Event()
    with on_signals(stop.set, signal.SIGINT, signal.SIGTERM):
        await stop.wait()
