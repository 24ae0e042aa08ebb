"""The transport seam: the one object every HTTP call goes through.

``AiohttpTransport`` talks to a real server over one pooled session. ``HandlerTransport``
calls an in-process handler (the simulator's) so unit tests never open a socket. Both
translate their failures into halugen's error tree here, at the boundary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import aiohttp

from ..config import Timeouts
from ..errors import RetryableError

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

    # GET: batch objects and file contents (llm/batch_client.py)
    async def get(
        self, url: str, headers: Mapping[str, str], timeouts: Timeouts
    ) -> HttpResponse: ...

    async def aclose(self) -> None: ...


Handler = Callable[[str, Mapping[str, str], bytes], Awaitable[HttpResponse]]
GetHandler = Callable[[str, Mapping[str, str]], Awaitable[HttpResponse]]


class HandlerTransport:
    """Calls ``handler(path, headers, body)`` (and ``get_handler(path, headers)`` for GET)
    directly; for tests and in-process demos."""

    def __init__(self, handler: Handler, get_handler: GetHandler | None = None) -> None:
        self._handler = handler
        self._get_handler = get_handler

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse:
        return await self._call(url, headers, timeouts, lambda p, h: self._handler(p, h, body))

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        if self._get_handler is None:
            return HttpResponse(status=404, headers={}, body=b'{"error": "no GET handler"}')
        return await self._call(url, headers, timeouts, self._get_handler)

    async def _call(
        self, url: str, headers: Mapping[str, str], timeouts: Timeouts, handler: GetHandler
    ) -> HttpResponse:
        path = "/" + url.split("://", 1)[-1].split("/", 1)[-1] if "://" in url else url
        try:
            async with asyncio.timeout(timeouts.total):
                return await handler(path, {k.lower(): v for k, v in headers.items()})
        except TimeoutError:
            raise RetryableError(
                f"no answer within {timeouts.total:g} s", billed_maybe=True
            ) from None
        except ConnectionError as exc:  # the handler dropped the connection
            raise RetryableError(
                f"connection dropped: {type(exc).__name__}", billed_maybe=True
            ) from None

    async def aclose(self) -> None:
        return None


class AiohttpTransport:
    """One pooled ``aiohttp.ClientSession`` for the life of a run."""

    def __init__(self, *, limit: int = 0, read_bufsize: int = 2**20) -> None:
        self._limit = limit  # 0: aiohttp's connector has no cap; our limiter caps concurrency
        self._read_bufsize = read_bufsize  # long contexts come back in big bodies
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[Timeouts, aiohttp.ClientTimeout] = {}

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=self._limit, ttl_dns_cache=300, enable_cleanup_closed=True
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                read_bufsize=self._read_bufsize,
                skip_auto_headers=("User-Agent",),
                json_serialize=None,  # type: ignore[arg-type]  # we send bytes
                raise_for_status=False,
            )
        return self._session

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, timeouts: Timeouts
    ) -> HttpResponse:
        return await self._request("POST", url, headers, body, timeouts)

    async def get(self, url: str, headers: Mapping[str, str], timeouts: Timeouts) -> HttpResponse:
        return await self._request("GET", url, headers, None, timeouts)

    async def _request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        timeouts: Timeouts,
    ) -> HttpResponse:
        session = self._get_session()
        timeout = self._timeouts.get(timeouts)
        if timeout is None:
            timeout = self._timeouts[timeouts] = aiohttp.ClientTimeout(
                total=timeouts.total, sock_connect=timeouts.connect, sock_read=timeouts.read
            )
        try:
            async with session.request(
                method, url, data=body, headers=headers, timeout=timeout
            ) as resp:
                data = await resp.read()
                # aiohttp's header mapping answers lower-case lookups already
                return HttpResponse(status=resp.status, headers=resp.headers, body=data)
        except TimeoutError:
            raise RetryableError("timed out waiting for the server", billed_maybe=True) from None
        except aiohttp.ClientConnectorError as exc:
            # the connection was never made: nothing was sent, nothing can be billed
            raise RetryableError(f"cannot connect: {exc.os_error}", billed_maybe=False) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise RetryableError(
                f"connection failed: {type(exc).__name__}: {exc}", billed_maybe=True
            ) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
