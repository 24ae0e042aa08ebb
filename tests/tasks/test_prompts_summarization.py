"""The summarization prompt templates: structure, reply format, demonstrations, originality,
size, and a round trip through the simulator."""

from __future__ import annotations

import asyncio
import re

import orjson
import pytest

from halugen.prompts import Template, load_template
from halugen.resources import data_dir
from halugen.simulate import SimConfig, Simulator
from halugen.tasks.base import normalise
from halugen.tasks.summarization import (
    PATTERNS,
    SUMMARIZATION,
    check_candidate,
    filter_values,
    parse_candidate,
    parse_choice,
)

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


def _template(stem: str) -> Template:
    return load_template("summarization", stem)


def _render(stem: str, seed: dict[str, str] = SEED) -> tuple[dict[str, str], ...]:
    if stem == "filter":
        return _template(stem).render(filter_values(seed, CANDIDATES))
    return _template(stem).render(seed)


def _file_text(stem: str) -> str:
    return (data_dir("prompts") / "summarization" / f"{stem}.txt").read_text(encoding="utf-8")


def _label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def test_spec_templates_exist_and_need_exactly_the_fields_given() -> None:
    for stem in SUMMARIZATION.sample_templates:
        assert _template(stem).fields == set(SUMMARIZATION.seed_fields)
    # the judge's template has no slot for the right summary
    assert _template(SUMMARIZATION.filter_template).fields == {"document", "answers"}


@pytest.mark.parametrize("stem", [*SAMPLE_STEMS, "filter"])
def test_rendered_template_is_complete_and_ends_with_the_reply_format(stem: str) -> None:
    messages = _render(stem)
    assert messages[0]["role"] == "system"
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
        f"Document: {SEED['document']}\nRight summary: {SEED['right_summary']}\n\n" + SAMPLE_FORMAT
    )
    assert last.endswith(record)
    # demonstrations never use the record's labelled-line layout in this message
    for label in ("Document", "Right summary", "Summary", "Pattern"):
        assert len(_label_lines(last, label)) == 1, label


def test_filter_record_lines_come_last_and_hide_the_right_summary() -> None:
    messages = _render("filter")
    last = messages[-1]["content"]
    assert last.endswith(
        f"Document: {SEED['document']}\n"
        f"Summary 1: {CANDIDATES[0]}\nSummary 2: {CANDIDATES[1]}\n\n" + FILTER_FORMAT
    )
    for label in ("Document", "Summary 1", "Summary 2"):
        assert len(_label_lines(last, label)) == 1, label
    hidden = {**SEED, "right_summary": "SENTINEL-RIGHT-SUMMARY"}
    shown = _render("filter", hidden)
    assert shown == messages
    assert all("SENTINEL" not in m["content"] for m in shown)
    assert not _label_lines(last, "Right summary")


@pytest.mark.parametrize("stem", SAMPLE_STEMS)
def test_every_pattern_is_named_and_the_format_lists_exactly_the_spec_patterns(stem: str) -> None:
    text = "\n".join(m["content"] for m in _render(stem))
    assert _named(text) == list(PATTERNS)
    options = re.search(r"<one of: ([^>]*)>", _render(stem)[-1]["content"])
    assert options is not None
    assert tuple(options.group(1).split(", ")) == SUMMARIZATION.patterns


def test_echoing_the_reply_format_is_not_a_usable_candidate() -> None:
    assert parse_candidate(SAMPLE_FORMAT).problem == "placeholder_answer"
    assert parse_choice(FILTER_FORMAT, ["a", "b"]) is None


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


def test_conversation_teaches_one_pattern_per_turn_and_the_assistant_restates_it() -> None:
    turns = _conversation_turns()
    assert len(turns) == len(PATTERNS)
    for pattern, (user, assistant) in zip(PATTERNS, turns, strict=True):
        assert _named(user["content"]) == [pattern]
        assert _label_lines(user["content"], "Pattern") == [pattern]
        # the confirmation is in the assistant's own words, not an echo of the lesson
        assert assistant["content"].startswith("Understood.")
        assert _named(assistant["content"]) in ([], [pattern])
        assert assistant["content"] not in user["content"]
        assert len(assistant["content"]) < len(user["content"])


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


