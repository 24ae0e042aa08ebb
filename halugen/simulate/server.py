"""The simulator over HTTP: an aiohttp app on loopback, built for thousands of requests/s.

Routes: ``POST /v1/chat/completions`` (also ``/chat/completions`` for base URLs without
``/v1``), ``GET /v1/models``, ``GET /_sim/stats`` (``?keys=0`` leaves out ``billed_keys``)
and ``POST /_sim/reset``, and the Batch API (``/v1/files``, ``/v1/batches``: batch.py).
No access log and no per-request logging: at benchmark rates the log alone would cost
more than the answers. A simulator that goes down (``SimConfig.down_after``) stops listening
and closes every connection, so later requests are refused as by a host whose server died.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web

from ..signals import until_signalled
from .batch import add_batch_routes, batch_service, with_batch_stats
from .config import SimConfig
from .simulator import SimulatedDrop, SimulatedRefusal, Simulator

__all__ = ["SIMULATOR", "build_app", "run_server", "serve"]

SIMULATOR = web.AppKey("simulator", Simulator)
# what serve() does when the simulator goes down: stop listening, close the connections
_GO_DOWN = web.AppKey("go_down", list[Callable[[], Awaitable[None]]])
_KEEP: set[asyncio.Future[None]] = set()  # tasks of going down, held until they end
_JSON = "application/json"
# Long-context requests (the context-length check needs > 512 KB bodies) must reach the
# simulator instead of being refused by aiohttp's 1 MiB default with a 413.
_MAX_BODY = 64 * 2**20


def build_app(sim: Simulator) -> web.Application:
    """An aiohttp application serving ``sim``."""

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        try:
            # aiohttp's header mapping is case-insensitive: lower-case lookups work as-is
            resp = await sim.handle(request.path, request.headers, body)
        except SimulatedDrop:
            # Close the socket under the response; aiohttp then fails to write it, treats
            # that as a client disconnect and drops the connection quietly.
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        except SimulatedRefusal:
            if request.transport is not None:
                request.transport.close()
            for go_down in request.app[_GO_DOWN]:
                # not awaited here: closing the connections waits for this handler too
                task = asyncio.ensure_future(go_down())
                _KEEP.add(task)
                task.add_done_callback(_KEEP.discard)
            return web.Response(status=500)
        return web.Response(status=resp.status, body=resp.body, headers=resp.headers)

    async def models(request: web.Request) -> web.Response:
        if not sim.authorised(request.headers):
            resp = sim.unauthorised()
            return web.Response(status=resp.status, body=resp.body, headers=resp.headers)
        return web.Response(body=orjson.dumps(sim.models()), content_type=_JSON)

    async def props(request: web.Request) -> web.Response:
        body = sim.props()
        if body is None:
            return web.Response(status=404, body=b'{"error": "not found"}', content_type=_JSON)
        return web.Response(body=orjson.dumps(body), content_type=_JSON)

    async def stats(request: web.Request) -> web.Response:
        keys = request.query.get("keys", "1").lower() not in ("0", "false", "no")
        data = orjson.dumps(
            with_batch_stats(sim, sim.stats(keys=keys)), option=orjson.OPT_NON_STR_KEYS
        )
        return web.Response(body=data, content_type=_JSON)

    async def reset(request: web.Request) -> web.Response:
        sim.reset()
        batch_service(sim).reset()
        return web.Response(body=b'{"reset":true}', content_type=_JSON)

    app = web.Application(client_max_size=_MAX_BODY)
    app[SIMULATOR] = sim
    app[_GO_DOWN] = []
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/models", models)
    app.router.add_get("/props", props)
    app.router.add_get("/_sim/stats", stats)
    app.router.add_post("/_sim/reset", reset)
    add_batch_routes(app, sim)  # /v1/files and /v1/batches (simulate/batch.py)
    return app


async def serve(
    config: SimConfig | Simulator, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, int]:
    """Start serving; returns the runner (``await runner.cleanup()`` stops) and the port.

    ``port=0`` picks a free port. The simulator is ``runner.app[SIMULATOR]``.
    """
    sim = config if isinstance(config, Simulator) else Simulator(config)
    runner = web.AppRunner(
        build_app(sim),
        access_log=None,
        handle_signals=False,
        # a client that gives up on a "hang" frees its handler (billing happened already),
        # and stopping does not wait a minute for hung requests
        handler_cancellation=True,
        shutdown_timeout=1.0,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=2048)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1]

    async def go_down() -> None:
        if site in runner.sites:  # once: later refusals find it closed already
            await site.stop()  # new connections are refused from now on
            if runner.server is not None:
                await runner.server.shutdown(0.1)  # and the open ones close

    runner.app[_GO_DOWN].append(go_down)
    return runner, bound


def run_server(
    config: SimConfig | Simulator,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    ready: Callable[[int], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; calls ``ready(port)`` once listening. Prints nothing."""

    async def main() -> None:
        runner, bound = await serve(config, host, port)
        try:
            if ready is not None:
                ready(bound)
            await until_signalled()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
