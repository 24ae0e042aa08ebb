"""What a task is: its fields, patterns, templates, and how its model replies are parsed.

A task module (``qa``, ``dialogue``, ...) builds one ``TaskSpec``; the pipeline's stages only
talk to that object, so adding a task never touches the engine.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "ParsedCandidate",
    "TaskSpec",
    "labelled_value",
    "normalise",
    "parse_choice",
]


@dataclass(frozen=True, slots=True)
class ParsedCandidate:
    """A sampling reply, parsed. ``answer`` is "" when the reply had no usable answer."""

    answer: str
    pattern: str  # one of the task's patterns, or "unstated"
    problem: str = ""  # why the reply is unusable ("" when usable)


@dataclass(frozen=True)
class TaskSpec:
    name: str  # "qa"
    seed_fields: tuple[str, ...]  # fields every seed must have, HaluEval's names
    right_field: str  # e.g. "right_answer"
    hallucinated_field: str  # e.g. "hallucinated_answer"
    patterns: tuple[str, ...]
    sample_templates: tuple[str, ...]  # template stems, one per candidate index
    filter_template: str
    # reply of a sampling template -> parsed candidate
    parse_candidate: Callable[[str], ParsedCandidate]
    # values for the filter template given the seed fields and the answers in shown order
    filter_values: Callable[[Mapping[str, str], Sequence[str]], dict[str, str]]
    # judge reply -> 1-based position of the chosen answer in the shown order, or None
    parse_choice: Callable[[str, Sequence[str]], int | None]
    # extra checks a candidate must pass (e.g. summary length ratio); returns a problem or ""
    check_candidate: Callable[[Mapping[str, str], str], str] | None = None
    # the field cut down when a record does not fit the model's context window
    long_field: str | None = None


def normalise(text: str) -> str:
    """Form used to compare answers: NFKC, case-folded, punctuation dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[^\w\s]", " ", text)
    return " ".join(text.split())


@lru_cache(maxsize=256)
def _label_pattern(label: str) -> re.Pattern[str]:
    return re.compile(
        rf"^[\s>*_#-]*{re.escape(label)}[\s*_#]*:[\s*_]*(.*)$", re.IGNORECASE | re.MULTILINE
    )


@lru_cache(maxsize=256)
def _stop_pattern(stop_labels: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(
        r"^[\s>*_#-]*(?:" + "|".join(re.escape(s) for s in stop_labels) + r")[\s*_#]*:",
        re.IGNORECASE | re.MULTILINE,
    )


def labelled_value(text: str, label: str, stop_labels: Sequence[str] = ()) -> str | None:
    """The text after ``<label>:`` (markdown bold and '#' decorations tolerated).

    The value runs to the end of the reply or to the next line that starts with one of
    ``stop_labels``. Returns None when the label is absent.
    """
    m = _label_pattern(label).search(text)
    if not m:
        return None
    rest = text[m.start(1) :]
    if stop_labels:
        s = _stop_pattern(tuple(stop_labels)).search(rest)
        if s:
            rest = rest[: s.start()]
    return rest.strip().strip("*_").strip()


_CHOICE_LINE = re.compile(r"^[\s>*_#-]*choice[\s*_#]*:[\s*_]*(.*)$", re.IGNORECASE | re.MULTILINE)
_NUMBER = re.compile(r"\b(?:answer\s*)?#?\s*(\d+)\b", re.IGNORECASE)


def parse_choice(text: str, answers: Sequence[str]) -> int | None:
    """Which of ``answers`` (1-based) a judge reply picked; None when it cannot be told.

    Accepted, in order: a ``Choice: <n>`` line; a reply that is just a number; a reply whose
    text equals exactly one of the answers (normalised). Anything ambiguous is None.
    """
    n = len(answers)
    m = _CHOICE_LINE.search(text)
    candidates = [m.group(1)] if m else [text]
    for value in candidates:
        nums = {int(x) for x in _NUMBER.findall(value)}
        nums = {x for x in nums if 1 <= x <= n}
        stripped = value.strip().strip("*_.`'\" ")
        if len(nums) == 1 and (m or re.fullmatch(r"(?:answer\s*)?#?\s*\d+", stripped, re.I)):
            return nums.pop()
        norm = normalise(value)
        if norm:
            same = [i for i, a in enumerate(answers, 1) if normalise(a) == norm]
            if len(same) == 1:
                return same[0]
    return None
