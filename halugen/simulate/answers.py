"""What the simulated model says: deterministic replies in the shapes halugen's prompts ask for.

Pure functions, no I/O. ``parse_prompt`` reads the last user message once (cached by text,
since retries and ``n`` > 1 repeat it); ``reply`` turns that reading plus two 64-bit keys
into the text of one choice:

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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .keys import mix, pick, unit
from .mutate import hallucinate
from .plain import plain_answer
from .words import content_words, normalise, overlap_words

__all__ = [
    "PromptInfo",
    "Reply",
    "choose",
    "contrast",
    "garbage_reply",
    "parse_prompt",
    "reply",
    "unreadable_verdict",
    "verdict",
    "with_record",
]

# -- reading the prompt --------------------------------------------------------------------

_REPLY_FORMAT = "reply format:"

# Labels that introduce the record's data (and a few that demonstrations use); a value runs
# from its label to a blank line or the next of these labels.
_DATA_LABEL = re.compile(
    r"^[ \t>*_#-]*("
    r"knowledge|question|document|dialogue history|dialogue|context|query|user query|"
    r"instruction|input|right (?:answer|response|summary)|"
    r"hallucinated (?:answer|response|summary)|"
    r"(?:answer|response|summary|candidate) \d+|answer|response|summary|"
    r"pattern|choice|verdict|explanation|reasoning"
    r")[ \t*_#]*:[ \t*_]*(.*)$",
    re.IGNORECASE,
)
# Any label, for the prompts of a task whose record labels are its own ("Passages: ...").
_ANY_LABEL = re.compile(r"^[ \t>*_#-]*([A-Za-z][A-Za-z0-9 _-]{0,40}?)[ \t*_#]*:[ \t*_]*(.*)$")
_FORMAT_LABEL = re.compile(r"^[ \t>*_#-]*([A-Za-z][A-Za-z0-9 _-]{0,40}?)[ \t*_#]*:[ \t]*(.*)$")
# a Choice line asking for the wrong one of the candidates: a contrast judge's, not a filter's
_PICKS_HALLUCINATED = re.compile(r"hallucinat|\bwrong\b|\bincorrect\b|\bfalse\b", re.I)
_ONE_OF = re.compile(r"one of\s*:?\s*([^>\n]*)", re.IGNORECASE)
_OPTION_SPLIT = re.compile(r"\s*(?:,|/|\||\bor\b)\s*")
_NUMBERED = re.compile(r"^(?:answer|response|summary|candidate) (\d+)$")
_ANY_NUMBERED = re.compile(r"^.+? (\d+)$")

_ANSWER_LABELS = ("answer", "response", "summary")
# reply-format labels that are never the generated text
_NOT_TEXT = frozenset({"pattern", "explanation", "reasoning", "reason", "note", "notes"})
# what a record calls the true text a hallucination is made from: "Right answer"
_RIGHT = ("right", "correct", "true", "reference")


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """What the simulator understood of a prompt's last user message."""

    kind: str  # hallucinate | choose | verdict | contrast | form (other format) | plain
    labels: tuple[str, ...]  # reply-format labels as written, in order
    options: Mapping[str, tuple[str, ...]]  # lower-case label -> its "one of:" options
    fields: Mapping[str, str]  # lower-case data label -> value (the record's)
    candidates: tuple[str, ...]  # "Answer 1" ... "Answer N" of a judge prompt, in order
    text: str  # the whole last user message (a follow-up's: the message with the record)
    order: tuple[str, ...] = ()  # the record's labels as they come, the judged text last
    follow_up: bool = False  # the record came from an earlier message of the conversation


def _split_format(text: str) -> tuple[str, list[str] | None]:
    """(the message without its last ``Reply format:`` block, the block's lines after that
    line) or (text, None). The block runs to the end of the message, or to the first blank
    line after its own lines when more text (the record) follows it."""
    low = text.lower()
    at = low.rfind(_REPLY_FORMAT)
    if at < 0:
        return text, None
    # only a line that starts with it counts (markdown decoration allowed)
    line_start = low.rfind("\n", 0, at) + 1
    if low[line_start:at].strip(" \t>*_#-"):
        return text, None
    lines = text[at + len(_REPLY_FORMAT) :].splitlines()
    end = len(lines)
    labelled = False
    for i, line in enumerate(lines):
        if line.strip():
            labelled = True
        elif labelled and any(rest.strip() for rest in lines[i:]):
            end = i
            break
    before = text[:line_start]
    if end < len(lines):  # the record follows the block: it ends what the scan reads
        before += "\n" + "\n".join(lines[end:]).strip("\n")
    return before, lines[:end]


