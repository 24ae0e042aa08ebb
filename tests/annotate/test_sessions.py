"""Logins and leases survive a restart of the annotation server (they are kept in the store)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from halugen.annotate.server import COOKIE, ORGANISER_COOKIE, build_app
from halugen.store.db import Store, open_store

from ._web import Annotator, Clock, add_items

ITEMS = [("i1", "q1", "r one"), ("i2", "q2", "r two"), ("i3", "q3", "r three")]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "restart.duckdb"
    with open_store(path) as s:
        add_items(s, ITEMS)
    return path


Step = Callable[[TestServer, Store], Awaitable[None]]


def serve_once(db: Path, step: Step, **app_kwargs: Any) -> None:
    """One life of the server: open the store, serve, run ``step``, shut down, close the store
    (what a restart of ``halugen annotate serve`` does)."""

    async def main() -> None:
        store = open_store(db)
        try:
            server = TestServer(build_app(store, **app_kwargs), host="127.0.0.1")
            await server.start_server()
            try:
                await step(server, store)
            finally:
                await server.close()
        finally:
            store.close()

    asyncio.run(main())


class Browser:
    """A browser that keeps its cookies across server restarts (same host and port)."""

    def __init__(self) -> None:
        self.cookies: dict[str, str] = {}

    def attach(self, server: TestServer, name: str | None = None) -> Annotator:
        a = Annotator(server, name)
        if self.cookies:
            a.session.cookie_jar.update_cookies(self.cookies, server.make_url("/"))
        return a

    def keep(self, a: Annotator) -> None:
        self.cookies = {c.key: c.value for c in a.session.cookie_jar}


def test_a_login_and_its_lease_survive_a_restart(db: Path) -> None:
    clock = Clock()
    ann1, ann2 = Browser(), Browser()

    async def first(server: TestServer, store: Store) -> None:
        a = ann1.attach(server, "ann1")
        b = ann2.attach(server, "ann2")
        try:
            await a.login()
            await b.login()
            assert (await a.next())["id"] == "i1"  # leased to ann1: per_item 1 keeps it theirs
            assert (await b.next())["id"] == "i2"
            assert (await b.label("i2", "no"))[0] == 200
            ann1.keep(a)
            ann2.keep(b)
        finally:
            await a.close()
            await b.close()

    async def second(server: TestServer, store: Store) -> None:
        a = ann1.attach(server)
        b = ann2.attach(server)
        c = Annotator(server, "ann3")
        try:
            _, data = await a.call("GET", "/api/session")
            assert data["annotator"] == "ann1"  # still logged in
            assert (await b.call("GET", "/api/session"))[1]["annotator"] == "ann2"
            assert (await b.next())["id"] == "i3"  # not i1: ann1's lease came back too
            # ann3 finds nothing: i1 and i3 leased, i2 labelled
            await c.login()
            assert (await c.next()) == {"done": True, "prev": None}
            assert (await a.next())["id"] == "i1"  # ann1 is still on i1
        finally:
            for p in (a, b, c):
                await p.close()

    serve_once(db, first, per_item=1, clock=clock)
    serve_once(db, second, per_item=1, clock=clock)


def test_expired_and_released_leases_are_not_restored(db: Path) -> None:
    clock = Clock()

    async def first(server: TestServer, store: Store) -> None:
        a = Annotator(server, "a")
        try:
            await a.login()
            assert (await a.next())["id"] == "i1"
            assert (await a.label("i1", "yes"))[0] == 200  # the label holds i1 now
            assert (await a.next())["id"] == "i2"  # leased, then left to expire
        finally:
            await a.close()

    async def second(server: TestServer, store: Store) -> None:
        b = Annotator(server, "b")
        try:
            await b.login()
            assert (await b.next())["id"] == "i2"  # a's lease on i2 is over
        finally:
            await b.close()

    serve_once(db, first, per_item=1, clock=clock, lease_seconds=600)
    clock.t += 601
    serve_once(db, second, per_item=1, clock=clock, lease_seconds=600)


def test_logout_is_kept_and_the_store_holds_no_cookie(db: Path) -> None:
    browser = Browser()
    seen: dict[str, str] = {}

    async def first(server: TestServer, store: Store) -> None:
        a = browser.attach(server, "ann1")
        try:
            await a.login()
            browser.keep(a)
            seen["cookie"] = browser.cookies[COOKIE]
            await a.call("POST", "/api/logout", {})
        finally:
            await a.close()

    async def second(server: TestServer, store: Store) -> None:
        a = browser.attach(server)  # the old cookie, replayed
        try:
            assert (await a.call("GET", "/api/next"))[0] == 401
        finally:
            await a.close()
        rows = store.query("SELECT * FROM annotation_sessions")
        cookie = seen["cookie"]
        assert all(cookie not in str(value) for row in rows for value in row)
        digest = hashlib.sha256(cookie.encode()).hexdigest()
        events = store.query(
            "SELECT event FROM annotation_sessions WHERE session_hash = ? ORDER BY created_at",
            [digest],
        )
        assert events == [("login",), ("logout",)]

    serve_once(db, first)
    serve_once(db, second)


def test_a_new_tokens_file_ends_the_sessions_it_no_longer_allows(db: Path) -> None:
    old = {"ann1": "token-one", "ann2": "token-two"}
    new = {"ann1": "token-one", "ann2": "rotated"}
    ann1, ann2, organiser = Browser(), Browser(), Browser()

    async def first(server: TestServer, store: Store) -> None:
        people = [ann1.attach(server, "ann1"), ann2.attach(server, "ann2")]
        org = organiser.attach(server)
        try:
            await people[0].login("token-one")
            await people[1].login("token-two")
            status, _ = await org.call("POST", "/api/organiser/login", {"token": "org-1"})
            assert status == 200
            ann1.keep(people[0])
            ann2.keep(people[1])
            organiser.keep(org)
        finally:
            for p in (*people, org):
                await p.close()

    async def second(server: TestServer, store: Store) -> None:
        a, b, org = ann1.attach(server), ann2.attach(server), organiser.attach(server)
        try:
            assert (await a.call("GET", "/api/session"))[1]["annotator"] == "ann1"
            assert (await b.call("GET", "/api/session"))[1]["annotator"] is None
            assert (await b.call("GET", "/api/next"))[0] == 401
            assert (await org.call("GET", "/api/organiser/overview"))[0] == 200
        finally:
            for p in (a, b, org):
                await p.close()

    async def third(server: TestServer, store: Store) -> None:
        org = organiser.attach(server)
        try:  # a new organiser token: the old organiser session is over
            assert (await org.call("GET", "/api/organiser/overview"))[0] == 401
        finally:
            await org.close()

    serve_once(db, first, tokens=old, organiser_token="org-1", allowed_hosts=None)
    serve_once(db, second, tokens=new, organiser_token="org-1", allowed_hosts=None)
    serve_once(db, third, tokens=new, organiser_token="org-2", allowed_hosts=None)
    assert ORGANISER_COOKIE in organiser.cookies


def test_a_served_store_keeps_sessions_across_serve_calls(tmp_path: Path) -> None:
    """The same through ``serve`` on a real port, as ``annotate serve`` runs it twice."""
    from halugen.annotate.serving import ServeOptions, serve

    db = tmp_path / "served.duckdb"
    with open_store(db) as s:
        add_items(s, ITEMS)

    async def main() -> None:
        jar = aiohttp.CookieJar(unsafe=True)
        h = {"X-Halugen": "1"}
        server = await serve(db, ServeOptions(port=0))
        port = server.port
        try:
            async with (
                aiohttp.ClientSession(cookie_jar=jar) as http,
                http.post(server.url + "api/login", headers=h, json={"annotator": "ann1"}) as r,
            ):
                assert r.status == 200
        finally:
            await server.close()
        server = await serve(db, ServeOptions(port=port))
        try:
            async with (
                aiohttp.ClientSession(cookie_jar=jar) as http,
                http.get(server.url + "api/session") as r,
            ):
                assert (await r.json())["annotator"] == "ann1"
        finally:
            await server.close()

    asyncio.run(main())
