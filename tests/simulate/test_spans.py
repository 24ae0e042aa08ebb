"""The simulator's wrong answers come from the record, not from phrases of its own."""

from __future__ import annotations

import re

import pytest

from halugen.simulate.keys import key64
from halugen.simulate.mutate import hallucinate
from halugen.simulate.spans import record_span, shape_of
from halugen.simulate.words import normalise

PATTERNS = ("comprehension", "factualness", "specificity", "inference")
DIALOGUE_PATTERNS = ("extrinsic-soft", "extrinsic-hard", "extrinsic-grouped")

ARENA = (
    "The Velby Arena opened in 1994 with 3,677 seated and 1,200 standing. Its owner, the "
    "Tamm Valley Trust, named Odile Brask as Chief of Staff and Aldo Brun as Head of "
    "Design. The roof uses keyboard function keys for its lights and steel cable nets for "
    "its weight."
)
QUESTION = "Which post did the Orlen Bridge Company give Harlow Vance?"


def _is_span(text: str, record: str) -> bool:
    words, among = normalise(text).split(), normalise(record).split()
    return any(among[i : i + len(words)] == words for i in range(len(among) - len(words) + 1))


def test_record_span_is_another_run_of_the_record_in_the_same_shape() -> None:
    assert shape_of("3,677 seated") == ("9", "a")
    assert shape_of("Chief of Staff") == ("A", "s", "A")
    assert record_span("3,677 seated", ARENA, 1) == "1,200 standing"  # a comma is no clause end
    assert record_span("Chief of Staff", ARENA, 2) == "Head of Design"
    assert record_span("keyboard function keys", ARENA, 3) in {"steel cable nets"}
    assert {record_span("1994", ARENA, k) for k in range(20)} == {"3,677", "1,200"}
    assert record_span("Chief of Staff", "No title is given here.", 1) is None
    assert record_span("one two three four five six seven", ARENA, 1) is None


@pytest.mark.parametrize(
    "right", ["3,677 seated", "Chief of Staff", "keyboard function keys", "Odile Brask", "1994"]
)
def test_a_right_answer_found_in_the_knowledge_gets_a_wrong_one_found_there(right: str) -> None:
    # a generator asked for a plausible wrong answer names another figure or phrase the
    # knowledge gives (a distractor), never one of the question's names
    for pattern in PATTERNS:
        for i in range(12):
            out = hallucinate(right, f"{ARENA}\n{QUESTION}", pattern, key64(i), question=QUESTION)
            assert normalise(out) != normalise(right)
            assert _is_span(out, ARENA), (pattern, out)


# phrases the simulator once added to every text it had nothing else to edit in
OWN_PHRASES = re.compile(r"according to|\bsince \d|\bin \d{4}\b|^(near|around|beyond) ", re.I)


@pytest.mark.parametrize(
    "right",
    [
        "Have you seen any of her biographical films?",
        "You are welcome, enjoy the read!",
        "kiera cass wrote the siren",
        "I liked the second half of that story more",
        # every name the record gives is in it: no invented name ("Harlow Vance") instead
        "Ilse Varga wrote The Salt Road, a lovely historical novel.",
    ],
)
def test_no_phrase_of_the_simulators_own_marks_a_hallucination(right: str) -> None:
    history = "[Human]: Any novel about a lighthouse? [Assistant]: The Salt Road is lovely."
    knowledge = "The Salt Road written_by Ilse Varga; The Salt Road genre historical novel"
    for pattern in (*DIALOGUE_PATTERNS, *PATTERNS):
        for i in range(12):
            out = hallucinate(right, f"{knowledge}\n{history}", pattern, key64(i))
            assert not OWN_PHRASES.search(out), (pattern, out)
            # every word it adds is a word of the right text or of the record
            added = _words(out) - _words(right)
            assert added <= _words(f"{knowledge} {history}") | {"not"}, out


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def test_the_questions_own_words_are_no_answer_but_its_other_option_is() -> None:
    question = "Who did Odile Brask name as Head of Design?"
    outs = {
        hallucinate("Aldo Brun", f"{ARENA}\n{question}", p, key64(i), question=question)
        for p in PATTERNS
        for i in range(12)
    }
    assert outs and not any(_is_span(out, question) for out in outs), outs
    # "Which is older, A or B?": the wrong answer a generator gives is the other option
    choice = "Who was named first, Odile Brask or Aldo Brun?"
    for p in PATTERNS:
        for i in range(12):
            out = hallucinate("Odile Brask", f"{ARENA}\n{choice}", p, key64(i), question=choice)
            assert out == "Aldo Brun", (p, out)


def test_a_date_gets_a_date_never_a_name() -> None:
    knowledge = "Aldo Brun was born on April 1, 1949 in Velby. Odile Brask joined on March 3, 1950."
    question = "When was Aldo Brun born?"
    for p in PATTERNS:
        for i in range(12):
            out = hallucinate("April 1, 1949", knowledge, p, key64(i), question=question)
            assert out == "March 3, 1950", (p, out)


def test_a_capitalised_stop_word_is_no_name_to_offer() -> None:
    assert shape_of("The Tamsa") == ("s", "A")
    knowledge = "The Tamsa river runs past Ovel; the Lenno river does not."
    question = "Which river runs past Ovel?"
    outs = {
        hallucinate("Tamsa", f"{knowledge}\n{question}", p, key64(i), question=question)
        for p in PATTERNS
        for i in range(12)
    }
    assert outs == {"Lenno"}
