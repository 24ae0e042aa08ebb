"""Judge templates and the values that fill them: structure, fields, demonstrations, wording."""

from __future__ import annotations

import re

import pytest

from halugen.errors import UsageError
from halugen.evaluate.judge import (
    JUDGE_TASKS,
    EvalItem,
    again_template_name,
    judge_template,
    judge_values,
    max_tokens_for,
    request_params,
    shown_texts,
    strategies_for,
    template_name,
)
from halugen.evaluate.verdicts import parse_contrast, parse_verdict
from halugen.records import ChatRequest
from halugen.tasks import builtin_folder
from halugen.tasks.schema import STRATEGIES
from tests.task_specs import task_spec

ITEMS = {
    "qa": EvalItem(
        "qa",
        "k-qa",
        "q1",
        {
            "knowledge": "The Oberon Bridge spans the river Tamm in Velby. It opened in 1894.",
            "question": "In which year did the bridge in Velby open?",
            "right_answer": "1894",
            "hallucinated_answer": "It opened in 1901, after ten years of work.",
        },
    ),
    "dialogue": EvalItem(
        "dialogue",
        "k-dia",
        "d1",
        {
            "knowledge": "Tide Hours was written by Mira Sand. Mira Sand wrote Salt Roads.",
            "dialogue_history": "[Human]: I liked Tide Hours. [Assistant]: A fine book. "
            "[Human]: Who wrote it?",
            "right_response": "Mira Sand wrote it; she also wrote Salt Roads.",
            "hallucinated_response": "Mira Sand wrote it; she also wrote Glass Rivers.",
        },
    ),
    "summarization": EvalItem(
        "summarization",
        "k-sum",
        "s1",
        {
            "document": "The village of Orby opened a new school on Monday. It has 120 pupils.",
            "right_summary": "Orby opened a school for 120 pupils on Monday.\n",
            "hallucinated_summary": "Orby opened a school for 210 pupils on Friday.",
        },
    ),
    "general": EvalItem(
        "general",
        "k-gen",
        "g1",
        {
            "user_query": "Name a planet with rings.",
            "chatgpt_response": "Saturn has rings.",
            "hallucination": "no",
        },
        human_label=False,
    ),
}
SHOWN_LABEL = {
    "qa": "Answer",
    "dialogue": "Response",
    "summarization": "Summary",
    "general": "Response",
}
CONTEXT_LABELS = {
    "qa": ["Question"],
    "dialogue": ["Dialogue history"],
    "summarization": ["Document"],
    "general": ["Query"],
}
VERDICT_FORMAT = "Reply format:\nVerdict: <Yes or No>"
COT_FORMAT = "Reply format:\nReasoning: <your reasoning, step by step>\nVerdict: <Yes or No>"
CONTRAST_FORMAT = "Reply format:\nChoice: <1 or 2, the one that contains hallucination>"
PATTERNS = {
    "qa": task_spec("qa").patterns,
    "dialogue": task_spec("dialogue").patterns,
    "summarization": task_spec("summarization").patterns,
    "general": ("unverifiable", "non-factual", "irrelevant"),
}
CASES = [(t, s) for t in JUDGE_TASKS for s in strategies_for(task_spec(t))]


def _render(task: str, strategy: str, which: int = 1) -> tuple[dict[str, str], ...]:
    item = ITEMS[task]
    right, hallucinated = shown_texts(task_spec(item.task), item)
    values = judge_values(
        task_spec(task), strategy, item, (right, hallucinated)[which], order=(hallucinated, right)
    )
    return judge_template(task_spec(task), strategy).render(values)


