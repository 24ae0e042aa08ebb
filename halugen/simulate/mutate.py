"""Wrong-but-plausible variants of a right answer, for the simulator's hallucination replies.

Edits in the spirit of HaluEval's patterns: swap a named entity for another one from the
record, change a number or a year, negate a statement, or add a false specific detail.
Which edit comes first depends on the pattern asked for; the others are fallbacks, and the
result never equals the right answer after ``normalise`` (the engine rejects those).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .keys import mix, pick
from .spans import record_span
from .words import STOP, content_words, names, names_normalised, normalise

__all__ = ["hallucinate"]

_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\w])|(?<![\w.])\d+(?:\.\d+)?(?![\w])")
_AUX = re.compile(
    r"\b(is|are|was|were|can|could|will|would|does|did|do|has|have|had|should|must)\b"
)
_NOT = re.compile(r"\b(not|never)\s+", re.IGNORECASE)
_NT = re.compile(r"n't\b")
_SPEAKER_TAG = re.compile(r"\[[A-Za-z]+\]:?")
_SWAPPABLE = re.compile(r"\b[A-Za-z][a-z'-]{3,}\b")

# Invented stand-ins for when the record offers nothing to swap in.
_FALLBACK_NAMES = (
    "Harlow Vance",
    "Port Elsby",
    "the Marren Institute",
    "Odile Brask",
    "Fenwick County",
    "the Tarn Valley Trust",
)


def _name_targets(right: str, context: str) -> list[str]:
    """The names of ``right`` worth swapping: a lone capitalised word that opens one of its
    sentences ("Enjoy the movie!", "I'm sure") is a name only when the record names it too."""
    known = {n.lower() for n in names(context)}
    out = []
    for name in names(right):
        opens = re.search(rf"(?:^|[.!?]\s+){re.escape(name)}(?![\w'’-])", right)
        if " " in name or not opens or name.lower() in known:
            out.append(name)
    return out


def _swap_name(right: str, context: str, key: int, *, avoid: str = "") -> str | None:
    """A name of ``right`` swapped for another name of the record; none of ``avoid``'s (the
    question's: "Corliss Archer" is no plausible answer to a question about her)."""
    targets = _name_targets(right, context)
    right_norm = normalise(right)
    pool = []
    seen = set()
    for name, norm in names_normalised(context):
        # a name that contains or is contained in the right text is no swap ("Eiffel" for
        # "Gustave Eiffel")
        if norm and norm not in right_norm and right_norm not in norm and norm not in seen:
            if avoid and _within(norm, avoid):
                continue
            seen.add(norm)
            pool.append(name)
    if targets:
        target = pick(targets, key, 1)
        size = len(target.split())
        same_size = [n for n in pool if len(n.split()) == size]
        choices = same_size or pool
        if not choices:
            # no other name in the record: another kind of edit, not a name of our own
            # ("Harlow Vance" in every such hallucination is a tell)
            return None
        return right.replace(target, pick(choices, key, 2), 1)
    words = right.split()
    if 1 < len(words) <= 4 and all(w.isalpha() for w in words):
        # a short lower-case phrase ("blue whale"): keep its head word, take another
        # modifier the context uses with it ("fin whale")
        head = words[-1]
        found = re.findall(rf"\b([A-Za-z]+) {re.escape(head)}\b", context)
        mods = [
            m
            for m in dict.fromkeys(found)
            if m.lower() != words[-2].lower() and m.lower() not in STOP
        ]
        if mods:
            return " ".join([*words[:-2], pick(mods, key, 3), head])
    if len(words) == 1 and words[0].isalpha():
        # a single word ("red"): prefer a sibling the context lists with it ("red and white")
        w = re.escape(words[0])
        text = context
        siblings = re.findall(rf"\b{w},? (?:and|or) ([A-Za-z]+)", text, re.IGNORECASE)
        siblings += re.findall(rf"\b([A-Za-z]+),? (?:and|or) {w}\b", text, re.IGNORECASE)
        pool_words = [x for x in siblings if x.lower() not in STOP] or [
            x for x in content_words(text) if x != right_norm
        ]
        if pool_words:
            return pick(pool_words, key, 3)
    return None


