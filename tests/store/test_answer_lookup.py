"""Stored answers fetched in groups: one query for the keys asked together, the journal's
answers without a query, the first answer of a key, and no "no answer" once closed."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from halugen.errors import StoreError
from halugen.store.db import Store, open_store
from halugen.store.journal import Journal
from halugen.store.key_index import key_prefix
from halugen.store.rows import CallLogRow

RUN = "r-answers"


def key(i: int) -> str:
    return hashlib.sha256(f"request {i}".encode()).hexdigest()


def answered(call_id: int, k: str, body: str, *, status: str = "ok") -> CallLogRow:
    return CallLogRow(
        call_id, k, key_prefix(k), RUN, "sample", "qa", "m", None, status, 100 + call_id,
        10, 0, False, 90, 120, 500, 12.5, 1, 200, None, None, "stop", None, body,
    )  # fmt: skip


class CountingConnection:
    """The worker's connection, counting its queries."""

    def __init__(self, conn: Any, queries: list[int]) -> None:
        self._conn = conn
        self._queries = queries

    def execute(self, sql: str, params: list[Any]) -> Any:
        self._queries.append(len(params[1]))
        return self._conn.execute(sql, params)

    def close(self) -> None:
        self._conn.close()


def stored(tmp_path: Path, rows: list[CallLogRow]) -> tuple[Store, list[int]]:
    store = open_store(tmp_path / "s.duckdb", serve_reads=False)
    store.writer.put(rows)
    store.writer.flush_blocking()
    queries: list[int] = []
    answers = store.answers
    cursor = answers._connect
    answers._connect = lambda: CountingConnection(cursor(), queries)  # type: ignore[method-assign,assignment,return-value]
    return store, queries


def test_keys_asked_together_are_fetched_in_one_query(tmp_path):
    rows = [answered(i, key(i), f'{{"n":{i}}}') for i in range(1, 41)]
    store, queries = stored(tmp_path, rows)

    async def main() -> list[Any]:
        asked = [key(i) for i in range(1, 41)] + [key(999)]
        return await asyncio.gather(*(store.answers.get(k) for k in asked))

    found = asyncio.run(main())
    assert queries == [41]
    # the same rows as one lookup at a time, and nothing for a key the store lacks
    assert found[:40] == [store.cached_response(key(i)) for i in range(1, 41)]
    assert found[0] == ('{"n":1}', 101, 10, 0, False)
    assert found[40] is None
    store.close()


def test_a_keys_first_answer_wins_and_failed_calls_are_no_answer(tmp_path):
    k = key(1)
    rows = [
        answered(3, k, '{"second":true}'),
        answered(2, k, '{"first":true}'),
        answered(4, key(2), "", status="failed"),
    ]
    store, _ = stored(tmp_path, rows)

    async def main() -> tuple[Any, Any]:
        return await store.answers.get(k), await store.answers.get(key(2))

    first, failed = asyncio.run(main())
    assert first is not None and first[0] == '{"first":true}'
    assert first == store.cached_response(k)
    assert failed is None
    store.close()


def test_an_answer_in_the_journal_needs_no_query(tmp_path):
    db = tmp_path / "s.duckdb"
    store = open_store(db, serve_reads=False)
    store.writer._open_journal = lambda: Journal(db, store.conn.cursor(), feed_seconds=3600)
    queries: list[int] = []
    answers = store.answers
    cursor = answers._connect
    answers._connect = lambda: CountingConnection(cursor(), queries)  # type: ignore[method-assign,assignment,return-value]

    async def main() -> Any:
        await store.writer.put_journaled([answered(1, key(1), '{"j":1}')])
        return await store.answers.get(key(1))

    assert asyncio.run(main()) == ('{"j":1}', 101, 10, 0, False)
    assert queries == []
    store.close()


def test_a_cancelled_caller_leaves_the_answer_to_the_others(tmp_path):
    store, queries = stored(tmp_path, [answered(1, key(1), '{"n":1}')])

    async def main() -> Any:
        first = asyncio.ensure_future(store.answers.get(key(1)))
        second = asyncio.ensure_future(store.answers.get(key(1)))
        await asyncio.sleep(0)
        first.cancel()
        return await second

    assert asyncio.run(main()) == ('{"n":1}', 101, 10, 0, False)
    assert queries == [1]
    store.close()


def test_after_close_a_lookup_fails_rather_than_saying_no_answer(tmp_path):
    store, _ = stored(tmp_path, [answered(1, key(1), '{"n":1}')])
    answers = store.answers
    answers.close()

    async def main() -> Any:
        return await answers.get(key(1))

    # "no answer" would send the call again and pay for it twice
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(main())
    store.close()
