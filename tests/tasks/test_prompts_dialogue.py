"""The dialogue prompt templates: structure, reply format, demonstrations, originality, size,
and a round trip through the simulator."""

from __future__ import annotations

import asyncio
import re

import orjson
import pytest

from halugen.prompts import Template, load_template
from halugen.resources import data_dir
from halugen.simulate import SimConfig, Simulator
from halugen.tasks.base import normalise
from halugen.tasks.dialogue import (
    DIALOGUE,
    PATTERNS,
    check_candidate,
    filter_values,
    parse_candidate,
    parse_choice,
)

SEED = {
    "knowledge": "Tove Marlow wrote The Salt Orchard. The Salt Orchard has genre historical novel.",
    "dialogue_history": (
        "[Human]: I'm after a historical novel. [Assistant]: Any period in mind? "
        "[Human]: Not really. What would you suggest?"
    ),
    "right_response": "The Salt Orchard by Tove Marlow is a lovely historical novel.",
}
SAMPLE_FORMAT = (
    "Reply format:\n"
    "Pattern: <one of: extrinsic-soft, extrinsic-hard, extrinsic-grouped>\n"
    "Response: <your hallucinated response>"
)
FILTER_FORMAT = "Reply format:\nChoice: <the number of the response you pick>"
SAMPLE_STEMS = ("sample_onepass", "sample_conversation")
CANDIDATES = [
    "The Salt Orchard by Ivo Brandt is a lovely historical novel.",
    "The Salt Orchard by Tove Marlow is a lovely historical novel, set in 1850.",
]
HISTORY_LAYOUT = re.compile(r"\[Human\]: [^\[\]]+?(?: \[(?:Assistant|Human)\]: [^\[\]]+?)*")


def _template(stem: str) -> Template:
    return load_template("dialogue", stem)


def _render(stem: str, seed: dict[str, str] = SEED) -> tuple[dict[str, str], ...]:
    if stem == "filter":
        return _template(stem).render(filter_values(seed, CANDIDATES))
    return _template(stem).render(seed)


def _file_text(stem: str) -> str:
    return (data_dir("prompts") / "dialogue" / f"{stem}.txt").read_text(encoding="utf-8")


def _label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def test_spec_templates_exist_and_need_exactly_the_fields_given() -> None:
    for stem in DIALOGUE.sample_templates:
        assert _template(stem).fields == set(DIALOGUE.seed_fields)
    # the judge's template has no slot for the right response
    assert _template(DIALOGUE.filter_template).fields == {
        "knowledge",
        "dialogue_history",
        "answers",
    }


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
        f"Knowledge: {SEED['knowledge']}\n"
        f"Dialogue history: {SEED['dialogue_history']}\n"
        f"Right response: {SEED['right_response']}\n\n" + SAMPLE_FORMAT
    )
    assert last.endswith(record)
    # demonstrations never use the record's labelled-line layout in this message
    for label in ("Knowledge", "Dialogue history", "Right response", "Response", "Pattern"):
        assert len(_label_lines(last, label)) == 1, label


def test_filter_record_lines_come_last_and_hide_the_right_response() -> None:
    messages = _render("filter")
    last = messages[-1]["content"]
    assert last.endswith(
        f"Knowledge: {SEED['knowledge']}\nDialogue history: {SEED['dialogue_history']}\n"
        f"Response 1: {CANDIDATES[0]}\nResponse 2: {CANDIDATES[1]}\n\n" + FILTER_FORMAT
    )
    for label in ("Knowledge", "Dialogue history", "Response 1", "Response 2"):
        assert len(_label_lines(last, label)) == 1, label
    hidden = {**SEED, "right_response": "SENTINEL-RIGHT-RESPONSE"}
    shown = _render("filter", hidden)
    assert shown == messages
    assert all("SENTINEL" not in m["content"] for m in shown)
    assert not _label_lines(last, "Right response")


@pytest.mark.parametrize("stem", SAMPLE_STEMS)
def test_every_pattern_is_named_and_the_format_lists_exactly_the_spec_patterns(stem: str) -> None:
    text = "\n".join(m["content"] for m in _render(stem)).casefold()
    for pattern in PATTERNS:
        assert pattern in text
    options = re.search(r"<one of: ([^>]*)>", _render(stem)[-1]["content"])
    assert options is not None
    assert tuple(options.group(1).split(", ")) == DIALOGUE.patterns


def test_echoing_the_reply_format_is_not_a_usable_candidate() -> None:
    assert parse_candidate(SAMPLE_FORMAT).problem == "placeholder_answer"
    assert parse_choice(FILTER_FORMAT, ["a", "b"]) is None


def _onepass_examples() -> list[dict[str, str]]:
    user = _render("sample_onepass")[-1]["content"]
    examples = []
    for block in re.split(r"^Example ", user, flags=re.MULTILINE)[1:]:
        head = block.split("\n", 1)[0]
        fields = dict(re.findall(r"^  ([A-Z][a-z]+(?: [a-z]+)?): (.*)$", block, re.MULTILINE))
        fields["pattern"] = re.fullmatch(r"\(([\w-]+)\)", head).group(1)
        examples.append(fields)
    return examples


def test_onepass_teaches_each_pattern_with_one_or_two_examples() -> None:
    examples = _onepass_examples()
    counts = {p: sum(e["pattern"] == p for e in examples) for p in PATTERNS}
    assert all(1 <= n <= 2 for n in counts.values()), counts
    assert {e["pattern"] for e in examples} == set(PATTERNS)
    for e in examples:
        assert set(e) == {"pattern", "Facts", "Chat", "True reply", "Hallucinated reply"}, e


