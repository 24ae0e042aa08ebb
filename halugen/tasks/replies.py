"""Reading a model's sampling reply: shared by every task.

A reply is expected as labelled lines (``Pattern: ...`` and ``Answer:`` / ``Response:`` /
``Summary: ...``). Each task gives its labels, how to clean the labelled value, and how to
name its patterns; the steps and the problem codes are the same for all tasks, so SQL over
candidates sees the same values whatever the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .base import ParsedCandidate, labelled_value, normalise

__all__ = [
    "FENCE_LINE",
    "PARAGRAPH_BREAK",
    "PLACEHOLDER",
    "REFUSAL",
    "REFUSAL_VERB",
    "first_labelled",
    "read_candidate",
    "split_trailing",
    "unquote",
]

FENCE_LINE = re.compile(r"^\s*```[\w-]*\s*$", re.MULTILINE)
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_QUOTES = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("`", "`"), ("«", "»"))
REFUSAL = re.compile(
    r"^\W*(?:i['’]m\s+sorry|i\s+am\s+sorry|sorry\s*[,.!]|i\s+apologi[sz]e|i\s+cannot\b|i\s+can['’]?t\b"
    r"|i\s+can\s+not\b|i\s+won['’]t\b|i\s+will\s+not\b|i['’]m\s+(?:not\s+able|unable)"
    r"|i\s+am\s+(?:not\s+able|unable)|as\s+an\s+ai\b)",
    re.IGNORECASE,
)
# An answer that opens like a refusal is one only if it also refuses to do something: song
# and book titles such as "I Won't Back Down" are legitimate answers.
REFUSAL_VERB = re.compile(
    r"\b(?:help|assist|provide|create|generate|comply|fulfil+|write|produce|do\s+(?:that|this))\b",
    re.IGNORECASE,
)
# The reply format's own placeholder copied back, e.g. "<your hallucinated answer>".
PLACEHOLDER = re.compile(r"^<[^<>]*>$")


def first_labelled(text: str, labels: Sequence[str], stops: Sequence[str]) -> str | None:
    """The value of the first of ``labels`` present in ``text`` (None when none is)."""
    for label in labels:
        value = labelled_value(text, label, stops)
        if value is not None:
            return value
    return None


_OPENING_QUOTES = tuple(left for left, _ in _QUOTES)


def unquote(text: str) -> str:
    """Drop quotes wrapping the whole text; quotes inside it (or a lone apostrophe) stay."""
    while len(text) >= 2 and text.startswith(_OPENING_QUOTES):  # most answers: no quote
        for left, right in _QUOTES:
            if not (text.startswith(left) and text.endswith(right)):
                continue
            inner = text[len(left) : -len(right)]
            # '"a" and "b"' is not one quoted answer: the inner text must hold no such quote.
            if not (left in inner or right in inner):
                text = inner.strip()
                break
        else:
            return text
    return text


def split_trailing(value: str, trailing: re.Pattern[str]) -> tuple[str, str]:
    """(value without a trailing remark such as "(pattern: x)", the remark or "")."""
    m = trailing.search(value)
    if not m:
        return value, ""
    return value[: m.start()].rstrip(), m.group(0)


def read_candidate(
    text: str,
    *,
    value_labels: Sequence[str],
    pattern_labels: Sequence[str],
    stop_labels: Sequence[str],
    clean: Callable[[str], tuple[str, str]],
    pattern_of: Callable[[str | None], str],
) -> ParsedCandidate:
    """Read a sampling reply into (text, pattern, problem).

    ``clean`` turns the labelled value into (text, a trailing "(pattern ...)" remark or "").
    ``problem`` is "" for a usable reply, otherwise one of: "empty_reply", "refusal",
    "no_answer_label", "empty_answer", "placeholder_answer". Equality with the right answer
    and form checks are the engine's and the task's, not this function's.
    """
    body = text or ""
    if "```" in body:  # only a fence line needs the regex's pass over the reply
        body = FENCE_LINE.sub("", body)
    body = body.strip()
    if not body:
        return ParsedCandidate(answer="", pattern="unstated", problem="empty_reply")

    # The value stops at the next label, including a repeated value label.
    raw = first_labelled(body, value_labels, stop_labels)
    pattern = pattern_of(first_labelled(body, pattern_labels, stop_labels))

    if raw is None:
        problem = "refusal" if REFUSAL.match(body) else "no_answer_label"
        return ParsedCandidate(answer="", pattern=pattern, problem=problem)

    value, trailing = clean(raw)
    if pattern == "unstated" and trailing:
        pattern = pattern_of(trailing)
    if not normalise(value):
        return ParsedCandidate(answer="", pattern=pattern, problem="empty_answer")
    if PLACEHOLDER.match(value):
        return ParsedCandidate(answer="", pattern=pattern, problem="placeholder_answer")
    if REFUSAL.match(value) and REFUSAL_VERB.search(value):
        return ParsedCandidate(answer="", pattern=pattern, problem="refusal")
    return ParsedCandidate(answer=value, pattern=pattern)
