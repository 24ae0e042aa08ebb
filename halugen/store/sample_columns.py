"""Where a task's fields live in the store's ``samples``.

HaluEval's fields (knowledge, question, right_answer, ...) have columns of their own, as
they always had; a field that a task folder names otherwise ("passages") is kept in the
row's ``extra_json`` object. Every reader selects a task's fields through
``field_columns``, so it gets them by name either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import orjson

from .rows import TABLE_COLUMNS

__all__ = ["SAMPLE_COLUMNS", "extra_fields", "field_column", "field_columns"]

# the text columns of sample_rows, in the table's order: HaluEval's fields
_ROW = TABLE_COLUMNS["sample_rows"]
SAMPLE_COLUMNS = _ROW[_ROW.index("model") + 1 : _ROW.index("length_ratio")]


def field_column(name: str, *, table: str = "") -> str:
    """The SQL expression of field ``name`` in a ``samples`` row, named ``name``.

    Field names are checked when a task folder is read (lower-case letters, digits, _), so
    they are safe inside the SQL text.
    """
    prefix = f"{table}." if table else ""
    if name in SAMPLE_COLUMNS:
        return f"{prefix}{name}"
    return f"json_extract_string({prefix}extra_json, '$.{name}') AS {name}"


def field_columns(names: Iterable[str], *, table: str = "") -> str:
    """``field_column`` of each name, comma-separated."""
    return ", ".join(field_column(n, table=table) for n in names)


def extra_fields(fields: Mapping[str, str]) -> str | None:
    """The JSON object of the fields without a column of their own; None when none is."""
    extra = {k: v for k, v in fields.items() if k not in SAMPLE_COLUMNS}
    return orjson.dumps(extra).decode() if extra else None