def _labels(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def test_which_strategies_and_templates_apply() -> None:
    assert STRATEGIES == ("plain", "knowledge", "cot", "contrast")
    assert strategies_for(task_spec("general")) == ("plain", "cot")
    assert template_name(task_spec("qa"), "plain") == "judge_plain"
    assert template_name(task_spec("dialogue"), "contrast") == "judge_contrast"
    # summarization's document is in every prompt: "knowledge" would run plain under its
    # name, so it is refused with the strategies the task has
    with pytest.raises(UsageError, match="plain, cot, contrast"):
        template_name(task_spec("summarization"), "knowledge")
    assert strategies_for(task_spec("summarization")) == ("plain", "cot", "contrast")
    for task, strategy in (
        ("summarization", "knowledge"),
        ("general", "knowledge"),
        ("general", "contrast"),
        ("qa", "vibes"),
        ("poetry", "plain"),
    ):
        with pytest.raises(UsageError):
            template_name(task_spec(task), strategy)


def test_every_applicable_template_file_exists_and_no_stray_ones() -> None:
    root = builtin_folder("qa").parent
    expected = {f"{t}/{template_name(task_spec(t), s)}.txt" for t, s in CASES}
    expected |= {f"{t}/{again_template_name(task_spec(t), s)}.txt" for t, s in CASES}
    found = {f"{p.parent.parent.name}/{p.name}" for p in root.glob("*/prompts/judge_*.txt")}
    assert found == expected


@pytest.mark.parametrize(("task", "strategy"), CASES)
def test_template_renders_fully_and_ends_with_its_reply_format(task: str, strategy: str) -> None:
    messages = _render(task, strategy)
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
    for m in messages:
        assert m["content"].strip()
        assert "{{" not in m["content"] and "}}" not in m["content"]
    last = messages[-1]["content"]
    block = {"cot": COT_FORMAT, "contrast": CONTRAST_FORMAT}.get(strategy, VERDICT_FORMAT)
    assert last.endswith("\n\n" + block)
    assert last.count("Reply format:") == 1
    # the record's labelled lines, each once, right before the format block
    labels = list(CONTEXT_LABELS[task])
    if strategy == "knowledge":
        labels.insert(0, "Knowledge")
    shown = SHOWN_LABEL[task]
    labels += [f"{shown} 1", f"{shown} 2"] if strategy == "contrast" else [shown]
    for label in labels:
        assert len(_labels(last, label)) == 1, label
    assert not _labels(last, "Knowledge") or "Knowledge" in labels
    lines = last.split("\n\n")[-2].splitlines()
    assert [line.split(":")[0] for line in lines] == labels


@pytest.mark.parametrize(("task", "strategy"), CASES)
def test_template_fields_are_exactly_what_judge_values_gives(task: str, strategy: str) -> None:
    item = ITEMS[task]
    values = judge_values(task_spec(task), strategy, item, "x", order=("a", "b"))
    assert judge_template(task_spec(task), strategy).fields == set(values)
    # the judge never sees which text is right
    for key in values:
        assert not key.startswith(("right_", "hallucinated_")) and key != "hallucination"


def test_values_fill_the_shown_text_stripped_and_knowledge_only_when_asked() -> None:
    item = ITEMS["summarization"]
    right, _ = shown_texts(task_spec(item.task), item)
    assert right == "Orby opened a school for 120 pupils on Monday."  # no trailing newline
    values = judge_values(task_spec("summarization"), "plain", item, item.fields["right_summary"])
    assert values == {"document": item.fields["document"], "summary": right}
    with pytest.raises(UsageError, match="does not apply"):
        judge_values(task_spec("summarization"), "knowledge", item, right)
    qa_item = ITEMS["qa"]
    plain = judge_values(task_spec("qa"), "plain", qa_item, "1894")
    assert plain == {"question": qa_item.fields["question"], "answer": "1894"}
    knowledge = judge_values(task_spec("qa"), "knowledge", qa_item, "1894")
    assert knowledge == {**plain, "knowledge": qa_item.fields["knowledge"]}
    contrast = judge_values(
        task_spec("qa"), "contrast", qa_item, "ignored", order=(" 1901 ", "1894")
    )
    assert contrast == {
        "question": qa_item.fields["question"],
        "answer_1": "1901",
        "answer_2": "1894",
    }
    with pytest.raises(UsageError, match="contrast"):
        judge_values(task_spec("qa"), "contrast", qa_item, "1894")
    with pytest.raises(UsageError, match="knowledge"):
        judge_values(task_spec("qa"), "knowledge", EvalItem("qa", "k", "i", {"question": "q"}), "a")


def test_shown_texts_per_task() -> None:
    assert shown_texts(task_spec(ITEMS["qa"].task), ITEMS["qa"]) == (
        "1894",
        "It opened in 1901, after ten years of work.",
    )
    assert shown_texts(task_spec(ITEMS["dialogue"].task), ITEMS["dialogue"])[1].endswith(
        "Glass Rivers."
    )
    # general: one response, judged against the human label
    assert shown_texts(task_spec(ITEMS["general"].task), ITEMS["general"]) == (
        "Saturn has rings.",
        "Saturn has rings.",
    )


def test_request_parameters() -> None:
    assert max_tokens_for("plain") == max_tokens_for("knowledge") == 16
    assert max_tokens_for("contrast") == 16 and max_tokens_for("cot") == 512
    with pytest.raises(UsageError):
        max_tokens_for("other")
    assert request_params("cot") == {"temperature": 0.0, "max_tokens": 512}
    scored = request_params("plain", logprobs=True)
    assert scored["logprobs"] is True and scored["top_logprobs"] >= 2
    assert "logprobs" not in request_params("contrast", logprobs=True)
    req = ChatRequest(model="m", messages=_render("qa", "plain"), **scored)
    assert req.params()["temperature"] == 0.0 and req.params()["logprobs"] is True


@pytest.mark.parametrize("task", JUDGE_TASKS)
def test_plain_prompt_names_every_pattern_of_its_task(task: str) -> None:
    text = "\n".join(m["content"] for m in _render(task, "plain")).casefold()
    for pattern in PATTERNS[task]:
        assert pattern in text, pattern


@pytest.mark.parametrize(("task", "strategy"), CASES)
def test_demonstrations_are_balanced_and_parse(task: str, strategy: str) -> None:
    messages = _render(task, strategy)
    demos = [m["content"] for m in messages[1:-1]]
    replies = [d for m, d in zip(messages[1:-1], demos, strict=True) if m["role"] == "assistant"]
    assert len(replies) >= 2 and len(demos) == 2 * len(replies)
    if strategy == "contrast":
        picks = [parse_contrast(r) for r in replies]
        assert sorted(picks) == [1, 2]
    else:
        verdicts = [parse_verdict(r) for r in replies]
        assert verdicts.count("yes") == verdicts.count("no") == len(verdicts) // 2
        if strategy == "cot":
            assert all(r.startswith("Reasoning: ") for r in replies)
    # a demonstration's user turn uses the record's layout (same labels, no format block)
    for user in demos[0::2]:
        assert "Reply format:" not in user
        assert _labels(user, SHOWN_LABEL[task]) or _labels(user, f"{SHOWN_LABEL[task]} 1")


# Distinctive fragments of HaluEval's judge prompts and demonstrations (a few words each);
# halugen's templates are written from scratch and must contain none of them.
HALUEVAL_FRAGMENTS = [
    "act as an answer judge",
    "act as a response judge",
    "act as a summary judge",
    "you should try your best",
    "#your judgement#",
    "#question#",
    "#answer#",
    "#dialogue history#",
    "#response#",
    "#document#",
    "#summary#",
    "non-factual or hallucinated information",
    'must be "yes" or "no"',
    "question context and intention",
    "rat terrier",
    "oberoi",
    "zilpo",
    "the dark knight",
    "augusta canal",
]


@pytest.mark.parametrize(("task", "strategy"), CASES)
def test_templates_do_not_reuse_halueval_text(task: str, strategy: str) -> None:
    path = builtin_folder(task) / "prompts" / f"{template_name(task_spec(task), strategy)}.txt"
    text = " ".join(path.read_text(encoding="utf-8").casefold().split())
    for fragment in HALUEVAL_FRAGMENTS:
        assert fragment not in text, fragment


@pytest.mark.parametrize(("task", "strategy"), CASES)
def test_static_prompt_stays_small(task: str, strategy: str) -> None:
    # everything but the record: system message and demonstrations, rough len/4 tokens
    static = sum(len(m["content"]) // 4 + 4 for m in _render(task, strategy)[:-1])
    assert static < 900
