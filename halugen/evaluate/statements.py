"""What a short piece of a judge's reply says about "does it contain hallucination?".

``polarity(text)`` reads a statement the way a careful person does: "yes" (hallucinated),
"no" (not hallucinated), "invalid" (it commits to both sides, or declines to answer) or
None (it says nothing either way, so the caller may look elsewhere).

Three kinds of evidence, all of which must agree:

* a Yes/No word opening the statement ("Yes.", "**No**", "'No'", "Nope", "I'd say yes",
  "My verdict is No"), where "No" followed by a noun of not-answering ("No idea", "No
  comment", "No way to tell") is a non-answer, and "No" before any other noun is a
  determiner that still answers ("No hallucination", "No errors");
* a later Yes/No that ends a clause ("No, wait — Yes."), which contradicts an opening
  word of the other kind; a Yes/No inside a clause ("there is no doubt") does not;
* descriptions of the judged text ("the answer is hallucinated", "the response does not
  contain any hallucination", "the summary is correct", "Not hallucinated.",
  "Incorrect."), negations read first so "is not correct" is not read as "is correct".

Uncertainty ("I cannot determine", "not sure", "it is impossible to say") makes a
statement invalid unless a verdict word opens it in a clause of its own.
"""

from __future__ import annotations

import re

__all__ = ["describes", "opens_with_word", "polarity", "uncertain"]

YES_WORDS = ("yes", "yeah", "yep", "yup")
NO_WORDS = ("no", "nope", "nah")
_OPPOSITE = {"yes": "no", "no": "yes"}

# Markdown, quotes, brackets and list marks a model may put before its first word.
_LEAD_DECORATION = re.compile(r"^[\s>*_#`'\"“”‘’«»(\[{\-–—•.:]*")
# Phrases that introduce a verdict word: "I would say", "My final answer is", "Verdict is".
_INTRO = re.compile(
    r"^(?:(?:well|so|ok(?:ay)?|then|hence|thus|therefore|overall|in\s+short|in\s+summary)"
    r"[\s,:]+)?"
    r"(?:(?:i(?:\s+would|'d|’d|\s+will)\s+(?:say|answer|go\s+with)|i\s+say|i\s+think|i\s+believe"
    r"|i\s+answer)\s*[:,]?\s*"
    r"|(?:(?:my|the|our)\s+)?(?:final\s+|short\s+)?(?:answer|verdict|judge?ment|response|reply"
    r"|decision|conclusion|assessment)\s*(?:would\s+be|is|:|-|–|—)\s*"
    r"|(?:definitely|certainly|absolutely|clearly|obviously)[\s,]+)",
    re.IGNORECASE,
)
_WORD = re.compile(
    r"(yes|yeah|yep|yup|no|nope|nah|y|n)(?![^\W_]|-|['’][^\W_])",
    re.IGNORECASE,
)
# A bare "Y"/"N" counts only as the whole statement.
_SINGLE_LETTER = frozenset({"y", "n"})
# "No" + one of these is not an answer at all.
_NON_ANSWER_NOUNS = re.compile(
    r"\s+(?:idea|comment|clue|answer|opinion|way|one|verdict|judge?ment|response|reply"
    r"|decision|determination|conclusion|information|info|data|context|knowledge|basis"
    r"|means|access|certainty|definitive|time|can\s+do|thanks|problem\s+asking)\b",
    re.IGNORECASE,
)
# A later Yes/No that stands as an answer: it ends a clause.
_STANDALONE = re.compile(
    r"(?<![^\W_]|['’-])(yes|no)(?![^\W_]|-|['’][^\W_])(?=[\s*_`'\"”’)\]]*(?:[.,;:!?—–]|$))",
    re.IGNORECASE,
)
# Declining to judge.
_UNCERTAIN = re.compile(
    r"\b(?:i\s+(?:can\s*not|can't|can’t|cannot|am\s+unable\s+to|am\s+not\s+able\s+to|'m\s+unable"
    r"\s+to|’m\s+unable\s+to)\s+(?:tell|say|determine|verify|know|judge|decide|be\s+(?:sure"
    r"|certain)|answer|assess)"
    r"|(?:i\s+am|i'm|i’m)\s+(?:not\s+(?:sure|certain)|unsure|uncertain)"
    r"|(?:i\s+)?(?:do\s+not|don't|don’t)\s+know"
    r"|(?:it\s+is|it's|it’s)\s+(?:impossible|unclear|hard|difficult|not\s+possible)\s+to"
    r"\s+(?:tell|say|determine|know|judge|verify)"
    r"|cannot\s+be\s+(?:determined|verified|told)|can't\s+be\s+(?:determined|verified)"
    r"|not\s+enough\s+information|insufficient\s+(?:information|evidence|context)"
    r"|^(?:unsure|uncertain|unclear|unknown|maybe|possibly|perhaps|n/?a|not\s+sure)\b)",
    re.IGNORECASE,
)

