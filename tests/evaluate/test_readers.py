"""The strict reader is the default; the lenient one is an opt-in; logprobs are scored at the
contract's position only."""

from __future__ import annotations

import math

import pytest

from halugen.errors import UsageError
from halugen.evaluate.judge import response_format
from halugen.evaluate.logprob_verdicts import verdict_from_logprobs
from halugen.evaluate.readers import check_reader, read_pick, read_verdict


@pytest.mark.parametrize(
    ("reply", "strict", "lenient"),
    [
        ("Verdict: Yes", "yes", "yes"),
        ("The date is wrong.\nVerdict: No", "no", "no"),
        ("No", "no", "no"),
        ('{"verdict": "Yes"}', "yes", "yes"),
        # prose the lenient reader interprets; strictly it is unsure
        ("The answer is hallucinated.", "invalid", "yes"),
        ("Final answer: No", "invalid", "no"),
        ("I don't think the answer contains any hallucination.", "invalid", "no"),
    ],
)
def test_strict_reads_the_contract_and_lenient_interprets(
    reply: str, strict: str, lenient: str
) -> None:
    assert read_verdict(reply) == strict  # strict is the default
    assert read_verdict(reply, "strict") == strict
    assert read_verdict(reply, "lenient") == lenient


def test_a_contrast_pick_is_the_choice_line() -> None:
    assert read_pick("Answer 2 names the wrong year.\nChoice: 2") == 2
    assert read_pick('{"choice": 1}') == 1
    assert read_pick("Hallucinated: 2") is None  # not the contract
    assert read_pick("Hallucinated: 2", "lenient") == 2
    assert read_pick("Answer 1 is correct.") is None
    assert read_pick("Answer 1 is correct.", "lenient") == 2


def test_an_unknown_reader_is_one_line() -> None:
    assert check_reader("lenient") == "lenient"
    with pytest.raises(UsageError, match="--read must be one of strict, lenient"):
        check_reader("careful")


def test_the_json_schemas_ask_for_the_contract_field_as_an_enum() -> None:
    def props(strategy: str) -> dict:
        return response_format(strategy)["json_schema"]["schema"]["properties"]

    assert props("plain") == {"verdict": {"type": "string", "enum": ["Yes", "No"]}}
    assert list(props("cot")) == ["reasoning", "verdict"]
    assert props("contrast") == {"choice": {"type": "integer", "enum": [1, 2]}}


def _entry(token: str, p: float, alternatives: dict[str, float] | None = None) -> dict:
    top = [{"token": t, "logprob": math.log(q)} for t, q in (alternatives or {token: p}).items()]
    return {"token": token, "logprob": math.log(p), "top_logprobs": top}


def test_logprobs_score_only_the_contract_position() -> None:
    # a Yes in the reasoning and no contract line: the lenient reader scored that Yes
    no_line = [
        _entry("Yes", 0.9, {"Yes": 0.9, "No": 0.1}),
        _entry(",", 0.9),
        _entry(" the", 0.9),
        _entry(" date", 0.9),
        _entry(" is", 0.9),
        _entry(" wrong", 0.9),
    ]
    assert verdict_from_logprobs({"content": no_line}) == ("invalid", None)
    assert verdict_from_logprobs({"content": no_line}, reader="lenient")[0] == "yes"
    # the contract line, then more text: off the contract, nothing is scored
    trailing = [
        _entry("Verdict", 0.9),
        _entry(":", 0.9),
        _entry(" No", 0.6, {" No": 0.6, " Yes": 0.4}),
        _entry("\n", 0.9),
        _entry("Yes", 0.9, {"Yes": 0.9}),
        _entry(" it", 0.9),
        _entry(" is", 0.9),
    ]
    assert verdict_from_logprobs({"content": trailing}) == ("invalid", None)
    # the contract line after reasoning that opens with "Yes": the line's token is scored
    reasoned = [
        _entry("Yes", 0.9, {"Yes": 0.9, "No": 0.1}),
        _entry(" dates", 0.9),
        _entry(" differ", 0.9),
        _entry(".\n", 0.9),
        _entry("Verdict", 0.9),
        _entry(":", 0.9),
        _entry(" No", 0.6, {" No": 0.6, " Yes": 0.4}),
    ]
    verdict, p = verdict_from_logprobs({"content": reasoned})
    assert verdict == "no" and p == pytest.approx(0.4)