def _change_number(right: str, _context: str, key: int) -> str | None:
    found = list(_NUMBER.finditer(right))
    if not found:
        return None
    m = pick(found, key, 4)
    raw = m.group(0)
    delta = 1 + mix(key, 5) % 7
    if "," in raw:
        value = int(raw.replace(",", "")) + delta * 10 ** (len(raw.replace(",", "")) - 2)
        new = f"{value:,}"
    elif "." in raw:
        whole, frac = raw.split(".")
        new = f"{whole}.{(int(frac) + delta) % 10 ** len(frac):0{len(frac)}d}"
    else:
        value = int(raw)
        if 1000 <= value <= 2099 and len(raw) == 4:  # a year: stay plausible
            value += delta if mix(key, 6) % 2 else -delta
        else:
            value = value + delta if value < 10 or mix(key, 6) % 2 else value * 2
        new = str(value)
    return right[: m.start()] + new + right[m.end() :]


def _negate(right: str, _context: str, key: int) -> str | None:
    norm = normalise(right)
    if norm in ("yes", "no"):
        flip = "no" if norm == "yes" else "yes"
        return flip.capitalize() if right[:1].isupper() else flip
    if _NOT.search(right):
        return _NOT.sub("", right, count=1)
    if _NT.search(right):
        return _NT.sub("", right, count=1)
    m = _AUX.search(right)
    if m:
        return right[: m.end()] + " not" + right[m.end() :]
    return None


def _add_detail(right: str, context: str, key: int, *, avoid: str = "") -> str | None:
    """A detail of ``right`` changed for one of the record's, in the record's own words: a
    short span becomes another span of the record shaped like it (``record_span``), else a
    name the record gives; a longer text has one of its content words swapped for a word of
    the record of the same shape. A phrase of the simulator's own ("near X", ", according
    to X", " since 1901") would be a tell that every hallucination carries and no right text
    does: a character n-gram model read dialogue's at 57%. Nothing of ``avoid`` (the
    question), and no name for a figure: "Marrow" for "1911" is no plausible year."""
    right_norm = normalise(right)
    if len(right.split()) <= 4 and right.rstrip()[-1:] not in ".!?":
        span = record_span(right, context, key, avoid=avoid)
        if span is not None or _NUMBER.search(right):
            return span
        others = [
            n
            for n, norm in names_normalised(context)
            if norm not in right_norm and not (avoid and _within(norm, avoid))
        ]
        return pick(others, key, 9) if others else None
    return _swap_word(right, context, key)


def _swap_word(right: str, context: str, key: int) -> str | None:
    """``right`` with one content word (not a name's) swapped for a content word of the
    record that ``right`` does not use, capitalised where the one it replaces was."""
    own = set(content_words(right))
    spots = [m for m in _SWAPPABLE.finditer(right) if m.group(0).lower() in own]
    pool = [w for w in content_words(context) if w not in own and w.isalpha()]
    if not spots or not pool:
        return None
    m = pick(spots, key, 15)
    word = pick(pool, key, 16)
    if m.group(0)[0].isupper():
        word = word.capitalize()
    return right[: m.start()] + word + right[m.end() :]


_STRATEGIES: dict[str, Callable[[str, str, int], str | None]] = {
    "name": _swap_name,
    "number": _change_number,
    "negate": _negate,
    "detail": _add_detail,
}
# Which edit suits which pattern best (the rest follow as fallbacks).
_PATTERN_ORDER: dict[str, tuple[str, ...]] = {
    "comprehension": ("name", "negate", "number", "detail"),
    "factualness": ("name", "number", "detail", "negate"),
    "specificity": ("detail", "number", "name", "negate"),
    "inference": ("negate", "number", "name", "detail"),
    # dialogue: the true entity replaced (similar, dissimilar, of another type)
    "extrinsic-soft": ("name", "number", "detail", "negate"),
    "extrinsic-hard": ("name", "number", "detail", "negate"),
    "extrinsic-grouped": ("name", "detail", "number", "negate"),
    "factual": ("number", "name", "detail", "negate"),
    # a made-up fact in the summary's own words: another name or figure first (an added
    # tail, "..., according to X", is a tell any n-gram model reads)
    "non-factual": ("name", "number", "detail", "negate"),
    "intrinsic": ("name", "negate", "number", "detail"),
}
_DEFAULT_ORDERS: tuple[tuple[str, ...], ...] = (
    ("name", "number", "negate", "detail"),
    ("number", "name", "detail", "negate"),
    ("negate", "name", "number", "detail"),
)