# -- descriptions of the judged text ----------------------------------------------------------

_SUBJECT = (
    r"(?:\b(?:the|this|that)\s+(?:given\s+|provided\s+|shown\s+|above\s+|candidate\s+)?"
    r"(?:answer|response|reply|summary|statement|claim|output|text)|\bit|\bthis|\bthat)"
)
_BE = r"(?:\s+is|\s+was|'s|’s|\s+seems(?:\s+to\s+be)?|\s+appears(?:\s+to\s+be)?|\s+looks)"
_NOT = r"(?:\s+not|n't|n’t)"
_GOOD = (
    r"(?:fully\s+|entirely\s+|completely\s+|factually\s+|perfectly\s+)?"
    r"(?:correct|accurate|right|true|factual|faithful|consistent|supported|grounded|valid)\b"
)
_BAD = (
    r"(?:(?:factually\s+|partially\s+|partly\s+)?"
    r"(?:incorrect|wrong|false|inaccurate|fabricated|made[\s-]up|untrue|unsupported"
    r"|unfaithful|invented)|(?:only\s+)?(?:partially|partly|half)\s+(?:correct|right|true"
    r"|accurate))\b"
)
_HALLU = r"hallucinat\w*"
_HAVE = r"(?:contains?|has|have|includes?|shows?|exhibits?)"
_HAVE_BARE = r"(?:contain|have|include|show|exhibit)"

# Negative descriptions first: each match is blanked out before the positive ones are read.
_SAYS_NO = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"{_SUBJECT}{_BE}{_NOT}\s+(?:an?\s+)?{_HALLU}",
        rf"{_SUBJECT}\s+(?:does|did|do){_NOT}\s+{_HAVE_BARE}\s+(?:any\s+|an?\s+)?"
        rf"(?:\w+\s+)?{_HALLU}",
        rf"{_SUBJECT}\s+{_HAVE}\s+no\s+(?:\w+\s+)?{_HALLU}",
        rf"\b(?:there\s+is|there's|i\s+(?:see|find|found))\s+no\s+(?:\w+\s+)?{_HALLU}",
        rf"\bi\s+(?:do\s+not|don't|don’t|did\s+not|didn't|can\s*not|can't|cannot)\s+(?:see"
        rf"|find|spot|detect|notice)\s+(?:any\s+|an?\s+)?(?:\w+\s+)?{_HALLU}",
        rf"(?<![\w'’-])no\s+(?:\w+\s+)?{_HALLU}",
        rf"\bnot\s+(?:an?\s+)?{_HALLU}",
        rf"\b(?:free\s+(?:of|from)|without\s+(?:any\s+)?)(?:\w+\s+)?{_HALLU}",
        rf"{_SUBJECT}{_BE}\s+{_GOOD}",
        rf"\bnone\s+of\s+(?:it|them|this|that|the\s+\w+)\s+(?:is|are|was|were|seems)\s+"
        rf"(?:\w+\s+)?(?:{_BAD}|{_HALLU})",
        r"^(?:not\s+really|not\s+at\s+all|absolutely\s+not|certainly\s+not|definitely\s+not"
        r"|of\s+course\s+not)\b",
        rf"{_SUBJECT}{_BE}{_NOT}\s+(?:\w+\s+)?{_BAD}",
        r"^(?:correct|accurate|factual|faithful)\b",
    )
)
_SAYS_YES = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"{_SUBJECT}{_BE}\s+(?:an?\s+)?(?:clear\s+|obvious\s+)?{_HALLU}",
        rf"{_SUBJECT}\s+{_HAVE}\s+(?:an?\s+|some\s+|clear\s+)?(?:\w+\s+)?{_HALLU}",
        rf"\b{_HALLU}\s+(?:is\s+|was\s+)?(?:detected|found|present)\b",
        rf"\b(?:there\s+is|there's|i\s+(?:see|find|found))\s+(?:an?\s+|some\s+)?(?:\w+\s+)?"
        rf"{_HALLU}",
        rf"{_SUBJECT}{_BE}\s+{_BAD}",
        rf"{_SUBJECT}{_BE}{_NOT}\s+(?:\w+\s+)?{_GOOD}",
        rf"^(?:{_HALLU}|contains\s+(?:an?\s+)?{_HALLU}|incorrect|wrong|inaccurate)\b",
    )
)
_CONDITIONAL = re.compile(r"\b(?:whether|if|unless)\s+$", re.IGNORECASE)


