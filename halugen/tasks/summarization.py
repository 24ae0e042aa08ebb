"""The summarization task: CNN/DailyMail-style seeds (document, right summary) -> hallucinated
summaries.

Templates live in ``prompts/summarization/``. This module reads the sampling replies
(``Pattern: ...`` / ``Summary: ...``), lays out the candidates for the filter judge
(``Summary 1: ...`` lines), reads the judge's ``Choice: <n>`` and checks a summary's length
against the right one (a hallucinated summary much longer or shorter than the reference is
told apart by its form alone).

Parsing is conservative, as for QA, whose generic pieces it imports (fences, quotes,
refusals, placeholders, the choice reader) along with its problem codes ("no_answer_label",
..., "answer" meaning the generated text). Unlike a QA answer, a summary may come as several
lines or bullets, like the highlights it imitates; they are joined into one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from . import qa
from .base import ParsedCandidate, TaskSpec
from .replies import PARAGRAPH_BREAK, read_candidate, split_trailing, unquote

__all__ = [
    "MAX_LENGTH_RATIO",
    "MIN_LENGTH_RATIO",
    "PATTERNS",
    "SUMMARIZATION",
    "check_candidate",
    "filter_values",
    "parse_candidate",
    "parse_choice",
]

PATTERNS = ("factual", "non-factual", "intrinsic")

# Bounds on len(hallucinated) / len(right summary), in characters.
MAX_LENGTH_RATIO = 1.5
MIN_LENGTH_RATIO = 0.5

# "non-factual", "Nonfactual", "not factual", "counterfactual" are the second pattern and
# must be tried before plain "factual"; "factuality" and "Intrinsic error" still name one.
_PATTERN_WORD = re.compile(
    r"\b(non[\s_–—-]*factual|not[\s_–—-]+factual|counter[\s_–—-]*factual|factual|intrinsic)\w*",
    re.IGNORECASE,
)

_SUMMARY_LABELS = ("Summary", "Hallucinated summary", "Hallucinated")
_PATTERN_LABELS = ("Pattern", "Hallucination pattern", "Pattern used")
# Lines that end the summary's value when they follow it.
_STOP_LABELS = (
    *_SUMMARY_LABELS,
    *_PATTERN_LABELS,
    "Explanation",
    "Reason",
    "Reasoning",
    "Rationale",
    "Note",
    "Notes",
    "Justification",
    "Document",
    "Article",
    "Right summary",
    "Correct summary",
    "Reference",
)

_BULLET = re.compile(r"^\s*(?:[-*•–]|\d{1,2}[.)])\s+")
_SENTENCE_END = re.compile(r"[.!?]['\"”’)]*$")
# A trailing "(pattern: intrinsic)", "[Pattern - factual]" or "(non-factual)".
_TRAILING_PATTERN = re.compile(
    r"\s*[\(\[]\s*(?:(?:hallucination\s+)?pattern\b[^)\]]*"
    r"|(?:non[\s_–—-]*factual|factual|intrinsic)(?:\s+pattern)?)\s*[\)\]]\s*$",
    re.IGNORECASE,
)
# Talk about the task inside the summary gives the hallucination away by its form. Kept
# narrow: news summaries legitimately speak of "a leaked document" or "the report".
_META = re.compile(
    r"\bhallucinat\w*"
    r"|\b(?:the|this) (?:given|provided|original|source|above) (?:document|article|text|story)\b"
    r"|\b(?:not|never) (?:mentioned|stated|said|reported) in the (?:document|article|text)\b"
    r"|\b(?:right|correct|reference|original) summary\b",
    re.IGNORECASE,
)


def _pattern_of(text: str | None) -> str:
    """The first summarization pattern named in ``text``; "unstated" when none is."""
    if not text:
        return "unstated"
    m = _PATTERN_WORD.search(text)
    if not m:
        return "unstated"
    word = m.group(1).casefold()
    if word.startswith("factual"):
        return "factual"
    if word.startswith("intrinsic"):
        return "intrinsic"
    return "non-factual"


def _is_bullets(paragraph: str) -> bool:
    lines = [line for line in paragraph.splitlines() if line.strip()]
    return bool(lines) and all(_BULLET.match(line) for line in lines)


def _join_lines(paragraphs: Sequence[str], bullets: bool) -> str:
    """One line from the summary's lines: bullets dropped, each item ending as a sentence.

    Highlight-style items come one per line, often without a full stop; joined, they need
    one. A line that merely wraps a sentence (the next line does not start a new one) is
    joined as it is.
    """
    lines = [
        _BULLET.sub("", line).strip().strip("*_").strip()
        for p in paragraphs
        for line in p.splitlines()
    ]
    lines = [line for line in lines if line]
    out = []
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        new_item = bullets or (not last and lines[i + 1][:1].isupper())
        if len(lines) > 1 and new_item and not _SENTENCE_END.search(line):
            line += "."
        out.append(line)
    return " ".join(" ".join(out).split())


def _clean_summary(value: str) -> tuple[str, str]:
    """(summary, pattern named in a trailing parenthesis or "") from a labelled value."""
    paragraphs = PARAGRAPH_BREAK.split(value.strip())
    # Text after a blank line is commentary, unless the summary is a list of bullets that a
    # blank line merely spaces out.
    keep = paragraphs[:1]
    bullets = _is_bullets(paragraphs[0])
    if bullets:
        for p in paragraphs[1:]:
            if not _is_bullets(p):
                break
            keep.append(p)
    summary = _join_lines(keep, bullets)
    summary, trailing = split_trailing(summary, _TRAILING_PATTERN)
    return unquote(summary.strip("*_").strip()), trailing


def parse_candidate(text: str) -> ParsedCandidate:
    """Read a sampling reply: ``Pattern: <p>`` and ``Summary: <hallucinated summary>``.

    ``problem`` is "" for a usable reply, otherwise one of QA's codes: "empty_reply",
    "refusal", "no_answer_label", "empty_answer", "placeholder_answer". Equality with the
    right summary is the engine's check, length and form are ``check_candidate``'s.
    """
    return read_candidate(
        text,
        value_labels=_SUMMARY_LABELS,
        pattern_labels=_PATTERN_LABELS,
        stop_labels=_STOP_LABELS,
        clean=_clean_summary,
        pattern_of=_pattern_of,
    )


def filter_values(fields: Mapping[str, str], answers: Sequence[str]) -> dict[str, str]:
    """Values for ``prompts/summarization/filter.txt``: the document and numbered summaries.

    The right summary is left out on purpose: the judge must never see it. Each summary is
    kept on one line so that ``Summary <n>:`` always starts a line.
    """
    lines = [f"Summary {i}: {' '.join(a.split())}" for i, a in enumerate(answers, 1)]
    return {"document": fields["document"], "answers": "\n".join(lines)}


_CANDIDATE_WORD = re.compile(r"\bsummary\b", re.IGNORECASE)


def _as_answer(text: str) -> str:
    return _CANDIDATE_WORD.sub("answer", text)


def parse_choice(text: str, answers: Sequence[str]) -> int | None:
    """Which summary (1-based) the judge picked, or None when the reply does not say clearly.

    QA's reader (``qa.parse_choice``: every ``Choice:`` line must agree, number words, a
    bare number, the exact text of one candidate) with "summary" read as "answer", in the
    reply and in the candidates alike, so "Choice: the second summary" and a bare
    "Summary 2" count too.
    """
    return qa.parse_choice(_as_answer(text or ""), [_as_answer(a) for a in answers])


def check_candidate(fields: Mapping[str, str], summary: str) -> str:
    """Reject summaries whose form alone gives them away; "" when the form is fine.

    "too_long" when the summary has more than ``MAX_LENGTH_RATIO`` times the right summary's
    characters, "too_short" when it has fewer than ``MIN_LENGTH_RATIO`` times, "meta_talk"
    when it talks about the task (hallucination, "the given document", ...). Runs of
    whitespace count as one space on both sides, so a reference's trailing newline (one of
    HaluEval's form leaks) does not shift the bounds.
    """
    summary = " ".join(summary.split())
    right = len(" ".join(fields.get("right_summary", "").split()))
    if right:
        if len(summary) > MAX_LENGTH_RATIO * right:
            return "too_long"
        if len(summary) < MIN_LENGTH_RATIO * right:
            return "too_short"
    if _META.search(summary):
        return "meta_talk"
    return ""


SUMMARIZATION = TaskSpec(
    name="summarization",
    seed_fields=("document", "right_summary"),
    right_field="right_summary",
    hallucinated_field="hallucinated_summary",
    patterns=PATTERNS,
    sample_templates=("sample_onepass", "sample_conversation"),
    filter_template="filter",
    parse_candidate=parse_candidate,
    filter_values=filter_values,
    parse_choice=parse_choice,
    check_candidate=check_candidate,
    long_field="document",
)