def _asks_hallucinated(lines: list[str]) -> bool:
    """Does the format's ``Choice`` line ask for the hallucinated candidate?"""
    for line in lines:
        m = _FORMAT_LABEL.match(line)
        if m and m.group(1).strip().lower() == "choice":
            return _PICKS_HALLUCINATED.search(m.group(2)) is not None
    return False


def _format_labels(lines: list[str]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    labels: list[str] = []
    options: dict[str, tuple[str, ...]] = {}
    for line in lines:
        m = _FORMAT_LABEL.match(line)
        if not m:
            continue
        label = m.group(1).strip()
        labels.append(label)
        o = _ONE_OF.search(m.group(2))
        if o:
            opts = tuple(x.strip(" .<>*_`'\"") for x in _OPTION_SPLIT.split(o.group(1).strip()))
            options[label.lower()] = tuple(x for x in opts if x)
    return tuple(labels), options


def _record_fields(
    lines: list[str], reply_labels: frozenset[str], *, any_label: bool = False
) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...], int]:
    """The record's labelled values, read backwards from the reply format, with the judge's
    numbered candidates, the labels in the record's order and the index of the line of its
    first label (``len(lines)`` when there is none).

    Demonstrations come before the record and use the same labels, so the scan stops at
    the first label seen twice, or at a demonstration's own reply (a line labelled like
    the reply format asks, e.g. ``Choice: 1``). ``any_label``: every ``Label:`` line is a
    record label (a task's own labels), and one with no value (a heading such as "The
    record:") ends the record.
    """
    label_re, numbered = (_ANY_LABEL, _ANY_NUMBERED) if any_label else (_DATA_LABEL, _NUMBERED)
    fields: dict[str, str] = {}
    order: list[str] = []
    tail: list[str] = []  # unlabelled lines below the current line, up to a blank line
    top = len(lines)
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if not line.strip():
            tail.clear()
            continue
        m = label_re.match(line)
        if not m:
            tail.append(line)
            continue
        label = " ".join(m.group(1).lower().split())
        if label in fields or label in reply_labels:
            break
        value = m.group(2).strip()
        if any_label and not value and not tail and fields:
            break
        if tail:
            value = "\n".join([value, *reversed(tail)]).strip()
            tail.clear()
        fields[label] = value.strip("*_ ").strip()
        order.append(label)
        top = i
    # the judge's candidates: the run "Answer 1", "Answer 2", ... as the record lists them
    candidates: list[str] = []
    for label in reversed(order):
        m = numbered.match(label)
        if m and int(m.group(1)) == len(candidates) + 1:
            candidates.append(fields[label])
        elif candidates:
            break
    return fields, tuple(candidates), tuple(reversed(order)), top


def _unread_labels(lines: list[str], top: int) -> bool:
    """Does the record hold labelled lines the usual labels did not read: in it, or right
    above its first label ("Passages: ..." before "Question: ...")?"""
    end = top
    while end > 0 and lines[end - 1].strip():
        end -= 1
    for line in lines[end:]:
        m = _ANY_LABEL.match(line)
        if m and m.group(2).strip() and not _DATA_LABEL.match(line):
            return True
    return False


def _text_labels(labels: tuple[str, ...]) -> list[str]:
    """The reply-format labels a hallucination prompt wants the generated text under."""
    return [low for low in (label.lower() for label in labels) if low not in _NOT_TEXT]


def _right_text(fields: Mapping[str, str], label: str) -> str | None:
    """The record's true text for the reply label ``label`` ("Right answer" for "Answer");
    else the one true text the record has."""
    for word in _RIGHT:
        if f"{word} {label}" in fields:
            return fields[f"{word} {label}"]
    for name, value in fields.items():
        if name.split(" ", 1)[0] in _RIGHT and " " in name:
            return value
    return None


