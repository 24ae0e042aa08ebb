"""The dialogue task: OpenDialKG-style seeds (knowledge, history, right response) -> hallucinated
responses.

Templates live in ``prompts/dialogue/``. This module reads the sampling replies
(``Pattern: ...`` / ``Response: ...``), lays out the candidates for the filter judge
(``Response 1: ...`` lines) and reads the judge's ``Choice: <n>``.

Like QA's, parsing is conservative: a reply whose response cannot be located by its label is
rejected rather than guessed at. The generic pieces (fences, quotes, refusals, placeholders,
the choice reader) are QA's, imported from ``qa`` so that every task reads replies alike; the
problem codes are QA's too ("no_answer_label", ...), "answer" meaning the generated text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from . import qa
from .base import ParsedCandidate, TaskSpec
from .replies import PARAGRAPH_BREAK, read_candidate, split_trailing, unquote

__all__ = [
    "DIALOGUE",
    "LENGTH_SLACK",
    "MAX_LENGTH_RATIO",
    "MIN_LENGTH_RATIO",
    "PATTERNS",
    "check_candidate",
    "filter_values",
    "parse_candidate",
    "parse_choice",
]

PATTERNS = ("extrinsic-soft", "extrinsic-hard", "extrinsic-grouped")

# A response may add a clause (extrinsic-soft does by definition), so the bounds are looser
# than summarization's; the slack keeps one-line chit-chat ("Yes, I loved it!") from being
# rejected over a few characters.
MAX_LENGTH_RATIO = 2.0
MIN_LENGTH_RATIO = 0.4
LENGTH_SLACK = 40  # characters

# "extrinsic-soft", "Extrinsic soft", "extrinsic (hard)", "soft", "grouping" all name a pattern.
_PATTERN_WORD = re.compile(r"\b(?:extrinsic[\s_–—-]*\(?\s*)?(soft|hard|group\w*)\b", re.IGNORECASE)
_WORD_TO_PATTERN = {"soft": "extrinsic-soft", "hard": "extrinsic-hard"}

# The prompts ask for "Response"; the demonstrations show "Hallucinated response" (and the
# one-pass layout "Hallucinated reply"), which some models echo instead.
_RESPONSE_LABELS = (
    "Response",
    "Hallucinated response",
    "Hallucinated reply",
    "Hallucinated",
    "Reply",
)
_PATTERN_LABELS = ("Pattern", "Hallucination pattern", "Pattern used")
# Lines that end the response's value when they follow it.
_STOP_LABELS = (
    *_RESPONSE_LABELS,
    *_PATTERN_LABELS,
    "Explanation",
    "Reason",
    "Reasoning",
    "Rationale",
    "Note",
    "Notes",
    "Justification",
    "Knowledge",
    "Dialogue history",
    "Right response",
    "True response",
    "True reply",
    "[Human]",
    "Human",
    "User",
)

# "[Assistant]: ..." / "Assistant: ..." before the turn: the dialogue's layout, not the reply.
_LEADING_SPEAKER = re.compile(r"^\[?\s*(?:assistant|ai|bot)\s*\]?\s*:\s*", re.IGNORECASE)
# A speaker tag inside the response means the model went on writing the dialogue; the
# assistant's turn ends there.
_LATER_TURN = re.compile(r"\s*\[\s*(?:human|user|assistant)\s*\]\s*:.*$", re.IGNORECASE)
# A trailing "(pattern: extrinsic-hard)", "[Pattern - soft]" or "(extrinsic-grouped)".
_TRAILING_PATTERN = re.compile(
    r"\s*[\(\[]\s*(?:(?:hallucination\s+)?pattern\b[^)\]]*"
    r"|extrinsic[\s_–—-]*(?:soft|hard|group\w*)(?:\s+pattern)?)\s*[\)\]]\s*$",
    re.IGNORECASE,
)
# Talk about the task inside the turn gives the hallucination away by its form.
_META = re.compile(
    r"\bhallucinat\w*|\bextrinsic\b|\b(?:the|this|that) (?:given |provided )?knowledge\b"
    r"|\b(?:right|true|original|correct) (?:response|reply)\b|\bdialogue history\b"
    r"|\[\s*(?:human|assistant)\s*\]",
    re.IGNORECASE,
)


def _pattern_of(text: str | None) -> str:
    """The first dialogue pattern named in ``text``; "unstated" when none is."""
    if not text:
        return "unstated"
    m = _PATTERN_WORD.search(text)
    if not m:
        return "unstated"
    return _WORD_TO_PATTERN.get(m.group(1).casefold(), "extrinsic-grouped")


def _clean_response(value: str) -> tuple[str, str]:
    """(response, pattern named in a trailing parenthesis or "") from a labelled value."""
    # Text after a blank line is commentary ("This is wrong because ..."), not the turn.
    value = PARAGRAPH_BREAK.split(value.strip(), maxsplit=1)[0]
    value = unquote(" ".join(value.split()).strip("*_").strip())
    value = _LEADING_SPEAKER.sub("", value)
    value = _LATER_TURN.sub("", value)
    value, trailing = split_trailing(value, _TRAILING_PATTERN)
    return unquote(value.strip("*_").strip()), trailing


def parse_candidate(text: str) -> ParsedCandidate:
    """Read a sampling reply: ``Pattern: <p>`` and ``Response: <hallucinated response>``.

    ``problem`` is "" for a usable reply, otherwise one of QA's codes: "empty_reply",
    "refusal", "no_answer_label", "empty_answer", "placeholder_answer". Equality with the
    right response is the engine's check, form checks are ``check_candidate``'s.
    """
    return read_candidate(
        text,
        value_labels=_RESPONSE_LABELS,
        pattern_labels=_PATTERN_LABELS,
        stop_labels=_STOP_LABELS,
        clean=_clean_response,
        pattern_of=_pattern_of,
    )


def filter_values(fields: Mapping[str, str], answers: Sequence[str]) -> dict[str, str]:
    """Values for ``prompts/dialogue/filter.txt``: knowledge, history, numbered responses.

    The right response is left out on purpose: the judge must never see it. Each response is
    kept on one line so that ``Response <n>:`` always starts a line.
    """
    lines = [f"Response {i}: {' '.join(a.split())}" for i, a in enumerate(answers, 1)]
    return {
        "knowledge": fields["knowledge"],
        "dialogue_history": fields["dialogue_history"],
        "answers": "\n".join(lines),
    }


_CANDIDATE_WORD = re.compile(r"\b(?:response|reply)\b", re.IGNORECASE)


def _as_answer(text: str) -> str:
    return _CANDIDATE_WORD.sub("answer", text)


def parse_choice(text: str, answers: Sequence[str]) -> int | None:
    """Which response (1-based) the judge picked, or None when the reply does not say clearly.

    QA's reader (``qa.parse_choice``: every ``Choice:`` line must agree, number words, a
    bare number, the exact text of one candidate) with "response" and "reply" read as
    "answer", in the reply and in the candidates alike, so "Choice: the second response"
    and a bare "Response 2" count too.
    """
    return qa.parse_choice(_as_answer(text or ""), [_as_answer(a) for a in answers])


def check_candidate(fields: Mapping[str, str], response: str) -> str:
    """Reject responses whose form alone gives them away; "" when the form is fine.

    "meta_talk" when the turn talks about the task (hallucination, the knowledge, the right
    response, speaker tags); "too_long" when it exceeds ``MAX_LENGTH_RATIO`` times the right
    response's length plus ``LENGTH_SLACK`` characters; "too_short" when it is under
    ``MIN_LENGTH_RATIO`` times that length minus the slack. Lengths are in characters with
    runs of whitespace counted as one space.
    """
    response = " ".join(response.split())
    if _META.search(response):
        return "meta_talk"
    right = len(" ".join(fields.get("right_response", "").split()))
    if right:
        if len(response) > MAX_LENGTH_RATIO * right + LENGTH_SLACK:
            return "too_long"
        if len(response) < MIN_LENGTH_RATIO * right - LENGTH_SLACK:
            return "too_short"
    return ""


DIALOGUE = TaskSpec(
    name="dialogue",
    seed_fields=("knowledge", "dialogue_history", "right_response"),
    right_field="right_response",
    hallucinated_field="hallucinated_response",
    patterns=PATTERNS,
    sample_templates=("sample_onepass", "sample_conversation"),
    filter_template="filter",
    parse_candidate=parse_candidate,
    filter_values=filter_values,
    parse_choice=parse_choice,
    check_candidate=check_candidate,
    long_field="knowledge",
)
