"""OpenDialKG dialogue seeds: dialogue history, knowledge-graph path text, true response.

OpenDialKG ships ``opendialkg.csv`` (and people split it into train/valid/test files with the
same header): columns ``Messages``, ``User Rating``, ``Assistant Rating``, one dialogue per row.
``Messages`` is a JSON list of turns: chat turns ``{"type": "chat", "sender": "user" |
"assistant", "message": ...}`` and action turns ``{"type": "action", "sender": ...,
"action_id": ..., "metadata": {...}}``. A ``kgwalk/choose_path`` action carries ``metadata.path
= [score, [[subject, relation, object], ...], verbalised text]``: the knowledge the next reply
draws on. ``meta_thread/send_meta_message`` actions ("are you there?") are chatter outside the
dialogue and are left out.

One seed per assistant reply that has knowledge before it, so a dialogue with several paths
gives several seeds (format ``opendialkg-dialogue``: only the first, HaluEval's unit of one
seed per dialogue):

- knowledge: the verbalised texts of the paths chosen since the previous assistant reply (by
  either side: a path the user picks grounds the question the reply answers), in order;
- right response: the first assistant chat turn after that knowledge;
- dialogue history: every chat turn before that response, ``[Human]: …`` / ``[Assistant]: …``
  on one line separated by single spaces (HaluEval's layout). A user turn between the path and
  the reply belongs in it: it is the question the reply answers.

A row that gives no seed comes as one ``BadRecord`` saying why; a reply whose knowledge has no
chat turn before it is passed over (no history to continue).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from ..records import BadRecord, Seed, kind_of
from .cnndm import as_sentence
from .csvfile import iter_csv
from .jsonl import RecordProblem, clean_text, one_line

__all__ = [
    "DESCRIPTION",
    "FORMAT",
    "KEYS",
    "LAYOUTS",
    "PER_DIALOGUE_DESCRIPTION",
    "PER_DIALOGUE_FORMAT",
    "TASK",
    "dialogue_seeds",
    "join_sentences",
    "read_opendialkg",
    "read_opendialkg_per_dialogue",
]

FORMAT = "opendialkg"
PER_DIALOGUE_FORMAT = "opendialkg-dialogue"  # given with --seed-format, never detected
TASK = "dialogue"
KEYS = frozenset({"messages", "user rating"})  # CSV header columns, normalised
LAYOUTS = frozenset({"csv"})
DESCRIPTION = "OpenDialKG CSV files: columns Messages, User Rating, Assistant Rating"
PER_DIALOGUE_DESCRIPTION = "the same, one seed per dialogue as HaluEval (name it to use it)"

_SPEAKERS = {"user": "[Human]", "assistant": "[Assistant]"}
_ASSISTANT = _SPEAKERS["assistant"]

NO_PATH = "no knowledge-graph path in the dialogue"
NO_REPLY = "no assistant turn after a knowledge-graph path"
NO_HISTORY = "no dialogue turn before the assistant reply that follows a knowledge-graph path"


def read_opendialkg_per_dialogue(path: str) -> Iterator[Seed | BadRecord]:
    """HaluEval's unit: one seed per dialogue, its first grounded reply (format
    ``opendialkg-dialogue``). The seeds of one dialogue are not independent; with one per
    dialogue, every benchmark item is."""
    return read_opendialkg(path, per_dialogue=True)


def read_opendialkg(path: str, *, per_dialogue: bool = False) -> Iterator[Seed | BadRecord]:
    """Dialogue seeds of an OpenDialKG CSV file, lazily; unusable rows as ``BadRecord``.

    One seed per grounded reply, or with ``per_dialogue`` only the first of each dialogue.
    """
    base = os.path.basename(path)
    for line, row in iter_csv(path, required=("messages",)):
        if isinstance(row, BadRecord):
            yield row
            continue
        try:
            turns = _messages(row["messages"])
            seeds = dialogue_seeds(turns)
        except RecordProblem as problem:
            yield BadRecord(path, line, str(problem))
            continue
        if isinstance(seeds, str):
            yield BadRecord(path, line, seeds)
            continue
        for turn, fields in seeds[:1] if per_dialogue else seeds:
            yield Seed(
                task=TASK,
                fields=fields,
                seed_id=f"{base}:{line}:{turn}",
                source_file=path,
                source_line=line,
                dataset=FORMAT,
            )


def dialogue_seeds(turns: list[Any]) -> list[tuple[int, dict[str, str]]] | str:
    """``(1-based turn number of the reply, fields)`` per seed of one dialogue, or the reason
    (a string) why it gives none. ``RecordProblem`` when a turn is not an object."""
    history: list[str] = []
    knowledge: list[str] = []
    seeds: list[tuple[int, dict[str, str]]] = []
    saw_path = saw_unanchored = False
    for number, turn in enumerate(turns, 1):
        if not isinstance(turn, Mapping):
            raise RecordProblem(f"Messages item {number} is {kind_of(turn)}, not an object")
        kind = turn.get("type")
        if kind == "action":
            text = _path_text(turn)
            if text and (not knowledge or knowledge[-1] != text):  # a path chosen twice
                knowledge.append(text)
                saw_path = True
            continue
        if kind != "chat":
            continue
        sender = turn.get("sender")
        speaker = _SPEAKERS.get(sender) if isinstance(sender, str) else None
        message = turn.get("message")
        if speaker is None or not isinstance(message, str) or not (message := clean_text(message)):
            continue  # an empty or unattributed turn carries nothing to continue from
        if speaker == _ASSISTANT and knowledge:
            if history:
                fields = {
                    "knowledge": join_sentences(knowledge),
                    "dialogue_history": " ".join(history),
                    "right_response": message,
                }
                seeds.append((number, fields))
            else:
                saw_unanchored = True
            knowledge = []
        history.append(f"{speaker}: {message}")
    if seeds:
        return seeds
    if saw_unanchored:
        return NO_HISTORY
    return NO_REPLY if saw_path else NO_PATH


def join_sentences(texts: list[str]) -> str:
    """Texts joined with one space; a text without final punctuation that another text
    follows gets a period, so two path texts never run into one sentence."""
    return " ".join([*(as_sentence(t) for t in texts[:-1]), texts[-1]])


def _messages(cell: str) -> list[Any]:
    try:
        value = orjson.loads(cell)  # JSON only: the cell is data, never evaluated as code
    except orjson.JSONDecodeError as err:
        raise RecordProblem(f"Messages is not valid JSON ({one_line(err)})") from None
    if not isinstance(value, list):
        raise RecordProblem(f"Messages is {kind_of(value)}, not a list of turns")
    return value


def _path_text(turn: Mapping[str, Any]) -> str:
    """The verbalised text of a knowledge-graph path action, "" for any other action."""
    metadata = turn.get("metadata")
    if not isinstance(metadata, Mapping):
        return ""
    path = metadata.get("path")
    if not isinstance(path, list) or len(path) < 3 or not isinstance(path[2], str):
        return ""
    return clean_text(path[2])
