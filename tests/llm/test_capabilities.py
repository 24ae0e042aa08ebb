"""Capabilities, settled before the requests that depend on them: where each decision comes
from (flag, stored probe, the run's earlier way, a probe, no server), how a probe's answer is
read (one attempt at the feature; a plain twin tells a refusing 5xx from a failing server;
no answer is retried and decides nothing), and what is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from halugen.config import RetryPolicy
from halugen.llm.calls import CallFailure
from halugen.llm.capabilities import JSON_SCHEMA, LOGPROBS, N_CHOICES, Capabilities, Decision
from halugen.llm.probe import PROBE_STAGE, control_request, probe_request
from halugen.records import ChatRequest, ChatResult
from halugen.store.db import Store, open_store
from halugen.structured_outputs import verdict_format

Answer = Callable[[ChatRequest], ChatResult | CallFailure]


class FakeRunner:
    """What probes use of a CallRunner: ``call`` (one attempt each) and ``retry``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.retry = RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0)
        self.sent: list[tuple[ChatRequest, dict[str, Any]]] = []

    async def call(self, request: ChatRequest, **kw: Any) -> ChatResult | CallFailure:
        self.sent.append((request, kw))
        await asyncio.sleep(0)
        return self.answer(request)


def ok(*texts: str, logprobs: tuple[Any, ...] = (), finish: str = "stop") -> ChatResult:
    return ChatResult(
        texts=texts,
        finish_reasons=(finish,) * len(texts),
        prompt_tokens=3,
        completion_tokens=1,
        logprobs=logprobs,
    )


def failed(status: int) -> CallFailure:
    return CallFailure("k", "FatalCallError" if 400 <= status < 500 else "RetryableError",
                       f"HTTP {status}", status)  # fmt: skip


def honours(request: ChatRequest) -> ChatResult:
    """A server with every feature."""
    if request.response_format is not None:
        return ok('{"probe": "halugen"}')
    if request.logprobs:
        return ok("OK", logprobs=({"content": [{"token": "OK", "logprob": -0.1}]},))
    return ok(*["OK"] * request.n)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "h.duckdb") as s:
        yield s


def caps(store: Store, runner: Any, **kw: Any) -> Capabilities:
    """``runner``: a FakeRunner standing in for the CallRunner, or None (no server)."""
    kw.setdefault("run_id", "run-1")
    return Capabilities(
        store=store, endpoint="http://sim/v1/chat/completions", model="m", runner=runner, **kw
    )


def decide(c: Capabilities, capability: str, callers: int = 1) -> list[Decision | CallFailure]:
    async def go() -> list[Decision | CallFailure]:
        return list(await asyncio.gather(*(c.decide(capability) for _ in range(callers))))

    return asyncio.run(go())


def rows(store: Store) -> list[tuple]:
    store.writer.flush_blocking()
    return store.query(
        "SELECT endpoint, model, capability, supported, source, run_id "
        "FROM endpoint_capabilities ORDER BY created_at"
    )


def test_one_probe_with_a_fixed_small_body_decides_for_every_caller(store: Store) -> None:
    runner = FakeRunner(honours)
    c = caps(store, runner, task="qa")
    decisions = decide(c, JSON_SCHEMA, callers=8)
    assert all(d == decisions[0] for d in decisions)
    (decision,) = set(decisions)
    assert isinstance(decision, Decision) and decision.supported and decision.source == "probe"
    ((request, kw),) = runner.sent  # one probe, the seven others waited for it
    assert request == probe_request(JSON_SCHEMA, "m") and request.max_tokens <= 16
    assert kw == {"stage": PROBE_STAGE, "task": "qa", "max_attempts": 1}
    assert probe_request(JSON_SCHEMA, "m").key == probe_request(JSON_SCHEMA, "m").key
    assert rows(store) == [
        ("http://sim/v1/chat/completions", "m", JSON_SCHEMA, True, "probe", "run-1")
    ]
    assert "JSON" in c.notes()[0]