def test_filter_demonstrations_pick_the_faithful_summary() -> None:
    messages = _render("filter")
    demos = messages[1:-1]
    assert [m["role"] for m in demos] == ["user", "assistant"] * (len(demos) // 2)
    assert 2 <= len(demos) // 2 <= 3
    picks = []
    for user, assistant in zip(demos[0::2], demos[1::2], strict=True):
        c = user["content"]
        document = set(_words(_label_lines(c, "Document")[0]))
        summaries = re.findall(r"^Summary \d+: (.*)$", c, re.MULTILINE)
        assert len(summaries) >= 2
        assert re.fullmatch(r"Choice: \d+", assistant["content"])
        pick = parse_choice(assistant["content"], summaries)
        assert pick is not None
        picks.append(pick)
        faithful = _words(summaries[pick - 1])
        # the picked summary only uses the document's words
        assert set(faithful) <= document, set(faithful) - document
        # each other one brings in a word the document lacks, or rearranges the picked
        # summary's own words into another claim (an intrinsic error)
        for i, summary in enumerate(summaries, 1):
            if i != pick:
                words = _words(summary)
                foreign = set(words) - document
                assert foreign or sorted(words) == sorted(faithful), summary
                assert words != faithful
    assert len(set(picks)) > 1


# Distinctive fragments of HaluEval's own summarization prompts and demonstrations (a few
# words each); halugen's templates are written from scratch and must contain none of them.
HALUEVAL_FRAGMENTS = [
    "hallucination summary generator",
    "act as a summary judge",
    "sounds plausible but is factually incorrect",
    "cannot be directly inferred or entailed",
    "there exist some non-factual and incorrect information",
    "factual contradiction",
    "you should try your best",
    "have you mastered this method",
    "about 5 more words",
    "#document#",
    "#right summary#",
    "#hallucinated summary#",
    "#your choice#",
    "the best summary is",
    "without hallucination and non-factual information",
    "panther chameleon",
    "marl park",
    "martin place",
    "lindt cafe",
    "didcot",
]


@pytest.mark.parametrize("stem", [*SAMPLE_STEMS, "filter"])
def test_templates_do_not_reuse_halueval_text(stem: str) -> None:
    text = " ".join(_file_text(stem).casefold().split())
    for fragment in HALUEVAL_FRAGMENTS:
        assert fragment not in text, fragment


def _rough_tokens(messages: tuple[dict[str, str], ...]) -> int:
    # len/4 per message plus the chat format's few tokens per message
    return sum(len(m["content"]) // 4 + 4 for m in messages) + 3


# Documents are long, so the caps count the template without the document.
@pytest.mark.parametrize(
    ("stem", "cap"),
    [("sample_onepass", 1000), ("sample_conversation", 1200), ("filter", 800)],
)
def test_prompt_size_without_the_document_stays_under_its_cap(stem: str, cap: int) -> None:
    tokens = _rough_tokens(_render(stem, {**SEED, "document": ""}))
    assert 100 < tokens <= cap, tokens


def test_a_long_document_is_carried_whole_and_once() -> None:
    document = " ".join(f"Sentence {i} of a long story about the rowing club." for i in range(90))
    for stem in SAMPLE_STEMS:
        messages = _render(stem, {**SEED, "document": document})
        assert sum(m["content"].count(document) for m in messages) == 1
        assert messages[-1]["content"].count(document) == 1


# -- round trip through the simulator ------------------------------------------------------


def _ask(sim: Simulator, messages: tuple[dict[str, str], ...], seed: int = 0) -> str:
    body = orjson.dumps({"model": "sim", "messages": list(messages), "seed": seed})
    response = asyncio.run(sim.handle("/v1/chat/completions", {}, body))
    assert response.status == 200
    return orjson.loads(response.body)["choices"][0]["message"]["content"]


@pytest.mark.parametrize("stem", SAMPLE_STEMS)
def test_simulator_reply_to_a_sampling_template_parses(stem: str) -> None:
    sim = Simulator(SimConfig())
    seen = set()
    for seed in range(6):
        got = parse_candidate(_ask(sim, _render(stem), seed))
        assert got.problem == "", got
        assert got.pattern in PATTERNS
        assert normalise(got.answer) != normalise(SEED["right_summary"])
        assert check_candidate(SEED, got.answer) == ""
        seen.add(got.pattern)
    # the simulator read the "one of" options of our reply format, not a default
    assert len(seen) > 1


def test_simulator_judge_reads_the_numbered_summaries() -> None:
    sim = Simulator(SimConfig())
    wrong = "A ferry service between two islands was suspended during the storm."
    right = SEED["right_summary"]
    for answers, expected in (([wrong, right], 2), ([right, wrong], 1)):
        messages = _template("filter").render(filter_values(SEED, answers))
        assert parse_choice(_ask(sim, messages), answers) == expected
