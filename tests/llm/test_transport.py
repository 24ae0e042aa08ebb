"""The aiohttp transport against a server on loopback: which timers it asks aiohttp for."""

from __future__ import annotations

import asyncio

from aiohttp import web

from halugen.config import Timeouts
from halugen.errors import CallTimeout
from halugen.llm.transport import AiohttpTransport


async def _serve(handler: web.RequestHandler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/v1/chat/completions"


def test_no_read_timer_when_the_total_ends_the_attempt_first() -> None:
    """``--timeout`` sets the read and the total timeout alike; a gap between bytes starts
    after the attempt did, so the total always ends it first and aiohttp is given no read
    timer (which it would move on every chunk of every answer). A shorter read timeout is
    still given and still ends a stalled answer."""

    stalled = asyncio.Event()

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        if request.headers.get("x-stall"):
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(b'{"choices": [')
            await stalled.wait()  # until the test ends
            return response
        return web.json_response({"choices": []})

    async def scenario() -> None:
        runner, url = await _serve(answer)
        transport = AiohttpTransport()
        try:
            alike = Timeouts(total=30.0, read=30.0)
            assert (await transport.post(url, {}, b"{}", alike)).status == 200
            assert transport._timeouts[alike].sock_read is None
            assert transport._timeouts[alike].total == 30.0
            shorter = Timeouts(total=30.0, read=0.2)
            try:
                await transport.post(url, {"x-stall": "1"}, b"{}", shorter)
            except CallTimeout as exc:
                assert exc.billed_maybe
            else:
                raise AssertionError("a stalled answer must end in a timeout")
            assert transport._timeouts[shorter].sock_read == 0.2
        finally:
            stalled.set()
            await transport.aclose()
            await runner.cleanup()

    asyncio.run(scenario())
