"""The transport seam: the one object every HTTP call goes through.

``AiohttpTransport`` talks to a real server over one pooled session. ``HandlerTransport``
calls an in-process handler (the simulator's) so unit tests never open a socket. Both
translate their failures into halugen's error tree here, at the boundary.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import errno
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import aiohttp

from ..config import Timeouts
from ..errors import CallTimeout, ConnectFailed, RetryableError

__all__ = ["AiohttpTransport", "HandlerTransport", "HttpResponse", "Transport"]


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]  # answers lookups by lower-case name
    body: bytes


class Transport(Protocol):
    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse: ...

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        """GET ``url`` (a server's description of itself: models, context size)."""
        ...

    async def aclose(self) -> None: ...


Handler = Callable[[str, Mapping[str, str], bytes], Awaitable[HttpResponse]]


def _why(error: OSError | int) -> str:
    """An OS error (or its errno) as a person says it (aiohttp's text is "Connect call
    failed (...)")."""
    if isinstance(error, int):
        error = OSError(error, "")
    names = {
        errno.ECONNREFUSED: "connection refused (nothing listens there)",
        errno.EHOSTUNREACH: "no route to the host",
        errno.ENETUNREACH: "the network is unreachable",
        errno.ETIMEDOUT: "the connection timed out",
    }
    return names.get(error.errno or 0) or str(error) or type(error).__name__


def _timeout_message(seconds: float) -> str:
    return (
        f"timeout: no answer within {seconds:g} s (the server is slow or queues requests; "
        f"raise --timeout or lower --concurrency)"
    )


class HandlerTransport:
    """Calls ``handler(path, headers, body)`` directly; for tests and in-process demos.

    GET requests go to ``get_handler(path, headers)`` when given, else answer 404.
    """

    def __init__(
        self,
        handler: Handler,
        get_handler: Callable[[str, Mapping[str, str]], Awaitable[HttpResponse]] | None = None,
    ) -> None:
        self._handler = handler
        self._get_handler = get_handler

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        if self._get_handler is None:
            return HttpResponse(404, {}, b'{"error": {"message": "not found"}}')
        path = "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url
        try:
            async with asyncio.timeout(timeouts.total):
                return await self._get_handler(path, {k.lower(): v for k, v in headers.items()})
        except TimeoutError:
            raise CallTimeout(
                _timeout_message(timeouts.total), billed_maybe=False, waited=timeouts.total
            ) from None

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse:
        path = "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url
        try:
            async with asyncio.timeout(timeouts.total):
                return await self._handler(path, {k.lower(): v for k, v in headers.items()}, body)
        except TimeoutError:
            raise CallTimeout(
                _timeout_message(timeouts.total), billed_maybe=True, waited=timeouts.total
            ) from None
        except ConnectionRefusedError:  # the handler's server is down: nothing was sent
            raise ConnectFailed(f"cannot connect to {url}: {_why(errno.ECONNREFUSED)}") from None
        except ConnectionError as exc:  # the handler dropped the connection
            raise RetryableError(
                f"connection dropped: {type(exc).__name__}", billed_maybe=True
            ) from None

    async def aclose(self) -> None:
        return None


# asyncio's TLS layer gives every connection a read buffer of ``SSLProtocol.max_size`` (256 KiB
# since Python 3.11), although OpenSSL hands over at most one TLS record (16 KiB of data) per
# read. Measured (bench/ratelimits.py, 2,000 requests in flight): 317 KB of memory per request
# over TLS, 78 KB with 16 KiB, 14.5 KB over plain HTTP. At the thousands in flight that high
# rate limits need (30,000 requests/min answered in 5 s: 2,500), that is 790 MB against 190.
TLS_READ_BUFFER = 16 * 1024


def _small_tls_buffers() -> None:
    protocol = getattr(asyncio.sslproto, "SSLProtocol", None)
    size = getattr(protocol, "max_size", None)
    if protocol is not None and isinstance(size, int) and size > TLS_READ_BUFFER:
        protocol.max_size = TLS_READ_BUFFER


def _read(timeouts: Timeouts) -> float | None:
    """The read timeout aiohttp is given: none when it cannot end an attempt sooner than the
    total does (``--timeout`` sets both alike). A gap between bytes starts after the
    attempt did, so its deadline is never before the total's; without it, aiohttp skips
    moving a timer on every chunk of every answer."""
    return timeouts.read if timeouts.read < timeouts.total else None


class AiohttpTransport:
    """One pooled ``aiohttp.ClientSession`` for the life of a run."""

    def __init__(self, *, limit: int = 0, read_bufsize: int = 2**20) -> None:
        self._limit = limit  # 0: aiohttp's connector has no cap; our limiter caps concurrency
        self._read_bufsize = read_bufsize  # long contexts come back in big bodies
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[Timeouts, aiohttp.ClientTimeout] = {}

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            _small_tls_buffers()
            connector = aiohttp.TCPConnector(
                limit=self._limit, ttl_dns_cache=300, enable_cleanup_closed=True
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                read_bufsize=self._read_bufsize,
                skip_auto_headers=("User-Agent",),
                raise_for_status=False,
            )
        return self._session

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse:
        session = self._get_session()
        timeout = self._timeouts.get(timeouts)
        if timeout is None:
            timeout = self._timeouts[timeouts] = aiohttp.ClientTimeout(
                total=timeouts.total, sock_connect=timeouts.connect, sock_read=_read(timeouts)
            )
        try:
            async with session.post(url, data=body, headers=headers, timeout=timeout) as resp:
                data = await resp.read()
                # aiohttp's header mapping answers lower-case lookups already
                return HttpResponse(status=resp.status, headers=resp.headers, body=data)
        except aiohttp.ConnectionTimeoutError:
            # no connection within --connect-timeout: nothing was sent, nothing billed
            raise ConnectFailed(f"cannot connect to {url}: {_why(errno.ETIMEDOUT)}") from None
        except TimeoutError:
            raise CallTimeout(
                _timeout_message(timeouts.total), billed_maybe=True, waited=timeouts.total
            ) from None
        except aiohttp.ClientConnectorError as exc:
            # the connection was never made: nothing was sent, nothing can be billed
            raise ConnectFailed(
                f"cannot connect to {url}: {_why(exc.os_error)}", billed_maybe=False
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise RetryableError(
                f"connection failed: {type(exc).__name__}: {exc}", billed_maybe=True
            ) from None

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        session = self._get_session()
        timeout = aiohttp.ClientTimeout(total=timeouts.total, sock_connect=timeouts.connect)
        try:
            async with session.get(url, headers=headers, timeout=timeout) as resp:
                return HttpResponse(
                    status=resp.status, headers=resp.headers, body=await resp.read()
                )
        except TimeoutError:
            raise CallTimeout(
                _timeout_message(timeouts.total), billed_maybe=False, waited=timeouts.total
            ) from None
        except aiohttp.ClientConnectorError as exc:
            raise ConnectFailed(f"cannot connect to {url}: {_why(exc.os_error)}") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise RetryableError(f"connection failed: {type(exc).__name__}: {exc}") from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
