"""What every page halugen serves on this machine shares (the annotation page, ``view``):
where it may listen, the Host names it answers, its security headers, its static files and
JSON answers, and how a token is compared.

A page binds to loopback; the Host header must then name loopback too (anything else is a
web page reaching the server through DNS rebinding). The page loads nothing from elsewhere
and runs no inline script: even a bug that put data into the DOM as markup could not run
it (and the scripts put data in with ``textContent`` only).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Mapping
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

__all__ = [
    "JSON_TYPE",
    "LOOPBACK_HOSTS",
    "SECURITY_HEADERS",
    "StaticFiles",
    "add_security_headers",
    "allowed_hosts_for",
    "host_allowed",
    "is_loopback",
    "json_error",
    "json_response",
    "load_static",
    "token_ok",
]

# the Host headers a loopback-bound server answers (anything else: DNS rebinding)
LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1"})

SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

JSON_TYPE = "application/json"

# URL path -> (package, file in its static/ folder, content type)
StaticFiles = Mapping[str, tuple[str, str, str]]


def is_loopback(host: str) -> bool:
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False  # a host name other than localhost: could resolve to anything


def allowed_hosts_for(host: str) -> frozenset[str] | None:
    """The Host names a server bound to ``host`` answers: loopback's (and ``host``) on
    loopback, any elsewhere (None; a remote bind has tokens instead)."""
    if not is_loopback(host):
        return None
    return LOOPBACK_HOSTS | {host.strip("[]").lower()}


def host_allowed(request: web.Request, allowed: frozenset[str] | None) -> bool:
    if allowed is None:
        return True
    try:
        host = (request.url.host or "").strip("[]").lower()
    except ValueError:
        host = ""
    return host in allowed


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """An ``on_response_prepare`` hook: the headers above on every answer."""
    for k, v in SECURITY_HEADERS.items():
        response.headers.setdefault(k, v)


def token_ok(given: object, expected: str | None) -> bool:
    """``given`` is the token ``expected`` (constant time; never when nothing is expected)."""
    # compare even when nothing is expected, so timing does not tell which names exist
    ok = hmac.compare_digest(
        (given if isinstance(given, str) else "").encode(),
        (expected if expected is not None else secrets.token_urlsafe(24)).encode(),
    )
    return ok and expected is not None


def load_static(files: StaticFiles) -> dict[str, tuple[bytes, str]]:
    """URL path -> (body, content type), read once from the packages' static folders."""
    return {
        path: ((resources.files(package) / "static" / name).read_bytes(), ctype)
        for path, (package, name, ctype) in files.items()
    }


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data), status=status, content_type=JSON_TYPE)


def json_error(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)
