"""What every task's prompt templates share: structure, reply format, the record's place,
the patterns they teach, originality, size and a round trip through the simulator.

Each task's own demonstrations are checked in ``test_prompts_<task>.py``.
"""

from __future__ import annotations

import asyncio
import re

import orjson
import pytest

from halugen.prompts import Template
from halugen.simulate import SimConfig, Simulator
from halugen.tasks import builtin_folder, steps
from halugen.tasks.base import TaskSpec, normalise
from halugen.tasks.templates import task_template
from tests.task_specs import task_spec

TASKS = ("qa", "dialogue", "summarization")
STEMS = ("sample_onepass", "sample_conversation", "filter")

SEEDS = {
    "qa": {
        # another year for a wrong answer found in the knowledge too (guard knowledge_span)
        "knowledge": "The Oberon Bridge spans the river Tamm in the town of Velby. It opened in "
        "1894, replacing the ferry of 1861.",
        "question": "In which year did the bridge in Velby open?",
        "right_answer": "1894",
    },
    "dialogue": {
        "knowledge": "Tove Marlow wrote The Salt Orchard. The Salt Orchard has genre historical "
        "novel.",
        "dialogue_history": (
            "[Human]: I'm after a historical novel. [Assistant]: Any period in mind? "
            "[Human]: Not really. What would you suggest?"
        ),
        "right_response": "The Salt Orchard by Tove Marlow is a lovely historical novel.",
    },
    "summarization": {
        "document": (
            "The Marlow rowing club will hold its first regatta since 2019 on 12 June. Club "
            "captain Helen Park said 40 crews from six countries had entered. The event was "
            "cancelled three years in a row because the river flooded."
        ),
        "right_summary": (
            "Marlow rowing club holds its first regatta since 2019, with 40 crews entered."
        ),
    },
}
CANDIDATES = {
    "qa": ["1901", "1889"],
    "dialogue": [
        "The Salt Orchard by Ivo Brandt is a lovely historical novel.",
        "The Salt Orchard by Tove Marlow is a lovely historical novel, set in 1850.",
    ],
    "summarization": [
        "Marlow rowing club holds its first regatta since 2018, with 40 crews entered.",
        "Marlow rowing club holds its first regatta since 2019, with 60 crews entered.",
    ],
}
# (sample_onepass, sample_conversation, filter) caps in rough tokens; summarization's are
# without the document (documents are long)
SIZE_CAPS = {
    "qa": (1200, 1500, 800),
    "dialogue": (1200, 1500, 800),
    "summarization": (1000, 1200, 800),
}

# Distinctive fragments of HaluEval's own prompts and demonstrations (a few words each);
# halugen's templates are written from scratch and must contain none of them.
HALUEVAL_FRAGMENTS = [
    "act as a hallucination answer generator",
    "act as an answer judge",
    "act as an assistant in a conversation with human",
    "act as a response judge",
    "hallucination conversation generator",
    "hallucination summary generator",
    "act as a summary judge",
    "sounds plausible but is factually incorrect",
    "cannot be directly inferred or entailed",
    "there exist some non-factual and incorrect information",
    "you should try your best",
    "highly similar entity",
    "dissimilar entity",
    "have you mastered this method",
    "about 5 more words",
    "factual contradiction",
    "#hallucinated answer#",
    "#your choice#",
    "#knowledge#",
    "#dialogue history#",
    "#true response#",
    "#hallucinated response#",
    "#document#",
    "#right summary#",
    "#hallucinated summary#",
    "the best response is",
    "the best summary is",
    "without hallucination and non-factual information",
    "kelly osbourne",
    "ketchup",
    "dark knight",
    "christopher nolan",
    "batman",
    "panther chameleon",
    "marl park",
    "martin place",
    "lindt cafe",
    "didcot",
]


def spec_of(task: str) -> TaskSpec:
    return task_spec(task)


def sample_format(spec: TaskSpec) -> str:
    label = spec.reply_labels[0]
    return (
        f"Reply format:\nPattern: <one of: {', '.join(spec.patterns)}>\n"
        f"{label}: <your hallucinated {label.lower()}>"
    )


def filter_format(spec: TaskSpec) -> str:
    return f"Reply format:\nChoice: <the number of the {spec.candidate_label.lower()} you pick>"


def field_label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def render(task: str, stem: str, seed: dict[str, str] | None = None) -> tuple[dict[str, str], ...]:
    spec, seed = spec_of(task), seed or SEEDS[task]
    template = task_template(task_spec(task), stem)
    if stem == "filter":
        return template.render(steps.lay_out_candidates(spec, seed, CANDIDATES[task]))
    return template.render(seed)


def label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


def named_patterns(spec: TaskSpec, text: str) -> list[str]:
    # "factual" must not be found inside "non-factual"
    return [p for p in spec.patterns if re.search(rf"(?<![\w-]){re.escape(p)}\b", text.casefold())]


def _template(task: str, stem: str) -> Template:
    return task_template(task_spec(task), stem)


