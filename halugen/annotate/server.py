"""The browser annotation workflow: a small aiohttp app serving one page and a JSON API.

Routes (JSON bodies; every POST must carry ``X-Halugen: 1``, which a cross-site form or
simple request cannot send, so it doubles as CSRF protection next to the SameSite cookie)::

    GET  /                     the page (static/index.html, api.js, app.js, style.css; no build)
    GET  /favicon.ico          the page's icon (static/favicon.svg)
    GET  /api/session          who is logged in, whether tokens are needed, the span kinds
    POST /api/login            {annotator, token?} -> session cookie (HttpOnly, SameSite=Strict)
    POST /api/logout
    GET  /api/guidelines       {text, source}: the default guidelines or the organiser's file
    GET  /api/next             the item to work on now, or {done: true}
    GET  /api/item/{id}        one of the annotator's items, with their own label only
    POST /api/label            {item_id, label: yes|no, spans: [{start, end, kind}], note?}
    GET  /api/progress         counts for this annotator and overall

    GET  /organiser            the organiser view (static/organiser.html, organiser.js)
    GET  /api/organiser/session          {organiser, token_required, available}
    POST /api/organiser/login            {token?} -> organiser cookie
    POST /api/organiser/logout
    GET  /api/organiser/overview         progress per annotator, disagreements, ties
    POST /api/organiser/extra-place      {item_id}: one more annotator for a tied item
    GET  /api/organiser/export/{format}  jsonl | labelstudio | halueval, as a download
                                         (halueval?allow_partial=1: partly labelled too)

A label is one row appended to ``annotations`` (source "web") through the durable lane of
the store writer: the answer comes only after the commit, so a page reload or a crash of
the server loses nothing that was acknowledged. Logins are kept in the store too
(``sessions.py``), so a restarted server keeps everyone logged in and their leases.
Nobody is ever sent another annotator's label; only the organiser view shows who voted what.
Bound to loopback by default; a non-loopback address needs ``allow_remote`` and a token per
annotator (see ``make_tokens``). The organiser view needs the organiser token whenever
tokens are in force (always, off loopback); without tokens, on loopback, it is open like the
page itself.

Starting, stopping and serving until a signal: serving.py; what a submitted label must look
like: label_body.py.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from ..errors import HalugenError, UsageError
from ..local_page import (
    JSON_TYPE,
    LOOPBACK_HOSTS,
    add_security_headers,
    host_allowed,
    json_error,
    json_response,
    load_static,
    token_ok,
)
from ..store import annotation_queries
from ..store.db import Store
from ..store.rows import AnnotationExtraPlaceRow, AnnotationRow
from .access import ORGANISER_KEY, validate_name
from .assign import DEFAULT_LEASE_SECONDS, Assigner, Leases
from .guidelines import Guidelines, default_guidelines
from .items import KINDS
from .label_body import LabelError, parse_label
from .organiser import EXPORTS, PARTIAL_FILE, overview, wants_partial
from .sessions import ANNOTATOR, ORGANISER, Session, Sessions, lease_journal, load_leases

__all__ = ["build_app"]

COOKIE = "halugen_session"
ORGANISER_COOKIE = "halugen_organiser"
CSRF_HEADER = "X-Halugen"
_HTML = "text/html; charset=utf-8"
_JS = "text/javascript; charset=utf-8"
_SVG = "image/svg+xml"
_STATIC = {  # URL path -> (package, file in its static/, content type)
    "/": (__package__, "index.html", _HTML),
    "/organiser": (__package__, "organiser.html", _HTML),
    "/static/api.js": (__package__, "api.js", _JS),
    "/static/app.js": (__package__, "app.js", _JS),
    "/static/organiser.js": (__package__, "organiser.js", _JS),
    "/static/style.css": (__package__, "style.css", "text/css; charset=utf-8"),
    # browsers ask for /favicon.ico whatever the page says; both answer with the icon
    "/favicon.ico": (__package__, "favicon.svg", _SVG),
    "/static/favicon.svg": (__package__, "favicon.svg", _SVG),
}


# -- the app -------------------------------------------------------------------------------
@dataclass
class _State:
    store: Store
    assigner: Assigner
    tokens: dict[str, str] | None
    organiser_token: str | None
    allowed_hosts: frozenset[str] | None
    static: dict[str, tuple[bytes, str]]
    sessions: Sessions
    guidelines: Guidelines
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def lock(self, annotator: str) -> asyncio.Lock:
        # one writer at a time per annotator: their rows commit in the order they were sent,
        # so "latest row wins" means "last thing they saved wins"
        return self.locks.setdefault(annotator, asyncio.Lock())


STATE = web.AppKey("halugen_annotate", _State)


def _fail(exc_type: type[web.HTTPException], message: str) -> web.HTTPException:
    return exc_type(text=orjson.dumps({"error": message}).decode(), content_type=JSON_TYPE)


async def _body(request: web.Request) -> Any:
    try:
        return orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        raise _fail(web.HTTPBadRequest, "body must be JSON") from None


def _annotator(request: web.Request) -> str:
    session = request.app[STATE].sessions.get(request.cookies.get(COOKIE))
    if session is None or session.role != ANNOTATOR or session.annotator is None:
        raise _fail(web.HTTPUnauthorized, "log in first")
    return session.annotator


def build_app(
    store: Store,
    *,
    per_item: int = 3,
    tokens: Mapping[str, str] | None = None,
    allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
    lease_seconds: float = DEFAULT_LEASE_SECONDS,
    clock: Callable[[], float] = time.time,
    organiser_token: str | None = None,
    guidelines: Guidelines | None = None,
) -> web.Application:
    """The annotation app over an open store.

    ``tokens`` (name -> token): when given, only those annotators may log in, each with
    their token; ``organiser_token`` then opens the organiser view (without tokens the view
    is open, as the page is). ``allowed_hosts``: Host header names accepted (None: any); on
    loopback this stops a web page from reaching the server through DNS rebinding.
    ``clock`` drives the leases: wall-clock seconds, as they are kept across restarts
    (tests pass a fake one). ``guidelines``: shown on the page (default: halugen's own).
    Logins and leases of an earlier server on the same store are restored.
    """
    if tokens is not None:
        tokens = {validate_name(k): v for k, v in tokens.items()}
    leases = Leases(lease_seconds, clock, journal=lease_journal(store))
    leases.restore(load_leases(store, clock()))
    sessions = Sessions(store, tokens=tokens, organiser_token=organiser_token)
    sessions.load()
    state = _State(
        store=store,
        assigner=Assigner(store, per_item=per_item, leases=leases),
        tokens=dict(tokens) if tokens is not None else None,
        organiser_token=organiser_token,
        allowed_hosts=frozenset(h.lower() for h in allowed_hosts)
        if allowed_hosts is not None
        else None,
        static=load_static(_STATIC),
        sessions=sessions,
        guidelines=guidelines if guidelines is not None else default_guidelines(),
    )

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if not host_allowed(request, state.allowed_hosts):
            return json_error(421, "unexpected Host header")
        if request.method == "POST" and request.headers.get(CSRF_HEADER) != "1":
            return json_error(403, f"missing {CSRF_HEADER} header")
        try:
            return await handler(request)
        except HalugenError as exc:  # the store failed under a write: say so, keep serving
            return json_error(500, str(exc))

    app = web.Application(middlewares=[guard], client_max_size=2 * 2**20)
    app[STATE] = state
    app.on_response_prepare.append(add_security_headers)
    for path in _STATIC:
        app.router.add_get(path, _static)
    app.router.add_get("/api/session", _session)
    app.router.add_post("/api/login", _login)
    app.router.add_post("/api/logout", _logout)
    app.router.add_get("/api/next", _next)
    app.router.add_get("/api/item/{item_id:.+}", _item)
    app.router.add_post("/api/label", _label)
    app.router.add_get("/api/progress", _progress)
    app.router.add_get("/api/guidelines", _guidelines)
    app.router.add_get("/api/organiser/session", _organiser_session)
    app.router.add_post("/api/organiser/login", _organiser_login)
    app.router.add_post("/api/organiser/logout", _organiser_logout)
    app.router.add_get("/api/organiser/overview", _organiser_overview)
    app.router.add_post("/api/organiser/extra-place", _organiser_extra_place)
    app.router.add_get("/api/organiser/export/{fmt}", _organiser_export)
    return app


async def _static(request: web.Request) -> web.Response:
    body, ctype = request.app[STATE].static[request.path]
    return web.Response(body=body, headers={"Content-Type": ctype})


async def _session(request: web.Request) -> web.Response:
    state = request.app[STATE]
    session = state.sessions.get(request.cookies.get(COOKIE))
    return json_response(
        {
            "annotator": session.annotator if session and session.role == ANNOTATOR else None,
            "tokens_required": state.tokens is not None,
            "kinds": KINDS,
            "per_item": state.assigner.per_item,
        }
    )


async def _login(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = await _body(request)
    if not isinstance(body, dict):
        return json_error(400, "body must be a JSON object")
    try:
        name = validate_name(body.get("annotator"))
    except UsageError as exc:
        return json_error(400, str(exc))
    token = None
    if state.tokens is not None:
        token = body.get("token")
        if not token_ok(token, state.tokens.get(name)):
            return json_error(403, "unknown annotator or wrong token")
    return await _signed_in(request, Session(ANNOTATOR, name), token, COOKIE, {"annotator": name})


async def _logout(request: web.Request) -> web.Response:
    return await _signed_out(request, COOKIE, {"annotator": None})


async def _signed_in(
    request: web.Request, session: Session, token: Any, cookie: str, body: dict[str, Any]
) -> web.Response:
    """Open ``session`` (replacing the one the browser held) and hand its cookie over."""
    sid = await request.app[STATE].sessions.open(
        session, token, replaces=request.cookies.get(cookie)
    )
    resp = json_response(body)
    resp.set_cookie(cookie, sid, httponly=True, samesite="Strict", path="/")
    return resp


async def _signed_out(request: web.Request, cookie: str, body: dict[str, Any]) -> web.Response:
    await request.app[STATE].sessions.close(request.cookies.get(cookie))
    resp = json_response(body)
    resp.del_cookie(cookie, path="/")
    return resp


async def _guidelines(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if _organiser_or_none(request) is None:
        _annotator(request)  # the page's texts are for people who logged in
    return json_response(state.guidelines.as_dict())


def _item_payload(state: _State, item_id: str, annotator: str) -> dict[str, Any] | None:
    # an item imported twice keeps its first text: saved offsets refer to it
    texts = annotation_queries.first_item_texts(state.store, item_id)
    if texts is None:
        return None
    query, response = texts
    own = annotation_queries.own_label(state.store, item_id, annotator)
    label = None
    if own:
        label = {"label": own.label, "spans": orjson.loads(own.spans_json), "note": own.note}
    where = state.assigner.my_items(item_id, annotator)
    return {
        "done": False,
        "id": item_id,
        "query": query,
        "response": response,
        "position": f"{where.position} of {where.total}",
        "index": where.position,
        "total": where.total,
        "prev": where.prev,
        "next": where.next,
        "label": label,
    }


async def _next(request: web.Request) -> web.Response:
    state = request.app[STATE]
    annotator = _annotator(request)
    item_id = state.assigner.next_for(annotator)
    if item_id is not None:
        payload = _item_payload(state, item_id, annotator)
        if payload is not None:
            return json_response(payload)
    return json_response({"done": True, "prev": state.assigner.last_labelled(annotator)})


async def _item(request: web.Request) -> web.Response:
    state = request.app[STATE]
    annotator = _annotator(request)
    item_id = request.match_info["item_id"]
    if not state.assigner.may_view(item_id, annotator):
        return json_error(404, "not one of your items")
    payload = _item_payload(state, item_id, annotator)
    if payload is None:
        return json_error(404, "no such item")
    return json_response(payload)


async def _label(request: web.Request) -> web.Response:
    state = request.app[STATE]
    annotator = _annotator(request)
    body = await _body(request)
    item_id = body.get("item_id") if isinstance(body, dict) else None
    if not isinstance(item_id, str):
        return json_error(400, "item_id must be a string")
    response = annotation_queries.first_response(state.store, item_id)
    if response is None:
        return json_error(404, "no such item")
    try:
        label, spans, note = parse_label(body, response)
    except LabelError as exc:
        return json_error(400, str(exc))
    assigner = state.assigner
    async with state.lock(annotator):
        if not assigner.may_label(item_id, annotator):
            return json_error(409, f"this item already has {assigner.per_item} annotators")
        # hold the place while the row commits, so a concurrent /api/next cannot hand it out
        assigner.leases.grant(annotator, item_id)
        await state.store.writer.put_durable(
            [AnnotationRow(item_id, annotator, label, orjson.dumps(spans).decode(), note, "web")]
        )
        assigner.leases.release(annotator, item_id)  # the label holds the place now
    return json_response(
        {
            "saved": True,
            "item_id": item_id,
            "label": label,
            "spans": spans,
            "note": note,
            "progress": assigner.progress(annotator).as_dict(),
        }
    )


async def _progress(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return json_response(state.assigner.progress(_annotator(request)).as_dict())


# -- the organiser view ----------------------------------------------------------------------
def _organiser_open(state: _State) -> bool:
    """No tokens in force (loopback only): the organiser view needs no login."""
    return state.tokens is None and state.organiser_token is None


def _organiser_or_none(request: web.Request) -> Session | None:
    state = request.app[STATE]
    if _organiser_open(state):
        return Session(ORGANISER, None)
    session = state.sessions.get(request.cookies.get(ORGANISER_COOKIE))
    return session if session is not None and session.role == ORGANISER else None


def _organiser(request: web.Request) -> None:
    if _organiser_or_none(request) is None:
        raise _fail(web.HTTPUnauthorized, "log in with the organiser token first")


async def _organiser_session(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return json_response(
        {
            "organiser": _organiser_or_none(request) is not None,
            "token_required": not _organiser_open(state),
            "available": _organiser_open(state) or state.organiser_token is not None,
        }
    )


async def _organiser_login(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = await _body(request)
    if not isinstance(body, dict):
        return json_error(400, "body must be a JSON object")
    if _organiser_open(state):
        return json_response({"organiser": True})
    if state.organiser_token is None:
        return json_error(
            403,
            f"this server has no organiser token: make the tokens file with 'halugen "
            f"annotate tokens' (it holds one under {ORGANISER_KEY!r}) and restart the server",
        )
    token = body.get("token")
    if not token_ok(token, state.organiser_token):
        return json_error(403, "wrong organiser token")
    session = Session(ORGANISER, None)
    return await _signed_in(request, session, token, ORGANISER_COOKIE, {"organiser": True})


async def _organiser_logout(request: web.Request) -> web.Response:
    return await _signed_out(request, ORGANISER_COOKIE, {"organiser": False})


async def _organiser_overview(request: web.Request) -> web.Response:
    state = request.app[STATE]
    _organiser(request)
    return json_response(overview(state.assigner, known=state.tokens or ()))


async def _organiser_extra_place(request: web.Request) -> web.Response:
    state = request.app[STATE]
    _organiser(request)
    body = await _body(request)
    item_id = body.get("item_id") if isinstance(body, dict) else None
    if not isinstance(item_id, str):
        return json_error(400, "item_id must be a string")
    if not state.assigner._exists(item_id):
        return json_error(404, "no such item")
    await state.store.writer.put_durable([AnnotationExtraPlaceRow(item_id)])
    return json_response({"item_id": item_id, "cap": state.assigner.cap(item_id)})


async def _organiser_export(request: web.Request) -> web.StreamResponse:
    from . import formats, labelstudio, resolve

    state = request.app[STATE]
    _organiser(request)
    fmt = request.match_info["fmt"]
    if fmt not in EXPORTS:
        return json_error(404, f"no export format {fmt!r} (one of {', '.join(EXPORTS)})")
    name, ctype = EXPORTS[fmt]
    partial = fmt == "halueval" and wants_partial(request.query)
    if partial:
        name = PARTIAL_FILE
    await state.store.writer.flush()  # every acknowledged label is in the file
    with tempfile.TemporaryDirectory(prefix="halugen-export-") as tmp:
        path = Path(tmp) / name
        if fmt == "jsonl":
            formats.export_jsonl(state.store, path)
        elif fmt == "labelstudio":
            labelstudio.export_labelstudio(state.store, path)
        else:  # HaluEval's layout holds resolved labels: resolve first, as the CLI does
            # items with fewer labels than the server hands out are left out, unless the
            # organiser asks for them (?allow_partial=1; each record then has n_labels)
            rule = resolve.LabelRule(per_item=state.assigner.per_item, allow_partial=partial)
            resolve.resolve_all(state.store, rule)
            formats.export_halueval_general(state.store, path, rule)
        data = path.read_bytes()
    return web.Response(
        body=data,
        headers={
            "Content-Type": f"{ctype}; charset=utf-8",
            "Content-Disposition": f'attachment; filename="{name}"',
        },
    )
