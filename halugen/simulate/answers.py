"""What the simulated model says: deterministic replies in the shapes halugen's prompts ask for.

Pure functions, no I/O. ``prompt_reading.parse_prompt`` reads the last user message once
(cached by text, since retries and ``n`` > 1 repeat it); ``reply`` turns that reading plus two
64-bit keys into the text of one choice:

* ``prompt_key`` depends on the prompt only (and the simulator's seed): what stays the same
  across the choices of one prompt (does this user query get contradicting answers? is the
  recognition judge right about this prompt?);
* ``variant_key`` depends on the whole request and the choice index: what varies between
  choices and between otherwise identical requests with another ``seed``/``temperature``.

Prompt shape: the final user message holds a line ``Reply format:`` followed by one
``Label: <description>`` line per field of the reply (``<one of: a, b, c>`` lists the
options), and the record's data as labelled lines (``Knowledge: ...``, ``Right answer:
...``, ``Answer 1: ...``), a value running to a blank line or the next label. The record
comes last: after the reply format, whose lines then end at the first blank line (the
layout halugen's own templates use, so that the fixed text is a prefix providers cache), or
before it, the reply format ending the message. Which reply: ``Pattern`` and a label for the
text (``Answer``, ``Response``, ``Claim``...) ask for a hallucination of the record's
``Right <label>`` (``mutate``), ``Choice`` for the filter judge's pick among numbered
candidates (``Answer 1``, ``Claim 2``...), ``Verdict`` for a recognition Yes/No on the
record's judged text, a ``Choice`` whose description names the hallucinated one ("<1 or 2,
the one that contains hallucination>"; or an older ``Hallucinated`` line) for a contrast
judge's pick of the hallucinated one of two numbered candidates; no reply format at all is a
plain user query (``plain``). Judges are answered with the reply contract's line
(``reply_contract``).

Any task's prompts are read this way, a task folder's included: the record's labels are
first looked for among the usual ones (knowledge, question, document, ...), and when those
do not give what the reply needs (the right text, the judged text, the candidates), every
``Label:`` line above the reply format is read as a record label instead.

A follow-up in the same conversation ("I could not read your verdict: reply with the
Verdict line only") asks for a verdict or a pick without the record: ``with_record`` finds
the record in the earlier user message that asked the same, so the follow-up is answered
about the same text. ``unreadable_verdict`` is what a judge writes when it does not keep to
the contract (a hedge, or a verdict in prose the strict reader does not interpret); the
simulator sends it as the first reply to a share of recognition prompts
(``SimConfig.unreadable_verdicts``), never to a follow-up.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from .keys import mix, pick, unit
from .mutate import hallucinate
from .plain import plain_answer
from .prompt_reading import (
    ANY_NUMBERED,
    NOT_TEXT,
    RIGHT_WORDS,
    PromptInfo,
    right_text,
    shown_answer,
    shown_label,
    text_labels,
)
from .words import content_words, normalise, overlap_words

__all__ = [
    "Reply",
    "choose",
    "contrast",
    "garbage_reply",
    "reply",
    "unreadable_verdict",
    "verdict",
]


# -- the judges ----------------------------------------------------------------------------


def choose(candidates: tuple[str, ...], context: str, key: int) -> int:
    """1-based choice: the candidate sharing most words with the context; ties by hash."""
    if not candidates:
        return 1
    ctx = overlap_words(context)
    best = max(
        range(len(candidates)),
        key=lambda i: (len(ctx & overlap_words(candidates[i])), mix(key, i)),
    )
    return best + 1


def verdict(
    shown: str | None,
    key: int,
    *,
    oracle: Mapping[str, bool] | None,
    judge_accuracy: float | None,
) -> tuple[str, float]:
    """("Yes"|"No", probability the model puts on that token).

    With an oracle entry for the shown answer, the verdict is right with probability
    ``judge_accuracy`` (1.0 when None); otherwise it is a coin flip.
    """
    u = unit(key, 21)
    truth = oracle.get(normalise(shown)) if oracle and shown else None
    if truth is None:
        yes = u < 0.5
    else:
        accuracy = 1.0 if judge_accuracy is None else judge_accuracy
        yes = truth if u < accuracy else not truth
    confidence = 0.55 + 0.44 * unit(key, 22)
    return ("Yes" if yes else "No"), confidence


def contrast(
    candidates: tuple[str, ...],
    key: int,
    *,
    oracle: Mapping[str, bool] | None,
    judge_accuracy: float | None,
) -> int:
    """1-based pick of the candidate said to be hallucinated (a contrast judge).

    When the oracle knows which candidates are hallucinated (and not all are), the pick is
    one of them with probability ``judge_accuracy`` (1.0 when None) and one of the others
    otherwise; without that knowledge the pick is a fair draw by hash.
    """
    n = len(candidates)
    if n == 0:
        return 1
    truth = [oracle.get(normalise(c)) if oracle else None for c in candidates]
    bad = [i for i, t in enumerate(truth) if t is True]
    good = [i for i, t in enumerate(truth) if t is not True]
    if not bad or not good:
        return 1 + mix(key, 23) % n
    accuracy = 1.0 if judge_accuracy is None else judge_accuracy
    pool = bad if unit(key, 24) < accuracy else good
    return 1 + pool[mix(key, 25) % len(pool)]


# -- replies -------------------------------------------------------------------------------

_GARBAGE = (
    "I'm not sure which one.",
    "Both seem reasonable to me, it depends on how you look at it.",
    "Let me think about this step by step before deciding.",
    "Could you clarify what you are looking for?",
)


def garbage_reply(key: int) -> str:
    """A reply that ignores the requested format (exercises unparseable handling)."""
    return pick(_GARBAGE, key, 41)


# Replies that break the reply contract: hedges a careful reader cannot read as Yes or No,
# and verdicts stated in prose or after the contract line, which the strict reader leaves
# unsure (never interprets) and so asks again.
_UNREADABLE = (
    "It is possible that the text contains a hallucination, but I cannot be certain.",
    "I'm not sure; it could go either way.",
    "The text might be hallucinated.",
    "I cannot verify this without more context.",
    "Having compared it with what I know, I would call this text accurate.",
    "Verdict: Yes\nThough I am not fully sure about that.",
)


def unreadable_verdict(key: int) -> str:
    """A recognition reply off the contract: a hedge or a verdict in prose (exercises the
    unsure reading and the re-ask)."""
    return pick(_UNREADABLE, key, 43)


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    verdict: str = ""  # "Yes" | "No" for recognition prompts
    confidence: float = 0.0  # probability of the verdict token
    # lower-case reply-format label -> value, what a structured (JSON) reply holds
    values: Mapping[str, str] = field(default_factory=dict)


def _context(info: PromptInfo) -> str:
    """What grounds the record, in its order: every field but the judge's candidates, the
    true text a hallucination is made from and the text being judged."""
    shown = shown_label(info.fields, info.order) if info.kind == "verdict" else None
    parts = []
    for label in info.order or tuple(info.fields):
        first = label.split(" ", 1)[0]
        if label == shown or ANY_NUMBERED.match(label) or (first in RIGHT_WORDS and " " in label):
            continue
        if label in NOT_TEXT or label in ("choice", "verdict", "hallucinated"):
            continue
        parts.append(info.fields[label])
    return "\n".join(p for p in parts if p)


def reply(
    info: PromptInfo,
    *,
    prompt_key: int,
    variant_key: int,
    choice: int = 0,
    oracle: Mapping[str, bool] | None = None,
    judge_accuracy: float | None = None,
    unreadable: float = 0.0,
) -> Reply:
    """The text of choice number ``choice`` for a parsed prompt.

    ``unreadable``: the share of recognition prompts (drawn by ``prompt_key``) whose reply
    is a hedge (``unreadable_verdict``) unless the prompt is a follow-up.
    """
    if info.kind == "plain":
        return Reply(plain_answer(info.text, prompt_key, variant_key))
    if info.kind == "verdict" and not info.follow_up and unit(prompt_key, 44) < unreadable:
        return Reply(unreadable_verdict(prompt_key))
    word, confidence = "", 0.0
    if info.kind == "choose":
        k = choose(info.candidates, _context(info), variant_key)
        decided = {"choice": str(k)}
    elif info.kind == "verdict":
        word, confidence = verdict(
            shown_answer(info.fields, info.order),
            mix(prompt_key, 100 + choice),  # the prompt decides (each choice draws anew)
            oracle=oracle,
            judge_accuracy=judge_accuracy,
        )
        decided = {"verdict": word}
    elif info.kind == "contrast":
        k = contrast(
            info.candidates,
            mix(prompt_key, 200 + choice),  # like a verdict: the prompt decides
            oracle=oracle,
            judge_accuracy=judge_accuracy,
        )
        decided = {("choice" if "choice" in _lower(info.labels) else "hallucinated"): str(k)}
    elif info.kind == "hallucinate":
        decided = _hallucination(info, variant_key)
    else:
        decided = {}
    values = _values(info, decided, variant_key)
    return Reply(_render(info, values), word, confidence, values)


def _lower(labels: tuple[str, ...]) -> set[str]:
    return {label.lower() for label in labels}


def _hallucination(info: PromptInfo, key: int) -> dict[str, str]:
    options = info.options.get("pattern") or ("factualness",)
    pattern = pick(options, key, 51)
    out = {"pattern": pattern}
    fields = info.fields
    context = _context(info)
    for low in text_labels(info.labels):
        right = right_text(fields, low) or ""
        out[low] = hallucinate(right, context, pattern, key, question=fields.get("question", ""))
    return out


def _values(info: PromptInfo, decided: Mapping[str, str], key: int) -> dict[str, str]:
    """A value for every reply-format label: the decided ones, options or fillers."""
    out = {}
    for i, label in enumerate(info.labels):
        low = label.lower()
        value = decided.get(low)
        if value is None:
            opts = info.options.get(low)
            value = pick(opts, key, 60 + i) if opts else _filler(low, info, key)
        out[low] = value
    return out


def _render(info: PromptInfo, values: Mapping[str, str]) -> str:
    """One ``Label: value`` line per reply-format label, in the format's order."""
    return "\n".join(f"{label}: {values[label.lower()]}" for label in info.labels)


def _filler(label: str, info: PromptInfo, key: int) -> str:
    """A value for a label the simulator has no special meaning for (e.g. "Explanation")."""
    words = content_words(_context(info) or info.text)[:3]
    about = ", ".join(words) if words else "the record"
    return f"Based on {about}, this follows from the text given ({math.floor(unit(key) * 9) + 1})."
