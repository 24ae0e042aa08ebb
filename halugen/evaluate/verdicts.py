"""Reading a recognition judge's reply: Yes / No / invalid, which of two, or P(Yes).

HaluEval looked for the substrings "Yes" and "No" anywhere in the reply, so "Not", "None",
"Note" and "I don't know" counted as No, and a reply with both words went to whichever the
code tested first. Here a verdict must be stated as one: the last ``Verdict:`` line (chain
of thought ends with one), else a Yes/No word opening the reply. Anything ambiguous is
"invalid", which the metrics count and report instead of guessing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["parse_contrast", "parse_verdict", "verdict_from_logprobs"]

# Markdown and punctuation a model may put before or around its first word.
_LEAD = r"\s>*_#`'\"“‘(\[{\-"
# A label line: "Verdict: ...", "**Final verdict:** ...", "# Verdict - ..." not (colon needed).
_VERDICT_LINE = re.compile(
    rf"^[{_LEAD}]*(?:final\s+)?verdict[\s*_#`]*:(.*)$", re.IGNORECASE | re.MULTILINE
)
_CONTRAST_LINE = re.compile(
    rf"^[{_LEAD}]*(?:final\s+)?hallucinated[\s*_#`]*:(.*)$", re.IGNORECASE | re.MULTILINE
)
# Yes/No as a whole word: "Note", "None", "Not", "know", "nope", "No-one", "yes'" are not.
_WORD = r"(?<![\w'’-])(yes|no)(?![\w'’-])"
_LEADING = re.compile(rf"^[{_LEAD}\s]*{_WORD}", re.IGNORECASE)
# A later Yes/No counts as a second verdict when it ends a clause ("No, wait — Yes.",
# "Actually, no."), not when it is a determiner inside one ("there is no support").
_STANDALONE = re.compile(rf"{_WORD}(?=[\s*_`'\"”’)\]]*(?:[.,;:!?—–]|$))", re.IGNORECASE)


def _classify(value: str) -> str:
    """The verdict a value states: its leading Yes/No, unless it also states the other."""
    m = _LEADING.match(value)
    if not m:
        return "invalid"
    word = m.group(1).lower()
    rest = value[m.end() :]
    if any(w.lower() != word for w in _STANDALONE.findall(rest)):
        return "invalid"
    return word


def _line_value(text: str, m: re.Match[str]) -> str:
    """A label's value; when the label line is bare ("Verdict:"), the next non-empty line."""
    value = m.group(1).strip()
    if value.strip("*_` "):
        return value
    for line in text[m.end() :].splitlines():
        if line.strip():
            return line.strip()
    return ""


def parse_verdict(text: str) -> str:
    """ "yes" | "no" | "invalid" for a judge reply.

    Rules, in order: the last ``Verdict:`` line decides when there is one; else the reply
    must open with Yes or No (markdown and punctuation before it are fine). Either way the
    verdict is invalid when the other word also stands as an answer ("No, wait — Yes."),
    and a reply without either word ("Not hallucinated", "None", "Note: yes") is invalid.
    """
    if not text or not text.strip():
        return "invalid"
    lines = list(_VERDICT_LINE.finditer(text))
    if lines:
        return _classify(_line_value(text, lines[-1]))
    return _classify(text.strip())


_NUMBER = re.compile(
    r"(?<![\w.])(?:(?:answer|response|summary|candidate|option)\s*)?#?\s*([12])(?!\w)(?!\.\d)",
    re.IGNORECASE,
)
_BARE_PICK = re.compile(
    r"^[\s>*_#`'\"(\[]*(?:(?:answer|response|summary|candidate|option)\s*)?#?\s*([12])"
    r"[\s*_`'\")\].:!]*$",
    re.IGNORECASE,
)


def parse_contrast(text: str) -> int | None:
    """1 | 2 | None: which of two shown texts a contrast judge says is hallucinated.

    The last ``Hallucinated:`` line decides and must name exactly one of 1 and 2 ("2",
    "Answer 2", "**Response 1**", "2 — the date is wrong"); without that line, the reply
    must be just the pick ("2", "Summary 1."). "1 or 2", "both", "neither" are None.
    """
    if not text or not text.strip():
        return None
    lines = list(_CONTRAST_LINE.finditer(text))
    if lines:
        picks = {int(n) for n in _NUMBER.findall(_line_value(text, lines[-1]))}
        return picks.pop() if len(picks) == 1 else None
    m = _BARE_PICK.match(text.strip())
    return int(m.group(1)) if m else None


# -- scoring by token probabilities ---------------------------------------------------------

_AFTER_VERDICT = re.compile(r"verdict[\s*_#`]*:[\s*_`]*$", re.IGNORECASE)
_DECORATION = " \t\r\n*_#`'\".:"


def _get(obj: Any, name: str) -> Any:
    """Field of a provider dict or of an SDK object (the OpenAI client returns objects)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _word(token: Any) -> str:
    return str(token or "").strip(_DECORATION).lower()


def _entries(logprobs: Any) -> Sequence[Any]:
    """The per-token entries of a choice's logprobs (``{"content": [...]}`` or the list)."""
    if logprobs is None:
        return ()
    if isinstance(logprobs, Sequence) and not isinstance(logprobs, str | bytes):
        return logprobs
    return _get(logprobs, "content") or ()


def _verdict_entry(entries: Sequence[Any]) -> Any | None:
    """The token holding the verdict: the first word after the last "Verdict:", else the
    first Yes/No token."""
    text = ""
    after: int | None = None
    for i, entry in enumerate(entries):
        token = str(_get(entry, "token") or "")
        # only the tail can end in "Verdict:"; keeps a long chain of thought linear
        if token.strip(_DECORATION) and _AFTER_VERDICT.search(text[-64:]):
            after = i
        text += token
    if after is not None:
        return entries[after]
    for entry in entries:
        if _word(_get(entry, "token")) in ("yes", "no"):
            return entry
    return None


def verdict_from_logprobs(logprobs: Any) -> tuple[str, float | None]:
    """("yes"|"no"|"invalid", P(Yes) normalised over Yes and No) from a choice's logprobs.

    The probability mass of every alternative at the verdict position that reads as Yes
    ("Yes", " yes", "YES") is set against that of No. Without a verdict token, or without
    any Yes/No mass at it, the result is ("invalid", None). An exact tie is invalid.
    """
    entries = _entries(logprobs)
    entry = _verdict_entry(entries) if entries else None
    if entry is None:
        return "invalid", None
    alternatives: dict[str, float] = {}
    for alt in [entry, *(_get(entry, "top_logprobs") or ())]:
        token, lp = _get(alt, "token"), _get(alt, "logprob")
        if token is None or lp is None:
            continue
        alternatives.setdefault(str(token), float(lp))  # an alternative listed twice counts once
    mass = {"yes": 0.0, "no": 0.0}
    for token, lp in alternatives.items():
        word = _word(token)
        if word in mass and lp > -math.inf:
            mass[word] += math.exp(lp)
    total = mass["yes"] + mass["no"]
    if total <= 0.0:
        return "invalid", None
    p_yes = mass["yes"] / total
    if p_yes > 0.5:
        return "yes", p_yes
    if p_yes < 0.5:
        return "no", p_yes
    return "invalid", p_yes
