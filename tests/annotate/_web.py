"""Helpers of the annotation server tests: items, a fake clock, one browser per annotator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from aiohttp.test_utils import TestServer

from halugen.annotate.server import build_app
from halugen.store.db import Store
from halugen.store.rows import AnnotationItemRow

RESPONSE = "The tower was finished in 1999 by Gustave Eiffel."
TRICKY = "<script>alert(1)</script> & \"quotes\" 'x' <b>bold</b> \u2028 caf\u00e9 \U0001f5fc"


def add_items(store: Store, items: list[tuple[str, str, str]]) -> None:
    store.writer.put(
        [
            AnnotationItemRow(item_id, "jsonl", None, query, response, None)
            for item_id, query, response in items
        ]
    )
    store.writer.flush_blocking(10)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Annotator:
    """One person's browser: its own cookie jar against the shared test server."""

    def __init__(self, server: TestServer, name: str | None = None) -> None:
        self.server = server
        self.name = name
        self.session = aiohttp.ClientSession(
            cookie_jar=aiohttp.CookieJar(unsafe=True), headers={"X-Halugen": "1"}
        )

    async def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        kwargs: dict[str, Any] = {"headers": headers or {}}
        if body is not None:
            kwargs["data"] = body if isinstance(body, bytes) else orjson.dumps(body)
            kwargs["headers"]["Content-Type"] = "application/json"
        async with self.session.request(method, self.server.make_url(path), **kwargs) as r:
            raw = await r.read()
            try:
                return r.status, orjson.loads(raw)
            except orjson.JSONDecodeError:
                return r.status, raw

    async def login(self, token: str | None = None) -> None:
        status, data = await self.call(
            "POST", "/api/login", {"annotator": self.name, "token": token}
        )
        assert status == 200, data

    async def next(self) -> dict[str, Any]:
        status, data = await self.call("GET", "/api/next")
        assert status == 200, data
        return data

    async def label(
        self,
        item_id: str,
        label: str,
        spans: list[dict[str, Any]] | None = None,
        note: str | None = None,
    ) -> tuple[int, Any]:
        return await self.call(
            "POST",
            "/api/label",
            {"item_id": item_id, "label": label, "spans": spans or [], "note": note},
        )

    async def close(self) -> None:
        await self.session.close()


Scenario = Callable[[TestServer, Callable[[str | None], Awaitable[Annotator]]], Awaitable[None]]


def run(store: Store, scenario: Scenario, **app_kwargs: Any) -> None:
    async def main() -> None:
        server = TestServer(build_app(store, **app_kwargs), host="127.0.0.1")
        await server.start_server()
        people: list[Annotator] = []

        async def person(name: str | None, login: bool = True) -> Annotator:
            a = Annotator(server, name)
            people.append(a)
            if login and name is not None:
                await a.login()
            return a

        try:
            await scenario(server, person)
        finally:
            for a in people:
                await a.close()
            await server.close()

    asyncio.run(main())


def latest(store: Store) -> dict[tuple[str, str], tuple[Any, ...]]:
    cur = store.conn.cursor()  # a fresh connection: sees committed rows only
    try:
        rows = cur.execute(
            "SELECT item_id, annotator, label, spans_json, note, source FROM annotations_latest"
        ).fetchall()
    finally:
        cur.close()
    return {(r[0], r[1]): r[2:] for r in rows}
