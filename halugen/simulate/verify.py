"""The simulated judge of the verify stage: is the record's ``Statement`` supported?

A verify prompt (``prompts/<task>/verify.txt``) is a verdict prompt whose judged text is
labelled ``Statement`` and which asks whether it is supported. The simulated judge reads it
as a careful model would on invented facts: the statement is supported when it appears in
the record's grounding text (the knowledge, the document, the question) or nearly all its
content words do. A deterministic minority of prompts (``FLIP_SHARE``, drawn by the prompt's
key) gets the opposite verdict, so a run against the simulator flags some samples: a
hallucination judged supported, a right text judged unsupported. A further share
(``HEDGE_SHARE``) of first replies hedges instead of answering, so the strict reader's
re-ask is exercised; the re-ask (``VERDICT.reask()``, which carries no record) is answered
about the statement of the earlier message, with the contract line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..reply_contract import VERDICT
from . import answers
from .keys import unit
from .words import content_words, normalise

__all__ = ["FLIP_SHARE", "HEDGE_SHARE", "STATEMENT", "supported", "verify_prompt", "verify_reply"]

STATEMENT = "statement"  # the record label of the text a verify prompt asks about
FLIP_SHARE = 0.12  # prompts whose verdict is the opposite of the careful reading
HEDGE_SHARE = 0.08  # first replies that hedge (answered properly when asked again)
_ASKS = "supported by the"  # what a verify prompt asks, among its own words
_HEDGE = "The statement may be supported in part; I cannot say for certain."


def _is_verify(info: answers.PromptInfo) -> bool:
    return info.kind == "verdict" and STATEMENT in info.fields and _ASKS in info.text.lower()


def verify_prompt(last_user: str, earlier: Sequence[str]) -> answers.PromptInfo | None:
    """The verify prompt ``last_user`` is, or answers as the contract's re-ask (the record
    then comes from the latest earlier verify message); None for any other prompt."""
    info = answers.parse_prompt(last_user)
    if _is_verify(info):
        return info
    if last_user.strip() != VERDICT.reask():
        return None
    for text in reversed(earlier):
        first = answers.parse_prompt(text)
        if _is_verify(first):
            return replace(first, follow_up=True)
    return None


def supported(statement: str, grounding: str) -> bool:
    """The careful reading: the statement is in the grounding text, or nearly every one of
    its content words is."""
    said, ground = normalise(statement), normalise(grounding)
    if not said:
        return False
    if said in ground:
        return True
    words = content_words(statement)
    if not words:
        return False
    known = set(ground.split())
    found = sum(normalise(w) in known for w in words)
    return found / len(words) >= 0.8


def verify_reply(
    info: answers.PromptInfo, prompt_key: int, *, structured: bool = False
) -> answers.Reply:
    """The reply to a verify prompt (``verify_prompt``): a hedge for a share of first
    replies (never when a schema constrains the reply), else the contract line."""
    if not info.follow_up and not structured and unit(prompt_key, 92) < HEDGE_SHARE:
        return answers.Reply(_HEDGE)
    grounding = "\n".join(v for k, v in info.fields.items() if k != STATEMENT)
    yes = supported(info.fields[STATEMENT], grounding)
    if unit(prompt_key, 91) < FLIP_SHARE:
        yes = not yes
    word = "Yes" if yes else "No"
    return answers.Reply(VERDICT.line(word), word, 0.9, {"verdict": word})
