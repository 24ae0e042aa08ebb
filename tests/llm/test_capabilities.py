"""Structured outputs, found out once per endpoint and model: a probe that goes alone, a
400 or a text reply that means "no", what is stored and what later sessions assume."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from halugen.llm.calls import CallFailure
from halugen.llm.capabilities import StructuredOutputs, structured_outputs
from halugen.llm.structured import verdict_format
from halugen.records import ChatRequest, ChatResult

FMT = verdict_format()


class FakeRunner:
    """What StructuredOutputs uses of a CallRunner: call, pool.url, store, writer."""

    def __init__(self, answer, stored: list[tuple] | None = None) -> None:  # type: ignore[no-untyped-def]
        self.answer = answer  # request -> ChatResult | CallFailure
        self.pool = SimpleNamespace(url="http://sim/v1/chat/completions")
        self.store = SimpleNamespace(query=lambda sql, params: list(stored or []))
        self.rows: list[tuple] = []
        self.writer = SimpleNamespace(put=self.rows.extend)
        self.run_id = "run-1"
        self.sent: list[ChatRequest] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def call(self, request: ChatRequest, **kw: Any):  # type: ignore[no-untyped-def]
        self.sent.append(request)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.001 if request.response_format is not None else 0)
        self.in_flight -= 1
        return self.answer(request)


def ok(text: str) -> ChatResult:
    return ChatResult(texts=(text,), finish_reasons=("stop",), prompt_tokens=1, completion_tokens=1)


def request(i: int = 0) -> ChatRequest:
    return ChatRequest(model="m", messages=({"role": "user", "content": f"q{i}"},))


def run_many(so: StructuredOutputs, n: int) -> list[tuple[Any, bool]]:
    async def go() -> list[tuple[Any, bool]]:
        return list(
            await asyncio.gather(*(so.call(request(i), FMT, stage="judge") for i in range(n)))
        )

    return asyncio.run(go())


def test_a_supporting_endpoint_is_probed_once_and_asked_for_json() -> None:
    runner = FakeRunner(
        lambda r: ok('{"verdict": "Yes"}') if r.response_format else ok("Verdict: Yes")
    )
    so = StructuredOutputs(runner, "m")  # type: ignore[arg-type]
    results = run_many(so, 5)
    assert all(as_json for _, as_json in results)
    assert all(r.response_format == FMT for r in runner.sent)
    assert so.supported is True and so.used == "json_schema"
    # the probe went alone; once it answered, the others went together
    assert runner.sent[0].messages[0]["content"] == "q0"
    assert runner.most_in_flight > 1
    ((table, row),) = runner.rows  # recorded once for the session
    assert table == "endpoint_capabilities"
    assert (row[0], row[1], row[2], row[3], row[5]) == (
        "http://sim/v1/chat/completions",
        "m",
        "json_schema",
        True,
        "run-1",
    )
    assert "JSON" in so.note


def test_a_400_means_unsupported_and_the_call_is_sent_again_as_text() -> None:
    def answer(r: ChatRequest):  # type: ignore[no-untyped-def]
        if r.response_format is not None:
            return CallFailure(
                "k", "FatalCallError", "HTTP 400: response_format not supported", 400
            )
        return ok("Verdict: No")

    runner = FakeRunner(answer)
    so = StructuredOutputs(runner, "m")  # type: ignore[arg-type]
    results = run_many(so, 4)
    assert [(res.text, as_json) for res, as_json in results] == [("Verdict: No", False)] * 4
    formatted = [r for r in runner.sent if r.response_format is not None]
    assert len(formatted) == 1  # one probe, then text for everything
    assert len(runner.sent) == 5
    assert so.supported is False and so.used == "text"
    ((table, row),) = runner.rows
    assert table == "endpoint_capabilities" and row[3] is False and "400" in row[4]
    assert "text" in so.note and "400" in so.note


def test_a_server_that_ignores_the_format_is_asked_for_text_from_then_on() -> None:
    runner = FakeRunner(lambda r: ok("Verdict: Yes"))
    so = StructuredOutputs(runner, "m")  # type: ignore[arg-type]
    results = run_many(so, 3)
    assert [res.text for res, _ in results] == ["Verdict: Yes"] * 3
    assert [r.response_format is not None for r in runner.sent] == [True, False, False]
    assert so.supported is False and "ignored" in so.detail


def test_a_400_not_about_the_format_teaches_nothing() -> None:
    fail = CallFailure("k", "FatalCallError", "HTTP 400: bad messages", 400)
    runner = FakeRunner(lambda r: fail)
    so = StructuredOutputs(runner, "m")  # type: ignore[arg-type]
    result, _ = asyncio.run(so.call(request(), FMT, stage="judge"))
    assert result is fail
    assert so.supported is None and runner.rows == []
    # a failure that is no 400 is returned as it is, also without learning
    runner.answer = lambda r: CallFailure("k", "RetryableError", "HTTP 503", 503)
    result, _ = asyncio.run(so.call(request(), FMT, stage="judge"))
    assert result.status == 503 and so.supported is None


def test_what_an_earlier_run_learned_is_assumed_without_a_probe() -> None:
    runner = FakeRunner(lambda r: ok("Verdict: Yes"), stored=[(False, "auto: HTTP 400")])
    so = StructuredOutputs(runner, "m")  # type: ignore[arg-type]
    run_many(so, 2)
    assert all(r.response_format is None for r in runner.sent)
    # this run still records how it asked
    assert len(runner.rows) == 1 and runner.rows[0][1][3] is False


@pytest.mark.parametrize(("mode", "as_json"), [("on", True), ("off", False)])
def test_modes_on_and_off_never_probe(mode: str, as_json: bool) -> None:
    runner = FakeRunner(lambda r: ok("Verdict: Yes"), stored=[(not as_json, "")])
    so = StructuredOutputs(runner, "m", mode)  # type: ignore[arg-type]
    results = run_many(so, 2)
    assert [j for _, j in results] == [as_json, as_json]
    assert all((r.response_format is not None) == as_json for r in runner.sent)


def test_one_object_per_session_and_model() -> None:
    runner = FakeRunner(lambda r: ok("x"))
    a = structured_outputs(runner, "m")  # type: ignore[arg-type]
    assert structured_outputs(runner, "m") is a  # type: ignore[arg-type]
    assert structured_outputs(runner, "other") is not a  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        StructuredOutputs(runner, "m", "sometimes")  # type: ignore[arg-type]
