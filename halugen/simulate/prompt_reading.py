"""How the simulated model reads a prompt: the last user message's reply format and record.

``parse_prompt`` reads it once (cached by text, since retries and ``n`` > 1 repeat it) into a
``PromptInfo``; ``with_record`` gives a follow-up the record of the earlier message that
asked the same. The prompt shapes read are described in ``answers``, which makes the replies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

__all__ = [
    "ANSWER_LABELS",
    "ANY_NUMBERED",
    "NOT_TEXT",
    "RIGHT_WORDS",
    "PromptInfo",
    "parse_prompt",
    "right_text",
    "shown_answer",
    "shown_label",
    "text_labels",
    "with_record",
]

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
ANY_NUMBERED = re.compile(r"^.+? (\d+)$")

ANSWER_LABELS = ("answer", "response", "summary")
# reply-format labels that are never the generated text
NOT_TEXT = frozenset({"pattern", "explanation", "reasoning", "reason", "note", "notes"})
# what a record calls the true text a hallucination is made from: "Right answer"
RIGHT_WORDS = ("right", "correct", "true", "reference")


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
    label_re, numbered = (_ANY_LABEL, ANY_NUMBERED) if any_label else (_DATA_LABEL, _NUMBERED)
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


def text_labels(labels: tuple[str, ...]) -> list[str]:
    """The reply-format labels a hallucination prompt wants the generated text under."""
    return [low for low in (label.lower() for label in labels) if low not in NOT_TEXT]


def right_text(fields: Mapping[str, str], label: str) -> str | None:
    """The record's true text for the reply label ``label`` ("Right answer" for "Answer");
    else the one true text the record has."""
    for word in RIGHT_WORDS:
        if f"{word} {label}" in fields:
            return fields[f"{word} {label}"]
    for name, value in fields.items():
        if name.split(" ", 1)[0] in RIGHT_WORDS and " " in name:
            return value
    return None


def _has_what_it_needs(
    kind: str, labels: tuple[str, ...], fields: Mapping[str, str], candidates: tuple[str, ...]
) -> bool:
    if kind in ("choose", "contrast"):
        return bool(candidates)
    if kind == "verdict":
        return shown_answer(fields, ()) is not None
    if kind == "hallucinate":
        return all(right_text(fields, low) is not None for low in text_labels(labels))
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
    elif "pattern" in low and low - NOT_TEXT:
        kind = "hallucinate"
    else:
        kind = "form"
    # the labels a demonstration's own reply uses end the record; the text labels do not
    # (a record holds "Answer 1", a judge's record "Answer")
    stops = frozenset(
        low - set(ANSWER_LABELS) - set(text_labels(labels) if kind == "hallucinate" else ())
    )
    lines = before.splitlines()
    fields, candidates, order, top = _record_fields(lines, stops)
    if not _has_what_it_needs(kind, labels, fields, candidates) or _unread_labels(lines, top):
        # a task's own record labels ("Passages", "Claim 1")
        fields, candidates, order, _ = _record_fields(lines, stops, any_label=True)
    return PromptInfo(kind, labels, options, fields, candidates, text, order)


def _has_record(info: PromptInfo) -> bool:
    if info.kind == "verdict":
        return shown_answer(info.fields, info.order) is not None
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


def shown_label(fields: Mapping[str, str], order: tuple[str, ...]) -> str | None:
    """The label of the text a recognition judge is asked about: "Answer", "Response" or
    "Summary", else the record's last field."""
    for label in ANSWER_LABELS:
        if label in fields:
            return label
    rest = [label for label in order if not ANY_NUMBERED.match(label)]
    return rest[-1] if rest else None


def shown_answer(fields: Mapping[str, str], order: tuple[str, ...]) -> str | None:
    label = shown_label(fields, order)
    return None if label is None else fields[label]
