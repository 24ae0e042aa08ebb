"""Seeds from any table: JSON lines or a JSON array of objects, CSV, Parquet, Arrow.

A table holds one record per row under its own column names; ``mapping`` (``--map
FIELD=COLUMN``) says which column fills which of the task's seed fields, and a field left
out is read from the column of its own name. A mapped value may also be a DuckDB SQL
expression over the columns (``--map FIELD=EXPR``, table_sql.py), evaluated by DuckDB while
it streams the file. A column is a path: ``context.sentences`` is
the ``sentences`` field of the struct (or object) ``context``; where the path meets a list,
it goes on in every element. A list value is flattened and joined with single spaces; a
number becomes its text; text is kept as the file has it. ``id`` may be mapped too: the
seed's id is then that column, else ``<file>:<row>``.

Rows are read lazily: JSON and CSV through the streaming readers every format shares
(``jsonl``, ``csvfile``: one bad line is one bad record), Parquet and Arrow through pyarrow
a batch of rows at a time and only the columns the mapping names, so memory stays flat
whatever the file's size. ``check_table`` runs before any call: a mapped column that no
record has (a typo), or one that holds a whole struct, is an error naming the columns that
exist; a row whose value is missing or empty is a ``BadRecord`` with its reason.

A dataset saved with Hugging Face ``datasets.save_to_disk`` is a folder of Arrow IPC stream
files (``data-00000-of-00002.arrow`` ...) named in its ``state.json``; ``dataset_files``
(table_files.py) lists them, and a folder of Parquet shards as the Hub lays them out
(``data/train-00000-of-00003.parquet``), so a folder can be given as ``--seeds``.

The parts: table_files.py (kinds of file, folders, pyarrow reading), table_columns.py (the
columns a table has), table_values.py (a column's text in a row).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..errors import InputError, UsageError
from ..records import BadRecord, Seed, kind_of
from .csvfile import iter_csv, normalise_column
from .jsonl import RecordProblem, iter_records
from .table_columns import path_problem, table_shape
from .table_files import arrow_rows, table_kind
from .table_sql import expression_alias, expressions_of, looks_like_sql
from .table_values import field_text

__all__ = [
    "DESCRIPTION",
    "FORMAT",
    "ID_FIELD",
    "check_table",
    "parse_map",
    "read_table",
]

FORMAT = "table"
DESCRIPTION = (
    "any table (JSON lines or array of objects, CSV, Parquet, Arrow / HF save_to_disk) with "
    "columns named as the task's fields or mapped with --map FIELD=COLUMN"
)
ID_FIELD = "id"  # a mapping key that is not a seed field: the column holding the seed's id


# -- the mapping -----------------------------------------------------------------------------


def parse_map(items: Iterable[str], *, where: str = "--map") -> dict[str, str]:
    """``["question=q", "knowledge=context.sentences"]`` as ``{field: column}``.

    ``UsageError`` for an item without ``=``, an empty side, or a field named twice.
    """
    mapping: dict[str, str] = {}
    for item in items:
        field, sep, column = (part.strip() for part in str(item).partition("="))
        if not sep or not field or not column:
            raise UsageError(
                f"{where} {item!r}: write FIELD=COLUMN, e.g. --map question=query "
                "(a nested column as a path: --map knowledge=context.sentences)"
            )
        if field in mapping and mapping[field] != column:
            raise UsageError(f"{where} names field {field} twice ({mapping[field]}, {column})")
        mapping[field] = column
    return mapping


def _columns_of(task: str, fields: Sequence[str], mapping: Mapping[str, str]) -> dict[str, str]:
    """``{field: column}`` for every seed field (and ``id`` when mapped)."""
    unknown = [f for f in mapping if f not in fields and f != ID_FIELD]
    if unknown:
        raise UsageError(
            f"--map {unknown[0]}={mapping[unknown[0]]}: {unknown[0]} is not a seed field of "
            f"task {task} (its fields: {', '.join(fields)}; and {ID_FIELD} for the seed's id)"
        )
    columns = {field: mapping.get(field, field) for field in fields}
    if ID_FIELD in mapping:
        columns[ID_FIELD] = mapping[ID_FIELD]
    return columns


# -- columns that exist ----------------------------------------------------------------------


def check_table(
    path: str, task: str, fields: Sequence[str], mapping: Mapping[str, str] | None
) -> None:
    """Raise before any call when a column the seeds need does not exist in ``path``.

    ``UsageError`` for a mapped column (a typo in --map), ``InputError`` for a field's own
    column; both name the column and list the columns that exist.
    """
    kind = table_kind(path)
    shape = table_shape(path, kind)
    columns = _columns_of(task, fields, mapping or {})
    sql = expressions_of(path, kind, shape, columns, mapping or {})
    for field, column in columns.items():
        if field in sql:
            continue  # DuckDB evaluated it already
        problem = path_problem(shape, _parts(column, kind))
        if problem is None:
            continue
        if mapping and field in mapping:
            raise UsageError(f"--map {field}={column}: {path} {problem}")
        raise InputError(
            f"{path} {problem}, which the seed field {field} is read from: name the column "
            f"that holds it with --map {field}=COLUMN"
        )


def _parts(column: str, kind: str) -> list[str]:
    return [normalise_column(column)] if kind == "csv" else column.split(".")


# -- rows ------------------------------------------------------------------------------------


def read_table(
    path: str, task: str, fields: Sequence[str], mapping: Mapping[str, str] | None = None
) -> Iterator[Seed | BadRecord]:
    """Seeds of ``task`` from the table ``path``, lazily; unusable rows as ``BadRecord``."""
    columns = _columns_of(task, fields, mapping or {})
    kind = table_kind(path)
    sql: dict[str, str] = {}
    if mapping and any(looks_like_sql(v) for v in mapping.values()):
        sql = expressions_of(path, kind, table_shape(path, kind), columns, mapping)
    paths = {
        field: [expression_alias(field)] if field in sql else _parts(column, kind)
        for field, column in columns.items()
    }
    base = os.path.basename(path)
    items = list(paths.items())
    roots = sorted({p[0] for f, p in paths.items() if f not in sql})
    rows = _sql_rows(path, kind, roots, sql) if sql else _rows(path, kind, roots)
    for row, record in rows:
        if isinstance(record, BadRecord):
            yield record
            continue
        try:
            values = {f: field_text(record, path_of, columns[f]) for f, path_of in items}
        except RecordProblem as problem:
            yield BadRecord(path, row, str(problem))
            continue
        except RecursionError:
            yield BadRecord(path, row, "nests too deep to read")
            continue
        seed_id = values.pop(ID_FIELD, None)
        yield Seed(
            task=task,
            fields=values,
            seed_id=seed_id.strip() if seed_id is not None else f"{base}:{row}",
            source_file=path,
            source_line=row,
            dataset=FORMAT,
        )


def _sql_rows(
    path: str, kind: str, roots: list[str], sql: Mapping[str, str]
) -> Iterator[tuple[int, Any]]:
    """``(row number, record)`` with each SQL expression's value under its alias."""
    from ..store.seed_table_sql import mapped_rows

    expressions = {expression_alias(f): expr for f, expr in sql.items()}
    if kind != "csv":
        yield from enumerate(mapped_rows(path, kind, roots, expressions), 1)
        return
    # a CSV's columns are matched by their normalised names, as the CSV reader does
    for row, record in enumerate(mapped_rows(path, kind, None, expressions), 1):
        yield (
            row,
            {k if k in expressions else normalise_column(str(k)): v for k, v in record.items()},
        )


def _rows(path: str, kind: str, roots: list[str]) -> Iterator[tuple[int, Any]]:
    """``(row number, record)``: 1-based data rows (CSV: the line a row starts on).

    ``InputError`` for a table with no row at all, as for an empty JSON file: a Parquet or
    Arrow file with a schema and no rows, an empty JSON array."""
    empty = True
    for row, record in _table_rows(path, kind, roots):
        empty = False
        yield row, record
    if empty:
        raise InputError(f"{path} holds no rows (an empty {kind} table)")


def _table_rows(path: str, kind: str, roots: list[str]) -> Iterator[tuple[int, Any]]:
    if kind == "json":
        for row, record in iter_records(path):
            if isinstance(record, BadRecord | Mapping):
                yield row, record
            else:
                yield row, BadRecord(path, row, f"not a JSON object ({kind_of(record)})")
    elif kind == "csv":
        yield from iter_csv(path, required=(), optional=roots)
    else:
        yield from enumerate(arrow_rows(path, kind, roots), 1)
