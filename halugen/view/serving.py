"""A running view: ``serve`` starts the app of server.py for a store, ``ViewServer`` is its
handle (the address to open, ``close``), ``run_server`` serves until SIGINT/SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from ..errors import UsageError
from ..local_page import allowed_hosts_for, is_loopback
from ..signals import until_signalled
from .reader import StoreReader
from .server import build_app

__all__ = ["ViewServer", "run_server", "serve"]


@dataclass
class ViewServer:
    """A running view: ``url`` to open (it carries the token), ``await close()`` to stop."""

    runner: web.AppRunner
    host: str
    port: int
    token: str

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def url(self) -> str:
        return f"{self.base_url}?token={self.token}"

    async def close(self) -> None:
        await self.runner.cleanup()


async def serve(
    db: str | os.PathLike[str], *, host: str = "127.0.0.1", port: int = 8090
) -> ViewServer:
    """Serve the view of the store at ``db`` on ``host`` (loopback only) and ``port`` (0: a
    free one); the store is opened for each request, never held."""
    if not is_loopback(host):
        raise UsageError(
            f"refusing to listen on {host}: halugen view serves this machine only "
            f"(127.0.0.1, ::1 or localhost)"
        )
    reader = StoreReader(db)
    try:  # a path that is no store is refused now, not at the first request
        await asyncio.to_thread(reader.read, lambda store: None)
    finally:
        reader.close()
    token = secrets.token_urlsafe(24)
    app = build_app(reader, token=token, allowed_hosts=allowed_hosts_for(host))
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        raise UsageError(
            f"cannot listen on {host} port {port} ({exc.strerror}); pick another --port "
            f"(0: any free one)"
        ) from None
    except BaseException:
        await runner.cleanup()
        raise
    return ViewServer(runner, host, runner.addresses[0][1], token)


def run_server(
    db: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8090,
    ready: Callable[[ViewServer], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; ``ready(server)`` is called once listening."""

    async def main() -> None:
        server = await serve(db, host=host, port=port)
        try:
            if ready is not None:
                ready(server)
            await until_signalled()
        finally:
            await server.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