def describes(text: str) -> set[str]:
    """The polarities ("yes"/"no") the descriptions in ``text`` state; empty: none."""
    found: set[str] = set()
    low = text
    for polarity_, patterns in (("no", _SAYS_NO), ("yes", _SAYS_YES)):
        for pattern in patterns:
            for m in pattern.finditer(low):
                if _CONDITIONAL.search(low[max(0, m.start() - 12) : m.start()]):
                    continue  # "whether the answer is correct" states nothing
                found.add(polarity_)
                low = low[: m.start()] + " " * (m.end() - m.start()) + low[m.end() :]
    return found


def uncertain(text: str) -> bool:
    return _UNCERTAIN.search(text) is not None


def _strip_lead(text: str) -> str:
    text = _LEAD_DECORATION.sub("", text)
    for _ in range(2):  # "So, I'd say: yes", "Well, my answer is no"
        m = _INTRO.match(text)
        if not m:
            break
        text = _LEAD_DECORATION.sub("", text[m.end() :])
    return text


def opens_with_word(text: str) -> bool:
    """Does ``text`` open with a Yes/No word (after decoration and "I'd say" phrases)?"""
    return _WORD.match(_strip_lead(text.strip())) is not None


def _first_clause(text: str) -> str:
    m = re.search(r"[.;!?\n]|,\s", text)
    return text[: m.start()] if m else text


def polarity(text: str) -> str | None:
    """ "yes" | "no" | "invalid" for a statement, or None when it states neither."""
    text = text.strip()
    if not text:
        return None
    body = _strip_lead(text)
    m = _WORD.match(body)
    word = None
    if m:
        word = m.group(1).lower()
        rest = body[m.end() :]
        if word in _SINGLE_LETTER and rest.strip(" \t*_`'\".!"):
            word = None  # "N Korea", "Y chromosome": not a verdict
    if word is not None:
        word = "yes" if word in (*YES_WORDS, "y") else "no"
        if word == "no" and _NON_ANSWER_NOUNS.match(rest):
            return "invalid"  # "No idea", "No comment"
        if uncertain(_first_clause(rest.lstrip(" ,.;:!—–-"))):
            return "invalid"  # "No, I cannot determine that"
        if any(w.lower() != word for w in _STANDALONE.findall(rest)):
            return "invalid"  # "No, wait — Yes."
        # "No hallucination" reads as No; "No, the answer contains a hallucination" is torn.
        if _OPPOSITE[word] in describes(body[m.start() :] if word == "no" else rest):
            return "invalid"
        return word
    if uncertain(text):
        return "invalid"
    said = describes(_LEAD_DECORATION.sub("", text))
    if len(said) > 1:
        return "invalid"
    return said.pop() if said else None