@pytest.mark.parametrize("task", TASKS)
def test_templates_need_exactly_the_seed_fields_and_the_filter_never_the_right_text(
    task: str,
) -> None:
    spec = spec_of(task)
    for stem in spec.sample_templates:
        assert _template(task, stem).fields == set(spec.seed_fields)
    assert _template(task, spec.filter_template).fields == {*spec.filter_context, "answers"}


@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("task", TASKS)
def test_rendered_template_is_complete_and_gives_the_reply_format_before_the_record(
    task: str, stem: str
) -> None:
    """The reply format is fixed text: it sits in the opening a provider caches, and the
    record (what changes from call to call) ends the last message."""
    spec = spec_of(task)
    messages = render(task, stem)
    assert messages[0]["role"] == "system"
    assert messages[-1]["role"] == "user"
    for m in messages:
        assert m["content"].strip()
        assert "{{" not in m["content"] and "}}" not in m["content"]
    last = messages[-1]["content"]
    fmt = filter_format(spec) if stem == "filter" else sample_format(spec)
    assert last.count("Reply format:") == 1
    assert fmt + "\n\n" in last
    first_field = (spec.filter_context if stem == "filter" else spec.seed_fields)[0]
    assert last.index(fmt) < last.index(f"{field_label(first_field)}: ")


@pytest.mark.parametrize("stem", STEMS[:2])
@pytest.mark.parametrize("task", TASKS)
def test_record_lines_come_last_and_once_in_the_final_message(task: str, stem: str) -> None:
    spec, seed = spec_of(task), SEEDS[task]
    last = render(task, stem)[-1]["content"]
    record = "\n".join(f"{field_label(f)}: {seed[f]}" for f in spec.seed_fields)
    assert last.endswith(record)
    # demonstrations never use the record's labelled-line layout in this message
    for label in (*map(field_label, spec.seed_fields), spec.reply_labels[0], "Pattern"):
        assert len(label_lines(last, label)) == 1, label


@pytest.mark.parametrize("task", TASKS)
def test_filter_record_lines_come_last_and_hide_the_right_text(task: str) -> None:
    spec, seed = spec_of(task), SEEDS[task]
    messages = render(task, "filter")
    last = messages[-1]["content"]
    label = spec.candidate_label
    context = "".join(f"{field_label(f)}: {seed[f]}\n" for f in spec.filter_context)
    shown = "\n".join(f"{label} {i}: {c}" for i, c in enumerate(CANDIDATES[task], 1))
    assert last.endswith(context + shown)
    for line in (*map(field_label, spec.filter_context), f"{label} 1", f"{label} 2"):
        assert len(label_lines(last, line)) == 1, line
    # the judge must never see the record's right text, however the values are built
    hidden = {**seed, spec.right_field: "SENTINEL-RIGHT"}
    assert render(task, "filter", hidden) == messages
    assert all("SENTINEL" not in m["content"] for m in messages)
    assert not label_lines(last, field_label(spec.right_field))


@pytest.mark.parametrize("task", TASKS)
def test_filter_says_what_to_pick_in_its_instructions_alone(task: str) -> None:
    """The filter is never cached, so it carries no demonstrations: its system message says
    what to pick (the candidate the record supports, the closest when none is), that exactly
    one is picked, and the reply is the choice line; then the reply format and the record."""
    spec = spec_of(task)
    messages = render(task, "filter")
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"].casefold()
    assert "numbered" in system and "closest" in system and "exactly one" in system
    assert "choice line" in system
    assert messages[1]["content"].startswith(filter_format(spec) + "\n\n")


@pytest.mark.parametrize("stem", STEMS[:2])
@pytest.mark.parametrize("task", TASKS)
def test_every_pattern_is_named_and_the_format_lists_exactly_the_spec_patterns(
    task: str, stem: str
) -> None:
    spec = spec_of(task)
    messages = render(task, stem)
    assert named_patterns(spec, "\n".join(m["content"] for m in messages)) == list(spec.patterns)
    options = re.search(r"<one of: ([^>]*)>", messages[-1]["content"])
    assert options is not None
    assert tuple(options.group(1).split(", ")) == spec.patterns


@pytest.mark.parametrize("task", TASKS)
def test_echoing_the_reply_format_is_not_a_usable_candidate(task: str) -> None:
    spec = spec_of(task)
    assert steps.read_reply(spec, sample_format(spec)).problem == "placeholder_answer"
    assert steps.read_choice(filter_format(spec), ["a", "b"]) is None


