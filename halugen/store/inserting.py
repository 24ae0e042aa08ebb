"""The one way rows go into the store: ``insert_rows``, for the writer's lanes, the journal's
feeder and the few callers that append in a transaction of their own.

A few rows go in as one ``INSERT ... VALUES`` with parameters; a big group goes in as a dict
of NumPy object columns, which DuckDB scans directly and casts to the table's types: about
4x cheaper than Arrow arrays built from Python lists, and without pyarrow importing pandas
(~80 MB) to check whether a list is a pandas object.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb

from .rows import TABLE_COLUMNS

__all__ = ["RowViews", "insert_rows"]


# Column buffers a connection inserts through, one per table, each registered once as a view
# (``halugen_rows_<table>``). Registering costs more than the insert it serves (~1.5 ms of
# CPU), and a registered view reads its object's current contents at every query, so a
# writer lane keeps its buffers and refills them for each group.
RowViews = dict[str, dict[str, Any]]

# A group of a few rows (the durable lane's: a reservation, an answer) goes in as one
# INSERT ... VALUES with parameters: about a fifth less CPU per commit than scanning column
# buffers, whose object columns DuckDB inspects before it reads them. Big groups (the bulk
# lane's) are faster through the buffers.
_SMALL_GROUP = 8
_SCALARS = frozenset({str, int, float, bool, type(None), datetime})


def _all_scalars(rows: Sequence[tuple[Any, ...]]) -> bool:
    return all(type(value) in _SCALARS for row in rows for value in row)


@functools.cache
def _values_insert(table: str, n: int) -> str:
    columns = TABLE_COLUMNS[table]
    one = "(" + ", ".join("?" * len(columns)) + ")"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([one] * n)}"


def _flat(rows: Sequence[tuple[Any, ...]], stamp: datetime) -> list[Any]:
    params: list[Any] = []
    for row in rows:
        params.extend(row)
        params.append(stamp)
    return params


def insert_rows(
    conn: duckdb.DuckDBPyConnection,
    table: str,
    rows: Sequence[tuple[Any, ...]],
    stamps: datetime | Sequence[datetime],
    *,
    views: RowViews | None = None,
) -> None:
    """``INSERT`` ``rows`` (records, or tuples in the same order) into ``table`` with
    ``created_at`` from ``stamps`` (one for all, or one per row). The caller owns the
    transaction. ``views``: the connection's column buffers, kept between calls by a caller
    that inserts often on one connection (the writer's lanes)."""
    columns = TABLE_COLUMNS[table]
    width = len(columns) - 1  # created_at comes from the caller
    for r in rows:
        if len(r) != width:
            raise ValueError(f"{table} row has {len(r)} values, expected {width}")
    if rows and len(rows) <= _SMALL_GROUP and isinstance(stamps, datetime) and _all_scalars(rows):
        conn.execute(_values_insert(table, len(rows)), _flat(rows, stamps))
        return
    # imported here, not at the top: the commands that only read the store (sql, status,
    # export, view) start without numpy's import time
    import numpy as np

    # columns by one transposition in C (zip), not a Python loop per column
    transposed = zip(*rows, strict=True) if rows else ((),) * width
    data = {
        name: np.array(column, dtype=object)
        for name, column in zip(columns[:width], transposed, strict=True)
    }
    if isinstance(stamps, datetime):
        data[columns[width]] = np.full(len(rows), stamps, dtype=object)
    else:
        data[columns[width]] = np.array(list(stamps), dtype=object)
    names = ", ".join(columns)
    # a registered view, not a Python variable found by name: the store's database has no
    # replacement scans (its external access is off, see db.py)
    view = f"halugen_rows_{table}"
    insert = f"INSERT INTO {table} ({names}) SELECT {names} FROM {view}"
    if views is None:
        conn.register(view, data)
        try:
            conn.execute(insert)
        finally:
            conn.unregister(view)
        return
    buffer = views.get(table)
    if buffer is None:
        buffer = views[table] = data
        conn.register(view, buffer)
    else:
        buffer.update(data)
    try:
        conn.execute(insert)
    finally:
        for name in buffer:  # the buffer must not keep a group's rows alive
            buffer[name] = np.empty(0, dtype=object)
