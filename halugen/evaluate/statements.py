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

Uncertainty ("I cannot determine", "not sure", "it is impossible to say", "it may be
hallucinated") makes a statement invalid unless a verdict word opens it in a clause of its
own.

A clause governed by a negation or a hedge is read with it (``_GOVERNORS``): "I don't think
the answer is hallucinated" and "it is unlikely that ..." turn the clause round; "there is
no evidence that the answer is hallucinated" says No, but "no evidence that it is correct"
says nothing sure; "it is possible that ..." voids it; "I think ..." and "it is likely
that ..." keep it; "so" and "it" stand for the question ("I don't think so", "I doubt
it"). "Nothing in the answer is wrong", "none of the claims are unsupported" are No. A
question states nothing ("Does the answer contain hallucination?" is no description).

The answer words of other languages count as Yes/No (Ja/Nein, Oui/Non, Sí, Sim/Não,
Да/Нет, 是/否, はい/いいえ, 예/아니요), and a few descriptions in Chinese ("包含幻觉",
"没有幻觉"), Japanese and Korean.
"""

from __future__ import annotations

import re

__all__ = ["describes", "opens_with_word", "polarity", "uncertain", "word_polarity"]

YES_WORDS = ("yes", "yeah", "yep", "yup")
NO_WORDS = ("no", "nope", "nah")
# Other languages' answer words ("no" is Spanish and Italian too).
_FOREIGN_YES = ("ja", "oui", "sí", "sì", "sim", "да", "是的", "是", "はい", "예", "네")
_FOREIGN_NO = (
    *("nein", "non", "não", "нет"),
    *("不是", "否", "不", "没有", "いいえ", "아니요", "아니오", "아뇨"),
)
_YES_SET = frozenset((*YES_WORDS, *_FOREIGN_YES, "y"))
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
    r"|(?:definitely|certainly|absolutely|clearly|obviously|probably|most\s+likely|likely)[\s,]+)",
    re.IGNORECASE,
)
_WORD = re.compile(
    r"(yes|yeah|yep|yup|no|nope|nah|y|n|"
    + "|".join(sorted((*_FOREIGN_YES, *_FOREIGN_NO), key=len, reverse=True))
    + r")(?![^\W_]|-|['’][^\W_])",
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
    r"|^(?:unsure|uncertain|unclear|unknown|maybe|possibly|perhaps|n/?a|not\s+sure)\b"
    # "it may be hallucinated", "the answer might contain a hallucination"
    r"|\b(?:may|might|could)\s+(?:well\s+|possibly\s+)?(?:be\s+(?:\w+\s+)?(?:hallucinat"
    r"|incorrect|wrong|inaccurate|fabricated|correct|accurate)|(?:contain|have|include)\s+"
    r"(?:an?\s+|some\s+)?(?:\w+\s+)?hallucinat))",
    re.IGNORECASE,
)

# -- descriptions of the judged text ----------------------------------------------------------

_SUBJECT = (
    r"(?:\b(?:the|this|that)\s+(?:given\s+|provided\s+|shown\s+|above\s+|candidate\s+)?"
    r"(?:answer|response|reply|summary|statement|claim|output|text)|\bit|\bthis|\bthat)"
)
_ADVERB = (
    r"(?:\s+(?:clearly|definitely|certainly|obviously|indeed|actually|entirely|completely"
    r"|totally|wholly|fully|perfectly))?"
)
# adverbs that weaken "correct" but not "wrong": "mostly correct" is not a clean No
_LEAN = r"(?:\s+(?:largely|mostly|partially|partly|very\s+likely|most\s+likely|likely|probably))?"
_BE = (
    r"(?:\s+is|\s+was|'s|’s|\s+seems(?:\s+to\s+be)?|\s+appears(?:\s+to\s+be)?|\s+looks"
    r"|\s+(?:is|seems|appears)\s+to\s+be)"
)
_NOT = r"(?:\s+not|n't|n’t)"
# "is not", "isn't", "does not seem to be", "doesn't appear to be"
_BE_NOT = (
    rf"(?:{_BE}{_NOT}|\s+(?:does|did)(?:\s+not|n't|n’t)\s+(?:seem|appear|look)(?:\s+to\s+be)?)"
)
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
# "nothing in the answer", "none of the claims in it", "no part of the response"
_NOTHING = (
    r"\b(?:nothing|none|no\s+part|not\s+(?:one|a\s+single\s+\w+)|no\s+(?:claim|statement"
    r"|fact|detail|sentence)s?)(?:\s+(?:of|in)\s+(?:[\w'’]+\s+){0,5}?)?\s*"
    r"(?:that\s+)?(?:is|are|was|were|seems?|appears?)\s+(?:to\s+be\s+)?"
)

# Quantified statements first ("none of the answer is supported" must not be read as "the
# answer is supported"), then negative descriptions, then positive ones; each match is
# blanked out before the next pattern is tried.
_QUANTIFIED = (
    ("no", re.compile(rf"{_NOTHING}(?:\w+\s+)?(?:{_BAD}|{_HALLU})", re.IGNORECASE)),
    ("yes", re.compile(rf"{_NOTHING}(?:\w+\s+)?{_GOOD}", re.IGNORECASE)),
)
_SAYS_NO = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"{_HALLU}[\s_-]*free\b",
        rf"{_SUBJECT}{_BE_NOT}\s+(?:an?\s+)?{_HALLU}",
        rf"{_SUBJECT}\s+(?:does|did|do){_NOT}\s+{_HAVE_BARE}\s+(?:any\s+|an?\s+)?"
        rf"(?:\w+\s+)?{_HALLU}",
        rf"{_SUBJECT}\s+{_HAVE}\s+no\s+(?:\w+\s+)?{_HALLU}",
        rf"\b(?:there\s+is|there's|i\s+(?:see|find|found))\s+no\s+(?:\w+\s+)?{_HALLU}",
        rf"\bi\s+(?:do\s+not|don't|don’t|did\s+not|didn't|can\s*not|can't|can’t|cannot"
        rf"|could\s+not|couldn't)\s+(?:see|find|spot|detect|notice|identify)\s+(?:any\s+|an?\s+)?"
        rf"(?:\w+\s+)?{_HALLU}",
        rf"\bi\s+(?:do\s+not|don't|don’t|did\s+not|didn't|can\s*not|can't|can’t|cannot"
        rf"|could\s+not|couldn't)\s+(?:see|find|spot|detect|notice|identify)\s+(?:anything"
        rf"|any\s+(?:errors?|problems?|issues?|mistakes?|inaccurac\w+))(?:\s+(?:{_BAD}"
        rf"|{_HALLU}))?",
        rf"(?<![\w'’-])no\s+(?:\w+\s+)?{_HALLU}",
        rf"\bnot\s+(?:an?\s+)?{_HALLU}",
        rf"\bnon[\s_-]?{_HALLU}",
        rf"\b(?:free\s+(?:of|from)|without\s+(?:any\s+)?)(?:\w+\s+)?{_HALLU}",
        rf"\bnothing\s+(?:[\w'’]+\s+){{0,5}}?that\s+(?:is|was|seems)\s+not\s+{_GOOD}",
        rf"{_SUBJECT}{_BE}{_ADVERB}\s+{_GOOD}",
        r"^(?:not\s+really|not\s+at\s+all|absolutely\s+not|certainly\s+not|definitely\s+not"
        r"|of\s+course\s+not|(?:probably|likely|most\s+likely)\s+not"
        r"|not\s+that\s+i\s+(?:can|could)\s+(?:see|tell|find))\b",
        rf"{_SUBJECT}{_BE_NOT}\s+(?:\w+\s+)?{_BAD}",
        r"^(?:(?:fully|entirely|completely|factually)\s+)?(?:correct|accurate|factual|faithful"
        r"|supported|grounded|truthful)\b",
        # Chinese, Japanese, Korean
        r"(?:不|没有|没|未|无)\s*(?:包含|含有|存在|出现|发现)?\s*(?:任何)?\s*(?:的)?\s*幻觉",
        r"(?:^|回答|答案|摘要|回复)\s*(?:是|完全|基本)?\s*(?:正确|准确|真实|忠实)",
        r"幻覚\s*(?:は|が)?\s*(?:含まれていません|ありません)",
        r"正しい",
        r"정확합니다|환각이\s*없습니다",
    )
)
_SAYS_YES = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"{_SUBJECT}{_BE}{_ADVERB}{_LEAN}\s+(?:an?\s+)?(?:clear\s+|obvious\s+)?{_HALLU}",
        rf"{_SUBJECT}{_ADVERB}{_LEAN}\s+{_HAVE}\s+(?:an?\s+|some\s+|clear\s+)?(?:\w+\s+)?"
        rf"{_HALLU}",
        # "does contain", "does indeed contain": emphatic, not negated
        rf"\b(?:does|did)(?:\s+(?:indeed|in\s+fact|definitely|clearly|certainly|actually))?"
        rf"\s+{_HAVE_BARE}\s+(?:an?\s+|some\s+|clear\s+)?(?:\w+\s+)?{_HALLU}",
        rf"\b{_HALLU}\s+(?:is\s+|was\s+)?(?:detected|found|present)\b",
        rf"\b(?:there\s+is|there's|i\s+(?:see|find|found))\s+(?:an?\s+|some\s+)?(?:\w+\s+)?"
        rf"{_HALLU}",
        rf"{_SUBJECT}{_BE}{_ADVERB}{_LEAN}\s+{_BAD}",
        rf"{_SUBJECT}{_BE_NOT}\s+(?:\w+\s+)?{_GOOD}",
        rf"^(?:(?:partially|partly|largely|mostly|clearly|definitely)\s+)?{_HALLU}",
        rf"^(?:contains\s+(?:an?\s+)?{_HALLU}|incorrect|wrong|inaccurate|unfaithful|fabricated"
        r"|made[\s-]up|unsupported|not\s+supported|not\s+(?:correct|accurate|faithful|factual))\b",
        # Chinese, Japanese, Korean
        r"(?:包含|含有|存在|出现|有)\s*(?:\w{0,3})?幻觉",
        r"不正确|不准确|错误|有误|捏造|编造",
        r"幻覚\s*(?:が|を)?\s*(?:含まれています|含んでいます|あります)",
        r"환각이?\s*포함",
    )
)
_ORDERED: tuple[tuple[str, re.Pattern[str]], ...] = (
    *_QUANTIFIED,
    *(("no", p) for p in _SAYS_NO),
    *(("yes", p) for p in _SAYS_YES),
)
_CONDITIONAL = re.compile(r"\b(?:whether|if|unless)\s+$", re.IGNORECASE)
# A question states nothing: "Does the answer contain hallucination?"
_QUESTION = re.compile(r"[^.!?。\n]*\?")

# -- negations and hedges that govern a clause ------------------------------------------------

_FLIP, _NO_EVIDENCE, _KEEP, _VOID = "flip", "no_evidence", "keep", "void"
_GOVERNORS = tuple(
    (how, re.compile(p, re.IGNORECASE))
    for how, p in (
        (
            _FLIP,
            r"\bi\s+(?:do\s+not|don't|don’t|did\s+not|didn't|didn’t)\s+(?:really\s+)?"
            r"(?:think|believe|feel|consider)\b(?:\s+that)?",
        ),
        (
            _FLIP,
            r"\bi\s+(?:would\s+not|wouldn't|wouldn’t)\s+(?:say|call|consider)\b(?:\s+that)?",
        ),
        (_FLIP, r"\bi\s+(?:highly\s+|strongly\s+|really\s+)?doubt\b(?:\s+(?:that|whether|if))?"),
        (
            _FLIP,
            r"\b(?:it\s+is|it's|it’s|that\s+is|this\s+is|it\s+seems)\s+(?:very\s+|highly\s+"
            r"|quite\s+|rather\s+|extremely\s+)?unlikely\b(?:\s+that)?",
        ),
        (_FLIP, r"\bit\s+is\s+not\s+(?:true|the\s+case)\s+that\b"),
        (
            _NO_EVIDENCE,
            r"\b(?:there\s+is|there's|there’s|i\s+(?:see|find|found|have))\s+no\s+(?:(?:clear"
            r"|real|strong|actual)\s+)?(?:evidence|reason\s+to\s+(?:think|believe|suspect)"
            r"|indication|sign|proof)s?\b(?:\s+(?:that|of))?",
        ),
        (
            _NO_EVIDENCE,
            r"^no\s+(?:(?:clear|real)\s+)?(?:evidence|indication|sign)s?\b(?:\s+(?:that|of))?",
        ),
        (_NO_EVIDENCE, r"\bnothing\s+(?:suggests|indicates)\b(?:\s+that)?"),
        (
            _KEEP,
            r"\bi\s+(?:think|believe|feel|would\s+say|'d\s+say|’d\s+say)\b(?:\s+that)?",
        ),
        (
            _KEEP,
            r"\b(?:it\s+is|it's|it’s)\s+(?:very\s+|highly\s+|most\s+|quite\s+)?likely\b"
            r"(?:\s+that)?",
        ),
        (
            _KEEP,
            r"\bi\s+am\s+(?:fairly\s+|pretty\s+|quite\s+)?(?:sure|confident|certain)\b"
            r"(?:\s+that)?",
        ),
        (
            _VOID,
            r"\b(?:it\s+is|it's|it’s)\s+(?:quite\s+|very\s+|entirely\s+)?possible\b(?:\s+that)?",
        ),
    )
)
# Where a governed clause ends.
_CLAUSE_END = re.compile(r"[.;!?。\n]|,\s|\s(?:but|because|since|although|though|so)\s")
# "so" / "it" stand for the question asked: "I don't think so", "I doubt it".
_PROPOSITION = re.compile(r"^[\s,]*(?:so|it|that|this)[\s*_`'\".!]*$", re.IGNORECASE)


def _governed(how: str, clause: str) -> str | None:
    """The polarity a governor of kind ``how`` gives its clause; None: it says nothing."""
    clause = clause.strip()
    if _PROPOSITION.match(clause):
        said: str | None = "yes"
    else:
        found = describes(clause)
        said = found.pop() if len(found) == 1 else ("invalid" if found else None)
    if said is None or said == "invalid":
        return said
    if how == _FLIP:
        return _OPPOSITE[said]
    if how == _NO_EVIDENCE:  # no evidence it is wrong: No; no evidence it is right: unsure
        return "no" if said == "yes" else "invalid"
    if how == _VOID:
        return "invalid"
    return said


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def describes(text: str) -> set[str]:
    """The polarities ("yes"/"no", "invalid" for a voided clause) that the descriptions in
    ``text`` state; empty: none."""
    found: set[str] = set()
    low = _QUESTION.sub(lambda m: " " * len(m.group(0)), text)
    for how, pattern in _GOVERNORS:
        while m := pattern.search(low):
            end = _CLAUSE_END.search(low, m.end())
            stop = end.start() if end else len(low)
            said = _governed(how, low[m.end() : stop])
            if said is not None:
                found.add(said)
                low = _blank(low, m.start(), stop)
            else:
                low = _blank(low, m.start(), m.end())
    for polarity_, pattern in _ORDERED:
        for m in pattern.finditer(low):
            if _CONDITIONAL.search(low[max(0, m.start() - 12) : m.start()]):
                continue  # "whether the answer is correct" states nothing
            found.add(polarity_)
            low = _blank(low, m.start(), m.end())
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


def word_polarity(word: str) -> str | None:
    """ "yes" | "no" for an answer word of any language we read ("Ja", "否"), else None."""
    m = _WORD.fullmatch(word.strip())
    if not m:
        return None
    return "yes" if m.group(1).lower() in _YES_SET else "no"


def _first_clause(text: str) -> str:
    m = re.search(r"[.;!?。\n]|,\s", text)
    return text[: m.start()] if m else text


def polarity(text: str, *, inverse: bool = False) -> str | None:
    """ "yes" | "no" | "invalid" for a statement, or None when it states neither.

    ``inverse``: the statement answers a question whose Yes means "not hallucinated" ("Is
    the answer correct? No."), so its Yes/No words are read the other way round; its
    descriptions ("the answer is wrong") keep their meaning.
    """
    text = text.strip()
    if not text:
        return None
    body = _strip_lead(text)
    m = _WORD.match(body)
    word, start, rest = None, 0, ""
    if m:
        word, start, rest = m.group(1).lower(), m.start(), body[m.end() :]
        if word in _SINGLE_LETTER and rest.strip(" \t*_`'\".!"):
            word = None  # "N Korea", "Y chromosome": not a verdict
    if word is not None:
        said = "yes" if word in _YES_SET else "no"
        if said == "no" and _NON_ANSWER_NOUNS.match(rest):
            return "invalid"  # "No idea", "No comment"
        if uncertain(_first_clause(rest.lstrip(" ,.;:!—–-"))):
            return "invalid"  # "No, I cannot determine that"
        if any(w.lower() != word for w in _STANDALONE.findall(rest)):
            return "invalid"  # "No, wait — Yes."
        meant = _OPPOSITE[said] if inverse else said
        # "No hallucination" reads as No; "No, the answer contains a hallucination" is torn.
        stated = describes(body[start:] if said == "no" and not inverse else rest)
        if _OPPOSITE[meant] in stated or "invalid" in stated:
            return "invalid"
        return meant
    if uncertain(text):
        return "invalid"
    said_set = describes(_LEAD_DECORATION.sub("", text))
    if len(said_set) > 1 or "invalid" in said_set:
        return "invalid"
    return said_set.pop() if said_set else None
