"""The QA task module: its spec, reply parsing, judge-choice parsing and the form check."""

from __future__ import annotations

import pytest

from halugen.tasks.base import ParsedCandidate, TaskSpec
from halugen.tasks.qa import PATTERNS, QA, check_form, filter_values, parse_candidate, parse_choice


def test_spec_names_fields_patterns_and_templates() -> None:
    assert isinstance(QA, TaskSpec)
    assert QA.name == "qa"
    assert QA.seed_fields == ("knowledge", "question", "right_answer")
    assert QA.right_field == "right_answer"
    assert QA.hallucinated_field == "hallucinated_answer"
    assert QA.patterns == PATTERNS == ("comprehension", "factualness", "specificity", "inference")
    assert QA.sample_templates == ("sample_onepass", "sample_conversation")
    assert QA.filter_template == "filter"
    assert QA.parse_candidate is parse_candidate
    assert QA.filter_values is filter_values
    assert QA.parse_choice is parse_choice
    assert QA.check_candidate is check_form


# (reply, answer, pattern, problem)
CANDIDATES = [
    ("Pattern: factualness\nAnswer: Mumbai", "Mumbai", "factualness", ""),
    ("Answer: Mumbai\nPattern: inference", "Mumbai", "inference", ""),
    ("**Pattern:** Specificity\n**Answer:** the 1890s", "the 1890s", "specificity", ""),
    ("Pattern: Factualness pattern\nAnswer: 1902", "1902", "factualness", ""),
    ("Pattern: 2. factual\nAnswer: 1902", "1902", "factualness", ""),
    ("Pattern: INFERENCE (wrong bridge)\nAnswer: Egypt", "Egypt", "inference", ""),
    ("Pattern: comprehension / inference\nAnswer: Egypt", "Egypt", "comprehension", ""),
    ("Pattern: misattribution\nAnswer: Egypt", "Egypt", "unstated", ""),
    ("Answer: Egypt", "Egypt", "unstated", ""),
    ("Answer: Egypt (pattern: inference)", "Egypt", "inference", ""),
    ("Answer: Egypt [Pattern - factualness]", "Egypt", "factualness", ""),
    ("Answer: Egypt (factualness)", "Egypt", "factualness", ""),
    ("Pattern: inference\nAnswer: Egypt (pattern: factualness)", "Egypt", "inference", ""),
    ('Pattern: factualness\nAnswer: "Lake Geneva"', "Lake Geneva", "factualness", ""),
    ("Answer: “Lake Geneva”", "Lake Geneva", "unstated", ""),
    ("Answer: '90s", "'90s", "unstated", ""),
    ('Answer: "Yes" and "No"', '"Yes" and "No"', "unstated", ""),
    ("Answer: the   Czech\nkoruna", "the Czech koruna", "unstated", ""),
    ("Answer:\nthe euro", "the euro", "unstated", ""),
    (
        "Sure! Here it is.\n\nPattern: inference\nAnswer: the euro\n\nThis is wrong because "
        "the Czech Republic does not use the euro.",
        "the euro",
        "inference",
        "",
    ),
    (
        "Pattern: inference\nAnswer: the euro\nExplanation: a wrong step",
        "the euro",
        "inference",
        "",
    ),
    ("```\nPattern: inference\nAnswer: the euro\n```", "the euro", "inference", ""),
    ("- Pattern: factualness\n- Answer: 1,920 metres", "1,920 metres", "factualness", ""),
    ("## Answer: Khabarovsk", "Khabarovsk", "unstated", ""),
    (
        "Hallucinated answer: Joseph Lister\nPattern: factualness",
        "Joseph Lister",
        "factualness",
        "",
    ),
    (
        "Knowledge: K\nQuestion: Q?\nRight answer: Alexander Fleming\nPattern: factualness\n"
        "Answer: Joseph Lister",
        "Joseph Lister",
        "factualness",
        "",
    ),
    ("Answer: Paris\nAnswer: Lyon", "Paris", "unstated", ""),
    # titles that open like a refusal are still answers
    ("Pattern: factualness\nAnswer: I Won't Back Down", "I Won't Back Down", "factualness", ""),
    ("Answer: Sorry", "Sorry", "unstated", ""),
    ("Answer: (I Can't Get No) Satisfaction", "(I Can't Get No) Satisfaction", "unstated", ""),
    # unusable replies
    ("", "", "unstated", "empty_reply"),
    ("   \n ", "", "unstated", "empty_reply"),
    ("Joseph Lister", "", "unstated", "no_answer_label"),
    ("Pattern: factualness\nJoseph Lister", "", "factualness", "no_answer_label"),
    ("Right answer: Alexander Fleming", "", "unstated", "no_answer_label"),
    ("Pattern: factualness\nAnswer:", "", "factualness", "empty_answer"),
    ('Answer: ""', "", "unstated", "empty_answer"),
    ("Answer: ...", "", "unstated", "empty_answer"),
    ("Answer: <your hallucinated answer>", "", "unstated", "placeholder_answer"),
    ("I'm sorry, but I can't help create false information.", "", "unstated", "refusal"),
    ("As an AI language model, I cannot write wrong answers.", "", "unstated", "refusal"),
    ("**I cannot do that.**", "", "unstated", "refusal"),
    ("Pattern: factualness\nAnswer: I’m sorry, I can’t do this.", "", "factualness", "refusal"),
]


