"""The QA prompt templates: structure, reply format, demonstrations, originality and size."""

from __future__ import annotations

import re

import pytest

from halugen.prompts import Template, load_template
from halugen.resources import data_dir
from halugen.tasks.base import normalise
from halugen.tasks.qa import PATTERNS, QA, check_form, filter_values, parse_candidate, parse_choice

SEED = {
    "knowledge": "The Oberon Bridge spans the river Tamm in the town of Velby. It opened in 1894.",
    "question": "In which year did the bridge in Velby open?",
    "right_answer": "1894",
}
SAMPLE_FORMAT = (
    "Reply format:\n"
    "Pattern: <one of: comprehension, factualness, specificity, inference>\n"
    "Answer: <your hallucinated answer>"
)
FILTER_FORMAT = "Reply format:\nChoice: <the number of the answer you pick>"
SAMPLE_STEMS = ("sample_onepass", "sample_conversation")


def _template(stem: str) -> Template:
    return load_template("qa", stem)


def _render(stem: str) -> tuple[dict[str, str], ...]:
    if stem == "filter":
        return _template(stem).render(filter_values(SEED, ["1901", "1889"]))
    return _template(stem).render(SEED)


def _file_text(stem: str) -> str:
    return (data_dir("prompts") / "qa" / f"{stem}.txt").read_text(encoding="utf-8")


def _label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def test_spec_templates_exist_and_need_exactly_the_fields_given() -> None:
    for stem in QA.sample_templates:
        assert _template(stem).fields == set(QA.seed_fields)
    # the judge's template has no slot for the right answer
    assert _template(QA.filter_template).fields == {"knowledge", "question", "answers"}


@pytest.mark.parametrize("stem", [*SAMPLE_STEMS, "filter"])
def test_rendered_template_is_complete_and_ends_with_the_reply_format(stem: str) -> None:
    messages = _render(stem)
    assert messages[-1]["role"] == "user"
    for m in messages:
        assert m["content"].strip()
        assert "{{" not in m["content"] and "}}" not in m["content"]
    last = messages[-1]["content"]
    block = FILTER_FORMAT if stem == "filter" else SAMPLE_FORMAT
    assert last.endswith(block)
    assert last.count("Reply format:") == 1


@pytest.mark.parametrize("stem", SAMPLE_STEMS)
def test_record_lines_come_last_and_once_in_the_final_message(stem: str) -> None:
    last = _render(stem)[-1]["content"]
    record = (
        f"Knowledge: {SEED['knowledge']}\n"
        f"Question: {SEED['question']}\n"
        f"Right answer: {SEED['right_answer']}\n\n" + SAMPLE_FORMAT
    )
    assert last.endswith(record)
    # demonstrations never use the record's labelled-line layout in this message
    for label in ("Knowledge", "Question", "Right answer", "Answer", "Pattern"):
        assert len(_label_lines(last, label)) == 1, label


def test_filter_record_lines_come_last_and_hide_the_right_answer() -> None:
    messages = _render("filter")
    last = messages[-1]["content"]
    assert last.endswith(
        f"Knowledge: {SEED['knowledge']}\nQuestion: {SEED['question']}\n"
        "Answer 1: 1901\nAnswer 2: 1889\n\n" + FILTER_FORMAT
    )
    for label in ("Knowledge", "Question", "Answer 1", "Answer 2"):
        assert len(_label_lines(last, label)) == 1, label
    # the judge must never see the record's right answer, however the values are built
    hidden = {**SEED, "right_answer": "SENTINEL-RIGHT-ANSWER"}
    shown = _template("filter").render(filter_values(hidden, ["1901", "1889"]))
    assert shown == messages
    assert all("SENTINEL" not in m["content"] for m in shown)
    assert not _label_lines(last, "Right answer")


@pytest.mark.parametrize("stem", SAMPLE_STEMS)
def test_every_pattern_is_named_and_the_format_lists_exactly_the_spec_patterns(stem: str) -> None:
    text = "\n".join(m["content"] for m in _render(stem)).casefold()
    for pattern in PATTERNS:
        assert pattern in text
    options = re.search(r"<one of: ([^>]*)>", _render(stem)[-1]["content"])
    assert options is not None
    assert tuple(options.group(1).split(", ")) == QA.patterns


def test_echoing_the_reply_format_is_not_a_usable_candidate() -> None:
    got = parse_candidate(SAMPLE_FORMAT)
    assert got.problem == "placeholder_answer"
    assert parse_choice(FILTER_FORMAT, ["a", "b"]) is None


def _onepass_examples() -> list[dict[str, str]]:
    user = _template("sample_onepass").render(SEED)[-1]["content"]
    examples = []
    for block in re.split(r"^Example ", user, flags=re.MULTILINE)[1:]:
        head = block.split("\n", 1)[0]
        fields = {k: v.strip() for k, v in re.findall(r"^\s+(\w+): (.*)$", block, re.MULTILINE)}
        fields["pattern"] = re.match(r"\((\w+)", head).group(1)
        examples.append(fields)
    return examples