def _has_what_it_needs(
    kind: str, labels: tuple[str, ...], fields: Mapping[str, str], candidates: tuple[str, ...]
) -> bool:
    if kind in ("choose", "contrast"):
        return bool(candidates)
    if kind == "verdict":
        return _shown_answer(fields, ()) is not None
    if kind == "hallucinate":
        return all(_right_text(fields, low) is not None for low in _text_labels(labels))
    return True


@lru_cache(maxsize=4096)
def parse_prompt(text: str) -> PromptInfo:
    """Read a last user message: which reply it asks for and the record it carries."""
    before, fmt_lines = _split_format(text)
    if fmt_lines is None:
        return PromptInfo("plain", (), {}, {}, (), text)
    labels, options = _format_labels(fmt_lines)
    low = {label.lower() for label in labels}
    if "choice" in low:
        kind = "contrast" if _asks_hallucinated(fmt_lines) else "choose"
    elif "verdict" in low:
        kind = "verdict"
    elif "hallucinated" in low:
        kind = "contrast"
    elif "pattern" in low and low - _NOT_TEXT:
        kind = "hallucinate"
    else:
        kind = "form"
    # the labels a demonstration's own reply uses end the record; the text labels do not
    # (a record holds "Answer 1", a judge's record "Answer")
    stops = frozenset(
        low - set(_ANSWER_LABELS) - set(_text_labels(labels) if kind == "hallucinate" else ())
    )
    lines = before.splitlines()
    fields, candidates, order, top = _record_fields(lines, stops)
    if not _has_what_it_needs(kind, labels, fields, candidates) or _unread_labels(lines, top):
        # a task's own record labels ("Passages", "Claim 1")
        fields, candidates, order, _ = _record_fields(lines, stops, any_label=True)
    return PromptInfo(kind, labels, options, fields, candidates, text, order)


def _has_record(info: PromptInfo) -> bool:
    if info.kind == "verdict":
        return _shown_answer(info.fields, info.order) is not None
    return bool(info.candidates)


def with_record(info: PromptInfo, earlier: Sequence[str]) -> PromptInfo:
    """``info`` of a recognition follow-up that carries no record, completed with the record
    of the latest earlier message asking for the same kind of reply; a sampling re-ask (a
    line naming the failed guard after the rejected reply) answered as its first ask, drawn
    anew; ``info`` otherwise."""
    if info.kind == "plain":
        for text in earlier:
            first = parse_prompt(text)
            if first.kind == "hallucinate":
                return replace(first, follow_up=True)
    if info.kind not in ("verdict", "contrast") or _has_record(info):
        return info
    for text in reversed(earlier):
        first = parse_prompt(text)
        if first.kind == info.kind and _has_record(first):
            return replace(
                info,
                fields=first.fields,
                candidates=first.candidates,
                text=first.text,
                order=first.order,
                follow_up=True,
            )
    return info


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
    shown = _shown_label(info.fields, info.order) if info.kind == "verdict" else None
    parts = []
    for label in info.order or tuple(info.fields):
        first = label.split(" ", 1)[0]
        if label == shown or _ANY_NUMBERED.match(label) or (first in _RIGHT and " " in label):
            continue
        if label in _NOT_TEXT or label in ("choice", "verdict", "hallucinated"):
            continue
        parts.append(info.fields[label])
    return "\n".join(p for p in parts if p)


def _shown_label(fields: Mapping[str, str], order: tuple[str, ...]) -> str | None:
    """The label of the text a recognition judge is asked about: "Answer", "Response" or
    "Summary", else the record's last field."""
    for label in _ANSWER_LABELS:
        if label in fields:
            return label
    rest = [label for label in order if not _ANY_NUMBERED.match(label)]
    return rest[-1] if rest else None


def _shown_answer(fields: Mapping[str, str], order: tuple[str, ...]) -> str | None:
    label = _shown_label(fields, order)
    return None if label is None else fields[label]


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
            _shown_answer(info.fields, info.order),
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
    for low in _text_labels(info.labels):
        right = _right_text(fields, low) or ""
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
