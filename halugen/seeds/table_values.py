"""A column's text in a table row: the value its path leads to, lists flattened and joined
with one space, numbers as their text; a missing, empty or non-text value is a problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..records import kind_of
from .jsonl import RecordProblem, check_text
from .table_columns import SHOWN

__all__ = ["field_text"]

_MISSING = object()


def field_text(record: dict[str, Any], parts: list[str], column: str) -> str:
    """The text of ``column`` in ``record``: lists flattened and joined with one space."""
    value = _resolve(record, parts)
    if value is _MISSING:
        raise RecordProblem(f"missing column {column}")
    if type(value) is str:  # the common case, kept as given
        text = value
    else:
        pieces: list[str] = []
        _texts(value, column, pieces, in_list=False)
        text = " ".join(pieces)
    if not text.strip():
        raise RecordProblem(f"column {column} is empty")
    check_text(column, text)
    return text


# Rows come as dicts and lists (pyarrow's to_pylist, orjson, the CSV reader): the hot paths
# test for exactly those types, which is several times cheaper than the abstract ones.


def _resolve(value: Any, parts: list[str]) -> Any:
    if not parts:
        return value
    if isinstance(value, dict):
        if len(parts) == 1:
            return value.get(parts[0], _MISSING)
        for n in range(len(parts), 0, -1):  # a key literally named "a.b" wins
            key = ".".join(parts[:n]) if n > 1 else parts[0]
            if key in value:
                return _resolve(value[key], parts[n:])
        return _MISSING
    if isinstance(value, list):
        found = [v for v in (_resolve(item, parts) for item in value) if v is not _MISSING]
        return found if found or not value else _MISSING
    return _MISSING


def _texts(value: Any, column: str, out: list[str], *, in_list: bool) -> None:
    """The texts of ``value`` into ``out``. A text on its own is kept as given; the items
    of a list are trimmed, to be joined on exactly one space (as HotpotQA's sentences are)."""
    kind = type(value)
    if kind is str:
        if in_list:
            value = value.strip()
            if value:
                out.append(value)
        elif value.strip():
            out.append(value)
    elif kind is list or kind is tuple:
        for item in value:
            _texts(item, column, out, in_list=True)
    elif value is None:
        return
    elif kind is bool:
        raise RecordProblem(f"column {column} holds {kind_of(value)}, not text")
    elif kind is int or kind is float:
        out.append(str(value))
    elif isinstance(value, Mapping):
        raise RecordProblem(
            f"column {column} holds an object, not text: name one of its fields "
            f"({', '.join(column + '.' + str(k) for k in list(value)[:SHOWN])})"
        )
    else:
        out.append(str(value))  # a date or a decimal from a typed column: its text
