"""The placeholders each template of a task must and may have, by what it is for."""

from __future__ import annotations

from collections.abc import Sequence

from .base import TaskSpec

__all__ = [
    "AGAIN_TEMPLATE",
    "CANDIDATES_FIELD",
    "CONTRAST_FIELDS",
    "COUNT_FIELD",
    "OPTIONAL",
    "VERIFY_TEMPLATE",
    "VERIFY_TEXT",
    "spec_template_fields",
    "template_fields",
]

# The template fields the engine fills besides the record's own.
CANDIDATES_FIELD = "answers"  # the filter's numbered candidates
COUNT_FIELD = "count"  # filter_again: how many candidates were shown
CONTRAST_FIELDS = ("answer_1", "answer_2")
AGAIN_TEMPLATE = "filter_again"
VERIFY_TEMPLATE = "verify"  # the verify stage's question (stages/verify.py)
VERIFY_TEXT = "text"  # verify: the text asked about (the hallucinated one, then the right one)
# templates a task may leave out: without verify.txt its labels are reported not verified
OPTIONAL = frozenset({VERIFY_TEMPLATE})


def template_fields(
    *,
    generated: bool,
    seed: Sequence[str],
    roles: Sequence[str],
    sample_stems: Sequence[str],
    filter_stem: str,
    filter_context: Sequence[str],
    strategies: Sequence[str],
    shown: str,
    judge_context: Sequence[str],
) -> list[tuple[str, set[str], set[str], str]]:
    """(stem, the placeholders it must have, those it may have, what it is for) of every
    template a task uses. ``roles``: the right, question and knowledge fields ("": none).

    A sampling template shows the right text and the question and knowledge fields (the
    other seed fields it may show); the filter lays out ``{{answers}}`` beside its context
    fields; a judge template shows its context fields and the judged text (contrast: both,
    as ``{{answer_1}}`` and ``{{answer_2}}``; knowledge: also the knowledge field).
    """
    right, question, knowledge = roles
    wanted: list[tuple[str, set[str], set[str], str]] = []
    if generated:
        shows = {f for f in (right, question, knowledge) if f}
        for stem in sample_stems:
            wanted.append((stem, shows, set(seed), "sampling"))
        candidates = {CANDIDATES_FIELD, *filter_context}
        wanted.append((filter_stem, candidates, candidates, "filter"))
        wanted.append((AGAIN_TEMPLATE, set(), {COUNT_FIELD}, "filter re-ask"))
        grounds = {VERIFY_TEXT, knowledge} if knowledge else {VERIFY_TEXT}
        wanted.append((VERIFY_TEMPLATE, grounds, {VERIFY_TEXT, *seed} - {right}, "verify"))
    for strategy in strategies:
        judged = set(CONTRAST_FIELDS) if strategy == "contrast" else {shown}
        need = {*judge_context, *judged}
        if strategy == "knowledge" and knowledge:
            need.add(knowledge)
        wanted.append((f"judge_{strategy}", need, need, f"{strategy} judge"))
    # the one follow-up after an unreadable verdict (contrast: after an unreadable pick);
    # sent in the same conversation, so it shows no field of its own
    for strategy in ("contrast", "") if strategies else ():
        if not strategy or strategy in strategies:
            stem = f"judge_{strategy}_again" if strategy else "judge_again"
            if strategy or any(s != "contrast" for s in strategies):
                wanted.append((stem, set(), set(), f"{strategy or 'verdict'} re-ask judge"))
    return wanted


def spec_template_fields(spec: TaskSpec) -> list[tuple[str, set[str], set[str], str]]:
    """``template_fields`` of a task read already."""
    return template_fields(
        generated=spec.generated,
        seed=spec.seed_fields,
        roles=(spec.right_field, spec.question_field, spec.knowledge_field),
        sample_stems=spec.sample_templates,
        filter_stem=spec.filter_template,
        filter_context=spec.filter_context,
        strategies=spec.strategies,
        shown=spec.judge_shown,
        judge_context=spec.judge_context,
    )
