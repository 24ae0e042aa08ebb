"""Answers to plain user queries (no reply format): the general user-query track.

HaluEval samples three responses per query and keeps the queries whose responses agree
least. So that this selection has a signal, about 40% of queries (chosen by the prompt's
key) get variants that contradict each other (other numbers, names, negations and
sentences); the rest get light paraphrases of one answer (only the wording varies).
"""

from __future__ import annotations

import re

from .keys import mix, pick, unit
from .words import STOP

__all__ = ["CONTRADICT_SHARE", "plain_answer"]

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")

_SENTENCES = (
    "{Topic} {is} {adv} understood in terms of {num} main ideas.",
    "Most accounts trace {topic} back to {name} around {year}.",
    "A {adj} first step is to look at how {topic} {shapes} everyday choices.",
    "In practice, about {num} in ten people who ask about {topic} want a short answer.",
    "{Name} {is} {adv} cited as the best-known example of {topic}.",
    "The details depend on the situation, but the core of {topic} {is} {adj} to apply.",
    "Experts {adv} recommend starting small, with {num} concrete steps.",
)
_ADV = ("usually", "typically", "generally", "commonly")
_ADJ = ("useful", "sensible", "practical", "helpful")
_REPORT_NAMES = (
    "the Harlow report",
    "Marta Lindqvist",
    "the Oren Valley study",
    "Professor Idris Kane",
    "the Calder Group",
    "a 1970s survey in Lisbon",
)
CONTRADICT_SHARE = 0.4  # share of queries whose answers disagree with each other


def _topic(query: str) -> str:
    """The query's last two content words with what lies between ("capital of France")."""
    spans = [
        m for m in _WORD.finditer(query) if len(m.group(0)) > 2 and m.group(0).lower() not in STOP
    ]
    if not spans:
        return "this question"
    first = spans[-2] if len(spans) > 1 else spans[-1]
    words = query[first.start() : spans[-1].end()].split()
    return " ".join(words[:5]) if len(words) <= 5 else spans[-1].group(0)


def plain_answer(query: str, prompt_key: int, variant_key: int) -> str:
    """2-4 sentences about the query's words.

    For about 40% of queries (chosen by ``prompt_key``) the variants contradict each other
    (other numbers, names, negations, sentences); for the rest they are light paraphrases
    of one answer, so similarity-based selection of disputed queries has a signal.
    """
    topic = _topic(query)
    contradict = unit(prompt_key, 31) < CONTRADICT_SHARE
    facts_key = variant_key if contradict else prompt_key
    count = 2 + mix(facts_key, 32) % 3
    start = mix(facts_key, 33) % len(_SENTENCES)
    chosen = [(start + 2 * i) % len(_SENTENCES) for i in range(count)]
    if contradict:
        is_word = "is not" if mix(variant_key, 34) % 2 else "is"
        shapes = "does not shape" if is_word == "is not" else "shapes"
    else:
        is_word, shapes = "is", "shapes"
    name = pick(_REPORT_NAMES, facts_key, 35)
    values = {
        "topic": topic,
        "Topic": topic[:1].upper() + topic[1:],
        "is": is_word,
        "shapes": shapes,
        "adv": pick(_ADV, variant_key, 36),  # wording varies in every variant
        "adj": pick(_ADJ, variant_key, 37),
        "num": 2 + mix(facts_key, 38) % 7,
        "year": 1900 + mix(facts_key, 39) % 120,
        "name": name,
        "Name": name[:1].upper() + name[1:],
    }
    return " ".join(_SENTENCES[i].format(**values) for i in chosen)
