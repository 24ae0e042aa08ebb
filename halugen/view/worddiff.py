"""The words two texts do not share, marked: right vs hallucinated, side by side.

A text is cut into words, runs of spacing and single marks of punctuation; the longest
common runs of those (difflib's matcher, without its "junk" heuristic, which would ignore
words that are frequent in long texts) stay unmarked, the rest is marked on each side.
Each side comes back as its own text cut into pieces, so joining them gives the text back.
"""

from __future__ import annotations

import difflib
import re

__all__ = ["Piece", "word_diff"]

# a piece: (its text, whether it differs from the other side)
Piece = tuple[str, bool]

_TOKEN = re.compile(r"\s+|\w+(?:['’-]\w+)*|[^\w\s]", re.UNICODE)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _merged(pieces: list[Piece]) -> list[Piece]:
    """Neighbours alike joined; spacing between two marked words is marked with them."""
    out: list[Piece] = []
    for i, (text, changed) in enumerate(pieces):
        if text.isspace() and not changed:
            before = out[-1][1] if out else False
            after = pieces[i + 1][1] if i + 1 < len(pieces) else False
            changed = before and after
        if out and out[-1][1] == changed:
            out[-1] = (out[-1][0] + text, changed)
        else:
            out.append((text, changed))
    return out


def word_diff(right: str, hallucinated: str) -> tuple[list[Piece], list[Piece]]:
    """(the right text's pieces, the hallucinated text's pieces); a piece is marked when
    its words are not in the other text at that place. Case counts: "Paris" and "paris"
    differ."""
    a, b = _tokens(right), _tokens(hallucinated)
    # spacing may differ freely: compare the words, carry the spacing along
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    left: list[Piece] = []
    other: list[Piece] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        same = op == "equal"
        left += [(t, not same and not t.isspace()) for t in a[i1:i2]]
        other += [(t, not same and not t.isspace()) for t in b[j1:j2]]
    # a text the tokenizer does not cover fully (never, with \s+ and [^\w\s]) is kept whole
    if "".join(t for t, _ in left) != right or "".join(t for t, _ in other) != hallucinated:
        return [(right, True)], [(hallucinated, True)]
    return _merged(left), _merged(other)
