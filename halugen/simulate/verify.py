"""The simulated judge of the verify stage: is the record's ``Statement`` supported?

A verify prompt (``prompts/<task>/verify.txt``) is a verdict prompt whose judged text is
labelled ``Statement`` and which asks whether it is supported. The simulated judge knows
the hallucinations it wrote itself (``remember``: every hallucination reply of this process,
normalised, in a bounded memory) and finds those unsupported; any other statement (a right
text, a file's hallucination it did not write) it reads literally: supported when it, or
most of its content words, appear in the record's grounding text. A deterministic minority
of prompts (``FLIP_SHARE``, drawn by the prompt's key) gets the opposite verdict, so a run
against the simulator flags some samples: a hallucination judged supported, a right text
judged unsupported. A further share (``HEDGE_SHARE``) of first replies hedges instead of
answering, so the strict reader's re-ask is exercised; the re-ask (``VERDICT.reask()``,
which carries no record) is answered about the statement of the earlier message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from ..reply_contract import VERDICT
from . import answers, prompt_reading
from .keys import unit
from .words import content_words, normalise

__all__ = [
    "FLIP_SHARE",
    "HEDGE_SHARE",
    "STATEMENT",
    "remember",
    "supported",
    "verify_prompt",
    "verify_reply",
]

STATEMENT = "statement"  # the record label of the text a verify prompt asks about
FLIP_SHARE = 0.12  # prompts whose verdict is the opposite of the careful reading
HEDGE_SHARE = 0.08  # first replies that hedge (answered properly when asked again)
_ASKS = "supported by the"  # what a verify prompt asks, among its own words
_HEDGE = "The statement may be supported in part; I cannot say for certain."
_MEMORY = 1_000_000  # hallucinations remembered (oldest forgotten first)
_written: OrderedDict[str, None] = OrderedDict()
_NOT_TEXT = frozenset({"pattern", "explanation", "reasoning", "reason", "note", "notes"})


def remember(info: prompt_reading.PromptInfo, reply: answers.Reply) -> None:
    """Keep the hallucinated texts of a hallucination reply, normalised."""
    if info.kind != "hallucinate":
        return
    for label, value in reply.values.items():
        if label not in _NOT_TEXT and value:
            _written[normalise(value)] = None
    while len(_written) > _MEMORY:
        _written.popitem(last=False)


def _is_verify(info: prompt_reading.PromptInfo) -> bool:
    return info.kind == "verdict" and STATEMENT in info.fields and _ASKS in info.text.lower()


def verify_prompt(last_user: str, earlier: Sequence[str]) -> prompt_reading.PromptInfo | None:
    """The verify prompt ``last_user`` is, or answers as the contract's re-ask (the record
    then comes from the latest earlier verify message); None for any other prompt."""
    info = prompt_reading.parse_prompt(last_user)
    if _is_verify(info):
        return info
    if last_user.strip() != VERDICT.reask():
        return None
    for text in reversed(earlier):
        first = prompt_reading.parse_prompt(text)
        if _is_verify(first):
            return replace(first, follow_up=True)
    return None


def supported(statement: str, grounding: str) -> bool:
    """The literal reading: the statement is in the grounding text, or a third of its
    content words are (a lenient reader: chat and paraphrase keep few of the words)."""
    said, ground = normalise(statement), normalise(grounding)
    if not said:
        return False
    if said in ground:
        return True
    words = content_words(statement)
    if not words:
        return True  # small talk states nothing the knowledge could contradict
    known = set(ground.split())
    return sum(normalise(w) in known for w in words) / len(words) >= 1 / 3


def verify_reply(
    info: prompt_reading.PromptInfo, prompt_key: int, *, structured: bool = False
) -> answers.Reply:
    """The reply to a verify prompt (``verify_prompt``): a hedge for a share of first
    replies (never when a schema constrains the reply), else the contract line."""
    if not info.follow_up and not structured and unit(prompt_key, 92) < HEDGE_SHARE:
        return answers.Reply(_HEDGE)
    statement = info.fields[STATEMENT]
    grounding = "\n".join(v for k, v in info.fields.items() if k != STATEMENT)
    yes = normalise(statement) not in _written and supported(statement, grounding)
    if unit(prompt_key, 91) < FLIP_SHARE:
        yes = not yes
    word = "Yes" if yes else "No"
    return answers.Reply(VERDICT.line(word), word, 0.9, {"verdict": word})
