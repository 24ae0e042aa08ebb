"""The strict reader commits a verdict only from the contract's position; the rest is unsure."""

from __future__ import annotations

import pytest

from halugen.reply_contract import VERDICT, choice_contract


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Verdict: Yes", "Yes"),
        ("The answer names the wrong year.\nVerdict: Yes", "Yes"),
        ("**Verdict:** no.", "No"),
        ("Reasoning: it matches.\n\n**Verdict: No**\n", "No"),
        ("No", "No"),
        ("yes.", "Yes"),
        ('{"verdict": "No"}', "No"),
        ('```json\n{"verdict": "Yes", "reason": "wrong date"}\n```', "Yes"),
        ("<think>Verdict: No? maybe</think>Verdict: Yes", "Yes"),
    ],
)
def test_a_reply_holding_the_contract_is_read(reply: str, expected: str) -> None:
    assert VERDICT.read(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        None,
        "The answer is not hallucinated.",
        "Verdict: Not hallucinated",
        "Verdict: No, although the date is wrong",
        "Verdict: Yes\nI hope this helps!",
        "Verdict: Yes\nOn reflection:\nVerdict: No",
        "No hallucination found.",
        "Nope",
        '{"verdict": true}',
        '{"hallucinated": "Yes"}',
        "Final answer: No",
    ],
)
def test_anything_else_is_unsure(reply: str | None) -> None:
    assert VERDICT.read(reply) is None


def test_a_choice_is_read_only_within_range() -> None:
    two = choice_contract(2)
    assert two.read("Answer 2 is closer.\nChoice: 2") == "2"
    assert two.read('{"choice": 1}') == "1"
    assert two.read("Choice: 3") is None
    assert two.read("I pick the second one.") is None
    assert two.schema()["properties"]["choice"] == {"type": "integer", "enum": [1, 2]}
    with pytest.raises(ValueError, match="at least one"):
        choice_contract(0)


def test_the_reask_quotes_every_allowed_line() -> None:
    text = VERDICT.reask()
    assert '"Verdict: Yes" or "Verdict: No"' in text
