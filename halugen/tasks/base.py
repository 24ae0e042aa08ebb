"""What a task is: a declaration of its fields, patterns, reply labels, layout and checks.

A task is a folder: ``task.toml`` declares it and ``prompts/`` holds its templates
(``folder`` reads one into a ``TaskSpec``); the built-in tasks are such folders too. The
steps every task shares (reading a sampling reply, laying out the filter's candidates,
reading the judge's choice, checking a candidate) are in ``steps`` and take their settings
from the spec, so a new task is a declaration plus its prompts, and the engine never
changes for one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Protocol

from ..prompts import Template

__all__ = [
    "Check",
    "ParsedCandidate",
    "TaskSpec",
    "content_words",
    "labelled_value",
    "normalise",
    "parse_choice",
]


class Check(Protocol):
    """``guard(right, candidate, knowledge)``: "" when the candidate passes, else why not
    (``knowledge``: the seed's knowledge side, "" when the task has none); the guards are
    in ``checks``."""

    def __call__(self, right: str, candidate: str, knowledge: str = "") -> str: ...


@dataclass(frozen=True, slots=True)
class ParsedCandidate:
    """A sampling reply, parsed. ``answer`` is "" when the reply had no usable answer."""

    answer: str
    pattern: str  # one of the task's patterns, or "unstated"
    problem: str = ""  # why the reply is unusable ("" when usable)


# A shape turns the labelled value of a reply into the candidate's text, and returns the
# trailing "(pattern: x)" remark it cut off (or ""); it gets the task's remark pattern.
Shape = Callable[[str, "re.Pattern[str]"], tuple[str, str]]

# Labels that end a labelled value in every task: the model explaining itself.
COMMENTARY_LABELS = (
    "Explanation",
    "Reason",
    "Reasoning",
    "Rationale",
    "Note",
    "Notes",
    "Justification",
)
PATTERN_LABELS = ("Pattern", "Hallucination pattern", "Pattern used")


@dataclass(frozen=True)
class TaskSpec:
    """One task, declared: what its ``task.toml`` and templates say. The steps that use it
    (reading a reply, laying out the filter, checking a candidate) are ``steps``'s."""

    name: str  # "qa"
    seed_fields: tuple[str, ...]  # fields every seed must have, HaluEval's names
    right_field: str  # e.g. "right_answer"
    hallucinated_field: str  # e.g. "hallucinated_answer"
    patterns: tuple[str, ...]
    # how a reply names a pattern: (regex of the words, pattern), tried as one regex; the
    # leftmost match names the pattern ("factual" -> "factualness")
    pattern_words: tuple[tuple[str, str], ...]
    # labels of the generated text in a sampling reply, the one the prompts ask for first
    reply_labels: tuple[str, ...]
    # further labels that end the text's value when they follow it (the record's own
    # labels, echoed); the value labels, pattern labels and commentary labels always do
    stop_labels: tuple[str, ...]
    shape: Shape  # labelled value -> (text, trailing remark); see ``shapes``
    # the filter's layout: "Answer 1: ..." lines beside these seed fields
    candidate_label: str
    filter_context: tuple[str, ...]
    # guards a candidate must pass after equality with the right text, in order
    checks: tuple[Check, ...] = ()
    # words a judge may use for a candidate besides the label ("reply" for "Response")
    candidate_words: tuple[str, ...] = ()
    sample_templates: tuple[str, ...] = ("sample_onepass", "sample_conversation")
    filter_template: str = "filter"
    # the field cut down when a record does not fit the model's context window
    long_field: str | None = None
    # -- what the rest of the benchmark needs (evaluation, audit, exports, analysis) --------
    # "generated": seeds -> hallucinations; "annotated": items come from annotation and are
    # judged against their human label (the general track), never generated
    kind: str = "generated"
    title: str = ""  # how reports name it ("QA"); the name when empty
    description: str = ""  # one line, for dataset cards
    definitions: tuple[str, ...] = ()  # one per pattern, in the order of ``patterns``
    # the fields of a finished item in export order; seed fields + the hallucinated one
    # when empty (an annotated task declares its own)
    item_fields: tuple[str, ...] = ()
    question_field: str = ""  # what asks (the question, the dialogue history); "" when none
    knowledge_field: str = ""  # what grounds it (knowledge, the document); "" when none
    label_field: str = ""  # an annotated task's human label (yes / no)
    topic_fields: tuple[str, ...] = ()  # what a record is about, for topic analysis
    field_notes: tuple[tuple[str, str], ...] = ()  # field -> one line, for dataset cards
    # recognition: the strategies that apply, the template field of the judged text and
    # the item fields every judge template shows beside it
    strategies: tuple[str, ...] = ()
    judge_shown: str = ""
    judge_context: tuple[str, ...] = ()
    seed_map: tuple[tuple[str, str], ...] = ()  # field -> column, when seeds are a table
    # what the dataset card calls the table seeds' dataset and their licence ([seeds]
    # source_name, license); "" when the folder does not say
    seed_source_name: str = ""
    seed_license: str = ""
    # stem -> template, parsed from the folder's prompts/ (the record of what was declared)
    templates: tuple[tuple[str, Template], ...] = ()
    folder: Path | None = None  # where it was read from
    sources: tuple[tuple[str, str], ...] = ()  # the folder's files as read: (path, text)
    builtin: bool = False  # one of halugen's own tasks

    # -- the declaration, read --------------------------------------------------------------

    @property
    def generated(self) -> bool:
        return self.kind == "generated"

    @property
    def record_fields(self) -> tuple[str, ...]:
        """The fields of a finished item, in export order (HaluEval's layout for its tasks)."""
        return self.item_fields or (*self.seed_fields, self.hallucinated_field)

    @property
    def display_name(self) -> str:
        return self.title or self.name

    def definition(self, pattern: str) -> str:
        """What ``pattern`` means, as the task declares it."""
        return dict(zip(self.patterns, self.definitions, strict=False)).get(pattern, "")

    # -- compiled once per spec ------------------------------------------------------------

    @cached_property
    def pattern_regex(self) -> re.Pattern[str]:
        alternatives = "|".join(f"(?P<p{i}>{rx})" for i, (rx, _) in enumerate(self.pattern_words))
        return re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE)

    @cached_property
    def trailing_remark(self) -> re.Pattern[str]:
        """A trailing "(pattern: x)", "[Pattern - x]" or "(<pattern name>)"."""
        names = "|".join(
            r"[\s_–—-]*".join(re.escape(part) for part in re.split(r"[\s_-]+", p))
            for p in self.patterns
        )
        return re.compile(
            r"\s*[\(\[]\s*(?:(?:hallucination\s+)?pattern\b[^)\]]*"
            rf"|(?:{names})(?:\s+pattern)?)\s*[\)\]]\s*$",
            re.IGNORECASE,
        )

    @cached_property
    def all_stop_labels(self) -> tuple[str, ...]:
        labels = (*self.reply_labels, *PATTERN_LABELS, *COMMENTARY_LABELS, *self.stop_labels)
        return tuple(dict.fromkeys(labels))

    @cached_property
    def candidate_word_regex(self) -> re.Pattern[str] | None:
        words = {self.candidate_label.lower(), *(w.lower() for w in self.candidate_words)}
        words.discard("answer")
        if not words:
            return None
        return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in sorted(words)) + r")\b", re.I)

    def pattern_of(self, text: str | None) -> str:
        """The first of the task's patterns named in ``text``; "unstated" when none is."""
        if not text:
            return "unstated"
        m = self.pattern_regex.search(text)
        if not m:
            return "unstated"
        index = int(next(k for k, v in m.groupdict().items() if v is not None)[1:])
        return self.pattern_words[index][1]


