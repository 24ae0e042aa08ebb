"""The simulator's answer makers: pure functions, checked without any transport."""

from __future__ import annotations

import pytest

from halugen.simulate.answers import choose, reply, verdict
from halugen.simulate.keys import key64, mix, pick, unit
from halugen.simulate.mutate import hallucinate
from halugen.simulate.plain import CONTRADICT_SHARE, plain_answer
from halugen.simulate.prompt_reading import parse_prompt
from halugen.simulate.words import names, normalise
from halugen.tasks.base import normalise as base_normalise

from ._support import filter_prompt, qa_prompt, verdict_prompt

EIFFEL = (
    "The Eiffel Tower was completed in 1889 in Paris, France. It was designed by the company "
    "of Gustave Eiffel; Maurice Koechlin drew the first sketch."
)


def test_parse_hallucination_prompt_reads_the_record_not_the_demonstrations() -> None:
    info = parse_prompt(qa_prompt(EIFFEL, "Who drew the first sketch?", "Maurice Koechlin"))
    assert info.kind == "hallucinate"
    assert info.labels == ("Pattern", "Answer")
    assert info.options["pattern"] == ("comprehension", "factualness", "specificity", "inference")
    assert info.fields["knowledge"] == EIFFEL
    assert info.fields["question"] == "Who drew the first sketch?"
    assert info.fields["right answer"] == "Maurice Koechlin"


def test_parse_multiline_values_end_at_blank_line_or_next_label() -> None:
    text = (
        "Dialogue history: [Human]: Do you like Gravity?\n[Assistant]: Yes, it is tense.\n"
        "[Human]: Who directed it?\n"
        "Knowledge: Gravity was directed by Alfonso Cuaron.\n"
        "Right response: Alfonso Cuaron directed it.\n\nsome trailing prose\n\n"
        "Reply format:\nPattern: <one of: extrinsic-soft, extrinsic-hard, extrinsic-grouped>\n"
        "Response: <your response>"
    )
    info = parse_prompt(text)
    assert info.kind == "hallucinate"
    assert info.fields["dialogue history"].splitlines() == [
        "[Human]: Do you like Gravity?",
        "[Assistant]: Yes, it is tense.",
        "[Human]: Who directed it?",
    ]
    assert info.fields["right response"] == "Alfonso Cuaron directed it."


def test_parse_judge_candidates_are_the_records_not_the_demos() -> None:
    info = parse_prompt(filter_prompt(EIFFEL, "When was it completed?", ["1887", "1889"]))
    assert info.kind == "choose"
    # the demonstration had three answers; the record has two
    assert info.candidates == ("1887", "1889")


def test_parse_reads_a_record_that_follows_the_reply_format() -> None:
    """halugen's templates put the reply format in the fixed text and the record last."""
    text = (
        "Example\n  Facts: The Rhine reaches the North Sea.\n  Correct: the North Sea\n\n"
        "Reply format:\nPattern: <one of: comprehension, factualness>\n"
        "Answer: <your hallucinated answer>\n\nThe record:\n"
        f"Knowledge: {EIFFEL}\nQuestion: Who drew the first sketch?\n"
        "Right answer: Maurice Koechlin"
    )
    info = parse_prompt(text)
    assert info.kind == "hallucinate"
    assert info.labels == ("Pattern", "Answer")
    assert info.options["pattern"] == ("comprehension", "factualness")
    assert info.fields == {
        "knowledge": EIFFEL,
        "question": "Who drew the first sketch?",
        "right answer": "Maurice Koechlin",
    }
    judge = parse_prompt(
        "Reply format:\nChoice: <the number of the answer you pick>\n\n"
        f"Knowledge: {EIFFEL}\nQuestion: When?\nAnswer 1: 1887\nAnswer 2: 1889"
    )
    assert judge.kind == "choose"
    assert judge.labels == ("Choice",)
    assert judge.candidates == ("1887", "1889")
    # a blank line between the heading and the format's lines does not end the block
    spaced = parse_prompt("Reply format:\n\nChoice: <n>\n\nQuestion: q\nAnswer 1: a\nAnswer 2: b")
    assert spaced.labels == ("Choice",) and spaced.candidates == ("a", "b")


