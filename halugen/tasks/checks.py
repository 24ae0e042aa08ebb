"""Guards a candidate must pass before it can become a benchmark item.

A hallucination that a model can spot by its form rather than its content measures
nothing: HaluEval's released QA data can be solved to 90% by length alone, and an answer
that contains the right one ("1865" -> "1865 and George Frederick Ernest Albert") is not
wrong. Each guard is a small frozen object, ``guard(right, candidate, knowledge) ->
problem``, that a
task lists in its declaration (``[[guards]]`` in its ``task.toml``, by the names of
``GUARDS``, with their settings); "" means the candidate passes. Equality with the right text
(up to punctuation and case) is checked for every task before these (``steps.check``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .form_guards import Casing, FinalPunctuation, KnowledgeOverlap, KnowledgeSpan, in_knowledge

__all__ = [
    "GUARDS",
    "Casing",
    "ContainsRight",
    "FinalPunctuation",
    "KnowledgeOverlap",
    "KnowledgeSpan",
    "LengthClass",
    "LengthRatio",
    "MetaTalk",
    "ShortSpanForm",
    "contains_span",
    "length_class",
]


def contains_span(longer: str, shorter: str) -> bool:
    """Is ``shorter`` a run of whole words of ``longer``, both normalised?"""
    return in_knowledge(shorter, longer)  # the same test as the knowledge_span guard


@dataclass(frozen=True)
class ContainsRight:
    """A hallucination holding the right answer, or held in it, is not wrong enough.

    "1865 and George Frederick Ernest Albert" for "1865" still states the right answer;
    "Richard Nixon" for "President Richard Nixon" is the right answer. Whole words only:
    "18650" does not contain "1865".
    """

    problem: str = "contains_right_answer"

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        if right and (contains_span(candidate, right) or contains_span(right, candidate)):
            return self.problem
        return ""


def length_class(text: str) -> int:
    """The length class of a text: floor(log2(words)), so 1, 2-3, 4-7, 8-15, ... words."""
    return int(math.log2(max(1, len(text.split()))))


@dataclass(frozen=True)
class LengthClass:
    """A candidate more than ``max_gap`` classes from the right answer's is rejected.

    Classes double in width (``length_class``), so the bound scales with the answer: a
    one-word answer admits 1-3 words, a five-word answer 2-15. Applied to every candidate,
    it keeps the lengths of the hallucinated answers distributed like the right ones, so a
    length threshold cannot tell them apart.
    """

    max_gap: int = 1
    problem: str = "length_class"

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        if right and abs(length_class(candidate) - length_class(right)) > self.max_gap:
            return self.problem
        return ""


_SENTENCE_END = re.compile(r"[.!?]['\"”’)]*$")


def _is_sentence(text: str) -> bool:
    return bool(_SENTENCE_END.search(text.strip()))


@dataclass(frozen=True)
class ShortSpanForm:
    """A sentence where the right answer is a short span, or a span where it is a
    sentence, gives itself away.

    HaluEval's right answers are short spans while many of its hallucinated answers are
    full sentences. "sentence_for_short_answer" for a sentence of four words or more where
    the right answer has at most five words and no full stop; "answer_too_long" for a
    candidate far longer in words; "span_for_sentence" for a span of at most
    ``span_words`` words with no full stop where the right answer is a sentence of four
    words or more (the same tell read the other way).
    """

    span_words: int = 3

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        right_words = len(right.split())
        words = len(candidate.split())
        if right_words <= 5 and not _is_sentence(right):
            if words >= 4 and _is_sentence(candidate):
                return "sentence_for_short_answer"
            if words > max(2 * right_words + 3, right_words + 5):
                return "answer_too_long"
        elif words > 3 * right_words + 5:
            return "answer_too_long"
        elif (
            right_words >= 4
            and _is_sentence(right)
            and words <= self.span_words
            and not _is_sentence(candidate)
        ):
            return "span_for_sentence"
        return ""


@dataclass(frozen=True)
class LengthRatio:
    """Characters (whitespace runs counted as one) within [min, max] x the right text's.

    ``slack`` characters widen the bounds both ways, so one-line chit-chat is not rejected
    over a few characters. A reference's trailing newline (one of HaluEval's form leaks)
    does not shift the bounds. No right text: no bound.
    """

    max_ratio: float
    min_ratio: float
    slack: int = 0

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        size = len(" ".join(candidate.split()))
        right_size = len(" ".join(right.split()))
        if right_size:
            if size > self.max_ratio * right_size + self.slack:
                return "too_long"
            if size < self.min_ratio * right_size - self.slack:
                return "too_short"
        return ""


@dataclass(frozen=True)
class MetaTalk:
    """Talk about the task inside the text ("a hallucinated reply", "the given document")."""

    any_of: tuple[str, ...]  # regexes, matched case-insensitively; one match rejects
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile("|".join(self.any_of), re.IGNORECASE))

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        if self.regex.search(" ".join(candidate.split())):
            return "meta_talk"
        return ""


# The guards a task.toml may name (``check = "..."``), with the settings of each class.
GUARDS: dict[str, type] = {
    "contains_right": ContainsRight,
    "short_span_form": ShortSpanForm,
    "length_class": LengthClass,
    "length_ratio": LengthRatio,
    "meta_talk": MetaTalk,
    "final_punctuation": FinalPunctuation,
    "casing": Casing,
    "knowledge_overlap": KnowledgeOverlap,
    "knowledge_span": KnowledgeSpan,
}
