"""The columns a table has, as shapes (a struct's fields, a list's elements), and why a
column the seeds need is not one of them."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Any

from ..errors import InputError
from .csvfile import csv_columns
from .jsonl import iter_records
from .table_files import ArrowFile, parquet_schema

__all__ = ["SHOWN", "Shape", "path_problem", "table_shape"]

_SAMPLE_ROWS = 1000  # JSON rows looked at to tell which columns exist
SHOWN = 20  # columns listed in a message

# A column's shape: None for a value (text, number, ...), else {name: shape} for a struct or
# object; a list has the shape of its elements.
Shape = dict[str, Any] | None


def table_shape(path: str, kind: str) -> dict[str, Any]:
    if kind == "parquet":
        return _arrow_shape(parquet_schema(path))
    if kind == "arrow":
        with ArrowFile(path) as table:
            return _arrow_shape(table.schema)
    if kind == "csv":
        return dict.fromkeys(csv_columns(path))
    shape: dict[str, Any] = {}
    seen = False
    for row, record in islice(iter_records(path), _SAMPLE_ROWS):
        if isinstance(record, Mapping):
            seen = True
            try:
                _merge(shape, record)
            except RecursionError:
                raise InputError(f"{path}: record {row} nests too deep to read") from None
    if not seen:
        raise InputError(
            f"{path}: none of its first {_SAMPLE_ROWS:,} records is a JSON object with columns"
        )
    return shape


def _merge(shape: dict[str, Any], record: Mapping[str, Any]) -> None:
    for key, value in record.items():
        inner = _value_shape(value)
        old = shape.get(key)
        if isinstance(inner, dict):
            if not isinstance(old, dict):
                shape[key] = old = {}
            _merge_shapes(old, inner)
        elif key not in shape:
            shape[key] = None


def _merge_shapes(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        if isinstance(value, dict):
            if not isinstance(into.get(key), dict):
                into[key] = {}
            _merge_shapes(into[key], value)
        elif key not in into:
            into[key] = None


def _value_shape(value: Any) -> Shape:
    if isinstance(value, Mapping):
        shape: dict[str, Any] = {}
        _merge(shape, value)
        return shape
    if isinstance(value, list):
        merged: dict[str, Any] | None = None
        for item in value:
            inner = _value_shape(item)
            if isinstance(inner, dict):
                merged = merged if merged is not None else {}
                _merge_shapes(merged, inner)
        return merged
    return None


def _arrow_shape(schema: Any) -> dict[str, Any]:
    return {f.name: _arrow_type_shape(f.type) for f in schema}


def _arrow_type_shape(typ: Any) -> Shape:
    import pyarrow as pa

    while pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        typ = typ.value_type
    if pa.types.is_struct(typ):
        return {
            typ.field(i).name: _arrow_type_shape(typ.field(i).type) for i in range(typ.num_fields)
        }
    return None


def path_problem(shape: dict[str, Any], parts: list[str]) -> str | None:
    """Why the column ``parts`` is not a column of text in ``shape``; None when it is."""
    level: Shape = shape
    walked: list[str] = []
    while parts:
        if not isinstance(level, dict):
            column, holder = ".".join(walked + parts), ".".join(walked)
            return f"has no column {column}: {holder} holds values, not fields"
        for n in range(len(parts), 0, -1):  # a column literally named "a.b" wins
            key = ".".join(parts[:n])
            if key in level:
                walked.append(key)
                level, parts = level[key], parts[n:]
                break
        else:
            column = ".".join(walked + parts)
            where = f"{'.'.join(walked)} has fields" if walked else "its columns are"
            return f"has no column {column} ({where}: {_list(level)})"
    if isinstance(level, dict):
        column = ".".join(walked)
        return (
            f"column {column} holds a struct, not text: name one of its fields "
            f"({', '.join(column + '.' + k for k in list(level)[:SHOWN])})"
        )
    return None


def _list(shape: Mapping[str, Any]) -> str:
    names = [k or "(unnamed)" for k in shape]
    more = f", … ({len(names) - SHOWN} more)" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more if names else "none"