def _conversation_turns() -> list[tuple[dict[str, str], dict[str, str]]]:
    messages = _render("sample_conversation")
    middle = messages[1:-1]
    assert [m["role"] for m in middle] == ["user", "assistant"] * (len(middle) // 2)
    return list(zip(middle[0::2], middle[1::2], strict=True))


def test_conversation_teaches_one_pattern_per_turn_and_the_assistant_restates_it() -> None:
    turns = _conversation_turns()
    assert len(turns) == len(PATTERNS)
    for pattern, (user, assistant) in zip(PATTERNS, turns, strict=True):
        assert [p for p in PATTERNS if p in user["content"].casefold()] == [pattern]
        assert _label_lines(user["content"], "Pattern") == [pattern]
        # the confirmation is in the assistant's own words, not an echo of the lesson
        assert [p for p in PATTERNS if p in assistant["content"].casefold()] == [pattern]
        assert assistant["content"] not in user["content"]
        assert len(assistant["content"]) < len(user["content"])


def _demonstrations() -> list[dict[str, str]]:
    """knowledge, history, right and hallucinated turn of every sampling demonstration."""
    demos = [
        {
            "knowledge": e["Facts"],
            "history": e["Chat"],
            "right": e["True reply"],
            "hallucinated": e["Hallucinated reply"],
        }
        for e in _onepass_examples()
    ]
    for user, _ in _conversation_turns():
        c = user["content"]
        demos.append(
            {
                "knowledge": _label_lines(c, "Knowledge")[0],
                "history": _label_lines(c, "Dialogue history")[0],
                "right": _label_lines(c, "Right response")[0],
                "hallucinated": _label_lines(c, "Hallucinated response")[0],
            }
        )
    return demos


def test_sampling_demonstrations_are_wrong_and_keep_the_right_responses_form() -> None:
    demos = _demonstrations()
    assert len(demos) >= 2 * len(PATTERNS)
    for d in demos:
        assert normalise(d["right"]) != normalise(d["hallucinated"])
        # our own demonstrations must pass the checks we apply to model output
        fields = {"right_response": d["right"]}
        assert check_candidate(fields, d["hallucinated"]) == "", d
        assert parse_candidate(f"Response: {d['hallucinated']}").answer == d["hallucinated"]
        # histories use the seeds' one-line layout, starting with the human
        assert HISTORY_LAYOUT.fullmatch(d["history"]), d["history"]


# Capitalised words that start sentences or are pronouns, not facts to check.
_NOT_FACTS = {"Yes", "No", "He", "She", "It", "They", "I", "I'd", "You", "The"}


def _facts(text: str) -> set[str]:
    """Names and numbers in ``text``: what a grounded reply may only take from the context."""
    words = set(re.findall(r"\b[A-Z][\w'’]*|\b\d[\d,]*", text))
    return words - _NOT_FACTS


def test_filter_demonstrations_pick_the_response_the_knowledge_supports() -> None:
    messages = _render("filter")
    demos = messages[1:-1]
    assert [m["role"] for m in demos] == ["user", "assistant"] * (len(demos) // 2)
    assert 2 <= len(demos) // 2 <= 3
    picks = []
    for user, assistant in zip(demos[0::2], demos[1::2], strict=True):
        c = user["content"]
        history = _label_lines(c, "Dialogue history")[0]
        context = _facts(_label_lines(c, "Knowledge")[0] + " " + history)
        responses = re.findall(r"^Response \d+: (.*)$", c, re.MULTILINE)
        assert len(responses) >= 2
        assert HISTORY_LAYOUT.fullmatch(history)
        assert re.fullmatch(r"Choice: \d+", assistant["content"])
        pick = parse_choice(assistant["content"], responses)
        assert pick is not None
        picks.append(pick)
        # the picked response takes every name and number from the context; the others
        # bring in at least one the context does not have
        for i, response in enumerate(responses, 1):
            grounded = _facts(response) <= context
            assert grounded == (i == pick), (response, _facts(response) - context)
    assert len(set(picks)) > 1


# Distinctive fragments of HaluEval's own dialogue prompts and demonstrations (a few words
# each); halugen's templates are written from scratch and must contain none of them.
HALUEVAL_FRAGMENTS = [
    "act as an assistant in a conversation with human",
    "act as a response judge",
    "hallucination conversation generator",
    "sounds plausible but is factually incorrect",
    "you should try your best",
    "highly similar entity",
    "dissimilar entity",
    "have you mastered this method",
    "#knowledge#",
    "#dialogue history#",
    "#true response#",
    "#hallucinated response#",
    "#your choice#",
    "the best response is",
    "without hallucination and non-factual information",
    "dark knight",
    "christopher nolan",
    "batman",
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
        assert normalise(got.answer) != normalise(SEED["right_response"])
        assert check_candidate(SEED, got.answer) == ""
        seen.add(got.pattern)
    # the simulator read the "one of" options of our reply format, not a default
    assert len(seen) > 1


def test_simulator_judge_reads_the_numbered_responses() -> None:
    sim = Simulator(SimConfig())
    wrong = "Yes, Ivo Brandt wrote a travel guide about Lisbon."
    right = SEED["right_response"]
    for answers, expected in (([wrong, right], 2), ([right, wrong], 1)):
        messages = _template("filter").render(filter_values(SEED, answers))
        assert parse_choice(_ask(sim, messages), answers) == expected
