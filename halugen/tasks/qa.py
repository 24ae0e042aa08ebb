"""The QA task: HotpotQA-style seeds (knowledge, question, right answer) -> hallucinated answers.

Templates live in ``prompts/qa/``. This module knows how to read the sampling replies
(``Pattern: ...`` / ``Answer: ...``), how to lay out the candidates for the filter judge
(``Answer 1: ...`` lines) and how to read the judge's ``Choice: <n>``.

Parsing is deliberately conservative: a reply whose answer cannot be located by its label
is rejected rather than guessed at, because a wrong guess would become a benchmark item.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from . import base
from .base import ParsedCandidate, TaskSpec
from .replies import PARAGRAPH_BREAK, read_candidate, split_trailing, unquote

__all__ = [
    "PATTERNS",
    "QA",
    "check_form",
    "filter_values",
    "parse_candidate",
    "parse_choice",
]

PATTERNS = ("comprehension", "factualness", "specificity", "inference")

# Stems, so "factual", "Specific", "inferential" and "comprehending" still name a pattern.
_PATTERN_WORD = re.compile(
    r"\b(comprehen\w*|factual\w*|specific\w*|inferen\w*|infer)\b", re.IGNORECASE
)
_STEM_TO_PATTERN = (
    ("comprehen", "comprehension"),
    ("factual", "factualness"),
    ("specific", "specificity"),
    ("infer", "inference"),
)

# Labels a model may put before its answer; the prompts ask for "Answer", the conversation's
# demonstrations show "Hallucinated answer", and some models echo that instead.
_ANSWER_LABELS = ("Answer", "Hallucinated answer", "Hallucinated")
_PATTERN_LABELS = ("Pattern", "Hallucination pattern", "Pattern used")
# Lines that end the answer's value when they follow it.
_STOP_LABELS = (
    "Pattern",
    "Answer",
    "Hallucinated answer",
    "Hallucinated",
    "Hallucination pattern",
    "Pattern used",
    "Explanation",
    "Reason",
    "Reasoning",
    "Rationale",
    "Note",
    "Notes",
    "Justification",
    "Knowledge",
    "Question",
    "Right answer",
    "Correct answer",
)

# A trailing "(pattern: factualness)", "[Pattern - inference]" or "(factualness)".
_TRAILING_PATTERN = re.compile(
    r"\s*[\(\[]\s*(?:(?:hallucination\s+)?pattern\b[^)\]]*"
    r"|(?:comprehension|factualness|specificity|inference)(?:\s+pattern)?)\s*[\)\]]\s*$",
    re.IGNORECASE,
)


def _pattern_of(text: str | None) -> str:
    """The first QA pattern named in ``text``; "unstated" when none is."""
    if not text:
        return "unstated"
    m = _PATTERN_WORD.search(text)
    if not m:
        return "unstated"
    word = m.group(1).casefold()
    for stem, pattern in _STEM_TO_PATTERN:
        if word.startswith(stem):
            return pattern
    return "unstated"  # pragma: no cover - every alternative of the regex has a stem


def _clean_answer(value: str) -> tuple[str, str]:
    """(answer, pattern named in a trailing parenthesis or "") from a labelled value."""
    value = value.strip()
    # Text after a blank line is commentary ("This is wrong because ..."), not the answer.
    value = PARAGRAPH_BREAK.split(value, maxsplit=1)[0]
    value = " ".join(value.split())
    value = value.strip("*_").strip()
    value, trailing = split_trailing(value, _TRAILING_PATTERN)
    value = unquote(value.strip("*_").strip())
    return value, trailing


def parse_candidate(text: str) -> ParsedCandidate:
    """Read a sampling reply: ``Pattern: <p>`` and ``Answer: <hallucinated answer>``.

    See ``replies.read_candidate`` for the problem codes. Equality with the right answer is
    the engine's check, not this function's.
    """
    return read_candidate(
        text,
        value_labels=_ANSWER_LABELS,
        pattern_labels=_PATTERN_LABELS,
        stop_labels=_STOP_LABELS,
        clean=_clean_answer,
        pattern_of=_pattern_of,
    )


def filter_values(fields: Mapping[str, str], answers: Sequence[str]) -> dict[str, str]:
    """Values for ``prompts/qa/filter.txt``: knowledge, question and the numbered answers.

    The right answer is left out on purpose: the judge must never see it. Each answer is
    kept on one line so that ``Answer <n>:`` always starts a line.
    """
    lines = [f"Answer {i}: {' '.join(a.split())}" for i, a in enumerate(answers, 1)]
    return {
        "knowledge": fields["knowledge"],
        "question": fields["question"],
        "answers": "\n".join(lines),
    }


_CHOICE_LABEL = re.compile(r"^[\s>*_#-]*choice[\s*_#]*:", re.IGNORECASE | re.MULTILINE)
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
}  # fmt: skip
_WORD_CHOICE = re.compile(
    r"[\s*_]*(?:answer\s+)?([a-z]+)(?:\s+(?:answer|one))?[\s*_.!]*", re.IGNORECASE
)


def _choice_at(text: str, answers: Sequence[str]) -> int | None:
    """The pick of the ``Choice:`` line that ``text`` starts with."""
    pick = base.parse_choice(text, answers)
    if pick is None:
        # "Choice: two" / "Choice: the second" — number words, on the label's own line.
        line = _CHOICE_LABEL.sub("", text, count=1).split("\n", 1)[0]
        m = _WORD_CHOICE.fullmatch(re.sub(r"^\s*the\s+", "", line, flags=re.IGNORECASE))
        word = _NUMBER_WORDS.get(m.group(1).casefold()) if m else None
        if word is not None and 1 <= word <= len(answers):
            pick = word
    return pick


def parse_choice(text: str, answers: Sequence[str]) -> int | None:
    """Which answer (1-based) the judge picked, or None when the reply does not say clearly.

    Every ``Choice:`` line is read; the ones that name an answer must all name the same one
    (a judge that changes its mind is ambiguous), and a line naming none (an echoed
    placeholder) is ignored. Without a ``Choice:`` line, a bare number or the exact text of
    one answer is accepted (``base.parse_choice``).
    """
    text = text or ""
    starts = [m.start() for m in _CHOICE_LABEL.finditer(text)]
    if not starts:
        return base.parse_choice(text, answers)
    picks = {_choice_at(text[i:], answers) for i in starts} - {None}
    return picks.pop() if len(picks) == 1 else None


_SENTENCE_END = re.compile(r"[.!?]['\"”’)]*$")


def check_form(fields: Mapping[str, str], answer: str) -> str:
    """Reject hallucinations whose form alone gives them away; "" when the form is fine.

    HaluEval's right answers are short spans while many of its hallucinated answers are
    full sentences, so a detector could win by looking at length. The prompts ask for the
    same form; this catches the replies that ignore it. Lenient by design: specificity
    answers may legitimately be a few words longer than the right answer.
    """
    right = fields.get("right_answer", "")
    right_words = len(right.split())
    words = len(answer.split())
    if right_words <= 5 and not _SENTENCE_END.search(right.strip()):
        if words >= 4 and _SENTENCE_END.search(answer.strip()):
            return "sentence_for_short_answer"
        if words > max(2 * right_words + 3, right_words + 5):
            return "answer_too_long"
    elif words > 3 * right_words + 5:
        return "answer_too_long"
    return ""


QA = TaskSpec(
    name="qa",
    seed_fields=("knowledge", "question", "right_answer"),
    right_field="right_answer",
    hallucinated_field="hallucinated_answer",
    patterns=PATTERNS,
    sample_templates=("sample_onepass", "sample_conversation"),
    filter_template="filter",
    parse_candidate=parse_candidate,
    filter_values=filter_values,
    parse_choice=parse_choice,
    check_candidate=check_form,
    long_field="knowledge",
)