@pytest.mark.parametrize(
    ("tail", "kind"),
    [
        ("Reply format:\nVerdict: <Yes or No>", "verdict"),
        ("Reply format:\nChoice: <n>", "choose"),
        ("Reply format:\nPattern: <one of: a, b>\nSummary: <text>", "hallucinate"),
        ("Reply format:\nExplanation: <why>\nScore: <one of: 1, 2, 3>", "form"),
        ("Tell me a story about whales.", "plain"),
        # "reply format:" inside a sentence is not the format block
        ("Use the reply format: nothing special.", "plain"),
    ],
)
def test_kind_of_prompt(tail: str, kind: str) -> None:
    assert parse_prompt("Question: something\n\n" + tail).kind == kind


@pytest.mark.parametrize(
    ("right", "context"),
    [
        ("1889", EIFFEL),
        ("Paris", EIFFEL),
        ("Gustave Eiffel", EIFFEL),
        ("yes", "Both bands come from Leeds."),
        ("No", "Both bands come from Leeds."),
        ("blue whale", "The blue whale is larger than the fin whale."),
        ("red", "The flag is red and white."),
        ("3.5 million", "About 3.5 million people live in Berlin."),
        ("1,200 km", "The road is 1,200 km long."),
        ("The tower was completed in 1889 and is 330 metres tall.", EIFFEL),
        ("He did not attend the ceremony.", "Odile Brask skipped it."),
        ("photosynthesis", ""),
        ("x", ""),
        ("!!!", ""),
    ],
)
def test_hallucination_always_differs_from_the_right_answer(right: str, context: str) -> None:
    patterns = ("comprehension", "factualness", "specificity", "inference", "intrinsic", "other")
    for i in range(40):
        for pattern in patterns:
            out = hallucinate(right, context, pattern, key64("case", i))
            assert out.strip()
            assert base_normalise(out) != base_normalise(right), (right, pattern, out)


def test_hallucination_edits_are_plausible() -> None:
    assert hallucinate("1889", EIFFEL, "factualness", 7) != "1889"
    assert hallucinate("1889", EIFFEL, "factualness", 7).isdigit()  # a year stays a year
    assert normalise(hallucinate("yes", "", "inference", 3)) == "no"
    swapped = {hallucinate("Paris", EIFFEL, "factualness", k) for k in range(30)}
    assert swapped & {"France", "Maurice Koechlin", "Gustave Eiffel", "Eiffel Tower"}
    assert hallucinate("blue whale", "The blue whale and the fin whale.", "comprehension", 1) == (
        "fin whale"
    )


def test_hallucination_without_right_text_is_a_short_sentence() -> None:
    out = hallucinate("", EIFFEL, "factualness", 11)
    assert out.endswith(".") and len(out.split()) <= 8
    assert out == hallucinate("", EIFFEL, "factualness", 11)


def test_choose_prefers_the_candidate_closest_to_the_knowledge() -> None:
    context = EIFFEL + "\nWhen was the Eiffel Tower completed?"
    cands = ("It opened in 1901 in Lyon.", "It was completed in 1889 in Paris.")
    assert {choose(cands, context, k) for k in range(20)} == {2}
    # ties go either way, by hash
    tied = ("alpha", "beta")
    assert {choose(tied, "nothing shared", k) for k in range(40)} == {1, 2}
    assert choose((), "x", 1) == 1


