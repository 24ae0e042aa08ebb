"""The dialogue task module: its spec, reply parsing, judge-choice parsing and the form check."""

from __future__ import annotations

import pytest

from halugen.tasks import TASK_NAMES, get_task
from halugen.tasks.base import ParsedCandidate, TaskSpec
from halugen.tasks.dialogue import (
    DIALOGUE,
    LENGTH_SLACK,
    MAX_LENGTH_RATIO,
    MIN_LENGTH_RATIO,
    PATTERNS,
    check_candidate,
    filter_values,
    parse_candidate,
    parse_choice,
)


def test_spec_names_fields_patterns_and_templates() -> None:
    assert isinstance(DIALOGUE, TaskSpec)
    assert DIALOGUE.name == "dialogue"
    assert DIALOGUE.seed_fields == ("knowledge", "dialogue_history", "right_response")
    assert DIALOGUE.right_field == "right_response"
    assert DIALOGUE.hallucinated_field == "hallucinated_response"
    assert (
        DIALOGUE.patterns
        == PATTERNS
        == (
            "extrinsic-soft",
            "extrinsic-hard",
            "extrinsic-grouped",
        )
    )
    assert DIALOGUE.sample_templates == ("sample_onepass", "sample_conversation")
    assert DIALOGUE.filter_template == "filter"
    assert DIALOGUE.parse_candidate is parse_candidate
    assert DIALOGUE.filter_values is filter_values
    assert DIALOGUE.parse_choice is parse_choice
    assert DIALOGUE.check_candidate is check_candidate


def test_registry_finds_the_spec() -> None:
    assert "dialogue" in TASK_NAMES
    assert get_task("dialogue") is DIALOGUE


R = "Denis Villeneuve directed it, with Amy Adams in the lead."

