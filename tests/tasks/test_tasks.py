"""The tasks as declarations over shared steps: every task's spec, reply reading, choice
reading, filter layout and guards, from one set of tests and the per-task cases."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from halugen.tasks import TASK_NAMES, steps
from halugen.tasks.base import ParsedCandidate, TaskSpec
from halugen.tasks.checks import ContainsRight, LengthClass, LengthRatio
from halugen.tasks.shapes import one_line
from tests.task_specs import task_spec

from . import cases

SPECS = {name: task_spec(name) for name in ("qa", "dialogue", "summarization")}

EXPECTED = {
    "qa": (
        ("knowledge", "question", "right_answer"),
        "right_answer",
        "hallucinated_answer",
        ("comprehension", "factualness", "specificity", "inference"),
        "Answer",
        ("knowledge", "question"),
    ),
    "dialogue": (
        ("knowledge", "dialogue_history", "right_response"),
        "right_response",
        "hallucinated_response",
        ("extrinsic-soft", "extrinsic-hard", "extrinsic-grouped"),
        "Response",
        ("knowledge", "dialogue_history"),
    ),
    "summarization": (
        ("document", "right_summary"),
        "right_summary",
        "hallucinated_summary",
        ("factual", "non-factual", "intrinsic"),
        "Summary",
        ("document",),
    ),
}


def _cases(kind: str) -> list[tuple[str, tuple]]:
    return [(task, case) for task in SPECS for case in getattr(cases, f"{task.upper()}_{kind}")]


def _ids(kind: str) -> list[str]:
    return [
        f"{task}-{i}"
        for task in SPECS
        for i, _ in enumerate(getattr(cases, f"{task.upper()}_{kind}"))
    ]


@pytest.mark.parametrize("task", list(SPECS))
def test_spec_declares_fields_patterns_layout_and_templates(task: str) -> None:
    spec = SPECS[task]
    fields, right, hallucinated, patterns, label, context = EXPECTED[task]
    assert isinstance(spec, TaskSpec)
    assert task in TASK_NAMES and task_spec(task) is spec
    assert (spec.name, spec.seed_fields, spec.right_field) == (task, fields, right)
    assert spec.hallucinated_field == hallucinated
    assert spec.patterns == patterns == getattr(SPECS[task].__class__, "patterns", patterns)
    assert (spec.candidate_label, spec.filter_context) == (label, context)
    assert spec.sample_templates == ("sample_onepass", "sample_conversation")
    assert spec.filter_template == "filter"
    assert spec.long_field in fields
    # every declared pattern can be named by its own name
    for pattern in patterns:
        assert spec.pattern_of(f"Pattern: {pattern}") == pattern


@pytest.mark.parametrize(("task", "case"), _cases("CANDIDATES"), ids=_ids("CANDIDATES"))
def test_parse_candidate(task: str, case: tuple[str, str, str, str]) -> None:
    reply, text, pattern, problem = case
    assert steps.read_reply(SPECS[task], reply) == ParsedCandidate(text, pattern, problem)


@pytest.mark.parametrize("task", list(SPECS))
def test_usable_candidates_are_one_trimmed_line(task: str) -> None:
    spec = SPECS[task]
    for reply, *_ in getattr(cases, f"{task.upper()}_CANDIDATES"):
        got = steps.read_reply(spec, reply)
        assert got.pattern in (*spec.patterns, "unstated")
        assert (got.problem == "") == bool(got.answer)
        assert "\n" not in got.answer and "  " not in got.answer
        assert got.answer == got.answer.strip()
        assert "[Human]" not in got.answer and "[Assistant]" not in got.answer


@pytest.mark.parametrize("task", list(SPECS))
def test_parse_candidate_does_not_compare_with_the_right_text(task: str) -> None:
    spec = SPECS[task]
    label = spec.reply_labels[0]
    reply = f"Right {label.lower()}: Delhi\nPattern: {spec.patterns[0]}\n{label}: Delhi"
    assert steps.read_reply(spec, reply) == ParsedCandidate("Delhi", spec.patterns[0], "")


@pytest.mark.parametrize(("task", "case"), _cases("CHOICES"), ids=_ids("CHOICES"))
def test_parse_choice_lenient(task: str, case: tuple[str, int | None]) -> None:
    reply, expected = case
    shown = getattr(cases, f"{task.upper()}_SHOWN")
    assert steps.read_choice_lenient(SPECS[task], reply, shown) == expected


@pytest.mark.parametrize(("task", "case"), _cases("CHOICES"), ids=_ids("CHOICES"))
def test_parse_choice_commits_only_by_the_contract_and_never_to_another_pick(
    task: str, case: tuple[str, int | None]
) -> None:
    """The filter reads strictly: on the same table, a pick is the careful reading's or
    unsure (a reply the lenient reader had to interpret is asked again instead)."""
    reply, expected = case
    shown = getattr(cases, f"{task.upper()}_SHOWN")
    got = steps.read_choice(reply, shown)
    assert got is None or got == expected
    if got is None and expected is not None:
        assert steps.read_choice(f"Choice: {expected}", shown) == expected


@pytest.mark.parametrize("task", list(SPECS))
def test_parse_choice_reads_json_and_skips_reasoning_and_invisible_characters(task: str) -> None:
    spec = SPECS[task]
    shown = ["one", "none", "two"]
    assert steps.read_choice('{"choice": 3}', shown) == 3
    assert steps.read_choice('```json\n{"choice": "2"}\n```', shown) == 2
    assert steps.read_choice('{"choice": 4}', shown) is None
    assert steps.read_choice('{"choice": true}', shown) is None
    assert steps.read_choice("<think>Choice: 1 looks wrong</think>\nChoice: 2", shown) == 2
    assert steps.read_choice("\ufeffChoice:\u200b 3", shown) == 3
    assert steps.read_choice("Choice: three", shown) is None  # not the contract: unsure
    assert steps.read_choice_lenient(spec, "Choice: three", shown) == 3
    assert steps.read_choice("Choice: 4", shown) is None
    assert steps.read_choice("<think>Choice: 1", shown) is None  # all reasoning, no answer


@pytest.mark.parametrize("task", list(SPECS))
def test_filter_values_number_candidates_one_per_line_and_hide_the_right_text(task: str) -> None:
    spec = SPECS[task]
    fields = {name: f"{name} text\nsecond line" for name in spec.filter_context}
    fields[spec.right_field] = "SECRET-RIGHT"
    values = steps.lay_out_candidates(spec, fields, ["Lyon.", "the city of\n  Marseille ", "Nice."])
    label = spec.candidate_label
    assert values == {
        **{name: fields[name] for name in spec.filter_context},
        "answers": f"{label} 1: Lyon.\n{label} 2: the city of Marseille\n{label} 3: Nice.",
    }
    assert "SECRET-RIGHT" not in "".join(values.values())
    for i, _ in enumerate(values["answers"].splitlines(), 1):
        assert steps.read_choice(f"Choice: {i}", ["a", "b", "c"]) == i
        assert steps.read_choice(f"Choice: {label} {i}", ["a", "b", "c"]) is None  # unsure
        assert steps.read_choice_lenient(spec, f"Choice: {label} {i}", ["a", "b", "c"]) == i


@pytest.mark.parametrize(("task", "case"), _cases("FORMS"), ids=_ids("FORMS"))
def test_check_candidate(task: str, case: tuple[str, str, str]) -> None:
    right, candidate, problem = case
    spec = SPECS[task]
    assert steps.check(spec, {spec.right_field: right}, candidate) == problem


def test_dialogue_and_summarization_length_bounds() -> None:
    (d_ratio,) = [c for c in SPECS["dialogue"].checks if isinstance(c, LengthRatio)]
    assert (d_ratio.max_ratio, d_ratio.min_ratio) == (2.0, 0.4)
    assert d_ratio.slack == 40 and cases.D_LOW <= 0
    s_ratio = SPECS["summarization"].checks[0]
    assert isinstance(s_ratio, LengthRatio)
    assert (s_ratio.max_ratio, s_ratio.min_ratio, s_ratio.slack) == (1.5, 0.5, 0)
    # summarization checks length before meta talk
    spec = SPECS["summarization"]
    assert steps.check(spec, {"right_summary": "r" * 10}, "hallucinated " * 20) == "too_long"


# A fourth task is a short declaration (plus its prompts): the shared steps do the rest.
TRANSLATION = TaskSpec(
    name="translation",
    seed_fields=("source", "right_translation"),
    right_field="right_translation",
    hallucinated_field="hallucinated_translation",
    patterns=("added-fact", "changed-fact"),
    pattern_words=((r"add\w*", "added-fact"), (r"chang\w*", "changed-fact")),
    reply_labels=("Translation",),
    stop_labels=("Source",),
    shape=one_line,
    candidate_label="Translation",
    filter_context=("source",),
    checks=(ContainsRight(), LengthClass(max_gap=1)),
    long_field="source",
)


def test_a_new_task_is_a_declaration_over_the_shared_steps() -> None:
    spec = TRANSLATION
    got = steps.read_reply(spec, "Pattern: changed\nTranslation: The cat sleeps on the sofa.")
    assert got == ParsedCandidate("The cat sleeps on the sofa.", "changed-fact", "")
    assert steps.read_reply(spec, "Translation: Le chat (pattern: added-fact)").pattern == (
        "added-fact"
    )
    values = steps.lay_out_candidates(
        spec, {"source": "Le chat dort."}, ["The dog sleeps.", "A cat naps."]
    )
    assert values == {
        "source": "Le chat dort.",
        "answers": "Translation 1: The dog sleeps.\nTranslation 2: A cat naps.",
    }
    assert steps.read_choice_lenient(spec, "Choice: the second translation", ["a", "b"]) == 2
    right = {"right_translation": "The cat sleeps."}
    assert steps.check(spec, right, "the cat sleeps") == "equals_right_answer"
    assert steps.check(spec, right, "The cat sleeps. It is black.") == "contains_right_answer"
    assert steps.check(spec, right, "The dog sleeps.") == ""


def _seq(xs: Sequence[str]) -> list[str]:
    return list(xs)
