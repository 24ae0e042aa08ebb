"""Reading judge replies: Yes/No/invalid, contrast picks, and P(Yes) from logprobs.

The broad check is the adversarial table (test_verdict_table.py); these pin single rules.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from halugen.evaluate.logprob_verdicts import verdict_from_logprobs
from halugen.evaluate.verdicts import parse_contrast, parse_verdict


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # plain replies
        ("Yes", "yes"),
        ("Yes.", "yes"),
        ("no", "no"),
        ("NO", "no"),
        ("**Yes**", "yes"),
        ("**No**", "no"),
        ("- No.", "no"),
        ('"Yes"', "yes"),
        ("no, it is not", "no"),
        ("No, there is no hallucination here.", "no"),
        ("Yes, there is no doubt about it", "yes"),  # "no" as a determiner is not a verdict
        ("Yes. The year is wrong.", "yes"),
        # verdict lines: the last one decides
        ("Verdict: Yes", "yes"),
        ("verdict: no", "no"),
        ("**Verdict:** Yes", "yes"),
        ("**Verdict**: No", "no"),
        ("Verdict:\n**Yes**", "yes"),
        ("Final verdict: No", "no"),
        ("Reasoning: the answer says no such thing.\nVerdict: Yes", "yes"),
        ("Reasoning: first I thought yes.\nVerdict: Yes\nOn reflection...\nVerdict: No", "no"),
        ("Not hallucinated.\nVerdict: No", "no"),
        ("NOT hallucinated\n\nVerdict: no", "no"),
        # adversarial: both words, or neither
        ("No, wait — Yes.", "invalid"),
        ("No. Actually, yes.", "invalid"),
        ("Yes or No", "invalid"),
        ("Verdict: <Yes or No>", "invalid"),
        ("Verdict: Yes, no.", "invalid"),
        ("Not hallucinated", "no"),  # a description of the answer, read as one
        ("NOT hallucinated", "no"),
        ("None", "invalid"),
        ("None of it is made up.", "no"),
        ("Note: yes", "invalid"),
        ("I don't know", "invalid"),
        ("know", "invalid"),
        ("Nope", "no"),
        ("No idea", "invalid"),  # a non-answer, not No
        ("No comment", "invalid"),
        ("Yes-man", "invalid"),
        ("The answer is yes.", "yes"),
        ("The answer is Paris.", "invalid"),
        ("Verdict:", "invalid"),
        ("Verdict: maybe", "invalid"),
        ("", "invalid"),
        ("   \n ", "invalid"),
    ],
)
def test_parse_verdict(text: str, expected: str) -> None:
    assert parse_verdict(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hallucinated: 2", 2),
        ("Hallucinated: 1", 1),
        ("hallucinated: Answer 1", 1),
        ("**Hallucinated:** Response 2 (its year 1889 is wrong)", 2),
        ("Hallucinated:\n2", 2),
        ("Reasoning: answer 1 is right.\nHallucinated: 2", 2),
        ("2", 2),
        ("Summary 1.", 1),
        ("**Answer 2**", 2),
        ("Hallucinated: 1 or 2", None),
        ("Hallucinated: <1 or 2>", None),
        ("Hallucinated: both", None),
        ("Hallucinated: 12", None),
        ("Hallucinated: 1.5", None),
        ("Answer 12", None),
        ("Both are fine", None),
        ("Answer 2 is hallucinated while answer 1 is fine", 2),
        ("Answer 2 is hallucinated while answer 1 is wrong", None),
        ("", None),
    ],
)
def test_parse_contrast(text: str, expected: int | None) -> None:
    assert parse_contrast(text) == expected


def _entry(token: str, p: float, alts: dict[str, float] | None = None) -> dict:
    tops = [{"token": t, "logprob": math.log(q)} for t, q in (alts or {}).items()]
    return {"token": token, "logprob": math.log(p), "top_logprobs": tops}


def test_logprobs_single_verdict_token_as_the_simulator_sends() -> None:
    lp = {"content": [_entry("Yes", 0.8, {"Yes": 0.8, "No": 0.2})]}
    verdict, p = verdict_from_logprobs(lp)
    assert verdict == "yes"
    assert p == pytest.approx(0.8)


def test_logprobs_token_after_verdict_label_and_variants_are_pooled() -> None:
    content = [
        _entry("Ver", 0.99),
        _entry("dict", 0.99),
        _entry(":", 0.99),
        _entry(" No", 0.6, {" No": 0.6, " Yes": 0.2, " no": 0.1, " Maybe": 0.05}),
    ]
    verdict, p = verdict_from_logprobs({"content": content})
    assert verdict == "no"
    assert p == pytest.approx(0.2 / 0.9)


def test_logprobs_cot_reads_the_verdict_not_a_no_in_the_reasoning() -> None:
    content = [
        _entry("Reason", 0.9),
        _entry("ing", 0.9),
        _entry(":", 0.9),
        _entry(" No", 0.9, {" No": 0.9, " The": 0.1}),  # "No" opening the reasoning
        _entry(" date", 0.9),
        _entry(" matches", 0.9),
        _entry(".\n", 0.9),
        _entry("**", 0.9),
        _entry("Verdict", 0.9),
        _entry(":**", 0.9),
        _entry(" **", 0.9),  # markdown between the label and the word is skipped
        _entry("Yes", 0.7, {"Yes": 0.7, "No": 0.3}),
        _entry("**", 0.9),
    ]
    verdict, p = verdict_from_logprobs({"content": content})
    assert (verdict, round(p, 6)) == ("yes", 0.7)
    # the same entries as a bare list, and as SDK-style objects, give the same result
    assert verdict_from_logprobs(content)[0] == "yes"
    objects = SimpleNamespace(
        content=[
            SimpleNamespace(
                token=e["token"],
                logprob=e["logprob"],
                top_logprobs=[SimpleNamespace(**t) for t in e["top_logprobs"]],
            )
            for e in content
        ]
    )
    assert verdict_from_logprobs(objects) == (verdict, p)


def test_logprobs_without_a_verdict_are_invalid() -> None:
    assert verdict_from_logprobs(None) == ("invalid", None)
    assert verdict_from_logprobs({"content": []}) == ("invalid", None)
    assert verdict_from_logprobs({"content": None}) == ("invalid", None)
    words = {"content": [_entry("I", 0.9), _entry(" think", 0.9), _entry(" Note", 0.9)]}
    assert verdict_from_logprobs(words) == ("invalid", None)
    # after "Verdict:" comes a word that is neither, with no Yes/No among its alternatives
    odd = [_entry("Verdict", 0.9), _entry(":", 0.9), _entry(" Maybe", 0.9, {" Maybe": 0.9})]
    assert verdict_from_logprobs({"content": odd}) == ("invalid", None)


def test_logprobs_exact_tie_is_invalid_and_alternatives_rescue_an_odd_token() -> None:
    tie = {"content": [_entry("Yes", 0.5, {"Yes": 0.5, "No": 0.5})]}
    assert verdict_from_logprobs(tie) == ("invalid", 0.5)
    # the sampled token is odd, but the alternatives at the verdict position say No
    odd = [
        _entry("Verdict", 0.9),
        _entry(":", 0.9),
        _entry(" Probably", 0.4, {" Probably": 0.4, " No": 0.35, " Yes": 0.05}),
    ]
    # the sampled reply is off the contract ("Verdict: Probably"): strictly, nothing to score
    assert verdict_from_logprobs({"content": odd}) == ("invalid", None)
    verdict, p = verdict_from_logprobs({"content": odd}, reader="lenient")
    assert verdict == "no" and p == pytest.approx(0.05 / 0.40)


def test_logprobs_read_a_json_verdict_and_skip_a_reasoning_block() -> None:
    json_reply = [
        _entry('{"', 0.99),
        _entry("verdict", 0.99),
        _entry('":"', 0.99),
        _entry("No", 0.7, {"No": 0.7, "Yes": 0.3}),
        _entry('"}', 0.99),
    ]
    assert verdict_from_logprobs({"content": json_reply})[0] == "no"
    thinking = [
        _entry("<think>", 0.9),
        _entry("Yes", 0.9, {"Yes": 0.9, "No": 0.1}),  # inside the reasoning
        _entry(" maybe", 0.9),
        _entry("</think>", 0.9),
        _entry("\n\n", 0.9),
        _entry("No", 0.8, {"No": 0.8, "Yes": 0.2}),
    ]
    verdict, p = verdict_from_logprobs({"content": thinking})
    assert verdict == "no" and p == pytest.approx(0.2)


# -- negations and hedges that govern the verdict clause ---------------------------------------

# The replies the old reader read as Yes: a negation, a hedge or a question governs the clause.
_NEGATED_NO = (
    "I don't think the answer contains any hallucination.",
    "I do not believe the answer is hallucinated.",
    "It is unlikely that the answer is hallucinated.",
    "There's no evidence the answer is hallucinated.",
    "Nothing in the answer is hallucinated.",
    "Hallucinated? No.",
    "Does the answer contain hallucination? No, it matches.",
)


@pytest.mark.parametrize("reply", _NEGATED_NO)
def test_a_negation_governing_the_verdict_turns_it_round(reply: str) -> None:
    assert parse_verdict(reply) == "no"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # the governor turns a description of either sense round
        ("I don't think the answer is correct.", "yes"),
        ("I do not believe the summary is faithful.", "yes"),
        ("It is unlikely that the answer is correct.", "yes"),
        ("I wouldn't say the response is hallucinated.", "no"),
        ("I doubt the answer is hallucinated.", "no"),
        ("I doubt it.", "no"),
        ("I don't think so.", "no"),
        ("I think so.", "yes"),
        # keeping governors keep it
        ("I think the answer is hallucinated.", "yes"),
        ("It is likely that the answer is hallucinated.", "yes"),
        # no evidence of a hallucination is No; no evidence of correctness says nothing sure
        ("There is no evidence that the answer is correct.", "invalid"),
        ("No evidence of hallucination.", "no"),
        ("There is no reason to believe the answer is wrong.", "no"),
        # hedges void the clause
        ("It is possible that the answer is hallucinated.", "invalid"),
        ("The answer may contain a hallucination.", "invalid"),
        ("It might be hallucinated.", "invalid"),
        # quantified subjects
        ("None of the claims in the answer are unsupported.", "no"),
        ("No part of the answer is fabricated.", "no"),
        ("None of the answer is supported.", "yes"),
        # a question echoed before its answer is read from the answer, in its sense
        ("Is the answer correct? No.", "yes"),
        ("Is the answer correct? Yes.", "no"),
        ("Is the answer hallucinated? Yes.", "yes"),
        ("Any hallucination? None.", "no"),
        ("Q: Does the answer contain hallucination?\nA: No", "no"),
        ("Is the answer not correct? No.", "invalid"),  # a negated question: not guessed
        # a negation that is itself answered by a verdict word agrees with it, or is torn
        ("No, I don't think the answer is hallucinated.", "no"),
        ("Yes, I don't think the answer is hallucinated.", "invalid"),
    ],
)
def test_negations_hedges_and_echoed_questions(reply: str, expected: str) -> None:
    assert parse_verdict(reply) == expected
