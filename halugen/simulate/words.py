"""Word-level helpers shared by the simulator's answer makers (precompiled, no tokenizer)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "STOP",
    "content_words",
    "names",
    "names_normalised",
    "normalise",
    "overlap_words",
]

_PUNCT = re.compile(r"[^\w\s]")


def normalise(text: str) -> str:
    """Exactly ``halugen.tasks.base.normalise``, with its regex compiled once (hot path)."""
    # NFKC and casefold are lower() on ASCII text, the common case, and much cheaper
    text = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


_STOP_TEXT = """a an the and or but if of to in on at by for with from into onto over under
    about as is are was were be been being am do does did has have had can could will would shall
    should may might must not no yes it its this that these those there here he she they
    them his her their our your my we you i me who whom whose which what when where why how
    than then so such very more most less least also just only some any all each every both
    either neither one two three give list write describe explain tell make please"""
STOP = frozenset(_STOP_TEXT.split())
# capitalised words that start sentences rather than name things
_NOT_NAME_WORDS = """The A An In On At By For With From Of To And Or But If When While After
    Before During As He She It They This That These Those His Her Its Their We I You Our My Your
    There Here Yes No Not Question Knowledge Answer Document Summary Response Dialogue Right
    Human Assistant User What Who Where Why How Which Also However Although Do Does Did Can
    Could Would Will Should Shall May Might Must Have Has Had Is Are Was Were Am Be Sure Yeah
    Yep Okay Ok Well Oh Hi Hello Hey Thanks Thank Please Great Nice Cool Wow Really Maybe
    Just So Then Now Absolutely Definitely Certainly Let Me Any Some"""
_NOT_NAMES = frozenset(_NOT_NAME_WORDS.split())
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
# initials keep their dots ("U.S."), other words do not, so "England. The" splits
_CAP = r"(?:(?:[A-Z]\.)+|[A-Z][A-Za-z0-9'’-]*)"
_NAME = re.compile(rf"\b{_CAP}(?:[ ](?:of |for |the |de |von |van )?{_CAP})*")
_POSSESSIVE = re.compile(r"['’]s?$")


@lru_cache(maxsize=2048)  # a record's text is read for every choice and both candidates
def names(text: str) -> tuple[str, ...]:
    """Capitalised phrases that name things ("Gustave Eiffel", "Bank of England"), in order."""
    out: list[str] = []
    seen: set[str] = set()
    for m in _NAME.finditer(text):
        name = _POSSESSIVE.sub("", m.group(0)).rstrip(".'’-")
        words = name.split()
        while words and words[0] in _NOT_NAMES:
            words.pop(0)
        if not words:
            continue
        name = " ".join(words)
        key = name.lower()
        if key not in seen:
            seen.add(key)
            out.append(name)
    return tuple(out)


@lru_cache(maxsize=2048)
def names_normalised(text: str) -> tuple[tuple[str, str], ...]:
    """``names(text)`` each with its ``normalise``d form."""
    return tuple((name, normalise(name)) for name in names(text))


def content_words(text: str) -> list[str]:
    """Lower-case words of four letters or more that are not stop words, in order, once."""
    out: list[str] = []
    seen: set[str] = set()
    for w in _WORD.findall(text):
        lw = w.lower().strip("'-")
        if len(lw) > 3 and lw not in STOP and lw not in seen:
            seen.add(lw)
            out.append(lw)
    return out


def overlap_words(text: str) -> set[str]:
    """Normalised words that carry content (what a judge's word overlap counts)."""
    return {w for w in normalise(text).split() if w not in STOP and (len(w) > 2 or w.isdigit())}
