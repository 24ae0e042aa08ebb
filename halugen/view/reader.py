"""How the page reads a store: opened read-only when a request comes, let go of soon after.

A store nobody holds is opened as a file; a store a run holds is read through that run
(``live.py``), which answers read-only queries for other processes. The store stays open
while requests keep coming (a page load asks twice, keys ask in bursts) and is let go of
``keep_seconds`` after the last one, so a run can start on a store whose page is open: an
open read-only file would keep a run from opening it for writing.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import HalugenError
from ..store.db import Store, open_store
from ..tasks.catalog import TaskCatalog

__all__ = ["KEEP_SECONDS", "StoreReader"]

T = TypeVar("T")

KEEP_SECONDS = 2.0


class StoreReader:
    """Runs read functions on the store at ``path``, one at a time (on a worker thread of
    the server's, not on its event loop). ``released`` is set whenever nothing is open."""

    def __init__(self, path: str | os.PathLike[str], *, keep_seconds: float = KEEP_SECONDS) -> None:
        self.path = Path(path)
        self.keep_seconds = keep_seconds
        self.released = threading.Event()
        self.released.set()
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._timer: threading.Timer | None = None
        self._generation = 0  # which read a timer belongs to; a later read outdates it
        self._recalled = False
        # the tasks the store's rows name: the built-in ones and the folders it keeps
        self.tasks = TaskCatalog()

    def read(self, fn: Callable[[Store], T]) -> tuple[T, bool]:
        """(``fn(store)``, whether a running process answered it rather than the file)."""
        with self._lock:
            self._generation += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._store is None:
                self._store = open_store(self.path, read_only=True)
                self.released.clear()
                if not self._recalled:
                    self._recall(self._store)
            store = self._store
            try:
                result = fn(store)
            except BaseException:
                self._let_go()  # a store that failed a query is opened afresh next time
                raise
            # a live connection whose holder left reads the file itself from then on
            live = store.is_live and not store.conn.on_file
            self._timer = threading.Timer(self.keep_seconds, self._idle, (self._generation,))
            self._timer.daemon = True
            self._timer.start()
            return result, live

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._let_go()

    def _idle(self, generation: int) -> None:
        with self._lock:
            if generation == self._generation:
                self._timer = None
                self._let_go()

    def _let_go(self) -> None:
        store, self._store = self._store, None
        try:
            if store is not None:
                store.close()
        finally:
            self.released.set()

    def _recall(self, store: Store) -> None:
        """Know the task folders the store keeps (their right and hallucinated fields)."""
        from ..tasks.stored import recall

        with contextlib.suppress(HalugenError):
            self.tasks = recall(store)
        self._recalled = True
