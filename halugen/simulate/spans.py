"""Spans of the record in the shape of the right text, for the simulator's wrong answers.

A model asked for a plausible wrong answer to a question whose answer is a span of the
knowledge ("Chief of Protocol", "3,677 seated", "fin whale") names another span of the same
kind from it, a distractor, rather than editing the right one into a string found nowhere
or tacking on a phrase of its own. ``record_span`` finds such a span: a run of the record's
words, inside one clause, with the right text's number of words, the same shape word by
word (a capitalised word, a lower-case word, a number) and the same stop words at its
edges, never the right text itself.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .keys import pick
from .words import STOP, normalise

__all__ = ["record_span", "shape_of"]

# a clause ends at a comma (not one inside a figure or a date: "3,677", "April 1, 1949"), a
# semicolon, a bracket, a quote or a sentence's end
_CLAUSE = re.compile(r"(?<!\d),|,(?!\s?\d)|[;:()\[\]\"“”]|[.!?](?:\s|$)|\n")
# the punctuation a word of a span may not carry at its edges (a comma left there is one
# inside a date: "March 3, 1950")
_EDGE = "'\"“”‘’()[];:!?"


def _word_shape(word: str, norm: str) -> str:
    """``word``'s shape; ``norm`` is ``normalise(word)``."""
    if any(c.isdigit() for c in word):
        return "9"
    if norm in STOP:
        return "s"
    if word[:1].isupper():
        return "A"
    return "a"


def shape_of(text: str) -> tuple[str, ...]:
    """Word by word: "9" a number, "s" a stop word ("The" too: it is no name), "A"
    another capitalised word, "a" another lower-case word."""
    return tuple(_word_shape(w, normalise(w)) for w in text.split())


@lru_cache(maxsize=256)
def _clauses(record: str) -> tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]:
    """Each clause of ``record``: its words, their shapes and their normalised forms (each
    word's computed once, however many runs it stands in)."""
    out = []
    for clause in _CLAUSE.split(record):
        words = tuple(w for w in (w.strip(_EDGE) for w in clause.split()) if w)
        norms = tuple(normalise(w) for w in words)
        out.append((words, tuple(map(_word_shape, words, norms)), norms))
    return tuple(out)


@lru_cache(maxsize=1024)
def _runs(record: str, size: int) -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """Every run of ``size`` words inside one clause of ``record``: its text, its shape and
    its normalised text (``normalise`` of the text: the words' normalised forms joined, an
    empty one left out)."""
    out: list[tuple[str, tuple[str, ...], str]] = []
    for words, shapes, norms in _clauses(record):
        for i in range(len(words) - size + 1):
            out.append(
                (
                    " ".join(words[i : i + size]),
                    shapes[i : i + size],
                    " ".join(n for n in norms[i : i + size] if n),
                )
            )
    return tuple(out)


def record_span(
    right: str, record: str, key: int, *, avoid: str = "", most_words: int = 6
) -> str | None:
    """Another span of ``record`` shaped like ``right`` (``shape_of``), chosen by ``key``;
    None when ``right`` is longer than ``most_words`` words or the record has none.
    Spans with the same stop words as ``right`` come first ("Head of Design" for "Chief of
    Staff" before "Brun as Head"), spans sharing a word other than a stop word with it
    last: "Texas Tech Raiders" for "Texas Tech University" is the right answer half kept.
    None of the runs of ``avoid`` (the question: its own subject is no answer to it)."""
    words = right.split()
    if not words or len(words) > most_words:
        return None
    shape = shape_of(right)
    norm_right = normalise(right)
    own = {w for w in norm_right.split() if w not in STOP}
    stops = [w for w in norm_right.split() if w in STOP]
    seen = {norm_right}
    avoided = f" {normalise(avoid)} "
    tiers: tuple[list[str], list[str], list[str]] = ([], [], [])
    for text, run_shape, norm in _runs(record, len(words)):
        if run_shape != shape or not norm or norm in seen or f" {norm} " in avoided:
            continue
        seen.add(norm)
        if own & set(norm.split()):
            tiers[2].append(text)
        else:
            same_stops = [w for w in norm.split() if w in STOP] == stops
            tiers[0 if same_stops else 1].append(text)
    pool = next((tier for tier in tiers if tier), [])
    return pick(pool, key, 23) if pool else None