@pytest.mark.parametrize("task", TASKS)
def test_conversation_teaches_one_pattern_per_turn_and_the_assistant_restates_it(
    task: str,
) -> None:
    spec = spec_of(task)
    messages = render(task, "sample_conversation")
    middle = messages[1:-1]
    assert [m["role"] for m in middle] == ["user", "assistant"] * (len(middle) // 2)
    turns = list(zip(middle[0::2], middle[1::2], strict=True))
    assert len(turns) == len(spec.patterns)
    for pattern, (user, assistant) in zip(spec.patterns, turns, strict=True):
        assert named_patterns(spec, user["content"]) == [pattern]
        assert label_lines(user["content"], "Pattern") == [pattern]
        # the confirmation is in the assistant's own words, not an echo of the lesson
        assert named_patterns(spec, assistant["content"]) in ([], [pattern])
        assert assistant["content"] not in user["content"]
        assert len(assistant["content"]) < len(user["content"])


@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("task", TASKS)
def test_templates_do_not_reuse_halueval_text(task: str, stem: str) -> None:
    path = builtin_folder(task) / "prompts" / f"{stem}.txt"
    text = " ".join(path.read_text(encoding="utf-8").casefold().split())
    for fragment in HALUEVAL_FRAGMENTS:
        assert fragment not in text, fragment


@pytest.mark.parametrize("task", TASKS)
def test_prompt_size_stays_under_its_cap(task: str) -> None:
    seed = {**SEEDS[task], "document": ""} if task == "summarization" else SEEDS[task]
    for stem, cap in zip(STEMS, SIZE_CAPS[task], strict=True):
        # len/4 per message plus the chat format's few tokens per message
        tokens = sum(len(m["content"]) // 4 + 4 for m in render(task, stem, seed)) + 3
        assert 60 < tokens <= cap, (stem, tokens)  # the floor: a prompt, not an empty shell


# -- round trip through the simulator ------------------------------------------------------


def ask(sim: Simulator, messages: tuple[dict[str, str], ...], seed: int = 0) -> str:
    body = orjson.dumps({"model": "sim", "messages": list(messages), "seed": seed})
    response = asyncio.run(sim.handle("/v1/chat/completions", {}, body))
    assert response.status == 200
    return orjson.loads(response.body)["choices"][0]["message"]["content"]


@pytest.mark.parametrize("stem", STEMS[:2])
@pytest.mark.parametrize("task", TASKS)
def test_simulator_reply_to_a_sampling_template_parses_and_passes_the_guards(
    task: str, stem: str
) -> None:
    spec, seed = spec_of(task), SEEDS[task]
    sim = Simulator(SimConfig())
    seen, passed = set(), 0
    for n in range(8):
        got = steps.read_reply(spec, ask(sim, render(task, stem), n))
        assert got.problem == "", got
        assert got.pattern in spec.patterns
        assert normalise(got.answer) != normalise(seed[spec.right_field])
        passed += steps.check(spec, seed, got.answer) == ""
        seen.add(got.pattern)
    # the simulator read the "one of" options of our reply format, not a default
    assert len(seen) > 1
    assert passed >= 4


WRONG = {
    "qa": "1901",
    "dialogue": "Yes, Ivo Brandt wrote a travel guide about Lisbon.",
    "summarization": "A ferry service between two islands was suspended during the storm.",
}


@pytest.mark.parametrize("task", TASKS)
def test_simulator_judge_reads_the_numbered_candidates(task: str) -> None:
    spec, seed = spec_of(task), SEEDS[task]
    sim = Simulator(SimConfig())
    wrong, right = WRONG[task], seed[spec.right_field]
    for answers, expected in (([wrong, right], 2), ([right, wrong], 1)):
        messages = _template(task, "filter").render(steps.lay_out_candidates(spec, seed, answers))
        assert steps.read_choice(ask(sim, messages), answers) == expected


def test_a_templates_fixed_pieces_are_counted_once_per_counter() -> None:
    """Every call renders and counts its template: the messages without a field are joined
    once and the fixed pieces' tokens counted once per counter; each call counts only its
    fields, and the estimate is what counting every piece gives."""
    from halugen.prompts import PER_MESSAGE_TOKENS, PER_REQUEST_TOKENS, parse_template

    class Counting:
        def __init__(self) -> None:
            self.static_calls = 0

        def count(self, text: str) -> int:
            return len(text.split())

        def count_static(self, text: str) -> int:
            self.static_calls += 1
            return len(text.split())

    template = parse_template(
        "t/conv",
        "=== system\nYou write wrong answers.\n=== user\nWhat is 2 + 2?\n"
        "=== assistant\nFive.\n=== user\nQuestion: {{question}} ({{question}})\n",
    )
    counter = Counting()
    values = {"question": "Which river flows through Vallona?"}
    # the fixed messages (4, 5 and 1 words), the fixed pieces around the fields (1 + 1 + 1)
    by_piece = PER_REQUEST_TOKENS + 4 * PER_MESSAGE_TOKENS + (4 + 5 + 1) + (1 + 1 + 1) + 2 * 5
    assert template.estimate_tokens(values, counter) == by_piece  # type: ignore[arg-type]
    calls = counter.static_calls
    assert template.estimate_tokens(values, counter) == by_piece  # type: ignore[arg-type]
    assert counter.static_calls == calls  # the second call counted no fixed piece
    assert template.render(values)[1] == {"role": "user", "content": "What is 2 + 2?"}
    assert template.render(values)[3]["content"] == (
        "Question: Which river flows through Vallona? (Which river flows through Vallona?)"
    )
