"""Recognition judge: which template a (task, strategy) uses, what fills it, how it is asked.

The templates are ``prompts/<task>/judge_<strategy>.txt``. Their final user message holds the
record as labelled lines and ends with the reply-format block, whose last line is the reply
contract (``reply_contract``; ``contract_for``):

* ``plain`` / ``knowledge``: ``Verdict: <Yes or No>`` ("Yes" = contains hallucination);
* ``cot``: ``Reasoning: <...>`` then ``Verdict: <Yes or No>``;
* ``contrast``: both texts as ``Answer 1`` / ``Answer 2`` (``Response n`` / ``Summary n`` for
  dialogue and summarization; the template fields are ``answer_1`` / ``answer_2`` for every
  task) and ``Choice: <1 or 2>``, the number of the hallucinated one.

Where the endpoint has structured outputs the same contract is asked as a JSON schema with
an enum (``response_format``). A reply the reader cannot read is followed once, in the same
conversation, by ``prompts/<task>/judge_again.txt`` (``judge_contrast_again.txt`` for
contrast): a stricter instruction that quotes the contract and asks for its line alone.

Which strategies apply: every one for qa and dialogue. For summarization the document is in
every prompt already (a summary cannot be judged without it), so ``knowledge`` would be
``plain`` under another name: it is refused, like a strategy a task does not have, so no
report ever shows a plain run as a knowledge one. The general task has no knowledge and no
second answer to contrast with, so only ``plain`` and ``cot``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..prompts import Template
from ..reply_contract import VERDICT, Contract
from ..tasks import BUILTIN_TASKS
from ..tasks.base import TaskSpec
from ..tasks.schema import STRATEGIES
from ..tasks.templates import task_template
from .readers import CONTRAST

__all__ = [
    "JUDGE_TASKS",
    "EvalItem",
    "again_template_name",
    "contract_for",
    "judge_template",
    "judge_values",
    "max_tokens_for",
    "request_params",
    "response_format",
    "shown_texts",
    "strategies_for",
    "template_name",
]

# Which strategies apply, which fields are the right and the hallucinated text, which
# template field holds the judged text and which fields every judge template shows: each
# task declares them (``[evaluate]`` and ``[fields]`` in its task.toml).
JUDGE_TASKS = BUILTIN_TASKS


# A verdict is one word; a little room for "Verdict:" and markdown around it.
_SHORT_TOKENS = 16
# Reasoning first: enough for a paragraph or two, bounded so a rambling model stays cheap.
_COT_TOKENS = 512
# Alternatives returned per token when scoring by logprobs (Yes and No are nearly always in
# the top five when the model answers the question at all).
_TOP_LOGPROBS = 5


@dataclass(frozen=True)
class EvalItem:
    """One item a recognition experiment judges.

    ``fields`` uses HaluEval's names (knowledge, question, right_answer, hallucinated_answer,
    dialogue_history, ..., general: user_query, chatgpt_response, hallucination).
    ``human_label`` is the general task's truth: True when the annotators' majority says the
    response is hallucinated; None for the other tasks.
    """

    task: str
    key: str
    item_id: str
    fields: Mapping[str, str]
    human_label: bool | None = None


def _check(spec: TaskSpec, strategy: str) -> TaskSpec:
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if strategy not in spec.strategies:
        raise UsageError(
            f"strategy {strategy!r} does not apply to the {spec.name} task "
            f"(it has: {', '.join(spec.strategies)})"
        )
    return spec


def strategies_for(spec: TaskSpec) -> tuple[str, ...]:
    """The strategies that apply to the task ``spec``."""
    return _check(spec, "plain").strategies


def template_name(spec: TaskSpec, strategy: str) -> str:
    """Template stem under ``prompts/<task>/``; UsageError when the strategy does not apply."""
    _check(spec, strategy)
    return f"judge_{strategy}"


def again_template_name(spec: TaskSpec, strategy: str) -> str:
    """Stem of the follow-up sent once after an unreadable reply of (task, strategy)."""
    _check(spec, strategy)
    return "judge_contrast_again" if strategy == "contrast" else "judge_again"


def judge_template(spec: TaskSpec, strategy: str, directory: Path | None = None) -> Template:
    """The loaded template (``directory`` overrides the bundled prompts, as for sampling)."""
    return task_template(spec, template_name(spec, strategy), directory)


def _field(item: EvalItem, name: str) -> str:
    try:
        return str(item.fields[name]).strip()
    except KeyError:
        raise UsageError(
            f"{item.task} item {item.item_id or item.key} has no field {name!r} "
            f"(it has: {', '.join(sorted(item.fields))})"
        ) from None


def judge_values(
    spec: TaskSpec,
    strategy: str,
    item: EvalItem,
    shown: str,
    order: tuple[str, str] | None = None,
) -> dict[str, str]:
    """Values for the judge template of (task, strategy).

    ``shown`` is the text judged (plain / knowledge / cot). For ``contrast`` ``order`` holds
    the two texts in the order shown (``answer_1``, ``answer_2``) and ``shown`` is ignored.
    Texts are stripped: a trailing newline must not tell a right summary from a hallucinated
    one (a form leak in HaluEval's released data).
    """
    _check(spec, strategy)
    values = {name: _field(item, name) for name in spec.judge_context}
    if strategy == "knowledge":
        values[spec.knowledge_field] = _field(item, spec.knowledge_field)
    if strategy == "contrast":
        if order is None or len(order) != 2:
            raise UsageError("the contrast strategy needs the two texts in shown order")
        values["answer_1"] = order[0].strip()
        values["answer_2"] = order[1].strip()
    else:
        values[spec.judge_shown] = shown.strip()
    return values


def shown_texts(spec: TaskSpec, item: EvalItem) -> tuple[str, str]:
    """(right, hallucinated) texts of an item of the task ``spec``; general: its one response
    for both roles."""
    return _field(item, spec.right_field), _field(item, spec.hallucinated_field)


def max_tokens_for(strategy: str) -> int:
    """Output cap of one judge call: short for a bare verdict, room to reason for cot."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    return _COT_TOKENS if strategy == "cot" else _SHORT_TOKENS


def contract_for(strategy: str) -> Contract:
    """The reply contract a judge of ``strategy`` ends with: ``Verdict: Yes|No``, or
    ``Choice: 1|2`` (the hallucinated one) for contrast."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    return CONTRAST if strategy == "contrast" else VERDICT


def response_format(strategy: str) -> dict[str, Any]:
    """The JSON schema a judge of ``strategy`` is asked for when the endpoint supports it:
    the contract's field as an enum (``{"verdict"}``, ``{"reasoning", "verdict"}`` for cot,
    ``{"choice"}`` for contrast)."""
    contract = contract_for(strategy)
    if strategy == "cot":
        return contract.response_format("reasoned_verdict", reasoning=True)
    if strategy == "contrast":
        return contract.response_format("contrast")
    return contract.response_format("verdict")


def request_params(strategy: str, *, logprobs: bool = False) -> dict[str, Any]:
    """Keyword arguments for ``records.ChatRequest`` (besides model and messages).

    Temperature 0, as in the paper: the verdict should be the model's most likely one.
    ``logprobs`` asks for the alternatives of each token so ``verdict_from_logprobs`` can
    score P(Yes) against P(No); it does not apply to contrast (its answer is a number).
    """
    params: dict[str, Any] = {"temperature": 0.0, "max_tokens": max_tokens_for(strategy)}
    if logprobs and strategy != "contrast":
        params["logprobs"] = True
        params["top_logprobs"] = _TOP_LOGPROBS
    return params