@pytest.mark.parametrize(("reply", "answer", "pattern", "problem"), CANDIDATES)
def test_parse_candidate(reply: str, answer: str, pattern: str, problem: str) -> None:
    assert parse_candidate(reply) == ParsedCandidate(
        answer=answer, pattern=pattern, problem=problem
    )


def test_parse_candidate_does_not_compare_with_the_right_answer() -> None:
    # Equality with the right answer is the engine's check (with normalise()), not the parser's.
    got = parse_candidate("Right answer: Delhi\nPattern: factualness\nAnswer: Delhi")
    assert got == ParsedCandidate(answer="Delhi", pattern="factualness", problem="")


def test_usable_answers_are_one_trimmed_line() -> None:
    for reply, *_ in CANDIDATES:
        got = parse_candidate(reply)
        assert got.pattern in (*PATTERNS, "unstated")
        assert (got.problem == "") == bool(got.answer)
        assert "\n" not in got.answer
        assert got.answer == got.answer.strip()


ANSWERS = ["Khabarovsk", "Vladivostok"]

# (reply, expected pick)
CHOICES = [
    ("Choice: 2", 2),
    ("Choice: 1", 1),
    ("choice: 2.", 2),
    ("**Choice:** 2", 2),
    ("**Choice: Answer 1**", 1),
    ("Choice: Answer #2", 2),
    ("Choice:\n2", 2),
    ("Answer 1 misreads the knowledge.\nChoice: 2", 2),
    ("Choice: 2\nChoice: 2", 2),
    ("Choice: <the number of the answer you pick>\nChoice: 1", 1),
    ("Choice: two", 2),
    ("Choice: the first one", 1),
    ("Choice: Vladivostok", 2),
    ("2", 2),
    ("Vladivostok", 2),
    # ambiguous or out of range: no pick rather than a guess
    ("Choice: 1\nChoice: 2", None),
    ("Choice: 1 or 2", None),
    ("Choice: 3", None),
    ("Choice: 0", None),
    ("Choice: three", None),
    ("Choice: none of them", None),
    ("I would pick answer 2.", None),
    ("Both answers are wrong.", None),
    ("", None),
]


@pytest.mark.parametrize(("reply", "expected"), CHOICES)
def test_parse_choice(reply: str, expected: int | None) -> None:
    assert parse_choice(reply, ANSWERS) == expected


def test_parse_choice_with_three_answers() -> None:
    answers = ["one", "none", "two"]
    assert parse_choice("Choice: 3", answers) == 3
    assert parse_choice("Choice: three", answers) == 3
    assert parse_choice("Choice: 4", answers) is None


def test_filter_values_numbers_answers_one_per_line_and_hides_the_right_answer() -> None:
    fields = {"knowledge": "K text.", "question": "Q text?", "right_answer": "SECRET-RIGHT"}
    values = filter_values(fields, ["Lyon", "the city of\n  Marseille ", "Nice"])
    assert values == {
        "knowledge": "K text.",
        "question": "Q text?",
        "answers": "Answer 1: Lyon\nAnswer 2: the city of Marseille\nAnswer 3: Nice",
    }
    assert "SECRET-RIGHT" not in "".join(values.values())


def test_filter_values_round_trip_with_parse_choice() -> None:
    answers = ["Khabarovsk", "Vladivostok"]
    lines = filter_values({"knowledge": "k", "question": "q"}, answers)["answers"].splitlines()
    for i, line in enumerate(lines, 1):
        assert line == f"Answer {i}: {answers[i - 1]}"
        assert parse_choice(f"Choice: {i}", answers) == i


# (right answer, candidate, problem)
FORMS = [
    ("Delhi", "Mumbai", ""),
    ("Delhi", "New Delhi's old quarter", ""),
    ("Delhi", "the 7th arrondissement of Paris", ""),
    ("Delhi", "Mumbai, the financial capital of India.", "sentence_for_short_answer"),
    ("Arthur's Magazine", "First for Women was started first.", "sentence_for_short_answer"),
    ("no", "yes", ""),
    ("no", "Yes, they were.", ""),
    ("1832", "the year the canal was finished in Ontario", "answer_too_long"),
    ("Washington, D.C.", "St. Louis", ""),
    (
        "It was built to carry timber and coal between the two towns.",
        "It was built to carry troops between the two towns during the war.",
        "",
    ),
    (
        "It carried timber.",
        "It carried timber, coal, grain, wool, salt, iron ore, fish, passengers, mail and "
        "soldiers between the two river towns.",
        "answer_too_long",
    ),
]


@pytest.mark.parametrize(("right", "candidate", "problem"), FORMS)
def test_check_form(right: str, candidate: str, problem: str) -> None:
    assert check_form({"right_answer": right}, candidate) == problem
