"""The steps every task shares, each taking its settings from the task's declaration.

* ``read_reply``: a sampling reply -> the candidate's text, the pattern it names, or why
  it is unusable (``replies.read_candidate`` with the task's labels and shape);
* ``lay_out_candidates``: the filter template's values, candidates as numbered lines;
* ``read_choice``: the filter judge's pick, read strictly by the reply contract
  (``Choice: n``); ``read_choice_lenient`` interprets, for replies collected elsewhere;
* ``check``: equality with the right text, then the task's guards (``checks``).

Parsing is deliberately conservative: a reply whose text cannot be located by its label is
rejected rather than guessed at, because a wrong guess would become a benchmark item.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..reply_contract import choice_contract
from ..reply_text import json_object, visible_text
from . import base
from .base import ParsedCandidate, TaskSpec, normalise
from .replies import read_candidate

__all__ = ["check", "lay_out_candidates", "read_choice", "read_choice_lenient", "read_reply"]


def read_reply(spec: TaskSpec, text: str) -> ParsedCandidate:
    """Read a sampling reply: ``Pattern: <p>`` and ``<label>: <the hallucinated text>``.

    See ``replies.read_candidate`` for the problem codes ("answer" there means the
    generated text of any task). Checks against the right text are ``check``'s.
    """
    trailing = spec.trailing_remark
    return read_candidate(
        text,
        value_labels=spec.reply_labels,
        pattern_labels=base.PATTERN_LABELS,
        stop_labels=spec.all_stop_labels,
        clean=lambda value: spec.shape(value, trailing),
        pattern_of=spec.pattern_of,
    )


def lay_out_candidates(
    spec: TaskSpec, fields: Mapping[str, str], answers: Sequence[str]
) -> dict[str, str]:
    """Values for the filter template: the context fields and ``<Label> <n>: ...`` lines.

    The right text is left out on purpose: the judge must never see it. Each candidate is
    kept on one line so that ``<Label> <n>:`` always starts a line.
    """
    label = spec.candidate_label
    lines = [f"{label} {i}: {' '.join(a.split())}" for i, a in enumerate(answers, 1)]
    values = {name: fields[name] for name in spec.filter_context}
    values["answers"] = "\n".join(lines)
    return values


# -- the judge's choice --------------------------------------------------------------------

_CHOICE_LABEL = re.compile(r"^[\s>*_#-]*choice[\s*_#]*:", re.IGNORECASE | re.MULTILINE)
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
}  # fmt: skip
_WORD_CHOICE = re.compile(
    r"[\s*_]*(?:answer\s+)?([a-z]+)(?:\s+(?:answer|one))?[\s*_.!]*", re.IGNORECASE
)


def _choice_at(text: str, answers: Sequence[str]) -> int | None:
    """The pick of the ``Choice:`` line that ``text`` starts with."""
    pick = base.parse_choice(text, answers)
    if pick is None:
        # "Choice: two" / "Choice: the second" — number words, on the label's own line.
        line = _CHOICE_LABEL.sub("", text, count=1).split("\n", 1)[0]
        m = _WORD_CHOICE.fullmatch(re.sub(r"^\s*the\s+", "", line, flags=re.IGNORECASE))
        word = _NUMBER_WORDS.get(m.group(1).casefold()) if m else None
        if word is not None and 1 <= word <= len(answers):
            pick = word
    return pick


def _json_choice(obj: Mapping[str, object], n: int) -> int | None:
    value = obj.get("choice", obj.get("Choice"))
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= n:
        return value
    return None


def read_choice(text: str, answers: Sequence[str]) -> int | None:
    """Which candidate (1-based) the judge picked by the reply contract, or None (unsure).

    Only the contract counts (``reply_contract``): a last line ``Choice: n`` with n among
    the candidates, a JSON ``{"choice": n}`` or a reply that is the number alone. "Choice:
    Answer 2", a candidate's text, number words or a pick in prose are unsure: the filter
    asks again once, quoting the contract, and a second unsure reply rejects the seed.
    """
    if not answers:
        return None
    value = choice_contract(len(answers)).read(text)
    return None if value is None else int(value)


def read_choice_lenient(spec: TaskSpec, text: str, answers: Sequence[str]) -> int | None:
    """Which candidate (1-based) a reply picked, interpreted; None when it does not say
    clearly. Not used by the filter (``read_choice`` is); kept for replies to other prompts.

    Invisible characters and reasoning blocks go first (``visible_text``). A JSON reply
    gives its ``choice``. Otherwise every ``Choice:`` line is read; the ones that name a
    candidate must all name the same one (a judge that changes its mind is ambiguous), and
    a line naming none (an echoed placeholder) is ignored. Number words count ("Choice:
    the second"). Without a ``Choice:`` line, a bare number or the exact text of one
    candidate is accepted. The task's word for a candidate ("Response", "reply") is read as
    "answer", in the reply and in the candidates alike.
    """
    text = visible_text(text)
    obj = json_object(text)
    if obj is not None:
        return _json_choice(obj, len(answers))
    words = spec.candidate_word_regex
    if words is not None:
        text = words.sub("answer", text)
        answers = [words.sub("answer", a) for a in answers]
    starts = [m.start() for m in _CHOICE_LABEL.finditer(text)]
    if not starts:
        return base.parse_choice(text, answers)
    picks = {_choice_at(text[i:], answers) for i in starts} - {None}
    return picks.pop() if len(picks) == 1 else None


# -- checks --------------------------------------------------------------------------------


def check(spec: TaskSpec, fields: Mapping[str, str], text: str) -> str:
    """ "" when ``text`` may become data, else why not.

    "equals_right_answer" when it is the right text up to punctuation and case (for every
    task: a dialogue turn or summary that only re-punctuates the true one is not a
    hallucination either); then the task's guards in their declared order.
    """
    right = fields.get(spec.right_field, "")
    if normalise(text) == normalise(right):
        return "equals_right_answer"
    knowledge = fields.get(spec.knowledge_field, "") if spec.knowledge_field else ""
    for guard in spec.checks:
        problem = guard(right, text, knowledge)
        if problem:
            return problem
    return ""
