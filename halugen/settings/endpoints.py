"""A fleet of endpoints: ``[[endpoints]]`` tables in halugen.toml or repeated ``--endpoint``
flags, as the run's ``Endpoint`` objects (keys read from the environment variables named)."""

from __future__ import annotations

import ipaddress
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..config import AUTH_SCHEMES, Endpoint
from ..errors import UsageError

__all__ = [
    "ENDPOINT_KEYS",
    "check_endpoint_types",
    "is_local_endpoint",
    "parse_endpoint_flag",
    "require_api_key",
    "resolve_endpoints",
]

# key of an [[endpoints]] table (or option of --endpoint) -> its type
ENDPOINT_KEYS: dict[str, type | tuple[type, ...]] = {
    "url": str,
    "key": str,  # the name of an environment variable holding the key
    "rpm": (int, float),
    "tpm": (int, float),
    "concurrency": int,
    "weight": (int, float),
    "auth": str,
}


def check_endpoint_types(spec: Mapping[str, Any], where: str, error: type[Exception]) -> None:
    for key, value in spec.items():
        expected = ENDPOINT_KEYS.get(key)
        if expected is None:
            raise error(f"{where}: unknown key {key!r} (known: {', '.join(ENDPOINT_KEYS)})")
        if isinstance(value, bool) or not isinstance(value, expected):
            raise error(f"{where}: {key} has the wrong type ({value!r})")
    if "url" not in spec:
        raise error(f"{where}: url is missing")


def parse_endpoint_flag(text: str) -> dict[str, Any]:
    """``URL,key=ENV,rpm=N,...`` (the value of one ``--endpoint``) as an endpoint table."""
    url, *options = (part.strip() for part in text.split(","))
    where = f"--endpoint {text}"
    if not url or "=" in url.split("://", 1)[0]:
        raise UsageError(f"{where}: give the URL first, then name=value options")
    spec: dict[str, Any] = {"url": url}
    for option in options:
        name, sep, value = option.partition("=")
        name, value = name.strip(), value.strip()
        expected = ENDPOINT_KEYS.get(name)
        if not sep or expected is None or name == "url":
            known = ", ".join(k for k in ENDPOINT_KEYS if k != "url")
            raise UsageError(f"{where}: {option!r} is not a name=value option (known: {known})")
        if expected is str:
            spec[name] = value
            continue
        try:
            spec[name] = int(value) if expected is int else float(value)
        except ValueError:
            raise UsageError(f"{where}: {name} must be a number, not {value!r}") from None
    return spec


def resolve_endpoints(
    specs: Sequence[Mapping[str, Any]],
    *,
    api_key: str | None,
    rpm: float | None,
    tpm: float | None,
    concurrency: int | None,
    environ: Mapping[str, str] = os.environ,
    source: str = "--endpoint",
    keys_needed: bool = True,
) -> tuple[Endpoint, ...]:
    """Endpoint tables (from flags or the file) as endpoints, keys read from the environment.

    ``keys_needed=False`` (a command that makes no call, such as ``estimate``): a ``key=``
    variable that is not set leaves that endpoint without a key instead of failing.
    """
    endpoints = []
    seen: set[str] = set()
    for spec in specs:
        url = str(spec.get("url", "")).rstrip("/")
        where = f"{source} {url or '?'}"
        check_endpoint_types(spec, where, UsageError)
        if "://" not in url:
            raise UsageError(f"{where}: the URL must start with http:// or https://")
        if url in seen:
            raise UsageError(f"{where}: the same endpoint is listed twice")
        seen.add(url)
        key_env = spec.get("key")
        key = api_key
        if key_env is not None:
            key = environ.get(key_env) or None
            if key is None and keys_needed:
                raise UsageError(
                    f"{where}: environment variable {key_env} is not set (key= names the "
                    f"variable that holds this endpoint's key)"
                )
        auth = spec.get("auth", "bearer")
        if auth not in AUTH_SCHEMES:
            raise UsageError(f"{where}: auth must be one of {', '.join(AUTH_SCHEMES)}")
        limits = {
            "rpm": spec.get("rpm", rpm),
            "tpm": spec.get("tpm", tpm),
            "weight": spec.get("weight", 1.0),
            "concurrency": spec.get("concurrency", concurrency),
        }
        for name, value in limits.items():
            if value is not None and not (math.isfinite(value) and value > 0):
                raise UsageError(f"{where}: {name} must be more than zero (got {value:g})")
        endpoints.append(
            Endpoint(
                url=url,
                api_key=key,
                key_env=key_env,
                rpm=None if limits["rpm"] is None else float(limits["rpm"]),
                tpm=None if limits["tpm"] is None else float(limits["tpm"]),
                concurrency=(None if limits["concurrency"] is None else int(limits["concurrency"])),
                weight=float(limits["weight"]),
                auth=auth,
            )
        )
    return tuple(endpoints)


_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")  # Tailscale and other overlay networks


def is_local_endpoint(url: str) -> bool:
    """True for a server on this machine or a private network (such servers rarely want keys).

    IP addresses: loopback, private, link-local and 100.64/10. Names: ``localhost``, names
    under .local/.internal/.lan/.home.arpa, and single-label names (a container or a host
    in /etc/hosts); any other name counts as public: no DNS lookup is made to find out.
    """
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if not host:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip in _CGNAT


def require_api_key(base_url: str, api_key: str | None) -> None:
    """Refuse, before any call, to send requests without a key to a public endpoint."""
    if api_key or is_local_endpoint(base_url):
        return
    raise UsageError(
        f"no API key for {base_url}: set OPENAI_API_KEY or pass --api-key (a server on this "
        f"machine or a private network needs none; for a public server without keys, pass "
        f"--api-key none)"
    )
