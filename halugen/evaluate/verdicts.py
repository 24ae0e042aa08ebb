"""Reading a recognition judge's reply: Yes / No / invalid, which of two, or P(Yes).

HaluEval looked for the substrings "Yes" and "No" anywhere in the reply, so "Not", "None",
"Note" and "I don't know" counted as No, and a reply with both words went to whichever the
code tested first. Here a reply is read the way a careful person reads it:

1. what no reader weighs goes first (``llm.replies.visible_text``): a BOM, zero-width
   characters, a reasoning model's ``<think>…</think>``;
2. a structured reply (``{"verdict": "Yes"}``, also when asked for text) is read by its key;
3. a labelled line decides: the last of ``Verdict:``, ``Judgement:``, HaluEval's own
   ``#Your Judgement#:``, ``Final answer:``, ``Conclusion:`` ...; or ``Hallucination:`` /
   ``Hallucinated:`` ("Hallucinated: No" is No), or ``Correct:`` with the meaning turned
   round; ``Answer:`` counts only when none of those is there (the record's own
   ``Answer:`` line may be echoed);
4. else a verdict stated in a sentence ("My final verdict is No") or opening the reply
   ("**Yes**", "'No'", "Nope.", "I'd say yes"), or a description of the judged text ("The
   answer is hallucinated", "Not hallucinated.", "The response is correct");

(``statements.polarity`` reads one value). A reply that commits to both sides ("No, wait —
Yes."), declines ("No idea", "No comment", "I cannot determine this") or says neither is
"invalid", which the metrics count and report instead of guessing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..llm.replies import json_object, visible_text
from .statements import opens_with_word, polarity

__all__ = ["parse_contrast", "parse_verdict", "verdict_from_logprobs"]

# label -> how its value is read: "verdict" (Yes = hallucinated), "hallucination" (the same,
# and "None"/"present"/"true" make sense), "inverse" (Yes = correct = not hallucinated),
# "answer" (the weakest: the record has an "Answer:" line too).
_LABELS: dict[str, str] = {
    "verdict": "verdict",
    "final verdict": "verdict",
    "your verdict": "verdict",
    "judgement": "verdict",
    "judgment": "verdict",
    "your judgement": "verdict",
    "your judgment": "verdict",
    "final judgement": "verdict",
    "final judgment": "verdict",
    "final answer": "verdict",
    "short answer": "verdict",
    "conclusion": "verdict",
    "decision": "verdict",
    "assessment": "verdict",
    "result": "verdict",
    "label": "verdict",
    "output": "verdict",
    "hallucination": "hallucination",
    "hallucinations": "hallucination",
    "hallucinated": "hallucination",
    "is hallucinated": "hallucination",
    "contains hallucination": "hallucination",
    "hallucination detected": "hallucination",
    "hallucination present": "hallucination",
    "correct": "inverse",
    "is correct": "inverse",
    "factual": "inverse",
    "faithful": "inverse",
    "accurate": "inverse",
    "answer": "answer",
    "my answer": "answer",
    "response": "answer",
    "reply": "answer",
}
_LABEL_ALT = "|".join(
    re.escape(k).replace(r"\ ", r"\s+") for k in sorted(_LABELS, key=len, reverse=True)
)
_DECOR = r"[ \t>*_#`\-•]*"
# "Verdict: Yes", "**Verdict:** Yes", "#Your Judgement#: Yes", "Verdict (Yes/No): No",
# "Verdict - Yes", "Verdict = No".
_LABEL_LINE = re.compile(
    rf"^{_DECOR}#?\s*(?P<label>{_LABEL_ALT})\s*#?[ \t*_`]*(?:\([^)\n]{{0,20}}\))?[ \t*_`]*"
    r"(?:[:=]|[-–—](?=\s))(?P<value>.*)$",
    re.IGNORECASE | re.MULTILINE,
)
# A heading line holding only the label ("## Verdict", "**Final answer**"): the value is on
# the next non-empty line.
_LABEL_HEADING = re.compile(
    rf"^{_DECOR}#?\s*(?P<label>{_LABEL_ALT})\s*#?[ \t*_`]*$", re.IGNORECASE | re.MULTILINE
)
# A verdict stated inside a sentence: "..., so my final verdict is: No".
_INLINE = re.compile(
    r"\b(?:verdict|judge?ment|final\s+answer|conclusion|answer)\s*(?:is|would\s+be)?\s*[:\-]?\s*"
    r"[*_`'\"“‘\s]*(?P<word>yes|no)(?![\w'’-])",
    re.IGNORECASE,
)
# A reasoning that ends on its verdict: "... the year is wrong, so yes."
_CLOSING = re.compile(
    r"\b(?:so|thus|therefore|hence)\s*,?\s*(?P<word>yes|no)[\s*_`'\".!]*$", re.IGNORECASE
)
_ECHO = re.compile(
    r"^[ \t*_#>-]*(?:question|answer|knowledge|response|dialogue\s+history|document|summary"
    r"|user\s+query)[ \t*_#]*:.*$",
    re.IGNORECASE | re.MULTILINE,
)
_TRUE_FALSE = {"true": "yes", "false": "no"}
_PRESENCE = re.compile(
    r"^[\s*_`'\"]*(?:(?P<yes>present|detected|found)|(?P<no>none|absent|not\s+(?:present"
    r"|detected|found)|n/?a))\b",
    re.IGNORECASE,
)


def _value_of(text: str, m: re.Match[str], heading: bool) -> str:
    """A label's value; for a bare label line, the next non-empty line."""
    value = "" if heading else m.group("value").strip()
    if value.strip("*_` "):
        return value
    for line in text[m.end() :].splitlines():
        if line.strip():
            return line.strip()
    return ""


