"""How the labelled value of a sampling reply becomes a candidate's text, per kind of text.

A task declares one of these as its ``shape`` (``[reply] shape`` in its ``task.toml``, by
the names of ``SHAPES``): ``one_line`` for short answers, ``turn`` for
a dialogue turn (speaker tags are the layout's, a later tag ends the turn), ``lines`` for a
summary that may come as highlight lines or bullets. Each returns (text, the trailing
"(pattern: x)" remark it cut off or ""); the remark's regex comes from the task.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .replies import PARAGRAPH_BREAK, split_trailing, unquote

__all__ = ["SHAPES", "lines", "one_line", "turn"]


def one_line(value: str, trailing: re.Pattern[str]) -> tuple[str, str]:
    """The first paragraph as one line, markdown and wrapping quotes dropped."""
    value = value.strip()
    # Text after a blank line is commentary ("This is wrong because ..."), not the answer.
    value = PARAGRAPH_BREAK.split(value, maxsplit=1)[0]
    value = " ".join(value.split())
    value = value.strip("*_").strip()
    value, remark = split_trailing(value, trailing)
    return unquote(value.strip("*_").strip()), remark


# "[Assistant]: ..." / "Assistant: ..." before the turn: the dialogue's layout, not the reply.
_LEADING_SPEAKER = re.compile(r"^\[?\s*(?:assistant|ai|bot)\s*\]?\s*:\s*", re.IGNORECASE)
# A speaker tag inside the response means the model went on writing the dialogue; the
# assistant's turn ends there.
_LATER_TURN = re.compile(r"\s*\[\s*(?:human|user|assistant)\s*\]\s*:.*$", re.IGNORECASE)


def turn(value: str, trailing: re.Pattern[str]) -> tuple[str, str]:
    """One dialogue turn: the first paragraph, without speaker tags or later turns."""
    value = PARAGRAPH_BREAK.split(value.strip(), maxsplit=1)[0]
    value = unquote(" ".join(value.split()).strip("*_").strip())
    value = _LEADING_SPEAKER.sub("", value)
    value = _LATER_TURN.sub("", value)
    value, remark = split_trailing(value, trailing)
    return unquote(value.strip("*_").strip()), remark


_BULLET = re.compile(r"^\s*(?:[-*•–]|\d{1,2}[.)])\s+")
_SENTENCE_END = re.compile(r"[.!?]['\"”’)]*$")


def _is_bullets(paragraph: str) -> bool:
    found = [line for line in paragraph.splitlines() if line.strip()]
    return bool(found) and all(_BULLET.match(line) for line in found)


def _join_lines(paragraphs: Sequence[str], bullets: bool) -> str:
    """One line from the summary's lines: bullets dropped, each item ending as a sentence.

    Highlight-style items come one per line, often without a full stop; joined, they need
    one. A line that merely wraps a sentence (the next line does not start a new one) is
    joined as it is.
    """
    items = [
        _BULLET.sub("", line).strip().strip("*_").strip()
        for p in paragraphs
        for line in p.splitlines()
    ]
    items = [line for line in items if line]
    out = []
    for i, line in enumerate(items):
        last = i == len(items) - 1
        new_item = bullets or (not last and items[i + 1][:1].isupper())
        if len(items) > 1 and new_item and not _SENTENCE_END.search(line):
            line += "."
        out.append(line)
    return " ".join(" ".join(out).split())


def lines(value: str, trailing: re.Pattern[str]) -> tuple[str, str]:
    """A summary: its lines or bullets joined into one line of sentences."""
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
    summary, remark = split_trailing(summary, trailing)
    return unquote(summary.strip("*_").strip()), remark


# The shapes a task.toml may name.
SHAPES = {"one_line": one_line, "turn": turn, "lines": lines}
