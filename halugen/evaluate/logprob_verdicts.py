"""A recognition judge's verdict scored by its token probabilities: P(Yes) at the verdict's
position, for both readers (``reader``: "strict" scores the reply contract's position only,
"lenient" the token after a "Verdict:" label or the first Yes/No)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..reply_contract import VERDICT

__all__ = ["verdict_from_logprobs"]

# "Verdict:", "#Your Judgement#:", and JSON's '"verdict": "' just before the verdict token.
_AFTER_VERDICT = re.compile(r"(?:verdict|judge?ment)[\s*_#`'\"]*:[\s*_`'\"]*$", re.IGNORECASE)
# the reply contract's label (or its JSON field) just before the verdict token
_AFTER_CONTRACT = re.compile(r"(?<![\w-])verdict[\s*_`'\"]*:[\s*_`'\"]*$", re.IGNORECASE)
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
    """The lenient reader's verdict token: the first word after the last "Verdict:" (or
    "Judgement:"), else the first Yes/No token."""
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


def _contract_entry(entries: Sequence[Any]) -> Any | None:
    """The strict reader's verdict token: the one at the contract's position.

    The reply the tokens spell must hold the contract (``reply_contract.VERDICT.read``:
    its last line ``Verdict: Yes|No``, a JSON ``verdict`` field, or one word); the token
    scored is the first word after the last ``Verdict:`` label, or the one word. A Yes or
    No anywhere else in the reply is never scored.
    """
    tokens = [str(_get(entry, "token") or "") for entry in entries]
    if VERDICT.read("".join(tokens)) is None:
        return None
    text = ""
    after: int | None = None
    for i, token in enumerate(tokens):
        if token.strip(_DECORATION) and _AFTER_CONTRACT.search(text[-64:]):
            after = i
        text += token
    if after is not None:
        return entries[after]
    start, text = 0, ""  # a one-word reply counts after a reasoning block, if any
    for i, token in enumerate(tokens):
        text += token
        if _THINK_END.search(text[-24:]):
            start, text = i + 1, ""
    words = [i for i in range(start, len(tokens)) if tokens[i].strip(_DECORATION)]
    if len(words) == 1:  # a one-word reply: that word is the contract's position
        return entries[words[0]]
    return None


def verdict_from_logprobs(logprobs: Any, *, reader: str = "strict") -> tuple[str, float | None]:
    """("yes"|"no"|"invalid", P(Yes) normalised over Yes and No) from a choice's logprobs.

    ``reader`` "strict" scores the token at the reply contract's position only
    (``_contract_entry``); "lenient" (replies collected elsewhere, HaluEval's prompts) the
    token after a "Verdict:"/"Judgement:" label, else the first Yes/No token. The
    probability mass of every alternative at the verdict position that reads as Yes ("Yes",
    " yes", "YES") is set against that of No. Without a verdict token, or without
    any Yes/No mass at it, the result is ("invalid", None). An exact tie is invalid.
    """
    entries = _entries(logprobs)
    find = _contract_entry if reader == "strict" else _verdict_entry
    entry = find(entries) if entries else None
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
