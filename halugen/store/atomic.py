"""Rows inserted in a transaction of their own: all of them or none.

For the small writes that go to the store directly rather than through the writer
(annotation imports, topic results).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb

from .inserting import insert_rows

__all__ = ["insert_at_once"]


def insert_at_once(
    conn: Any, table: str, rows: Sequence[tuple[Any, ...]], stamps: datetime | Sequence[datetime]
) -> None:
    """``insert_rows`` in one transaction: committed together, or rolled back and the
    error raised. ``conn``: a DuckDB connection (or cursor) the caller does not hold a
    transaction on."""
    conn.execute("BEGIN TRANSACTION")
    try:
        insert_rows(conn, table, rows, stamps)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            conn.execute("ROLLBACK")
        raise
