"""The simulator behind a real aiohttp server on 127.0.0.1 (port 0), and ``run_server``."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys

import aiohttp
import orjson
import pytest

from halugen.config import Timeouts
from halugen.errors import RetryableError
from halugen.llm.transport import AiohttpTransport
from halugen.simulate import SIMULATOR, SimConfig, serve

from ._support import body, qa_prompt, run

PROMPT = qa_prompt(
    "The Korvath Company finished the Varna dam in 1962.", "When was the dam finished?", "1962"
)


def test_server_answers_and_reports_stats() -> None:
    async def scenario() -> None:
        runner, port = await serve(SimConfig(api_key="k", rpm=1000), "127.0.0.1", 0)
        base = f"http://127.0.0.1:{port}"
        auth = {"Authorization": "Bearer k", "Content-Type": "application/json"}
        try:
            async with aiohttp.ClientSession() as session:
                async with session.post(
                    f"{base}/v1/chat/completions", data=body(PROMPT, n=2), headers=auth
                ) as resp:
                    assert resp.status == 200
                    assert resp.headers["x-ratelimit-limit-requests"] == "1000"
                    data = orjson.loads(await resp.read())
                assert len(data["choices"]) == 2
                assert data["choices"][0]["message"]["content"].startswith("Pattern: ")

                async with session.post(f"{base}/v1/chat/completions", data=body(PROMPT)) as resp:
                    assert resp.status == 401

                async with session.get(f"{base}/v1/models", headers=auth) as resp:
                    assert resp.status == 200
                    assert orjson.loads(await resp.read())["object"] == "list"

                async with session.get(f"{base}/_sim/stats") as resp:
                    stats = orjson.loads(await resp.read())
                assert stats["requests"] == 2 and stats["ok"] == 1
                assert stats["by_status"] == {"200": 1, "401": 1}
                assert stats["billed_usd"] > 0 and len(stats["billed_keys"]) == 1
                # the in-process object behind the server agrees
                assert runner.app[SIMULATOR].stats()["billed_requests"] == 1

                async with session.get(f"{base}/_sim/stats?keys=0") as resp:
                    assert "billed_keys" not in orjson.loads(await resp.read())

                async with session.post(f"{base}/_sim/reset") as resp:
                    assert resp.status == 200
                async with session.get(f"{base}/_sim/stats") as resp:
                    assert orjson.loads(await resp.read())["requests"] == 0
        finally:
            await runner.cleanup()

    run(scenario())


def test_dropped_connection_is_closed_quietly(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        runner, port = await serve(SimConfig(fail_rate=1.0, faults=("drop",)))
        transport = AiohttpTransport()
        try:
            with pytest.raises(RetryableError) as info:
                await transport.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    {"Content-Type": "application/json"},
                    body(PROMPT),
                    Timeouts(total=10),
                )
            assert info.value.billed_maybe
            # the server keeps serving after a drop
            sim = runner.app[SIMULATOR]
            assert sim.stats()["faults"] == {"drop": 1}
            assert sim.stats()["billed_requests"] == 0
        finally:
            await transport.aclose()
            await runner.cleanup()

    with caplog.at_level(logging.DEBUG, logger="aiohttp"):
        run(scenario())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_client_giving_up_on_a_hang_was_billed_and_frees_the_handler() -> None:
    async def scenario() -> None:
        runner, port = await serve(SimConfig(fail_rate=1.0, faults=("hang",), hang_s=3600))
        sim = runner.app[SIMULATOR]
        transport = AiohttpTransport()
        try:
            with pytest.raises(RetryableError) as info:
                await transport.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions",
                    {},
                    body(PROMPT),
                    Timeouts(total=0.05),
                )
            assert info.value.billed_maybe
            assert sim.stats()["billed_requests"] == 1
            await transport.aclose()  # the client closes its socket: the handler is cancelled
            for _ in range(500):  # poll for the cancellation, bounded
                if sim.stats()["in_flight"] == 0:
                    break
                await asyncio.sleep(0.01)
            assert sim.stats()["in_flight"] == 0
        finally:
            await transport.aclose()
            await runner.cleanup()

    run(scenario())


def test_long_bodies_reach_the_context_check() -> None:
    async def scenario() -> None:
        runner, port = await serve(SimConfig())
        try:
            async with aiohttp.ClientSession() as session:
                big = body("word " * 110_000, max_tokens=10)  # > 512 KB, > 128k tokens
                async with session.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions", data=big
                ) as resp:
                    assert resp.status == 400
                    error = orjson.loads(await resp.read())["error"]
                    assert error["code"] == "context_length_exceeded"
        finally:
            await runner.cleanup()

    run(scenario())


_CHILD = """
import sys
from halugen.simulate import SimConfig, run_server
run_server(SimConfig(), "127.0.0.1", 0, ready=lambda port: print(port, flush=True))
print("stopped", flush=True)
"""


@pytest.mark.timeout(60)
def test_run_server_reports_its_port_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())

        async def ask() -> int:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    f"http://127.0.0.1:{port}/v1/chat/completions", data=body("Hello there!")
                ) as resp,
            ):
                return resp.status

        assert run(ask()) == 200
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert out.strip() == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
