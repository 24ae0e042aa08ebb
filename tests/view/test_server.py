"""The view's server: its JSON API, the token, the headers, loopback only, and reading a
store that a running process holds."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestServer

from halugen.errors import UnusableStore, UsageError
from halugen.local_page import SECURITY_HEADERS
from halugen.view.reader import StoreReader
from halugen.view.server import COOKIE, build_app
from halugen.view.serving import serve

from .simstore import ARTIFACT_SEEDS, SEEDS, SimStore

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "the-token"

Client = Callable[..., Awaitable[tuple[int, Any, Any]]]


def run(db: Path, scenario: Callable[[Client], Awaitable[None]]) -> None:
    """``scenario(call)`` against the app over ``db``; ``call(path, headers=, login=)``
    answers (status, JSON or bytes, headers), logged in with the token unless login=False."""

    async def main() -> None:
        server = TestServer(build_app(StoreReader(db), token=TOKEN), host="127.0.0.1")
        await server.start_server()
        jar = aiohttp.CookieJar(unsafe=True)
        session = aiohttp.ClientSession(cookie_jar=jar)

        async def call(
            path: str, headers: dict[str, str] | None = None, login: bool = True
        ) -> tuple[int, Any, Any]:
            cookies = {COOKIE: TOKEN} if login else {}
            async with session.get(
                server.make_url(path), headers=headers or {}, cookies=cookies, allow_redirects=False
            ) as r:
                raw = await r.read()
                try:
                    body: Any = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    body = raw
                return r.status, body, r.headers

        try:
            await scenario(call)
        finally:
            await session.close()
            await server.close()

    asyncio.run(main())


def test_the_api_lists_filters_and_tells_a_seeds_story(sim_store: SimStore) -> None:
    async def scenario(call: Client) -> None:
        status, facets, _ = await call("/api/facets")
        assert status == 200 and facets["live"] is False
        assert facets["tasks"] == [{"name": "qa", "n": SEEDS}]
        status, page, _ = await call("/api/seeds")
        assert status == 200 and page["total"] == SEEDS and len(page["seeds"]) == SEEDS
        status, page, _ = await call("/api/seeds?outcome=rejected&task=qa&limit=1")
        assert page["total"] == len(ARTIFACT_SEEDS) and len(page["seeds"]) == 1
        status, page, _ = await call("/api/seeds?guard=length_class&q=Brun4")
        assert [s["seed_id"] for s in page["seeds"]] == ["rec00004"]
        status, page, _ = await call("/api/seeds?outcome=sampled")
        seed = page["seeds"][0]
        status, story, _ = await call(
            f"/api/seed?run={seed['run_id']}&task=qa&key={seed['seed_key']}"
        )
        assert status == 200 and story["seed"]["seed_id"] == seed["seed_id"]
        assert story["cost_usd"] == pytest.approx(seed["cost_usd"])
        right = "".join(t for t, _ in story["diff"]["right"])
        assert right == story["record"]["right_answer"]
        assert any(changed for _, changed in story["diff"]["hallucinated"])
        assert any(c["verdict"] == "kept" for c in story["candidates"])

    run(sim_store.db, scenario)


def test_bad_queries_get_one_line_answers(sim_store: SimStore) -> None:
    async def scenario(call: Client) -> None:
        status, body, _ = await call("/api/seeds?cost_min=cheap")
        assert status == 400 and body == {
            "error": "cost_min must be a number of dollars, not 'cheap'"
        }
        status, body, _ = await call("/api/seeds?cost_max=nan")
        assert status == 400 and "finite" in body["error"]
        status, body, _ = await call("/api/seeds?limit=-1")
        assert status == 400
        status, body, _ = await call("/api/seed?run=x")
        assert status == 400 and "run, task and key" in body["error"]
        status, body, _ = await call("/api/seed?run=x&task=qa&key=y")
        assert status == 404

    run(sim_store.db, scenario)


def test_the_api_needs_the_token_and_the_page_does_not(sim_store: SimStore) -> None:
    async def scenario(call: Client) -> None:
        for path in ("/api/facets", "/api/seeds", "/api/seed?run=a&task=b&key=c"):
            status, body, _ = await call(path, login=False)
            assert status == 401 and "halugen view" in body["error"]
        status, _, _ = await call("/api/facets", headers={"Cookie": f"{COOKIE}=wrong"}, login=False)
        assert status == 401
        status, body, _ = await call("/", login=False)
        assert status == 200 and b"halugen view" in body
        status, _, _ = await call("/?token=wrong", login=False)
        assert status == 403
        status, _, headers = await call(f"/?token={TOKEN}", login=False)
        assert status == 303 and headers["Location"] == "/"
        cookie = headers["Set-Cookie"]
        assert cookie.startswith(f"{COOKIE}={TOKEN};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie

    run(sim_store.db, scenario)


def test_every_answer_has_the_security_headers(sim_store: SimStore) -> None:
    async def scenario(call: Client) -> None:
        for path in ("/", "/static/view.js", "/static/api.js", "/api/facets", "/api/nothing"):
            for login in (True, False):
                _, _, headers = await call(path, login=login)
                for name, value in SECURITY_HEADERS.items():
                    assert headers[name] == value, (path, name)
        _, _, headers = await call("/")
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert "unsafe-inline" not in headers["Content-Security-Policy"]

    run(sim_store.db, scenario)


def test_another_host_name_is_refused(sim_store: SimStore) -> None:
    """A page elsewhere that points a name of its own at 127.0.0.1 (DNS rebinding)."""

    async def scenario(call: Client) -> None:
        status, _, _ = await call("/api/facets", headers={"Host": "evil.example:80"})
        assert status == 421
        status, _, _ = await call("/", headers={"Host": "evil.example"}, login=False)
        assert status == 421
        status, _, _ = await call("/api/facets", headers={"Host": "localhost"})
        assert status == 200

    run(sim_store.db, scenario)


def test_the_page_uses_no_html_sinks() -> None:
    folder = ROOT / "halugen" / "view" / "static"
    script = (folder / "view.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script
    assert "<script>" not in (folder / "index.html").read_text()  # no inline script


def test_serve_listens_on_loopback_only(sim_store: SimStore) -> None:
    async def main() -> None:
        for host in ("0.0.0.0", "192.168.1.4", "example.org"):
            with pytest.raises(UsageError, match="this machine only"):
                await serve(sim_store.db, host=host, port=0)
        server = await serve(sim_store.db, port=0)
        try:
            assert server.host == "127.0.0.1"
            assert server.url == f"http://127.0.0.1:{server.port}/?token={server.token}"
            assert len(server.token) >= 32
            # a second server on the same port is refused in one line
            with pytest.raises(UsageError, match=f"port {server.port}"):
                await serve(sim_store.db, port=server.port)
        finally:
            await server.close()

    asyncio.run(main())


def test_serve_refuses_a_path_that_is_no_store(tmp_path: Path) -> None:
    async def main() -> None:
        with pytest.raises(UnusableStore, match="does not exist"):
            await serve(tmp_path / "missing.duckdb", port=0)
        (tmp_path / "notes.duckdb").write_text("a,b\n1,2\n")
        with pytest.raises(UnusableStore, match="not a DuckDB store"):
            await serve(tmp_path / "notes.duckdb", port=0)

    asyncio.run(main())


# A run's stand-in in a process of its own (DuckDB's lock is per process): holds the store
# open for writing, answering other processes' queries, until its stdin closes.
_HOLDER = textwrap.dedent(
    """
    import sys
    from halugen.store.db import open_store

    store = open_store(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.read()
    store.close()
    print("closed", flush=True)
    """
)


def test_a_store_a_run_holds_is_read_through_it_and_the_file_once_it_is_free(
    sim_store: SimStore, tmp_path: Path
) -> None:
    db = tmp_path / "held.duckdb"
    shutil.copy(sim_store.db, db)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"

        async def scenario(call: Client) -> None:
            status, page, _ = await call("/api/seeds?outcome=rejected")
            assert status == 200 and page["live"] is True
            assert page["total"] == len(ARTIFACT_SEEDS)
            seed = page["seeds"][0]
            status, story, _ = await call(
                f"/api/seed?run={seed['run_id']}&task=qa&key={seed['seed_key']}"
            )
            assert status == 200 and story["live"] is True
            assert story["seed"]["reason"] == "no_valid_candidate"
            assert holder.stdin is not None
            holder.stdin.close()  # the run ends and lets go of the file
            assert holder.stdout is not None and holder.stdout.readline().strip() == "closed"
            status, facets, _ = await call("/api/facets")
            assert status == 200 and facets["live"] is False

        run(db, scenario)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(30)


def test_the_port_is_free_again_after_close(sim_store: SimStore) -> None:
    async def main() -> int:
        server = await serve(sim_store.db, port=0)
        port = server.port
        await server.close()
        return port

    port = asyncio.run(main())
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
