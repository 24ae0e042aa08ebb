"""The view's aiohttp app: one page and a read-only JSON API over a store.

Routes (all GET; nothing on this server changes the store)::

    GET /?token=T         checks the token, hands over a cookie and sends the browser to /
    GET /                 the page (static/index.html, view.js, view.css; no build)
    GET /api/facets       what the filters offer: runs, tasks, patterns, guards, cost range
    GET /api/seeds        the seeds that pass the filters (query: run, task, pattern,
                          outcome, guard, verify, cost_min, cost_max, q, limit, offset)
    GET /api/seed         one seed's story (query: run, task, key)

Every API answer says whether a running process answered (``live``). The API needs the
server's token (its cookie, HttpOnly and SameSite=Strict): the address ``halugen view``
prints carries it, so another user of this machine, who can reach loopback too, cannot
read the store. The page's own files hold no data and need no token. The binding, Host
check, headers and JSON answers are those of the annotation page (``local_page``).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import duckdb
from aiohttp import web

from ..errors import HalugenError
from ..local_page import (
    LOOPBACK_HOSTS,
    add_security_headers,
    host_allowed,
    json_error,
    json_response,
    load_static,
    token_ok,
)
from ..store.db import Store
from ..store.view_queries import SeedFilter, view_facets, view_seed, view_seeds
from .reader import StoreReader
from .story import seed_story

__all__ = ["COOKIE", "build_app"]

COOKIE = "halugen_view"
_MAX_PAGE = 1000
_HTML = "text/html; charset=utf-8"
_JS = "text/javascript; charset=utf-8"
_STATIC = {  # URL path -> (package, file in its static/, content type)
    "/": (__package__, "index.html", _HTML),
    "/static/view.js": (__package__, "view.js", _JS),
    "/static/view.css": (__package__, "view.css", "text/css; charset=utf-8"),
    # the annotation page's request helper and icon, as they are
    "/static/api.js": ("halugen.annotate", "api.js", _JS),
    "/static/favicon.svg": ("halugen.annotate", "favicon.svg", "image/svg+xml"),
    "/favicon.ico": ("halugen.annotate", "favicon.svg", "image/svg+xml"),
}


@dataclass
class _State:
    reader: StoreReader
    token: str
    allowed_hosts: frozenset[str] | None
    static: dict[str, tuple[bytes, str]]


STATE = web.AppKey("halugen_view", _State)


class _BadQuery(ValueError):
    """A query parameter that does not read: answered 400 with its message."""


def build_app(
    reader: StoreReader, *, token: str, allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS
) -> web.Application:
    """The view over the store ``reader`` reads. ``token``: what the API asks for (the
    address printed carries it); ``allowed_hosts``: Host names answered (None: any)."""
    state = _State(
        reader=reader,
        token=token,
        allowed_hosts=frozenset(h.lower() for h in allowed_hosts)
        if allowed_hosts is not None
        else None,
        static=load_static(_STATIC),
    )

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if not host_allowed(request, state.allowed_hosts):
            return json_error(421, "unexpected Host header")
        if request.path.startswith("/api/") and not token_ok(
            request.cookies.get(COOKIE), state.token
        ):
            return json_error(
                401, "open the address 'halugen view' printed: it carries this page's token"
            )
        try:
            return await handler(request)
        except _BadQuery as exc:
            return json_error(400, str(exc))
        except HalugenError as exc:  # the store cannot be read now: say why, keep serving
            return json_error(503, str(exc))
        except duckdb.Error as exc:
            return json_error(500, f"the store could not answer: {str(exc).splitlines()[0]}")

    async def let_go(app: web.Application) -> None:
        await asyncio.to_thread(reader.close)

    app = web.Application(middlewares=[guard])
    app[STATE] = state
    app.on_response_prepare.append(add_security_headers)
    app.on_cleanup.append(let_go)
    app.router.add_get("/", _index)
    for path in _STATIC:
        if path != "/":
            app.router.add_get(path, _static)
    app.router.add_get("/api/facets", _facets)
    app.router.add_get("/api/seeds", _seeds)
    app.router.add_get("/api/seed", _seed)
    return app


async def _read(request: web.Request, fn: Callable[[Store], Any]) -> web.Response:
    result, live = await asyncio.to_thread(request.app[STATE].reader.read, fn)
    if result is None:
        return json_error(404, "no such seed in this store")
    return json_response({**result, "live": live})


async def _index(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    if "token" in request.query:
        if not token_ok(request.query["token"], state.token):
            return json_error(403, "wrong token: open the address 'halugen view' printed")
        # the token leaves the address bar (and the history) once it is in the cookie
        resp = web.Response(status=303, headers={"Location": "/"})
        resp.set_cookie(COOKIE, state.token, httponly=True, samesite="Strict", path="/")
        return resp
    return await _static(request)


async def _static(request: web.Request) -> web.Response:
    body, ctype = request.app[STATE].static[request.path]
    return web.Response(body=body, headers={"Content-Type": ctype})


async def _facets(request: web.Request) -> web.Response:
    return await _read(request, view_facets)


def _number(query: Any, name: str) -> float | None:
    raw = query.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise _BadQuery(f"{name} must be a number of dollars, not {raw!r}") from None
    if not math.isfinite(value):
        raise _BadQuery(f"{name} must be a finite number, not {raw!r}")
    return value


def _count(query: Any, name: str, default: int, top: int) -> int:
    raw = query.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise _BadQuery(f"{name} must be a whole number, not {raw!r}")
    return min(int(raw), top)


async def _seeds(request: web.Request) -> web.Response:
    q = request.query
    where = SeedFilter(
        run_id=q.get("run") or None,
        task=q.get("task") or None,
        pattern=q.get("pattern") or None,
        outcome=q.get("outcome") or None,
        guard=q.get("guard") or None,
        verify=q.get("verify") or None,
        cost_min=_number(q, "cost_min"),
        cost_max=_number(q, "cost_max"),
        text=q.get("q", "").strip() or None,
    )
    limit = _count(q, "limit", 200, _MAX_PAGE)
    offset = _count(q, "offset", 0, 2**62)

    def read(store: Store) -> dict[str, Any]:
        total, rows = view_seeds(store, where, limit=limit, offset=offset)
        return {"total": total, "offset": offset, "seeds": rows}

    return await _read(request, read)


async def _seed(request: web.Request) -> web.Response:
    q = request.query
    run, task, key = q.get("run"), q.get("task"), q.get("key")
    if not (run and task and key):
        raise _BadQuery("a seed is named by run, task and key")

    reader = request.app[STATE].reader

    def read(store: Store) -> dict[str, Any] | None:
        raw = view_seed(store, run, task, key)
        return None if raw is None else seed_story(raw, reader.tasks)

    return await _read(request, read)
