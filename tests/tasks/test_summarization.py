"""The summarization task module: spec, reply parsing, judge-choice parsing, length check."""

from __future__ import annotations

import pytest

from halugen.tasks import TASK_NAMES, get_task
from halugen.tasks.base import ParsedCandidate, TaskSpec
from halugen.tasks.summarization import (
    MAX_LENGTH_RATIO,
    MIN_LENGTH_RATIO,
    PATTERNS,
    SUMMARIZATION,
    check_candidate,
    filter_values,
    parse_candidate,
    parse_choice,
)


def test_spec_names_fields_patterns_and_templates() -> None:
    assert isinstance(SUMMARIZATION, TaskSpec)
    assert SUMMARIZATION.name == "summarization"
    assert SUMMARIZATION.seed_fields == ("document", "right_summary")
    assert SUMMARIZATION.right_field == "right_summary"
    assert SUMMARIZATION.hallucinated_field == "hallucinated_summary"
    assert SUMMARIZATION.patterns == PATTERNS == ("factual", "non-factual", "intrinsic")
    assert SUMMARIZATION.sample_templates == ("sample_onepass", "sample_conversation")
    assert SUMMARIZATION.filter_template == "filter"
    assert SUMMARIZATION.parse_candidate is parse_candidate
    assert SUMMARIZATION.filter_values is filter_values
    assert SUMMARIZATION.parse_choice is parse_choice
    assert SUMMARIZATION.check_candidate is check_candidate


def test_registry_finds_the_spec() -> None:
    assert "summarization" in TASK_NAMES
    assert get_task("summarization") is SUMMARIZATION


S = "Kessler shares fell 8% after the carmaker cut its forecast."

# (reply, summary, pattern, problem)
CANDIDATES = [
    (f"Pattern: intrinsic\nSummary: {S}", S, "intrinsic", ""),
    (f"Summary: {S}\nPattern: factual", S, "factual", ""),
    (f"**Pattern:** Non-Factual\n**Summary:** {S}", S, "non-factual", ""),
    (f"Pattern: non factual\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: nonfactual\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: not factual (made-up number)\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: Counterfactual\nSummary: {S}", S, "non-factual", ""),
    (f"Pattern: Factuality\nSummary: {S}", S, "factual", ""),
    (f"Pattern: 3. Intrinsic error\nSummary: {S}", S, "intrinsic", ""),
    (f"Pattern: factual / intrinsic\nSummary: {S}", S, "factual", ""),
    (f"Pattern: entity swap\nSummary: {S}", S, "unstated", ""),
    (f"Summary: {S}", S, "unstated", ""),
    (f"Summary: {S} (pattern: intrinsic)", S, "intrinsic", ""),
    (f"Summary: {S} [Pattern - non-factual]", S, "non-factual", ""),
    (f"Summary: {S} (non-factual)", S, "non-factual", ""),
    (f"Summary: {S} (factual)", S, "factual", ""),
    (f"Pattern: intrinsic\nSummary: {S} (pattern: factual)", S, "intrinsic", ""),
    (f'Pattern: intrinsic\nSummary: "{S}"', S, "intrinsic", ""),
    (f"Summary: “{S}”", S, "unstated", ""),
    (f"Summary:\n{S}", S, "unstated", ""),
    ("Summary: Kessler shares fell 8%\nafter the carmaker cut its forecast.", S, "unstated", ""),
    # highlight-style lines and bullets become one line of sentences
    (
        "Pattern: intrinsic\nSummary:\nKessler shares fell 8%\nVerano rose 5% on Thursday",
        "Kessler shares fell 8%. Verano rose 5% on Thursday",
        "intrinsic",
        "",
    ),
    (
        "Summary:\n- Kessler shares fell 8%\n- Verano rose 5%.\n* Both cut forecasts",
        "Kessler shares fell 8%. Verano rose 5%. Both cut forecasts.",
        "unstated",
        "",
    ),
    (
        "Summary:\n1. Kessler shares fell 8%\n\n2. Verano rose 5%\n\nThis is intrinsic.",
        "Kessler shares fell 8%. Verano rose 5%.",
        "unstated",
        "",
    ),
    (
        "Summary:\n• Kessler shares fell 8%.\n• Verano rose 5%!",
        "Kessler shares fell 8%. Verano rose 5%!",
        "unstated",
        "",
    ),
    # commentary after a blank line or under its own label is not part of the summary
    (
        f"Sure! Here it is.\n\nPattern: intrinsic\nSummary: {S}\n\nThis swaps the two "
        "companies, which contradicts the document.",
        S,
        "intrinsic",
        "",
    ),
    (f"Pattern: intrinsic\nSummary: {S}\nExplanation: swapped firms", S, "intrinsic", ""),
    (f"Pattern: intrinsic\nSummary: {S}\nNote: the firms are swapped.", S, "intrinsic", ""),
    (f"```\nPattern: intrinsic\nSummary: {S}\n```", S, "intrinsic", ""),
    (f"- Pattern: intrinsic\n- Summary: {S}", S, "intrinsic", ""),
    (f"## Summary: {S}", S, "unstated", ""),
    (f"Hallucinated summary: {S}\nPattern: intrinsic", S, "intrinsic", ""),
    (f"Document: D.\nRight summary: R.\nPattern: intrinsic\nSummary: {S}", S, "intrinsic", ""),
    (f"Summary: {S}\nSummary: Another one.", S, "unstated", ""),
    # a colon inside the summary (as CNN highlights have) is text, not a label
    (
        "Summary: Police: suspect fled on foot after the crash.",
        "Police: suspect fled on foot after the crash.",
        "unstated",
        "",
    ),
    (
        "Summary: Sorry, we're closed, says bakery owner.",
        "Sorry, we're closed, says bakery owner.",
        "unstated",
        "",
    ),
    # unusable replies
    ("", "", "unstated", "empty_reply"),
    (" \n ", "", "unstated", "empty_reply"),
    (S, "", "unstated", "no_answer_label"),
    (f"Pattern: intrinsic\n{S}", "", "intrinsic", "no_answer_label"),
    (f"Right summary: {S}", "", "unstated", "no_answer_label"),
    ("Pattern: intrinsic\nSummary:", "", "intrinsic", "empty_answer"),
    ('Summary: ""', "", "unstated", "empty_answer"),
    ("Summary:\n- \n- ", "", "unstated", "empty_answer"),
    ("Summary: <your hallucinated summary>", "", "unstated", "placeholder_answer"),
    ("I'm sorry, but I can't help write a misleading summary.", "", "unstated", "refusal"),
    ("As an AI, I cannot produce false news.", "", "unstated", "refusal"),
    ("Pattern: factual\nSummary: I'm sorry, I cannot do that.", "", "factual", "refusal"),
]