def _in_form_of(out: str, right: str) -> str:
    """``out`` written in ``right``'s form, as a model shown the right text writes its wrong
    one: a capital first letter where it has one (lower case where it is all lower case),
    and its final full stop, question or exclamation mark, or none."""
    first = next((c for c in right if c.isalpha()), "")
    at = next((i for i, c in enumerate(out) if c.isalpha()), None)
    if first and at is not None:
        letters = [c for c in right if c.isalpha()]
        if first.isupper() and out[at].islower():
            out = out[:at] + out[at].upper() + out[at + 1 :]
        elif len(letters) > 1 and all(c.islower() for c in letters):
            out = out.lower()
    mark = right.rstrip()[-1:] if right.rstrip()[-1:] in (".", "!", "?") else ""
    body = out.rstrip()
    while body[-1:] in (".", "!", "?"):
        body = body[:-1]
    return body + mark if body else out


def _within(norm: str, text: str) -> bool:
    """Is ``norm`` (normalised) a run of whole words of ``text``?"""
    return f" {norm} " in f" {normalise(text)} "


def _from_the_record(right: str, context: str, key: int, *, avoid: str = "") -> str | None:
    """Where ``right`` is a span of the record (a name, a number), another span of the same
    kind from it (else any span shaped like it, ``record_span``): a model asked for a
    plausible wrong answer names another entity or figure the text gives rather than
    editing the right one into a string found nowhere. Nothing ``avoid`` (the question)
    holds: a question's own subject is no plausible answer to it."""
    norm = normalise(right)
    if not norm or not _within(norm, context):
        return None
    if _NUMBER.fullmatch(right.strip()):
        pool = [
            m.group(0)
            for m in _NUMBER.finditer(context)
            if normalise(m.group(0)) != norm
            and ("," in m.group(0)) == ("," in right)
            and not (avoid and _within(normalise(m.group(0)), avoid))
        ]
    elif (span := record_span(right, context, key, avoid=avoid)) is not None:
        # the same shape word by word first: a date for a date, a title for a title
        return span
    elif names(right) and not any(c.isdigit() for c in right):
        size = len(right.split())
        pool = [
            n
            for n, n_norm in names_normalised(context)
            if abs(len(n.split()) - size) <= max(1, size // 2)
            and n_norm not in norm
            and norm not in n_norm
            and not (avoid and _within(n_norm, avoid))
        ]
    else:
        pool = []
    if pool:
        return pick(pool, key, 21)
    return record_span(right, context, key, avoid=avoid)


def hallucinate(right: str, context: str, pattern: str, key: int, *, question: str = "") -> str:
    """A plausible but wrong variant of ``right`` in its form (``_in_form_of``); never
    equal to it after ``normalise``. An answer taken from the record is swapped for another
    of the record's names or figures (``_from_the_record``) where it has one."""
    if not right.strip():
        return _hallucinate(right, context, pattern, key, question=question)
    # the question is no source of distractors: a span of it is not "in the knowledge";
    # nor are a dialogue's speaker tags ("[Human]:"), which no reply repeats
    record = context.replace(question, "\n") if question.strip() else context
    record = _SPEAKER_TAG.sub("\n", record)
    # a right answer the question names ("Which is older, A or B?") gets the question's
    # other option; any other answer none of the question's own words
    flat = " ".join(right.split())
    avoid = "" if question.strip() and _within(normalise(flat), question) else question
    out = _from_the_record(flat, question, key) if not avoid and question.strip() else None
    if out is None:
        out = _from_the_record(flat, record, key, avoid=avoid)
    if out is None:
        out = _hallucinate(right, record, pattern, key, question=avoid)
    return _in_form_of(out, right)


def _hallucinate(right: str, context: str, pattern: str, key: int, *, question: str = "") -> str:
    right = " ".join(right.split())
    if not right:
        pool = names(context) or list(_FALLBACK_NAMES)
        return f"It was {pick(pool, key, 10)}, in {1850 + mix(key, 11) % 170}."
    order = _PATTERN_ORDER.get(pattern.lower()) or pick(_DEFAULT_ORDERS, key, 12)
    if normalise(right) in ("yes", "no"):
        order = ("negate",)  # a yes/no answer has one wrong form
    target = normalise(right)
    for name in order:
        if name == "name":
            out = _swap_name(right, context, key, avoid=question)
        elif name == "detail":
            out = _add_detail(right, context, key, avoid=question)
        else:
            out = _STRATEGIES[name](right, context, key)
        if out and normalise(out) and normalise(out) != target:
            return out
    return right + " " + str(1850 + mix(key, 13) % 170)  # cannot equal ``right``
