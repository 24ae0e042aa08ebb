"""The form guards: a candidate's final mark, casing, span-or-sentence shape and overlap
with the knowledge follow its own seed's right text."""

from __future__ import annotations

import pytest

from halugen.tasks import steps
from halugen.tasks.checks import (
    Casing,
    FinalPunctuation,
    KnowledgeOverlap,
    KnowledgeSpan,
    ShortSpanForm,
)
from halugen.tasks.guard_settings import read_guards
from tests.task_specs import task_spec

KNOWLEDGE = "The Serin flows through Vallona. Aldo Brun was born in Vallona in 1865."


@pytest.mark.parametrize(
    ("right", "candidate", "problem"),
    [
        ("Vallona", "Ostra.", "final_punctuation"),  # "ends with a period => hallucinated"
        ("He was born in Vallona.", "He was born in Ostra", "final_punctuation"),
        ("Was it Vallona?", "Was it Ostra.", "final_punctuation"),
        ("Vallona", "Ostra", ""),
        ("He said \u201cno.\u201d ", "He said \u201cyes.\u201d", ""),  # closers and spaces aside
        ("It was there...", "It was here.", ""),
    ],
)
def test_final_punctuation_follows_the_right_text(right, candidate, problem) -> None:
    assert FinalPunctuation()(right, candidate) == problem


def test_final_punctuation_compares_only_the_marks_it_is_given() -> None:
    assert FinalPunctuation(marks=".")("Was it Vallona?", "Was it Ostra!") == ""
    assert FinalPunctuation(marks=".")("Vallona", "Ostra.") == "final_punctuation"


@pytest.mark.parametrize(
    ("right", "candidate", "problem"),
    [
        ("Vallona", "ostra", "casing"),
        ("the blue whale", "The fin whale", "casing"),
        ("NASA", "Esa", "casing"),
        ("NASA", "ESA", ""),
        ("Vallona", "Ostra Bay", ""),
        ("1865", "March 1866", ""),  # a number's form says nothing
        ("iPhone", "iPad", ""),
    ],
)
def test_casing_class_follows_the_right_text(right, candidate, problem) -> None:
    assert Casing()(right, candidate) == problem


def test_knowledge_overlap_holds_the_share_to_the_right_texts() -> None:
    guard = KnowledgeOverlap(max_gap=0.5)
    # the right answer is in the knowledge; an invented one is not: a tell
    assert guard("Serin", "Tamm", KNOWLEDGE) == "knowledge_overlap"
    assert guard("Serin", "Vallona", KNOWLEDGE) == ""  # another name of the knowledge
    assert guard("the Serin river", "the Tamm river", KNOWLEDGE) == ""  # 1/2 vs 1/1: in band
    assert KnowledgeOverlap(max_gap=0.2)("the Serin river", "the Tamm river", KNOWLEDGE) != ""
    # and the other way: a hallucination more "in the knowledge" than the truth
    assert guard("Tamm", "Serin", KNOWLEDGE) == "knowledge_overlap"
    assert guard("Serin", "Tamm", "") == ""  # no knowledge, no bound
    # numbers aside: a wrong year is rarely one the knowledge states
    assert guard("1865", "1866", KNOWLEDGE) == ""
    assert guard("in 1865 in Vallona", "in 1866 in Ostra", KNOWLEDGE) == "knowledge_overlap"
    with pytest.raises(ValueError, match="max_gap"):
        KnowledgeOverlap(max_gap=2.0)


def test_knowledge_span_holds_a_verbatim_right_answer_to_a_verbatim_wrong_one() -> None:
    guard = KnowledgeSpan()
    knowledge = KNOWLEDGE + " The hall seats 3,677; the annex 1,200."
    # word shares pass these ("seated" and the other words are in the knowledge), yet only
    # the right answer appears in it whole: "in the knowledge => right"
    assert KnowledgeOverlap(max_gap=0.25)("3,677 seated", "3,977 seated", knowledge) == ""
    assert guard("3,677", "3,977", knowledge) == "not_in_knowledge"  # numbers count here
    assert guard("3,677", "1,200", knowledge) == ""  # another figure the knowledge gives
    assert guard("Aldo Brun", "Aldo Brunner", knowledge) == "not_in_knowledge"
    assert guard("Aldo Brun", "the Serin", knowledge) == ""  # case and punctuation aside
    # and the other way: a right answer in other words gets a wrong one in other words
    assert guard("a Vallona man", "Vallona", knowledge) == "span_of_knowledge"
    assert guard("a Vallona man", "an Ostra man", knowledge) == ""
    assert guard("Aldo Brun", "Tamm", "") == ""  # no knowledge, no bound
    # whole words only: "Vall" is inside "Vallona" but is not a span of the knowledge
    assert guard("Serin", "Vall", knowledge) == "not_in_knowledge"


