"""How the page reads a store: opened read-only for each request and closed again.

A store nobody holds is opened as a file, and let go between requests, so a run can start
on it while the page is open; a store a run holds is read through that run (``live.py``),
which answers read-only queries for other processes. The next request after either changes
finds the new state by itself.
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

__all__ = ["StoreReader"]

T = TypeVar("T")


class StoreReader:
    """Runs read functions on the store at ``path``, one at a time (each on a thread of the
    server's, not on its event loop)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._recalled = False

    def read(self, fn: Callable[[Store], T]) -> tuple[T, bool]:
        """(``fn(store)``, whether a running process answered it rather than the file)."""
        with self._lock, open_store(self.path, read_only=True) as store:
            if not self._recalled:
                self._recall(store)
            return fn(store), store.is_live

    def _recall(self, store: Store) -> None:
        """Know the task folders the store keeps (their right and hallucinated fields)."""
        from ..tasks.stored import recall

        with contextlib.suppress(HalugenError):
            recall(store)
        self._recalled = True
