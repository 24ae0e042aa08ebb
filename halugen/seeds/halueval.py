"""HaluEval QA seeds: JSON lines with ``knowledge``, ``question`` and ``right_answer``.

Reads HaluEval's released ``qa_data.json`` and its generator's intermediate files (which add a
``hallucinated_answer``; ignored: halugen makes its own). Despite their ``.json`` suffix these
are JSON lines. A JSON array of the same objects is accepted too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..records import BadRecord, Seed
from .jsonl import RecordProblem, iter_records, kind_of, text_field

__all__ = ["DESCRIPTION", "FORMAT", "KEYS", "TASK", "halueval_qa_fields", "read_halueval_qa"]

FORMAT = "halueval-qa"
TASK = "qa"
KEYS = frozenset({"knowledge", "question", "right_answer"})
DESCRIPTION = "HaluEval QA files: JSON lines with knowledge, question, right_answer"


def read_halueval_qa(path: str) -> Iterator[Seed | BadRecord]:
    """Seeds of a HaluEval QA file, lazily; bad lines as ``BadRecord`` with their number."""
    base = os.path.basename(path)
    for position, record in iter_records(path):
        if isinstance(record, BadRecord):
            yield record
            continue
        try:
            fields = halueval_qa_fields(record)
        except RecordProblem as problem:
            yield BadRecord(path, position, str(problem))
            continue
        yield Seed(
            task=TASK,
            fields=fields,
            seed_id=f"{base}:{position}",
            source_file=path,
            source_line=position,
            dataset=FORMAT,
        )


def halueval_qa_fields(record: Any) -> dict[str, str]:
    """The QA fields of one HaluEval record; ``RecordProblem`` when one is unusable."""
    if not isinstance(record, Mapping):
        raise RecordProblem(f"not a JSON object ({kind_of(record)})")
    return {name: text_field(record, name) for name in ("knowledge", "question", "right_answer")}
