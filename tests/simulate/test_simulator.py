"""``Simulator.handle`` in process: shapes, determinism, limits, faults, billing, errors."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import orjson
import pytest

from halugen.config import Timeouts
from halugen.errors import RetryableError, UsageError
from halugen.llm.transport import HandlerTransport
from halugen.records import ChatRequest, fingerprint
from halugen.simulate import SimConfig, SimulatedDrop, Simulator
from halugen.tasks.base import normalise, parse_choice
from tests.virtual_time import run_virtual

from ._support import (
    FakeClock,
    FakeSleep,
    body,
    call,
    filter_prompt,
    post,
    qa_prompt,
    run,
    texts,
    verdict_prompt,
)

KNOW = (
    "Lake Varna lies in the Tessel Mountains. Its dam was finished in 1962 by the Korvath "
    "Company, and the lake holds 4.2 cubic kilometres of water."
)
QUESTION = "In which year was the dam of Lake Varna finished?"
RIGHT = "1962"


def qa_body(i: int = 0, **params: object) -> bytes:
    params.setdefault("max_tokens", 256)
    return body(qa_prompt(KNOW, f"{QUESTION} (case {i})", RIGHT), **params)


def payload(resp) -> dict:
    return orjson.loads(resp.body)


def test_hallucination_reply_shape_and_usage() -> None:
    sim = Simulator(SimConfig())
    resp = call(sim, qa_body())
    assert resp.status == 200
    assert resp.headers["content-type"] == "application/json"
    data = payload(resp)
    assert data["object"] == "chat.completion" and data["model"] == "sim-model"
    (choice,) = data["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    pattern_line, answer_line = choice["message"]["content"].split("\n")
    assert pattern_line.removeprefix("Pattern: ") in (
        "comprehension",
        "factualness",
        "specificity",
        "inference",
    )
    answer = answer_line.removeprefix("Answer: ")
    assert normalise(answer) != normalise(RIGHT)
    usage = data["usage"]
    assert usage["completion_tokens"] == math.ceil(len(choice["message"]["content"].encode()) / 4)
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    content = orjson.loads(qa_body())["messages"][0]["content"]
    assert usage["prompt_tokens"] == 3 + 4 + math.ceil(len(content.encode()) / 4)


def test_hallucinations_never_equal_the_right_answer_over_many_records() -> None:
    sim = Simulator(SimConfig(seed=3))
    for i in range(150):
        right = ("1962", "Lake Varna", "the Korvath Company", "yes", "4.2 cubic kilometres")[i % 5]
        resp = call(sim, body(qa_prompt(KNOW, f"q{i}", right), temperature=1.0, n=2))
        for text in texts(resp):
            answer = text.split("\n")[1].removeprefix("Answer: ")
            assert normalise(answer) and normalise(answer) != normalise(right), (right, text)


def test_filter_judge_reply_is_parseable_and_prefers_the_supported_answer() -> None:
    sim = Simulator(SimConfig())
    answers = [
        "It was finished in 1975 by Odile Brask.",
        "The Korvath Company finished it in 1962.",
    ]
    resp = call(sim, body(filter_prompt(KNOW, QUESTION, answers), temperature=0, max_tokens=16))
    (text,) = texts(resp)
    assert text == "Choice: 2"
    assert parse_choice(text, answers) == 2


def test_recognition_verdict_with_oracle_and_logprobs() -> None:
    oracle = {"1975": True, "1962": False}
    sim = Simulator(SimConfig(oracle=oracle, judge_accuracy=1.0))
    for shown, expected in (("1975", "Yes"), ("1962.", "No")):
        resp = call(
            sim, body(verdict_prompt(QUESTION, shown), logprobs=True, top_logprobs=2, max_tokens=8)
        )
        (choice,) = payload(resp)["choices"]
        assert choice["message"]["content"] == f"Verdict: {expected}"
        (entry,) = choice["logprobs"]["content"]
        assert entry["token"] == expected
        tops = {t["token"]: t["logprob"] for t in entry["top_logprobs"]}
        assert set(tops) == {"Yes", "No"}
        assert tops[expected] > tops["No" if expected == "Yes" else "Yes"]
        assert math.exp(tops["Yes"]) + math.exp(tops["No"]) == pytest.approx(1.0)


def test_judge_accuracy_over_many_prompts() -> None:
    oracle = {f"answer {i}": i % 2 == 0 for i in range(600)}
    sim = Simulator(SimConfig(oracle=oracle, judge_accuracy=0.6))
    right = 0
    for i in range(600):
        (text,) = texts(call(sim, body(verdict_prompt(f"q{i}", f"Answer {i}"))))
        said_yes = text == "Verdict: Yes"
        right += said_yes == oracle[f"answer {i}"]
    assert 0.52 < right / 600 < 0.68


def test_plain_query_with_n_gives_distinct_choices() -> None:
    sim = Simulator(SimConfig())
    resp = call(sim, body("Suggest a name for a new bakery in a small town.", n=3))
    choices = texts(resp)
    assert len(choices) == 3
    assert len(set(choices)) == 3
    for text in choices:
        assert 2 <= text.count(".") <= 4


def test_same_body_same_answer_and_seed_changes_it() -> None:
    sim = Simulator(SimConfig())
    assert texts(call(sim, qa_body(1))) == texts(call(sim, qa_body(1)))
    # a new simulator with the same settings says the same
    assert texts(call(Simulator(SimConfig()), qa_body(1))) == texts(call(sim, qa_body(1)))
    varied = {texts(call(sim, qa_body(1, seed=s)))[0] for s in range(12)}
    assert len(varied) > 1
    other_sim_seed = {texts(call(Simulator(SimConfig(seed=s)), qa_body(1)))[0] for s in range(12)}
    assert len(other_sim_seed) > 1


def test_n_and_honour_n() -> None:
    data = qa_body(n=4)
    resp = call(Simulator(SimConfig()), data)
    choices = payload(resp)["choices"]
    assert [c["index"] for c in choices] == [0, 1, 2, 3]
    completion = sum(math.ceil(len(c["message"]["content"].encode()) / 4) for c in choices)
    assert payload(resp)["usage"]["completion_tokens"] == completion
    one = call(Simulator(SimConfig(honour_n=False)), data)
    assert len(payload(one)["choices"]) == 1


def test_usage_can_be_omitted() -> None:
    resp = call(Simulator(SimConfig(report_usage=False)), qa_body())
    assert "usage" not in payload(resp)
    assert payload(resp)["choices"]


def test_max_tokens_truncates_and_stop_cuts() -> None:
    sim = Simulator(SimConfig())
    resp = call(sim, body("Explain how tides work on the coast.", max_tokens=5))
    (choice,) = payload(resp)["choices"]
    assert choice["finish_reason"] == "length"
    assert len(choice["message"]["content"].encode()) <= 20
    assert payload(resp)["usage"]["completion_tokens"] <= 5
    resp = call(sim, body(qa_prompt(KNOW, QUESTION, RIGHT), stop=["\nAnswer"]))
    (text,) = texts(resp)
    assert text.startswith("Pattern: ") and "\n" not in text
    resp = call(sim, body("hello there friend", max_completion_tokens=2))
    assert payload(resp)["choices"][0]["finish_reason"] == "length"


def test_rate_limit_429_with_headers_on_a_fake_clock() -> None:
    clock = FakeClock()
    sim = Simulator(SimConfig(rpm=3, tpm=100_000, clock=clock))
    for i in range(3):
        resp = call(sim, qa_body(i))
        assert resp.status == 200
        assert resp.headers["x-ratelimit-limit-requests"] == "3"
        assert resp.headers["x-ratelimit-remaining-requests"] == str(2 - i)
        assert resp.headers["x-ratelimit-limit-tokens"] == "100000"
    resp = call(sim, qa_body(9))
    assert resp.status == 429
    err = payload(resp)["error"]
    assert err["code"] == "rate_limit_exceeded" and err["type"] == "requests"
    assert resp.headers["retry-after-ms"] == "20000"  # 3/min: one every 20 s
    assert resp.headers["retry-after"] == "20"
    assert resp.headers["x-ratelimit-remaining-requests"] == "0"
    assert resp.headers["x-ratelimit-reset-requests"] == "1m0s"
    clock.advance(19.9)
    assert call(sim, qa_body(9)).status == 429
    clock.advance(0.1)
    assert call(sim, qa_body(9)).status == 200
    stats = sim.stats()
    assert stats["rate_limited"] == 2 and stats["by_status"] == {200: 4, 429: 2}
    assert stats["billed_requests"] == 4


def test_tokens_per_minute_limit() -> None:
    usage = payload(call(Simulator(SimConfig()), qa_body(0)))["usage"]
    cost = usage["prompt_tokens"] + 256  # prompt + max_tokens, as OpenAI counts
    clock = FakeClock()
    sim = Simulator(SimConfig(tpm=2 * cost + cost // 2, clock=clock))
    assert [call(sim, qa_body(i)).status for i in range(3)] == [200, 200, 429]
    resp = call(sim, qa_body(7))
    assert resp.status == 429 and payload(resp)["error"]["type"] == "tokens"
    assert resp.headers["x-ratelimit-remaining-tokens"] == str(cost // 2)
    clock.advance(60)
    assert call(sim, qa_body(7)).status == 200
    huge = call(sim, qa_body(8, max_tokens=5000))
    assert huge.status == 429 and "too large" in payload(huge)["error"]["message"]


def test_auth() -> None:
    sim = Simulator(SimConfig(api_key="sk-secret"))
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "sk-secret"}):
        resp = call(sim, qa_body(), headers)
        assert resp.status == 401
        assert payload(resp)["error"]["code"] == "invalid_api_key"
        assert payload(resp)["error"]["type"] == "invalid_request_error"
        assert b"sk-secret" not in resp.body
    assert call(sim, qa_body(), {"authorization": "Bearer sk-secret"}).status == 200
    assert sim.stats()["billed_requests"] == 1


@pytest.mark.parametrize(
    ("data", "param"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (orjson.dumps({"model": "m"}), "messages"),
        (orjson.dumps({"model": "m", "messages": []}), "messages"),
        (orjson.dumps({"messages": [{"role": "user", "content": "hi"}]}), "model"),
        (body("hi", n=0), "n"),
        (body("hi", max_tokens=-1), "max_tokens"),
        (body("hi", temperature=3), "temperature"),
        (body("hi", stop=[1]), "stop"),
    ],
)
def test_bad_requests_get_400(data: bytes, param: str | None) -> None:
    sim = Simulator(SimConfig())
    resp = call(sim, data)
    assert resp.status == 400
    err = payload(resp)["error"]
    assert err["type"] == "invalid_request_error" and err["message"]
    assert set(err) >= {"message", "type", "code"}
    assert err["param"] == param
    assert sim.stats()["billed_requests"] == 0


def test_context_length_exceeded() -> None:
    sim = Simulator(SimConfig())
    long_text = "word " * 103_000  # 515,000 bytes: about 128,750 tokens
    resp = call(sim, body(long_text, max_tokens=10))
    assert resp.status == 400
    assert payload(resp)["error"]["code"] == "context_length_exceeded"
    # fits alone, but not with the completion asked for
    fits = "word " * 100_000
    assert call(sim, body(fits, max_tokens=10)).status == 200
    assert call(sim, body(fits, max_tokens=5000)).status == 400
    assert call(Simulator(SimConfig(context_window=50)), body("x" * 400)).status == 400


def test_unknown_path_is_404() -> None:
    sim = Simulator(SimConfig())
    resp = run(sim.handle("/v1/embeddings", {}, qa_body()))
    assert resp.status == 404 and payload(resp)["error"]["code"] == "unknown_url"
    assert run(sim.handle("/chat/completions", {}, qa_body())).status == 200


def test_billing_sums_and_billed_keys() -> None:
    sim = Simulator(SimConfig(price_in=2.0, price_out=8.0))
    prompt = completion = 0
    for i in range(20):
        data = payload(call(sim, qa_body(i, n=1 + i % 3)))
        prompt += data["usage"]["prompt_tokens"]
        completion += data["usage"]["completion_tokens"]
    call(sim, qa_body(0, n=1))  # the same request again: billed twice
    stats = sim.stats()
    assert stats["billed_requests"] == 21
    repeat = payload(call(Simulator(SimConfig()), qa_body(0, n=1)))["usage"]
    assert stats["prompt_tokens"] == prompt + repeat["prompt_tokens"]
    assert stats["completion_tokens"] == completion + repeat["completion_tokens"]
    expected = (stats["prompt_tokens"] * 2.0 + stats["completion_tokens"] * 8.0) / 1e6
    assert stats["billed_usd"] == pytest.approx(expected)
    keys = stats["billed_keys"]
    assert len(keys) == 20 and sorted(keys.values()).count(2) == 1
    assert stats["duplicate_bills"] == 1
    # a key is the sha256 of the canonical request body, as the engine can compute it
    request = ChatRequest(
        model="sim-model", messages=({"role": "user", "content": "x"},), max_tokens=7
    )
    call(sim, orjson.dumps(request.payload()))
    assert fingerprint(request.payload(), size=64) in sim.stats()["billed_keys"]
    assert "billed_keys" not in sim.stats(keys=False)


def test_fault_mix_matches_fail_rate() -> None:
    sleep = FakeSleep()
    sim = Simulator(SimConfig(fail_rate=0.3, hang_s=30.0, sleep=sleep))
    total = 3000
    outcomes: Counter[str] = Counter()
    for i in range(total):
        try:
            resp = call(sim, body(f"question {i}?", max_tokens=20))
        except SimulatedDrop:
            outcomes["drop"] += 1
            continue
        if resp.status != 200:
            outcomes[str(resp.status)] += 1
            continue
        try:
            choice = payload(resp)["choices"][0]
        except orjson.JSONDecodeError:
            outcomes["malformed"] += 1
            continue
        outcomes[choice["finish_reason"]] += 1
    faults = sim.stats()["faults"]
    # a hang answers normally after its wait, so the client sees it as an answer
    answered = outcomes["stop"] + outcomes["length"]
    assert sum(faults.values()) - faults["hang"] == total - answered
    assert 0.26 < sum(faults.values()) / total < 0.34
    for kind in ("500", "503", "hang", "malformed", "content_filter", "drop"):
        assert 0.03 < faults[kind] / total < 0.07, (kind, faults)
        if kind != "hang":  # a hang answers normally after the wait
            assert outcomes[kind] == faults[kind]
    assert sleep.calls.count(30.0) == faults["hang"]
    stats = sim.stats()
    # billed: normal answers plus hang, malformed and content_filter
    assert stats["billed_requests"] == (
        stats["ok"] + faults["hang"] + faults["malformed"] + faults["content_filter"]
    )
    assert stats["by_status"][500] == faults["500"] and stats["by_status"][503] == faults["503"]


def test_retried_request_can_succeed_after_a_fault() -> None:
    sim = Simulator(SimConfig(fail_rate=0.5, faults=("500",)))
    data = qa_body()
    statuses = [call(sim, data).status for _ in range(40)]
    assert 500 in statuses and 200 in statuses
    # the sequence for one body is deterministic for a fresh simulator
    again = Simulator(SimConfig(fail_rate=0.5, faults=("500",)))
    assert [call(again, data).status for _ in range(40)] == statuses


def test_hang_awaits_the_injected_sleep_and_bills_before_it() -> None:
    sleep = FakeSleep()
    sim = Simulator(SimConfig(fail_rate=1.0, faults=("hang",), hang_s=12.5, sleep=sleep))
    resp = call(sim, qa_body())
    assert resp.status == 200 and payload(resp)["choices"][0]["finish_reason"] == "stop"
    assert sleep.calls == [12.5]
    assert sim.stats()["faults"] == {"hang": 1} and sim.stats()["billed_requests"] == 1


def test_hang_times_out_through_handler_transport_and_was_billed() -> None:
    sim = Simulator(SimConfig(fail_rate=1.0, faults=("hang",), hang_s=30.0))
    transport = HandlerTransport(sim.handle)
    with pytest.raises(RetryableError) as info:
        run(transport.post("http://sim/v1/chat/completions", {}, qa_body(), Timeouts(total=0.01)))
    assert info.value.billed_maybe
    assert sim.stats()["billed_requests"] == 1 and sim.stats()["in_flight"] == 0


def test_drop_malformed_content_filter() -> None:
    drop = Simulator(SimConfig(fail_rate=1.0, faults=("drop",)))
    with pytest.raises(SimulatedDrop):
        call(drop, qa_body())
    assert drop.stats()["billed_requests"] == 0 and drop.stats()["faults"] == {"drop": 1}

    bad = Simulator(SimConfig(fail_rate=1.0, faults=("malformed",)))
    resp = call(bad, qa_body())
    assert resp.status == 200
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(resp.body)
    assert bad.stats()["billed_requests"] == 1

    cf = Simulator(SimConfig(fail_rate=1.0, faults=("content_filter",)))
    data = payload(call(cf, qa_body(n=2)))
    assert [c["finish_reason"] for c in data["choices"]] == ["content_filter"] * 2
    assert [c["message"]["content"] for c in data["choices"]] == ["", ""]
    assert data["usage"]["completion_tokens"] == 0 and data["usage"]["prompt_tokens"] > 0
    assert cf.stats()["billed_requests"] == 1


def test_latency_and_jitter_use_the_injected_sleep_deterministically() -> None:
    sleep = FakeSleep()
    sim = Simulator(SimConfig(latency_ms=100, jitter_ms=50, sleep=sleep))
    for i in range(30):
        call(sim, qa_body(i))
    call(sim, qa_body(0))
    assert len(sleep.calls) == 31
    assert all(0.1 <= s < 0.15 for s in sleep.calls)
    assert len(set(sleep.calls[:30])) > 10
    assert sleep.calls[30] == sleep.calls[0]


def test_garbage_rate() -> None:
    sim = Simulator(SimConfig(garbage_rate=0.25))
    unparseable = 0
    for i in range(400):
        (text,) = texts(call(sim, qa_body(i)))
        unparseable += not text.startswith("Pattern: ")
    assert 0.18 < unparseable / 400 < 0.32
    # plain queries have no format to ignore
    plain = Simulator(SimConfig(garbage_rate=1.0))
    assert "not sure" not in texts(call(plain, body("Tell me about owls.")))[0]


def test_handler_transport_round_trip() -> None:
    sim = Simulator(SimConfig(api_key="k"))
    transport = HandlerTransport(sim.handle)
    resp = run(
        transport.post(
            "http://127.0.0.1:1/v1/chat/completions",
            {"Authorization": "Bearer k", "Content-Type": "application/json"},
            qa_body(),
            Timeouts(),
        )
    )
    assert resp.status == 200 and payload(resp)["choices"]


def test_reset_zeroes_counters_and_refills_buckets() -> None:
    clock = FakeClock()
    sim = Simulator(SimConfig(rpm=1, clock=clock))
    assert call(sim, qa_body()).status == 200
    assert call(sim, qa_body()).status == 429
    sim.reset()
    stats = sim.stats()
    assert stats["requests"] == 0 and stats["billed_keys"] == {} and stats["by_status"] == {}
    assert call(sim, qa_body()).status == 200


def test_config_validation() -> None:
    with pytest.raises(UsageError):
        SimConfig(fail_rate=1.5)
    with pytest.raises(UsageError):
        SimConfig(faults=("explode",))
    with pytest.raises(UsageError):
        SimConfig(rpm=0)
    assert "secret" not in repr(SimConfig(api_key="secret"))


def test_concurrent_requests_in_one_loop() -> None:
    import asyncio

    async def many() -> list[int]:
        sim = Simulator(SimConfig(latency_ms=1))
        results = await asyncio.gather(*(post(sim, qa_body(i)) for i in range(50)))
        assert sim.stats()["in_flight"] == 0
        return [r.status for r in results]

    assert run(many()) == [200] * 50


def test_content_parts_are_read() -> None:
    sim = Simulator(SimConfig())
    parts = [{"type": "text", "text": qa_prompt(KNOW, QUESTION, RIGHT)}]
    resp = call(
        sim, body([{"role": "system", "content": "Be brief."}, {"role": "user", "content": parts}])
    )
    assert texts(resp)[0].startswith("Pattern: ")


# -- capacity mode ---------------------------------------------------------------------------


def test_capacity_mode_serves_n_at_once_and_queues_the_rest() -> None:
    async def main() -> tuple[list[float], dict]:
        sim = Simulator(SimConfig(capacity=2, latency_ms=1000))
        loop = asyncio.get_running_loop()
        done: list[float] = []

        async def one(i: int) -> None:
            resp = await post(sim, body(f"question {i}"))
            assert resp.status == 200
            done.append(round(loop.time()))

        await asyncio.gather(*(one(i) for i in range(5)))
        return done, sim.stats()

    done, stats = run_virtual(main())
    assert done == [1, 1, 2, 2, 3]
    assert stats["max_busy"] == 2 and stats["max_queued"] == 3
    assert stats["queued"] == 0 and stats["abandoned"] == 0


def test_a_client_that_gives_up_leaves_its_request_in_the_queue() -> None:
    async def main() -> tuple[dict, dict, float]:
        sim = Simulator(SimConfig(capacity=1, latency_ms=1000))
        loop = asyncio.get_running_loop()
        first = asyncio.create_task(post(sim, body("first")))
        await asyncio.sleep(0)
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):  # the second client gives up while queued
                await post(sim, body("second"))
        await first
        during = sim.stats()
        start = loop.time()
        await post(sim, body("third"))  # waits for the abandoned one, which is still served
        return during, sim.stats(), loop.time() - start

    during, after, third_latency = run_virtual(main())
    assert during["abandoned"] == 1
    assert third_latency == pytest.approx(2.0, abs=1e-3)
    assert after["billed_requests"] == 3  # the abandoned request was served and billed


def test_capacity_and_quantum_must_be_positive() -> None:
    for kw in ({"capacity": 0}, {"quantum_s": 0.0}, {"quantum_s": -1.0}):
        with pytest.raises(UsageError):
            SimConfig(**kw)  # type: ignore[arg-type]
