"""The qa prompt templates' own demonstrations (the shared checks: test_prompts.py)."""

from __future__ import annotations

import re
from functools import partial

from halugen.prompts import Template
from halugen.tasks import steps
from halugen.tasks.base import normalise
from halugen.tasks.templates import task_template
from tests.task_specs import task_spec

QA = task_spec("qa")
PATTERNS = QA.patterns

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

parse_candidate = partial(steps.read_reply, QA)
parse_choice = steps.read_choice
filter_values = partial(steps.lay_out_candidates, QA)
check_candidate = partial(steps.check, QA)


def _template(stem: str) -> Template:
    return task_template(task_spec("qa"), stem)


def _render(stem: str) -> tuple[dict[str, str], ...]:
    if stem == "filter":
        return _template(stem).render(filter_values(SEED, ["1901", "1889"]))
    return _template(stem).render(SEED)


def _label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def _onepass_examples() -> list[dict[str, str]]:
    user = _template("sample_onepass").render(SEED)[-1]["content"]
    examples = []
    for block in re.split(r"^Example ", user, flags=re.MULTILINE)[1:]:
        head = block.split("\n", 1)[0]
        lines = re.findall(r"^(Facts|Q|Correct|Hallucinated): (.*)$", block, re.MULTILINE)
        fields = {k: v.strip() for k, v in lines}
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
        assert check_candidate({"right_answer": right}, hallucinated) == "", (right, hallucinated)