def _word_of(value: str) -> str | None:
    m = re.match(r"^[\s*_`'\"“‘(\[]*(\w+)", value)
    return m.group(1).lower() if m else None


def _read_value(value: str, kind: str) -> str | None:
    """The verdict a label's value gives under the label's ``kind``; None: none."""
    word = _word_of(value)
    if kind in ("hallucination", "inverse") and word in _TRUE_FALSE:
        said = _TRUE_FALSE[word]
    elif kind == "hallucination" and _PRESENCE.match(value):
        said = "yes" if _PRESENCE.match(value).group("yes") else "no"  # type: ignore[union-attr]
    elif kind == "inverse":
        said = polarity(value) if word in ("yes", "no") else None
        if said in ("yes", "no"):
            said = "no" if said == "yes" else "yes"
        return said
    else:
        said = polarity(value)
    return said


def _labelled(text: str) -> str | None:
    """The verdict of the reply's labelled lines, or None when it has none that count."""
    found: list[tuple[int, str, str]] = []  # (position, kind, value)
    for pattern, heading in ((_LABEL_LINE, False), (_LABEL_HEADING, True)):
        for m in pattern.finditer(text):
            label = " ".join(m.group("label").lower().split())
            found.append((m.start(), _LABELS[label], _value_of(text, m, heading)))
    if not found:
        return None
    found.sort()
    strong = [f for f in found if f[1] != "answer"]
    for group in (strong, found):
        if not group:
            continue
        said = _read_value(group[-1][2], group[-1][1])
        if said is not None:
            return said
        if group is strong:
            return "invalid"  # "Verdict: maybe": the verdict line says nothing usable
    return None


def _from_json(obj: Mapping[str, Any]) -> str | None:
    said: set[str] = set()
    for key, value in obj.items():
        kind = _LABELS.get(" ".join(str(key).lower().replace("_", " ").split()))
        if kind is None:
            continue
        if isinstance(value, bool):
            verdict = "yes" if value != (kind == "inverse") else "no"
        elif isinstance(value, str):
            verdict = _read_value(value, kind) or "invalid"
        else:
            verdict = "invalid"
        said.add(verdict)
    if not said:
        return None
    return said.pop() if len(said) == 1 else "invalid"


def parse_verdict(text: str | None) -> str:
    """ "yes" | "no" | "invalid" for a judge reply (the module docstring gives the rules)."""
    text = visible_text(text)
    if not text:
        return "invalid"
    obj = json_object(text)
    if obj is not None:
        return _from_json(obj) or "invalid"
    said = _labelled(text)
    if said is not None:
        return said
    text = _ECHO.sub("", text).strip()  # the record's lines, echoed before the verdict
    opening = polarity(text)
    if opening is not None and opens_with_word(text):
        return opening
    inline = list(_INLINE.finditer(text))
    if inline:
        return inline[-1].group("word").lower()
    closing = _CLOSING.search(text)
    if closing:  # "..., so yes." after reasoning that says nothing by itself
        return closing.group("word").lower()
    return opening or "invalid"


# -- contrast: which of two is hallucinated ----------------------------------------------------