# (reply, response, pattern, problem)
CANDIDATES = [
    (f"Pattern: extrinsic-hard\nResponse: {R}", R, "extrinsic-hard", ""),
    (f"Response: {R}\nPattern: extrinsic-soft", R, "extrinsic-soft", ""),
    (f"**Pattern:** Extrinsic-Grouped\n**Response:** {R}", R, "extrinsic-grouped", ""),
    (f"Pattern: extrinsic soft\nResponse: {R}", R, "extrinsic-soft", ""),
    (f"Pattern: Extrinsic (hard)\nResponse: {R}", R, "extrinsic-hard", ""),
    (f"Pattern: extrinsic_grouped pattern\nResponse: {R}", R, "extrinsic-grouped", ""),
    (f"Pattern: Grouping\nResponse: {R}", R, "extrinsic-grouped", ""),
    (f"Pattern: hard\nResponse: {R}", R, "extrinsic-hard", ""),
    (f"Pattern: extrinsic-soft / extrinsic-hard\nResponse: {R}", R, "extrinsic-soft", ""),
    (f"Pattern: extrinsic\nResponse: {R}", R, "unstated", ""),
    (f"Pattern: wrong director\nResponse: {R}", R, "unstated", ""),
    (f"Response: {R}", R, "unstated", ""),
    (f"Response: {R} (pattern: extrinsic-hard)", R, "extrinsic-hard", ""),
    (f"Response: {R} [Pattern - soft]", R, "extrinsic-soft", ""),
    (f"Response: {R} (extrinsic-grouped)", R, "extrinsic-grouped", ""),
    (f"Pattern: extrinsic-hard\nResponse: {R} (pattern: soft)", R, "extrinsic-hard", ""),
    (f'Pattern: extrinsic-hard\nResponse: "{R}"', R, "extrinsic-hard", ""),
    (f"Response: “{R}”", R, "unstated", ""),
    ('Response: She said "wow" and left.', 'She said "wow" and left.', "unstated", ""),
    # the dialogue's speaker tags belong to the layout, not to the turn
    (f"Pattern: extrinsic-hard\nResponse: [Assistant]: {R}", R, "extrinsic-hard", ""),
    (f"Response: Assistant: {R}", R, "unstated", ""),
    (f'Response: "[Assistant]: {R}"', R, "unstated", ""),
    # a model that goes on writing the dialogue: the assistant's turn ends at the next tag
    (f"Response: {R} [Human]: Oh, I didn't know that!", R, "unstated", ""),
    (f"Response: {R}\n[Human]: Oh, I didn't know that!", R, "unstated", ""),
    (f"Response: {R}\nHuman: Thanks!", R, "unstated", ""),
    ("Response: Denis   Villeneuve\ndirected it.", "Denis Villeneuve directed it.", "unstated", ""),
    (f"Response:\n{R}", R, "unstated", ""),
    (
        f"Sure! Here it is.\n\nPattern: extrinsic-hard\nResponse: {R}\n\nThis is wrong because "
        "the knowledge names another director.",
        R,
        "extrinsic-hard",
        "",
    ),
    (
        f"Pattern: extrinsic-hard\nResponse: {R}\nExplanation: wrong director",
        R,
        "extrinsic-hard",
        "",
    ),
    (f"```\nPattern: extrinsic-hard\nResponse: {R}\n```", R, "extrinsic-hard", ""),
    (f"- Pattern: extrinsic-hard\n- Response: {R}", R, "extrinsic-hard", ""),
    (f"## Response: {R}", R, "unstated", ""),
    (f"Hallucinated response: {R}\nPattern: extrinsic-hard", R, "extrinsic-hard", ""),
    (f"Hallucinated reply: {R}", R, "unstated", ""),
    (
        "Knowledge: K\nDialogue history: [Human]: Who directed it?\nRight response: Someone.\n"
        f"Pattern: extrinsic-hard\nResponse: {R}",
        R,
        "extrinsic-hard",
        "",
    ),
    (f"Response: {R}\nResponse: Another one.", R, "unstated", ""),
    # turns that open like a refusal are still turns when they refuse nothing of the task
    (
        "Response: Sorry, I haven't seen that one yet!",
        "Sorry, I haven't seen that one yet!",
        "unstated",
        "",
    ),
    ("Response: I can't wait for the sequel.", "I can't wait for the sequel.", "unstated", ""),
    # unusable replies
    ("", "", "unstated", "empty_reply"),
    ("  \n ", "", "unstated", "empty_reply"),
    (R, "", "unstated", "no_answer_label"),
    (f"Pattern: extrinsic-hard\n{R}", "", "extrinsic-hard", "no_answer_label"),
    ("Right response: Denis Villeneuve directed it.", "", "unstated", "no_answer_label"),
    ("Pattern: extrinsic-hard\nResponse:", "", "extrinsic-hard", "empty_answer"),
    ('Response: ""', "", "unstated", "empty_answer"),
    ("Response: ...", "", "unstated", "empty_answer"),
    ("Response: [Assistant]:", "", "unstated", "empty_answer"),
    ("Response: [Human]: What else?", "", "unstated", "empty_answer"),
    ("Response: <your hallucinated response>", "", "unstated", "placeholder_answer"),
    ("I'm sorry, but I can't help create misleading replies.", "", "unstated", "refusal"),
    ("As an AI language model, I cannot write false statements.", "", "unstated", "refusal"),
    (
        "Pattern: extrinsic-soft\nResponse: I’m sorry, I can’t do this.",
        "",
        "extrinsic-soft",
        "refusal",
    ),
]


@pytest.mark.parametrize(("reply", "response", "pattern", "problem"), CANDIDATES)
def test_parse_candidate(reply: str, response: str, pattern: str, problem: str) -> None:
    assert parse_candidate(reply) == ParsedCandidate(
        answer=response, pattern=pattern, problem=problem
    )


def test_usable_responses_are_one_trimmed_line() -> None:
    for reply, *_ in CANDIDATES:
        got = parse_candidate(reply)
        assert got.pattern in (*PATTERNS, "unstated")
        assert (got.problem == "") == bool(got.answer)
        assert "\n" not in got.answer
        assert got.answer == got.answer.strip()
        assert "[Human]" not in got.answer and "[Assistant]" not in got.answer


def test_parse_candidate_does_not_compare_with_the_right_response() -> None:
    got = parse_candidate(f"Right response: {R}\nPattern: extrinsic-hard\nResponse: {R}")
    assert got == ParsedCandidate(answer=R, pattern="extrinsic-hard", problem="")


RESPONSES = ["Toei Animation made it.", "Studio Ghibli made it."]

