"""A running annotation server: ``serve`` starts the app of server.py for a store (a path or
an open Store) as its ``ServeOptions`` say, ``AnnotateServer`` is its handle (URLs,
``close``), and ``run_server`` serves until SIGINT/SIGTERM (``halugen annotate serve``)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import duckdb
from aiohttp import web

from ..errors import UsageError
from ..local_page import allowed_hosts_for
from ..signals import until_signalled
from ..store.db import Store, open_store
from .access import check_bind, split_tokens
from .assign import DEFAULT_LEASE_SECONDS
from .guidelines import Guidelines
from .server import build_app

__all__ = ["AnnotateServer", "ServeOptions", "run_server", "serve"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """How the page is served: where it listens, who may come in, how items are handed out.

    ``port=0`` picks a free port. A non-loopback ``host`` needs ``allow_remote=True`` and
    ``tokens``; tokens given on loopback are enforced too. ``tokens`` may hold the organiser
    token under ``ORGANISER_KEY`` (as the file of ``annotate tokens`` does) or it may come as
    ``organiser_token``.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    allow_remote: bool = False
    tokens: Mapping[str, str] | None = None
    per_item: int = 3
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    organiser_token: str | None = None
    guidelines: Guidelines | None = None


@dataclass
class AnnotateServer:
    """A running server: ``url`` to open, ``await close()`` to stop it."""

    runner: web.AppRunner
    host: str
    port: int
    store: Store
    owns_store: bool
    _resolver: Store | None = None  # what resolves for other processes (offer_resolve)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    @property
    def organiser_url(self) -> str:
        return self.url + "organiser"

    def offer_resolve(self) -> None:
        """Let ``annotate resolve`` in another process resolve through this server (the
        store's holder): on a cursor of its own, beside the page's writes."""
        from .resolve import RESOLVE_ACTION, resolve_action

        if self.store.is_live:
            return
        self._resolver = Store(self.store.path, self.store.conn.cursor())
        if not self.store.offer(RESOLVE_ACTION, resolve_action(self._resolver)):
            self._resolver.conn.close()
            self._resolver = None

    async def close(self) -> None:
        from .resolve import RESOLVE_ACTION

        if self._resolver is not None:
            self.store.offer(RESOLVE_ACTION, None)  # waits for one that is running
            with contextlib.suppress(duckdb.Error):
                self._resolver.conn.close()  # before the store closes: the file is let go
            self._resolver = None
        try:
            await self.runner.cleanup()
            await self.store.writer.flush()  # leases journalled so far reach the store
        finally:
            if self.owns_store:
                self.store.close()


async def serve(
    db: str | os.PathLike[str] | Store, options: ServeOptions | None = None
) -> AnnotateServer:
    """Start serving the annotation page for the store ``db`` (a path or an open Store); the
    port it got is ``.port``."""
    options = options or ServeOptions()
    host, tokens, organiser_token = options.host, options.tokens, options.organiser_token
    if tokens is not None:
        tokens, from_file = split_tokens(tokens)
        organiser_token = organiser_token or from_file
    check_bind(host, allow_remote=options.allow_remote, tokens=tokens)
    owns = not isinstance(db, Store)
    store = open_store(db) if not isinstance(db, Store) else db
    try:
        app = build_app(
            store,
            per_item=options.per_item,
            tokens=tokens,
            allowed_hosts=allowed_hosts_for(host),
            lease_seconds=options.lease_seconds,
            organiser_token=organiser_token,
            guidelines=options.guidelines,
        )
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, options.port).start()
        except OSError as exc:
            await runner.cleanup()
            raise UsageError(_bind_failure(host, options.port, exc)) from None
        except BaseException:
            await runner.cleanup()
            raise
    except BaseException:
        if owns:
            store.close()
        raise
    bound = runner.addresses[0][1]
    server = AnnotateServer(runner, host, bound, store, owns)
    server.offer_resolve()
    return server


def _bind_failure(host: str, port: int, exc: OSError) -> str:
    """One line for a page that cannot listen where it was asked to."""
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use (another 'annotate serve' or another program "
            f"listens there); stop it, or give another --port (--port 0 picks a free one)"
        )
    if exc.errno == errno.EACCES:
        return (
            f"not allowed to listen on {where} (ports below 1024 need privileges); give "
            f"another --port"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine; give another --host"
    return f"cannot listen on {where}: {exc.strerror or exc}; give another --host or --port"


def run_server(
    db: str | os.PathLike[str] | Store,
    options: ServeOptions | None = None,
    *,
    ready: Callable[[AnnotateServer], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; ``ready(server)`` is called once listening. Prints nothing."""

    async def main() -> None:
        server = await serve(db, options)
        try:
            if ready is not None:
                ready(server)
            await until_signalled()
        finally:
            await server.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
