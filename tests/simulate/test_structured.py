"""The simulator's structured outputs: JSON that fits the request's schema, or the other
behaviours of servers users have: the format ignored (a text reply), refused with a 400, or
refused with a 500 as llama-cpp-python's server does; on the chat endpoint and in batches."""

from __future__ import annotations

import orjson
import pytest

from halugen import structured_outputs as structured
from halugen.simulate import SimConfig, Simulator

from ._support import body, call, filter_prompt, qa_prompt, texts, verdict_prompt

KNOW = "The Serin flows through Vallona. Aldo Brun was born in Vallona."
QUESTION = "Which river flows through the town where Aldo Brun was born?"


def _json(sim: Simulator, prompt: str, fmt: dict, **params: object) -> object:
    resp = call(sim, body(prompt, response_format=fmt, **params))
    assert resp.status == 200, resp.body
    (text,) = texts(resp)
    return orjson.loads(text)


def test_judges_answer_json_of_the_schema() -> None:
    sim = Simulator(SimConfig(oracle={"Lisbon": True, "Serin": False}, judge_accuracy=1.0))
    pick = _json(
        sim, filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"]), structured.choice_format(2)
    )
    assert pick == {"choice": 2}
    assert _json(sim, verdict_prompt(QUESTION, "Lisbon"), structured.verdict_format()) == {
        "verdict": "Yes"
    }
    assert _json(sim, verdict_prompt(QUESTION, "Serin"), structured.verdict_format()) == {
        "verdict": "No"
    }
    reasoned = _json(sim, verdict_prompt(QUESTION, "Serin"), structured.reasoned_verdict_format())
    assert list(reasoned) == ["reasoning", "verdict"]
    assert isinstance(reasoned["reasoning"], str) and reasoned["verdict"] == "No"


def test_a_sampling_reply_fills_every_property_with_a_valid_value() -> None:
    sim = Simulator(SimConfig())
    fmt = structured.json_schema_format(
        "candidate",
        {
            "pattern": {"type": "string", "enum": ["comprehension", "factualness"]},
            "answer": {"type": "string"},
            "confidence": {"type": "number"},
            "sure": {"type": "boolean"},
            "notes": {"type": "array", "items": {"type": "string"}},
        },
    )
    got = _json(sim, qa_prompt(KNOW, QUESTION, "Serin"), fmt)
    assert set(got) == {"pattern", "answer", "confidence", "sure", "notes"}
    assert got["pattern"] in ("comprehension", "factualness")
    assert got["answer"] and got["answer"] != "Serin"
    assert isinstance(got["confidence"], float) and isinstance(got["sure"], bool)
    assert got["notes"] == []


def test_json_object_writes_the_reply_format_labels_as_keys() -> None:
    got = _json(
        Simulator(SimConfig()),
        filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"]),
        {"type": "json_object"},
    )
    assert got == {"choice": "2"}


def test_text_format_and_no_format_answer_text() -> None:
    sim = Simulator(SimConfig())
    prompt = filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"])
    assert texts(call(sim, body(prompt, response_format={"type": "text"}))) == ["Choice: 2"]
    assert texts(call(sim, body(prompt))) == ["Choice: 2"]


def test_garbage_never_breaks_a_schema() -> None:
    sim = Simulator(SimConfig(garbage_rate=1.0))
    prompt = filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"])
    assert texts(call(sim, body(prompt)))[0].startswith(("I'm", "Both", "Let", "Could"))
    assert _json(sim, prompt, structured.choice_format(2), seed=3) == {"choice": 2}


@pytest.mark.parametrize(("mode", "status"), [("400", 400), ("500", 500)])
def test_a_server_without_structured_outputs_refuses_it(mode: str, status: int) -> None:
    sim = Simulator(SimConfig(response_format=mode))
    prompt = filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"])
    resp = call(sim, body(prompt, response_format=structured.choice_format(2)))
    assert resp.status == status
    error = orjson.loads(resp.body)["error"]
    if status == 400:
        assert error["param"] == "response_format" and "not supported" in error["message"]
    else:
        assert error["type"] == "server_error" and "response_format" in error["message"]
    assert sim.stats(keys=False)["billed_requests"] == 0
    # text is still answered
    assert call(sim, body(prompt)).status == 200
    assert call(sim, body(prompt, response_format={"type": "text"})).status == 200


def test_a_server_that_ignores_the_format_answers_in_text_and_bills_it() -> None:
    prompt = filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"])
    ignoring = Simulator(SimConfig(response_format="ignore"))
    resp = call(ignoring, body(prompt, response_format=structured.choice_format(2)))
    assert resp.status == 200
    (text,) = texts(resp)
    assert text.startswith("Choice:")  # the reply format the prompt asks for, not JSON
    assert ignoring.stats(keys=False)["billed_requests"] == 1


@pytest.mark.parametrize(("mode", "outcome"), [("ignore", 200), ("400", 400), ("500", 500)])
def test_batch_lines_get_what_the_chat_endpoint_answers(mode: str, outcome: int) -> None:
    import anyio

    from halugen.llm.batch_client import BatchClient
    from tests.batch.support import in_process

    env = in_process(sim={"response_format": mode})
    prompt = filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"])
    request = orjson.loads(body(prompt, response_format=structured.choice_format(2)))
    line = {"custom_id": "k", "method": "POST", "url": "/v1/chat/completions", "body": request}

    async def main() -> dict:
        client = BatchClient(base_url="http://sim/v1", api_key="k", transport=env.transport)
        created = await client.create(await client.upload(orjson.dumps(line) + b"\n"))
        while not (info := await client.get(created.id)).final:
            pass
        file_id = info.output_file_id if outcome == 200 else info.error_file_id
        assert file_id is not None
        return orjson.loads(await client.content(file_id))

    (got,) = [anyio.run(main)]
    assert got["response"]["status_code"] == outcome
    if outcome == 200:
        direct = call(Simulator(SimConfig(response_format=mode)), orjson.dumps(request))
        assert got["response"]["body"]["choices"] == orjson.loads(direct.body)["choices"]


def test_an_unknown_response_format_mode_is_refused() -> None:
    from halugen.errors import UsageError

    with pytest.raises(UsageError, match="response_format"):
        SimConfig(response_format="sometimes")


@pytest.mark.parametrize(
    "fmt",
    [{"type": "xml"}, "json", {"type": "json_schema"}, {"type": "json_schema", "json_schema": {}}],
)
def test_a_malformed_response_format_is_a_400(fmt: object) -> None:
    resp = call(Simulator(SimConfig()), body("hello", response_format=fmt))
    assert resp.status == 400
    assert orjson.loads(resp.body)["error"]["param"] == "response_format"