# (reply, expected pick)
CHOICES = [
    ("Choice: 2", 2),
    ("Choice: 1", 1),
    ("choice: 2.", 2),
    ("**Choice:** 2", 2),
    ("Choice: Response 1", 1),
    ("Choice: response #2", 2),
    ("Choice:\n2", 2),
    ("Response 1 names the wrong studio.\nChoice: 2", 2),
    ("Choice: <the number of the response you pick>\nChoice: 1", 1),
    ("Choice: two", 2),
    ("Choice: the first one", 1),
    ("Choice: the second response", 2),
    ("Choice: Studio Ghibli made it.", 2),
    ("2", 2),
    ("Response 2", 2),
    ("Studio Ghibli made it.", 2),
    # ambiguous or out of range: no pick rather than a guess
    ("Choice: 1\nChoice: 2", None),
    ("Choice: Response 1\nChoice: the second response", None),
    ("Choice: 1 or 2", None),
    ("Choice: 3", None),
    ("Choice: 0", None),
    ("Choice: the third response", None),
    ("Choice: none of them", None),
    ("The best response is Response 1.", None),
    ("I would pick response 2.", None),
    ("", None),
]


@pytest.mark.parametrize(("reply", "expected"), CHOICES)
def test_parse_choice(reply: str, expected: int | None) -> None:
    assert parse_choice(reply, RESPONSES) == expected


def test_parse_choice_reads_candidate_text_that_contains_the_word_response() -> None:
    answers = ["A quick response from the studio.", "No response yet."]
    assert parse_choice("Choice: No response yet.", answers) == 2
    assert parse_choice("No response yet.", answers) == 2


def test_filter_values_numbers_responses_one_per_line_and_hides_the_right_response() -> None:
    fields = {
        "knowledge": "K text.",
        "dialogue_history": "[Human]: Hi? [Assistant]: Hello. [Human]: Who?",
        "right_response": "SECRET-RIGHT",
    }
    values = filter_values(fields, ["Lyon.", "the city of\n  Marseille ", "Nice."])
    assert values == {
        "knowledge": "K text.",
        "dialogue_history": "[Human]: Hi? [Assistant]: Hello. [Human]: Who?",
        "answers": "Response 1: Lyon.\nResponse 2: the city of Marseille\nResponse 3: Nice.",
    }
    assert "SECRET-RIGHT" not in "".join(values.values())
    for i, line in enumerate(values["answers"].splitlines(), 1):
        assert parse_choice(f"Choice: {i}", ["a", "b", "c"]) == i
        assert line.startswith(f"Response {i}: ")


RIGHT = "x" * 100  # 100 characters
HIGH = int(MAX_LENGTH_RATIO * 100 + LENGTH_SLACK)  # 240: the longest accepted
LOW = int(MIN_LENGTH_RATIO * 100 - LENGTH_SLACK)  # 0: nothing is too short at this length

# (right response, candidate, problem)
FORMS = [
    (RIGHT, "y" * 100, ""),
    (RIGHT, "y" * HIGH, ""),
    (RIGHT, "y" * (HIGH + 1), "too_long"),
    (RIGHT, "Yes!", ""),
    ("x" * 300, "y" * 80, ""),  # 0.4 * 300 - 40 = 80: the shortest accepted
    ("x" * 300, "y" * 79, "too_short"),
    ("x  " * 100, "y " * 120, ""),  # whitespace runs count as one space on both sides
    ("", "y" * 1000, ""),  # no right response: no length bound
    (RIGHT, "Denis Villeneuve directed it, as the knowledge says.", "meta_talk"),
    (RIGHT, "Here is a hallucinated reply: he directed it.", "meta_talk"),
    (RIGHT, "Unlike the true response, I say he directed it.", "meta_talk"),
    (RIGHT, "He directed it. [Human]: Great!", "meta_talk"),
    (RIGHT, "To the best of my knowledge he directed it.", ""),
    (RIGHT, "Extrinsically speaking, he directed it.", ""),
]


def test_length_bounds_are_the_module_constants() -> None:
    assert (MAX_LENGTH_RATIO, MIN_LENGTH_RATIO, LENGTH_SLACK) == (2.0, 0.4, 40)
    assert LOW <= 0


@pytest.mark.parametrize(("right", "candidate", "problem"), FORMS)
def test_check_candidate(right: str, candidate: str, problem: str) -> None:
    fields = {"knowledge": "k", "dialogue_history": "h", "right_response": right}
    assert check_candidate(fields, candidate) == problem