_PUNCTUATION = re.compile(r"[^\w\s]")
# Texts whose normalised form is remembered. A seed's right text and knowledge are
# normalised for every check of every candidate of the seed (several times per check:
# equality, containment, spans, overlap), 20-40 us each; the cache holds the seeds in
# flight at the default concurrency with room for their candidates, and only strings
# (about twice the texts' size: a few MB for long documents).
NORMALISED_TEXTS = 2048


# ASCII text is its own NFKC form and case-folds as ``lower`` does; its punctuation (what
# ``_PUNCTUATION`` matches among the 128 characters, asked of the regex itself) becomes
# spaces by a byte table (one C pass) instead of a regex's test of each character
_ASCII_PUNCTUATION = bytes(
    ord(" ") if _PUNCTUATION.match(chr(c)) else c for c in range(128)
) + bytes(range(128, 256))


@lru_cache(maxsize=NORMALISED_TEXTS)
def normalise(text: str) -> str:
    """Form used to compare answers: NFKC, case-folded, punctuation dropped, spaces collapsed."""
    if text.isascii():
        return " ".join(text.lower().encode().translate(_ASCII_PUNCTUATION).decode().split())
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _PUNCTUATION.sub(" ", text)
    return " ".join(text.split())


# Words that carry no content: left out when a text's words are compared with another's
# (a guard's overlap with the knowledge, the audit's overlap measure).
_STOP_LIST = """a an the and or of to in on at by for with from is are was were be been it
    its this that as not no"""
STOP_WORDS = frozenset(_STOP_LIST.split())


def content_words(text: str) -> set[str]:
    """The distinct words of ``text`` (``normalise``d) that are not ``STOP_WORDS``."""
    return {w for w in normalise(text).split() if w not in STOP_WORDS}


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
    text equals exactly one of the answers (normalised). Anything ambiguous is None. The
    task-aware reader (several ``Choice:`` lines, number words, JSON, reasoning blocks) is
    ``steps.read_choice_lenient``; this is its innermost step (the filter reads strictly).
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