def test_onepass_teaches_each_pattern_with_one_or_two_examples() -> None:
    examples = _onepass_examples()
    counts = {p: sum(e["pattern"] == p for e in examples) for p in PATTERNS}
    assert all(1 <= n <= 2 for n in counts.values()), counts
    assert set(counts) == {e["pattern"] for e in examples}
    for e in examples:
        assert set(e) == {"pattern", "Facts", "Q", "Correct", "Hallucinated"}, e


def _conversation_turns() -> list[tuple[dict[str, str], dict[str, str]]]:
    messages = _template("sample_conversation").render(SEED)
    assert messages[0]["role"] == "system"
    middle = messages[1:-1]
    assert [m["role"] for m in middle] == ["user", "assistant"] * (len(middle) // 2)
    return list(zip(middle[0::2], middle[1::2], strict=True))


def test_conversation_teaches_one_pattern_per_turn_and_the_assistant_restates_it() -> None:
    turns = _conversation_turns()
    assert len(turns) == len(PATTERNS)
    for pattern, (user, assistant) in zip(PATTERNS, turns, strict=True):
        taught = [p for p in PATTERNS if p in user["content"].casefold()]
        assert taught == [pattern]
        assert _label_lines(user["content"], "Pattern") == [pattern]
        # the confirmation is in the assistant's own words, not an echo of the lesson
        assert pattern in assistant["content"].casefold()
        assert assistant["content"] not in user["content"]
        assert len(assistant["content"]) < len(user["content"])


def _demonstrations() -> list[tuple[str, str, str]]:
    """(right answer, hallucinated answer, knowledge) of every sampling demonstration."""
    demos = [(e["Correct"], e["Hallucinated"], e["Facts"]) for e in _onepass_examples()]
    for user, _ in _conversation_turns():
        c = user["content"]
        demos.append(
            (
                _label_lines(c, "Right answer")[0],
                _label_lines(c, "Hallucinated answer")[0],
                _label_lines(c, "Knowledge")[0],
            )
        )
    return demos


def test_sampling_demonstrations_are_wrong_and_keep_the_right_answers_form() -> None:
    demos = _demonstrations()
    assert len(demos) >= 4 + len(PATTERNS)
    for right, hallucinated, _ in demos:
        assert normalise(right) != normalise(hallucinated)
        # our own demonstrations must pass the form check we apply to model output
        assert check_form({"right_answer": right}, hallucinated) == "", (right, hallucinated)


def test_filter_demonstrations_pick_the_answer_the_knowledge_supports() -> None:
    messages = _template("filter").render(filter_values(SEED, ["1901", "1889"]))
    assert messages[0]["role"] == "system"
    demos = messages[1:-1]
    assert [m["role"] for m in demos] == ["user", "assistant"] * (len(demos) // 2)
    assert 2 <= len(demos) // 2 <= 3
    picks = []
    for user, assistant in zip(demos[0::2], demos[1::2], strict=True):
        knowledge = _label_lines(user["content"], "Knowledge")[0].casefold()
        answers = re.findall(r"^Answer \d+: (.*)$", user["content"], re.MULTILINE)
        assert len(answers) >= 2
        assert re.fullmatch(r"Choice: \d+", assistant["content"])
        pick = parse_choice(assistant["content"], answers)
        assert pick is not None
        picks.append(pick)
        # the picked answer is the one stated in the knowledge; the others are not
        for i, answer in enumerate(answers, 1):
            stated = re.search(rf"\b{re.escape(answer.casefold())}\b", knowledge) is not None
            assert stated == (i == pick), (answer, knowledge)
    # the right answer is not always in the same position
    assert len(set(picks)) > 1


# Distinctive fragments of HaluEval's own prompts and demonstrations (kept to a few words
# each); halugen's templates are written from scratch and must contain none of them.
HALUEVAL_FRAGMENTS = [
    "act as a hallucination answer generator",
    "act as an answer judge",
    "you should try your best",
    "#hallucinated answer#",
    "#your choice#",
    "#knowledge#",
    "factual contradiction",
    "kelly osbourne",
    "ketchup",
]


@pytest.mark.parametrize("stem", [*SAMPLE_STEMS, "filter"])
def test_templates_do_not_reuse_halueval_text(stem: str) -> None:
    text = " ".join(_file_text(stem).casefold().split())
    for fragment in HALUEVAL_FRAGMENTS:
        assert fragment not in text, fragment


def _rough_tokens(messages: tuple[dict[str, str], ...]) -> int:
    # len/4 per message plus the chat format's few tokens per message
    return sum(len(m["content"]) // 4 + 4 for m in messages) + 3


@pytest.mark.parametrize(
    ("stem", "cap"),
    [("sample_onepass", 1200), ("sample_conversation", 1500), ("filter", 800)],
)
def test_prompt_size_stays_under_its_cap(stem: str, cap: int) -> None:
    tokens = _rough_tokens(_render(stem))
    assert 100 < tokens <= cap, tokens
