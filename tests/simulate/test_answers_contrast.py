"""The simulator's contrast judge: ``Hallucinated: <k>`` replies that follow the oracle."""

from __future__ import annotations

import pytest

from halugen.evaluate.verdicts import parse_contrast
from halugen.simulate import SimConfig, Simulator
from halugen.simulate.answers import contrast, reply
from halugen.simulate.keys import key64
from halugen.simulate.prompt_reading import parse_prompt
from halugen.simulate.words import normalise

from ._support import body, call, texts


def contrast_prompt(question: str, answers: tuple[str, str], label: str = "Answer") -> str:
    return (
        "Which answer contains hallucination?\n\n"
        f"Question: {question}\n{label} 1: {answers[0]}\n{label} 2: {answers[1]}\n\n"
        "Reply format:\nHallucinated: <1 or 2>"
    )


@pytest.mark.parametrize("label", ["Answer", "Response", "Summary"])
def test_contrast_prompt_is_read_with_its_two_candidates(label: str) -> None:
    info = parse_prompt(contrast_prompt("When?", ("1889", "1901"), label))
    assert info.kind == "contrast"
    assert info.labels == ("Hallucinated",)
    assert info.candidates == ("1889", "1901")


def test_contrast_pick_follows_the_oracle_at_the_given_accuracy() -> None:
    oracle = {normalise("Lyon, 1901"): True, normalise("Paris"): False}
    cands = ("Paris", "Lyon, 1901")
    picks = {contrast(cands, k, oracle=oracle, judge_accuracy=None) for k in range(50)}
    assert picks == {2}
    flipped = {contrast(cands[::-1], k, oracle=oracle, judge_accuracy=1.0) for k in range(50)}
    assert flipped == {1}
    assert {contrast(cands, k, oracle=oracle, judge_accuracy=0.0) for k in range(50)} == {1}
    right = sum(contrast(cands, k, oracle=oracle, judge_accuracy=0.7) == 2 for k in range(4000))
    assert 0.66 < right / 4000 < 0.74
    # unknown texts, or both hallucinated: a fair draw
    unknown = sum(
        contrast(("a", "b"), k, oracle=oracle, judge_accuracy=1.0) == 1 for k in range(4000)
    )
    assert 0.45 < unknown / 4000 < 0.55
    both = {normalise("a"): True, normalise("b"): True}
    assert {contrast(("a", "b"), k, oracle=both, judge_accuracy=1.0) for k in range(60)} == {1, 2}
    assert contrast((), 3, oracle=oracle, judge_accuracy=1.0) == 1


def test_contrast_reply_parses_and_is_stable_per_prompt() -> None:
    info = parse_prompt(contrast_prompt("Where?", ("Paris", "Lyon, 1901")))
    oracle = {normalise("Lyon, 1901"): True}
    r = reply(info, prompt_key=5, variant_key=9, oracle=oracle, judge_accuracy=1.0)
    assert r.text == "Hallucinated: 2"
    assert parse_contrast(r.text) == 2
    again = reply(info, prompt_key=5, variant_key=10, oracle=oracle, judge_accuracy=0.5)
    assert (
        again.text
        == reply(info, prompt_key=5, variant_key=11, oracle=oracle, judge_accuracy=0.5).text
    )


def test_contrast_through_the_simulator_over_many_prompts() -> None:
    oracle = {f"wrong {i}": True for i in range(400)} | {f"right {i}": False for i in range(400)}
    sim = Simulator(SimConfig(oracle=oracle, judge_accuracy=0.75))
    right = 0
    for i in range(400):
        order = (f"wrong {i}", f"right {i}") if key64("o", i) % 2 else (f"right {i}", f"wrong {i}")
        (text,) = texts(call(sim, body(contrast_prompt(f"q{i}", order), temperature=0)))
        pick = parse_contrast(text)
        assert pick in (1, 2)
        right += order[pick - 1].startswith("wrong")
    assert 0.68 < right / 400 < 0.82