@pytest.mark.parametrize(
    ("capability", "reply", "supported"),
    [
        (JSON_SCHEMA, ok('{"probe": "halugen"}'), True),
        (JSON_SCHEMA, ok('```json\n{"probe": "halugen"}\n```'), True),
        (JSON_SCHEMA, ok('{"probe": "hal', finish="length"), True),  # cut, but JSON
        (JSON_SCHEMA, ok("OK"), False),  # the format ignored
        (JSON_SCHEMA, ok('{"ok": true}'), False),  # JSON the prompt did not ask for: not ours
        (N_CHOICES, ok("OK", "OK"), True),
        (N_CHOICES, ok("OK"), False),  # n ignored
        (LOGPROBS, ok("OK", logprobs=({"content": [{"token": "OK"}]},)), True),
        (LOGPROBS, ok("OK"), False),  # logprobs left out
    ],
)
def test_a_reply_that_ignores_the_feature_means_unsupported(
    store: Store, capability: str, reply: ChatResult, supported: bool
) -> None:
    runner = FakeRunner(lambda r: reply)
    (decision,) = decide(caps(store, runner), capability)
    assert isinstance(decision, Decision) and decision.supported is supported
    assert len(runner.sent) == 1


@pytest.mark.parametrize("status", [400, 404, 415, 422])
def test_a_4xx_to_the_probe_means_unsupported_after_one_attempt(store: Store, status: int) -> None:
    runner = FakeRunner(lambda r: failed(status) if r.response_format else ok("OK"))
    (decision,) = decide(caps(store, runner), JSON_SCHEMA)
    assert isinstance(decision, Decision) and not decision.supported
    assert f"HTTP {status}" in decision.detail
    assert [r.response_format is not None for r, _ in runner.sent] == [True]


@pytest.mark.parametrize("status", [500, 501])
def test_a_5xx_the_plain_twin_does_not_get_is_a_refusal_as_llama_cpp_python_gives(
    store: Store, status: int
) -> None:
    runner = FakeRunner(lambda r: failed(status) if r.response_format else ok("OK"))
    (decision,) = decide(caps(store, runner), JSON_SCHEMA)
    assert isinstance(decision, Decision) and not decision.supported
    feature = probe_request(JSON_SCHEMA, "m")
    assert [r for r, _ in runner.sent] == [feature, control_request("m"), feature]
    assert rows(store)[0][3:5] == (False, "probe")


