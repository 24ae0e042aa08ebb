"""The summarization prompt templates' own demonstrations (the shared checks: test_prompts.py)."""

from __future__ import annotations

import re
from functools import partial

from halugen.prompts import Template
from halugen.tasks import steps
from halugen.tasks.base import normalise
from halugen.tasks.templates import task_template
from tests.task_specs import task_spec

SUMMARIZATION = task_spec("summarization")
PATTERNS = SUMMARIZATION.patterns

SEED = {
    "document": (
        "The Marlow rowing club will hold its first regatta since 2019 on 12 June. Club captain "
        "Helen Park said 40 crews from six countries had entered. The event was cancelled three "
        "years in a row because the river flooded."
    ),
    "right_summary": (
        "Marlow rowing club holds its first regatta since 2019, with 40 crews entered."
    ),
}
SAMPLE_FORMAT = (
    "Reply format:\n"
    "Pattern: <one of: factual, non-factual, intrinsic>\n"
    "Summary: <your hallucinated summary>"
)
FILTER_FORMAT = "Reply format:\nChoice: <the number of the summary you pick>"
SAMPLE_STEMS = ("sample_onepass", "sample_conversation")
CANDIDATES = [
    "Marlow rowing club holds its first regatta since 2018, with 40 crews entered.",
    "Marlow rowing club holds its first regatta since 2019, with 60 crews entered.",
]
# "factual" must not be found inside "non-factual"
_PATTERN_RE = {p: re.compile(rf"(?<![\w-]){re.escape(p)}\b") for p in PATTERNS}


def _named(text: str) -> list[str]:
    return [p for p in PATTERNS if _PATTERN_RE[p].search(text.casefold())]


parse_candidate = partial(steps.read_reply, SUMMARIZATION)
parse_choice = steps.read_choice
filter_values = partial(steps.lay_out_candidates, SUMMARIZATION)
check_candidate = partial(steps.check, SUMMARIZATION)


def _template(stem: str) -> Template:
    return task_template(task_spec("summarization"), stem)


def _render(stem: str, seed: dict[str, str] = SEED) -> tuple[dict[str, str], ...]:
    if stem == "filter":
        return _template(stem).render(filter_values(seed, CANDIDATES))
    return _template(stem).render(seed)


def _label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def _onepass_examples() -> list[tuple[str, str, str, str]]:
    """(pattern, article, reference, hallucinated) for every one-pass demonstration."""
    user = _render("sample_onepass")[-1]["content"]
    block = user.split("\nExamples\n", 1)[1].split("\n\nRules", 1)[0]
    out = []
    for article_block in block.split("\n\n"):
        article = re.search(r"^  Article: (.*)$", article_block, re.MULTILINE).group(1)
        reference = re.search(r"^  Reference: (.*)$", article_block, re.MULTILINE).group(1)
        found = re.findall(r"^  Hallucinated \(([\w-]+)\): (.*)$", article_block, re.MULTILINE)
        assert found, article_block
        assert len(article_block.splitlines()) == 2 + len(found)
        out.extend((p, article, reference, h) for p, h in found)
    return out


def test_onepass_teaches_each_pattern_with_one_or_two_examples() -> None:
    examples = _onepass_examples()
    counts = {p: sum(e[0] == p for e in examples) for p in PATTERNS}
    assert all(1 <= n <= 2 for n in counts.values()), counts
    assert {e[0] for e in examples} == set(PATTERNS)


def _conversation_turns() -> list[tuple[dict[str, str], dict[str, str]]]:
    messages = _render("sample_conversation")
    middle = messages[1:-1]
    assert [m["role"] for m in middle] == ["user", "assistant"] * (len(middle) // 2)
    return list(zip(middle[0::2], middle[1::2], strict=True))


def _demonstrations() -> list[tuple[str, str, str]]:
    """(document, right summary, hallucinated summary) of every sampling demonstration."""
    demos = [(a, r, h) for _, a, r, h in _onepass_examples()]
    for user, _ in _conversation_turns():
        c = user["content"]
        demos.append(
            (
                _label_lines(c, "Document")[0],
                _label_lines(c, "Right summary")[0],
                _label_lines(c, "Hallucinated summary")[0],
            )
        )
    return demos


def test_sampling_demonstrations_are_wrong_short_and_pass_the_length_check() -> None:
    demos = _demonstrations()
    assert len(demos) >= 2 * len(PATTERNS)
    for document, right, hallucinated in demos:
        assert normalise(right) != normalise(hallucinated)
        # our own demonstrations must pass the check we apply to model output
        assert check_candidate({"right_summary": right}, hallucinated) == "", hallucinated
        assert parse_candidate(f"Summary: {hallucinated}").answer == hallucinated
        # short invented documents: real ones are long, demonstrations must not be
        assert len(document.split()) <= 60, document


_STOP_TEXT = """a an the and or of to in on at by for with from was were is are its it his her
    their this that which who after before since than as be been has had have no one"""
_STOP = frozenset(_STOP_TEXT.split())


def _words(text: str) -> list[str]:
    return [w for w in normalise(text).split() if w not in _STOP]


def test_a_long_document_is_carried_whole_and_once() -> None:
    document = " ".join(f"Sentence {i} of a long story about the rowing club." for i in range(90))
    for stem in SAMPLE_STEMS:
        messages = _render(stem, {**SEED, "document": document})
        assert sum(m["content"].count(document) for m in messages) == 1
        assert messages[-1]["content"].count(document) == 1