_PICK_LABELS = (
    r"(?:final\s+)?hallucinated(?:\s+(?:answer|response|summary|one|text))?|hallucination"
    r"|final\s+answer|verdict|choice|your\s+choice|answer|pick"
)
_CONTRAST_LINE = re.compile(
    rf"^{_DECOR}#?\s*(?:{_PICK_LABELS})\s*#?[ \t*_`]*(?:[:=]|[-–—](?=\s))(?P<value>.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_CONTRAST_STRONG = re.compile(r"hallucinat", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?<![\w.])(?:(?:answer|response|summary|candidate|option|text)\s*)?#?\s*([12])(?!\w)(?!\.\d)",
    re.IGNORECASE,
)
_BARE_PICK = re.compile(
    r"^[\s>*_#`'\"(\[]*(?:(?:answer|response|summary|candidate|option|text)\s*)?#?\s*([12])"
    r"[\s*_`'\")\].:!]*$",
    re.IGNORECASE,
)
_NAMED = r"(?:answer|response|summary|candidate|option|text)\s*#?\s*([12])(?!\w)"
# "Answer 2 is hallucinated", "Response 1 contains a hallucination", "Summary 2 is wrong".
_NAMED_BAD = re.compile(
    rf"{_NAMED}[\s*_`'\"]*(?:is|was|'s|contains?|has)\s+(?:the\s+)?(?:an?\s+)?"
    r"(?:hallucinat\w*|one\s+(?:that|which)\s+(?:is\s+)?hallucinat\w*|incorrect|wrong|false"
    r"|fabricated|inaccurate)",
    re.IGNORECASE,
)
# "Answer 1 is correct", "Response 2 is fine".
_NAMED_GOOD = re.compile(
    rf"{_NAMED}[\s*_`'\"]*(?:is|was|'s)\s+(?:the\s+)?(?:correct|right|accurate|fine|faithful"
    r"|true|factual)(?:\s+one)?\b",
    re.IGNORECASE,
)


def _picks(value: str) -> set[int]:
    return {int(n) for n in _NUMBER.findall(value)}


def parse_contrast(text: str | None) -> int | None:
    """1 | 2 | None: which of two shown texts a contrast judge says is hallucinated.

    After the cleaning every reply gets (``visible_text``): a JSON reply's
    ``hallucinated`` (or ``choice``/``answer``) key; else the last labelled line
    (``Hallucinated:``, ``Hallucinated answer:``, ``Final answer:``, ``Choice:``...; a
    ``Hallucinated:`` line wins over the others) must name exactly one of 1 and 2 ("2",
    "Answer 2", "**Response 1**", "2 — the date is wrong"); else a bare pick ("2",
    "Summary 1.") or sentences that name the hallucinated one ("Answer 2 is hallucinated",
    "Response 1 is correct" = 2), which must all point the same way. "1 or 2", "both",
    "neither" are None.
    """
    text = visible_text(text)
    if not text:
        return None
    obj = json_object(text)
    if obj is not None:
        picks = set()
        for key, value in obj.items():
            if re.fullmatch(r"hallucinated(_\w+)?|choice|answer|pick", str(key).lower()):
                if isinstance(value, int) and not isinstance(value, bool):
                    picks.add(value)
                elif isinstance(value, str):
                    picks |= _picks(value)
        picks &= {1, 2}
        return picks.pop() if len(picks) == 1 else None
    lines = list(_CONTRAST_LINE.finditer(text))
    if lines:
        strong = [m for m in lines if _CONTRAST_STRONG.search(m.group(0).split(":")[0])]
        m = (strong or lines)[-1]
        value = _value_of(text, m, heading=False)
        picks = _picks(value)
        if len(picks) == 1 and picks <= {1, 2}:
            return picks.pop()
        if strong:
            return None
    m = _BARE_PICK.match(text)
    if m:
        return int(m.group(1))
    named = {int(n) for n in _NAMED_BAD.findall(text)}
    named |= {3 - int(n) for n in _NAMED_GOOD.findall(text)}
    return named.pop() if len(named) == 1 else None


# -- scoring by token probabilities ---------------------------------------------------------

# "Verdict:", "#Your Judgement#:", and JSON's '"verdict": "' just before the verdict token.
_AFTER_VERDICT = re.compile(r"(?:verdict|judge?ment)[\s*_#`'\"]*:[\s*_`'\"]*$", re.IGNORECASE)
_THINK_END = re.compile(r"</think>|</thinking>|</reasoning>", re.IGNORECASE)
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
    # without a label: the first Yes/No after the reasoning block, if there is one
    start, text = 0, ""
    for i, entry in enumerate(entries):
        text += str(_get(entry, "token") or "")
        if _THINK_END.search(text[-24:]):
            start, text = i + 1, ""
    for entry in entries[start:]:
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
