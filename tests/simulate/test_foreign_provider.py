"""A provider unlike the client: another tokenizer (``usage_scale``) and one that goes away
for good (``down_after``), in process and behind the HTTP server."""

from __future__ import annotations

import math

import orjson
import pytest

from halugen.config import Timeouts
from halugen.errors import ConnectFailed, RetryableError, UsageError
from halugen.llm.transport import AiohttpTransport, HandlerTransport
from halugen.simulate import SIMULATOR, SimConfig, SimulatedRefusal, Simulator, serve
from halugen.simulate.tokens import count_prompt

from ._support import body, call, post, qa_prompt, run

PROMPT = qa_prompt(
    "The Korvath Company finished the Varna dam in 1962, after eleven years of work.",
    "When was the dam finished?",
    "1962",
)


def _usage(resp) -> dict:
    return orjson.loads(resp.body)["usage"]


def test_usage_scale_counts_reports_and_bills_more_tokens() -> None:
    plain = Simulator(SimConfig())
    scaled = Simulator(SimConfig(usage_scale=1.6))
    data = body(PROMPT, max_tokens=256)
    base, more = _usage(call(plain, data)), _usage(call(scaled, data))
    assert base["prompt_tokens"] == count_prompt([PROMPT])
    assert more["prompt_tokens"] == math.ceil(base["prompt_tokens"] * 1.6)
    assert more["completion_tokens"] == math.ceil(base["completion_tokens"] * 1.6)
    # the simulator's own bill counts the scaled tokens: the provider bills what it reports
    for sim, usage in ((plain, base), (scaled, more)):
        stats = sim.stats(keys=False)
        assert stats["prompt_tokens"] == usage["prompt_tokens"]
        assert stats["completion_tokens"] == usage["completion_tokens"]
    assert scaled.stats()["billed_usd"] > plain.stats()["billed_usd"] * 1.5


def test_a_scaled_reply_never_reports_more_than_max_tokens() -> None:
    sim = Simulator(SimConfig(usage_scale=2.5))
    resp = call(sim, body(PROMPT, max_tokens=5))
    data = orjson.loads(resp.body)
    assert data["usage"]["completion_tokens"] <= 5
    assert data["choices"][0]["finish_reason"] == "length"


def test_usage_scale_counts_against_the_context_window() -> None:
    fits = count_prompt([PROMPT]) + 10
    assert call(Simulator(SimConfig(context_window=fits)), body(PROMPT, max_tokens=5)).status == 200
    big = Simulator(SimConfig(context_window=fits, usage_scale=1.5))
    assert call(big, body(PROMPT, max_tokens=5)).status == 400


@pytest.mark.parametrize("scale", [0.0, 0.05, 11.0])
def test_usage_scale_out_of_range_is_refused(scale: float) -> None:
    with pytest.raises(UsageError):
        SimConfig(usage_scale=scale)


def test_down_after_refuses_every_later_request_in_process() -> None:
    sim = Simulator(SimConfig(down_after=2))

    async def scenario() -> None:
        for _ in range(2):
            assert (await post(sim, body(PROMPT))).status == 200
        for _ in range(3):
            with pytest.raises(SimulatedRefusal):
                await post(sim, body(PROMPT))
        # the engine's in-process transport says what a real one does: nothing was sent
        transport = HandlerTransport(sim.handle)
        with pytest.raises(ConnectFailed) as info:
            await transport.post(
                "http://sim/v1/chat/completions", {}, body(PROMPT), Timeouts(total=5)
            )
        assert not info.value.billed_maybe and "refused" in str(info.value)

    run(scenario())
    stats = sim.stats(keys=False)
    assert stats["requests"] == 2 and stats["billed_requests"] == 2
    assert stats["refused"] == 4 and sim.down


def test_down_after_over_http_stops_listening() -> None:
    async def scenario() -> None:
        runner, port = await serve(SimConfig(down_after=1), "127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        transport = AiohttpTransport()
        headers = {"Content-Type": "application/json"}
        try:
            first = await transport.post(url, headers, body(PROMPT), Timeouts(total=10))
            assert first.status == 200
            # the request that finds it down loses its connection; it then stops listening
            with pytest.raises(RetryableError):
                await transport.post(url, headers, body(PROMPT), Timeouts(total=10))
            for _ in range(3):
                with pytest.raises(ConnectFailed) as info:
                    await transport.post(url, headers, body(PROMPT), Timeouts(total=10))
                assert "refused" in str(info.value)
            sim = runner.app[SIMULATOR]
            assert sim.stats(keys=False)["requests"] == 1
        finally:
            await transport.aclose()
            await runner.cleanup()

    run(scenario())
