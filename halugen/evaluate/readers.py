"""Which reader turns a recognition judge's reply into a verdict: strict or lenient.

``strict`` (the default) holds the reply contract (``reply_contract``): a verdict is read
only from the last line ``Verdict: Yes|No`` (contrast: ``Choice: 1|2``), the JSON field of
the same name, or a one-word reply; anything else is unsure ("invalid" here), which ``eval``
asks again once. A reply in a style nobody foresaw can then cost a re-ask, never a verdict
read backwards.

``lenient`` is the interpreting reader (``verdicts.parse_verdict`` / ``parse_contrast``),
kept for replies collected elsewhere to other prompts (``eval --read lenient``): it reads
prose, labels of other names and negations, and so can meet a style it reads backwards.
Every judgement records which reader produced it, and ``report`` says so per figure.
"""

from __future__ import annotations

from ..errors import UsageError
from ..reply_contract import VERDICT, choice_contract
from .verdicts import parse_contrast, parse_verdict

__all__ = ["CONTRAST", "READERS", "check_reader", "read_pick", "read_verdict"]

READERS = ("strict", "lenient")
# the contrast judge's contract: which of the two shown texts is the hallucinated one
CONTRAST = choice_contract(2)


def check_reader(reader: str) -> str:
    """``reader`` when it is one of ``READERS``; a one-line UsageError otherwise."""
    if reader not in READERS:
        raise UsageError(f"--read must be one of {', '.join(READERS)}, not {reader!r}")
    return reader


def read_verdict(text: str | None, reader: str = "strict") -> str:
    """ "yes" | "no" | "invalid" (unsure) for a Yes/No judge reply."""
    if reader == "lenient":
        return parse_verdict(text)
    value = VERDICT.read(text)
    return "invalid" if value is None else value.lower()


def read_pick(text: str | None, reader: str = "strict") -> int | None:
    """1 | 2 | None (unsure): which of two texts a contrast judge says is hallucinated."""
    if reader == "lenient":
        return parse_contrast(text)
    value = CONTRAST.read(text)
    return None if value is None else int(value)
