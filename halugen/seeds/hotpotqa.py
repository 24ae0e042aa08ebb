"""HotpotQA seeds: the question, its answer, and the supporting-fact sentences as knowledge.

The released train/dev files are one JSON array of records with ``_id``, ``question``,
``answer``, ``supporting_facts`` (``[title, sentence index]`` pairs) and ``context``
(``[title, [sentences]]`` pairs). HaluEval gave the model the supporting facts as knowledge,
so that is what a seed's ``knowledge`` is. The Hugging Face export of the same data (dicts of
parallel lists, ``id`` instead of ``_id``, often as JSON lines) is read as well, because that
is how many people download HotpotQA today.

The question and the answer are kept exactly as the file has them; the knowledge is the
supporting sentences, each as written, joined with one space.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..records import BadRecord, Seed, kind_of
from .jsonl import (
    RecordProblem,
    check_text,
    iter_records,
    record_id,
    seeds_of,
    text_field,
)

__all__ = ["DESCRIPTION", "FORMAT", "KEYS", "TASK", "hotpotqa_fields", "read_hotpotqa"]

FORMAT = "hotpotqa"
TASK = "qa"
KEYS = frozenset({"question", "answer", "supporting_facts", "context"})
DESCRIPTION = (
    "HotpotQA train/dev files: a JSON array of objects with "
    "_id, question, answer, supporting_facts, context"
)


def read_hotpotqa(path: str) -> Iterator[Seed | BadRecord]:
    """Seeds of a HotpotQA file, lazily, one per record; unusable records as ``BadRecord``."""
    return seeds_of(
        path,
        iter_records(path),
        task=TASK,
        dataset=FORMAT,
        fields=hotpotqa_fields,
        seed_id=record_id("_id", "id"),
    )


def hotpotqa_fields(record: Any) -> dict[str, str]:
    """A HotpotQA record under HaluEval's QA names; ``RecordProblem`` when unusable."""
    if not isinstance(record, Mapping):
        raise RecordProblem(f"record is {kind_of(record)}, not an object")
    question = text_field(record, "question")
    answer = text_field(record, "answer")
    knowledge = _supporting_knowledge(record)
    return {"knowledge": knowledge, "question": question, "right_answer": answer}


def _supporting_knowledge(record: Mapping[str, Any]) -> str:
    paragraphs = _paragraphs(record)
    sentences: list[str] = []
    seen: set[tuple[str, int]] = set()
    for title, index in _facts(record):
        if (title, index) in seen:
            continue  # a repeated fact would repeat its sentence
        seen.add((title, index))
        lines = paragraphs.get(title)
        # An index outside the paragraph is skipped, never wrapped around (no negative indexing).
        if lines is None or not 0 <= index < len(lines):
            continue
        sentence = lines[index]
        if isinstance(sentence, str) and (sentence := sentence.strip()):
            sentences.append(sentence)
    if not sentences:
        raise RecordProblem("no supporting-fact sentences in context")
    # HotpotQA sentences carry their own leading spaces, or none; join on exactly one and
    # keep each sentence as written.
    knowledge = " ".join(sentences)
    check_text("context", knowledge)
    return knowledge


def _paragraphs(record: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``title -> sentences`` from ``context``, in either the original or the HF shape."""
    context = _required(record, "context")
    if isinstance(context, Mapping):  # HF: {"title": [...], "sentences": [[...], ...]}
        pairs = _zip_lists(context, "title", "sentences")
    elif isinstance(context, list):
        pairs = [tuple(p) for p in context if isinstance(p, list | tuple) and len(p) == 2]
    else:
        raise RecordProblem(f"field context is {kind_of(context)}, not a list")
    paragraphs: dict[str, list[Any]] = {}
    for title, sentences in pairs:
        if isinstance(title, str) and isinstance(sentences, list):
            paragraphs.setdefault(title, sentences)
    return paragraphs


def _facts(record: Mapping[str, Any]) -> list[tuple[str, int]]:
    """``(title, sentence index)`` pairs from ``supporting_facts``, malformed pairs dropped."""
    facts = _required(record, "supporting_facts")
    if isinstance(facts, Mapping):  # HF: {"title": [...], "sent_id": [...]}
        pairs = _zip_lists(facts, "title", "sent_id")
    elif isinstance(facts, list):
        pairs = [tuple(p) for p in facts if isinstance(p, list | tuple) and len(p) == 2]
    else:
        raise RecordProblem(f"field supporting_facts is {kind_of(facts)}, not a list")
    return [
        (title, index)
        for title, index in pairs
        if isinstance(title, str) and isinstance(index, int) and not isinstance(index, bool)
    ]


def _required(record: Mapping[str, Any], name: str) -> Any:
    if name not in record or record[name] is None:
        raise RecordProblem(f"missing field {name}")
    return record[name]


def _zip_lists(value: Mapping[str, Any], first: str, second: str) -> list[tuple[Any, Any]]:
    a, b = value.get(first), value.get(second)
    if not isinstance(a, list) or not isinstance(b, list):
        return []
    return list(zip(a, b, strict=False))
