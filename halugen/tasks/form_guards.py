"""Guards that match a candidate's form to the right text's: final mark, casing, knowledge.

A hallucination that ends with a full stop where right answers never do, that is all lower
case where right answers are capitalised, or whose words are less often found in the
knowledge than the right answer's, can be told apart without knowing anything: "ends with
a period => hallucinated", "appears in the knowledge => right". These guards compare the
candidate with the right text of its own seed, so the form of the hallucinations follows
the form of the right texts item by item. They compare normalised views only; the stored
texts are never edited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .base import content_words, normalise

__all__ = [
    "Casing",
    "FinalPunctuation",
    "KnowledgeOverlap",
    "KnowledgeSpan",
    "casing_class",
    "final_mark",
    "in_knowledge",
    "knowledge_share",
]

# closing quotes and brackets after the last mark do not hide it: 'He said "no."'
_TRAILING_CLOSERS = "'\"”’)]»"
_NOT_ASCII_LETTERS = re.compile("[^A-Za-z]+")
# Knowledge texts whose content words are remembered: a seed's knowledge is read twice by
# every check of each of its candidates (the candidate's share and the right text's), and a
# long document holds hundreds of words. Enough for the seeds in flight at the default
# concurrency; a long document's set is some tens of KB.
KNOWLEDGE_TEXTS = 512


def final_mark(text: str, marks: str = ".!?") -> str:
    """The mark of ``marks`` that ends ``text`` (whitespace and closing quotes or brackets
    after it aside), or "" when it ends with none of them. An ellipsis ends with ".";
    every kind of full stop (。, ．) counts as "."."""
    end = text.rstrip().rstrip(_TRAILING_CLOSERS).rstrip()
    if not end:
        return ""
    last = {"。": ".", "．": ".", "…": ".", "！": "!", "？": "?"}.get(end[-1], end[-1])
    return last if last in marks else ""


def casing_class(text: str) -> str:
    """ "upper" (every letter upper case, two or more), "capital" (the first letter upper
    case), "lower" (the first letter lower case: "the euro", "the Czech koruna"), or "none"
    (at most one letter: "1865", "A")."""
    if text.isascii():  # the cased letters of ASCII text are A-Z and a-z: found in C
        found = _NOT_ASCII_LETTERS.sub("", text)
        if len(found) < 2:
            return "none"
        if found.isupper():
            return "upper"
        return "capital" if found[0].isupper() else "lower"
    letters = [c for c in text if c.isalpha() and c.lower() != c.upper()]
    if len(letters) < 2:
        return "none"
    if all(c.isupper() for c in letters):
        return "upper"
    return "capital" if letters[0].isupper() else "lower"


@dataclass(frozen=True)
class FinalPunctuation:
    """The candidate ends with the same mark of ``marks`` as the right text, or with none
    when the right text ends with none of them.

    "The text ends with a period => hallucinated" read HaluEval's QA file at 65%: its right
    answers are spans and its hallucinations sentences. Compared on the texts' ends as
    ``final_mark`` reads them, so a trailing space or closing quote is not a mismatch.
    """

    marks: str = ".!?"
    problem: str = "final_punctuation"

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        if right.strip() and final_mark(candidate, self.marks) != final_mark(right, self.marks):
            return self.problem
        return ""


@dataclass(frozen=True)
class Casing:
    """The candidate's casing class (``casing_class``: initial capital, lower-case
    initial, all capitals) is the right text's.

    A lower-case hallucination of a capitalised right answer (or the reverse, or all
    capitals) is a tell a character model reads at once. A text with no more than one
    letter ("1865", "3 km") matches any class: the form of a number says nothing.
    """

    problem: str = "casing"

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        mine, theirs = casing_class(candidate), casing_class(right)
        if "none" in (mine, theirs) or mine == theirs:
            return ""
        return self.problem


def knowledge_share(text: str, knowledge: str) -> float | None:
    """The share of ``text``'s content words (``content_words``, numbers aside) that
    ``knowledge`` holds; None when the text has none.

    Numbers are left out: a wrong year or count is rarely one the knowledge states, and a
    guard that asked for one would leave "In which year ...?" with no hallucination at all;
    the substring probe of ``audit`` measures what this leaves."""
    words = {w for w in content_words(text) if not w.isdigit()}
    if not words:
        return None
    return len(words & _knowledge_words(knowledge)) / len(words)


@lru_cache(maxsize=KNOWLEDGE_TEXTS)
def _knowledge_words(knowledge: str) -> frozenset[str]:
    return frozenset(content_words(knowledge))


@dataclass(frozen=True)
class KnowledgeOverlap:
    """The share of the candidate's content words found in the knowledge is within
    ``max_gap`` of the right text's share.

    Right answers are mostly taken from the knowledge and invented ones mostly are not, so
    "its words appear in the knowledge => right" solved HaluEval's QA file. Held to the
    right text's own share, a hallucination is as much "in the knowledge" as the truth is,
    item by item. No knowledge, or a text with no content words: no bound.
    """

    max_gap: float = 0.5
    problem: str = "knowledge_overlap"

    def __post_init__(self) -> None:
        if not 0 <= self.max_gap <= 1:
            raise ValueError(f"max_gap must be between 0 and 1, not {self.max_gap}")

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        if not knowledge.strip():
            return ""
        mine, theirs = knowledge_share(candidate, knowledge), knowledge_share(right, knowledge)
        if mine is None or theirs is None:
            return ""
        # a hair of slack: shares of a few words are ratios of small whole numbers
        if abs(mine - theirs) > self.max_gap + 1e-9:
            return self.problem
        return ""


def in_knowledge(text: str, knowledge: str) -> bool:
    """Is ``text`` a run of whole words of ``knowledge``, both normalised (case and
    punctuation aside)?"""
    words = normalise(text)
    # normalised texts are words joined by single spaces: a run of whole words is a
    # substring between spaces
    return bool(words) and f" {words} " in f" {normalise(knowledge)} "


@dataclass(frozen=True)
class KnowledgeSpan:
    """The candidate is a span of the knowledge (a run of its words, ``in_knowledge``)
    exactly when the right text is one: "not_in_knowledge" when the right text is one and
    the candidate is not, "span_of_knowledge" the other way round.

    Word shares (``knowledge_overlap``) do not see it: "3,977 seated" for "3,677 seated"
    shares every word but the number, and a name with one word changed keeps most of its
    words, yet only the right answer appears in the knowledge as a whole, and "the text
    appears in the knowledge => right" reads HaluEval's QA file at 85%. Numbers count
    here: a wrong figure is a distractor when the knowledge states it. No knowledge: no
    bound.
    """

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str:
        if not knowledge.strip() or not right.strip():
            return ""
        mine, theirs = in_knowledge(candidate, knowledge), in_knowledge(right, knowledge)
        if theirs and not mine:
            return "not_in_knowledge"
        if mine and not theirs:
            return "span_of_knowledge"
        return ""
