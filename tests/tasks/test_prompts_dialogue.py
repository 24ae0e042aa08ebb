"""The dialogue prompt templates' own demonstrations (the shared checks: test_prompts.py)."""

from __future__ import annotations

import re
from functools import partial

from halugen.prompts import Template
from halugen.tasks import steps
from halugen.tasks.base import normalise
from halugen.tasks.templates import task_template
from tests.task_specs import task_spec

DIALOGUE = task_spec("dialogue")
PATTERNS = DIALOGUE.patterns

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

parse_candidate = partial(steps.read_reply, DIALOGUE)
parse_choice = steps.read_choice
filter_values = partial(steps.lay_out_candidates, DIALOGUE)
check_candidate = partial(steps.check, DIALOGUE)


def _template(stem: str) -> Template:
    return task_template(task_spec("dialogue"), stem)


def _render(stem: str, seed: dict[str, str] = SEED) -> tuple[dict[str, str], ...]:
    if stem == "filter":
        return _template(stem).render(filter_values(seed, CANDIDATES))
    return _template(stem).render(seed)


def _label_lines(text: str, label: str) -> list[str]:
    return re.findall(rf"^{re.escape(label)}: ?(.*)$", text, re.MULTILINE)


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


# HaluEval's dialogue generation instructions replace the true entity: with one very like it
# (extrinsic-soft), with one unlike it (extrinsic-hard), with one of another entity type
# (extrinsic-grouped). Our definitions must state that relation, in our own words (its
# phrases are among test_prompts.py's HALUEVAL_FRAGMENTS).
ENTITY_RELATION = {
    "extrinsic-soft": "closely resembles",
    "extrinsic-hard": "unrelated entity of the same type",
    "extrinsic-grouped": "entity of another type",
}


def test_each_pattern_definition_states_halueval_entity_relation() -> None:
    assert set(ENTITY_RELATION) == set(PATTERNS)
    for pattern, relation in ENTITY_RELATION.items():
        definition = DIALOGUE.definition(pattern)
        assert relation in definition, (pattern, definition)
        # a replacement of the true entity, not an added claim or a mix of statements
        assert "where the true entity belongs" in definition
        assert not re.search(r"\badds?\b|\bmix", definition), definition
    # the one-pass prompt teaches exactly these definitions
    onepass = _render("sample_onepass")[-1]["content"]
    for pattern in PATTERNS:
        assert f"{pattern}: {DIALOGUE.definition(pattern)}" in onepass
    # every judge names each pattern by the same relation
    for strategy in DIALOGUE.strategies:
        system = _template(f"judge_{strategy}").render(
            dict.fromkeys(_template(f"judge_{strategy}").fields, "x")
        )[0]["content"]
        for pattern, relation in ENTITY_RELATION.items():
            (line,) = [x for x in system.splitlines() if x.startswith(f"- {pattern}:")]
            assert relation in line, (strategy, line)


def _replaced(right: str, hallucinated: str) -> tuple[str, str]:
    """The spans that differ between two texts sharing a prefix and a suffix of words."""
    a, b = right.split(), hallucinated.split()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    return " ".join(a[start : len(a) - end]), " ".join(b[start : len(b) - end])


def test_every_demonstration_replaces_one_entity_and_adds_nothing() -> None:
    for d in _demonstrations():
        old, new = _replaced(d["right"], d["hallucinated"])
        assert old and new, d
        # one name for another (a few words, capitalised): nothing added, nothing mixed in
        assert len(old.split()) <= 5 and len(new.split()) <= 5, (old, new)
        assert new[:1].isupper() and old[:1].isupper(), (old, new)