def test_a_passing_5xx_does_not_decide_for_every_later_run(store: Store) -> None:
    answers: list[ChatResult | CallFailure] = [failed(500), ok("OK"), ok('{"probe": "halugen"}')]
    runner = FakeRunner(lambda r: answers.pop(0))
    (decision,) = decide(caps(store, runner), JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.supported
    assert len(runner.sent) == 3


def test_a_server_failing_everything_teaches_nothing_and_fails_the_waiting_call(
    store: Store,
) -> None:
    runner = FakeRunner(lambda r: failed(500))
    c = caps(store, runner)
    (outcome,) = decide(c, JSON_SCHEMA)
    assert isinstance(outcome, CallFailure) and outcome.status == 500
    assert len(runner.sent) == 2 * 3  # probe and twin, in each of the policy's attempts
    assert rows(store) == [] and c.decisions == ()
    # the next caller asks again, and a server that is back answers
    runner.answer = honours
    (decision,) = decide(c, JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.supported


@pytest.mark.parametrize("status", [0, 408, 429, 502, 503, 504, 200])
def test_no_answer_says_nothing_about_the_feature_and_is_tried_again(
    store: Store, status: int
) -> None:
    answers: list[ChatResult | CallFailure] = [failed(status), ok('{"probe": "halugen"}')]
    runner = FakeRunner(lambda r: answers.pop(0))
    (decision,) = decide(caps(store, runner), JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.supported
    assert [r for r, _ in runner.sent] == [probe_request(JSON_SCHEMA, "m")] * 2


def test_a_filtered_probe_is_asked_again(store: Store) -> None:
    answers = [ok("", finish="content_filter"), ok("OK", "OK")]
    runner = FakeRunner(lambda r: answers.pop(0))
    (decision,) = decide(caps(store, runner), N_CHOICES)
    assert isinstance(decision, Decision) and decision.supported and len(runner.sent) == 2


def test_what_a_probe_found_is_reused_by_any_later_run_of_the_endpoint_and_model(
    store: Store,
) -> None:
    first = FakeRunner(lambda r: ok("text, not JSON"))
    decide(caps(store, first), JSON_SCHEMA)
    store.writer.flush_blocking()
    later = FakeRunner(honours)
    c = caps(store, later, run_id="run-2")
    (decision,) = decide(c, JSON_SCHEMA)
    assert isinstance(decision, Decision) and not decision.supported
    assert decision.source == "stored" and later.sent == []
    # another model, or another endpoint, is asked
    other = caps(store, later, run_id="run-3")
    other.model = "m2"
    (decision,) = decide(other, JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.source == "probe" and decision.supported


def test_a_run_keeps_how_it_asked_where_nothing_is_known_of_the_endpoint(store: Store) -> None:
    # an export for an offline engine: no server, nothing stored: text, and said so
    offline = caps(store, None)
    (decision,) = decide(offline, JSON_SCHEMA)
    assert isinstance(decision, Decision) and not decision.supported
    assert decision.source == "default" and "--structured" in decision.note
    store.writer.flush_blocking()
    # the same run against a server nothing is known of: asks as before, sends nothing
    runner = FakeRunner(honours)
    (decision,) = decide(caps(store, runner), JSON_SCHEMA)
    assert isinstance(decision, Decision) and not decision.supported
    assert decision.source == "run" and runner.sent == []
    # another run probes
    (decision,) = decide(caps(store, runner, run_id="run-2"), JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.supported and len(runner.sent) == 1


@pytest.mark.parametrize(("mode", "supported"), [("on", True), ("off", False)])
def test_the_flag_decides_without_a_probe(store: Store, mode: str, supported: bool) -> None:
    runner = FakeRunner(lambda r: ok("x"))
    c = caps(store, runner, modes={JSON_SCHEMA: mode})
    (decision,) = decide(c, JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.supported is supported
    assert decision.source == "flag" and runner.sent == []
    # a flag's row is not a fact about the endpoint: another run still probes
    store.writer.flush_blocking()
    (decision,) = decide(caps(store, runner, run_id="run-2"), JSON_SCHEMA)
    assert isinstance(decision, Decision) and decision.source == "probe"


def test_formatted_adds_the_schema_only_where_the_session_asks_for_json(store: Store) -> None:
    request = ChatRequest(model="m", messages=({"role": "user", "content": "q"},))
    for runner, expected in ((FakeRunner(honours), verdict_format()), (None, None)):
        c = caps(store, runner, run_id=f"run-{expected is None}")

        async def go(c: Capabilities = c) -> ChatRequest | CallFailure:
            return await c.formatted(request, verdict_format())

        got = asyncio.run(go())
        assert isinstance(got, ChatRequest) and got.response_format == expected


def test_unknown_modes_are_refused(store: Store) -> None:
    with pytest.raises(ValueError):
        caps(store, None, modes={JSON_SCHEMA: "sometimes"})
    with pytest.raises(ValueError):
        caps(store, None, modes={"streaming": "on"})


def test_n_is_probed_with_the_value_the_run_uses_and_kept_per_value(store: Store) -> None:
    # llama.cpp's server with -np 2: two choices are fine, three are refused by name
    def capped(request: ChatRequest) -> ChatResult | CallFailure:
        if request.n > 2:
            message = "HTTP 400: Field 'n': Value must be between 1 <= value <= 2"
            return CallFailure("k", "FatalCallError", message, 400)
        return ok(*["OK"] * request.n)

    runner = FakeRunner(capped)
    c = caps(store, runner)

    async def go() -> list[Decision | CallFailure]:
        return [await c.decide(N_CHOICES, 3), await c.decide(N_CHOICES, 2)]

    three, two = asyncio.run(go())
    assert isinstance(three, Decision) and not three.supported and "Field 'n'" in three.detail
    assert isinstance(two, Decision) and two.supported and two.detail == "2 choices for n=2"
    assert [r.n for r, _ in runner.sent] == [3, 2]
    assert [r[2:4] for r in rows(store)] == [("n=3", False), ("n=2", True)]


def test_a_request_refused_by_name_turns_the_feature_off_for_the_session(store: Store) -> None:
    from halugen.llm.capabilities import refuses_field

    refusal = CallFailure("k", "FatalCallError", "HTTP 400: Field 'n': Value must be ...", 400)
    assert refuses_field(refusal, "n")
    assert not refuses_field(CallFailure("k", "X", "HTTP 400: too many messages", 400), "n")
    assert not refuses_field(CallFailure("k", "X", "HTTP 500: Field 'n'", 500), "n")
    runner = FakeRunner(honours)
    c = caps(store, runner)
    (before,) = decide(c, N_CHOICES)
    assert isinstance(before, Decision) and before.supported
    c.refused(N_CHOICES, None, refusal)
    (after,) = decide(c, N_CHOICES)
    assert isinstance(after, Decision) and not after.supported and after.source == "refused"
    assert "refused" in after.note and len(runner.sent) == 1
