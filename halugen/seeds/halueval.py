"""HaluEval's own seed files: JSON lines with the fields under HaluEval's names, per task.

- QA (``halueval-qa``): ``knowledge``, ``question``, ``right_answer``; the released
  ``qa_data.json`` and the generator's intermediate files, which add a ``hallucinated_answer``.
- Dialogue (``halueval-dialogue``): ``knowledge``, ``dialogue_history``, ``right_response``;
  the released ``dialogue_data.json`` adds a ``hallucinated_response``.
- Summarization (``halueval-summarization``): ``document``, ``right_summary``; the released
  ``summarization_data.json`` adds a ``hallucinated_summary``.

The hallucinated fields are ignored: halugen makes its own. Despite their ``.json`` suffix these
files are JSON lines; a JSON array of the same objects is accepted too. Text fields are kept
byte for byte as the file has them (leading spaces, a trailing newline), so a file read as
seeds and exported again holds the same texts. The released right summaries end in a
newline the hallucinated ones lack, a tell-tale of the label: it is dealt with where texts
are compared or shown to a model under test (both trimmed there), never by changing the seed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..records import BadRecord, Seed, kind_of
from .jsonl import RecordProblem, iter_records, seeds_of, text_field

__all__ = [
    "DESCRIPTION",
    "DIALOGUE_DESCRIPTION",
    "DIALOGUE_FORMAT",
    "DIALOGUE_KEYS",
    "DIALOGUE_TASK",
    "FORMAT",
    "KEYS",
    "LAYOUTS",
    "SUMMARIZATION_DESCRIPTION",
    "SUMMARIZATION_FORMAT",
    "SUMMARIZATION_KEYS",
    "SUMMARIZATION_TASK",
    "TASK",
    "halueval_dialogue_fields",
    "halueval_qa_fields",
    "halueval_summarization_fields",
    "read_halueval_dialogue",
    "read_halueval_qa",
    "read_halueval_summarization",
]

LAYOUTS = frozenset({"json"})  # of all three forms

FORMAT = "halueval-qa"
TASK = "qa"
_QA_NAMES = ("knowledge", "question", "right_answer")
KEYS = frozenset(_QA_NAMES)
DESCRIPTION = "HaluEval QA files: JSON lines with knowledge, question, right_answer"

DIALOGUE_FORMAT = "halueval-dialogue"
DIALOGUE_TASK = "dialogue"
_DIALOGUE_NAMES = ("knowledge", "dialogue_history", "right_response")
DIALOGUE_KEYS = frozenset(_DIALOGUE_NAMES)
DIALOGUE_DESCRIPTION = (
    "HaluEval dialogue files: JSON lines with knowledge, dialogue_history, right_response"
)

SUMMARIZATION_FORMAT = "halueval-summarization"
SUMMARIZATION_TASK = "summarization"
_SUMMARIZATION_NAMES = ("document", "right_summary")
SUMMARIZATION_KEYS = frozenset(_SUMMARIZATION_NAMES)
SUMMARIZATION_DESCRIPTION = "HaluEval summarization files: JSON lines with document, right_summary"


def read_halueval_qa(path: str) -> Iterator[Seed | BadRecord]:
    """Seeds of a HaluEval QA file, lazily; bad lines as ``BadRecord`` with their number."""
    return _read(path, TASK, FORMAT, _QA_NAMES)


def read_halueval_dialogue(path: str) -> Iterator[Seed | BadRecord]:
    """Seeds of a HaluEval dialogue file, lazily; bad lines as ``BadRecord``."""
    return _read(path, DIALOGUE_TASK, DIALOGUE_FORMAT, _DIALOGUE_NAMES)


def read_halueval_summarization(path: str) -> Iterator[Seed | BadRecord]:
    """Seeds of a HaluEval summarization file, lazily; bad lines as ``BadRecord``."""
    return _read(path, SUMMARIZATION_TASK, SUMMARIZATION_FORMAT, _SUMMARIZATION_NAMES)


def halueval_qa_fields(record: Any) -> dict[str, str]:
    """The QA fields of one HaluEval record; ``RecordProblem`` when one is unusable."""
    return _fields(record, _QA_NAMES)


def halueval_dialogue_fields(record: Any) -> dict[str, str]:
    """The dialogue fields of one HaluEval record; ``RecordProblem`` when one is unusable."""
    return _fields(record, _DIALOGUE_NAMES)


def halueval_summarization_fields(record: Any) -> dict[str, str]:
    """The summarization fields of one HaluEval record; ``RecordProblem`` when unusable."""
    return _fields(record, _SUMMARIZATION_NAMES)


def _read(path: str, task: str, fmt: str, names: tuple[str, ...]) -> Iterator[Seed | BadRecord]:
    return seeds_of(
        path, iter_records(path), task=task, dataset=fmt, fields=lambda r: _fields(r, names)
    )


def _fields(record: Any, names: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(record, Mapping):
        raise RecordProblem(f"not a JSON object ({kind_of(record)})")
    return {name: text_field(record, name) for name in names}
