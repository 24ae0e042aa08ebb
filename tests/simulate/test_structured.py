"""The simulator's structured outputs: JSON that fits the request's schema, or a 400 like a
server without them."""

from __future__ import annotations

import orjson
import pytest

from halugen.llm import structured
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


def test_a_server_without_structured_outputs_refuses_with_a_400() -> None:
    sim = Simulator(SimConfig(structured_outputs=False))
    prompt = filter_prompt(KNOW, QUESTION, ["Ostra", "Serin"])
    resp = call(sim, body(prompt, response_format=structured.choice_format(2)))
    assert resp.status == 400
    error = orjson.loads(resp.body)["error"]
    assert error["param"] == "response_format" and "not supported" in error["message"]
    assert sim.stats(keys=False)["billed_requests"] == 0
    # text is still answered
    assert call(sim, body(prompt)).status == 200
    assert call(sim, body(prompt, response_format={"type": "text"})).status == 200


@pytest.mark.parametrize(
    "fmt",
    [{"type": "xml"}, "json", {"type": "json_schema"}, {"type": "json_schema", "json_schema": {}}],
)
def test_a_malformed_response_format_is_a_400(fmt: object) -> None:
    resp = call(Simulator(SimConfig()), body("hello", response_format=fmt))
    assert resp.status == 400
    assert orjson.loads(resp.body)["error"]["param"] == "response_format"