def test_span_and_sentence_shapes_are_checked_both_ways() -> None:
    guard = ShortSpanForm()
    assert guard("Vallona", "It was born in the town of Ostra.") == "sentence_for_short_answer"
    assert guard("He was born in Vallona.", "Ostra") == "span_for_sentence"
    assert guard("He was born in Vallona.", "He was born in Ostra.") == ""
    assert guard("Vallona", "Ostra Bay") == ""


def test_the_task_check_gives_the_guards_the_seeds_knowledge() -> None:
    spec = task_spec("qa")
    fields = {"knowledge": KNOWLEDGE, "question": "Which river?", "right_answer": "Serin"}
    assert steps.check(spec, fields, "Vallona") == ""
    assert steps.check(spec, fields, "Tamm") == "knowledge_overlap"
    assert steps.check(spec, fields, "vallona") == "casing"
    assert steps.check(spec, fields, "Vallona.") == "final_punctuation"
    # in the knowledge's words (a share of 1), but not a span of it
    assert steps.check(spec, fields, "Aldo Vallona") == "not_in_knowledge"


@pytest.mark.parametrize("task", ["qa", "dialogue", "summarization"])
def test_the_built_in_tasks_list_the_form_guards(task) -> None:
    names = {type(g).__name__ for g in task_spec(task).checks}
    assert {"FinalPunctuation", "Casing", "KnowledgeOverlap"} <= names


def test_form_guard_settings_are_read_and_checked() -> None:
    problems: list[tuple[str, str]] = []
    guards = read_guards(
        [
            {"check": "knowledge_overlap", "max_gap": 0.3},
            {"check": "final_punctuation", "marks": "."},
            {"check": "knowledge_overlap", "max_gap": 3},
            {"check": "casing", "strict": True},
        ],
        lambda key, message: problems.append((key, message)),
    )
    assert guards == (KnowledgeOverlap(max_gap=0.3), FinalPunctuation(marks="."))
    assert [k for k, _ in problems] == [
        "guards[2] (knowledge_overlap)",
        "guards[3] (casing).strict",
    ]


def test_task_check_lists_each_guard_with_its_settings(capsys) -> None:
    from halugen.cli import main
    from halugen.tasks import BUILTIN_DIR

    assert main(["task", "check", str(BUILTIN_DIR / "qa")]) == 0
    out = capsys.readouterr().out
    assert "final_punctuation(marks='.!?'), casing, knowledge_overlap(max_gap=0.25)" in out
    assert "knowledge_overlap(max_gap=0.25), knowledge_span" in out
    assert "short_span_form(span_words=3), length_class(max_gap=1)" in out


def test_a_seeds_knowledge_and_right_text_are_read_once_for_all_its_candidates() -> None:
    """The guards compare each candidate with the same seed texts: normalising the
    knowledge and the right text (the costly part of a check) and finding the knowledge's
    content words happen once per seed, not several times per candidate."""
    from halugen.tasks import base, form_guards

    spec = task_spec("qa")
    knowledge = KNOWLEDGE + " The annex of the hall seats 1,200 people."
    fields = {"knowledge": knowledge, "question": "Which river?", "right_answer": "Serin"}
    base.normalise.cache_clear()
    form_guards._knowledge_words.cache_clear()
    candidates = ["Vallona", "Tamm", "Aldo Vallona", "Ostra", "Brun"]
    assert [steps.check(spec, fields, c) for c in candidates] == [
        "",
        "knowledge_overlap",
        "not_in_knowledge",
        "knowledge_overlap",
        "",
    ]
    # each text normalised once: the knowledge, the right text, every candidate
    assert base.normalise.cache_info().misses == 2 + len(candidates)
    assert form_guards._knowledge_words.cache_info().misses == 1


@pytest.mark.parametrize(
    "text",
    ["Hello, World! (it's 3.5 km)", "a_b\tc\x1cd--e", "", "  ", "Héllo, Wörld!", "ﬁne — İstanbul"],
)
def test_normalise_reads_ascii_and_other_text_alike(text) -> None:
    """ASCII text takes a short way (no NFKC pass, punctuation by a byte table); it must
    come out as the general way makes it."""
    import re
    import unicodedata

    from halugen.tasks.base import normalise

    general = re.sub(r"[^\w\s]", " ", unicodedata.normalize("NFKC", text).casefold())
    assert normalise(text) == " ".join(general.split())
