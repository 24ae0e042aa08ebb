"""The lenient reader of a recognition judge's reply: Yes / No / invalid, which of two, or
P(Yes) from token probabilities: ``logprob_verdicts``.

``eval`` reads strictly by default (``readers``: the reply contract's line only); this
interpreting reader is the opt-in ``eval --read lenient``, for replies to prompts that do not
ask for the contract.

HaluEval looked for the substrings "Yes" and "No" anywhere in the reply, so "Not", "None",
"Note" and "I don't know" counted as No, and a reply with both words went to whichever the
code tested first. Here a reply is read the way a careful person reads it, and what cannot
be read with confidence is "invalid", never a guess:

1. what no reader weighs goes first (``reply_text.visible_text``): a BOM, zero-width
   characters, a reasoning model's ``<think>…</think>``; then pictographs (✅ ❌: the words
   decide);
2. a structured reply (``{"verdict": "Yes"}``, ``{"is_hallucinated": true}``, also when
   asked for text, also a one-object array) is read by its keys (``label_kind``);
3. other answer shapes become label lines (``reply_text.labelled_lines``): ``\boxed{No}``
   is "Final answer: No", ``<verdict>No</verdict>`` and a markdown table with a
   "Verdict"/"Hallucinated?" column or row are "Verdict: No";
4. a labelled line decides: the last of ``Verdict:``, ``Judgement:``, HaluEval's own
   ``#Your Judgement#:``, ``Final answer:``, ``Conclusion:``, ``结论:`` ...; or
   ``Hallucination:`` / ``Is hallucinated:`` ("Hallucinated: No" is No), or ``Correct:`` /
   ``Faithful:`` with the meaning turned round;
5. a question echoed before its answer is read from the answer, in the question's sense:
   "Hallucinated? No." is No, "Is the answer correct? No." is Yes;
6. ``Answer:`` lines (the record's own ``Answer:`` line may be echoed, so they count only
   now);
7. else a verdict stated in a sentence ("My final verdict is No") or opening the reply
   ("**Yes**", "Nope.", "I'd say yes", "否"), a concluding sentence ("Therefore, the answer
   is hallucinated."), or a description of the judged text ("The answer is hallucinated",
   "I don't think the answer is hallucinated", "The response is correct");

(``statements.polarity`` reads one statement, with the negations and hedges that govern
it). A reply that commits to both sides ("No, wait — Yes."), declines ("No idea", "I
cannot determine this"), hedges ("it might be hallucinated") or says neither is
"invalid", which the metrics count and report, and which ``eval`` asks again once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..reply_text import json_object, json_value, labelled_lines, visible_text, without_marks
from .statements import opens_with_word, polarity, word_polarity

__all__ = ["label_kind", "parse_contrast", "parse_verdict"]

# label -> how its value is read: "verdict" (Yes = hallucinated), "hallucination" (the same,
# and "None"/"present"/"true" make sense), "inverse" (Yes = correct = not hallucinated),
# "answer" (the weakest: the record has an "Answer:" line too).
_LABELS: dict[str, str] = {
    "verdict": "verdict",
    "final verdict": "verdict",
    "your verdict": "verdict",
    "overall verdict": "verdict",
    "judgement": "verdict",
    "judgment": "verdict",
    "your judgement": "verdict",
    "your judgment": "verdict",
    "final judgement": "verdict",
    "final judgment": "verdict",
    "final answer": "verdict",
    "short answer": "verdict",
    "conclusion": "verdict",
    "final conclusion": "verdict",
    "decision": "verdict",
    "final decision": "verdict",
    "assessment": "verdict",
    "final assessment": "verdict",
    "overall": "verdict",
    "overall assessment": "verdict",
    "result": "verdict",
    "final result": "verdict",
    "label": "verdict",
    "final label": "verdict",
    "output": "verdict",
    "prediction": "verdict",
    "classification": "verdict",
    "category": "verdict",
    "evaluation": "verdict",
    "结论": "verdict",
    "最终结论": "verdict",
    "判断": "verdict",
    "最终判断": "verdict",
    "判定": "verdict",
    "结果": "verdict",
    "最终答案": "verdict",
    "answer": "answer",
    "my answer": "answer",
    "response": "answer",
    "reply": "answer",
    "答案": "answer",
    "回答": "answer",
}
# Labels read by their words: anything naming hallucination (is_hallucinated,
# contains_hallucination, "Hallucination detected", "Hallucinated?"), or correctness.
_HALLUCINATION_LABEL = re.compile(
    r"(?:(?:is|has|have|contains?|any|answer|response|summary|the)\s+)*hallucinat\w*"
    r"(?:\s+(?:detected|present|status|found|flag|exists?|label))?"
)
_INVERSE_LABEL = re.compile(
    r"(?:(?:is|answer|response|summary|the|answer\s+is|response\s+is|summary\s+is)\s+)*"
    r"(?:correct|accurate|factual|faithful|supported|grounded|truthful|factually\s+correct"
    r"|hallucination\s+free)|accuracy|faithfulness|factuality|factual\s+accuracy|correctness"
)
_DECOR = r"[ \t>*_#`\-•]*"
# "Verdict: Yes", "**Verdict:** Yes", "#Your Judgement#: Yes", "Verdict (Yes/No): No",
# "Verdict - Yes", "Verdict = No", "结论：否"; the label's words are checked by label_kind.
_LABEL_LINE = re.compile(
    rf"^{_DECOR}#?\s*(?P<label>[^\W\d_][\w '’?/]{{0,40}}?)\s*#?[ \t*_`]*(?:\([^)\n]{{0,20}}\))?"
    r"[ \t*_`]*(?P<sep>[:=]|[-–—](?=\s))(?P<value>.*)$",
    re.MULTILINE,
)
# A heading line holding only the label ("## Verdict", "**Final answer**"): the value is on
# the next non-empty line.
_LABEL_HEADING = re.compile(
    rf"^{_DECOR}#?\s*(?P<label>[^\W\d_][\w '’?/]{{0,40}}?)\s*#?[ \t*_`]*$", re.MULTILINE
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
# A concluding sentence: "Therefore, the answer contains hallucination."
_CONCLUSION = re.compile(
    r"(?:^|[.!?。\n])[\s*_#>]*(?:therefore|thus|hence|so|consequently|as\s+a\s+result|overall"
    r"|in\s+conclusion|in\s+summary|in\s+short|to\s+conclude|to\s+sum\s+up|all\s+in\s+all"
    r"|in\s+the\s+end)\b[\s,:]*(?P<rest>[^\n.!?。]+[.!?。]?)",
    re.IGNORECASE,
)
_ECHO = re.compile(
    r"^[ \t*_#>-]*(?:question|answer|knowledge|response|dialogue\s+history|document|summary"
    r"|user\s+query)[ \t*_#]*:.*$",
    re.IGNORECASE | re.MULTILINE,
)
# A question opening the reply, answered after it: "Hallucinated? No.", "Q: ...?\nA: Yes".
_ECHOED_QUESTION = re.compile(
    r"^[\s>*_#`\-•]*(?:q(?:uestion)?\s*[:.)]\s*)?(?P<question>[^\n?]{2,200}\?)[ \t*_`]*"
    r"(?:\s*\n[\s>*_#`\-•]*(?:a(?:nswer)?\s*[:.)]\s*)?)?",
    re.IGNORECASE,
)
_ASKS_HALLUCINATED = re.compile(
    r"hallucinat|fabricat|made[\s-]up|invented|wrong|incorrect|false|inaccurate|unsupported"
    r"|errors?\b|幻觉|幻覚|환각",
    re.IGNORECASE,
)
_ASKS_CORRECT = re.compile(
    r"\b(?:correct|accurate|faithful|true|right|supported|factual|grounded|consistent)\b"
    r"|正确|准确|正しい|정확",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\bnot\b|n't|n’t|\bno\b|不|没", re.IGNORECASE)
_NOTHING_ANSWER = re.compile(r"^[\s*_`'\"]*(?:none|nothing|not\s+any|zero)\b", re.IGNORECASE)
_TRUE_FALSE = {"true": "yes", "false": "no"}
_PRESENCE = re.compile(
    r"^[\s*_`'\"]*(?:(?P<yes>present|detected|found)|(?P<no>none|absent|not\s+(?:present"
    r"|detected|found)|n/?a))\b",
    re.IGNORECASE,
)


def label_kind(label: str) -> str | None:
    """How a label's value is read ("verdict", "hallucination", "inverse", "answer"), or
    None when ``label`` is not one of a verdict (a JSON key, a line's label, a table's
    column, a tag: "is_hallucinated", "Final answer", "Hallucinated?", "verdict")."""
    name = " ".join(label.lower().replace("_", " ").replace("-", " ").strip(" ?*_`#").split())
    kind = _LABELS.get(name)
    if kind is not None:
        return kind
    if _INVERSE_LABEL.fullmatch(name):
        return "inverse"
    if _HALLUCINATION_LABEL.fullmatch(name):
        return "hallucination"
    return None


def _is_label(label: str) -> bool:
    return label_kind(label) is not None


def _value_of(text: str, m: re.Match[str], heading: bool) -> str | None:
    """A label's value; for a bare label line, the next non-empty line. None: a heading
    with nothing under it ("Hallucinated" alone is a statement, not a label)."""
    value = "" if heading else m.group("value").strip()
    if value.strip("*_` "):
        return value
    for line in text[m.end() :].splitlines():
        if line.strip():
            return line.strip()
    return None if heading else ""


def _word_of(value: str) -> str | None:
    m = re.match(r"^[\s*_`'\"“‘(\[]*(\w+)", value)
    return m.group(1).lower() if m else None


def _read_value(value: str, kind: str) -> str | None:
    """The verdict a label's value gives under the label's ``kind``; None: none."""
    value = value.replace("_", " ")
    word = _word_of(value)
    if kind in ("hallucination", "inverse") and word in _TRUE_FALSE:
        said: str | None = _TRUE_FALSE[word]
    elif kind == "hallucination" and (presence := _PRESENCE.match(value)):
        said = "yes" if presence.group("yes") else "no"
    else:
        # an answer word follows the label's sense; a description keeps its own
        said = polarity(value, inverse=kind == "inverse" and word_polarity(word or "") is not None)
        return said
    if kind == "inverse" and said in _TRUE_FALSE.values():
        said = "no" if said == "yes" else "yes"
    return said


@dataclass(frozen=True)
class _Line:
    at: int
    kind: str
    label: str
    value: str
    # the label states the verdict itself ("Hallucination detected: ...", "Correct — ..."),
    # not a bare field name ("Correct:")
    statement: bool = False


def _label_lines(text: str) -> list[_Line]:
    """Every verdict label line, in reply order."""
    found: list[_Line] = []
    for pattern, heading in ((_LABEL_LINE, False), (_LABEL_HEADING, True)):
        for m in pattern.finditer(text):
            kind = label_kind(m.group("label"))
            value = _value_of(text, m, heading) if kind is not None else None
            if kind is not None and value is not None:
                label = m.group("label")
                dash = not heading and m.group("sep") not in (":", "=")
                statement = dash or len(label.split()) > 1
                found.append(_Line(m.start(), kind, label, value, statement))
    return sorted(found, key=lambda line: line.at)


def _labelled(found: list[_Line], strong: bool) -> str | None:
    """The verdict of the strong label lines (``strong``) or of the ``Answer:`` lines; None
    when there are none that count."""
    group = [f for f in found if (f.kind != "answer") == strong]
    if not group:
        return None
    last = group[-1]
    said = _read_value(last.value, last.kind)
    if said is None and last.kind in ("hallucination", "inverse") and last.statement:
        # a label that states the verdict itself, followed by why: "Hallucination
        # detected: the answer invents an author", "Correct — it matches"
        said = polarity(last.label)
    if said is not None:
        return said
    if strong:
        return "invalid"  # "Verdict: maybe": the verdict line says nothing usable
    return None


def _echoed(text: str) -> tuple[str | None, str]:
    """(the verdict, the reply without the question) when the reply opens with a question
    about the judged text followed by its answer; (None, text) otherwise."""
    m = _ECHOED_QUESTION.match(text)
    if not m:
        return None, text
    question = m.group("question")
    rest = text[m.end() :].strip()
    direct = _ASKS_HALLUCINATED.search(question) is not None
    inverse = _ASKS_CORRECT.search(question) is not None
    if direct == inverse or _NEGATED.search(question) or not rest:
        return None, text  # "Is the answer not correct?": not read by its sense
    if direct and _NOTHING_ANSWER.match(rest):
        return "no", rest  # "Any hallucination? None."
    said = polarity(rest, inverse=inverse)
    return said, rest if said is not None else text


def _from_json(obj: Mapping[str, Any], default: str | None = None) -> str | None:
    said: set[str] = set()
    for key, value in obj.items():
        kind = label_kind(str(key))
        if kind is None and default is not None and str(key).lower() in ("value", "label"):
            kind = default  # {"verdict": {"value": "No", "confidence": "high"}}
        if kind is None:
            continue
        verdict: str | None
        if isinstance(value, bool):
            verdict = "yes" if value != (kind == "inverse") else "no"
        elif isinstance(value, str):
            verdict = _read_value(value, kind) or "invalid"
        elif isinstance(value, Mapping):
            verdict = _from_json(value, kind) or "invalid"
        else:
            verdict = "invalid"
        said.add(verdict)
    if not said:
        return None
    return said.pop() if len(said) == 1 else "invalid"


def parse_verdict(text: str | None) -> str:
    """ "yes" | "no" | "invalid" for a judge reply (the module docstring gives the rules)."""
    text = without_marks(visible_text(text)).strip()
    if not text:
        return "invalid"
    value = json_value(text)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]  # [{"verdict": "No"}]
    if isinstance(value, Mapping):
        return _from_json(value) or "invalid"
    if value is not None:
        return "invalid"  # a JSON array or scalar: no verdict keys
    text = labelled_lines(text, _is_label)
    found = _label_lines(text)
    said = _labelled(found, strong=True)
    if said is not None:
        return said
    said, text = _echoed(text)
    if said is not None:
        return said
    said = _labelled(found, strong=False)
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
    conclusions = list(_CONCLUSION.finditer(text))
    if conclusions:  # the last concluding sentence, when it says one thing
        concluded = polarity(conclusions[-1].group("rest"))
        if concluded in ("yes", "no"):
            return concluded
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
        line = (strong or lines)[-1]
        picks = _picks(_value_of(text, line, heading=False) or "")
        if len(picks) == 1 and picks <= {1, 2}:
            return picks.pop()
        if strong:
            return None
    bare = _BARE_PICK.match(text)
    if bare:
        return int(bare.group(1))
    named = {int(n) for n in _NAMED_BAD.findall(text)}
    named |= {3 - int(n) for n in _NAMED_GOOD.findall(text)}
    return named.pop() if len(named) == 1 else None