@pytest.mark.parametrize(("reply", "summary", "pattern", "problem"), CANDIDATES)
def test_parse_candidate(reply: str, summary: str, pattern: str, problem: str) -> None:
    assert parse_candidate(reply) == ParsedCandidate(
        answer=summary, pattern=pattern, problem=problem
    )


def test_usable_summaries_are_one_trimmed_line() -> None:
    for reply, *_ in CANDIDATES:
        got = parse_candidate(reply)
        assert got.pattern in (*PATTERNS, "unstated")
        assert (got.problem == "") == bool(got.answer)
        assert "\n" not in got.answer
        assert got.answer == got.answer.strip()
        assert "  " not in got.answer


SUMMARIES = ["Verano shares fell 8%.", "Kessler shares fell 8%."]

# (reply, expected pick)
CHOICES = [
    ("Choice: 2", 2),
    ("Choice: 1", 1),
    ("**Choice:** 2.", 2),
    ("Choice: Summary 1", 1),
    ("Choice: summary #2", 2),
    ("Summary 1 swaps the firms.\nChoice: 2", 2),
    ("Choice: <the number of the summary you pick>\nChoice: 1", 1),
    ("Choice: two", 2),
    ("Choice: the second summary", 2),
    ("Choice: Kessler shares fell 8%.", 2),
    ("1", 1),
    ("Summary 2", 2),
    # ambiguous or out of range: no pick rather than a guess
    ("Choice: 1\nChoice: 2", None),
    ("Choice: Summary 1\nChoice: the second summary", None),
    ("Choice: 3", None),
    ("Choice: the third summary", None),
    ("The best summary is Summary 1.", None),
    ("Both are wrong.", None),
    ("", None),
]


@pytest.mark.parametrize(("reply", "expected"), CHOICES)
def test_parse_choice(reply: str, expected: int | None) -> None:
    assert parse_choice(reply, SUMMARIES) == expected


def test_filter_values_numbers_summaries_one_per_line_and_hides_the_right_summary() -> None:
    fields = {"document": "Doc text.\nSecond line.", "right_summary": "SECRET-RIGHT"}
    values = filter_values(fields, ["One.", "Two\n- lines. ", "Three."])
    assert values == {
        "document": "Doc text.\nSecond line.",
        "answers": "Summary 1: One.\nSummary 2: Two - lines.\nSummary 3: Three.",
    }
    assert "SECRET-RIGHT" not in "".join(values.values())


RIGHT = "r" * 100
META_RIGHT = "r" * 60

# (right summary, candidate, problem)
FORMS = [
    (RIGHT, "s" * 100, ""),
    (RIGHT, "s" * 150, ""),  # exactly 1.5 times: accepted
    (RIGHT, "s" * 151, "too_long"),
    (RIGHT, "s" * 50, ""),  # exactly 0.5 times: accepted
    (RIGHT, "s" * 49, "too_short"),
    (RIGHT + "\n", "s" * 150, ""),  # a reference's trailing newline does not count
    ("r  r" * 25, "s s" * 30, ""),  # 75 characters once collapsed; 90 is fine
    ("r  r" * 25, "s s" * 38, "too_long"),  # 114 > 1.5 * 75
    ("", "s" * 1000, ""),  # no right summary: no length bound
    # talk about the task (right summaries of 60 characters keep these within the bounds)
    (META_RIGHT, "A hallucinated summary: Verano shares fell 9%.", "meta_talk"),
    (META_RIGHT, "Unlike the original summary says, Verano shares fell 9%.", "meta_talk"),
    (META_RIGHT, "The given article says Verano shares fell 9% this week.", "meta_talk"),
    (META_RIGHT, "Verano shares fell 9%, a figure not mentioned in the document.", "meta_talk"),
    (META_RIGHT, "A leaked document shows Verano shares fell 9% this week.", ""),
    (META_RIGHT, "Judges said the document was forged, and Verano shares fell.", ""),
]


def test_length_bounds_are_the_module_constants() -> None:
    assert (MAX_LENGTH_RATIO, MIN_LENGTH_RATIO) == (1.5, 0.5)


@pytest.mark.parametrize(("right", "candidate", "problem"), FORMS)
def test_check_candidate(right: str, candidate: str, problem: str) -> None:
    assert check_candidate({"document": "d", "right_summary": right}, candidate) == problem


def test_length_is_checked_before_meta_talk() -> None:
    long_meta = "hallucinated " * 20
    assert check_candidate({"right_summary": "r" * 10}, long_meta) == "too_long"