def test_verdict_follows_the_oracle_at_the_given_accuracy() -> None:
    oracle = {normalise("Lyon, 1901"): True, normalise("Paris"): False}
    always = [verdict("Lyon, 1901", k, oracle=oracle, judge_accuracy=None)[0] for k in range(50)]
    assert set(always) == {"Yes"}
    assert {verdict("paris!", k, oracle=oracle, judge_accuracy=1.0)[0] for k in range(50)} == {"No"}
    right = sum(
        verdict("Lyon, 1901", k, oracle=oracle, judge_accuracy=0.7)[0] == "Yes" for k in range(4000)
    )
    assert 0.66 < right / 4000 < 0.74
    unknown = sum(
        verdict("never seen", k, oracle=oracle, judge_accuracy=0.9)[0] == "Yes" for k in range(4000)
    )
    assert 0.45 < unknown / 4000 < 0.55
    word, p = verdict("Paris", 5, oracle=oracle, judge_accuracy=0.8)
    assert word in ("Yes", "No") and 0.5 < p < 1.0


def test_reply_shapes() -> None:
    qa = parse_prompt(qa_prompt(EIFFEL, "When was it completed?", "1889"))
    text = reply(qa, prompt_key=1, variant_key=2).text
    lines = text.split("\n")
    assert len(lines) == 2 and lines[0].startswith("Pattern: ") and lines[1].startswith("Answer: ")
    assert lines[0].removeprefix("Pattern: ") in qa.options["pattern"]
    assert normalise(lines[1].removeprefix("Answer: ")) != "1889"

    judge = parse_prompt(filter_prompt(EIFFEL, "When?", ["1889", "1887", "1890"]))
    assert reply(judge, prompt_key=1, variant_key=2).text in {"Choice: 1", "Choice: 2", "Choice: 3"}

    rec = parse_prompt(verdict_prompt("When?", "1889"))
    r = reply(rec, prompt_key=1, variant_key=2)
    assert r.text == f"Verdict: {r.verdict}" and r.verdict in ("Yes", "No")

    form = parse_prompt("Question: q\n\nReply format:\nExplanation: <why>\nScore: <one of: 1, 2>")
    first, second = reply(form, prompt_key=1, variant_key=2).text.split("\n")
    assert first.startswith("Explanation: ") and second in ("Score: 1", "Score: 2")


def _jaccard(a: str, b: str) -> float:
    wa, wb = set(normalise(a).split()), set(normalise(b).split())
    return len(wa & wb) / len(wa | wb)


def test_plain_answers_contradict_for_some_queries_and_paraphrase_for_others() -> None:
    similar, dissimilar = [], []
    for q in range(300):
        query = f"Give me some advice about topic number {q} and gardening"
        pk = key64(0, query)
        variants = [plain_answer(query, pk, key64(0, query, i)) for i in range(3)]
        for v in variants:
            assert 2 <= v.count(". ") + 1 <= 4
        score = min(_jaccard(variants[0], variants[1]), _jaccard(variants[1], variants[2]))
        (dissimilar if unit(pk, 31) < CONTRADICT_SHARE else similar).append(score)
    assert 0.3 < len(dissimilar) / 300 < 0.5
    # paraphrases share most words; contradicting answers much fewer
    assert sum(similar) / len(similar) > 0.75
    assert sum(dissimilar) / len(dissimilar) < sum(similar) / len(similar) - 0.2
    # deterministic
    assert plain_answer("Why is the sky blue?", 1, 2) == plain_answer("Why is the sky blue?", 1, 2)
    assert "sky blue" in plain_answer("Why is the sky blue?", 1, 2)


def test_keys_are_deterministic_and_spread() -> None:
    assert key64("a", 1, b"x") == key64("a", 1, b"x") != key64("a", 2, b"x")
    assert mix(5, 1) != mix(5, 2)
    draws = [unit(key64(i)) for i in range(2000)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert 0.45 < sum(draws) / len(draws) < 0.55
    assert {pick((1, 2, 3), k) for k in range(50)} == {1, 2, 3}


def test_words_normalise_matches_the_engines() -> None:
    for text in ("Ｆｕｌｌ-width, “quotes”!", "Straße  and\tÉcole", "a_b c'd"):
        assert normalise(text) == base_normalise(text)
    assert names("Gustave Eiffel's firm met the Bank of England. The U.S. Navy came.") == (
        "Gustave Eiffel",
        "Bank of England",
        "U.S. Navy",
    )
