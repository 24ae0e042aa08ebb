"""Seeds of a task folder: JSON lines (or one JSON array) of objects holding its fields.

A record has the task's seed fields under their own names, or under the column names of
the task's ``[seeds] map`` (field -> column). A record that lacks one, or holds one that is
not text, is a bad record with its reason, as for every reader; texts are kept as read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..records import BadRecord, Seed
from .jsonl import RecordProblem, iter_records, kind_of, text_field

__all__ = ["FORMAT", "read_named"]

FORMAT = "jsonl"


def read_named(
    path: str, task: str, fields: tuple[str, ...], columns: Mapping[str, str]
) -> Iterator[Seed | BadRecord]:
    """Seeds of ``task`` from ``path``, lazily; ``columns`` maps a field to its key."""
    base = os.path.basename(path)
    for position, record in iter_records(path):
        if isinstance(record, BadRecord):
            yield record
            continue
        try:
            values = _fields(record, fields, columns)
        except RecordProblem as problem:
            yield BadRecord(path, position, str(problem))
            continue
        yield Seed(
            task=task,
            fields=values,
            seed_id=f"{base}:{position}",
            source_file=path,
            source_line=position,
            dataset=FORMAT,
        )


def _fields(record: Any, fields: tuple[str, ...], columns: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(record, Mapping):
        raise RecordProblem(f"not a JSON object ({kind_of(record)})")
    out = {}
    for name in fields:
        column = columns.get(name, name)
        try:
            out[name] = text_field(record, column)
        except RecordProblem as problem:
            if column == name:
                raise
            raise RecordProblem(f"{problem} (the column of field {name})") from None
    return out
