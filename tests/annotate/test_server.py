"""The annotation server's JSON API, through aiohttp's test server on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestServer

from halugen.annotate.access import check_bind, make_tokens, validate_name
from halugen.annotate.assign import Assigner, Leases
from halugen.annotate.label_body import parse_label
from halugen.annotate.serving import ServeOptions, serve
from halugen.errors import UsageError
from halugen.local_page import is_loopback
from halugen.store.db import Store, open_store

from ._web import TRICKY, Clock, add_items, latest, run


# -- names, tokens, binding ----------------------------------------------------------------
def test_validate_name() -> None:
    assert validate_name("  Ann 1.x_y-z ") == "Ann 1.x_y-z"
    assert validate_name("Zoë") == "Zoë"
    assert validate_name("a" * 64) == "a" * 64
    for bad in ("", "   ", "a" * 65, "<b>x</b>", "a/b", "a\nb", "x;y", 5, None):
        with pytest.raises(UsageError):
            validate_name(bad)


def test_make_tokens() -> None:
    tokens = make_tokens(["a", "b", "c"])
    assert sorted(tokens) == ["a", "b", "c"]
    assert len(set(tokens.values())) == 3
    assert all(
        len(t) >= 32 and t.replace("-", "").replace("_", "").isalnum() for t in tokens.values()
    )
    with pytest.raises(UsageError):
        make_tokens(["a", "a"])
    with pytest.raises(UsageError):
        make_tokens(["<b>"])
    with pytest.raises(UsageError):
        make_tokens([])


def test_remote_bind_needs_flag_and_tokens(tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("[::1]") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert not is_loopback("example.org")
    check_bind("127.0.0.1", allow_remote=False, tokens=None)
    with pytest.raises(UsageError, match="--allow-remote"):
        check_bind("0.0.0.0", allow_remote=False, tokens={"a": "t"})
    with pytest.raises(UsageError, match="token"):
        check_bind("0.0.0.0", allow_remote=True, tokens=None)
    check_bind("0.0.0.0", allow_remote=True, tokens={"a": "t"})

    db = tmp_path / "remote.duckdb"
    with pytest.raises(UsageError, match="--allow-remote"):
        asyncio.run(serve(db, ServeOptions(host="0.0.0.0", port=0)))
    with pytest.raises(UsageError, match="token"):
        asyncio.run(serve(db, ServeOptions(host="0.0.0.0", port=0, allow_remote=True)))
    assert not db.exists()  # refused before anything was opened


def test_a_port_in_use_is_named_with_what_to_do(tmp_path: Path) -> None:
    import socket

    db = tmp_path / "busy.duckdb"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use.*--port"):
            asyncio.run(serve(db, ServeOptions(port=port)))
    with open_store(db):  # and the store it opened was let go
        pass


def test_serve_on_loopback_and_tokens_enforced(tmp_path: Path) -> None:
    db = tmp_path / "served.duckdb"
    with open_store(db) as s:
        add_items(s, [("i1", "q", "r")])
    tokens = {"ann1": "secret-token-1"}

    async def main() -> None:
        server = await serve(db, ServeOptions(port=0, tokens=tokens))
        try:
            assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}/"
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
                h = {"X-Halugen": "1"}
                async with http.get(server.url) as r:
                    assert r.status == 200
                    assert "halugen annotation" in await r.text()
                async with http.post(
                    server.url + "api/login", headers=h, json={"annotator": "ann1"}
                ) as r:
                    assert r.status == 403
                async with http.post(
                    server.url + "api/login",
                    headers=h,
                    json={"annotator": "ann1", "token": "secret-token-1"},
                ) as r:
                    assert r.status == 200
                async with http.get(server.url + "api/next") as r:
                    assert (await r.json())["id"] == "i1"
        finally:
            await server.close()

    asyncio.run(main())
    with open_store(db, read_only=True):
        pass  # the server let go of the file


def test_tokens_required_when_given(store: Store) -> None:
    tokens = make_tokens(["ann1", "ann2"])

    async def scenario(server: TestServer, person: Any) -> None:
        a = await person(None)
        status, data = await a.call("GET", "/api/session")
        assert status == 200 and data["tokens_required"] is True and data["annotator"] is None
        for body in (
            {"annotator": "ann1"},
            {"annotator": "ann1", "token": "wrong"},
            {"annotator": "ann1", "token": tokens["ann2"]},
            {"annotator": "stranger", "token": tokens["ann1"]},
            {"annotator": "ann1", "token": 12},
        ):
            status, data = await a.call("POST", "/api/login", body)
            assert status == 403, body
            assert data == {"error": "unknown annotator or wrong token"}
        assert (await a.call("GET", "/api/next"))[0] == 401
        a.name = "ann1"
        await a.login(tokens["ann1"])
        assert (await a.next())["id"] == "i1"

    # allowed_hosts=None: what a non-loopback bind uses
    run(store, scenario, tokens=tokens, allowed_hosts=None)


# -- login, sessions, request guards -------------------------------------------------------
def test_login_validation_and_session_cookie(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a = await person(None)
        assert (await a.call("GET", "/api/next"))[0] == 401
        assert (await a.call("GET", "/api/progress"))[0] == 401
        for bad in ("", "a" * 65, "<b>x</b>", "a/b", 7, None):
            status, data = await a.call("POST", "/api/login", {"annotator": bad})
            assert status == 400 and "annotator name" in data["error"], bad
        assert (await a.call("POST", "/api/login", b"not json"))[0] == 400
        assert (await a.call("POST", "/api/login", ["ann1"]))[0] == 400

        url = server.make_url("/api/login")
        async with a.session.post(url, json={"annotator": " Ann 1.x_y-z "}) as r:
            assert r.status == 200
            assert (await r.json()) == {"annotator": "Ann 1.x_y-z"}
            cookie = r.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        status, data = await a.call("GET", "/api/session")
        assert data["annotator"] == "Ann 1.x_y-z"
        assert data["kinds"] == ["unverifiable", "non-factual", "irrelevant"]
        assert (await a.call("GET", "/api/next"))[0] == 200

        # a forged cookie is nobody
        b = await person(None)
        b.session.cookie_jar.update_cookies({"halugen_session": "forged"}, server.make_url("/"))
        assert (await b.call("GET", "/api/next"))[0] == 401

        assert (await a.call("POST", "/api/logout", {}))[0] == 200
        assert (await a.call("GET", "/api/next"))[0] == 401

    run(store, scenario)


def test_posts_need_the_custom_header_and_host_is_checked(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a = await person("ann1")
        item = await a.next()
        # a cross-site form post cannot set X-Halugen
        async with aiohttp.ClientSession(cookie_jar=a.session.cookie_jar) as bare:
            async with bare.post(
                server.make_url("/api/label"),
                json={"item_id": item["id"], "label": "no", "spans": []},
            ) as r:
                assert r.status == 403
            async with bare.post(server.make_url("/api/login"), json={"annotator": "x"}) as r:
                assert r.status == 403
            # DNS rebinding: a page on another name reaching the loopback server
            async with bare.get(
                server.make_url("/api/next"), headers={"Host": "attacker.example:80"}
            ) as r:
                assert r.status == 421
            async with bare.get(server.make_url("/"), headers={"Host": "localhost"}) as r:
                assert r.status == 200
        assert latest(store) == {}

    run(store, scenario)


def test_page_and_security_headers(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        async with aiohttp.ClientSession() as http:
            for path, ctype in (
                ("/", "text/html"),
                ("/static/app.js", "text/javascript"),
                ("/static/style.css", "text/css"),
            ):
                async with http.get(server.make_url(path)) as r:
                    assert r.status == 200
                    assert r.headers["Content-Type"].startswith(ctype)
                    csp = r.headers["Content-Security-Policy"]
                    assert "script-src 'self'" in csp and "default-src 'none'" in csp
                    assert r.headers["X-Content-Type-Options"] == "nosniff"
                    text = await r.text()
                    # offline: nothing fetched from elsewhere
                    assert "http://" not in text and "https://" not in text and "//cdn" not in text
                    if path == "/static/app.js":
                        assert "innerHTML" not in text and "insertAdjacentHTML" not in text
            async with http.get(server.make_url("/static/../server.py")) as r:
                assert r.status == 404

    run(store, scenario)


# -- assignment ----------------------------------------------------------------------------
def test_each_item_goes_to_at_most_three_annotators(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a, b, c, d = [await person(n) for n in ("a", "b", "c", "d")]
        # four people start at once: the leases keep the fourth off i1
        assert [(await p.next())["id"] for p in (a, b, c, d)] == ["i1", "i1", "i1", "i2"]
        # asking again renews the same item
        assert (await d.next())["id"] == "i2"
        # d cannot label i1 directly either
        status, data = await d.label("i1", "no")
        assert status == 409 and "3 annotators" in data["error"]
        for p in (a, b, c):
            assert (await p.label("i1", "no"))[0] == 200
        status, _ = await d.label("i2", "no")
        assert status == 200
        # i1 is full for good now; d moves to i3 and e, f, g fill i2 and i3
        assert (await d.next())["id"] == "i3"
        e = await person("e")
        assert (await e.next())["id"] == "i2"
        f = await person("f")
        assert (await f.next())["id"] == "i2"
        g = await person("g")
        assert (await g.next())["id"] == "i3"  # i2: d's label + e's and f's leases
        h = await person("h")
        assert (await h.next())["id"] == "i3"
        k = await person("k")
        assert await k.next() == {"done": True, "prev": None}
        status, data = await k.call("GET", "/api/progress")
        assert data["mine"] == {"labelled": 0, "available": 0}
        assert data["overall"] == {
            "items": 3,
            "complete": 1,
            "labels": 4,
            "target": 9,
            "per_item": 3,
        }

    run(store, scenario)
    labels = latest(store)
    assert sorted({a for (item, a) in labels if item == "i1"}) == ["a", "b", "c"]


def test_leases_expire(store: Store) -> None:
    clock = Clock()

    async def scenario(server: TestServer, person: Any) -> None:
        a, b, c, d = [await person(n) for n in ("a", "b", "c", "d")]
        assert [(await p.next())["id"] for p in (a, b, c, d)] == ["i1", "i1", "i1", "i2"]
        clock.t += 599
        e = await person("e")
        assert (await e.next())["id"] == "i2"
        clock.t += 2  # a, b, c, d's leases are over; e's (at +599) is not
        f = await person("f")
        assert (await f.next())["id"] == "i1"
        # d's lease expired and i2 is free enough: d may still label it
        assert (await d.label("i2", "yes"))[0] == 200

    run(store, scenario, clock=clock, lease_seconds=600)


def test_concurrent_labels_for_the_last_place(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a, b, c, d = [await person(n) for n in ("a", "b", "c", "d")]
        for p in (a, b):
            await p.next()
            assert (await p.label("i1", "no"))[0] == 200
        # c and d never asked for i1; both try to take its last place at once
        results = await asyncio.gather(c.label("i1", "yes"), d.label("i1", "yes"))
        assert sorted(status for status, _ in results) == [200, 409]

    run(store, scenario)
    assert len({a for (item, a) in latest(store) if item == "i1"}) == 3


def test_revisiting_own_items_and_position(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a = await person("a")
        first = await a.next()
        assert (first["id"], first["position"], first["prev"], first["label"]) == (
            "i1",
            "1 of 3",
            None,
            None,
        )
        span = {"start": 26, "end": 30, "kind": "non-factual"}
        status, saved = await a.label("i1", "yes", [span], note="wrong year")
        assert status == 200
        assert saved["spans"] == [dict(span, text="1999")]
        assert saved["progress"]["mine"] == {"labelled": 1, "available": 2}
        second = await a.next()
        assert (second["id"], second["position"], second["prev"]) == ("i2", "2 of 3", "i1")
        status, back = await a.call("GET", "/api/item/i1")
        assert status == 200
        assert back["label"] == {
            "label": "yes",
            "spans": [dict(span, text="1999")],
            "note": "wrong year",
        }
        assert (back["position"], back["prev"], back["next"]) == ("1 of 3", None, None)
        # relabel: the latest row wins
        assert (await a.label("i1", "no"))[0] == 200
        status, back = await a.call("GET", "/api/item/i1")
        assert back["label"] == {"label": "no", "spans": [], "note": None}
        # label i2, then i1 shows i2 as its next
        assert (await a.label("i2", "no"))[0] == 200
        assert (await a.call("GET", "/api/item/i1"))[1]["next"] == "i2"
        # an item never handed to a is not visible to a
        assert (await a.call("GET", "/api/item/i3"))[0] == 404
        assert (await a.call("GET", "/api/item/nope"))[0] == 404

    run(store, scenario)
    assert latest(store)[("i1", "a")][:2] == ("no", "[]")


def test_item_ids_with_slashes_and_percent(tmp_path: Path) -> None:
    with open_store(tmp_path / "ids.duckdb") as s:
        odd = "run-1/q:3%2F?x#y"
        add_items(s, [(odd, "q", "r")])

        async def scenario(server: TestServer, person: Any) -> None:
            a = await person("a")
            assert (await a.next())["id"] == odd
            from urllib.parse import quote

            status, data = await a.call("GET", "/api/item/" + quote(odd, safe=""))
            assert status == 200 and data["id"] == odd

        run(s, scenario)


# -- labels --------------------------------------------------------------------------------
def test_parse_label() -> None:
    text = "ab\U0001f5fccd"  # one code point that is two UTF-16 units
    label, spans, note = parse_label(
        {
            "label": "yes",
            "spans": [{"start": 2, "end": 4, "kind": "irrelevant", "text": "forged"}],
            "note": "",
        },
        text,
    )
    assert (label, note) == ("yes", None)
    assert spans == [{"start": 2, "end": 4, "text": "\U0001f5fcc", "kind": "irrelevant"}]


@pytest.mark.parametrize(
    "body, message",
    [
        ({"label": "maybe"}, "label must be"),
        ({"label": "yes", "spans": "0-3"}, "spans must be a list"),
        ({"label": "yes", "spans": [[0, 3]]}, "each span"),
        ({"label": "yes", "spans": [{"start": -1, "end": 3, "kind": "irrelevant"}]}, "outside"),
        ({"label": "yes", "spans": [{"start": 0, "end": 999, "kind": "irrelevant"}]}, "outside"),
        ({"label": "yes", "spans": [{"start": 3, "end": 3, "kind": "irrelevant"}]}, "empty"),
        ({"label": "yes", "spans": [{"start": 4, "end": 2, "kind": "irrelevant"}]}, "outside"),
        ({"label": "yes", "spans": [{"start": 0.0, "end": 2, "kind": "irrelevant"}]}, "integer"),
        ({"label": "yes", "spans": [{"start": True, "end": 2, "kind": "irrelevant"}]}, "integer"),
        ({"label": "yes", "spans": [{"start": "0", "end": 2, "kind": "irrelevant"}]}, "integer"),
        ({"label": "yes", "spans": [{"start": 0, "end": 2, "kind": "wrong"}]}, "kind"),
        ({"label": "yes", "spans": [{"start": 0, "end": 2}]}, "kind"),
        (
            {
                "label": "yes",
                "spans": [
                    {"start": 0, "end": 5, "kind": "irrelevant"},
                    {"start": 4, "end": 8, "kind": "non-factual"},
                ],
            },
            "overlap",
        ),
        (
            {"label": "no", "spans": [{"start": 0, "end": 2, "kind": "irrelevant"}]},
            "not hallucinated",
        ),
        ({"label": "no", "note": 5}, "note"),
        ({"label": "no", "note": "x" * 5000}, "note"),
    ],
)
def test_bad_labels_are_refused_and_not_stored(
    store: Store, body: dict[str, Any], message: str
) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a = await person("a")
        await a.next()
        status, data = await a.call("POST", "/api/label", {"item_id": "i1", **body})
        assert status == 400 and message in data["error"], data

    run(store, scenario)
    assert latest(store) == {}


def test_label_body_shape_and_unknown_item(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a = await person("a")
        await a.next()
        assert (await a.call("POST", "/api/label", b"{"))[0] == 400
        assert (await a.call("POST", "/api/label", [1, 2]))[0] == 400
        assert (await a.call("POST", "/api/label", {"label": "no"}))[0] == 400
        status, data = await a.label("missing", "no")
        assert status == 404 and data["error"] == "no such item"

    run(store, scenario)
    assert latest(store) == {}


def test_a_label_is_committed_before_the_answer(store: Store, tmp_path: Path) -> None:
    seen: list[Any] = []

    async def scenario(server: TestServer, person: Any) -> None:
        a = await person("a")
        await a.next()
        spans = [
            {"start": 4, "end": 9, "kind": "unverifiable"},
            {"start": 26, "end": 30, "kind": "non-factual"},
        ]
        status, _ = await a.label("i1", "yes", spans, note="two spans")
        assert status == 200
        # no flush, no wait: another connection sees the row as soon as the POST returned
        seen.append(latest(store)[("i1", "a")])

    run(store, scenario)
    label, spans_json, note, source = seen[0]
    assert (label, note, source) == ("yes", "two spans", "web")
    assert orjson.loads(spans_json) == [
        {"start": 4, "end": 9, "text": "tower", "kind": "unverifiable"},
        {"start": 26, "end": 30, "text": "1999", "kind": "non-factual"},
    ]
    # and it is on disk: a read-only open of the file after the store is closed sees it
    path = store.path
    store.close()
    with open_store(path, read_only=True) as ro:
        assert ro.query("SELECT label, annotator FROM annotations") == [("yes", "a")]


def test_no_annotator_sees_another_annotators_label(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        a, b = await person("a"), await person("b")
        await a.next()
        await a.label(
            "i1", "yes", [{"start": 26, "end": 30, "kind": "non-factual"}], note="SECRET-NOTE-A"
        )
        item = await b.next()
        assert item["id"] == "i1" and item["label"] is None
        for path in ("/api/next", "/api/item/i1", "/api/progress", "/api/session"):
            status, data = await b.call("GET", path)
            raw = orjson.dumps(data).decode()
            assert "SECRET-NOTE-A" not in raw and '"a"' not in raw, path
        # b labels; a still sees only their own label
        await b.label("i1", "no", note="SECRET-NOTE-B")
        status, mine = await a.call("GET", "/api/item/i1")
        assert status == 200 and mine["label"]["note"] == "SECRET-NOTE-A"
        assert "SECRET-NOTE-B" not in orjson.dumps(mine).decode()
        # labelling answers carry only the caller's own data
        _, saved = await b.label("i1", "no")
        assert "SECRET-NOTE-A" not in orjson.dumps(saved).decode()

    run(store, scenario)


def test_api_returns_raw_strings_untouched(store: Store) -> None:
    async def scenario(server: TestServer, person: Any) -> None:
        # take i1 and i2 out of the way so the tricky item comes first
        for n in ("a", "b", "c"):
            p = await person(n)
            for item_id in ("i1", "i2"):
                assert (await p.label(item_id, "no"))[0] == 200
        d = await person("d")
        item = await d.next()
        assert item["id"] == "i3"
        assert item["query"] == "Tricky <b>query</b>"
        assert item["response"] == TRICKY  # no HTML escaping, no normalisation
        start = TRICKY.index("<b>")
        status, saved = await d.label(
            "i3", "yes", [{"start": start, "end": start + 11, "kind": "irrelevant"}]
        )
        assert status == 200 and saved["spans"][0]["text"] == "<b>bold</b>"
        _, back = await d.call("GET", "/api/item/i3")
        assert back["label"]["spans"][0]["text"] == "<b>bold</b>"

    run(store, scenario)


def test_assigner_progress_counts_other_peoples_leases(store: Store) -> None:
    clock = Clock()
    assigner = Assigner(store, per_item=1, leases=Leases(600, clock))
    assert assigner.next_for("a") == "i1"
    assert assigner.next_for("b") == "i2"
    p = assigner.progress("c")
    assert (p.labelled, p.available, p.items, p.complete) == (0, 1, 3, 0)
    assert assigner.next_for("c") == "i3"
    assert assigner.next_for("d") is None
    clock.t += 601
    assert assigner.progress("d").available == 3
    with pytest.raises(ValueError):
        Assigner(store, per_item=0)
