"""Stored answers looked up for many calls in one query, off the event loop.

A call whose request key the store has answered already is answered from there (a resumed
run, or a fresh run over the same requests). One DuckDB point lookup costs 4-9 ms here
whatever it fetches (a scan of the key column and a zstd frame of the answers), so a run
whose calls are all answered from the store spent half its time in them, on the event
loop. ``StoredAnswers.get`` queues the key instead; one worker thread fetches every key
queued meanwhile in one query (256 keys cost about what one does), while the loop goes on.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from typing import Any

import anyio
import duckdb

from ..errors import StoreError
from .key_index import key_prefix
from .rows import CallLogRow

__all__ = ["AnswerRow", "StoredAnswers", "answer_row"]

# (response_json, prompt_tokens, completion_tokens, cached_tokens, usage_estimated)
AnswerRow = tuple[Any, ...]

_ANSWERS = """
SELECT key, response_json, prompt_tokens, completion_tokens, cached_tokens, usage_estimated
FROM call_log
WHERE key_prefix IN (SELECT unnest(?::BIGINT[])) AND status = 'ok'
  AND key IN (SELECT unnest(?::VARCHAR[]))
ORDER BY call_id
"""


def answer_row(row: CallLogRow) -> AnswerRow:
    """The stored answer of a ``call_log`` row, as the store's queries return it."""
    return (
        row.response_json,
        row.prompt_tokens,
        row.completion_tokens,
        row.cached_tokens,
        row.usage_estimated,
    )


class StoredAnswers:
    """The store's answers by request key, fetched in groups (see the module's text).

    ``journaled`` gives an answer that is durable in the journal but maybe not in DuckDB
    yet; ``connect`` opens the worker's own connection to the store (a cursor of its
    connection), made at the first fetch and closed by ``close``.
    """

    MOST = 256  # keys a query: about one query's cost (measured: 0.03 ms a key at 256)

    def __init__(
        self,
        connect: Callable[[], duckdb.DuckDBPyConnection],
        journaled: Callable[[str], CallLogRow | None],
    ) -> None:
        self._connect = connect
        self._journaled = journaled
        self._conn: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()  # a fetch and close never overlap
        self._closed = False
        self._waiting: dict[str, asyncio.Future[AnswerRow | None]] = {}
        self._fetching: asyncio.Task[None] | None = None

    async def get(self, key: str) -> AnswerRow | None:
        """The stored answer of ``key``, or None when the store has none."""
        row = self._journaled(key)
        if row is not None:
            return answer_row(row)
        fut = self._waiting.get(key)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._waiting[key] = fut
            if self._fetching is None:
                self._fetching = asyncio.ensure_future(self._fetch_waiting())
        # shielded: a caller that is cancelled leaves the answer to others waiting for it
        return await asyncio.shield(fut)

    async def _fetch_waiting(self) -> None:
        try:
            while self._waiting:
                keys = list(itertools.islice(self._waiting, self.MOST))
                group = {key: self._waiting.pop(key) for key in keys}
                try:
                    found = await anyio.to_thread.run_sync(self._fetch, keys)
                except Exception as exc:  # the store's error reaches each call that asked
                    for fut in group.values():
                        if not fut.done():
                            fut.set_exception(exc)
                            fut.exception()  # retrieved: a cancelled caller leaves it unread
                    continue
                for key, fut in group.items():
                    if not fut.done():
                        fut.set_result(found.get(key))
        finally:
            self._fetching = None

    def _fetch(self, keys: list[str]) -> dict[str, AnswerRow]:
        with self._lock:
            if self._closed:  # not "no answer": that would send, and pay for, a call again
                raise StoreError("the store was closed while calls were waiting for its answers")
            if self._conn is None:
                self._conn = self._connect()
            rows = self._conn.execute(_ANSWERS, [[key_prefix(k) for k in keys], keys]).fetchall()
        found: dict[str, AnswerRow] = {}
        for key, *answer in rows:
            found.setdefault(key, tuple(answer))  # the first answered, as a single lookup's
        return found

    def close(self) -> None:
        """Close the worker's connection (a fetch under way ends first)."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
